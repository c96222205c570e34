"""What ``loopbreak proxy`` adds to a stream: time to first token, the time per chunk after it and a
stream's wall time, through the proxy over the same upstream direct, in one run. Prints ratios.

    python benches/proxy_overhead.py               # 40 streams each way
    python benches/proxy_overhead.py --streams 10  # fewer
    python benches/proxy_overhead.py --upstream http://127.0.0.1:8080  # a real model server

The upstream (tests/support/proxy_upstream.py, in its own process) streams a real clean answer of
SmolLM2 (340 token-sized deltas, 1,878 chars) with 2 ms between deltas, like a fast local model;
the proxy is the real command (``loopbreak proxy``) in a third process; the client reads raw SSE
lines with httpx. Direct and proxied streams take turns, so noise on a shared machine hits both
alike; the figures are medians. With ``--upstream``, a model server already running (llama-cpp-python's
server on SmolLM2, say) is the upstream instead, asked for a greedy answer of 64 tokens.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
MODEL = "content:d20-sampled"
UPSTREAM = """
import sys, uvicorn
sys.path.insert(0, {tests!r})
from support import proxy_upstream
from support.recorded_server import Recordings
uvicorn.run(proxy_upstream.app(Recordings()), host="127.0.0.1", port={port}, log_level="warning")
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def _server(command: list[str], url: str) -> Iterator[str]:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300  # a loaded machine imports slowly
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{command[:3]} did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


RECORDED_REQUEST: dict[str, object] = {
    "model": MODEL,
    "messages": [{"role": "user", "content": "hi"}],
}
MODEL_REQUEST: dict[str, object] = {
    "model": "any",
    "messages": [{"role": "user", "content": "Write a short poem about the sea."}],
    "max_tokens": 64,
    "temperature": 0,
}


def _stream(client: httpx.Client, base: str, body: dict[str, object]) -> tuple[float, float, float]:
    """Time to the first content chunk, the mean time per chunk after it, the wall time. (The
    mean, not each gap: a proxy's writes can coalesce into one read, which makes single gaps
    near zero and says nothing of the delay.)"""
    request = {**body, "stream": True}
    start = time.perf_counter()
    arrivals = []
    with client.stream("POST", f"{base}/v1/chat/completions", json=request) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                arrivals.append(time.perf_counter())
    end = time.perf_counter()
    first, last = arrivals[1], arrivals[-1]  # arrivals[0] is the role-only chunk
    return first - start, (last - first) / (len(arrivals) - 2), end - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=40, help="streams each way")
    parser.add_argument(
        "--upstream", help="a model server already running, instead of the recording"
    )
    args = parser.parse_args()
    streams = args.streams
    upstream_port, proxy_port = _free_port(), _free_port()
    upstream_code = UPSTREAM.format(tests=str(ROOT / "tests"), port=upstream_port)
    upstream = args.upstream.rstrip("/") if args.upstream else f"http://127.0.0.1:{upstream_port}"
    body = MODEL_REQUEST if args.upstream else RECORDED_REQUEST
    proxy_command = [
        sys.executable, "-m", "loopbreak.cli", "proxy",
        "--upstream", upstream, "--port", str(proxy_port),
    ]  # fmt: skip
    proxy = f"http://127.0.0.1:{proxy_port}"
    with ExitStack() as servers:
        if not args.upstream:
            servers.enter_context(
                _server([sys.executable, "-c", upstream_code], f"{upstream}/v1/models")
            )
        servers.enter_context(_server(proxy_command, f"{proxy}/metrics"))
        client = servers.enter_context(httpx.Client(timeout=60))
        results: dict[str, list[tuple[float, float, float]]] = {upstream: [], proxy: []}
        for base in (upstream, proxy):  # warm-up: connections, imports, first-call caches
            _stream(client, base, body)
        for _ in range(streams):
            for base in (upstream, proxy):
                results[base].append(_stream(client, base, body))
    figures = {}
    for base, runs in results.items():
        figures[base] = (
            statistics.median(ttft for ttft, _, _ in runs),
            statistics.median(per_chunk for _, per_chunk, _ in runs),
            statistics.median(wall for _, _, wall in runs),
        )
    print(f"{streams} streams each way, {os.cpu_count()} CPUs, loadavg {os.getloadavg()[0]:.1f}")
    print(f"{'':22} {'direct':>10} {'proxied':>10} {'ratio':>7}")
    for number, name in enumerate(
        ("time to first token", "per chunk after it", "stream wall time")
    ):
        direct, proxied = figures[upstream][number], figures[proxy][number]
        print(f"{name:22} {direct * 1e3:>8.2f}ms {proxied * 1e3:>8.2f}ms {proxied / direct:>7.3f}")


if __name__ == "__main__":
    main()
