"""``loopbreak proxy`` on the Anthropic Messages API in front of a real model: the real
``anthropic`` client, through the proxy, to LiteLLM's proxy server (its ``/v1/messages``
endpoint, from the environment of its own ``make e2e`` builds: tests/envs/anthropic-gateway.txt)
routed to SmolLM2-135M served by llama-cpp-python (greedy decoding, so each answer is the same
every time). A looping prompt ends early with the SDK reading a complete message that says why;
a clean prompt gives the same text and stop reason as direct; the passthrough paths match
direct. LiteLLM 1.108.7 does not close its own upstream request when its client leaves (the
model server generates to the end behind it), so what this chain can show is that the answer
ends early; that the proxy closes its upstream is shown in tests/proxy against a server that
logs it.

LiteLLM runs offline: its model cost map, Anthropic beta headers, blog posts, policy templates
and router presets are the copies it ships (the ``LITELLM_LOCAL_*`` switches of 1.108), never
fetched.
For an ``openai/`` model it would send a Messages request to the Responses API, which
llama-cpp-python's server does not serve; ``LITELLM_USE_CHAT_COMPLETIONS_URL_FOR_ANTHROPIC_MESSAGES``
sends it to ``/v1/chat/completions``."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types import Message, MessageParam

from loopbreak import scan
from loopbreak.proxy.app import create_app
from loopbreak.proxy.config import ProxyConfig
from loopbreak.telemetry import REPETITION
from support.recorded_server import serve

from .conftest import ModelServer, free_port
from .test_smollm2 import MAX_TOKENS, PROMPTS

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
LITELLM = ROOT / ".venv-anthropic-gateway" / "bin" / "litellm"
START_TIMEOUT = 600.0
"""Seconds to wait for LiteLLM's server: its import takes ~13 s of CPU, far more on a busy
machine."""

LOOPING = next(prompt for prompt in PROMPTS if prompt.id == "d10-greedy")
CLEAN = [prompt for prompt in PROMPTS if prompt.label == "clean"][:2]

OFFLINE = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "LITELLM_LOCAL_BLOG_POSTS": "True",
    "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS": "True",
    "LITELLM_USE_CHAT_COMPLETIONS_URL_FOR_ANTHROPIC_MESSAGES": "True",
}


def _config(model_server: ModelServer) -> str:
    # repeat_penalty 1.0 as in the model corpus (llama-cpp-python's default is 1.1): LiteLLM
    # passes a parameter it does not know to an openai/ model in the request body.
    return (
        "model_list:\n"
        "  - model_name: smollm2\n"
        "    litellm_params:\n"
        "      model: openai/smollm2\n"
        f"      api_base: {model_server.url}\n"
        "      api_key: local\n"
        "      repeat_penalty: 1.0\n"
    )


@dataclass(frozen=True)
class Gateway:
    url: str
    key: str
    """LiteLLM's master key: it refuses to start without one. The clients send it, and the
    proxy forwards it."""
    log: Path


@pytest.fixture(scope="module")
def gateway(
    model_server: ModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    """LiteLLM's proxy server in front of the model server, started from its own environment."""
    if not LITELLM.exists():
        raise RuntimeError(f"{LITELLM} is missing: run `make e2e`, which builds it")
    folder = tmp_path_factory.mktemp("anthropic-gateway")
    config = folder / "config.yaml"
    config.write_text(_config(model_server))
    port = free_port()
    log = folder / "litellm.log"
    command = [str(LITELLM), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    key = f"sk-{secrets.token_hex(24)}"
    env = {**os.environ, **OFFLINE, "LITELLM_MASTER_KEY": key}
    with open(log, "wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"LiteLLM's server exited:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/health/liveliness", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"LiteLLM's server did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield Gateway(url, key, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def proxy(gateway: Gateway) -> Iterator[Gateway]:
    """The proxy in front of LiteLLM, with LiteLLM's key for the clients."""
    app = create_app(ProxyConfig(upstream=gateway.url))
    with contextlib.contextmanager(serve)(app, "on") as url:
        yield Gateway(url, gateway.key, gateway.log)


def _client(server: Gateway) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key=server.key, max_retries=0, timeout=600)


def _request(prompt_text: str) -> dict[str, Any]:
    messages: list[MessageParam] = [{"role": "user", "content": prompt_text}]
    # Greedy: the Messages API's temperature, which anthropic 2.x's methods no longer name.
    return {
        "model": "smollm2",
        "max_tokens": MAX_TOKENS,
        "messages": messages,
        "extra_body": {"temperature": 0.0},
    }


def _text(message: Message) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


def test_a_looping_stream_ends_early_as_a_complete_message(proxy: Gateway) -> None:
    with _client(proxy).messages.stream(**_request(LOOPING.text)) as stream:
        events = list(stream)
        message = stream.get_final_message()
    assert message.stop_reason == REPETITION
    assert [event.type for event in events[-3:]] == [
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    loop = (events[-2].model_extra or {})["loopbreak"]
    text = _text(message)
    assert loop["source"] == "content" and loop["copies"] >= 1 and loop["block"] in text
    assert not scan(text[: loop["position"]])  # what came before the loop is clean
    assert len(text) < MAX_TOKENS  # fewer chars than the tokens the model would have made


def test_a_looping_raw_stream_and_whole_answer_stop(proxy: Gateway) -> None:
    client = _client(proxy)
    events = list(client.messages.create(**_request(LOOPING.text), stream=True))
    assert events[-2].type == "message_delta"
    assert events[-2].delta.stop_reason == REPETITION
    assert events[-1].type == "message_stop"
    whole = client.messages.create(**_request(LOOPING.text))
    assert whole.stop_reason == REPETITION
    assert "[loopbreak: removed" in _text(whole)
    assert (whole.model_extra or {})["loopbreak"]["source"] == "content"


def test_the_looping_answer_direct_runs_to_max_tokens(gateway: Gateway) -> None:
    """What the proxy stops: the same request straight to LiteLLM loops until max_tokens."""
    whole = _client(gateway).messages.create(**_request(LOOPING.text))
    assert whole.stop_reason == "max_tokens" and scan(_text(whole))


@pytest.mark.parametrize("prompt", CLEAN, ids=lambda prompt: prompt.id)
def test_a_clean_answer_is_the_same_as_direct(
    proxy: Gateway, gateway: Gateway, prompt: Any
) -> None:
    answers = []
    for server in (gateway, proxy):
        client = _client(server)
        with client.messages.stream(**_request(prompt.text)) as stream:
            streamed = stream.get_final_message()
        whole = client.messages.create(**_request(prompt.text))
        answers.append((_text(streamed), streamed.stop_reason, _text(whole), whole.stop_reason))
    direct, proxied = answers
    assert proxied == direct and direct[1] != REPETITION and direct[0]


def test_other_paths_match_direct(proxy: Gateway, gateway: Gateway) -> None:
    headers = {"x-api-key": gateway.key, "anthropic-version": "2023-06-01"}
    for path in ("/v1/models", "/health/liveliness"):
        direct = httpx.get(gateway.url + path, headers=headers, timeout=60)
        proxied = httpx.get(proxy.url + path, headers=headers, timeout=60)
        assert (proxied.status_code, proxied.content) == (direct.status_code, direct.content)
    wrong = {**headers, "x-api-key": "sk-wrong"}
    direct = httpx.get(gateway.url + "/v1/models", headers=wrong, timeout=60)
    proxied = httpx.get(proxy.url + "/v1/models", headers=wrong, timeout=60)
    assert (proxied.status_code, proxied.content) == (direct.status_code, direct.content)
    assert direct.status_code in (400, 401)  # LiteLLM refuses the key (400 for an unknown one)
    # LiteLLM 1.108.7 answers count_tokens for an openai/ model with a 404: the same through
    # the proxy.
    request = {"model": "smollm2", "messages": [{"role": "user", "content": CLEAN[0].text}]}
    direct = httpx.post(
        gateway.url + "/v1/messages/count_tokens", json=request, headers=headers, timeout=60
    )
    proxied = httpx.post(
        proxy.url + "/v1/messages/count_tokens", json=request, headers=headers, timeout=60
    )
    assert (proxied.status_code, proxied.content) == (direct.status_code, direct.content)
