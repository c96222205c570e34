"""The audit log: every decision, in order, in memory and in each sink; stops never dropped."""

from __future__ import annotations

import gc
import json
import logging
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from loopbreak import guard
from loopbreak.agent.audit import AuditLog, JsonLinesSink, LoggingSink, SqliteSink
from loopbreak.agent.decision import Check, Decision, DecisionKind, Reason
from loopbreak.agent.policy import PolicyConfig, RunPolicy
from loopbreak.store import BATCH_ROWS, BATCH_SECONDS, TABLES, Database
from loopbreak.streaming.persist import save_result
from support.fakes import FakeClock


def scripted_run(audit: AuditLog, run_id: str = "run-a") -> list[Decision]:
    """A short run that allows, warns and stops: the decisions in the order they were made."""
    policy = RunPolicy(
        PolicyConfig(max_steps=4, warning_steps=1, final_step_lockdown=False),
        run_id=run_id,
        audit=audit,
        clock=FakeClock(tick=0.5),
    )
    made: list[Decision] = []
    for path in ["a.py", "b.py", "c.py", "d.py"]:
        made.append(policy.before_step("prompt").decision)
        made.append(policy.check_tool_call("read_file", {"path": path}))
        made.append(policy.after_step([f"read {path}"]))
    made.append(policy.before_step("prompt").decision)  # step 4: the step limit
    return made


def test_every_decision_is_an_event_in_order() -> None:
    audit = AuditLog()
    made = scripted_run(audit)
    assert list(audit.events) == made
    assert [event.seq for event in audit.events] == list(range(13))
    assert [(event.step, event.check, event.kind) for event in audit.events] == [
        (0, Check.STEPS, DecisionKind.ALLOW),
        (0, Check.REPEATED_ACTION, DecisionKind.ALLOW),
        (0, Check.PROGRESS, DecisionKind.ALLOW),
        (1, Check.STEPS, DecisionKind.ALLOW),
        (1, Check.REPEATED_ACTION, DecisionKind.ALLOW),
        (1, Check.PROGRESS, DecisionKind.ALLOW),
        (2, Check.STEPS, DecisionKind.WARN),
        (2, Check.REPEATED_ACTION, DecisionKind.ALLOW),
        (2, Check.PROGRESS, DecisionKind.ALLOW),
        (3, Check.STEPS, DecisionKind.WARN),
        (3, Check.REPEATED_ACTION, DecisionKind.ALLOW),
        (3, Check.PROGRESS, DecisionKind.ALLOW),
        (4, Check.STEPS, DecisionKind.STOP),
    ]
    assert [event.reason for event in audit.events if event.kind is not DecisionKind.ALLOW] == [
        Reason.STEPS_RUNNING_OUT,
        Reason.FINAL_STEP,
        Reason.MAX_STEPS,
    ]
    elapsed = [event.elapsed for event in audit.events]
    assert elapsed == sorted(elapsed) and len(set(elapsed)) == len(elapsed)


