"""Audit decisions per second written to one SQLite database by 1 and by 8 processes at once.

    python benches/audit_writes.py               # 3 s per setting
    python benches/audit_writes.py --seconds 1   # a quicker run

Each process records runs of ``RUN_DECISIONS`` decisions (allows, the last one a stop) through
``AuditLog([SqliteSink(Database(path))])`` until the time is up, then closes its database; the
floor is the same with every decision committed on its own (the sink before batching). The
parent then counts the rows: every decision a process recorded must be in the table.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from loopbreak.agent.audit import AuditLog, SqliteSink
from loopbreak.agent.decision import Check, Decision, DecisionKind, Reason
from loopbreak.store import Database

RUN_DECISIONS = 50
"""Decisions per run: a run of 16 steps makes about 50 (a step check, a tool-call check and a
progress check per step); the last one stops it."""


def decision(run_id: str, seq: int) -> Decision:
    stop = seq == RUN_DECISIONS - 1
    return Decision(
        run_id=run_id,
        seq=seq,
        step=seq // 3,
        kind=DecisionKind.STOP if stop else DecisionKind.ALLOW,
        reason=Reason.MAX_STEPS if stop else Reason.WITHIN_LIMITS,
        check=Check.STEPS,
        value=seq // 3,
        limit=RUN_DECISIONS // 3,
        action_key=None,
        elapsed=0.0,
        message="The run stopped after reaching its step limit." if stop else None,
    )


class CommitEach:
    """The audit sink as it was: every decision inserted and committed on its own, the floor
    that batching is measured against."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._rows = SqliteSink(db)

    def write(self, decision: Decision) -> None:
        self._db.insert("audit_events", self._rows.row(decision))

    def close(self) -> None:
        pass


def write_for(
    path: str, worker: int, seconds: float, batched: bool, ready: Any, results: Any
) -> None:
    """Records decisions for ``seconds`` once every process is ready; puts (decisions, seconds)
    on ``results``."""
    made = 0
    with Database(path) as db:
        audit = AuditLog([SqliteSink(db) if batched else CommitEach(db)])
        ready.wait()
        start = time.perf_counter()
        run = 0
        while time.perf_counter() - start < seconds:
            run_id = f"w{worker}-r{run}"
            for seq in range(RUN_DECISIONS):
                audit.record(decision(run_id, seq))
            made += RUN_DECISIONS
            run += 1
        audit.close()
        end = time.perf_counter()
    results.put((made, end - start))


def measure(processes: int, seconds: float, batched: bool = True) -> tuple[float, int, int]:
    """Decisions per second over all processes, decisions recorded, rows stored."""
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "audit.db")
        Database(path).close()  # the tables exist before the writers race
        ready, results = context.Barrier(processes), context.Queue()
        workers = [
            context.Process(target=write_for, args=(path, i, seconds, batched, ready, results))
            for i in range(processes)
        ]
        for worker in workers:
            worker.start()
        done = [results.get() for _ in workers]
        for worker in workers:
            worker.join()
            if worker.exitcode:
                sys.exit(f"a writer failed (exit status {worker.exitcode})")
        with sqlite3.connect(path) as connection:
            (stored,) = connection.execute("SELECT count(*) FROM audit_events").fetchone()
    made = sum(count for count, _ in done)
    # Each process's own rate, summed: the processes start together at the barrier.
    return sum(count / elapsed for count, elapsed in done), made, stored


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    print(f"{'processes':>10}{'sink':>14}{'decisions/s':>14}{'recorded':>12}{'stored':>12}")
    for processes in (1, 8):
        for batched in (False, True):
            rate, made, stored = measure(processes, args.seconds, batched)
            sink = "batched" if batched else "commit each"
            print(f"{processes:>10}{sink:>14}{rate:>14,.0f}{made:>12,}{stored:>12,}")
            if stored != made:
                sys.exit(f"lost {made - stored} decisions")


if __name__ == "__main__":
    main()
