"""Guards for the ``anthropic`` SDK's Messages streams, sync and async.

``guard_messages`` takes what ``client.messages.create(..., stream=True)`` returns (the raw
event stream) or the ``MessageStream`` that ``with client.messages.stream(...) as stream``
gives; ``aguard_messages`` the async ones. The guards yield the SDK's events unchanged, so
they drop into existing code; on a finding they close the SDK stream, which closes the HTTP
response so the server stops generating.

Each ``content_block_delta`` event is read by its delta's type: ``text_delta`` is the answer
(source ``"content"``), ``thinking_delta`` the reasoning (source ``"reasoning"``) and
``input_json_delta`` the input of the tool-use block at that index (source
``content[i].input``, named after the tool given by its ``content_block_start``). Each source
has its own detector: a loop inside thinking or tool input is the same failure, and mixing the
texts would hide it. The ``text``, ``thinking`` and ``input_json`` events that
``MessageStream`` adds after each raw delta repeat its text and are not read again. The
events are told apart by their ``type`` fields, as the SDK itself does, so the beta
client's streams (``client.beta.messages``) are guarded the same way.

``text`` and ``persist_text`` are the answer text only. A loop in the thinking is cut in
``Degeneration.source_persist_text``; it is not saved by ``loopbreak.streaming.persist``, as a thinking
block stopped mid-stream has no signature and cannot be sent back to the model.
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("anthropic", "anthropic")

from collections.abc import AsyncIterable, Iterable, Iterator
from typing import Any, Optional, TypeVar

from anthropic import BaseModel

from loopbreak._core import DEFAULT_KEEP, Rules
from loopbreak.streaming.guard import (
    CONTENT,
    REASONING,
    AsyncGuarded,
    Guarded,
    OnDegeneration,
    Piece,
)

# messages.stream() yields the SDK's helper events besides the raw ones, so events are generic.
EventT = TypeVar("EventT", bound=BaseModel)


def message_pieces(event: BaseModel) -> Iterator[Piece]:
    """The text pieces of one Messages stream event: text, thinking and tool input."""
    event_type = getattr(event, "type", None)
    if not isinstance(event, BaseModel) or not isinstance(event_type, str):
        raise TypeError(
            f"expected Anthropic Messages stream events, got {type(event).__name__}"
            " (pass the stream from messages.create(..., stream=True) or messages.stream())"
        )
    fields: Any = event  # read by its type fields, as the SDK's own stream helpers do
    if event_type == "content_block_delta":
        delta = fields.delta
        if delta.type == "text_delta":
            yield Piece(CONTENT, delta.text)
        elif delta.type == "thinking_delta":
            yield Piece(REASONING, delta.thinking)
        elif delta.type == "input_json_delta":
            yield Piece(f"content[{fields.index}].input", delta.partial_json)
    elif event_type == "content_block_start":
        # A tool's name comes only here, before its input deltas.
        name = getattr(fields.content_block, "name", None)
        if isinstance(name, str):
            yield Piece(f"content[{fields.index}].input", "", name)


def _check_entered(stream: object) -> None:
    """``messages.stream()`` returns a context manager; the stream is what entering it gives."""
    iterable = hasattr(stream, "__iter__") or hasattr(stream, "__aiter__")
    if not iterable and (hasattr(stream, "__enter__") or hasattr(stream, "__aenter__")):
        raise TypeError(
            f"expected a stream, got {type(stream).__name__}: enter it first,"
            " e.g. `with client.messages.stream(...) as stream: guard_messages(stream)`"
        )


def guard_messages(
    stream: Iterable[EventT],
    *,
    on_degeneration: OnDegeneration = "raise",
    rules: Optional[Rules] = None,
    keep: int = DEFAULT_KEEP,
) -> Guarded[EventT]:
    """Guards a sync Messages event stream; see ``loopbreak.guard`` for the options."""
    _check_entered(stream)
    return Guarded(stream, message_pieces, on_degeneration=on_degeneration, rules=rules, keep=keep)


def aguard_messages(
    stream: AsyncIterable[EventT],
    *,
    on_degeneration: OnDegeneration = "raise",
    rules: Optional[Rules] = None,
    keep: int = DEFAULT_KEEP,
) -> AsyncGuarded[EventT]:
    """Guards an async Messages event stream; see ``loopbreak.guard`` for the options."""
    _check_entered(stream)
    return AsyncGuarded(
        stream, message_pieces, on_degeneration=on_degeneration, rules=rules, keep=keep
    )