def test_the_json_lines_file_holds_every_event_in_order(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    audit = AuditLog([JsonLinesSink(path)])
    made = scripted_run(audit)
    audit.close()
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [{k: v for k, v in line.items() if k != "recorded_at"} for line in lines] == [
        decision.to_dict() for decision in made
    ]
    assert all(line["recorded_at"].endswith("+00:00") for line in lines)
    assert lines[-1]["decision"] == "stop" and lines[-1]["reason"] == "max_steps"


def test_the_json_lines_file_appends_across_runs(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    for run_id in ["first", "second"]:
        audit = AuditLog([JsonLinesSink(path)])
        scripted_run(audit, run_id)
        audit.close()
    runs = [json.loads(line)["run_id"] for line in path.read_text(encoding="utf-8").splitlines()]
    assert runs == ["first"] * 13 + ["second"] * 13


def test_stops_are_fsynced_and_other_events_only_flushed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    sink = JsonLinesSink(tmp_path / "audit.jsonl")
    audit = AuditLog([sink])
    policy = RunPolicy(PolicyConfig(max_steps=1), audit=audit)
    policy.before_step("")
    assert synced == []
    # Flushed already: another reader sees the line before the sink is closed.
    assert len((tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()) == 1
    policy.before_step("")
    assert len(synced) == 1
    audit.close()


def rows(connection: sqlite3.Connection) -> list[dict[str, Any]]:
    connection.row_factory = sqlite3.Row
    found = connection.execute("SELECT * FROM audit_events ORDER BY id").fetchall()
    return [dict(row) for row in found]


def test_the_sqlite_table_holds_every_event_in_order(tmp_path: Path) -> None:
    path = tmp_path / "loopbreak.db"
    with Database(path) as db:
        audit = AuditLog([SqliteSink(db)])
        made = scripted_run(audit)
        audit.close()
    with sqlite3.connect(path) as connection:
        stored = rows(connection)
    assert len(stored) == len(made)
    for row, decision in zip(stored, made):
        expected = decision.to_dict()
        expected["check_name"] = expected.pop("check")
        expected["limit_value"] = expected.pop("limit")
        assert {key: row[key] for key in expected} == expected
        assert row["recorded_at"]


def test_the_sqlite_sink_shares_the_callers_database(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "app.db")
    connection.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, text TEXT)")
    connection.execute("INSERT INTO messages (text) VALUES ('kept')")
    connection.commit()
    db = Database(connection)
    audit = AuditLog([SqliteSink(db)])
    scripted_run(audit)
    audit.close()
    db.close()  # must not close the caller's connection
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    assert {table for table in tables if not table.startswith("sqlite_")} == {
        "messages",
        *TABLES,
    }
    assert connection.execute("SELECT text FROM messages").fetchall() == [("kept",)]
    assert len(rows(connection)) == 13
    connection.close()


def committed(path: Path) -> list[tuple[str, int, str]]:
    """(run_id, seq, decision) of every committed row, as another process would read them."""
    with sqlite3.connect(path) as connection:
        query = "SELECT run_id, seq, decision FROM audit_events ORDER BY id"
        return list(connection.execute(query).fetchall())


def test_a_stop_is_committed_before_record_returns_with_every_decision_before_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "loopbreak.db"
    db = Database(path)
    audit = AuditLog([SqliteSink(db)])
    made = scripted_run(audit)  # its last decision is the stop
    assert committed(path) == [(d.run_id, d.seq, d.kind.value) for d in made]
    db.close()


def test_allow_and_warn_decisions_wait_for_a_batch_and_close_commits_them(tmp_path: Path) -> None:
    path = tmp_path / "loopbreak.db"
    with Database(path) as db:
        audit = AuditLog([SqliteSink(db)])
        policy = RunPolicy(PolicyConfig(max_steps=10), run_id="run-a", audit=audit)
        policy.before_step("prompt")
        policy.check_tool_call("read_file", {"path": "a.py"})
        assert committed(path) == []  # queued: not one transaction per decision
        audit.close()
        assert [seq for _, seq, _ in committed(path)] == [0, 1]


def test_a_full_batch_is_committed_without_waiting_for_a_stop(tmp_path: Path) -> None:
    path = tmp_path / "loopbreak.db"
    with Database(path) as db:
        audit = AuditLog([SqliteSink(db)])
        policy = RunPolicy(PolicyConfig(max_steps=1000), run_id="run-a", audit=audit)
        while len(audit.events) < BATCH_ROWS:
            policy.before_step("prompt")
        assert len(committed(path)) == BATCH_ROWS


def test_queued_decisions_are_committed_after_batch_seconds(tmp_path: Path) -> None:
    path = tmp_path / "loopbreak.db"
    with Database(path) as db:
        audit = AuditLog([SqliteSink(db)])
        policy = RunPolicy(PolicyConfig(max_steps=1000), run_id="run-a", audit=audit)
        policy.before_step("prompt")
        time.sleep(BATCH_SECONDS)
        policy.before_step("prompt")  # the first queued decision is old enough: both commit
        assert [seq for _, seq, _ in committed(path)] == [0, 1]


def test_saving_a_turn_commits_the_decisions_queued_before_it(tmp_path: Path) -> None:
    """A saved turn (or receipt) is committed at once, with the decisions queued before it."""
    path = tmp_path / "loopbreak.db"
    with Database(path) as db:
        audit = AuditLog([SqliteSink(db)])
        policy = RunPolicy(PolicyConfig(max_steps=10), run_id="run-a", audit=audit)
        policy.before_step("prompt")
        guarded = guard(iter(["a clean answer"]))
        assert list(guarded) == ["a clean answer"]
        turn_id = save_result(db, guarded)
        assert [seq for _, seq, _ in committed(path)] == [0]
        with sqlite3.connect(path) as connection:
            assert connection.execute("SELECT id FROM turns").fetchall() == [(turn_id,)]


def test_a_database_dropped_without_close_commits_its_queue(tmp_path: Path) -> None:
    path = tmp_path / "loopbreak.db"
    audit = AuditLog([SqliteSink(Database(path))])
    policy = RunPolicy(PolicyConfig(max_steps=10), run_id="run-a", audit=audit)
    policy.before_step("prompt")
    del audit, policy
    gc.collect()
    assert [seq for _, seq, _ in committed(path)] == [0]


def test_queued_decisions_are_committed_when_the_interpreter_exits(tmp_path: Path) -> None:
    path = tmp_path / "loopbreak.db"
    program = f"""
import threading
from loopbreak.agent.audit import AuditLog, SqliteSink
from loopbreak.agent.policy import PolicyConfig, RunPolicy
from loopbreak.store import Database

AUDIT = []

def run():  # on another thread than the one that exits
    audit = AuditLog([SqliteSink(Database({str(path)!r}))])
    AUDIT.append(audit)  # still referenced at exit: only the exit can commit it
    policy = RunPolicy(PolicyConfig(max_steps=10), run_id="run-a", audit=audit)
    policy.before_step("prompt")
    policy.check_tool_call("read_file", {{"path": "a.py"}})

thread = threading.Thread(target=run)
thread.start()
thread.join()
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=os.environ
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert [seq for _, seq, _ in committed(path)] == [0, 1]


def test_the_logging_sink_logs_stops_at_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="loopbreak.agent.audit")
    made = scripted_run(AuditLog([LoggingSink()]))
    records = [record for record in caplog.records if record.name == "loopbreak.agent.audit"]
    # A structured field set through `extra=`: not an attribute LogRecord declares.
    assert [getattr(record, "loopbreak") for record in records] == [d.to_dict() for d in made]  # noqa: B009
    levels = {DecisionKind.ALLOW: logging.DEBUG, DecisionKind.WARN: logging.INFO}
    levels[DecisionKind.STOP] = logging.WARNING
    assert [record.levelno for record in records] == [levels[d.kind] for d in made]
    assert records[-1].getMessage() == "run run-a step 4: stop (max_steps: steps 4 / 4)"
    assert "action read_file" in records[1].getMessage()


def test_the_logging_sink_takes_the_callers_logger(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("myapp.agent")
    scripted_run(AuditLog([LoggingSink(logger)]))
    assert [record.name for record in caplog.records] == ["myapp.agent"]  # the stop, at WARNING


class BrokenSink:
    def __init__(self) -> None:
        self.closed = False

    def write(self, decision: Decision) -> None:
        raise OSError("disk full")

    def close(self) -> None:
        self.closed = True


def test_a_failing_sink_neither_hides_the_stop_nor_fails_silently(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    broken = BrokenSink()
    audit = AuditLog([broken, JsonLinesSink(path)])
    policy = RunPolicy(PolicyConfig(max_steps=1), audit=audit)
    with pytest.raises(OSError, match="disk full"):
        policy.before_step("")
    with pytest.raises(OSError, match="disk full"):
        policy.before_step("")  # the step limit
    stop = audit.events[-1]
    assert stop.stopped and policy.stop == stop
    audit.close()
    assert broken.closed
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[-1]["decision"] == "stop"
    assert len(lines) == 2


def test_one_log_for_many_runs_numbers_each_run_from_zero() -> None:
    audit = AuditLog()
    scripted_run(audit, "first")
    scripted_run(audit, "second")
    assert [(e.run_id, e.seq) for e in audit.events if e.seq == 0] == [("first", 0), ("second", 0)]
    assert len(audit.events) == 26


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="decision must be a Decision, got dict"):
        AuditLog().record({"decision": "stop"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="db must be a loopbreak.store.Database, not int"):
        SqliteSink(3)  # type: ignore[arg-type]
