"""Relaying an upstream's server-sent events through the stream guard.

``UpstreamEvents`` reads the upstream's response as SSE events, each decoded once; the guard
(``AsyncGuarded`` with ``Endpoint.event_pieces``, in ``app``) passes each event on unchanged
until a rule holds, then closes the upstream response, which is what makes the model server
stop generating. ``relay`` yields the events' text for the client, then the stop events or,
when the upstream failed mid-stream, one error event in the endpoint's API's shape (which the
``openai`` and ``anthropic`` clients raise).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from types import AsyncGeneratorType
from typing import Callable, Optional

import httpx

from loopbreak.proxy.formats import Endpoint, Json, loop_member
from loopbreak.streaming.guard import AsyncGuarded


class MalformedStream(Exception):
    """The upstream sent an event whose data is not JSON."""


@dataclass(frozen=True)
class Event:
    text: str
    """The event as the upstream sent it (line endings normalised), to relay unchanged."""
    data: Json
    """Its decoded data; None for ``[DONE]`` and events without data."""


def _event(lines: list[str]) -> Event:
    text = "\n".join(lines) + "\n\n"
    data_lines = [line[5:].removeprefix(" ") for line in lines if line.startswith("data:")]
    data = "\n".join(data_lines)
    if not data_lines or data == "[DONE]":
        return Event(text, None)
    try:
        return Event(text, json.loads(data))
    except ValueError:
        raise MalformedStream(
            f"the upstream sent an event that is not JSON: {data[:80]!r}"
        ) from None


class UpstreamEvents:
    """An upstream's streamed response as ``Event`` objects; ``aclose()`` closes the response
    (the connection goes, so the server sees its client leave).

    The response is closed only by the task that reads it: httpx's byte stream is an async
    generator, and closing the response from another task while the reader waits inside it
    left that generator to be finalised half-run ("async generator already executing", an
    unraisable exception). So ``aclose()`` from another task, while the events are being read
    (the client left: ``AsyncGuarded.aclose`` from the task that saw it go), leaves the close to
    the reader: the guard, told to stop, ends at the upstream's next event and closes the
    events, which closes the response."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._reader: Optional[AsyncGenerator[Event, None]] = None

    def __aiter__(self) -> AsyncIterator[Event]:
        self._reader = self._events()
        return self._reader

    async def _events(self) -> AsyncGenerator[Event, None]:
        try:
            lines: list[str] = []
            async for line in self._response.aiter_lines():
                if line:
                    lines.append(line)
                elif lines:
                    yield _event(lines)
                    lines = []
            if lines:
                yield _event(lines)
        finally:
            await self._response.aclose()

    async def aclose(self) -> None:
        if isinstance(self._reader, AsyncGeneratorType) and self._reader.ag_running:
            return  # another task is reading: it closes the response when it stops
        await self._response.aclose()


class UpstreamBytes:
    """An upstream's response body as it comes, to relay unchanged; closed like
    ``UpstreamEvents``, by the task that reads it: ``aclose()`` from another task while it is
    read makes the reader stop at the next bytes and close the response."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._reader: Optional[AsyncGenerator[bytes, None]] = None
        self._leaving = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        self._reader = self._chunks()
        return self._reader

    async def _chunks(self) -> AsyncGenerator[bytes, None]:
        try:
            async for chunk in self._response.aiter_raw():
                if self._leaving:
                    return
                yield chunk
        finally:
            await self._response.aclose()

    async def aclose(self) -> None:
        if isinstance(self._reader, AsyncGeneratorType) and self._reader.ag_running:
            self._leaving = True
            return
        await self._response.aclose()


def error_kind(error: BaseException) -> str:
    """How an upstream failed, as the metrics and the error event name it."""
    if isinstance(error, MalformedStream):
        return "malformed"
    if isinstance(error, httpx.TimeoutException):
        return "timeout"
    if isinstance(error, httpx.ConnectError):
        return "connect"
    return "transport"


@dataclass
class StreamEnds:
    """How a relayed stream ended: the finish reasons the upstream reported, and the kind of
    its failure if it failed."""

    finish_reasons: tuple[str, ...] = ()
    error: Optional[str] = None


async def relay(
    guarded: AsyncGuarded[Event],
    endpoint: Endpoint,
    ends: StreamEnds,
    on_error: Callable[[str], None],
) -> AsyncIterator[str]:
    view = endpoint.stream_view()
    try:
        async for event in guarded:
            if event.data is not None:
                view.see(event.data)
                reasons = endpoint.finish_reasons(event.data)
                if reasons:
                    ends.finish_reasons = tuple(reasons)
            yield event.text
    except (httpx.HTTPError, MalformedStream) as error:
        kind = error_kind(error)
        ends.error = kind
        on_error(kind)
        yield endpoint.errors.event(kind, str(error) or type(error).__name__)
        return
    degeneration = guarded.degeneration
    if guarded.status == "degenerate" and degeneration is not None:
        for text in view.stop_events(loop_member(degeneration)):
            yield text
