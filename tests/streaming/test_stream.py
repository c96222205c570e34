"""The stream guards, on real model outputs replayed through real generators."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import Callable, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopbreak import (
    AsyncGuarded,
    DegenerationDetected,
    Guarded,
    LoopbreakError,
    aguard,
    guard,
    scan,
    trim,
)
from loopbreak.streaming.demo import token_deltas
from support.fakes import AsyncIteratorUpstream, IteratorUpstream
from support.oracle import first_held
from support.recorded import CLEAN, DATA, LOOPS, RECORDED, Recorded


def chunks_of(size: int) -> Callable[[str], list[str]]:
    def split(text: str) -> list[str]:
        return [text[i : i + size] for i in range(0, len(text), size)]

    split.__name__ = f"chunks_of_{size}"
    return split


CHUNKINGS = [chunks_of(1), token_deltas, chunks_of(7), chunks_of(2048)]


def assert_stopped_where_rule_held(
    recorded: Recorded, deltas: list[str], received: list[str], error: DegenerationDetected
) -> None:
    """The guard read exactly up to the delta in which the rule first held, passed on every
    delta before it and none after, and reports what ``scan`` reports."""
    expected = scan(recorded.text)[0]
    passed = "".join(received)
    assert received == deltas[: len(received)]
    assert error.text == passed + deltas[len(received)]
    assert len(passed) < expected.detected_at <= len(error.text)
    # The guard stops where the rule first held; scan reports the region whole.
    assert first_held(error.finding) == first_held(expected)
    assert error.source == "content"
    assert error.reason.startswith("Output degeneration detected")
    assert error.persist_text == trim(error.text).text
    assert error.persist_text.startswith(recorded.text[: expected.start])
    assert "[loopbreak: removed" in error.persist_text


def recorded_ids(recorded: Recorded) -> str:
    return recorded.id


# --- clean streams pass through untouched -------------------------------------------------


@pytest.mark.parametrize("recorded", CLEAN, ids=recorded_ids)
def test_clean_stream_passes_through_byte_for_byte(recorded: Recorded) -> None:
    deltas = token_deltas(recorded.text)
    upstream = IteratorUpstream(deltas)
    guarded = guard(upstream)
    received = list(guarded)
    assert received == deltas
    assert "".join(received).encode() == recorded.text.encode()
    assert (guarded.status, guarded.finding, guarded.reason) == ("ok", None, "Output complete")
    assert guarded.text == guarded.persist_text == recorded.text
    assert upstream.closes == 1


@pytest.mark.parametrize("recorded", CLEAN, ids=recorded_ids)
def test_clean_async_stream_passes_through_byte_for_byte(recorded: Recorded) -> None:
    deltas = token_deltas(recorded.text)
    upstream = AsyncIteratorUpstream(deltas)

    async def consume() -> tuple[list[str], AsyncGuarded[str]]:
        guarded = aguard(upstream)
        return [delta async for delta in guarded], guarded

    received, guarded = asyncio.run(consume())
    assert received == deltas
    assert (guarded.status, guarded.finding) == ("ok", None)
    assert guarded.persist_text == recorded.text
    assert upstream.closes == 1


# --- loops are stopped where the rule first holds -----------------------------------------


@pytest.mark.parametrize("chunking", CHUNKINGS, ids=lambda split: split.__name__)
@pytest.mark.parametrize("recorded", LOOPS, ids=recorded_ids)
def test_loop_is_stopped_in_the_delta_where_the_rule_first_holds(
    recorded: Recorded, chunking: Callable[[str], list[str]]
) -> None:
    deltas = chunking(recorded.text)
    upstream = IteratorUpstream(deltas)
    guarded = guard(upstream)
    received: list[str] = []
    with pytest.raises(DegenerationDetected) as caught:
        for delta in guarded:
            received.append(delta)
    assert_stopped_where_rule_held(recorded, deltas, received, caught.value)
    assert upstream.read == len(received) + 1
    assert upstream.closes == 1 and upstream.finalized
    assert guarded.status == "degenerate"
    assert guarded.degeneration == caught.value.degeneration
    assert list(guarded) == []


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=30))
def test_abort_point_does_not_depend_on_chunking(sizes: list[int]) -> None:
    recorded = RECORDED["d10-greedy"]
    text, at = recorded.text, 0
    deltas: list[str] = []
    while at < len(text):
        size = sizes[len(deltas) % len(sizes)]
        deltas.append(text[at : at + size])
        at += size
    received: list[str] = []
    with pytest.raises(DegenerationDetected) as caught:
        for delta in guard(iter(deltas)):
            received.append(delta)
    assert_stopped_where_rule_held(recorded, deltas, received, caught.value)


@pytest.mark.parametrize("recorded", LOOPS, ids=recorded_ids)
def test_async_loop_is_stopped_in_the_delta_where_the_rule_first_holds(recorded: Recorded) -> None:
    deltas = token_deltas(recorded.text)
    upstream = AsyncIteratorUpstream(deltas)
    received: list[str] = []

    async def consume() -> None:
        async for delta in aguard(upstream):
            received.append(delta)

    with pytest.raises(DegenerationDetected) as caught:
        asyncio.run(consume())
    assert_stopped_where_rule_held(recorded, deltas, received, caught.value)
    assert upstream.read == len(received) + 1
    assert upstream.closes == 1 and upstream.finalized


def test_stop_mode_ends_the_stream_and_keeps_the_outcome() -> None:
    recorded = RECORDED["d06-greedy"]
    deltas = token_deltas(recorded.text)
    upstream = IteratorUpstream(deltas)
    guarded = guard(upstream, on_degeneration="stop", keep=2)
    received = "".join(guarded)
    expected = scan(recorded.text)[0]
    assert guarded.status == "degenerate"
    assert guarded.finding is not None and first_held(guarded.finding) == first_held(expected)
    assert len(received) < expected.detected_at <= len(guarded.text)
    assert guarded.persist_text == trim(guarded.text, keep=2).text
    assert guarded.reason is not None and guarded.reason.startswith("Output degeneration detected")
    assert upstream.closes == 1


def test_async_stop_mode_and_text_deltas() -> None:
    recorded = RECORDED["d14-greedy"]
    upstream = AsyncIteratorUpstream(chunks_of(5)(recorded.text))

    async def consume() -> tuple[str, AsyncGuarded[str]]:
        guarded = aguard(upstream, on_degeneration="stop")
        return "".join([delta async for delta in guarded.text_deltas()]), guarded

    received, guarded = asyncio.run(consume())
    assert guarded.status == "degenerate"
    assert guarded.text.startswith(received) and len(guarded.text) == len(received) + 5
    assert upstream.closes == 1


def test_degeneration_details_are_plain_values() -> None:
    recorded = RECORDED["d25-greedy"]
    with pytest.raises(DegenerationDetected) as caught:
        for _ in guard(token_deltas(recorded.text)):
            pass
    error = caught.value
    details = error.degeneration.to_dict()
    assert json.loads(json.dumps(details)) == details
    assert details["source"] == "content" and details["tool_name"] is None
    assert details["units_removed"] == sum(r.units for r in trim(error.text).removals) > 0
    assert str(error) == error.reason
    assert isinstance(error, LoopbreakError)


# --- the upstream is closed exactly once, however the stream ends ------------------------


def test_early_exit_from_a_with_block_closes_the_upstream_once() -> None:
    upstream = IteratorUpstream(token_deltas(RECORDED["d20-sampled"].text))
    with guard(upstream) as guarded:
        for index, _ in enumerate(guarded):
            if index == 2:
                break
    assert upstream.closes == 1 and upstream.finalized
    assert upstream.read == 3
    assert guarded.status == "cancelled"
    guarded.close()
    assert upstream.closes == 1


def test_closing_before_reading_closes_the_upstream_once() -> None:
    upstream = IteratorUpstream(["never read"])
    guarded = guard(upstream)
    guarded.close()
    guarded.close()
    assert (upstream.closes, upstream.read, guarded.status) == (1, 0, "cancelled")
    assert list(guarded) == []


def test_a_plain_generator_upstream_is_closed_on_early_exit() -> None:
    finalized: list[bool] = []

    def generate() -> Iterator[str]:
        try:
            yield from token_deltas(RECORDED["d02-sampled"].text)
        finally:
            finalized.append(True)

    with guard(generate()) as guarded:
        next(guarded)
    assert finalized == [True]


def test_async_early_exit_closes_the_upstream_once() -> None:
    upstream = AsyncIteratorUpstream(token_deltas(RECORDED["d20-sampled"].text))

    async def consume() -> AsyncGuarded[str]:
        async with aguard(upstream) as guarded:
            async for _ in guarded:
                break
        await guarded.aclose()
        return guarded

    guarded = asyncio.run(consume())
    assert (upstream.closes, upstream.read, guarded.status) == (1, 1, "cancelled")
    assert upstream.finalized


def test_cancelled_task_closes_the_upstream_once() -> None:
    upstream = AsyncIteratorUpstream(token_deltas(RECORDED["d20-sampled"].text), block_after=4)
    guarded = aguard(upstream)
    received: list[str] = []

    async def consume() -> None:
        async for delta in guarded:
            received.append(delta)

    async def cancel_while_waiting() -> None:
        task = asyncio.create_task(consume())
        await upstream.blocked.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_while_waiting())
    assert len(received) == 4
    assert upstream.closes == 1 and upstream.finalized
    assert guarded.status == "cancelled" and guarded.finding is None
    assert guarded.reason == "Stopped by the consumer before the stream ended"


def test_aclose_from_another_task_closes_the_stream_under_a_waiting_consumer() -> None:
    """A user stop handled by another task while the consumer awaits the model: the stream
    object is closed at once, and the consumer's pending read, failing because of it, ends the
    iteration quietly instead of raising."""

    class HttpLikeStream:
        def __init__(self) -> None:
            self.closes = 0
            self.queue: asyncio.Queue[Optional[str]] = asyncio.Queue()

        async def _read(self) -> AsyncGenerator[str, None]:
            while (delta := await self.queue.get()) is not None:
                yield delta
            raise ConnectionError("response closed while reading")

        def __aiter__(self) -> AsyncIterator[str]:
            return self._read()

        async def aclose(self) -> None:
            self.closes += 1
            self.queue.put_nowait(None)

    async def stop_while_waiting() -> tuple[list[str], HttpLikeStream, AsyncGuarded[str], int]:
        upstream = HttpLikeStream()
        guarded = aguard(upstream)
        received: list[str] = []

        async def consume() -> None:
            async for delta in guarded:
                received.append(delta)

        task = asyncio.create_task(consume())
        for delta in ["Hello", " there"]:
            upstream.queue.put_nowait(delta)
        for _ in range(1000):  # until the consumer holds both deltas and waits for a third
            if len(received) == 2:
                break
            await asyncio.sleep(0)
        await guarded.aclose()
        closes_at_once = upstream.closes
        await task  # ends without an exception
        return received, upstream, guarded, closes_at_once

    received, upstream, guarded, closes_at_once = asyncio.run(stop_while_waiting())
    assert received == ["Hello", " there"]
    assert closes_at_once == 1 and upstream.closes == 1
    assert guarded.status == "cancelled" and guarded.error is None


# --- upstream errors pass through unchanged -----------------------------------------------


def test_upstream_error_propagates_unchanged() -> None:
    error = ConnectionResetError("server restarted")
    upstream = IteratorUpstream(["Hello", " there"], error=error)
    guarded = guard(upstream)
    received: list[str] = []
    with pytest.raises(ConnectionResetError) as caught:
        for delta in guarded:
            received.append(delta)
    assert caught.value is error
    assert received == ["Hello", " there"]
    assert (guarded.status, guarded.error, upstream.closes) == ("error", error, 1)
    assert guarded.reason == "Upstream error: ConnectionResetError: server restarted"


def test_async_upstream_timeout_propagates_unchanged() -> None:
    error = TimeoutError("no token for 30 s")
    upstream = AsyncIteratorUpstream(["Hello"], error=error)
    guarded = aguard(upstream)

    async def consume() -> None:
        async for _ in guarded:
            pass

    with pytest.raises(TimeoutError) as caught:
        asyncio.run(consume())
    assert caught.value is error
    assert not isinstance(caught.value, LoopbreakError)
    assert (guarded.status, upstream.closes) == ("error", 1)


# --- bad input ----------------------------------------------------------------------------


def test_a_whole_str_is_refused() -> None:
    with pytest.raises(TypeError, match="one str"):
        guard("a whole text")


def test_non_str_deltas_are_refused_and_the_upstream_closed() -> None:
    upstream = IteratorUpstream([b"bytes"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="str deltas, got bytes"):
        list(guard(upstream))
    assert upstream.closes == 1


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="on_degeneration"):
        guard([], on_degeneration="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keep"):
        guard([], keep=0)
    with pytest.raises(TypeError, match="keep"):
        guard([], keep=2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="rules"):
        guard([], rules={"min_repeats": 5})  # type: ignore[arg-type]


def test_sync_and_async_streams_are_not_mixed_up() -> None:
    async def deltas() -> AsyncIterator[str]:
        yield "x"

    with pytest.raises(TypeError, match="async guard"):
        Guarded(deltas(), lambda delta: ())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sync guard"):
        aguard(["x"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected an iterable"):
        guard(42)  # type: ignore[arg-type]


# --- regression: outputs generated by `make e2e` ------------------------------------------


def e2e_rows() -> list[dict[str, str]]:
    with open(DATA / "smollm2_e2e.jsonl", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


@pytest.mark.parametrize("row", e2e_rows(), ids=lambda row: row["id"])
def test_outputs_from_the_real_model_run(row: dict[str, str]) -> None:
    """Every loop the e2e run saw is stopped before its end; every clean answer passes."""
    text = row["text"]
    guarded = guard(token_deltas(text), on_degeneration="stop")
    received = "".join(guarded)
    if row["label"] == "loop":
        assert guarded.status == "degenerate"
        assert len(received) < len(text) // 2
    else:
        assert guarded.status == "ok" and received == text
