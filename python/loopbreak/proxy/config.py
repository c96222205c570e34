"""What ``loopbreak proxy`` runs with: one ``ProxyConfig``, checked when it is made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional
from urllib.parse import urlsplit

from loopbreak._core import DEFAULT_KEEP, Rules
from loopbreak._presets import RULE_PRESETS

OnLoop = Literal["stop", "trim-only"]
ON_LOOP: tuple[OnLoop, ...] = ("stop", "trim-only")

MAX_REQUEST_BYTES = 10 * 1024 * 1024
"""The default request size limit: long chat histories with images inlined as base64 run to a
few MB; a body far beyond that is a client bug or abuse, refused with 413 before it is read."""

TIMEOUT_SECONDS = 600.0
"""How long the proxy waits for the upstream's next bytes. A local model can take minutes
before the first token of a long prompt; a stream that says nothing for ten minutes is dead."""

CONNECT_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class ProxyConfig:
    """``upstream`` is the model server's root URL (``http://127.0.0.1:8080``): the request's
    path (``/v1/chat/completions``) is appended to it. ``on_loop="stop"`` stops a looping
    stream and trims a looping whole answer; ``"trim-only"`` trims whole answers and relays
    streams untouched (a stream's sent text cannot be taken back, only stopped). ``db`` is a
    SQLite path where each guarded request is saved like ``save_result``."""

    upstream: str
    rules: str = "default"
    keep: int = DEFAULT_KEEP
    on_loop: OnLoop = "stop"
    host: str = "127.0.0.1"
    port: int = 8000
    max_request_bytes: int = MAX_REQUEST_BYTES
    timeout: float = TIMEOUT_SECONDS
    connect_timeout: float = CONNECT_TIMEOUT_SECONDS
    db: Optional[str] = None

    def __post_init__(self) -> None:
        parts = urlsplit(self.upstream)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"--upstream must be an http(s) URL, got {self.upstream!r}")
        if self.rules not in RULE_PRESETS:
            raise ValueError(
                f"--rules must be one of {', '.join(RULE_PRESETS)}, got {self.rules!r}"
            )
        if self.keep < 1:
            raise ValueError(f"--keep must be at least 1, got {self.keep}")
        if self.on_loop not in ON_LOOP:
            raise ValueError(f"--on-loop must be stop or trim-only, got {self.on_loop!r}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"--port must be 0..65535, got {self.port}")
        if self.max_request_bytes < 1:
            raise ValueError(f"--max-request-bytes must be positive, got {self.max_request_bytes}")
        if self.timeout <= 0 or self.connect_timeout <= 0:
            raise ValueError("--timeout and --connect-timeout must be positive")

    @property
    def upstream_root(self) -> str:
        return self.upstream.rstrip("/")

    def make_rules(self) -> Rules:
        return RULE_PRESETS[self.rules]()
