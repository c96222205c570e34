"""What the proxy knows of each guarded endpoint's JSON: where the text is in a streamed event
(read by the OpenAI adapter's ``chat_pieces`` / ``response_pieces``, so the sources are named as
everywhere else) and in a whole answer, how a stop is told to the client, and the shape of the
errors the proxy itself answers. The OpenAI APIs are here; the Anthropic Messages API is in
``loopbreak.proxy.messages``.

A stop is told the way each API tells a length stop: ``finish_reason: "repetition"`` on the
choice (chat and completions, as vLLM reports its own repetition stop) or a
``response.incomplete`` with ``incomplete_details.reason: "repetition"`` (responses), plus a
``loopbreak`` member saying what repeated (``loop_member``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, Union

from openai import BaseModel
from openai.types import Completion
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import (
    ResponseCustomToolCallInputDeltaEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseOutputItemAddedEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningTextDeltaEvent,
    ResponseTextDeltaEvent,
)

from loopbreak.integrations.openai import chat_pieces, response_pieces
from loopbreak.streaming.guard import CONTENT, REASONING, Degeneration, Piece
from loopbreak.telemetry import REPETITION

Json = Any
"""A decoded JSON value."""

Path = tuple[Union[str, int], ...]
"""Where a text lives in a whole answer: keys and list positions from the top."""

# The Responses events that carry text or a tool's name; every other event has no text, so it
# is never turned into an SDK object.
_RESPONSE_TEXT_EVENTS: dict[str, type[BaseModel]] = {
    "response.output_text.delta": ResponseTextDeltaEvent,
    "response.reasoning_text.delta": ResponseReasoningTextDeltaEvent,
    "response.reasoning_summary_text.delta": ResponseReasoningSummaryTextDeltaEvent,
    "response.function_call_arguments.delta": ResponseFunctionCallArgumentsDeltaEvent,
    "response.custom_tool_call_input.delta": ResponseCustomToolCallInputDeltaEvent,
    "response.output_item.added": ResponseOutputItemAddedEvent,
}

_CHOICE_PREFIX = re.compile(r"choices\[(\d+)\]\.")


def loop_member(degeneration: Degeneration) -> dict[str, Any]:
    """The ``loopbreak`` member of a stopped answer: what repeated, where, how often."""
    finding = degeneration.finding
    return {
        "rule": finding.rule,
        "period": finding.period,
        "block": finding.block,
        "copies": finding.repeats,
        "position": finding.start,
        "source": degeneration.source,
        "tool_name": degeneration.tool_name,
        "units_removed": degeneration.units_removed,
        "reason": degeneration.reason,
    }


def sse_event(data: Json, name: Optional[str] = None) -> str:
    """One server-sent event, named ``name`` if given."""
    header = "" if name is None else f"event: {name}\n"
    return f"{header}data: {json.dumps(data, ensure_ascii=False)}\n\n"


DONE = "data: [DONE]\n\n"


def _choice_index(source: str) -> int:
    match = _CHOICE_PREFIX.match(source)
    return 0 if match is None else int(match.group(1))


class StreamView(Protocol):
    """What one relayed stream has shown that its stop is made from."""

    def see(self, data: Json) -> None:
        """Takes note of one decoded event the client was sent."""

    def stop_events(self, loop: dict[str, Any]) -> list[str]:
        """The SSE text that ends the stream, stopped for the loop ``loop``."""


@dataclass(frozen=True)
class ErrorShape:
    """How an API tells an error, for the errors the proxy answers itself (the upstream is
    down or too slow, the request too large) and the one that ends a stream mid-way."""

    body: Callable[[str, str], dict[str, Any]]
    """The JSON body of an error, from its kind and message."""
    event_name: Optional[str]
    """The SSE event name a stream's error event carries, if the API names it."""

    def event(self, kind: str, message: str) -> str:
        return sse_event(self.body(kind, message), self.event_name)


def _openai_error_body(kind: str, message: str) -> dict[str, Any]:
    return {
        "error": {"message": f"loopbreak proxy: {message}", "type": "upstream_error", "code": kind}
    }


OPENAI_ERRORS = ErrorShape(_openai_error_body, None)
"""The OpenAI API's error shape; the ``openai`` client raises its stream event as an
``APIError``."""


