"""200 concurrent streams through one proxy, a third of the clients leaving early: every
upstream stream is closed exactly once (by its end, the guard's stop or the client's leaving),
and the proxy's memory does not grow from one round to the next.

The clients that leave read a clean answer the guard never stops, so only their leaving can
close its upstream before the end. Each stream is as short as its check allows (a loop is
stopped by the guard at its 83rd token): a round needs ~9,000 events, more when the proxy falls
behind the upstream."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from support import recorded_server
from support.proxy_load_clients import LOOP, STREAMS
from support.recorded_server import Recordings

from .conftest import ProxyFactory

# An upstream stream closed from a task other than the one reading it is finalised half-run, and
# Python reports that only as an unraisable exception: here it fails the test. The clients run in
# a process of their own (support/proxy_load_clients.py says why), so what is raised here is the
# proxy's or its upstream's.
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")

TESTS = Path(__file__).resolve().parents[1]
TOKEN_INTERVAL = 0.05
"""A live model's pace (20 tokens a second): 200 streams at the recorded server's default pace
send faster than one process can relay them three times over, and the backlog, not the proxy,
then sets how long a round takes."""


def _resident_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4


def _round(base_url: str) -> list[tuple[str, str]]:
    """One round of the clients, in their own process: each stream's model and finish reason."""
    run = subprocess.run(
        [sys.executable, "-m", "support.proxy_load_clients", base_url],
        cwd=TESTS,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return [(model, finish) for model, finish in json.loads(run.stdout)]


def test_concurrent_streams_close_every_upstream_once(
    make_proxy: ProxyFactory, recordings: Recordings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recorded_server, "TOKEN_INTERVAL", TOKEN_INTERVAL)
    with make_proxy(connect_timeout=60) as proxy:
        # Two rounds warm the process up (imports, caches, 200 connections' buffers, and the
        # allocator's arenas: after one round alone, the next still grew by ~9 MiB once on a
        # busy machine, and a leak grows with every round, so it shows after two as well).
        for _ in range(2):
            _round(proxy)
        gc.collect()
        before = _resident_kib()
        results = _round(proxy)
        gc.collect()
        grown = _resident_kib() - before
    # The proxy and its upstream share this process (the clients have their own), so its resident
    # memory bounds the proxy's: a leak of one stream's state (a guard, a connection, a task)
    # times 200 would show.
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
