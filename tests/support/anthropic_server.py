"""Anthropic Messages API event streams of recorded model outputs, for tests over HTTP.

``POST /v1/messages`` streams the content blocks named by the request's ``model``: blocks joined
by ``+``, each ``"<kind>:<recording id>"``, where the kind is ``text`` (an answer),
``thinking`` (extended thinking, closed by a signature) or ``tool`` (a ``write_file`` tool-use
block whose input JSON has the recording as its ``content``). E.g.
``"thinking:d10-greedy+text:d08-greedy"`` is a reply whose thinking loops before a clean
answer. The events are the ones the Anthropic API sends, in its order, with ``ping`` events
between them as it does; deltas are token-sized and spaced like a live model by
``recorded_server.streaming_endpoint``, which logs every stream. ``message_answer`` is the same
reply whole, as the API answers a request without ``"stream": true``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from starlette.routing import BaseRoute, Route

from loopbreak.streaming.demo import token_deltas
from support.recorded import RECORDED
from support.recorded_server import Recordings, streaming_endpoint, tool_arguments

# The content block each kind opens, the delta type that fills it, and the delta's text field.
_BLOCKS: dict[str, tuple[dict[str, Any], str, str]] = {
    "text": ({"type": "text", "text": ""}, "text_delta", "text"),
    "thinking": (
        {"type": "thinking", "thinking": "", "signature": ""},
        "thinking_delta",
        "thinking",
    ),
    "tool": (
        {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}},
        "input_json_delta",
        "partial_json",
    ),
}


def _event(data: dict[str, Any]) -> str:
    """An Anthropic server-sent event: named by its type."""
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


def _block_text(kind: str, recording_id: str) -> str:
    return tool_arguments(recording_id) if kind == "tool" else RECORDED[recording_id].text


# A model name that names no blocks (``claude-sonnet-4-5`` in the docs' example) streams thinking
# that loops before a clean answer.
DEFAULT_BLOCKS = "thinking:d10-greedy+text:d08-greedy"


def message_events(model: str) -> list[str]:
    """Every event of one streamed reply (see the module docstring for ``model``)."""
    return list(_message_events(model))


def _blocks(model: str) -> list[tuple[str, str]]:
    """The reply's blocks: (kind, recording id) each."""
    model = model.partition("#")[0]  # a "#tag" tells concurrent streams apart in the log
    blocks = (model if ":" in model else DEFAULT_BLOCKS).split("+")
    return [(kind, recording_id) for kind, _, recording_id in (b.partition(":") for b in blocks)]


def _message(model: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    }


def message_answer(model: str) -> dict[str, Any]:
    """The reply whole, as a request without ``"stream": true`` gets it."""
    message = _message(model)
    for kind, recording_id in _blocks(model):
        text = _block_text(kind, recording_id)
        start, _, field = _BLOCKS[kind]
        if kind == "thinking":
            block = {**start, field: text, "signature": "c2lnbmF0dXJl"}
        elif kind == "tool":
            block = {**start, "input": json.loads(text)}
        else:
            block = {**start, field: text}
        message["content"].append(block)
    message["stop_reason"] = "tool_use" if _blocks(model)[-1][0] == "tool" else "end_turn"
    output_tokens = sum(len(token_deltas(_block_text(*block))) for block in _blocks(model))
    message["usage"] = {"input_tokens": 25, "output_tokens": output_tokens}
    return message


def _message_events(model: str) -> Iterator[str]:
    yield _event({"type": "message_start", "message": _message(model)})
    output_tokens = 0
    kinds = []
    for index, (kind, recording_id) in enumerate(_blocks(model)):
        start, delta_type, field = _BLOCKS[kind]
        kinds.append(kind)
        yield _event({"type": "content_block_start", "index": index, "content_block": start})
        yield _event({"type": "ping"})
        for delta in token_deltas(_block_text(kind, recording_id)):
            output_tokens += 1
            delta_event = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": delta_type, field: delta},
            }
            yield _event(delta_event)
        if kind == "thinking":
            signature = {"type": "signature_delta", "signature": "c2lnbmF0dXJl"}
            yield _event({"type": "content_block_delta", "index": index, "delta": signature})
        yield _event({"type": "content_block_stop", "index": index})
    stop_reason = "tool_use" if kinds[-1] == "tool" else "end_turn"
    usage = {"output_tokens": output_tokens}
    yield _event(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": usage,
        }
    )
    yield _event({"type": "message_stop"})


def routes(recordings: Recordings) -> list[BaseRoute]:
    return [Route("/v1/messages", streaming_endpoint(recordings, message_events), methods=["POST"])]
