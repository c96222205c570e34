"""The proxy tests' servers: the recorded upstream (tests/support/proxy_upstream.py) and the
proxy in front of it, each a real uvicorn on a free 127.0.0.1 port."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Callable

import pytest
from openai import OpenAI

from loopbreak.proxy.app import create_app
from loopbreak.proxy.config import ProxyConfig
from support import proxy_upstream
from support.recorded_server import Recordings, serve

serve_app = contextlib.contextmanager(serve)

ProxyFactory = Callable[..., contextlib.AbstractContextManager[str]]


@pytest.fixture(scope="module")
def recordings() -> Recordings:
    return Recordings()


@pytest.fixture(scope="module")
def upstream(recordings: Recordings) -> Iterator[str]:
    with serve_app(proxy_upstream.app(recordings)) as url:
        yield url


@contextlib.contextmanager
def proxy_in_front_of(upstream: str, **options: Any) -> Iterator[str]:
    with serve_app(create_app(ProxyConfig(upstream=upstream, **options)), "on") as url:
        yield url


@pytest.fixture(scope="module")
def proxy(upstream: str) -> Iterator[str]:
    """The proxy with its defaults in front of the recorded upstream."""
    with proxy_in_front_of(upstream) as url:
        yield url


@pytest.fixture
def make_proxy(upstream: str) -> ProxyFactory:
    """Starts a proxy with other options: ``with make_proxy(keep=3) as url: ...``."""
    return lambda **options: proxy_in_front_of(upstream, **options)


def client(base_url: str, api_key: str = proxy_upstream.API_KEY) -> OpenAI:
    return OpenAI(base_url=f"{base_url}/v1", api_key=api_key, max_retries=0, timeout=60)
