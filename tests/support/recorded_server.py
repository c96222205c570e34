"""A small OpenAI-compatible server that streams recorded model outputs, for tests over HTTP.

``POST /v1/chat/completions`` and ``POST /v1/responses`` stream a recording chosen by the
request's ``model``: ``"content:<id>"`` streams it as answer text, ``"tool:<id>"`` as the
arguments of a ``write_file`` tool call (a JSON object whose ``content`` is the recording), and
the reasoning kinds stream it as a reasoning model's thinking followed by the answer
``ANSWER_AFTER_REASONING``: ``"reasoning_content:<id>"`` in chat deltas' ``reasoning_content``
(DeepSeek, vLLM, llama.cpp) or Responses ``response.reasoning_text.delta`` events,
``"reasoning:<id>"`` in chat deltas' ``reasoning`` (OpenRouter, Ollama) or Responses
``response.reasoning_summary_text.delta`` events; any other name streams the loop
``DEFAULT_RECORDING`` as answer text. A ``#tag`` after the name is ignored.
Deltas are token-sized and spaced by ``TOKEN_INTERVAL`` like a live model; every stream is
logged, so a test can see whether the server sent everything or saw the client disconnect.
The server runs in a thread on a free localhost port (``serve``).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Optional

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from loopbreak.streaming.demo import token_deltas
from support.recorded import RECORDED

TOKEN_INTERVAL = 0.002
"""Seconds between deltas: a recording of 1500 tokens takes 3 s or more to send, far longer
than a client needs to read the first few hundred, so a client that stops early always
disconnects mid-stream."""


@dataclass
class StreamLog:
    """What the server did for one streamed request."""

    model: str
    total: int
    sent: int = 0
    completed: bool = False
    ended: threading.Event = field(default_factory=threading.Event)

    @property
    def disconnected_early(self) -> bool:
        return self.ended.is_set() and not self.completed


@dataclass
class Recordings:
    """The server's log, shared with the test thread."""

    streams: list[StreamLog] = field(default_factory=list)

    def last(self, model: str) -> StreamLog:
        return [log for log in self.streams if log.model == model][-1]


ANSWER_AFTER_REASONING = RECORDED["d08-greedy"].text
"""A real clean answer, sent after the reasoning of the reasoning kinds."""

REASONING_KINDS = ("reasoning_content", "reasoning")


def tool_arguments(recording_id: str) -> str:
    return json.dumps({"path": "notes.md", "content": RECORDED[recording_id].text})


# A model name that names no recording (``gpt-4o-mini`` in the README's example) streams this
# loop as answer text.
DEFAULT_RECORDING = "d10-greedy"


def _deltas(model: str) -> tuple[str, list[str]]:
    model = model.partition("#")[0]  # a "#tag" tells concurrent streams apart in the log
    kind, _, recording_id = (
        model.partition(":") if ":" in model else ("content", "", DEFAULT_RECORDING)
    )
    if kind == "content":
        return kind, token_deltas(RECORDED[recording_id].text)
    if kind == "tool":
        return kind, token_deltas(tool_arguments(recording_id))
    if kind in REASONING_KINDS:
        return kind, token_deltas(RECORDED[recording_id].text)
    raise ValueError(f"unknown model {model!r}")


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data)}\n\n"


def _named_sse(data: dict[str, Any]) -> str:
    """A Responses API event: named by its type, as OpenAI sends them."""
    return f"event: {data['type']}\n{_sse(data)}"


def _chat_chunk(model: str, delta: dict[str, Any], finish_reason: Optional[str] = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return _sse(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [choice],
        }
    )


