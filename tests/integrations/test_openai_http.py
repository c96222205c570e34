"""End to end over real HTTP on localhost: the real ``openai`` client, the loopbreak adapters,
and a server streaming recorded model outputs (tests/recorded_server.py).

Each test checks what the client received against the rule's bound (``scan`` of the recording),
that the server saw the client go away before it had sent the whole loop, and what was saved.
"""

from __future__ import annotations

import asyncio
import json
import queue
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletionMessageParam
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from loopbreak import DegenerationDetected, aguard, scan, trim
from loopbreak.integrations.openai import aguard_chat, aguard_responses, guard_chat, guard_responses
from loopbreak.integrations.starlette import sse_response
from loopbreak.store import Database
from loopbreak.streaming.guard import AsyncGuarded
from loopbreak.streaming.persist import NO_TEXT_MARKER, load_turn, save_result
from support.oracle import first_held
from support.recorded import RECORDED
from support.recorded_server import Recordings, StreamLog, routes, serve, tool_arguments

MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": "(the recorded prompt)"}]


@dataclass
class Server:
    url: str
    recordings: Recordings
    relay_db: Path
    relay_saved: queue.Queue[int] = field(default_factory=queue.Queue)

    def openai(self) -> OpenAI:
        return OpenAI(base_url=f"{self.url}/v1", api_key="test", max_retries=0)

    def async_openai(self) -> AsyncOpenAI:
        return AsyncOpenAI(base_url=f"{self.url}/v1", api_key="test", max_retries=0)

    def finished_stream(self, model: str) -> StreamLog:
        log = self.recordings.last(model)
        assert log.ended.wait(timeout=30), "the server's stream never ended"
        return log


def relay_endpoint(server: list[Server]) -> Route:
    """``POST /relay``: what a web app does: stream the model through the guard to the browser
    as SSE and save the outcome once the stream is over."""

    def save(guarded: AsyncGuarded[Any]) -> None:
        connection = Database(server[0].relay_db)
        server[0].relay_saved.put(save_result(connection, guarded))
        connection.close()

    async def relay(request: Request) -> Response:
        model = (await request.json())["model"]
        client = AsyncOpenAI(base_url=f"{request.base_url}v1", api_key="test", max_retries=0)
        stream = await client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
        guarded = aguard_chat(stream, on_degeneration="stop")
        return sse_response(guarded, background=BackgroundTask(save, guarded))

    return Route("/relay", relay, methods=["POST"])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    recordings = Recordings()
    holder: list[Server] = []
    app = Starlette(routes=[*routes(recordings), relay_endpoint(holder)])
    for url in serve(app):
        holder.append(Server(url, recordings, tmp_path_factory.mktemp("relay") / "runs.db"))
        yield holder[0]


def content_of(chunks: list[Any]) -> str:
    return "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)


def arguments_of(chunks: list[Any]) -> str:
    return "".join(
        call.function.arguments or ""
        for chunk in chunks
        for call in (chunk.choices[0].delta.tool_calls or [])
        if call.function is not None
    )


# --- chat completions ---------------------------------------------------------------------


def test_looping_chat_stream_is_stopped_and_saved_trimmed(server: Server, tmp_path: Path) -> None:
    recording, model = RECORDED["d10-greedy"], "content:d10-greedy"
    expected = scan(recording.text)[0]
    client = server.openai()
    stream = client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
    received: list[Any] = []
    with pytest.raises(DegenerationDetected) as caught:
        for chunk in guard_chat(stream):
            received.append(chunk)
    error = caught.value
    streamed = content_of(received)
    assert len(streamed) < expected.detected_at <= len(error.text)
    assert error.text == recording.text[: len(error.text)] and error.text.startswith(streamed)
    # The guard stops where the rule first held; scan reports the region whole.
    assert first_held(error.finding) == first_held(expected)

    log = server.finished_stream(model)
    assert log.disconnected_early and log.sent < log.total

    connection = Database(tmp_path / "runs.db")
    turn = load_turn(connection, save_result(connection, error))
    assert turn.status == "degenerate" and turn.error == error.reason
    assert turn.error.startswith("Output degeneration detected")
    assert turn.text == trim(error.text).text
    assert (
        turn.text.startswith(recording.text[: expected.start])
        and "[loopbreak: removed" in turn.text
    )
    client.close()


