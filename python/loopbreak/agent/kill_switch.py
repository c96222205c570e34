"""The kill switch: one emergency stop for every run, separate from each run's own limits.

Every ``RunPolicy`` asks its switch ``engaged()`` before each step and each tool call; while it
is engaged, the check stops the run with reason ``kill_switch`` (an audit event like any stop)
and the run's receipt is BOUNDED_STOP. A run that is already stopped is not touched, and a new
run stops at its first check, until the switch is released.

``KillSwitch`` is a file: engaged while the file exists, so an operator flips it with a shell
during an incident, from any process that can write the path:

    touch /var/run/agent.kill    # every run checking this path stops at its next check
    rm /var/run/agent.kill       # new runs go again

Its reach is every process that checks the same path: the workers of one host, or of a fleet
sharing a volume; a worker given its own path can be stopped alone. ``LOOPBREAK_KILL_SWITCH``
names the path for every ``RunPolicy`` created without a switch of its own, so a deployment
sets it once for all its workers. Checking costs one ``stat`` call.

An emergency stop fails safe: only "no such file" releases it. A path the worker cannot check
(a folder it may not search, a symlink loop, an I/O error) engages the switch, and the switch
logs why once (logger ``loopbreak.agent``, WARNING) until the path reads clearly again.

Another source (a row in a database, a flag service) plugs in as any object with an
``engaged() -> bool`` method (the ``Switch`` protocol), without changing ``RunPolicy``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Optional, Protocol, Union, runtime_checkable

KILL_SWITCH_ENV = "LOOPBREAK_KILL_SWITCH"


@runtime_checkable
class Switch(Protocol):
    """What ``RunPolicy`` asks before each step and tool call. ``engaged`` is called often (a
    few times per step, in every run), so it must be cheap, and must not raise."""

    def engaged(self) -> bool: ...


class KillSwitch:
    """Engaged while a file exists at ``path``. The file's content is not read: write a note
    into it for the people handling the incident (``echo "bad deploy" > PATH``)."""

    def __init__(self, path: Union[str, os.PathLike[str]]) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        if not os.fspath(path).strip():
            raise ValueError("path must not be empty")
        self.path = Path(path)
        # The error last logged, so a switch stuck on one error says so once, not every check.
        self._logged: Optional[str] = None

    @classmethod
    def from_env(cls) -> Optional[KillSwitch]:
        """The switch at the path ``LOOPBREAK_KILL_SWITCH`` names, or None when it is unset or
        blank."""
        path = os.environ.get(KILL_SWITCH_ENV, "").strip()
        return cls(path) if path else None

    def engaged(self) -> bool:
        """Whether the file exists (one ``stat``); a path that cannot be checked for any reason
        other than "no such file" counts as engaged."""
        try:
            os.stat(self.path)
        except FileNotFoundError:
            self._logged = None
            return False
        except OSError as error:
            why = error.strerror or str(error)
            if why != self._logged:
                self._logged = why
                logging.getLogger("loopbreak.agent").warning(
                    "kill switch %s: cannot tell whether it is engaged (%s); treated as engaged",
                    self.path,
                    why,
                )
            return True
        self._logged = None
        return True

    def engage(self) -> None:
        """Creates the file (its directory must exist): the same as ``touch PATH``."""
        self.path.touch()

    def release(self) -> None:
        """Removes the file, if it exists: the same as ``rm -f PATH``."""
        self.path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"KillSwitch({str(self.path)!r})"
