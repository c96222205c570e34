"""The Anthropic Messages API (``POST /v1/messages``) as the proxy guards it.

A streamed event is read by ``loopbreak.integrations.anthropic.message_pieces``, the reader
that guards the ``anthropic`` SDK's own streams: the text blocks (source ``content``), the
thinking blocks (``reasoning``; a ``signature_delta`` is not text) and each tool-use block's
input (``content[i].input``, named after the tool its ``content_block_start`` gives), each on a
detector of its own. A whole answer is read the same way from its ``content`` blocks, a tool's
``input`` as its JSON text.

**The stop reason is ``"repetition"``**, as on the OpenAI paths. The Messages API has no stop
reason for a loop, and the documented ones each tell a client something false: ``max_tokens``
is a length cut, which agents answer by asking the model to go on (the loop with it);
``refusal`` and ``model_context_window_exceeded`` are other failures; ``end_turn`` is a normal
end. The official SDKs read an unlisted stop reason without error: the Python SDK builds its
events and messages without validating them (``StopReason`` is a ``Literal`` for type checkers
only, unless a client opts into ``_strict_response_validation``), and ``MessageStream`` copies
``message_delta.delta.stop_reason`` into its message as it is; the TypeScript SDK's types are
not checked at run time. A client tells a stop from a normal end by ``stop_reason ==
"repetition"`` and the ``loopbreak`` member (``formats.loop_member``).

**Streamed**: the event in which a rule held is withheld; the stream then ends the way the API
ends a message: a ``content_block_stop`` for the block left open, a ``message_delta`` with
``stop_reason: "repetition"``, the usage seen so far (the ``message_start``'s usage, updated by
any ``message_delta`` before it; the Python SDK reads ``usage.output_tokens`` from every
``message_delta``, so it is never left out) and the ``loopbreak`` member, then
``message_stop``. The SDK's ``MessageStream`` thus ends with a complete message whose last
block holds what was read before the withheld event.

**Whole**: the looping source is trimmed (everything before the loop, the first ``--keep``
copies and a marker, all of a source's text put in its first block and the later blocks of that
source left empty), ``stop_reason`` becomes ``"repetition"`` and the message gets the
``loopbreak`` member. A tool's ``input`` must stay an object: a looping input becomes its JSON
text cut after the kept copies, parsed as partial JSON (as ``MessageStream`` parses
``input_json_delta`` text, but keeping the string the cut falls in, up to the cut); the marker's
facts are in the ``loopbreak`` member. A trimmed thinking block keeps its signature, which no longer matches its
text: like one stopped mid-stream, it cannot be sent back to the model.

The proxy's own errors on this API are in its error shape, ``{"type": "error", "error":
{"type": ..., "message": ...}}``, and a stream that fails mid-way ends with an ``error`` event,
which the SDKs raise (an ``APIStatusError`` in Python): not a clean end.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import jiter
from anthropic import BaseModel
from anthropic.types import RawContentBlockDeltaEvent, RawContentBlockStartEvent

from loopbreak.integrations.anthropic import message_pieces
from loopbreak.proxy.formats import Endpoint, ErrorShape, Json, Path, sse_event
from loopbreak.streaming.guard import CONTENT, REASONING, Piece
from loopbreak.telemetry import REPETITION

# The events that carry text or a tool's name; every other event has no text, so it is never
# turned into an SDK object.
_TEXT_EVENTS: dict[str, type[BaseModel]] = {
    "content_block_delta": RawContentBlockDeltaEvent,
    "content_block_start": RawContentBlockStartEvent,
}

# Where ``trim`` starts its marker (rust/trim.rs): a looping tool input is cut there.
_MARKER_START = "\n[loopbreak: removed "

# The error type of each failure the proxy answers itself, from the API's list of error types.
_ERROR_TYPES = {"timeout": "timeout_error", "request_too_large": "request_too_large"}


def _event_pieces(data: Json) -> Iterable[Piece]:
    event_type = data.get("type") if isinstance(data, dict) else None
    event_class = _TEXT_EVENTS.get(event_type) if isinstance(event_type, str) else None
    if event_class is None or not isinstance(data.get("delta", data.get("content_block")), dict):
        return ()
    # An event built without validation: a delta whose text is missing (not the API's shape)
    # has no text to read.
    pieces = message_pieces(event_class.construct(**data))
    return [piece for piece in pieces if isinstance(piece.delta, str)]


def _blocks(message: Json) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _body_pieces(message: Json) -> Iterator[tuple[Piece, Path]]:
    for index, block in enumerate(_blocks(message)):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            yield Piece(CONTENT, block["text"]), ("content", index, "text")
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            yield Piece(REASONING, block["thinking"]), ("content", index, "thinking")
        elif "input" in block:  # tool_use, and the server and MCP tools' blocks
            text = json.dumps(block["input"], ensure_ascii=False)
            name = block.get("name")
            yield (
                Piece(f"content[{index}].input", text, name if isinstance(name, str) else None),
                ("content", index, "input"),
            )


def _partial_object(text: str) -> Any:
    """A looping tool input's JSON text, cut where its first marker starts, as an object."""
    cut = text.split(_MARKER_START, 1)[0]
    try:
        return jiter.from_json(cut.encode(), partial_mode="trailing-strings")
    except ValueError:
        return {}


