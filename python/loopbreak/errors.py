"""Every error loopbreak raises on purpose, in one hierarchy.

::

    LoopbreakError                      base of them all
    ├── DegenerationDetected            a stream guard stopped a stream that started looping
    ├── PolicyMisuse (RuntimeError)     a RunPolicy was asked to check a step it cannot
    │   ├── CheckAfterStop              ... after it stopped the run
    │   └── StepNotStarted              ... before ``before_step``, or after ``after_step``
    ├── RunNotFound (LookupError)       an agent run the store has no receipt of
    │   └── TurnNotFound                a saved model turn that is not there
    ├── StoreError                      a database loopbreak cannot use
    ├── ScanError                       ``loopbreak scan`` could not scan a file or a value
    └── MissingExtra (ModuleNotFoundError)  an optional library is not installed

Each error that replaces a builtin also derives from it, so ``except RuntimeError`` or ``except
LookupError`` code keeps working. Bad arguments are not ``LoopbreakError``: a wrong type raises
``TypeError`` and a bad value ``ValueError``, each naming the argument. Errors of the libraries
loopbreak wraps (an upstream's timeout, a lost connection) pass through unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from loopbreak._core import Finding
    from loopbreak.agent.decision import Decision
    from loopbreak.streaming.guard import Degeneration


class LoopbreakError(Exception):
    """Base of the errors loopbreak raises on purpose (see the module docstring)."""


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


class PolicyMisuse(LoopbreakError, RuntimeError):
    """A ``RunPolicy`` check was called when the run cannot take it: a bug in the calling loop."""


class CheckAfterStop(PolicyMisuse):
    """A ``RunPolicy`` check was called after the policy stopped the run: a stopped run is over,
    and a new run needs a new ``RunPolicy``. ``stop`` is the decision that ended it."""

    def __init__(self, stop: Decision) -> None:
        super().__init__(
            f"run {stop.run_id} already stopped at step {stop.step} ({stop.reason.value}); "
            "start a new RunPolicy for a new run"
        )
        self.stop = stop


class StepNotStarted(PolicyMisuse):
    """``check_tool_call`` or ``after_step`` was called with no step in progress: before the
    first ``before_step``, or after ``after_step`` ended the step."""


class RunNotFound(LoopbreakError, LookupError):
    """No agent run in the store has the id asked for (``loopbreak runs show RUN``)."""


class TurnNotFound(RunNotFound):
    """No saved model turn has the id asked for (``loopbreak.streaming.persist.load_turn``).

    A ``RunNotFound`` only because ``load_turn`` was ``load_run`` and raised that: code written
    then, ``except RunNotFound``, keeps catching it."""


class StoreError(LoopbreakError):
    """The database cannot be used by this version of loopbreak: its schema is newer, or a table
    of the same name is not loopbreak's."""


class ScanError(LoopbreakError):
    """Something ``loopbreak scan`` could not scan: reported with its file (and line or row),
    counted, and the scan goes on."""


class MissingExtra(LoopbreakError, ModuleNotFoundError):
    """A module that needs an optional library was used without it; the message names the
    extra that installs it (``pip install 'loopbreak[NAME]'``), ``name`` the missing module."""
