"""Stream guards: pass a model's output through unchanged and stop it once it starts looping.

``guard(deltas)`` wraps a sync iterable of text deltas, ``aguard(deltas)`` an async one; the
OpenAI adapters in ``loopbreak.integrations.openai`` wrap SDK streams the same way. Each item is
fed to a ``Detector`` as soon as it arrives, with no batching: the guard reacts within the delta
in which a rule first holds. Plain ``str`` deltas go straight to the answer's detector (the
guard costs less than twice a bare ``Detector.feed`` loop, docs/benchmarks.md); adapters turn
each item into ``Piece`` objects, one detector per source. On a
finding the guard stops reading, closes the upstream so the model stops generating, and either
raises ``DegenerationDetected`` (``on_degeneration="raise"``, the default) or just ends the
stream (``"stop"``). Either way the guard object tells what happened: ``status``, ``finding``,
``text`` (what was read) and ``persist_text`` (what to save: the loop cut to its first copies
plus a marker).

The upstream is closed exactly once, whenever the guard stops reading: at a finding, at its
natural end, when the consumer closes the guard early (``close()``/``aclose()``, leaving a
``with``/``async with`` block, or a cancelled task) and when the upstream raises. Exceptions
from the upstream (timeouts, lost connections) pass through unchanged. ``close()``/``aclose()``
also work from another thread or task while the consumer waits for the upstream: the stream
object is closed at once and the consumer's iteration ends quietly after that read. If closing
fails, every part is still closed and the error is raised from ``close()`` or the last read,
but it never replaces a ``DegenerationDetected``, an upstream error or a cancellation already
on its way (it is logged on the ``loopbreak.streaming.guard`` logger instead).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Generator,
    Iterable,
    Iterator,
)
from dataclasses import dataclass
from types import AsyncGeneratorType, GeneratorType, TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Generic,
    Literal,
    Optional,
    TypeVar,
)

from loopbreak._core import DEFAULT_KEEP, Detector, Finding, Rules, trim
from loopbreak.errors import DegenerationDetected
from loopbreak.telemetry import record_degeneration

if TYPE_CHECKING:
    from typing_extensions import Self

T = TypeVar("T")

CONTENT = "content"
"""The source name of the answer text; tool-call arguments get sources of their own."""

REASONING = "reasoning"
"""The source name of a model's reasoning (thinking) text, which adapters feed to a detector of
its own: real runaway loops happen inside thinking. It is never part of ``text``."""

OnDegeneration = Literal["raise", "stop"]

Status = Literal["streaming", "ok", "degenerate", "cancelled", "error"]
"""Where a guarded stream stands: still ``streaming``; ``ok`` (the upstream ended by itself);
``degenerate`` (the guard stopped it); ``cancelled`` (the consumer stopped early or its task was
cancelled: a user stop); ``error`` (the upstream raised, e.g. a timeout or a lost connection)."""

# Blocks can be thousands of units long; a reason is one readable line.
_BLOCK_PREVIEW = 80


@dataclass(frozen=True)
class Piece:
    """One text delta of one source, taken from an upstream item by an adapter.

    ``source`` names an independent stream of text, each fed to its own detector: ``"content"``
    for the answer, ``"reasoning"`` for thinking, e.g. ``"tool_calls[0].arguments"`` for a
    tool call. ``tool_name`` says
    which tool a source belongs to, when known.
    """

    source: str
    delta: str
    tool_name: Optional[str] = None


@dataclass(frozen=True)
class Degeneration:
    """What a guard stopped on, and what to save instead of the loop."""

    finding: Finding
    source: str
    """Which part of the output looped: ``"content"``, ``"reasoning"`` or a tool call's
    arguments."""
    tool_name: Optional[str]
    text: str
    """The answer text (source ``"content"``) read up to and including the delta in which
    the rule held."""
    persist_text: str
    """``text`` with each loop cut to its first copies plus a marker."""
    source_persist_text: str
    """The looping source's own text (the reasoning or the tool call's arguments, read up to the
    delta in which the rule held), cut like ``persist_text``; for ``"content"`` it is
    ``persist_text``. Nothing saves it for you: keep it if you keep that part of the output."""
    units_removed: int
    """Code points that trimming removed from the looping source's text."""
    reason: str
    """Starts with ``"Output degeneration detected"``."""

    def to_dict(self) -> dict[str, Any]:
        """The finding's fields plus ``source``, ``tool_name`` and ``units_removed``: plain
        values, to store as JSON next to ``persist_text``."""
        return {
            **self.finding.to_dict(),
            "source": self.source,
            "tool_name": self.tool_name,
            "units_removed": self.units_removed,
        }


