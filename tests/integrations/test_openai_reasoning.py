"""Reasoning deltas through the openai adapters, over real HTTP on localhost: the recorded
server (tests/recorded_server.py) streams a real model output as a reasoning model's thinking,
then a clean answer, in the shapes OpenAI-compatible servers use (chat deltas'
``reasoning_content`` or ``reasoning``; Responses reasoning text and summary events).

A loop in the thinking is stopped on the ``reasoning`` source, with the rule's bound checked
against ``scan`` of the thinking alone; the answer text never holds any thinking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletionMessageParam
from starlette.applications import Starlette

from loopbreak import DegenerationDetected, scan, trim
from loopbreak.integrations.openai import aguard_responses, guard_chat, guard_responses
from loopbreak.store import Database
from loopbreak.streaming.demo import token_deltas
from loopbreak.streaming.persist import NO_TEXT_MARKER, load_turn, save_result
from support.oracle import first_held
from support.recorded import RECORDED
from support.recorded_server import ANSWER_AFTER_REASONING, Recordings, StreamLog, routes, serve

MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": "(the recorded prompt)"}]


class Server:
    def __init__(self, url: str, recordings: Recordings) -> None:
        self.url = url
        self.recordings = recordings

    def openai(self) -> OpenAI:
        return OpenAI(base_url=f"{self.url}/v1", api_key="test", max_retries=0)

    def finished_stream(self, model: str) -> StreamLog:
        log = self.recordings.last(model)
        assert log.ended.wait(timeout=30), "the server's stream never ended"
        return log


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    recordings = Recordings()
    for url in serve(Starlette(routes=routes(recordings))):
        yield Server(url, recordings)


def read_through(text: str, units: int) -> str:
    """The server's whole deltas of ``text`` up to the first that reaches ``units``."""
    read = ""
    for delta in token_deltas(text):
        if len(read) >= units:
            break
        read += delta
    return read


def reasoning_of(chunks: list[Any], field: str) -> str:
    return "".join(
        (chunk.choices[0].delta.model_extra or {}).get(field) or ""
        for chunk in chunks
        if chunk.choices
    )


def test_looping_reasoning_content_is_stopped_and_the_answer_is_untouched(
    server: Server, tmp_path: Path
) -> None:
    thinking, model = RECORDED["d10-greedy"], "reasoning_content:d10-greedy"
    expected = scan(thinking.text)[0]
    client = server.openai()
    stream = client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
    received: list[Any] = []
    with pytest.raises(DegenerationDetected) as caught:
        for chunk in guard_chat(stream):
            received.append(chunk)
    error = caught.value
    assert (error.source, error.tool_name) == ("reasoning", None)
    assert error.reason.startswith("Output degeneration detected in reasoning: ")
    assert first_held(error.finding) == first_held(expected)
    assert len(reasoning_of(received, "reasoning_content")) < expected.detected_at
    assert error.text == "" and error.persist_text == ""
    read = read_through(thinking.text, expected.detected_at)
    assert error.degeneration.source_persist_text == trim(read).text
    assert "[loopbreak: removed" in error.degeneration.source_persist_text
    log = server.finished_stream(model)
    assert log.disconnected_early and log.sent < log.total

    connection = Database(tmp_path / "runs.db")
    turn = load_turn(connection, save_result(connection, error))
    assert (turn.status, turn.text) == ("degenerate", NO_TEXT_MARKER)
    assert turn.error == error.reason
    assert turn.finding is not None and turn.finding["source"] == "reasoning"
    assert turn.finding["units_removed"] == sum(r.units for r in trim(read).removals) > 0
    client.close()


def test_clean_reasoning_field_stays_out_of_the_answer(server: Server) -> None:
    """The ``reasoning`` field (OpenRouter, Ollama) is read as reasoning, never as answer text."""
    thinking, model = RECORDED["d20-sampled"], "reasoning:d20-sampled"
    client = server.openai()
    guarded = guard_chat(
        client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
    )
    chunks = list(guarded)
    assert reasoning_of(chunks, "reasoning") == thinking.text
    assert guarded.status == "ok" and guarded.finding is None
    assert guarded.text == guarded.persist_text == ANSWER_AFTER_REASONING
    assert server.finished_stream(model).completed
    client.close()


def test_looping_responses_reasoning_text_is_stopped(server: Server) -> None:
    thinking, model = RECORDED["d06-greedy"], "reasoning_content:d06-greedy"
    expected = scan(thinking.text)[0]
    client = server.openai()
    stream = client.responses.create(model=model, input="(prompt)", stream=True)
    guarded = guard_responses(stream, on_degeneration="stop")
    events = list(guarded)
    streamed = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    assert guarded.status == "degenerate" and guarded.degeneration is not None
    assert guarded.degeneration.source == "reasoning"
    assert guarded.finding is not None and first_held(guarded.finding) == first_held(expected)
    assert len(streamed) < expected.detected_at
    assert guarded.text == ""
    assert server.finished_stream(model).disconnected_early
    client.close()


def test_async_looping_responses_reasoning_summary_is_stopped(server: Server) -> None:
    thinking, model = RECORDED["d22-greedy"], "reasoning:d22-greedy"
    expected = scan(thinking.text)[0]

    async def consume() -> DegenerationDetected:
        client = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        stream = await client.responses.create(model=model, input="(prompt)", stream=True)
        try:
            async for _ in aguard_responses(stream):
                pass
        except DegenerationDetected as error:
            return error
        finally:
            await client.close()
        raise AssertionError("the looping reasoning summary was not stopped")

    error = asyncio.run(consume())
    assert error.source == "reasoning"
    assert error.reason.startswith("Output degeneration detected in reasoning: ")
    assert first_held(error.finding) == first_held(expected)
    assert server.finished_stream(model).disconnected_early


def test_clean_responses_reasoning_passes_and_the_answer_is_the_answer(server: Server) -> None:
    thinking, model = RECORDED["d02-sampled"], "reasoning_content:d02-sampled"
    client = server.openai()
    guarded = guard_responses(client.responses.create(model=model, input="(prompt)", stream=True))
    events = list(guarded)
    streamed = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    assert streamed == thinking.text and events[-1].type == "response.completed"
    assert guarded.status == "ok" and guarded.text == ANSWER_AFTER_REASONING
    assert server.finished_stream(model).completed
    client.close()
