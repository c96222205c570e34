"""The loopbreak guardrail inside a real LiteLLM proxy, over real HTTP on localhost.

The test starts the recorded server (an OpenAI-compatible upstream streaming real model outputs)
and a LiteLLM proxy in a subprocess whose config routes to it and turns the guardrail on for
every request. A plain ``openai`` client, with no guard of its own, talks to the proxy: a
looping stream ends with the proxy's error event carrying loopbreak's reason, and the proxy
closes its own upstream request, which the recorded server sees as a disconnect.

The proxy's import is slow (about 13 s of CPU on the project's machine), so it starts once for
the module.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam
from starlette.applications import Starlette

import loopbreak
from loopbreak import scan
from support.recorded import RECORDED
from support.recorded_server import ANSWER_AFTER_REASONING, Recordings, StreamLog, routes, serve

MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": "(the recorded prompt)"}]
MODELS = [
    "content:d10-greedy",
    "content:d37-sampled",
    "content:d20-sampled",
    "reasoning_content:d14-greedy",
]
START_TIMEOUT = 600
"""Seconds to wait for the proxy: generous, as other work on the 2 cores slows its import."""


@dataclass
class Proxy:
    url: str
    key: str
    recordings: Recordings

    def openai(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url, api_key=self.key, max_retries=0)

    def finished_upstream(self, model: str) -> StreamLog:
        log = self.recordings.last(model)
        assert log.ended.wait(timeout=30), "the upstream stream never ended"
        return log


def proxy_config(upstream: str) -> str:
    models = "".join(
        f"  - model_name: {model}\n"
        f"    litellm_params:\n"
        f"      model: openai/{model}\n"
        f"      api_base: {upstream}/v1\n"
        f"      api_key: test\n"
        for model in MODELS
    )
    return (
        f"model_list:\n{models}"
        "guardrails:\n"
        "  - guardrail_name: loopbreak\n"
        "    litellm_params:\n"
        "      guardrail: loopbreak.integrations.litellm.LoopbreakGuardrail\n"
        "      mode: post_call\n"
        "      default_on: true\n"
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the LiteLLM proxy exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/health/liveliness", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the LiteLLM proxy did not start in {START_TIMEOUT} s")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    recordings = Recordings()
    folder = tmp_path_factory.mktemp("litellm-proxy")
    for upstream in serve(Starlette(routes=routes(recordings))):
        config = folder / "config.yaml"
        config.write_text(proxy_config(upstream))
        key = f"sk-{secrets.token_hex(24)}"
        package_root = str(Path(loopbreak.__file__).parents[1])  # the proxy imports the guardrail
        env = {
            **os.environ,
            "LITELLM_MASTER_KEY": key,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [package_root, os.environ.get("PYTHONPATH")])
            ),
        }
        port = free_port()
        command = [sys.executable, "-m", "litellm.proxy.proxy_cli", "--config", str(config)]
        command += ["--host", "127.0.0.1", "--port", str(port)]
        log = folder / "proxy.log"
        with open(log, "wb") as output:
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(url, process, log)
            yield Proxy(url, key, recordings)
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_proxy_stops_a_looping_stream_for_an_unguarded_client(proxy: Proxy) -> None:
    recording, model = RECORDED["d10-greedy"], "content:d10-greedy"
    expected = scan(recording.text)[0]
    client = proxy.openai()
    received: list[str] = []
    stream = client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
    with pytest.raises(openai.APIError) as caught:
        for chunk in stream:
            if chunk.choices:
                received.append(chunk.choices[0].delta.content or "")
    message, body = caught.value.message, caught.value.body
    assert message.startswith("Output degeneration detected in content: ")
    assert isinstance(body, dict) and (body["message"], body["code"]) == (message, "400")
    assert f"from unit {expected.start} ({expected.rule}," in message
    streamed = "".join(received)
    assert len(streamed) < expected.detected_at and recording.text.startswith(streamed)
    log = proxy.finished_upstream(model)
    assert log.disconnected_early and log.sent < log.total
    client.close()


def test_proxy_passes_a_clean_stream_unchanged(proxy: Proxy) -> None:
    recording, model = RECORDED["d37-sampled"], "content:d37-sampled"
    client = proxy.openai()
    stream = client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert streamed == recording.text
    assert proxy.finished_upstream(model).completed
    client.close()


def test_proxy_stops_looping_reasoning(proxy: Proxy) -> None:
    thinking, model = RECORDED["d14-greedy"], "reasoning_content:d14-greedy"
    expected = scan(thinking.text)[0]
    client = proxy.openai()
    answer: list[str] = []
    stream = client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
    with pytest.raises(openai.APIError) as caught:
        for chunk in stream:
            if chunk.choices:
                answer.append(chunk.choices[0].delta.content or "")
    assert caught.value.message.startswith("Output degeneration detected in reasoning: ")
    assert f"from unit {expected.start} ({expected.rule}," in caught.value.message
    assert "".join(answer) == "" and ANSWER_AFTER_REASONING  # stopped before any answer
    assert proxy.finished_upstream(model).disconnected_early
    client.close()


def test_a_client_leaving_early_stops_the_upstream_through_the_guardrail(proxy: Proxy) -> None:
    model = "content:d20-sampled"
    client = proxy.openai()
    stream = client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
    for _, _chunk in zip(range(3), stream):
        pass
    stream.close()
    log = proxy.finished_upstream(model)
    assert log.disconnected_early and log.sent < log.total
    client.close()
