"""End to end over real HTTP on localhost: the real ``anthropic`` client, the loopbreak adapter,
and a server streaming recorded model outputs as Anthropic Messages events
(tests/support/anthropic_server.py).

Each test checks what the client received against the rule's bound (``scan`` of the recording),
that the server saw the client go away before it had sent the whole loop, and what was saved.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anthropic import Anthropic, AsyncAnthropic
from anthropic.types import MessageParam
from anthropic.types.beta import BetaMessageParam
from starlette.applications import Starlette

from loopbreak import DegenerationDetected, scan, trim
from loopbreak.integrations.anthropic import aguard_messages, guard_messages
from loopbreak.store import Database
from loopbreak.streaming.demo import token_deltas
from loopbreak.streaming.persist import NO_TEXT_MARKER, load_turn, save_result
from support.anthropic_server import routes
from support.oracle import first_held
from support.recorded import RECORDED
from support.recorded_server import Recordings, StreamLog, serve, tool_arguments

MESSAGES: list[MessageParam] = [{"role": "user", "content": "(the recorded prompt)"}]
MAX_TOKENS = 2000


class Server:
    def __init__(self, url: str, recordings: Recordings) -> None:
        self.url = url
        self.recordings = recordings

    def anthropic(self) -> Anthropic:
        return Anthropic(base_url=self.url, api_key="test", max_retries=0)

    def async_anthropic(self) -> AsyncAnthropic:
        return AsyncAnthropic(base_url=self.url, api_key="test", max_retries=0)

    def finished_stream(self, model: str) -> StreamLog:
        log = self.recordings.last(model)
        assert log.ended.wait(timeout=30), "the server's stream never ended"
        return log


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    recordings = Recordings()
    for url in serve(Starlette(routes=routes(recordings))):
        yield Server(url, recordings)


def text_of(events: list[Any]) -> str:
    """The answer text the consumer received, from the raw deltas only (``messages.stream()``
    also yields ``text`` events repeating them)."""
    return "".join(
        event.delta.text
        for event in events
        if event.type == "content_block_delta" and event.delta.type == "text_delta"
    )


def thinking_of(events: list[Any]) -> str:
    return "".join(
        event.delta.thinking
        for event in events
        if event.type == "content_block_delta" and event.delta.type == "thinking_delta"
    )


def read_through(text: str, units: int) -> str:
    """The shortest run of the server's whole deltas of ``text`` that reaches ``units``: what
    a guard has read when a rule holds at that unit."""
    read = ""
    for delta in token_deltas(text):
        if len(read) >= units:
            break
        read += delta
    return read


def test_looping_text_stream_is_stopped_and_saved_trimmed(server: Server, tmp_path: Path) -> None:
    recording, model = RECORDED["d10-greedy"], "text:d10-greedy"
    expected = scan(recording.text)[0]
    client = server.anthropic()
    stream = client.messages.create(
        model=model, max_tokens=MAX_TOKENS, messages=MESSAGES, stream=True
    )
    received: list[Any] = []
    with pytest.raises(DegenerationDetected) as caught:
        for event in guard_messages(stream):
            received.append(event)
    error = caught.value
    streamed = text_of(received)
    assert (error.source, error.tool_name) == ("content", None)
    assert len(streamed) < expected.detected_at <= len(error.text)
    assert error.text == recording.text[: len(error.text)] and error.text.startswith(streamed)
    assert first_held(error.finding) == first_held(expected)
    assert stream.response.is_closed

    log = server.finished_stream(model)
    assert log.disconnected_early and log.sent < log.total

    connection = Database(tmp_path / "runs.db")
    turn = load_turn(connection, save_result(connection, error))
    assert turn.status == "degenerate" and turn.error == error.reason
    assert turn.error.startswith("Output degeneration detected in content:")
    assert turn.text == trim(error.text).text
    assert (
        turn.text.startswith(recording.text[: expected.start])
        and "[loopbreak: removed" in turn.text
    )
    client.close()


def test_looping_thinking_is_stopped_with_reasoning_as_the_source(
    server: Server, tmp_path: Path
) -> None:
    """``messages.stream()``: the thinking loops before any answer was written; the answer text
    stays empty (the thinking is never mixed into it) and the saved turn says so."""
    thinking, model = RECORDED["d14-greedy"], "thinking:d14-greedy+text:d08-greedy"
    expected = scan(thinking.text)[0]
    client = server.anthropic()
    received: list[Any] = []
    with client.messages.stream(model=model, max_tokens=MAX_TOKENS, messages=MESSAGES) as stream:
        guarded = guard_messages(stream, on_degeneration="stop")
        for event in guarded:
            received.append(event)
    degeneration = guarded.degeneration
    assert guarded.status == "degenerate" and degeneration is not None
    assert (degeneration.source, degeneration.tool_name) == ("reasoning", None)
    assert first_held(degeneration.finding) == first_held(expected)
    assert guarded.reason is not None
    assert guarded.reason.startswith("Output degeneration detected in reasoning: ")
    assert len(thinking_of(received)) < expected.detected_at
    assert guarded.text == "" and text_of(received) == ""
    read = read_through(thinking.text, expected.detected_at)
    assert read.startswith(thinking_of(received))
    assert degeneration.source_persist_text == trim(read).text
    assert degeneration.source_persist_text.startswith(thinking.text[: expected.start])
    assert "[loopbreak: removed" in degeneration.source_persist_text
    assert degeneration.units_removed == sum(removal.units for removal in trim(read).removals) > 0
    assert server.finished_stream(model).disconnected_early

    connection = Database(tmp_path / "runs.db")
    turn = load_turn(connection, save_result(connection, guarded))
    assert (turn.status, turn.text) == ("degenerate", NO_TEXT_MARKER)
    assert turn.finding is not None and turn.finding["source"] == "reasoning"
    client.close()


def test_clean_thinking_and_answer_pass_unchanged(server: Server, tmp_path: Path) -> None:
    thinking, answer = RECORDED["d20-sampled"], RECORDED["d37-sampled"]
    model = "thinking:d20-sampled+text:d37-sampled"
    client = server.anthropic()
    with client.messages.stream(model=model, max_tokens=MAX_TOKENS, messages=MESSAGES) as stream:
        guarded = guard_messages(stream)
        received = list(guarded)
        # The SDK's own accumulation saw every event.
        message = stream.get_final_message()
    assert guarded.status == "ok" and guarded.finding is None
    assert thinking_of(received) == thinking.text and text_of(received) == answer.text
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert message.content[1].type == "text" and message.content[1].text == answer.text
    assert guarded.text == answer.text
    assert server.finished_stream(model).completed

    connection = Database(tmp_path / "runs.db")
    turn = load_turn(connection, save_result(connection, guarded))
    assert (turn.status, turn.error, turn.text, turn.finding) == ("ok", None, answer.text, None)
    client.close()


def test_async_looping_tool_input_is_stopped(server: Server) -> None:
    model = "tool:d27-greedy"
    expected = scan(tool_arguments("d27-greedy"))[0]

    async def consume() -> DegenerationDetected:
        client = server.async_anthropic()
        stream = await client.messages.create(
            model=model, max_tokens=MAX_TOKENS, messages=MESSAGES, stream=True
        )
        try:
            async for _ in aguard_messages(stream):
                pass
        except DegenerationDetected as error:
            assert stream.response.is_closed
            return error
        finally:
            await client.close()
        raise AssertionError("the looping tool input was not stopped")

    error = asyncio.run(consume())
    assert (error.source, error.tool_name) == ("content[0].input", "write_file")
    assert first_held(error.finding) == first_held(expected)
    assert error.reason.startswith(
        "Output degeneration detected in content[0].input (tool write_file): "
    )
    assert error.text == ""
    assert server.finished_stream(model).disconnected_early


def test_async_stream_helper_stops_a_looping_answer_after_clean_thinking(server: Server) -> None:
    """The answer's detector sees the answer alone: the finding is at the offsets ``scan`` gives
    for the answer, however long the thinking before it was."""
    answer, model = RECORDED["d22-greedy"], "thinking:d02-sampled+text:d22-greedy"
    expected = scan(answer.text)[0]

    async def consume() -> tuple[str, DegenerationDetected]:
        client = server.async_anthropic()
        received: list[Any] = []
        try:
            async with client.messages.stream(
                model=model, max_tokens=MAX_TOKENS, messages=MESSAGES
            ) as stream:
                async for event in aguard_messages(stream):
                    received.append(event)
        except DegenerationDetected as error:
            return text_of(received), error
        finally:
            await client.close()
        raise AssertionError("the looping answer was not stopped")

    streamed, error = asyncio.run(consume())
    assert error.source == "content"
    assert first_held(error.finding) == first_held(expected)
    assert len(streamed) < expected.detected_at <= len(error.text)
    assert error.persist_text == trim(error.text).text
    assert server.finished_stream(model).disconnected_early


def test_beta_client_stream_is_guarded_the_same_way(server: Server) -> None:
    recording, model = RECORDED["d06-greedy"], "text:d06-greedy"
    expected = scan(recording.text)[0]
    client = server.anthropic()
    messages: list[BetaMessageParam] = [{"role": "user", "content": "(the recorded prompt)"}]
    stream = client.beta.messages.create(
        model=model, max_tokens=MAX_TOKENS, messages=messages, stream=True
    )
    guarded = guard_messages(stream, on_degeneration="stop")
    streamed = text_of(list(guarded))
    assert guarded.status == "degenerate" and guarded.finding is not None
    assert first_held(guarded.finding) == first_held(expected)
    assert len(streamed) < expected.detected_at <= len(guarded.text)
    assert server.finished_stream(model).disconnected_early
    client.close()


def test_adapter_refuses_what_is_not_a_messages_stream(server: Server) -> None:
    with pytest.raises(TypeError, match="Anthropic Messages stream events"):
        list(guard_messages(["plain text"]))  # type: ignore[type-var]
    client = server.anthropic()
    manager = client.messages.stream(
        model="text:d08-greedy", max_tokens=MAX_TOKENS, messages=MESSAGES
    )
    with pytest.raises(TypeError, match="enter it first"):
        guard_messages(manager)  # type: ignore[arg-type]
    client.close()
