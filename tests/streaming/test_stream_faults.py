"""The stream guard under faults, beyond tests/test_stream.py (which covers a plain upstream error,
early exit, a task cancelled while the upstream stalls, and bad input): the upstream failing at
every point of a loop, failing to close, cancellation while the consumer is busy with a chunk,
a stop from another thread, abandoned guards, and slow consumers. Invariants: the clean text read
so far is never lost (``text`` is exactly what was read, ``persist_text`` keeps all of it but a
detected loop) and the upstream is always closed.

Tests marked ``xfail(strict=True)`` reproduce open bugs of ``loopbreak.streaming.guard``.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Optional

import pytest

from loopbreak import AsyncGuarded, DegenerationDetected, aguard, guard, scan
from support.fakes import AsyncGeneratorUpstream, GeneratorUpstream

INTRO = ["Let me check ", "the tools first.\n", "Calling ", "the loader: "]
LOOP = ["load", "Tools."] * 40  # the rule holds at the 20th copy
DELTAS = INTRO + LOOP
HELD_AT = next(i for i in range(len(DELTAS)) if scan("".join(DELTAS[: i + 1])))


# --- the upstream fails: everything read is kept, the upstream is closed -----------------------


@pytest.mark.parametrize("fail_at", [0, 1, len(INTRO), len(INTRO) + 7, HELD_AT])
def test_upstream_error_at_any_point_keeps_what_was_read(fail_at: int) -> None:
    error = ConnectionResetError("peer went away")
    upstream = GeneratorUpstream(DELTAS, fail_at=fail_at, error=error)
    guarded = guard(upstream)
    received: list[str] = []
    with pytest.raises(ConnectionResetError) as caught:
        for delta in guarded:
            received.append(delta)
    assert caught.value is error
    assert received == DELTAS[:fail_at]
    assert guarded.text == guarded.persist_text == "".join(DELTAS[:fail_at])
    assert (guarded.status, guarded.error, guarded.finding) == ("error", error, None)
    assert upstream.closes == 1 and upstream.generator_done


@pytest.mark.parametrize("fail_at", [0, len(INTRO) + 7, HELD_AT])
def test_async_upstream_error_at_any_point_keeps_what_was_read(fail_at: int) -> None:
    error = TimeoutError("no token for 30 s")
    upstream = AsyncGeneratorUpstream(DELTAS, fail_at=fail_at, error=error)
    received: list[str] = []

    async def consume() -> AsyncGuarded[str]:
        guarded = aguard(upstream)
        with pytest.raises(TimeoutError):
            async for delta in guarded:
                received.append(delta)
        return guarded

    guarded = asyncio.run(consume())
    assert received == DELTAS[:fail_at]
    assert guarded.text == guarded.persist_text == "".join(DELTAS[:fail_at])
    assert guarded.status == "error" and upstream.closes == 1 and upstream.generator_done


@pytest.mark.parametrize(
    "interrupt", [KeyboardInterrupt(), SystemExit(3)], ids=["KeyboardInterrupt", "SystemExit"]
)
def test_upstream_raising_a_base_exception_is_closed_and_keeps_the_text(
    interrupt: BaseException,
) -> None:
    upstream = GeneratorUpstream(DELTAS, fail_at=6, error=interrupt)
    guarded = guard(upstream)
    with pytest.raises(type(interrupt)):
        for _ in guarded:
            pass
    assert guarded.text == guarded.persist_text == "".join(DELTAS[:6])
    assert guarded.status != "streaming" and guarded.finding is None
    assert upstream.closes == 1


def test_upstream_is_closed_even_if_closing_its_iterator_fails() -> None:
    """An SDK stream's generator whose cleanup raises (the connection is already gone) must not
    keep the guard from closing the stream object itself (its HTTP response)."""
    upstream = GeneratorUpstream(DELTAS, cleanup_error=ConnectionError("connection already gone"))
    guarded = guard(upstream)
    next(guarded)
    with pytest.raises(ConnectionError):
        guarded.close()
    assert upstream.closes == 1


def test_a_failing_close_does_not_hide_the_degeneration() -> None:
    upstream = GeneratorUpstream(DELTAS, close_error=RuntimeError("close failed"))
    guarded = guard(upstream)
    with pytest.raises(DegenerationDetected):
        for _ in guarded:
            pass


def test_a_failing_close_still_leaves_the_outcome_on_the_guard() -> None:
    upstream = GeneratorUpstream(DELTAS, close_error=RuntimeError("close failed"))
    guarded = guard(upstream)
    with pytest.raises(DegenerationDetected):  # the loop, not the failing close, is raised
        for _ in guarded:
            pass
    assert guarded.status == "degenerate" and upstream.closes == 1
    assert guarded.persist_text.startswith("".join(INTRO) + "loadTools." * 3)


# --- the consumer stops: mid-chunk, from another thread, or by dropping the guard -------------


def test_async_consumer_cancelled_while_busy_with_a_chunk() -> None:
    """The task is cancelled while its loop body awaits (the guard is suspended between two
    chunks): leaving ``async with`` closes the upstream before the task ends."""
    upstream = AsyncGeneratorUpstream(DELTAS)
    received: list[str] = []
    busy = asyncio.Event()
    closes_when_task_ended: list[int] = []

    async def consume(guarded: AsyncGuarded[str]) -> None:
        try:
            async with guarded:
                async for delta in guarded:
                    received.append(delta)
                    if len(received) == 3:
                        busy.set()
                        await asyncio.sleep(3600)  # handling the chunk: cancelled here
        finally:
            closes_when_task_ended.append(upstream.closes)

    async def main() -> AsyncGuarded[str]:
        guarded = aguard(upstream)
        task = asyncio.create_task(consume(guarded))
        await busy.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return guarded

    guarded = asyncio.run(main())
    assert closes_when_task_ended == [1]
    assert received == DELTAS[:3] and upstream.read == 3
    assert guarded.text == guarded.persist_text == "".join(DELTAS[:3])
    assert guarded.status == "cancelled"


def test_async_consumer_cancelled_without_async_with_is_closed_by_the_loop() -> None:
    upstream = AsyncGeneratorUpstream(DELTAS)
    received: list[str] = []

    async def consume(guarded: AsyncGuarded[str]) -> None:
        async for delta in guarded:
            received.append(delta)
            if len(received) == 3:
                await asyncio.sleep(3600)

    async def main() -> AsyncGuarded[str]:
        guarded = aguard(upstream)
        task = asyncio.create_task(consume(guarded))
        while len(received) < 3:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return guarded

    guarded = asyncio.run(main())  # shuts the guard's async generator down on exit
    assert upstream.closes == 1 and upstream.generator_done
    assert guarded.status == "cancelled" and guarded.text == "".join(DELTAS[:3])


def test_async_text_deltas_cancelled_mid_stream() -> None:
    upstream = AsyncGeneratorUpstream(DELTAS)
    texts: list[str] = []

    async def main() -> AsyncGuarded[str]:
        guarded = aguard(upstream)

        async def consume() -> None:
            async with guarded:
                async for text in guarded.text_deltas():
                    texts.append(text)
                    if len(texts) == 2:
                        await asyncio.sleep(3600)

        task = asyncio.create_task(consume())
        while len(texts) < 2:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return guarded

    guarded = asyncio.run(main())
    assert texts == DELTAS[:2] and guarded.text == "".join(DELTAS[:2])
    assert upstream.closes == 1 and guarded.status == "cancelled"


def test_a_dropped_guard_closes_the_upstream() -> None:
    upstream = GeneratorUpstream(DELTAS)
    guarded = guard(upstream)
    next(guarded)
    next(guarded)
    del guarded
    gc.collect()
    assert upstream.closes == 1 and upstream.generator_done


def test_close_from_another_thread_stops_the_stream() -> None:
    """A user stop handled on another thread than the one reading the stream."""
    upstream = GeneratorUpstream(DELTAS, block_at=2)
    guarded = guard(upstream)
    received: list[str] = []
    raised: list[BaseException] = []

    def consume() -> None:
        try:
            received.extend(guarded)
        except BaseException as error:
            raised.append(error)

    consumer = threading.Thread(target=consume)
    consumer.start()
    assert upstream.blocked.wait(timeout=60)
    try:
        guarded.close()
    finally:
        upstream.release.set()
        consumer.join()
    assert received == DELTAS[:2] or received == DELTAS[:3]
    assert raised == [] and guarded.status == "cancelled" and upstream.closes == 1


def test_close_from_another_thread_with_a_plain_generator_closes_it_after_its_pending_read() -> (
    None
):
    """A plain generator cannot be closed while another thread runs it (Python refuses), so
    ``close()`` returns at once, and the generator is closed as soon as its pending read
    returns: nothing more is read or passed on (the documented limit; SDK streams, whose own
    ``close()`` shuts their HTTP response, are closed at once)."""
    release, blocked = threading.Event(), threading.Event()
    state = {"read": 0, "closed": False}

    def model() -> Iterator[str]:
        try:
            for i, delta in enumerate(DELTAS):
                if i == 2:
                    blocked.set()
                    release.wait()
                state["read"] += 1
                yield delta
        finally:
            state["closed"] = True

    guarded = guard(model())
    received: list[str] = []
    consumer = threading.Thread(target=lambda: received.extend(guarded))
    consumer.start()
    assert blocked.wait(timeout=60)
    closer = threading.Thread(target=guarded.close)
    closer.start()
    closer.join(timeout=60)
    assert not closer.is_alive()  # close() did not wait for the blocked read
    assert not state["closed"]  # the generator is still running its read
    release.set()
    consumer.join(timeout=60)
    assert state == {"read": 3, "closed": True}
    assert received == DELTAS[:2] and guarded.status == "cancelled"


# --- slow consumers: the guard never reads ahead ----------------------------------------------


def test_slow_sync_consumer_is_never_read_ahead_of() -> None:
    upstream = GeneratorUpstream(DELTAS)
    guarded = guard(upstream)
    received: list[str] = []
    with pytest.raises(DegenerationDetected) as caught:
        for delta in guarded:
            assert upstream.read == len(received) + 1  # read exactly the delta handed out
            received.append(delta)
            threading.Event().wait(0.001)  # a slow consumer
    assert received == DELTAS[:HELD_AT]
    assert upstream.read == HELD_AT + 1 and upstream.closes == 1
    assert caught.value.text == "".join(DELTAS[: HELD_AT + 1])
    assert caught.value.persist_text.startswith(
        "".join(INTRO) + "loadTools." * 3 + "\n[loopbreak: removed"
    )


def test_slow_async_consumer_with_a_fast_producer() -> None:
    """A producer task fills a queue as fast as it can; the consumer takes its time. The guard
    stops at the same delta as for a fast consumer, closes the upstream, and the producer
    learns it (the upstream's generator ends)."""
    outcomes = []
    for slow in (False, True):
        queue: asyncio.Queue[Optional[str]] = asyncio.Queue(maxsize=4)
        stopped = asyncio.Event()

        async def produce() -> None:
            for delta in DELTAS:
                if stopped.is_set():
                    return
                await queue.put(delta)
            await queue.put(None)

        async def upstream() -> AsyncIterator[str]:
            try:
                while (delta := await queue.get()) is not None:
                    yield delta
            finally:
                stopped.set()

        async def consume(slow: bool = slow) -> tuple[list[str], Optional[DegenerationDetected]]:
            producer = asyncio.create_task(produce())
            received: list[str] = []
            try:
                async for delta in aguard(upstream()):
                    received.append(delta)
                    if slow:
                        await asyncio.sleep(0.001)
            except DegenerationDetected as error:
                assert stopped.is_set()
                producer.cancel()
                return received, error
            return received, None

        received, error = asyncio.run(consume())
        assert error is not None
        outcomes.append((received, error.text, error.persist_text, error.finding.to_dict()))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == DELTAS[:HELD_AT]
