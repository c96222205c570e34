"""Relay a guarded stream to a browser as server-sent events (Starlette or FastAPI).

``sse_response(guarded)`` streams the answer text of an ``AsyncGuarded`` (from
``loopbreak.aguard`` or an OpenAI adapter) as SSE and always ends with one final ``stop`` event
that says why the stream ended::

    data: {"delta": "Hello"}                      (one unnamed event per text delta)
    event: stop
    data: {"status": "degenerate", "reason": "Output degeneration detected in content: ...",
           "finding": {...}}

``status`` is ``ok``, ``degenerate`` or ``error`` (the upstream raised, e.g. a timeout; the
exception is re-raised after the event, so the server logs it). Deltas are JSON-encoded
because an SSE data line cannot carry a raw newline.

If the client disconnects, the guard (and so the model's stream) is closed at once, not when
the generator is garbage-collected, and no event is sent. Pass ``background=`` (a Starlette
``BackgroundTask``) to persist the outcome: it runs after the final event was sent, not after a
disconnect.
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("starlette", "starlette")

import json
from collections.abc import AsyncGenerator
from typing import Any, Optional

from starlette.background import BackgroundTask
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from loopbreak.errors import DegenerationDetected
from loopbreak.streaming.guard import AsyncGuarded


def _event(data: dict[str, Any], name: Optional[str] = None) -> str:
    header = "" if name is None else f"event: {name}\n"
    return f"{header}data: {json.dumps(data, ensure_ascii=False)}\n\n"


def _stop_event(guarded: AsyncGuarded[Any]) -> str:
    degeneration = guarded.degeneration
    return _event(
        {
            "status": guarded.status,
            "reason": guarded.reason,
            "finding": None if degeneration is None else degeneration.to_dict(),
        },
        "stop",
    )


async def _events(guarded: AsyncGuarded[Any]) -> AsyncGenerator[str, None]:
    try:
        async for delta in guarded.text_deltas():
            yield _event({"delta": delta})
    except DegenerationDetected:
        pass  # a guard in "raise" mode; the stop event below carries the reason
    except Exception:
        yield _stop_event(guarded)
        raise
    yield _stop_event(guarded)


class _GuardedEventStream(StreamingResponse):
    """A StreamingResponse that closes its guard when the response ends in any way.

    Starlette leaves a body iterator suspended when the client disconnects; closing it here
    is what stops the upstream model stream right away.
    """

    def __init__(self, guarded: AsyncGuarded[Any], background: Optional[BackgroundTask]) -> None:
        self._guarded = guarded
        self._events = _events(guarded)
        super().__init__(
            self._events,
            media_type="text/event-stream",
            # Proxies must not buffer or cache a live stream.
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            background=background,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._events.aclose()
            await self._guarded.aclose()


def sse_response(
    guarded: AsyncGuarded[Any], *, background: Optional[BackgroundTask] = None
) -> StreamingResponse:
    """A ``text/event-stream`` response relaying ``guarded``'s text, ending with a ``stop``
    event (see the module docstring). Raises ``TypeError`` for anything but an
    ``AsyncGuarded``: wrap a plain stream with ``loopbreak.aguard`` first."""
    if not isinstance(guarded, AsyncGuarded):
        raise TypeError(
            f"expected an AsyncGuarded (from loopbreak.aguard or an adapter), got {type(guarded).__name__}"
        )
    return _GuardedEventStream(guarded, background)
