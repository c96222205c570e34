"""Guards for the ``openai`` SDK's streams, sync and async.

``guard_chat`` takes what ``client.chat.completions.create(..., stream=True)`` returns,
``guard_responses`` what ``client.responses.create(..., stream=True)`` or
``client.responses.stream(...)`` gives. The guards yield the SDK's chunks/events unchanged,
so they drop into existing code; on a finding they close the SDK stream, which closes the
HTTP response so the server stops generating.

The answer text (source ``"content"``: ``delta.content`` of choice 0, or the
``response.output_text.delta`` events), the reasoning (source ``"reasoning"``: the
``reasoning_content`` or ``reasoning`` field that OpenAI-compatible servers add to chat deltas,
or the ``response.reasoning_text.delta`` and ``response.reasoning_summary_text.delta`` events) and
each tool call's arguments are fed to separate detectors: a loop inside thinking or tool
arguments is the same failure, and mixing the texts would hide it. Tool-call sources are named
``tool_calls[i].arguments`` (chat; other choices are prefixed ``choices[n].``) and
``output[i].arguments`` / ``output[i].input`` (responses). ``text`` and ``persist_text`` are
the answer text only; a loop in the reasoning is cut in ``Degeneration.source_persist_text``.
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("openai", "openai")

from collections.abc import AsyncIterable, Iterable, Iterator
from typing import Optional, TypeVar

from openai import BaseModel
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import ChoiceDelta
from openai.types.responses import (
    ResponseCustomToolCall,
    ResponseCustomToolCallInputDeltaEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningTextDeltaEvent,
    ResponseTextDeltaEvent,
)

from loopbreak._core import DEFAULT_KEEP, Rules
from loopbreak.integrations._chat import delta_pieces
from loopbreak.streaming.guard import (
    CONTENT,
    REASONING,
    AsyncGuarded,
    Guarded,
    OnDegeneration,
    Piece,
)

# The reasoning's own text (open models) and its summary (OpenAI's models) go to one detector.
_REASONING_DELTAS = (ResponseReasoningTextDeltaEvent, ResponseReasoningSummaryTextDeltaEvent)

# responses.stream() yields the SDK's subclasses of the raw event types, so events are generic.
EventT = TypeVar("EventT", bound=BaseModel)


def chat_pieces(chunk: ChatCompletionChunk) -> Iterator[Piece]:
    """The text pieces of one chat-completion chunk: reasoning, content and tool-call
    arguments."""
    if not isinstance(chunk, ChatCompletionChunk):
        raise TypeError(
            f"expected ChatCompletionChunk items, got {type(chunk).__name__}"
            " (pass the stream from chat.completions.create(..., stream=True))"
        )
    for choice in chunk.choices:
        yield from delta_pieces(choice.index, choice.delta, _reasoning(choice.delta))


def _reasoning(delta: ChoiceDelta) -> Optional[str]:
    """The reasoning text of a chat delta from an OpenAI-compatible server: an extra field the
    SDK keeps on the delta, ``reasoning_content`` (DeepSeek, vLLM, SGLang, llama.cpp) or
    ``reasoning`` (OpenRouter, Ollama). One of the two is read, as some servers send both
    with the same text. (Read from ``model_extra``: a missing attribute costs the SDK's model
    far more than the detector's feed.)"""
    extra = delta.model_extra
    if not extra:
        return None
    reasoning = extra.get("reasoning_content") or extra.get("reasoning")
    return reasoning if isinstance(reasoning, str) else None


def response_pieces(event: BaseModel) -> Iterator[Piece]:
    """The text pieces of one Responses API stream event: output text, reasoning (its text or
    its summary) and tool-call input."""
    event_type = getattr(event, "type", None)
    if not isinstance(event_type, str) or not event_type.startswith("response."):
        raise TypeError(
            f"expected Responses API stream events, got {type(event).__name__}"
            " (pass the stream from responses.create(..., stream=True) or responses.stream())"
        )
    if isinstance(event, ResponseTextDeltaEvent):
        yield Piece(CONTENT, event.delta)
    elif isinstance(event, _REASONING_DELTAS):
        yield Piece(REASONING, event.delta)
    elif isinstance(event, ResponseFunctionCallArgumentsDeltaEvent):
        yield Piece(f"output[{event.output_index}].arguments", event.delta)
    elif isinstance(event, ResponseCustomToolCallInputDeltaEvent):
        yield Piece(f"output[{event.output_index}].input", event.delta)
    elif isinstance(event, ResponseOutputItemAddedEvent):
        # The tool's name comes only here, before its argument deltas.
        item = event.item
        if isinstance(item, ResponseFunctionToolCall):
            yield Piece(f"output[{event.output_index}].arguments", "", item.name)
        elif isinstance(item, ResponseCustomToolCall):
            yield Piece(f"output[{event.output_index}].input", "", item.name)


def guard_chat(
    stream: Iterable[ChatCompletionChunk],
    *,
    on_degeneration: OnDegeneration = "raise",
    rules: Optional[Rules] = None,
    keep: int = DEFAULT_KEEP,
) -> Guarded[ChatCompletionChunk]:
    """Guards a sync chat-completion stream; see ``loopbreak.guard`` for the options."""
    return Guarded(stream, chat_pieces, on_degeneration=on_degeneration, rules=rules, keep=keep)


def aguard_chat(
    stream: AsyncIterable[ChatCompletionChunk],
    *,
    on_degeneration: OnDegeneration = "raise",
    rules: Optional[Rules] = None,
    keep: int = DEFAULT_KEEP,
) -> AsyncGuarded[ChatCompletionChunk]:
    """Guards an async chat-completion stream; see ``loopbreak.guard`` for the options."""
    return AsyncGuarded(
        stream, chat_pieces, on_degeneration=on_degeneration, rules=rules, keep=keep
    )


def guard_responses(
    stream: Iterable[EventT],
    *,
    on_degeneration: OnDegeneration = "raise",
    rules: Optional[Rules] = None,
    keep: int = DEFAULT_KEEP,
) -> Guarded[EventT]:
    """Guards a sync Responses API event stream; see ``loopbreak.guard`` for the options."""
    return Guarded(stream, response_pieces, on_degeneration=on_degeneration, rules=rules, keep=keep)


def aguard_responses(
    stream: AsyncIterable[EventT],
    *,
    on_degeneration: OnDegeneration = "raise",
    rules: Optional[Rules] = None,
    keep: int = DEFAULT_KEEP,
) -> AsyncGuarded[EventT]:
    """Guards an async Responses API event stream; see ``loopbreak.guard`` for the options."""
    return AsyncGuarded(
        stream, response_pieces, on_degeneration=on_degeneration, rules=rules, keep=keep
    )
