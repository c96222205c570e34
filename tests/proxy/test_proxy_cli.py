"""The ``loopbreak proxy`` command: misuse is one line and exit 2; the real command, started as a
person starts it, serves the real ``openai`` client."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import pytest

from loopbreak.cli import main
from loopbreak.telemetry import REPETITION

from .conftest import client


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--upstream", "localhost:8080"], "--upstream must be an http(s) URL"),
        (["--upstream", "http://127.0.0.1:8080", "--keep", "0"], "--keep must be at least 1"),
        (["--upstream", "http://127.0.0.1:8080", "--timeout", "0"], "must be positive"),
        (["--upstream", "http://127.0.0.1:8080", "--port", "70000"], "--port must be 0..65535"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["proxy", *arguments]) == 2
    error = capsys.readouterr().err
    assert error.startswith("loopbreak proxy: ") and message in error
    assert error.count("\n") == 1


def test_an_unknown_preset_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["proxy", "--upstream", "http://127.0.0.1:8080", "--rules", "lenient"])
    assert raised.value.code == 2
    assert "invalid choice: 'lenient'" in capsys.readouterr().err


def test_the_command_serves_a_real_client(upstream: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "loopbreak.cli",
        "proxy",
        "--upstream",
        upstream,
        "--port",
        str(port),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{base}/metrics", timeout=2)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, "no proxy"
                time.sleep(0.2)
        chunks = list(
            client(base).chat.completions.create(
                model="content:d10-greedy",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
            )
        )
        assert chunks[-1].choices[0].finish_reason == REPETITION
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    assert f"Uvicorn running on {base}" in output
