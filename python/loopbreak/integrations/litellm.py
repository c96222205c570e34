"""Guards for LiteLLM's chat-completion streams, and a guardrail for the LiteLLM proxy.

``guard_completion`` takes what ``litellm.completion(..., stream=True)`` returns,
``aguard_completion`` what ``await litellm.acompletion(..., stream=True)`` returns (LiteLLM's
``CustomStreamWrapper``, for any of its providers). The guards yield LiteLLM's
``ModelResponseStream`` chunks unchanged; on a finding they close the wrapper, which closes the
provider's stream so the model stops generating.

The chunks have the OpenAI shape, so the sources are the openai adapter's: ``"content"``
(choice 0's text), ``"reasoning"`` (``delta.reasoning_content``, where LiteLLM puts every
provider's thinking) and ``tool_calls[i].arguments`` (``tool_calls[i].input`` for a custom
tool's free-form input), each on its own detector. ``text`` and ``persist_text`` are the answer
text only; a loop in the reasoning is cut in ``Degeneration.source_persist_text``.

``LoopbreakGuardrail`` stops degenerate streams inside a LiteLLM proxy, for all its clients::

    guardrails:
      - guardrail_name: loopbreak
        litellm_params:
          guardrail: loopbreak.integrations.litellm.LoopbreakGuardrail
          mode: post_call
          default_on: true
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("litellm", "litellm")

from collections.abc import AsyncGenerator, AsyncIterable, Iterable, Iterator
from typing import (
    TYPE_CHECKING,
    Any,
    Optional,
    Union,
)

from litellm.exceptions import GuardrailRaisedException
from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.types.utils import ModelResponse, ModelResponseStream

from loopbreak._core import DEFAULT_KEEP, Rules
from loopbreak.errors import DegenerationDetected
from loopbreak.integrations._chat import delta_pieces
from loopbreak.streaming.guard import AsyncGuarded, Guarded, OnDegeneration, Piece

if TYPE_CHECKING:
    from litellm.proxy._types import UserAPIKeyAuth


def completion_pieces(chunk: ModelResponseStream) -> Iterator[Piece]:
    """The text pieces of one streamed chunk: reasoning, content and tool-call input."""
    if not isinstance(chunk, ModelResponseStream):
        raise TypeError(
            f"expected ModelResponseStream items, got {type(chunk).__name__}"
            " (pass the stream from litellm.completion(..., stream=True))"
        )
    for choice in chunk.choices:
        delta = choice.delta
        # Some LiteLLM versions drop the field from a delta that has no reasoning.
        yield from delta_pieces(choice.index, delta, getattr(delta, "reasoning_content", None))


_WHOLE_RESPONSE = "expected a stream, got a whole ModelResponse: call with stream=True"


def guard_completion(
    stream: Union[Iterable[ModelResponseStream], ModelResponse],
    *,
    on_degeneration: OnDegeneration = "raise",
    rules: Optional[Rules] = None,
    keep: int = DEFAULT_KEEP,
) -> Guarded[ModelResponseStream]:
    """Guards a sync LiteLLM stream; see ``loopbreak.guard`` for the options. Takes the
    result of ``litellm.completion`` as it is typed (a ``ModelResponse`` is refused with a
    ``TypeError``: it is no stream)."""
    if isinstance(stream, ModelResponse):
        raise TypeError(_WHOLE_RESPONSE)
    return Guarded(
        stream, completion_pieces, on_degeneration=on_degeneration, rules=rules, keep=keep
    )


def aguard_completion(
    stream: Union[AsyncIterable[ModelResponseStream], ModelResponse],
    *,
    on_degeneration: OnDegeneration = "raise",
    rules: Optional[Rules] = None,
    keep: int = DEFAULT_KEEP,
) -> AsyncGuarded[ModelResponseStream]:
    """Guards an async LiteLLM stream; see ``guard_completion``."""
    if isinstance(stream, ModelResponse):
        raise TypeError(_WHOLE_RESPONSE)
    return AsyncGuarded(
        stream, completion_pieces, on_degeneration=on_degeneration, rules=rules, keep=keep
    )


def _proxy_pieces(chunk: object) -> Iterator[Piece]:
    # The proxy hands Anthropic-route (/v1/messages) streams to the hook as raw SSE bytes:
    # those pass through unread.
    if isinstance(chunk, ModelResponseStream):
        yield from completion_pieces(chunk)


class LoopbreakGuardrail(CustomGuardrail):
    """A LiteLLM proxy guardrail that stops chat-completion streams once they loop.

    It runs in the proxy's ``async_post_call_streaming_iterator_hook`` (configure it with
    ``mode: post_call``, see the module docstring). Chunks pass through as they arrive; where a
    rule holds, the guardrail closes the provider's stream and raises LiteLLM's
    ``GuardrailRaisedException`` with loopbreak's reason, which the proxy sends to the client
    as the stream's error event (``{"error": {"message": "Output degeneration detected in
    content: ...", "code": "400"}}``; the ``openai`` client raises it as an ``APIError``).
    Streams the proxy relays as raw SSE (its Anthropic ``/v1/messages`` route) pass unread.
    """

    async def async_post_call_streaming_iterator_hook(
        self,
        user_api_key_dict: UserAPIKeyAuth,
        response: Any,
        request_data: dict[str, Any],
    ) -> AsyncGenerator[Any, None]:
        guarded = AsyncGuarded(response, _proxy_pieces)
        try:
            async for chunk in guarded:
                yield chunk
        except DegenerationDetected as error:
            raise GuardrailRaisedException(
                guardrail_name=self.guardrail_name,
                message=error.reason,
                should_wrap_with_default_message=False,
                blocked_content=True,
            ) from error
        finally:
            await guarded.aclose()  # the client went away: stop the model too