def _mark_stopped(message: Json, source: str, loop: dict[str, Any]) -> None:
    message.update(stop_reason=REPETITION, stop_sequence=None, loopbreak=loop)
    for index, block in enumerate(_blocks(message)):
        if source == f"content[{index}].input" and isinstance(block.get("input"), str):
            block["input"] = _partial_object(block["input"])


def _finish_reasons(data: Json) -> list[str]:
    """``stop_reason`` of a whole message or of a stream's ``message_delta``."""
    if not isinstance(data, dict):
        return []
    holder = data.get("delta") if data.get("type") == "message_delta" else data
    reason = holder.get("stop_reason") if isinstance(holder, dict) else None
    return [reason] if isinstance(reason, str) else []


class _MessageStreamView:
    """A Messages stream's open content block and usage so far, which its stop needs."""

    def __init__(self) -> None:
        self.open_block: Any = None
        self.usage: dict[str, Any] = {}

    def see(self, data: Json) -> None:
        event_type = data.get("type") if isinstance(data, dict) else None
        if event_type == "content_block_start":
            self.open_block = data.get("index")
        elif event_type == "content_block_stop":
            self.open_block = None
        elif event_type in ("message_start", "message_delta"):
            holder = data.get("message") if event_type == "message_start" else data
            usage = holder.get("usage") if isinstance(holder, dict) else None
            if isinstance(usage, dict):
                self.usage.update(usage)

    def stop_events(self, loop: dict[str, Any]) -> list[str]:
        events = []
        if self.open_block is not None:
            stop = {"type": "content_block_stop", "index": self.open_block}
            events.append(sse_event(stop, "content_block_stop"))
        usage = {**self.usage, "output_tokens": self.usage.get("output_tokens", 0)}
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": REPETITION, "stop_sequence": None},
            "usage": usage,
            "loopbreak": loop,
        }
        events.append(sse_event(delta, "message_delta"))
        events.append(sse_event({"type": "message_stop"}, "message_stop"))
        return events


def _error_body(kind: str, message: str) -> dict[str, Any]:
    error_type = _ERROR_TYPES.get(kind, "api_error")
    return {
        "type": "error",
        "error": {"type": error_type, "message": f"loopbreak proxy: {message}"},
    }


ANTHROPIC_ERRORS = ErrorShape(_error_body, "error")
"""The Messages API's error shape; the SDKs raise its stream ``error`` event."""

MESSAGES = Endpoint(
    "chat",
    _event_pieces,
    _body_pieces,
    _MessageStreamView,
    _mark_stopped,
    _finish_reasons,
    ANTHROPIC_ERRORS,
)
