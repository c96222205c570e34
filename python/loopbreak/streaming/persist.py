"""Saving what a guarded stream produced: one row per model turn in the store's ``turns`` table.

A row holds the text to keep (``persist_text``: a loop is cut to its first copies plus a
marker, so it is never replayed to the model or shown at full length), the status, the
stop reason and the finding as JSON. When the agent's run policy stopped the run in that turn,
``stop_message`` keeps the stop's one line for people (``Decision.message``): the app shows it
under the turn's text, and it is never part of the text replayed to the model. Every saver takes
a ``loopbreak.store.Database``.

A turn is one model answer; a run (``RunPolicy``, receipts, ``loopbreak runs``) is a whole agent
run of many turns. ``Run``, ``save_run`` and ``load_run``, this module's names for a turn before
that, are deprecated aliases of ``Turn``, ``save_turn`` and ``load_turn``: they still work, with a
``DeprecationWarning``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Union

from loopbreak.errors import DegenerationDetected, TurnNotFound
from loopbreak.store import Database, check_database, utc_now
from loopbreak.streaming.guard import AsyncGuarded, Guarded

NO_TEXT_MARKER = "(No answer was written in this turn; the work may be incomplete.)"
"""Stored instead of an empty (or whitespace-only) text, so a turn that produced nothing reads
as unfinished rather than as an empty answer. Pass ``empty_text=`` to say something else, e.g.
``empty_text=decision.message`` when the run policy stopped the run in a turn that wrote
nothing."""


@dataclass(frozen=True)
class Turn:
    """One row of the ``turns`` table: a saved model turn."""

    id: int
    status: str
    error: Optional[str]
    text: str
    finding: Optional[dict[str, Any]]
    stop_message: Optional[str]
    created_at: str


def save_turn(
    db: Database,
    *,
    status: str,
    text: str,
    error: Optional[str] = None,
    finding: Optional[Mapping[str, Any]] = None,
    empty_text: str = NO_TEXT_MARKER,
    stop_message: Optional[str] = None,
) -> int:
    """Inserts one turn and returns its id. ``text`` is stored as given (pass the trimmed
    text), or ``empty_text`` when it has no visible character."""
    check_database(db)
    for name, value in (("status", status), ("text", text), ("empty_text", empty_text)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if not status:
        raise ValueError("status must not be empty")
    if stop_message is not None and not isinstance(stop_message, str):
        raise TypeError(f"stop_message must be a str or None, not {type(stop_message).__name__}")
    return db.insert(
        "turns",
        {
            "status": status,
            "error": error,
            "text": text if text.strip() else empty_text,
            "finding": None if finding is None else json.dumps(dict(finding), ensure_ascii=False),
            "stop_message": stop_message,
            "created_at": utc_now(),
        },
    )


def save_result(
    db: Database,
    result: Union[Guarded[Any], AsyncGuarded[Any], DegenerationDetected],
    *,
    empty_text: str = NO_TEXT_MARKER,
    stop_message: Optional[str] = None,
) -> int:
    """Saves how a guarded stream ended: its ``persist_text``, status, reason and finding.

    Takes the guard (after the stream ended, however it ended) or the ``DegenerationDetected``
    it raised. Raises ``ValueError`` for a guard that is still streaming. ``empty_text`` and
    ``stop_message`` are as for ``save_turn``: e.g. ``stop_message=decision.message`` when the
    policy stopped the run in this turn.
    """
    if isinstance(result, DegenerationDetected):
        return save_turn(
            db,
            status="degenerate",
            text=result.persist_text,
            error=result.reason,
            finding=result.degeneration.to_dict(),
            empty_text=empty_text,
            stop_message=stop_message,
        )
    if not isinstance(result, (Guarded, AsyncGuarded)):
        raise TypeError(f"expected a guard or DegenerationDetected, not {type(result).__name__}")
    if result.status == "streaming":
        raise ValueError("the stream has not ended yet: read it to the end or close it first")
    degeneration = result.degeneration
    return save_turn(
        db,
        status=result.status,
        text=result.persist_text,
        error=None if result.status == "ok" else result.reason,
        finding=None if degeneration is None else degeneration.to_dict(),
        empty_text=empty_text,
        stop_message=stop_message,
    )


def load_turn(db: Database, turn_id: int) -> Turn:
    """Reads one turn back; raises ``TurnNotFound`` if there is none with that id."""
    check_database(db)
    row = db.connection.execute(
        "SELECT id, status, error, text, finding, stop_message, created_at FROM turns WHERE id = ?",
        (turn_id,),
    ).fetchone()
    if row is None:
        raise TurnNotFound(f"no turn with id {turn_id}")
    turn_id, status, error, text, finding_json, stop_message, created_at = row
    finding = None if finding_json is None else json.loads(finding_json)
    return Turn(turn_id, status, error, text, finding, stop_message, created_at)


# The names of a turn before it was called one (see the module docstring): old name -> new.
_DEPRECATED = {"Run": "Turn", "save_run": "save_turn", "load_run": "load_turn"}

if TYPE_CHECKING:  # at run time they come from __getattr__, which warns
    Run = Turn
    save_run = save_turn
    load_run = load_turn


def __getattr__(name: str) -> Any:
    """``Run``, ``save_run`` and ``load_run``: the new name's object, with a
    ``DeprecationWarning`` naming it."""
    if name not in _DEPRECATED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    new = _DEPRECATED[name]
    warnings.warn(
        f"loopbreak.streaming.persist.{name} is deprecated: use {new}",
        DeprecationWarning,
        stacklevel=2,
    )
    return globals()[new]
