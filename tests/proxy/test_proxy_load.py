"""200 concurrent streams through one proxy, a third of the clients leaving early: every
upstream stream is closed exactly once (by its end, the guard's stop or the client's leaving),
and the proxy's memory does not grow from one round to the next.

The clients that leave read a clean answer the guard never stops, so only their leaving can
close its upstream before the end. Each stream is as short as its check allows (a loop is
stopped by the guard at its 83rd token): a round needs ~9,000 events, more when the proxy falls
behind the upstream."""

from __future__ import annotations

import asyncio
import gc

import pytest
from openai import AsyncOpenAI

from support import proxy_upstream, recorded_server
from support.recorded_server import Recordings

from .conftest import ProxyFactory

# An upstream stream closed from a task other than the one reading it is finalised half-run, and
# Python reports that only as an unraisable exception: here it fails the test.
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")

STREAMS = 200
LOOP = "d25-greedy"  # 1,500 tokens; the guard stops it at token 83
CLEAN = "d08-greedy"  # 39 tokens
LONG_CLEAN = "d02-sampled"  # 341 tokens that the guard never stops
LEAVE_AFTER = 5  # chunks
TOKEN_INTERVAL = 0.05
"""A live model's pace (20 tokens a second): 200 streams at the recorded server's default pace
send faster than one process can relay them three times over, and the backlog, not the proxy,
then sets how long a round takes."""


def _resident_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4


def _recording(number: int) -> str:
    if number % 3 == 0:
        return LONG_CLEAN  # this client leaves
    return LOOP if number % 2 else CLEAN


async def _one(client: AsyncOpenAI, number: int) -> tuple[str, str]:
    """Streams one answer; every third client leaves after ``LEAVE_AFTER`` chunks."""
    model = f"content:{_recording(number)}#{number}"
    stream = await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}], stream=True
    )
    finish = "left"
    async with stream:
        index = 0
        async for chunk in stream:
            if number % 3 == 0 and index == LEAVE_AFTER:
                break
            finish = chunk.choices[0].finish_reason or finish
            index += 1
    return model, finish


async def _round(base_url: str) -> list[tuple[str, str]]:
    # 200 connections opened at once on a busy machine can wait seconds to be accepted.
    client = AsyncOpenAI(
        base_url=f"{base_url}/v1",
        api_key=proxy_upstream.API_KEY,
        max_retries=0,
        timeout=120.0,
    )
    async with client:
        return await asyncio.gather(*(_one(client, number) for number in range(STREAMS)))


def test_concurrent_streams_close_every_upstream_once(
    make_proxy: ProxyFactory, recordings: Recordings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recorded_server, "TOKEN_INTERVAL", TOKEN_INTERVAL)
    with make_proxy(connect_timeout=60) as proxy:
        # Two rounds warm the process up (imports, caches, 200 connections' buffers, and the
        # allocator's arenas: after one round alone, the next still grew by ~9 MiB once on a
        # busy machine, and a leak grows with every round, so it shows after two as well).
        for _ in range(2):
            asyncio.run(_round(proxy))
        gc.collect()
        before = _resident_kib()
        results = asyncio.run(_round(proxy))
        gc.collect()
        grown = _resident_kib() - before
    # The proxy, its upstream and the clients share this process, so its resident memory bounds
    # the proxy's: a leak of one stream's state (a guard, a connection, a task) times 200 would
    # show.
    assert grown < 8 * 1024, f"the process grew by {grown} KiB over {STREAMS} streams"
    assert sorted(finish for _, finish in results).count("left") == len(range(0, STREAMS, 3))
    for model, finish in results:
        logs = [log for log in recordings.streams if log.model == model]
        assert len(logs) == 3  # one upstream stream per request and round, no retries
        for log in logs:
            assert log.ended.wait(10), f"the upstream stream of {model} was never closed"
        number = int(model.rsplit("#", 1)[1])
        if number % 3 == 0:
            assert finish == "left" and all(log.disconnected_early for log in logs), model
        elif LOOP in model:
            assert finish == "repetition" and all(log.disconnected_early for log in logs), model
        else:
            assert finish == "stop" and all(log.completed for log in logs), model
