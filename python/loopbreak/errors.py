"""The package's errors: every error loopbreak raises on purpose is a ``LoopbreakError``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from loopbreak._core import Finding
    from loopbreak.stream import Degeneration


class LoopbreakError(Exception):
    """Base of the errors loopbreak raises on purpose (bad input raises ``TypeError`` or
    ``ValueError`` instead)."""


class DegenerationDetected(LoopbreakError):
    """A stream guard stopped a stream because the output degenerated into a repetition loop.

    It is raised only by a guard, after the guard has stopped reading and closed the upstream,
    so it never means a user stop (that is ``GeneratorExit`` / ``asyncio.CancelledError``), a
    timeout or a lost connection (those are the upstream's own exceptions, passed on unchanged).
    ``reason`` (also ``str(err)``) starts with ``"Output degeneration detected"``.
    """

    def __init__(self, degeneration: Degeneration) -> None:
        super().__init__(degeneration.reason)
        self.degeneration = degeneration

    @property
    def finding(self) -> Finding:
        """The finding the guard stopped on."""
        return self.degeneration.finding

    @property
    def text(self) -> str:
        """The answer text read from the upstream, including the delta in which the rule held."""
        return self.degeneration.text

    @property
    def persist_text(self) -> str:
        """``text`` with the loop cut to its first copies plus a marker: what to save."""
        return self.degeneration.persist_text

    @property
    def reason(self) -> str:
        """Starts with ``"Output degeneration detected"``; says where and what repeated."""
        return self.degeneration.reason

    @property
    def source(self) -> str:
        """Which part of the output looped: ``"content"``, ``"reasoning"`` or a tool call's
        arguments."""
        return self.degeneration.source

    @property
    def tool_name(self) -> Optional[str]:
        """The tool whose arguments looped, when the loop was in a tool call."""
        return self.degeneration.tool_name
