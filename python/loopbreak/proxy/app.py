"""The proxy's ASGI app: ``create_app(config)`` gives a Starlette app that forwards every request
to ``config.upstream`` and guards the answers of the paths in ``GUARDED_PATHS``: the OpenAI
APIs' (``formats``) and the Anthropic Messages API's (``messages``).

A guarded ``POST`` with ``"stream": true`` is relayed event by event through the stream guard
(``sse``); one without is read whole, checked by the same guard, and trimmed if it loops. Every
other request, a body that is not a JSON object, and any answer that is not a 200 pass through
unchanged: status, headers (auth included) and body bytes. When the client goes, the upstream
response is closed at its next event, by the task that reads it (``sse.UpstreamEvents``). The errors the proxy answers itself are in the shape of the API the
request speaks (``error_shape``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Iterable
from typing import Any, Callable, Optional, Union

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from loopbreak.proxy.config import ProxyConfig
from loopbreak.proxy.formats import (
    OPENAI_ERRORS,
    OPENAI_PATHS,
    Endpoint,
    ErrorShape,
    Path,
    loop_member,
    replace_source,
)
from loopbreak.proxy.messages import ANTHROPIC_ERRORS, MESSAGES
from loopbreak.proxy.metrics import ProxyMetrics
from loopbreak.proxy.sse import (
    Event,
    StreamEnds,
    UpstreamBytes,
    UpstreamEvents,
    error_kind,
    relay,
)
from loopbreak.store import Database
from loopbreak.streaming.guard import AsyncGuarded, Guarded, Piece
from loopbreak.streaming.persist import save_result
from loopbreak.telemetry import REPETITION, RequestSpan

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

GUARDED_PATHS: dict[str, Endpoint] = {**OPENAI_PATHS, "/v1/messages": MESSAGES}


def error_shape(request: Request) -> ErrorShape:
    """The Anthropic API's error shape for its paths (``/v1/messages`` and below, such as
    ``count_tokens``) and for any request with the ``anthropic-version`` header, which its SDKs
    and Claude Code send on every request (``/v1/models`` is the two APIs' common path); the
    OpenAI API's for every other request."""
    anthropic = request.url.path.startswith("/v1/messages") or (
        "anthropic-version" in request.headers
    )
    return ANTHROPIC_ERRORS if anthropic else OPENAI_ERRORS


# Hop-by-hop headers (RFC 9110 7.6.1) belong to one connection, never forwarded; host and
# content-length are set again for the next hop.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
# A guarded answer is read decoded and sent re-encoded by the proxy: its length and encoding
# are no longer the upstream's.
_REWRITTEN = frozenset({"content-encoding"})


class RequestTooLarge(Exception):
    pass


def _headers(headers: Iterable[tuple[str, str]], drop: frozenset[str]) -> dict[str, str]:
    return {name: value for name, value in headers if name.lower() not in drop}


class _ClosingStream(StreamingResponse):
    """A StreamingResponse that stops reading the upstream as soon as the client is gone, and
    runs ``on_close`` however the response ends: finished, failed, or the client gone.

    Starlette notices a client leaving and cancels the response's task, but with a few hundred
    streams open that cancellation can take seconds to arrive (the upstream model keeps
    generating meanwhile); ``on_disconnect`` tells the upstream's reader to stop from the task
    that saw the client leave, and the reader closes the upstream at its next event
    (``sse.UpstreamEvents``, ``sse.UpstreamBytes``)."""

    def __init__(
        self,
        content: AsyncIterable[Any],
        status_code: int,
        headers: dict[str, str],
        on_disconnect: Callable[[], Awaitable[None]],
        on_close: Callable[[], Awaitable[None]],
        span: Optional[RequestSpan] = None,
    ) -> None:
        super().__init__(content, status_code=status_code, headers=headers)
        self._on_disconnect = on_disconnect
        self._on_close = on_close
        self._span = span

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def receive_or_close() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                await self._on_disconnect()
            return message

        try:
            with self._span.current() if self._span else contextlib.nullcontext():
                await super().__call__(scope, receive_or_close, send)
        finally:
            await self._on_close()


_STALE_CONNECTION = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
"""How a request fails on a connection the upstream closed: reset, or closed with no answer."""


class Proxy:
    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.rules = config.make_rules()
        self.metrics = ProxyMetrics()
        self.db: Optional[Database] = None
        self.client: Optional[httpx.AsyncClient] = None

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        config = self.config
        # No connection cap: each client stream holds one upstream connection for its length,
        # and the upstream is the one to refuse load. trust_env=False: the upstream is named,
        # never reached through an HTTP(S)_PROXY meant for other traffic.
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(config.timeout, connect=config.connect_timeout, pool=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=100),
            trust_env=False,
        )
        self.db = None if config.db is None else Database(config.db)
        try:
            yield
        finally:
            await self.client.aclose()
            if self.db is not None:
                self.db.close()

    async def metrics_endpoint(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type=self.metrics.content_type)

    async def handle(self, request: Request) -> Response:
        try:
            body = await self._read_body(request)
        except RequestTooLarge:
            limit = self.config.max_request_bytes
            message = f"the request body is over {limit} bytes"
            return JSONResponse(error_shape(request).body("request_too_large", message), 413)
        endpoint = GUARDED_PATHS.get(request.url.path) if request.method == "POST" else None
        payload = _json_object(body) if endpoint is not None else None
        if endpoint is None or payload is None:
            return await self._pass_through(request, body, "passthrough")
        streamed = payload.get("stream") is True
        if streamed and self.config.on_loop == "trim-only":
            return await self._pass_through(request, body, request.url.path)
        span = RequestSpan(endpoint.operation, str(payload.get("model", "")), self.config.upstream)
        try:
            upstream = await self._send(request, body)
        except httpx.HTTPError as error:
            kind = error_kind(error)
            span.end(error=kind)
            return self._upstream_failed(request, request.url.path, kind, error)
        if upstream.status_code != 200:
            span.end(error=str(upstream.status_code))
            return self._relay_unchanged(upstream, request.url.path)
        if streamed:
            return self._guard_stream(request.url.path, endpoint, upstream, span)
        return await self._guard_whole(request, endpoint, upstream, span)

    async def _read_body(self, request: Request) -> bytes:
        limit = self.config.max_request_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise RequestTooLarge
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise RequestTooLarge
            chunks.append(chunk)
        return b"".join(chunks)

    async def _send(self, request: Request, body: bytes) -> httpx.Response:
        assert self.client is not None, "the app's lifespan did not run"
        url = self.config.upstream_root + request.url.path
        if request.url.query:
            url += "?" + request.url.query
        upstream_request = self.client.build_request(
            request.method,
            url,
            headers=_headers(request.headers.items(), _HOP_BY_HOP),
            content=body,
        )
        try:
            return await self.client.send(upstream_request, stream=True)
        except _STALE_CONNECTION:
            # A pooled connection that the upstream closes for being idle (every server has a
            # keep-alive timeout; uvicorn's is 5 s, as long as httpx keeps one) can be closed as
            # the request is written to it, and the request fails before any byte of an answer.
            # It is sent once more; the pool has dropped the dead connection. A second failure
            # is the upstream's own, and a 502.
            return await self.client.send(upstream_request, stream=True)

    def _upstream_failed(
        self, request: Request, endpoint: str, kind: str, error: Exception
    ) -> Response:
        self.metrics.upstream_error(kind)
        self.metrics.request(endpoint, "error")
        status = 504 if kind == "timeout" else 502
        message = f"the upstream {self.config.upstream} failed: {type(error).__name__}: {error}"
        return JSONResponse(error_shape(request).body(kind, message), status)

    async def _pass_through(self, request: Request, body: bytes, endpoint: str) -> Response:
        try:
            upstream = await self._send(request, body)
        except httpx.HTTPError as error:
            return self._upstream_failed(request, endpoint, error_kind(error), error)
        return self._relay_unchanged(upstream, endpoint)

    def _relay_unchanged(self, upstream: httpx.Response, endpoint: str) -> Response:
        if upstream.status_code >= 500:
            self.metrics.upstream_error("status")
        self.metrics.request(endpoint, str(upstream.status_code))
        headers = _headers(upstream.headers.multi_items(), _HOP_BY_HOP - {"content-length"})
        body = UpstreamBytes(upstream)
        return _ClosingStream(body, upstream.status_code, headers, body.aclose, body.aclose)

    def _guard_stream(
        self, path: str, endpoint: Endpoint, upstream: httpx.Response, span: RequestSpan
    ) -> Response:
        guarded: AsyncGuarded[Event] = AsyncGuarded(
            UpstreamEvents(upstream),
            lambda event: () if event.data is None else endpoint.event_pieces(event.data),
            on_degeneration="stop",
            rules=self.rules,
            keep=self.config.keep,
        )
        ends = StreamEnds()
        events = relay(guarded, endpoint, ends, self.metrics.upstream_error)

        async def close() -> None:
            await events.aclose()  # type: ignore[attr-defined]
            await guarded.aclose()
            self._record(path, guarded, span, ends.finish_reasons, ends.error)

        headers = _headers(upstream.headers.multi_items(), _HOP_BY_HOP | _REWRITTEN)
        return _ClosingStream(events, 200, headers, guarded.aclose, close, span)

    async def _guard_whole(
        self, request: Request, endpoint: Endpoint, upstream: httpx.Response, span: RequestSpan
    ) -> Response:
        path = request.url.path
        try:
            raw = await upstream.aread()
        except httpx.HTTPError as error:
            span.end(error=error_kind(error))
            return self._upstream_failed(request, path, error_kind(error), error)
        finally:
            await upstream.aclose()
        headers = _headers(upstream.headers.multi_items(), _HOP_BY_HOP | _REWRITTEN)
        answer = _json_object(raw)
        if answer is None:  # not JSON: nothing to check, the client gets what the server said
            span.end()
            self.metrics.request(path, "200")
            return Response(raw, 200, headers)
        located = list(endpoint.body_pieces(answer))
        pieces: list[Piece] = [piece for piece, _ in located]
        guarded = Guarded(
            [answer],
            lambda _: pieces,
            on_degeneration="stop",
            rules=self.rules,
            keep=self.config.keep,
        )
        with span.current():
            for _ in guarded:
                pass
        degeneration = guarded.degeneration
        if degeneration is not None:
            paths: list[Path] = [at for piece, at in located if piece.source == degeneration.source]
            replace_source(answer, paths, degeneration.source_persist_text)
            endpoint.mark_stopped(answer, degeneration.source, loop_member(degeneration))
            raw = json.dumps(answer, ensure_ascii=False).encode()
        self._record(path, guarded, span, endpoint.finish_reasons(answer), None)
        return Response(raw, 200, headers)

    def _record(
        self,
        path: str,
        guarded: Union[Guarded[Any], AsyncGuarded[Any]],
        span: RequestSpan,
        finish_reasons: Iterable[str],
        error: Optional[str],
    ) -> None:
        """Counts, traces and (with ``--db``) saves how one guarded request ended."""
        status = "error" if error is not None else guarded.status
        self.metrics.request(path, status)
        if guarded.degeneration is not None:
            self.metrics.loop(guarded.degeneration)
        stopped = guarded.degeneration is not None
        span.end((REPETITION,) if stopped else tuple(finish_reasons), error)
        if self.db is not None and guarded.status != "streaming":
            save_result(self.db, guarded)


def _json_object(body: bytes) -> Optional[dict[str, Any]]:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def create_app(config: ProxyConfig) -> Starlette:
    """The proxy as an ASGI app (its lifespan opens the upstream client and the store)."""
    proxy = Proxy(config)
    app = Starlette(
        routes=[
            Route("/metrics", proxy.metrics_endpoint, methods=["GET"]),
            Route("/{path:path}", proxy.handle, methods=METHODS),
        ],
        lifespan=proxy.lifespan,
    )
    app.state.proxy = proxy
    return app