def _chat_events(model: str, kind: str, deltas: list[str]) -> Iterator[str]:
    yield _chat_chunk(model, {"role": "assistant", "content": ""})
    if kind == "tool":
        call = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "write_file", "arguments": ""},
        }
        yield _chat_chunk(model, {"tool_calls": [call]})
    for delta in deltas:
        if kind == "tool":
            yield _chat_chunk(
                model, {"tool_calls": [{"index": 0, "function": {"arguments": delta}}]}
            )
        else:  # content, or the thinking in the delta field the kind names
            yield _chat_chunk(model, {kind: delta})
    if kind in REASONING_KINDS:
        for delta in token_deltas(ANSWER_AFTER_REASONING):
            yield _chat_chunk(model, {"content": delta})
    yield _chat_chunk(model, {}, "tool_calls" if kind == "tool" else "stop")
    yield "data: [DONE]\n\n"


def _response_events(model: str, kind: str, deltas: list[str]) -> Iterator[str]:
    number = iter(range(1_000_000))
    response = {"id": "resp_1", "object": "response", "created_at": 0, "model": model, "output": []}
    yield _named_sse(
        {"type": "response.created", "sequence_number": next(number), "response": response}
    )
    if kind in REASONING_KINDS:
        reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
        yield _named_sse(_added(reasoning, next(number), output_index=0))
        for delta in deltas:
            if kind == "reasoning_content":
                event = {"type": "response.reasoning_text.delta", "content_index": 0}
            else:
                event = {"type": "response.reasoning_summary_text.delta", "summary_index": 0}
            event.update(item_id="rs_1", sequence_number=next(number), output_index=0, delta=delta)
            yield _named_sse(event)
        kind, deltas, output_index = "content", token_deltas(ANSWER_AFTER_REASONING), 1
    else:
        output_index = 0
    if kind == "content":
        item: dict[str, Any] = {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [],
        }
    else:
        item = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "write_file",
            "arguments": "",
        }
    yield _named_sse(_added(item, next(number), output_index))
    for delta in deltas:
        if kind == "content":
            event = {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "content_index": 0,
                "logprobs": [],
            }
        else:
            event = {"type": "response.function_call_arguments.delta", "item_id": "fc_1"}
        event.update(sequence_number=next(number), output_index=output_index, delta=delta)
        yield _named_sse(event)
    done = {"type": "response.completed", "sequence_number": next(number), "response": response}
    yield _named_sse(done)


def _added(item: dict[str, Any], sequence_number: int, output_index: int) -> dict[str, Any]:
    return {
        "type": "response.output_item.added",
        "sequence_number": sequence_number,
        "output_index": output_index,
        "item": item,
    }


def streaming_endpoint(
    recordings: Recordings, events: Callable[[str], list[str]]
) -> Callable[[Request], Any]:
    """An endpoint streaming ``events(model)`` (SSE text, one string per event) with
    ``TOKEN_INTERVAL`` between them, logged in ``recordings``."""

    async def endpoint(request: Request) -> Response:
        model = (await request.json())["model"]
        sse = events(model)
        log = StreamLog(model, total=len(sse))
        recordings.streams.append(log)

        async def stream() -> AsyncIterator[str]:
            try:
                for index, event in enumerate(sse):
                    if index:
                        await asyncio.sleep(TOKEN_INTERVAL)
                    yield event
                    log.sent += 1
                # No await since the last send: a client closing after [DONE] cannot cancel this.
                log.completed = True
            finally:
                # Runs when the stream ends or when the server sees the client disconnect.
                log.ended.set()

        return StreamingResponse(stream(), media_type="text/event-stream")

    return endpoint


def routes(recordings: Recordings) -> list[BaseRoute]:
    def chat(model: str) -> list[str]:
        return list(_chat_events(model, *_deltas(model)))

    def responses(model: str) -> list[str]:
        return list(_response_events(model, *_deltas(model)))

    return [
        Route("/v1/chat/completions", streaming_endpoint(recordings, chat), methods=["POST"]),
        Route("/v1/responses", streaming_endpoint(recordings, responses), methods=["POST"]),
    ]


def serve(app: Starlette, lifespan: Literal["on", "off"] = "off") -> Iterator[str]:
    """Runs ``app`` on a free localhost port in a thread; yields its base URL, then stops it.
    ``lifespan="on"`` runs the app's startup and shutdown (an app that opens clients there)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
