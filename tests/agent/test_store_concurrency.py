"""One SQLite store, many writers: 8 processes write saved turns, audit decisions and receipts to
one database at once for a few seconds. No row may be lost and no writer may see ``database is
locked`` (the WAL journal, the busy timeout and the batched audit commits of loopbreak.store)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from loopbreak import guard
from loopbreak.agent.audit import AuditLog, SqliteSink
from loopbreak.agent.policy import PolicyConfig, RunPolicy
from loopbreak.agent.receipt import RunEvidence, save_receipt
from loopbreak.store import Database
from loopbreak.streaming.persist import save_result

WRITERS = 8
SECONDS = 3.0
# Each writer stops after this many runs even if time is left: the test stays bounded in rows.
MAX_RUNS = 400
# A clean answer and a looping one, in alternation: saved turns of both kinds.
CLEAN = ["The answer ", "is in the ", "second file.\n"]
LOOPING = ["Checking: "] + ["loadTools. "] * 60


def one_run(db: Database, audit: AuditLog, run_id: str, looping: bool) -> int:
    """A run of an agent: a few steps with a tool call each, a saved answer, a receipt.
    Returns the number of decisions made."""
    policy = RunPolicy(PolicyConfig(max_steps=3), run_id=run_id, audit=audit)
    evidence = RunEvidence(policy=policy)
    for step in range(4):  # the fourth step is refused: a stop decision
        if policy.before_step("prompt").decision.stopped:
            break
        policy.check_tool_call("read_file", {"path": f"{step}.py"})
        policy.after_step([f"read {step}.py"])
    guarded = guard(iter(LOOPING if looping else CLEAN), on_degeneration="stop")
    for _ in guarded:
        pass
    save_result(db, guarded)
    evidence.record_natural_finish()
    save_receipt(db, evidence.receipt())
    return len(audit.events)


def write(path: str, writer: int, ready: Any, results: Any) -> None:
    """Writes runs for SECONDS once every writer is ready; puts what it wrote (or the error)."""
    try:
        with Database(path) as db:
            ready.wait()
            start, runs, decisions = time.monotonic(), 0, 0
            while time.monotonic() - start < SECONDS and runs < MAX_RUNS:
                audit = AuditLog([SqliteSink(db)])
                looping = (writer + runs) % 2 == 1  # both kinds even if a writer makes one run
                made = one_run(db, audit, f"w{writer}-r{runs}", looping)
                audit.close()
                decisions += made
                runs += 1
        results.put((writer, runs, decisions, None))
    except Exception:  # the parent reports it: a child's traceback is not shown by pytest
        results.put((writer, 0, 0, traceback.format_exc()))


def test_eight_processes_write_one_database_without_losing_a_row(tmp_path: Path) -> None:
    path = str(tmp_path / "loopbreak.db")
    Database(path).close()
    context = multiprocessing.get_context("spawn")
    ready, results = context.Barrier(WRITERS), context.Queue()
    processes = [
        context.Process(target=write, args=(path, i, ready, results)) for i in range(WRITERS)
    ]
    for process in processes:
        process.start()
    try:
        done = [results.get(timeout=120) for _ in processes]
    finally:
        for process in processes:
            process.join(timeout=60)
    errors = [error for _, _, _, error in done if error is not None]
    assert errors == []
    assert all(process.exitcode == 0 for process in processes)
    runs = {writer: count for writer, count, _, _ in done}
    assert all(count > 0 for count in runs.values())
    with sqlite3.connect(path) as connection:
        stored_turns = connection.execute("SELECT count(*) FROM turns").fetchone()[0]
        receipts = connection.execute("SELECT run_id FROM receipts").fetchall()
        events = connection.execute("SELECT run_id, seq FROM audit_events ORDER BY id").fetchall()
        statuses = dict(connection.execute("SELECT status, count(*) FROM turns GROUP BY status"))
    assert stored_turns == sum(runs.values())  # one saved turn a run
    assert sorted(run_id for (run_id,) in receipts) == sorted(
        f"w{writer}-r{run}" for writer, count in runs.items() for run in range(count)
    )
    assert len(events) == sum(decisions for _, _, decisions, _ in done)
    # Each run's decisions are all there, and in the order they were made.
    by_run: dict[str, list[int]] = {}
    for run_id, seq in events:
        by_run.setdefault(run_id, []).append(seq)
    assert all(seqs == list(range(len(seqs))) for seqs in by_run.values())
    assert len(by_run) == len(receipts)
    assert set(statuses) == {"ok", "degenerate"}


def test_a_new_store_opened_while_another_connection_writes_to_it_waits(tmp_path: Path) -> None:
    # The file is not in WAL mode yet and another connection holds a write transaction (a server
    # that has just created its store and saves its first row): switching to WAL then fails at
    # once, with no busy wait, unless the switch is retried.
    path = tmp_path / "new.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("CREATE TABLE first_rows (x)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO first_rows VALUES (1)")
    opened: list[Database] = []
    opening = threading.Thread(target=lambda: opened.append(Database(path)))
    opening.start()
    time.sleep(0.3)
    writer.execute("COMMIT")
    opening.join(timeout=20)
    writer.close()
    [db] = opened
    assert db.connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.connection.execute("SELECT x FROM first_rows").fetchall() == [(1,)]
    db.close()
