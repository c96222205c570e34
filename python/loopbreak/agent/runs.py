"""The runs of a store as an operator reads them: each run's current receipt (newest first), and
one run's audit decisions in order beside its receipt.

A run here is a run id with a receipt in the ``receipts`` table; its newest receipt is its
current one (a WAITING run resumed later has several). Reading never writes: the store is
opened with ``loopbreak.store.open_read_only``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Optional

from loopbreak.errors import RunNotFound


@dataclass(frozen=True)
class RunSummary:
    """One row of ``loopbreak runs``: a run's current receipt, with the usage it recorded
    (``None`` where the receipt has no usage: evidence recorded without a policy)."""

    run_id: str
    ended_at: str
    state: str
    reason: str
    steps: Optional[int]
    tool_calls: Optional[int]
    cost: Optional[float]
    next_action: str

    @classmethod
    def from_row(cls, run_id: str, created_at: str, receipt_json: str) -> RunSummary:
        receipt = json.loads(receipt_json)
        usage: Mapping[str, Any] = receipt.get("usage") or {}
        return cls(
            run_id=run_id,
            ended_at=created_at,
            state=receipt["state"],
            reason=receipt["reason"],
            steps=usage.get("steps"),
            tool_calls=usage.get("tool_calls"),
            cost=usage.get("cost"),
            next_action=receipt["next_action"],
        )

    def to_dict(self) -> dict[str, Any]:
        """The row as plain values, for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class RunFilter:
    """Which runs to list; ``None`` keeps every run."""

    state: Optional[str] = None
    reason: Optional[str] = None
    since: Optional[datetime] = None  # aware, compared with the receipt's time


def list_runs(connection: sqlite3.Connection, where: RunFilter) -> list[RunSummary]:
    """The current receipt of every run that ``where`` keeps, newest first."""
    # Receipt times are ISO 8601 in UTC with milliseconds (loopbreak.store), so they compare
    # as strings once the cutoff is written the same way.
    clauses, values = [], []
    if where.state is not None:
        clauses.append("state = ?")
        values.append(where.state)
    if where.reason is not None:
        clauses.append("reason = ?")
        values.append(where.reason)
    if where.since is not None:
        clauses.append("created_at >= ?")
        values.append(_stored_time(where.since))
    filters = "".join(f" AND {clause}" for clause in clauses)
    rows = connection.execute(
        "SELECT run_id, created_at, receipt FROM receipts"
        " WHERE id IN (SELECT MAX(id) FROM receipts GROUP BY run_id)"
        f"{filters} ORDER BY id DESC",
        values,
    )
    return [RunSummary.from_row(*row) for row in rows]


def run_detail(connection: sqlite3.Connection, run_id: str) -> dict[str, Any]:
    """One run: its current receipt (``Receipt.to_dict()`` as stored, with ``ended_at``) and
    every audit decision recorded for it, in the order recorded (``Decision.to_dict()`` keys
    plus ``recorded_at``). Raises ``RunNotFound`` if no receipt has that run id."""
    row = connection.execute(
        "SELECT created_at, receipt FROM receipts WHERE run_id = ? ORDER BY id DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    if row is None:
        raise RunNotFound(f"no run {run_id!r} in the database")
    created_at, receipt_json = row
    decisions = connection.execute(
        "SELECT seq, step, decision, reason, check_name, value, limit_value, action_key,"
        " elapsed, message, recorded_at FROM audit_events WHERE run_id = ? ORDER BY id",
        (run_id,),
    )
    keys = (
        "seq",
        "step",
        "decision",
        "reason",
        "check",
        "value",
        "limit",
        "action_key",
        "elapsed",
        "message",
        "recorded_at",
    )
    return {
        "receipt": {**json.loads(receipt_json), "ended_at": created_at},
        "decisions": [dict(zip(keys, decision)) for decision in decisions],
    }


def _stored_time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")
