"""``loopbreak proxy`` in front of a real model server: SmolLM2-135M served by
llama-cpp-python, driven by the real ``openai`` client (greedy decoding, so each answer is the
same every time). A looping prompt stops with ``finish_reason: "repetition"`` and the server sees
the proxy leave (it stops generating); a clean answer is byte-identical with and without the
proxy, streamed and not. The prompts are the model corpus's (tests/e2e/test_smollm2.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from openai import OpenAI

from loopbreak import scan
from loopbreak.proxy.app import create_app
from loopbreak.proxy.config import ProxyConfig
from loopbreak.telemetry import REPETITION
from support.recorded_server import serve

from .conftest import ModelServer
from .test_smollm2 import MAX_TOKENS, PROMPTS, SETTINGS, wait_for_disconnects

pytestmark = pytest.mark.e2e

LOOPING = next(prompt for prompt in PROMPTS if prompt.id == "d10-greedy")
CLEAN = next(prompt for prompt in PROMPTS if prompt.id == "d01-greedy")


@pytest.fixture(scope="module")
def proxied(model_server: ModelServer) -> Iterator[OpenAI]:
    root = model_server.url.removesuffix("/v1")
    app = create_app(ProxyConfig(upstream=root))
    with (
        contextlib.contextmanager(serve)(app, "on") as url,
        OpenAI(base_url=f"{url}/v1", api_key="local", max_retries=0, timeout=600) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def direct(model_server: ModelServer) -> Iterator[OpenAI]:
    with OpenAI(base_url=model_server.url, api_key="local", max_retries=0, timeout=600) as client:
        yield client


def _ask(client: OpenAI, text: str, stream: bool) -> tuple[str, Any, Any]:
    """The answer text, the last finish reason and the last chunk (or the whole answer)."""
    messages: Any = [{"role": "user", "content": text}]
    if not stream:
        answer = client.chat.completions.create(
            model="smollm2", messages=messages, extra_body=SETTINGS
        )
        choice = answer.choices[0]
        return choice.message.content or "", choice.finish_reason, answer
    chunks = list(
        client.chat.completions.create(
            model="smollm2", messages=messages, stream=True, extra_body=SETTINGS
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    last = chunks[-1]
    return text, last.choices[0].finish_reason if last.choices else None, last


def test_a_looping_stream_stops_and_the_server_stops_generating(
    proxied: OpenAI, model_server: ModelServer
) -> None:
    before = model_server.disconnects()
    text, finish, last = _ask(proxied, LOOPING.text, stream=True)
    assert finish == REPETITION
    loop = (last.model_extra or {})["loopbreak"]
    assert loop["copies"] >= 1 and loop["source"] == "content" and loop["block"] in text
    assert not scan(text[: loop["position"]])  # what came before the loop is clean
    assert wait_for_disconnects(model_server, before + 1) == before + 1
    # Fewer chars than the tokens the server would have made (a token is several chars).
    assert len(text) < MAX_TOKENS


def test_a_looping_whole_answer_comes_back_trimmed(proxied: OpenAI, direct: OpenAI) -> None:
    full, full_finish, _ = _ask(direct, LOOPING.text, stream=False)
    text, finish, answer = _ask(proxied, LOOPING.text, stream=False)
    assert full_finish == "length" and finish == REPETITION
    assert scan(full) and not scan(text) and len(text) < len(full)
    assert full.startswith(text[: (answer.model_extra or {})["loopbreak"]["position"]])


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_clean_answer_is_byte_identical_through_the_proxy(
    proxied: OpenAI, direct: OpenAI, stream: bool
) -> None:
    expected, expected_finish, _ = _ask(direct, CLEAN.text, stream)
    text, finish, _ = _ask(proxied, CLEAN.text, stream)
    assert text == expected and finish == expected_finish != REPETITION
