"""Saving what a guarded stream produced: one row per model turn in the store's ``runs`` table.

A row holds the text to keep (``persist_text``: a loop is cut to its first copies plus a
marker, so it is never replayed to the model or shown at full length), the status, the
stop reason and the finding as JSON. Every saver takes a ``loopbreak.store.Database``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union

from loopbreak.errors import DegenerationDetected, RunNotFound
from loopbreak.store import Database, check_database, utc_now
from loopbreak.streaming.guard import AsyncGuarded, Guarded

NO_TEXT_MARKER = "(No answer was written in this turn; the work may be incomplete.)"
"""Stored instead of an empty (or whitespace-only) text, so a turn that produced nothing reads
as unfinished rather than as an empty answer. Pass ``empty_text=`` to say something else, e.g.
"(The step limit was reached before a final answer was written; the work may be incomplete.)"."""


@dataclass(frozen=True)
class Run:
    """One row of the ``runs`` table."""

    id: int
    status: str
    error: Optional[str]
    text: str
    finding: Optional[dict[str, Any]]
    created_at: str


def save_run(
    db: Database,
    *,
    status: str,
    text: str,
    error: Optional[str] = None,
    finding: Optional[Mapping[str, Any]] = None,
    empty_text: str = NO_TEXT_MARKER,
) -> int:
    """Inserts one run and returns its id. ``text`` is stored as given (pass the trimmed
    text), or ``empty_text`` when it has no visible character."""
    check_database(db)
    for name, value in (("status", status), ("text", text), ("empty_text", empty_text)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if not status:
        raise ValueError("status must not be empty")
    return db.insert(
        "runs",
        {
            "status": status,
            "error": error,
            "text": text if text.strip() else empty_text,
            "finding": None if finding is None else json.dumps(dict(finding), ensure_ascii=False),
            "created_at": utc_now(),
        },
    )


def save_result(
    db: Database,
    result: Union[Guarded[Any], AsyncGuarded[Any], DegenerationDetected],
    *,
    empty_text: str = NO_TEXT_MARKER,
) -> int:
    """Saves how a guarded stream ended: its ``persist_text``, status, reason and finding.

    Takes the guard (after the stream ended, however it ended) or the ``DegenerationDetected``
    it raised. Raises ``ValueError`` for a guard that is still streaming.
    """
    if isinstance(result, DegenerationDetected):
        return save_run(
            db,
            status="degenerate",
            text=result.persist_text,
            error=result.reason,
            finding=result.degeneration.to_dict(),
            empty_text=empty_text,
        )
    if not isinstance(result, (Guarded, AsyncGuarded)):
        raise TypeError(f"expected a guard or DegenerationDetected, not {type(result).__name__}")
    if result.status == "streaming":
        raise ValueError("the stream has not ended yet: read it to the end or close it first")
    degeneration = result.degeneration
    return save_run(
        db,
        status=result.status,
        text=result.persist_text,
        error=None if result.status == "ok" else result.reason,
        finding=None if degeneration is None else degeneration.to_dict(),
        empty_text=empty_text,
    )


def load_run(db: Database, run_id: int) -> Run:
    """Reads one run back; raises ``RunNotFound`` if there is none with that id."""
    check_database(db)
    row = db.connection.execute(
        "SELECT id, status, error, text, finding, created_at FROM runs WHERE id = ?", (run_id,)
    ).fetchone()
    if row is None:
        raise RunNotFound(f"no run with id {run_id}")
    run_id, status, error, text, finding_json, created_at = row
    finding = None if finding_json is None else json.loads(finding_json)
    return Run(run_id, status, error, text, finding, created_at)