def _describe(finding: Finding, source: str, tool_name: Optional[str]) -> str:
    where = source if tool_name is None else f"{source} (tool {tool_name})"
    block = finding.block
    if len(block) > _BLOCK_PREVIEW:
        block = block[:_BLOCK_PREVIEW] + "…"
    return (
        f"Output degeneration detected in {where}: {json.dumps(block, ensure_ascii=False)} "
        f"repeated {finding.repeats} times from unit {finding.start} "
        f"({finding.rule}, period {finding.period}, rule held at unit {finding.detected_at})"
    )


class _Watch:
    """Detection state of one stream: a detector and the text read so far per source."""

    def __init__(self, rules: Optional[Rules], keep: int) -> None:
        self._rules = rules
        self._keep = keep
        self._detectors: dict[str, Detector] = {}
        self._parts: dict[str, list[str]] = {}
        self._tool_names: dict[str, str] = {}
        self.degeneration: Optional[Degeneration] = None

    def text(self, source: str = CONTENT) -> str:
        return "".join(self._parts.get(source, ()))

    def content_feed(self) -> tuple[Callable[[Any], Optional[Finding]], Callable[[str], None]]:
        """The answer's ``Detector.feed`` and the append of its text, for the plain-text path,
        which calls them directly: no ``Piece`` and no lookup per delta."""
        detector = self._detectors.get(CONTENT)
        if detector is None:
            detector = self._detectors[CONTENT] = Detector(self._rules)
        return detector.feed, self._parts.setdefault(CONTENT, []).append

    def stop(self, source: str, finding: Finding) -> None:
        self.degeneration = self._degeneration(source, finding)

    def observe(self, pieces: Iterable[Piece]) -> str:
        """Feeds one item's pieces, stopping at the first finding; returns its content delta."""
        content: list[str] = []
        for piece in pieces:
            if not isinstance(piece, Piece) or not isinstance(piece.delta, str):
                raise TypeError(
                    f"an adapter must give Piece objects with str deltas, got {piece!r}"
                )
            if piece.tool_name is not None:
                self._tool_names[piece.source] = piece.tool_name
            if not piece.delta:
                continue
            self._parts.setdefault(piece.source, []).append(piece.delta)
            if piece.source == CONTENT:
                content.append(piece.delta)
            detector = self._detectors.get(piece.source)
            if detector is None:
                detector = self._detectors[piece.source] = Detector(self._rules)
            finding = detector.feed(piece.delta)
            if finding is not None:
                self.stop(piece.source, finding)
                break
        return "".join(content)

    def _degeneration(self, source: str, finding: Finding) -> Degeneration:
        text = self.text()
        trimmed = trim(text, self._keep, self._rules)
        looping = trimmed if source == CONTENT else trim(self.text(source), self._keep, self._rules)
        tool_name = self._tool_names.get(source)
        return Degeneration(
            finding=finding,
            source=source,
            tool_name=tool_name,
            text=text,
            persist_text=trimmed.text,
            source_persist_text=looping.text,
            units_removed=sum(removal.units for removal in looping.removals),
            reason=_describe(finding, source, tool_name),
        )


