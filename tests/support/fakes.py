"""Fakes shared by the tests: upstream streams that count what is read and closed, and a clock.

Two shapes of upstream, because SDK streams come in both: an object that is its own iterator
and whose ``close()`` closes its generator (``IteratorUpstream``), and an object whose
``__iter__`` returns a fresh generator while ``close()`` closes the HTTP response
(``GeneratorUpstream``). Each has an async twin.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterable, Iterator
from typing import Optional


class FakeClock:
    """A clock for policies and budgets: reads ``now``, which a test sets; each reading then
    advances by ``tick`` (0: time stands still unless the test moves it)."""

    def __init__(self, now: float = 0.0, tick: float = 0.0) -> None:
        self.now = now
        self.tick = tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


class IteratorUpstream:
    """A generator behind a stream object that counts ``close()`` calls, like an SDK stream."""

    def __init__(self, deltas: Iterable[str], error: Optional[Exception] = None) -> None:
        self.closes = 0
        self.read = 0
        self.finalized = False
        self._generator = self._generate(list(deltas), error)

    def _generate(
        self, deltas: list[str], error: Optional[Exception]
    ) -> Generator[str, None, None]:
        try:
            for delta in deltas:
                self.read += 1
                yield delta
            if error is not None:
                raise error
        finally:
            self.finalized = True

    def __iter__(self) -> IteratorUpstream:
        return self

    def __next__(self) -> str:
        return next(self._generator)

    def close(self) -> None:
        self.closes += 1
        self._generator.close()


class AsyncIteratorUpstream:
    """The async twin of ``IteratorUpstream``; ``block_after`` makes it wait forever after that
    many deltas (a model that stalls), setting ``blocked`` when it starts waiting."""

    def __init__(
        self,
        deltas: Iterable[str],
        error: Optional[Exception] = None,
        block_after: Optional[int] = None,
    ) -> None:
        self.closes = 0
        self.read = 0
        self.finalized = False
        self.blocked = asyncio.Event()
        self._generator = self._generate(list(deltas), error, block_after)

    async def _generate(
        self, deltas: list[str], error: Optional[Exception], block_after: Optional[int]
    ) -> AsyncGenerator[str, None]:
        try:
            for delta in deltas:
                if self.read == block_after:
                    self.blocked.set()
                    await asyncio.Event().wait()
                self.read += 1
                yield delta
            if error is not None:
                raise error
        finally:
            self.finalized = True

    def __aiter__(self) -> AsyncIteratorUpstream:
        return self

    async def __anext__(self) -> str:
        return await self._generator.__anext__()

    async def aclose(self) -> None:
        self.closes += 1
        await self._generator.aclose()


class GeneratorUpstream:
    """A stream object whose ``__iter__`` returns a generator, like an SDK stream; counts what is
    read and closed. ``fail_at`` raises ``error`` instead of that delta; ``release`` (an event)
    makes reading the delta at ``block_at`` wait for it."""

    def __init__(
        self,
        deltas: list[str],
        fail_at: Optional[int] = None,
        error: Optional[BaseException] = None,
        block_at: Optional[int] = None,
        cleanup_error: Optional[Exception] = None,
        close_error: Optional[Exception] = None,
    ) -> None:
        self.deltas, self.fail_at, self.error = deltas, fail_at, error
        self.block_at, self.release, self.blocked = block_at, threading.Event(), threading.Event()
        self.cleanup_error, self.close_error = cleanup_error, close_error
        self.read = 0
        self.closes = 0
        self.generator_done = False

    def __iter__(self) -> Iterator[str]:
        return self._generate()

    def _generate(self) -> Generator[str, None, None]:
        try:
            for i, delta in enumerate(self.deltas):
                if i == self.block_at:
                    self.blocked.set()
                    self.release.wait()
                if i == self.fail_at:
                    assert self.error is not None
                    raise self.error
                self.read += 1
                yield delta
        finally:
            self.generator_done = True
            if self.cleanup_error is not None:
                raise self.cleanup_error

    def close(self) -> None:
        self.closes += 1
        if self.close_error is not None:
            raise self.close_error


class AsyncGeneratorUpstream:
    """The async twin of ``GeneratorUpstream`` (an async generator behind an ``aclose``-able object);
    ``pause`` awaits between deltas, so the consumer and the upstream interleave."""

    def __init__(
        self, deltas: list[str], fail_at: Optional[int] = None, error: Optional[Exception] = None
    ) -> None:
        self.deltas, self.fail_at, self.error = deltas, fail_at, error
        self.read = 0
        self.closes = 0
        self.generator_done = False

    def __aiter__(self) -> AsyncIterator[str]:
        return self._generate()

    async def _generate(self) -> AsyncIterator[str]:
        try:
            for i, delta in enumerate(self.deltas):
                await asyncio.sleep(0)
                if i == self.fail_at:
                    assert self.error is not None
                    raise self.error
                self.read += 1
                yield delta
        finally:
            self.generator_done = True

    async def aclose(self) -> None:
        self.closes += 1