@dataclass(frozen=True)
class Endpoint:
    """One guarded API: its GenAI operation name and how to read and mark its JSON."""

    operation: str
    event_pieces: Callable[[Json], Iterable[Piece]]
    """The text pieces of one decoded stream event."""
    body_pieces: Callable[[Json], Iterator[tuple[Piece, Path]]]
    """The text pieces of a whole answer, each with where it lives."""
    stream_view: Callable[[], StreamView]
    """A new view of one stream, which makes its stop events."""
    mark_stopped: Callable[[Json, str, dict[str, Any]], None]
    """Marks a whole answer stopped for repetition in the source named."""
    finish_reasons: Callable[[Json], list[str]]
    """The finish reasons an event or a whole answer reports."""
    errors: ErrorShape = OPENAI_ERRORS


class _FirstAndLast:
    """The view of an OpenAI stream: its stop copies ids from its first and last events."""

    def __init__(self, stop_events: Callable[[Json, Json, dict[str, Any]], list[str]]) -> None:
        self._stop_events = stop_events
        self.first: Json = None
        self.last: Json = None

    def see(self, data: Json) -> None:
        if self.first is None:
            self.first = data
        self.last = data

    def stop_events(self, loop: dict[str, Any]) -> list[str]:
        return self._stop_events(self.first, self.last, loop)


def _choices(data: Json) -> list[Any]:
    choices = data.get("choices") if isinstance(data, dict) else None
    return choices if isinstance(choices, list) else []


def _choice_finish_reasons(data: Json) -> list[str]:
    return [
        reason
        for choice in _choices(data)
        if isinstance(choice, dict) and isinstance(reason := choice.get("finish_reason"), str)
    ]


def _mark_choice(data: Json, source: str, loop: dict[str, Any]) -> None:
    index = _choice_index(source)
    for position, choice in enumerate(_choices(data)):
        if choice.get("index", position) == index:
            choice["finish_reason"] = REPETITION
    data["loopbreak"] = loop


def _final_choice_chunk(
    last: Json, obj: str, choice: dict[str, Any], loop: dict[str, Any]
) -> list[str]:
    template = last if isinstance(last, dict) else {}
    chunk = {key: template[key] for key in ("id", "created", "model") if key in template}
    chunk.update(object=obj, choices=[choice], loopbreak=loop)
    return [sse_event(chunk), DONE]


# --- /v1/chat/completions


def _chat_event_pieces(data: Json) -> Iterable[Piece]:
    if not isinstance(data, dict) or "choices" not in data:
        return ()
    return chat_pieces(ChatCompletionChunk.construct(**data))


def _chat_body_pieces(body: Json) -> Iterator[tuple[Piece, Path]]:
    for position, choice in enumerate(_choices(body)):
        index = choice.get("index", position)
        prefix = "" if index == 0 else f"choices[{index}]."
        message = choice.get("message")
        if not isinstance(message, dict):
            continue
        at: Path = ("choices", position, "message")
        # As the stream adapter does: one of the two reasoning fields, as servers may send both.
        for key in ("reasoning_content", "reasoning"):
            if isinstance(message.get(key), str) and message[key]:
                yield Piece(prefix + REASONING, message[key]), (*at, key)
                break
        if isinstance(message.get("content"), str):
            yield Piece(prefix + CONTENT, message["content"]), (*at, "content")
        for number, call in enumerate(message.get("tool_calls") or ()):
            for kind, field in (("function", "arguments"), ("custom", "input")):
                tool = call.get(kind) if isinstance(call, dict) else None
                if isinstance(tool, dict) and isinstance(tool.get(field), str):
                    yield (
                        Piece(
                            f"{prefix}tool_calls[{number}].{field}", tool[field], tool.get("name")
                        ),
                        (*at, "tool_calls", number, kind, field),
                    )


def _chat_stop_events(first: Json, last: Json, loop: dict[str, Any]) -> list[str]:
    choice = {"index": _choice_index(loop["source"]), "delta": {}, "finish_reason": REPETITION}
    return _final_choice_chunk(last, "chat.completion.chunk", choice, loop)


CHAT = Endpoint(
    "chat",
    _chat_event_pieces,
    _chat_body_pieces,
    lambda: _FirstAndLast(_chat_stop_events),
    _mark_choice,
    _choice_finish_reasons,
)

# --- /v1/completions (the legacy text completions: `choices[i].text`)