class _GuardBase(Generic[T]):
    """State and outcome shared by the sync and async guards."""

    def __init__(
        self,
        upstream: Any,
        pieces: Callable[[T], Iterable[Piece]],
        on_degeneration: OnDegeneration,
        rules: Optional[Rules],
        keep: int,
    ) -> None:
        if on_degeneration not in ("raise", "stop"):
            raise ValueError(f"on_degeneration must be 'raise' or 'stop', not {on_degeneration!r}")
        if not isinstance(keep, int) or isinstance(keep, bool):
            raise TypeError(f"keep must be an int, not {type(keep).__name__}")
        if keep < 1:
            raise ValueError(f"keep must be at least 1, got {keep}")
        if rules is not None and not isinstance(rules, Rules):
            raise TypeError(f"rules must be a loopbreak.Rules or None, not {type(rules).__name__}")
        self._upstream = upstream
        self._pieces = pieces
        self._on_degeneration = on_degeneration
        self._watch = _Watch(rules, keep)
        self._status: Status = "streaming"
        self._error: Optional[BaseException] = None
        self._closed: list[object] = []  # upstream objects already closed: each is closed once
        self._stop_requested = False  # close() was called while another thread/task was reading

    def _reads_plain_text(self) -> bool:
        """Whether the items are the text deltas themselves (``guard``/``aguard``): then each
        delta goes straight to the answer's detector, the per-delta cost that matters most."""
        return self._pieces is _text_pieces

    def _stop_on_finding(self) -> None:
        """Marks the stream degenerate (the caller stops reading) and raises if so asked."""
        self._status = "degenerate"
        degeneration = self._watch.degeneration
        if degeneration is not None:
            record_degeneration(degeneration)  # the current span, with loopbreak[otel]
        if degeneration is not None and self._on_degeneration == "raise":
            raise DegenerationDetected(degeneration)

    def _settle(self, error: BaseException) -> None:
        """Records why the stream ended when ``error`` is on its way out of the guard."""
        if self._status != "streaming":
            return  # degenerate (the DegenerationDetected itself) or already cancelled
        if isinstance(error, Exception):
            self._status, self._error = "error", error
        else:  # GeneratorExit, asyncio.CancelledError, KeyboardInterrupt: a user stop
            self._status = "cancelled"

    def _stop_from_outside(self) -> None:
        self._stop_requested = True
        if self._status == "streaming":
            self._status = "cancelled"

    def _to_close(self, iterator: object, skip_iterator: bool) -> list[object]:
        """The upstream objects not closed yet, each once, marked closed. ``skip_iterator``
        leaves out an iterator that another thread or task is running (it cannot be closed
        then; that reader closes it when its read ends)."""
        if iterator is None or iterator is self._upstream:
            candidates = [] if skip_iterator and iterator is not None else [self._upstream]
        else:
            # The generator behind an SDK stream's __iter__, then the stream (its HTTP response).
            candidates = [self._upstream] if skip_iterator else [iterator, self._upstream]
        pending = [c for c in candidates if not any(c is done for done in self._closed)]
        self._closed.extend(pending)
        return pending

    @property
    def status(self) -> Status:
        """``streaming``, ``ok``, ``degenerate``, ``cancelled`` or ``error`` (see ``Status``)."""
        return self._status

    @property
    def degeneration(self) -> Optional[Degeneration]:
        """What the guard stopped on, or None."""
        return self._watch.degeneration

    @property
    def finding(self) -> Optional[Finding]:
        """The finding the guard stopped on, or None."""
        degeneration = self._watch.degeneration
        return None if degeneration is None else degeneration.finding

    @property
    def error(self) -> Optional[BaseException]:
        """The upstream's exception when ``status`` is ``"error"``."""
        return self._error

    @property
    def text(self) -> str:
        """The answer text read from the upstream so far."""
        return self._watch.text()

    @property
    def persist_text(self) -> str:
        """What to save: ``text``, with the loop cut to its first copies plus a marker if the
        guard stopped on one."""
        degeneration = self._watch.degeneration
        return self._watch.text() if degeneration is None else degeneration.persist_text

    @property
    def reason(self) -> Optional[str]:
        """Why the stream ended, in one line; None while it is still streaming."""
        if self._status == "ok":
            return "Output complete"
        if self._status == "degenerate":
            assert self._watch.degeneration is not None
            return self._watch.degeneration.reason
        if self._status == "cancelled":
            return "Stopped by the consumer before the stream ended"
        if self._status == "error":
            return f"Upstream error: {type(self._error).__name__}: {self._error}"
        return None