def test_clean_chat_stream_is_saved_unchanged(server: Server, tmp_path: Path) -> None:
    recording, model = RECORDED["d02-sampled"], "content:d02-sampled"
    client = server.openai()
    guarded = guard_chat(
        client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
    )
    assert content_of(list(guarded)) == recording.text
    assert guarded.status == "ok" and guarded.finding is None
    assert server.finished_stream(model).completed

    connection = Database(tmp_path / "runs.db")
    turn = load_turn(connection, save_result(connection, guarded))
    assert (turn.status, turn.error, turn.text, turn.finding) == ("ok", None, recording.text, None)
    client.close()


def test_async_looping_chat_stream_is_stopped(server: Server) -> None:
    recording, model = RECORDED["d14-greedy"], "content:d14-greedy"
    expected = scan(recording.text)[0]

    async def consume() -> tuple[str, AsyncGuarded[Any]]:
        client = server.async_openai()
        stream = await client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
        guarded = aguard_chat(stream, on_degeneration="stop")
        received = [chunk async for chunk in guarded]
        await client.close()
        return content_of(received), guarded

    streamed, guarded = asyncio.run(consume())
    assert guarded.status == "degenerate"
    assert len(streamed) < expected.detected_at <= len(guarded.text)
    assert guarded.persist_text == trim(guarded.text).text
    assert server.finished_stream(model).disconnected_early


def test_looping_tool_call_arguments_are_stopped(server: Server, tmp_path: Path) -> None:
    model = "tool:d27-greedy"
    expected = scan(tool_arguments("d27-greedy"))[0]
    client = server.openai()
    stream = client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
    received: list[Any] = []
    with pytest.raises(DegenerationDetected) as caught:
        for chunk in guard_chat(stream):
            received.append(chunk)
    error = caught.value
    assert (error.source, error.tool_name) == ("tool_calls[0].arguments", "write_file")
    assert len(arguments_of(received)) < expected.detected_at
    # The guard stops where the rule first held; scan reports the region whole.
    assert first_held(error.finding) == first_held(expected)
    assert error.reason.startswith(
        "Output degeneration detected in tool_calls[0].arguments (tool write_file)"
    )
    assert server.finished_stream(model).disconnected_early

    connection = Database(tmp_path / "runs.db")
    turn = load_turn(connection, save_result(connection, error))
    assert turn.text == NO_TEXT_MARKER  # the turn wrote no answer text, only the looping call
    assert turn.finding is not None and turn.finding["source"] == "tool_calls[0].arguments"
    assert turn.finding["units_removed"] > 0
    client.close()


# --- responses ----------------------------------------------------------------------------


def test_looping_responses_stream_is_stopped(server: Server) -> None:
    recording, model = RECORDED["d06-greedy"], "content:d06-greedy"
    expected = scan(recording.text)[0]
    client = server.openai()
    guarded = guard_responses(
        client.responses.create(model=model, input="(prompt)", stream=True), on_degeneration="stop"
    )
    streamed = "".join(
        event.delta for event in guarded if event.type == "response.output_text.delta"
    )
    assert guarded.status == "degenerate"
    assert len(streamed) < expected.detected_at <= len(guarded.text)
    assert guarded.text == recording.text[: len(guarded.text)]
    assert server.finished_stream(model).disconnected_early
    client.close()


def test_clean_responses_stream_passes_unchanged(server: Server) -> None:
    recording, model = RECORDED["d37-sampled"], "content:d37-sampled"
    client = server.openai()
    guarded = guard_responses(client.responses.create(model=model, input="(prompt)", stream=True))
    events = list(guarded)
    assert events[-1].type == "response.completed"
    assert guarded.status == "ok" and guarded.persist_text == recording.text
    assert server.finished_stream(model).completed
    client.close()


def test_async_looping_responses_function_call_is_stopped(server: Server) -> None:
    model = "tool:d25-greedy"
    expected = scan(tool_arguments("d25-greedy"))[0]

    async def consume() -> DegenerationDetected:
        client = server.async_openai()
        stream = await client.responses.create(model=model, input="(prompt)", stream=True)
        try:
            async for _ in aguard_responses(stream):
                pass
        except DegenerationDetected as error:
            return error
        finally:
            await client.close()
        raise AssertionError("the looping function call was not stopped")

    error = asyncio.run(consume())
    assert (error.source, error.tool_name) == ("output[0].arguments", "write_file")
    # The guard stops where the rule first held; scan reports the region whole.
    assert first_held(error.finding) == first_held(expected)
    assert server.finished_stream(model).disconnected_early


