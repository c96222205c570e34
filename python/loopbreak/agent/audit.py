"""The audit log: every decision a run's policy makes (allow, warn, stop), in order.

An ``AuditLog`` keeps each decision in memory and writes it to its sinks: a JSON lines file,
an SQLite table, Python ``logging``. Stop decisions are never dropped:

- the decision is kept in memory (``AuditLog.events``) before any sink is written;
- every sink is written even if an earlier one fails, and the first failure is then raised,
  so a broken sink neither hides a stop from the others nor fails silently;
- the JSON lines sink flushes every line and fsyncs stops; the SQLite sink commits each stop
  before ``record`` returns (with the decisions queued before it), so a stop survives the process
  dying right after it;
- the logging sink logs stops at WARNING, which the default logging configuration shows.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from typing import Any, Callable, Optional, Protocol, Union

from loopbreak._text import escape_surrogates
from loopbreak.agent.decision import Decision, DecisionKind
from loopbreak.store import Database, check_database, utc_now


class AuditSink(Protocol):
    """Somewhere decisions are written."""

    def write(self, decision: Decision) -> None: ...

    def close(self) -> None: ...


class JsonLinesSink:
    """Appends one JSON object per decision to a file: ``Decision.to_dict()`` plus
    ``recorded_at`` (UTC wall-clock time of the write)."""

    def __init__(self, path: Union[str, os.PathLike[str]]) -> None:
        # Open for the sink's life, appended to by every write and closed by close().
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, decision: Decision) -> None:
        """Appends the decision as one JSON line and flushes it; a stop is also fsynced."""
        line = json.dumps({**decision.to_dict(), "recorded_at": utc_now()}, ensure_ascii=False)
        self._file.write(escape_surrogates(line) + "\n")
        self._file.flush()
        if decision.stopped:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Closes the file."""
        self._file.close()


class SqliteSink:
    """Inserts one row per decision into the store's ``audit_events`` table (``db`` is a
    ``loopbreak.store.Database``). A stop is committed at once, with the decisions before it;
    allow and warn decisions are queued and committed in batches (``Database.queue``: within
    ``BATCH_ROWS`` decisions or ``BATCH_SECONDS``, and at the latest when the sink or the
    database is closed or the interpreter exits). Committing also commits whatever an adopted
    connection had pending. Columns are the keys of ``Decision.to_dict()`` plus
    ``recorded_at``; ``check`` and ``limit``, SQL keywords, are stored as ``check_name`` and
    ``limit_value``. Closing the sink commits its queued decisions and leaves the database open:
    it belongs to the caller.
    """

    def __init__(self, db: Database) -> None:
        self._db = check_database(db)

    def write(self, decision: Decision) -> None:
        """Commits a stop at once (with the decisions queued before it); queues allow and warn."""
        write = self._db.insert if decision.stopped else self._db.queue
        write("audit_events", self.row(decision))

    @staticmethod
    def row(decision: Decision) -> dict[str, Any]:
        """The ``audit_events`` row of ``decision``."""
        event = decision.to_dict()
        return {
            "run_id": event["run_id"],
            "seq": event["seq"],
            "step": event["step"],
            "decision": event["decision"],
            "reason": event["reason"],
            "check_name": event["check"],
            "value": event["value"],
            "limit_value": event["limit"],
            "action_key": event["action_key"],
            "elapsed": event["elapsed"],
            "message": event["message"],
            "recorded_at": utc_now(),
        }

    def close(self) -> None:
        """Commits the queued decisions; the database stays open (it belongs to the caller)."""
        self._db.flush()


class LoggingSink:
    """Logs each decision to ``logger`` (default ``loopbreak.agent.audit``), with the decision's dict
    as ``record.loopbreak`` for structured handlers.

    Levels: allow DEBUG (a few per step would drown the log), warn INFO, stop WARNING (shown by
    the default logging configuration).
    """

    _LEVELS = {
        DecisionKind.ALLOW: logging.DEBUG,
        DecisionKind.WARN: logging.INFO,
        DecisionKind.STOP: logging.WARNING,
    }

    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        self.logger = logger if logger is not None else logging.getLogger("loopbreak.agent.audit")

    def write(self, decision: Decision) -> None:
        """Logs the decision at the level of its kind."""
        self.logger.log(
            self._LEVELS[decision.kind],
            "run %s step %d: %s (%s: %s %s / %s)%s",
            decision.run_id,
            decision.step,
            decision.kind.value,
            decision.reason.value,
            decision.check.value,
            decision.value,
            decision.limit,
            f" action {decision.action_key}" if decision.action_key is not None else "",
            extra={"loopbreak": decision.to_dict()},
        )

    def close(self) -> None:
        """Nothing to release: the logger belongs to the application."""


class AuditLog:
    """Every decision of a run, in order, kept in memory and written to ``sinks``."""

    def __init__(self, sinks: Iterable[AuditSink] = ()) -> None:
        self._sinks = tuple(sinks)
        self._events: list[Decision] = []

    @property
    def events(self) -> tuple[Decision, ...]:
        """The decisions recorded so far, oldest first."""
        return tuple(self._events)

    def record(self, decision: Decision) -> None:
        """Keeps ``decision`` and writes it to every sink; raises the first sink error, after
        all sinks were tried."""
        if not isinstance(decision, Decision):
            raise TypeError(f"decision must be a Decision, got {type(decision).__name__}")
        self._events.append(decision)
        self._each_sink(lambda sink: sink.write(decision))

    def close(self) -> None:
        """Closes every sink (files and connections opened by the sinks)."""
        self._each_sink(lambda sink: sink.close())

    def _each_sink(self, action: Callable[[AuditSink], None]) -> None:
        errors: list[Exception] = []
        for sink in self._sinks:
            try:
                action(sink)
            except Exception as error:  # raised below, once every sink has had its turn
                errors.append(error)
        if errors:
            raise errors[0]