class Guarded(_GuardBase[T]):
    """A guarded sync stream: iterate it for the upstream's items, unchanged.

    The item in which a rule first held is not passed on (the guard stops before it); its text
    is in ``text``. Close it when you stop early (``close()`` or a ``with`` block) so the
    upstream is closed at once rather than when the guard is garbage-collected.

    ``pieces`` turns one upstream item into text ``Piece`` objects; it is how adapters (and
    your own, for other SDKs) tell the guard where the text is.
    """

    def __init__(
        self,
        upstream: Iterable[T],
        pieces: Callable[[T], Iterable[Piece]],
        *,
        on_degeneration: OnDegeneration = "raise",
        rules: Optional[Rules] = None,
        keep: int = DEFAULT_KEEP,
    ) -> None:
        if not hasattr(upstream, "__iter__"):
            hint = ": use the async guard" if hasattr(upstream, "__aiter__") else ""
            raise TypeError(f"expected an iterable, got {type(upstream).__name__}{hint}")
        super().__init__(upstream, pieces, on_degeneration, rules, keep)
        self._iterator: Optional[Iterator[T]] = None
        self._items = self._run()

    def _run(self) -> Generator[T, None, None]:
        try:
            self._iterator = iterator = iter(self._upstream)
            if self._reads_plain_text():
                feed, keep_text = self._watch.content_feed()
                for delta in iterator:
                    if self._stop_requested:
                        break
                    try:
                        finding = feed(delta)
                    except TypeError:
                        _text_pieces(delta)  # raises the guard's TypeError for a non-str delta
                        raise
                    keep_text(delta)
                    if finding is not None:
                        self._watch.stop(CONTENT, finding)
                        self._stop_on_finding()
                        break
                    yield delta
                else:
                    self._status = "ok"
            else:
                for item in iterator:
                    if self._stop_requested:
                        break
                    self._watch.observe(self._pieces(item))
                    if self._watch.degeneration is not None:
                        self._stop_on_finding()
                        break
                    yield item
                else:
                    self._status = "ok"
        except GeneratorExit:
            self._settle(GeneratorExit())
            self._release()  # the consumer's close() reports a failing close
            raise
        except BaseException as error:
            self._settle(error)
            _release_quietly(self._release)  # the error in flight wins over a failing close
            if self._stop_requested and isinstance(error, Exception):
                return  # the read failed because close() closed the stream under it
            raise
        self._release()

    def _release(self, skip_iterator: bool = False) -> None:
        """Closes the upstream objects not closed yet: all of them, even if one fails (the
        first error is raised after)."""
        failure: Optional[Exception] = None
        for closeable in self._to_close(self._iterator, skip_iterator):
            close = getattr(closeable, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as error:
                    failure = failure or error
        if failure is not None:
            raise failure

    def __iter__(self) -> Iterator[T]:
        # The guard's own generator: a for loop then pays no method call per item on top.
        return self._items

    def __next__(self) -> T:
        return next(self._items)

    def close(self) -> None:
        """Stops reading and closes the upstream (once, however often this is called).

        From another thread while the consumer waits for the upstream, it closes the stream
        object at once (so the model stops) and the consumer's iteration ends after that read.
        """
        if isinstance(self._items, GeneratorType) and self._items.gi_running:
            self._stop_from_outside()
            self._release(skip_iterator=True)
            return
        self._items.close()
        if self._status == "streaming":
            self._status = "cancelled"
        self._release()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()


class AsyncGuarded(_GuardBase[T]):
    """A guarded async stream: ``async for`` over it gives the upstream's items, unchanged.

    Same contract as ``Guarded``; close it with ``aclose()`` or ``async with`` when you stop
    early. ``text_deltas()`` gives the answer text of each item instead of the item.
    """

    def __init__(
        self,
        upstream: AsyncIterable[T],
        pieces: Callable[[T], Iterable[Piece]],
        *,
        on_degeneration: OnDegeneration = "raise",
        rules: Optional[Rules] = None,
        keep: int = DEFAULT_KEEP,
    ) -> None:
        if not hasattr(upstream, "__aiter__"):
            hint = ": use the sync guard" if hasattr(upstream, "__iter__") else ""
            raise TypeError(f"expected an async iterable, got {type(upstream).__name__}{hint}")
        super().__init__(upstream, pieces, on_degeneration, rules, keep)
        self._iterator: Optional[AsyncIterator[T]] = None
        self._items = self._run()

    async def _run(self) -> AsyncGenerator[tuple[T, str], None]:
        try:
            self._iterator = iterator = self._upstream.__aiter__()
            if self._reads_plain_text():
                feed, keep_text = self._watch.content_feed()
                async for delta in iterator:
                    if self._stop_requested:
                        break
                    try:
                        finding = feed(delta)
                    except TypeError:
                        _text_pieces(delta)  # raises the guard's TypeError for a non-str delta
                        raise
                    keep_text(delta)
                    if finding is not None:
                        self._watch.stop(CONTENT, finding)
                        self._stop_on_finding()
                        break
                    yield delta, delta
                else:
                    self._status = "ok"
            else:
                async for item in iterator:
                    if self._stop_requested:
                        break
                    content = self._watch.observe(self._pieces(item))
                    if self._watch.degeneration is not None:
                        self._stop_on_finding()
                        break
                    yield item, content
                else:
                    self._status = "ok"
        except GeneratorExit:
            self._settle(GeneratorExit())
            await self._release()  # the consumer's aclose() reports a failing close
            raise
        except BaseException as error:
            # A cancelled task lands here too (CancelledError is no Exception): a user stop.
            self._settle(error)
            try:
                await self._release()
            except Exception as close_error:
                _log_close_failure(close_error)  # the error in flight wins over a failing close
            if self._stop_requested and isinstance(error, Exception):
                return  # the read failed because aclose() closed the stream under it
            raise
        await self._release()

    async def _release(self, skip_iterator: bool = False) -> None:
        """Closes the upstream objects not closed yet: all of them, even if one fails (the
        first error is raised after)."""
        failure: Optional[Exception] = None
        for closeable in self._to_close(self._iterator, skip_iterator):
            # openai's AsyncStream has both; aclose is the async-iterator protocol's name.
            close = getattr(closeable, "aclose", None) or getattr(closeable, "close", None)
            if callable(close):
                try:
                    result = close()
                    if inspect.isawaitable(result):
                        await result
                except Exception as error:
                    failure = failure or error
        if failure is not None:
            raise failure

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        item, _ = await self._items.__anext__()
        return item

    async def text_deltas(self) -> AsyncIterator[str]:
        """The answer text of each item (items without any are skipped), for relaying text
        rather than SDK objects, e.g. as server-sent events."""
        async for _, content in self._items:
            if content:
                yield content

    async def aclose(self) -> None:
        """Stops reading and closes the upstream (once, however often this is called).

        From another task while the consumer awaits the upstream, it closes the stream object
        at once (so the model stops) and the consumer's iteration ends after that read.
        """
        if isinstance(self._items, AsyncGeneratorType) and self._items.ag_running:
            self._stop_from_outside()
            await self._release(skip_iterator=True)
            return
        await self._items.aclose()
        if self._status == "streaming":
            self._status = "cancelled"
        await self._release()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        await self.aclose()


def _log_close_failure(error: Exception) -> None:
    # Imported here: `import loopbreak` stays free of logging, and this runs only on a failure.
    import logging

    logging.getLogger("loopbreak.streaming").warning(
        "closing the upstream failed while the stream was stopping: %r", error
    )


def _release_quietly(release: Callable[[], None]) -> None:
    try:
        release()
    except Exception as error:
        _log_close_failure(error)


def _text_pieces(delta: str) -> tuple[Piece]:
    if not isinstance(delta, str):
        raise TypeError(
            f"a guarded stream must yield str deltas, got {type(delta).__name__}"
            " (decode bytes first; for OpenAI SDK streams use loopbreak.integrations.openai)"
        )
    return (Piece(CONTENT, delta),)


def _reject_str(deltas: object) -> None:
    if isinstance(deltas, str):
        raise TypeError(
            "expected a stream of str deltas, got one str: use loopbreak.scan() or trim()"
        )


def guard(
    deltas: Iterable[str],
    *,
    on_degeneration: OnDegeneration = "raise",
    rules: Optional[Rules] = None,
    keep: int = DEFAULT_KEEP,
) -> Guarded[str]:
    """Guards a sync stream of text deltas; see ``Guarded``.

    ``on_degeneration="raise"`` raises ``DegenerationDetected`` where the stream loops,
    ``"stop"`` just ends it. ``keep`` copies of the looping block stay in ``persist_text``.
    Raises ``TypeError`` for a ``str`` (a whole text, not a stream) or a non-str delta.
    """
    _reject_str(deltas)
    return Guarded(deltas, _text_pieces, on_degeneration=on_degeneration, rules=rules, keep=keep)


def aguard(
    deltas: AsyncIterable[str],
    *,
    on_degeneration: OnDegeneration = "raise",
    rules: Optional[Rules] = None,
    keep: int = DEFAULT_KEEP,
) -> AsyncGuarded[str]:
    """Guards an async stream of text deltas; see ``AsyncGuarded`` and ``guard``."""
    _reject_str(deltas)
    return AsyncGuarded(
        deltas, _text_pieces, on_degeneration=on_degeneration, rules=rules, keep=keep
    )
