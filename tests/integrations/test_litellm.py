"""The LiteLLM adapter against LiteLLM itself: its own ``mock_response`` streams (real
``CustomStreamWrapper`` objects over LiteLLM's mock provider, which sends 3-character chunks),
sync and async, and its OpenAI provider over real HTTP to the recorded server for reasoning.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from types import AsyncGeneratorType, GeneratorType
from typing import Any

import litellm
import pytest
from litellm import CustomStreamWrapper
from litellm.types.utils import Choices, Message, ModelResponse
from starlette.applications import Starlette

from loopbreak import DegenerationDetected, scan, trim
from loopbreak.integrations.litellm import aguard_completion, guard_completion
from loopbreak.store import Database
from loopbreak.streaming.persist import NO_TEXT_MARKER, load_turn, save_result
from support.oracle import first_held
from support.recorded import RECORDED
from support.recorded_server import ANSWER_AFTER_REASONING, Recordings, routes, serve

MESSAGES = [{"role": "user", "content": "(the recorded prompt)"}]


def mock_stream(text: str) -> CustomStreamWrapper:
    stream = litellm.completion(
        model="openai/mock", messages=MESSAGES, stream=True, mock_response=text
    )
    assert isinstance(stream, CustomStreamWrapper)
    return stream


def content_of(chunks: list[Any]) -> str:
    return "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)


def test_looping_mock_stream_is_stopped_and_saved_trimmed(tmp_path: Path) -> None:
    recording = RECORDED["d10-greedy"]
    expected = scan(recording.text)[0]
    stream = mock_stream(recording.text)
    provider = stream.completion_stream
    assert isinstance(provider, GeneratorType)
    received: list[Any] = []
    with pytest.raises(DegenerationDetected) as caught:
        for chunk in guard_completion(stream):
            received.append(chunk)
    error = caught.value
    streamed = content_of(received)
    assert len(streamed) < expected.detected_at <= len(error.text) < len(recording.text)
    assert error.text == recording.text[: len(error.text)] and error.text.startswith(streamed)
    assert first_held(error.finding) == first_held(expected)
    # Closing the wrapper closed the provider's stream: nothing more is generated.
    assert stream.completion_stream is None and provider.gi_frame is None
    assert next(stream, None) is None

    connection = Database(tmp_path / "runs.db")
    turn = load_turn(connection, save_result(connection, error))
    assert turn.status == "degenerate" and turn.error == error.reason
    assert turn.text == trim(error.text).text and "[loopbreak: removed" in turn.text


def test_clean_mock_stream_passes_unchanged(tmp_path: Path) -> None:
    recording = RECORDED["d02-sampled"]
    guarded = guard_completion(mock_stream(recording.text))
    assert content_of(list(guarded)) == recording.text
    assert guarded.status == "ok" and guarded.finding is None and guarded.text == recording.text

    connection = Database(tmp_path / "runs.db")
    turn = load_turn(connection, save_result(connection, guarded))
    assert (turn.status, turn.error, turn.text, turn.finding) == ("ok", None, recording.text, None)


def test_closing_the_guard_early_closes_the_litellm_stream() -> None:
    stream = mock_stream(RECORDED["d20-sampled"].text)
    provider = stream.completion_stream
    assert isinstance(provider, GeneratorType)
    with guard_completion(stream) as guarded:
        next(guarded)
    assert guarded.status == "cancelled"
    assert stream.completion_stream is None and provider.gi_frame is None


def test_async_looping_mock_stream_is_stopped() -> None:
    recording = RECORDED["d14-greedy"]
    expected = scan(recording.text)[0]

    async def consume() -> tuple[str, Any, Any, Any]:
        stream = await litellm.acompletion(
            model="openai/mock", messages=MESSAGES, stream=True, mock_response=recording.text
        )
        assert isinstance(stream, CustomStreamWrapper)
        provider = stream.completion_stream
        guarded = aguard_completion(stream, on_degeneration="stop")
        received = [chunk async for chunk in guarded]
        return content_of(received), guarded, stream, provider

    streamed, guarded, stream, provider = asyncio.run(consume())
    assert guarded.status == "degenerate" and first_held(guarded.finding) == first_held(expected)
    assert len(streamed) < expected.detected_at <= len(guarded.text)
    assert guarded.persist_text == trim(guarded.text).text
    assert isinstance(provider, AsyncGeneratorType) and provider.ag_frame is None
    assert stream.completion_stream is None


def test_async_clean_mock_stream_passes_unchanged() -> None:
    recording = RECORDED["d37-sampled"]

    async def consume() -> tuple[str, Any]:
        stream = await litellm.acompletion(
            model="openai/mock", messages=MESSAGES, stream=True, mock_response=recording.text
        )
        guarded = aguard_completion(stream)
        return content_of([chunk async for chunk in guarded]), guarded

    streamed, guarded = asyncio.run(consume())
    assert streamed == recording.text
    assert guarded.status == "ok" and guarded.persist_text == recording.text


@pytest.fixture(scope="module")
def server_url() -> Iterator[tuple[str, Recordings]]:
    recordings = Recordings()
    for url in serve(Starlette(routes=routes(recordings))):
        yield url, recordings


def test_looping_reasoning_through_litellm_is_stopped(
    server_url: tuple[str, Recordings], tmp_path: Path
) -> None:
    """LiteLLM's OpenAI provider over real HTTP, from a server sending ``reasoning_content``:
    LiteLLM keeps it on ``delta.reasoning_content``, where the adapter reads it."""
    url, recordings = server_url
    thinking, model = RECORDED["d25-greedy"], "reasoning_content:d25-greedy"
    expected = scan(thinking.text)[0]
    stream = litellm.completion(
        model=f"openai/{model}",
        api_base=f"{url}/v1",
        api_key="test",
        messages=MESSAGES,
        stream=True,
    )
    with pytest.raises(DegenerationDetected) as caught:
        for _ in guard_completion(stream):
            pass
    error = caught.value
    assert error.source == "reasoning"
    assert error.reason.startswith("Output degeneration detected in reasoning: ")
    assert first_held(error.finding) == first_held(expected)
    assert error.text == "" and ANSWER_AFTER_REASONING  # no answer was written yet
    log = recordings.last(model)
    assert log.ended.wait(timeout=30) and not log.completed

    connection = Database(tmp_path / "runs.db")
    turn = load_turn(connection, save_result(connection, error))
    assert turn.text == NO_TEXT_MARKER and turn.finding is not None
    assert turn.finding["source"] == "reasoning"


def test_clean_reasoning_through_litellm_stays_out_of_the_answer(
    server_url: tuple[str, Recordings],
) -> None:
    url, recordings = server_url
    model = "reasoning:d20-sampled"  # the ``reasoning`` field, which LiteLLM renames
    stream = litellm.completion(
        model=f"openai/{model}",
        api_base=f"{url}/v1",
        api_key="test",
        messages=MESSAGES,
        stream=True,
    )
    guarded = guard_completion(stream)
    chunks = list(guarded)
    thinking = "".join(
        getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices
    )
    assert thinking == RECORDED["d20-sampled"].text
    assert guarded.status == "ok" and guarded.text == ANSWER_AFTER_REASONING
    assert recordings.last(model).completed


def test_looping_custom_tool_input_is_stopped() -> None:
    """A custom tool's free-form input (LiteLLM's ``custom`` tool calls): LiteLLM's mock of a
    whole response streams it as one chunk."""
    loop = RECORDED["d27-greedy"].text
    call = {"id": "call_1", "type": "custom", "custom": {"name": "write_file", "input": loop}}
    message = Message(content=None, role="assistant", tool_calls=[call])
    response = ModelResponse(
        choices=[Choices(index=0, finish_reason="tool_calls", message=message)]
    )
    stream = litellm.completion(
        model="openai/mock", messages=MESSAGES, stream=True, mock_response=response
    )
    with pytest.raises(DegenerationDetected) as caught:
        list(guard_completion(stream))
    error = caught.value
    assert (error.source, error.tool_name) == ("tool_calls[0].input", "write_file")
    assert first_held(error.finding) == first_held(scan(loop)[0])
    assert error.degeneration.source_persist_text == trim(loop).text


def test_adapter_refuses_what_is_not_a_stream() -> None:
    whole = litellm.completion(model="openai/mock", messages=MESSAGES, mock_response="Hello.")
    with pytest.raises(TypeError, match="call with stream=True"):
        guard_completion(whole)
    with pytest.raises(TypeError, match="ModelResponseStream"):
        list(guard_completion(["plain text"]))  # type: ignore[list-item]


def test_the_price_map_is_the_one_litellm_ships() -> None:
    # Set by conftest.py: no test waits on a fetch of the price map, or on its retries offline.
    from litellm.litellm_core_utils.get_model_cost_map import _cost_map_source_info

    assert (_cost_map_source_info.source, _cost_map_source_info.url) == ("local", None)
    assert litellm.model_cost["gpt-4o"]["input_cost_per_token"] > 0
