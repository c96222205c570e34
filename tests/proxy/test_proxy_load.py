"""200 concurrent streams through one proxy, a third of the clients leaving early: every
upstream stream is closed exactly once (by its end, the guard's stop or the client's leaving),
and the proxy's memory does not grow from one round to the next."""

from __future__ import annotations

import asyncio
import gc

from openai import AsyncOpenAI

from support import proxy_upstream
from support.recorded_server import Recordings

from .conftest import ProxyFactory

STREAMS = 200
LOOP, CLEAN = "d10-greedy", "d08-greedy"


def _resident_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4


async def _one(client: AsyncOpenAI, number: int) -> tuple[str, str]:
    """Streams one answer; every third client leaves after a few chunks of a loop (long
    enough that it always leaves before the upstream's end or the guard's stop)."""
    recording = LOOP if number % 3 == 0 or number % 2 else CLEAN
    model = f"content:{recording}#{number}"
    stream = await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}], stream=True
    )
    finish = "left"
    async with stream:
        index = 0
        async for chunk in stream:
            if number % 3 == 0 and index == 5:
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
    make_proxy: ProxyFactory, recordings: Recordings
) -> None:
    with make_proxy(connect_timeout=60) as proxy:
        # The first round warms the process up (imports, caches, 200 connections' buffers).
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
    for model, finish in results:
        logs = [log for log in recordings.streams if log.model == model]
        assert len(logs) == 2  # one upstream stream per request and round, no retries
        for log in logs:
            assert log.ended.wait(10), f"the upstream stream of {model} was never closed"
        number = int(model.rsplit("#", 1)[1])
        if number % 3 == 0:
            assert finish == "left" and all(log.disconnected_early for log in logs)
        elif LOOP in model:
            assert finish == "repetition" and all(log.disconnected_early for log in logs)
        else:
            assert finish == "stop" and all(log.completed for log in logs)
