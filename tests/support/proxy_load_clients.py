"""The clients of tests/proxy/test_proxy_load.py: ``STREAMS`` concurrent streams through the
proxy, every third client leaving early, in a process of their own:

    python -m support.proxy_load_clients BASE_URL     (from tests/; prints the results as JSON)

They run apart from the proxy because the OpenAI SDK leaves the inner async generators of a
stream it has read to the garbage collector: in the proxy's process, a collection run from the
proxy's thread finalised one of them as it ran ("async generator already executing", an
unraisable exception of the client's HTTP library, httpx2, not of the proxy's). Apart, an
unraisable exception in the test's process is the proxy's or its upstream's."""

from __future__ import annotations

import asyncio
import json
import sys

from openai import AsyncOpenAI

from support import proxy_upstream

STREAMS = 200
LOOP = "d25-greedy"  # 1,500 tokens; the guard stops it at token 83
CLEAN = "d08-greedy"  # 39 tokens
LONG_CLEAN = "d02-sampled"  # 341 tokens that the guard never stops
LEAVE_AFTER = 5  # chunks


def recording(number: int) -> str:
    if number % 3 == 0:
        return LONG_CLEAN  # this client leaves
    return LOOP if number % 2 else CLEAN


async def one(client: AsyncOpenAI, number: int) -> tuple[str, str]:
    """Streams one answer; every third client leaves after ``LEAVE_AFTER`` chunks."""
    model = f"content:{recording(number)}#{number}"
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


async def one_round(base_url: str) -> list[tuple[str, str]]:
    # 200 connections opened at once on a busy machine can wait seconds to be accepted.
    client = AsyncOpenAI(
        base_url=f"{base_url}/v1",
        api_key=proxy_upstream.API_KEY,
        max_retries=0,
        timeout=120.0,
    )
    async with client:
        return await asyncio.gather(*(one(client, number) for number in range(STREAMS)))


if __name__ == "__main__":
    print(json.dumps(asyncio.run(one_round(sys.argv[1]))))
