"""``loopbreak proxy``: the command line of the guarding proxy. Only argparse is imported until
the command runs, so ``loopbreak`` starts without the proxy's extra installed."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from loopbreak._core import DEFAULT_KEEP
from loopbreak._presets import RULE_PRESETS
from loopbreak.proxy.config import (
    CONNECT_TIMEOUT_SECONDS,
    MAX_REQUEST_BYTES,
    ON_LOOP,
    TIMEOUT_SECONDS,
    ProxyConfig,
)

EXTRA_HINT = "loopbreak proxy needs its extra: pip install 'loopbreak[proxy]'"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "proxy",
        help="an OpenAI- and Anthropic-compatible HTTP proxy that stops looping generations",
        description=(
            "Guard a model server: point any OpenAI or Anthropic client at this proxy. "
            "/v1/chat/completions, /v1/completions, /v1/responses and /v1/messages are checked "
            "for loops; every other path is passed through unchanged. Prometheus metrics on "
            "/metrics."
        ),
    )
    parser.add_argument("--upstream", required=True, help="the model server's root URL")
    parser.add_argument("--rules", default="default", choices=sorted(RULE_PRESETS))
    parser.add_argument("--keep", type=int, default=DEFAULT_KEEP, help="copies of a loop kept")
    parser.add_argument("--on-loop", default="stop", choices=ON_LOOP)
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-request-bytes", type=int, default=MAX_REQUEST_BYTES)
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT_SECONDS,
        help="seconds to wait for the upstream's next bytes",
    )
    parser.add_argument("--connect-timeout", type=float, default=CONNECT_TIMEOUT_SECONDS)
    parser.add_argument("--db", help="SQLite file: every guarded request is saved as a run")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = ProxyConfig(
            upstream=args.upstream,
            rules=args.rules,
            keep=args.keep,
            on_loop=args.on_loop,
            host=args.host,
            port=args.port,
            max_request_bytes=args.max_request_bytes,
            timeout=args.timeout,
            connect_timeout=args.connect_timeout,
            db=args.db,
        )
    except ValueError as error:
        print(f"loopbreak proxy: {error}", file=sys.stderr)
        return 2
    try:
        import uvicorn

        from loopbreak.proxy.app import create_app
    except ImportError:
        print(EXTRA_HINT, file=sys.stderr)
        return 2
    uvicorn.run(create_app(config), host=config.host, port=config.port, log_level="info")
    return 0
