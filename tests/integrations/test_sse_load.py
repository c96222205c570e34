"""A server under load: a Starlette app relaying guarded model streams as server-sent events
(``loopbreak.integrations.starlette.sse_response``), served by uvicorn on a free localhost port,
with 200 concurrent client streams: a quarter of them looping, a quarter disconnecting at a
random point. Every upstream is closed exactly once, every looping stream ends with the stop
event, nothing outlives its request, and memory does not grow with the streams (the server and
its clients share this process, so its resident memory bounds the server's).

Bounded: 200 streams of at most a few hundred deltas each, on localhost only.
"""

from __future__ import annotations

import asyncio
import gc
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from loopbreak import aguard, scan
from loopbreak.integrations.starlette import sse_response
from loopbreak.streaming.demo import token_deltas
from support.recorded import CLEAN, LOOPS
from support.recorded_server import serve

STREAMS = 200
SEED = 20261201
# Between deltas, so that 200 streams interleave on the server's one event loop.
DELTA_INTERVAL = 0.0005


class CountedUpstream:
    """A model stream: token-sized deltas of ``text``; counts its closes and knows whether its
    generator finished, like an SDK stream over an HTTP response."""

    def __init__(self, text: str, registry: Registry) -> None:
        self.closes = 0
        self.finalized = False
        self._registry = registry
        self._generator = self._generate(token_deltas(text))
        registry.live.add(self)

    async def _generate(self, deltas: list[str]) -> Any:
        try:
            for delta in deltas:
                await asyncio.sleep(DELTA_INTERVAL)
                yield delta
        finally:
            self.finalized = True

    def __aiter__(self) -> CountedUpstream:
        return self

    async def __anext__(self) -> str:
        delta: str = await self._generator.__anext__()
        return delta

    async def aclose(self) -> None:
        self.closes += 1
        await self._generator.aclose()
        self._registry.live.discard(self)


@dataclass
class Registry:
    """What the server created and what is still in flight."""

    upstreams: list[CountedUpstream] = field(default_factory=list)
    live: set[CountedUpstream] = field(default_factory=set)
    in_flight: int = 0
    loop: Optional[asyncio.AbstractEventLoop] = None


def make_app(registry: Registry) -> Any:
    async def stream(request: Request) -> Response:
        kind, index = request.path_params["kind"], int(request.path_params["index"])
        pool = LOOPS if kind == "loop" else CLEAN
        upstream = CountedUpstream(pool[index % len(pool)].text, registry)
        registry.upstreams.append(upstream)
        return sse_response(aguard(upstream, on_degeneration="stop"))

    inner = Starlette(routes=[Route("/stream/{kind}/{index}", stream)])

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        # Counts requests in flight: one that never ends would keep this above zero.
        registry.loop = asyncio.get_running_loop()
        registry.in_flight += 1
        try:
            await inner(scope, receive, send)
        finally:
            registry.in_flight -= 1

    return app


@dataclass(frozen=True)
class Plan:
    index: int
    kind: str  # "loop" or "clean": what the upstream streams
    disconnect_after: Optional[int]  # events read before the client goes away, or None


def plans() -> list[Plan]:
    rng = random.Random(SEED)
    kinds = ["loop"] * (STREAMS // 4) + ["clean"] * (STREAMS // 2) + ["gone"] * (STREAMS // 4)
    rng.shuffle(kinds)
    out = []
    for i, kind in enumerate(kinds):
        if kind == "gone":
            out.append(Plan(i, rng.choice(["loop", "clean"]), rng.randint(1, 40)))
        else:
            out.append(Plan(i, kind, None))
    return out


async def client(http: httpx.AsyncClient, url: str, plan: Plan) -> list[tuple[str, dict[str, Any]]]:
    """Reads the stream's events (name, data); stops early where the plan says."""
    events: list[tuple[str, dict[str, Any]]] = []
    name = "message"
    async with http.stream("GET", f"{url}/stream/{plan.kind}/{plan.index}") as response:
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[len("data: ") :])))
                name = "message"
                if plan.disconnect_after is not None and len(events) >= plan.disconnect_after:
                    break  # leaving the block closes the connection mid-stream
    return events


def resident_kib() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * 4


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Registry]]:
    registry = Registry()
    for url in serve(make_app(registry)):
        yield url, registry


async def run_all(url: str, batch: list[Plan]) -> list[list[tuple[str, dict[str, Any]]]]:
    limits = httpx.Limits(max_connections=STREAMS + 10, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        return await asyncio.gather(*(client(http, url, plan) for plan in batch))


def settle(registry: Registry) -> None:
    """Waits (bounded) until the server has finished every request."""
    for _ in range(400):
        if registry.in_flight == 0 and not registry.live:
            return
        asyncio.run(asyncio.sleep(0.025))


def server_tasks(registry: Registry) -> int:
    assert registry.loop is not None

    async def count() -> int:
        return len(asyncio.all_tasks())

    return asyncio.run_coroutine_threadsafe(count(), registry.loop).result(timeout=10)


def test_200_concurrent_streams_end_cleanly(server: tuple[str, Registry]) -> None:
    url, registry = server
    # A first full round warms the process up (imports, caches, 200 connections' worth of
    # buffers), so memory is compared after it: after that it stays within a few MB (measured:
    # +0.2 to +4.5 MB per round of 200 streams on a loaded machine, never growing round after
    # round; a leak of one stream's state would add far more).
    asyncio.run(run_all(url, plans()))
    settle(registry)
    registry.upstreams.clear()
    gc.collect()
    tasks_before = server_tasks(registry)
    rss_before = resident_kib()

    batch = plans()
    results = asyncio.run(run_all(url, batch))
    settle(registry)
    gc.collect()

    upstreams = registry.upstreams
    assert len(upstreams) == STREAMS
    assert [u.closes for u in upstreams] == [1] * STREAMS  # every upstream closed exactly once
    assert all(u.finalized for u in upstreams)  # and its generator finished
    assert registry.in_flight == 0 and not registry.live  # no request outlives its client
    assert server_tasks(registry) <= tasks_before  # no task left behind on the server loop

    for plan, events in zip(batch, results):
        if plan.disconnect_after is not None:
            assert len(events) <= plan.disconnect_after
            continue
        name, stop = events[-1]
        assert name == "stop"
        text = "".join(data["delta"] for kind, data in events[:-1])
        if plan.kind == "loop":
            recording = LOOPS[plan.index % len(LOOPS)].text
            assert stop["status"] == "degenerate"
            assert stop["reason"].startswith("Output degeneration detected in content")
            # Stopped within the delta in which the rule held: never past it.
            assert len(text) < scan(recording)[0].detected_at
        else:
            assert stop["status"] == "ok"
            assert text == CLEAN[plan.index % len(CLEAN)].text

    registry.upstreams.clear()
    gc.collect()
    grown = resident_kib() - rss_before
    assert grown < 8 * 1024, f"the process grew by {grown} KiB over {STREAMS} streams"