# --- a Starlette app relaying the model as server-sent events -----------------------------


def read_events(response: httpx.Response, limit: int = 100_000) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of each server-sent event, up to ``limit`` events."""
    events: list[tuple[str, dict[str, Any]]] = []
    name = "message"
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[len("data: ") :])))
            name = "message"
            if len(events) == limit:
                break
    return events


def test_relay_ends_a_looping_stream_with_a_stop_event(server: Server) -> None:
    recording, model = RECORDED["d22-greedy"], "content:d22-greedy"
    expected = scan(recording.text)[0]
    with httpx.stream("POST", f"{server.url}/relay", json={"model": model}, timeout=30) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = read_events(response)
    *deltas, (last_name, stop) = events
    streamed = "".join(data["delta"] for name, data in deltas)
    assert all(name == "message" for name, _ in deltas)
    assert last_name == "stop" and stop["status"] == "degenerate"
    assert stop["reason"].startswith("Output degeneration detected")
    assert stop["finding"]["rule"] == expected.rule and stop["finding"]["start"] == expected.start
    assert len(streamed) < expected.detected_at and recording.text.startswith(streamed)
    assert server.finished_stream(model).disconnected_early

    connection = Database(server.relay_db)
    turn = load_turn(connection, server.relay_saved.get(timeout=30))
    connection.close()
    assert (turn.status, turn.error) == ("degenerate", stop["reason"])
    assert (
        turn.text.startswith(recording.text[: expected.start])
        and "[loopbreak: removed" in turn.text
    )


def test_relay_passes_a_clean_stream_and_says_it_completed(server: Server) -> None:
    recording, model = RECORDED["d37-sampled"], "content:d37-sampled"
    with httpx.stream("POST", f"{server.url}/relay", json={"model": model}, timeout=30) as response:
        *deltas, (last_name, stop) = read_events(response)
    assert "".join(data["delta"] for _, data in deltas) == recording.text
    assert (last_name, stop) == (
        "stop",
        {"status": "ok", "reason": "Output complete", "finding": None},
    )

    connection = Database(server.relay_db)
    turn = load_turn(connection, server.relay_saved.get(timeout=30))
    connection.close()
    assert (turn.status, turn.text) == ("ok", recording.text)


def test_browser_disconnect_closes_the_model_stream(server: Server) -> None:
    model = "content:d20-sampled"
    with httpx.stream("POST", f"{server.url}/relay", json={"model": model}, timeout=30) as response:
        first = read_events(response, limit=3)
    assert [name for name, _ in first] == ["message"] * 3
    log = server.finished_stream(model)
    assert log.disconnected_early and log.sent < log.total


def test_sse_response_closes_the_stream_as_soon_as_the_client_is_gone() -> None:
    """Closed right when sending fails, not whenever the body iterator is garbage-collected
    (here the response object stays referenced, as middleware or a traceback may keep it)."""
    upstream_closed: list[bool] = []

    async def model() -> AsyncIterator[str]:
        try:
            for delta in ["Hello", " there", ", how", " are", " you"]:
                yield delta
        finally:
            upstream_closed.append(True)

    guarded = aguard(model())
    response = sse_response(guarded)
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        if len(sent) == 3:  # the headers and two events got through
            raise OSError("connection reset by peer")
        sent.append(message)

    async def serve_until_the_client_is_gone() -> list[bool]:
        scope = {"type": "http", "asgi": {"spec_version": "2.4"}, "method": "POST", "headers": []}
        with pytest.raises(ClientDisconnect):
            await response(scope, receive, send)
        return list(upstream_closed)  # before asyncio.run() closes leftover generators itself

    assert asyncio.run(serve_until_the_client_is_gone()) == [True]
    assert guarded.status == "cancelled"


def test_adapters_refuse_the_wrong_kind_of_stream() -> None:
    with pytest.raises(TypeError, match="ChatCompletionChunk"):
        list(guard_chat(["plain text"]))  # type: ignore[list-item]
    with pytest.raises(TypeError, match="Responses API stream events"):
        list(guard_responses(["plain text"]))  # type: ignore[type-var]