def _completion_pieces(completion: Completion) -> Iterator[Piece]:
    for choice in completion.choices:
        if choice.text:
            prefix = "" if choice.index == 0 else f"choices[{choice.index}]."
            yield Piece(prefix + CONTENT, choice.text)


def _completion_event_pieces(data: Json) -> Iterable[Piece]:
    if not isinstance(data, dict) or "choices" not in data:
        return ()
    return _completion_pieces(Completion.construct(**data))


def _completion_body_pieces(body: Json) -> Iterator[tuple[Piece, Path]]:
    for position, choice in enumerate(_choices(body)):
        index = choice.get("index", position)
        if isinstance(choice.get("text"), str):
            prefix = "" if index == 0 else f"choices[{index}]."
            yield Piece(prefix + CONTENT, choice["text"]), ("choices", position, "text")


def _completion_stop_events(first: Json, last: Json, loop: dict[str, Any]) -> list[str]:
    choice = {
        "index": _choice_index(loop["source"]),
        "text": "",
        "logprobs": None,
        "finish_reason": REPETITION,
    }
    return _final_choice_chunk(last, "text_completion", choice, loop)


COMPLETIONS = Endpoint(
    "text_completion",
    _completion_event_pieces,
    _completion_body_pieces,
    lambda: _FirstAndLast(_completion_stop_events),
    _mark_choice,
    _choice_finish_reasons,
)

# --- /v1/responses


def _response_event_pieces(data: Json) -> Iterable[Piece]:
    event_type = data.get("type") if isinstance(data, dict) else None
    event_class = _RESPONSE_TEXT_EVENTS.get(event_type) if isinstance(event_type, str) else None
    if event_class is None:
        return ()
    return response_pieces(event_class.construct(**data))


def _response_body_pieces(body: Json) -> Iterator[tuple[Piece, Path]]:
    output = body.get("output") if isinstance(body, dict) else None
    for index, item in enumerate(output if isinstance(output, list) else ()):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in ("message", "reasoning"):
            source = CONTENT if kind == "message" else REASONING
            for part_key in ("content", "summary"):
                for number, part in enumerate(item.get(part_key) or ()):
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        yield (
                            Piece(source, part["text"]),
                            ("output", index, part_key, number, "text"),
                        )
        elif kind in ("function_call", "custom_tool_call"):
            field = "arguments" if kind == "function_call" else "input"
            if isinstance(item.get(field), str):
                yield (
                    Piece(f"output[{index}].{field}", item[field], item.get("name")),
                    ("output", index, field),
                )


def _incomplete(response: Json, loop: dict[str, Any]) -> Json:
    response = dict(response) if isinstance(response, dict) else {}
    response.update(status="incomplete", incomplete_details={"reason": REPETITION})
    response["loopbreak"] = loop
    return response


def _response_stop_events(first: Json, last: Json, loop: dict[str, Any]) -> list[str]:
    created = first.get("response") if isinstance(first, dict) else None
    sequence = last.get("sequence_number") if isinstance(last, dict) else None
    event = {
        "type": "response.incomplete",
        "sequence_number": sequence + 1 if isinstance(sequence, int) else 0,
        "response": _incomplete(created, loop),
        "loopbreak": loop,
    }
    return [sse_event(event, "response.incomplete")]


def _mark_response(body: Json, source: str, loop: dict[str, Any]) -> None:
    body.update(_incomplete(body, loop))


def _response_finish_reasons(data: Json) -> list[str]:
    response = data.get("response", data) if isinstance(data, dict) else None
    if not isinstance(response, dict):
        return []
    details = response.get("incomplete_details")
    if isinstance(details, dict) and isinstance(details.get("reason"), str):
        return [details["reason"]]
    return ["stop"] if response.get("status") == "completed" else []


RESPONSES = Endpoint(
    "chat",
    _response_event_pieces,
    _response_body_pieces,
    lambda: _FirstAndLast(_response_stop_events),
    _mark_response,
    _response_finish_reasons,
)

OPENAI_PATHS = {
    "/v1/chat/completions": CHAT,
    "/v1/completions": COMPLETIONS,
    "/v1/responses": RESPONSES,
}


def replace_source(body: Json, paths: list[Path], text: str) -> None:
    """Puts a source's trimmed text back into a whole answer: all of it at its first place and
    nothing at the later ones (trimming keeps every clean unit before the loop)."""
    for number, path in enumerate(paths):
        parent = body
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = text if number == 0 else ""
