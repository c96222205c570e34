"""A shared store that one bad row cannot wedge, and that refuses writes once closed: a lone
surrogate (half of a split emoji) in a model's tool-call arguments, a row SQLite refuses, a
decision queued after ``close()``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from loopbreak.agent.actions import action_key
from loopbreak.agent.audit import AuditLog, JsonLinesSink, SqliteSink
from loopbreak.agent.policy import PolicyConfig, RunPolicy
from loopbreak.errors import StoreError
from loopbreak.store import Database

SPLIT_EMOJI = {"query": "weather \ud83d"}


def committed(path: Path) -> list[tuple[str, int, str]]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute(
            "SELECT run_id, seq, action_key FROM audit_events ORDER BY id"
        ).fetchall()
    connection.close()
    return rows


def test_an_action_key_is_always_encodable() -> None:
    key = action_key("search", SPLIT_EMOJI)
    assert key == 'search({"query":"weather \\ud83d"})'
    key.encode("utf-8")
    assert action_key("search", json.dumps(SPLIT_EMOJI)) == key


def test_a_lone_surrogate_in_tool_arguments_wedges_neither_store_nor_sink(tmp_path: Path) -> None:
    path = tmp_path / "loopbreak.db"
    with Database(path) as db:
        audit = AuditLog([SqliteSink(db), JsonLinesSink(tmp_path / "audit.jsonl")])
        runs = [RunPolicy(PolicyConfig(max_steps=10), run_id=f"run-{n}", audit=audit) for n in "ab"]
        for policy in runs:
            policy.before_step("prompt")
            policy.check_tool_call("search", SPLIT_EMOJI)
            policy.after_step(["searched"])
            policy.before_step("prompt")
        audit.close()
    rows = committed(path)
    assert len(rows) == len(audit.events) == 8
    assert rows[1] == ("run-a", 1, 'search({"query":"weather \\ud83d"})')
    lines = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [0, 1, 2, 3] * 2


def test_a_row_sqlite_refuses_is_escaped_and_the_rest_of_its_batch_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "loopbreak.db"
    row = {"status": "ok", "error": None, "finding": None, "stop_message": None}
    with Database(path) as db:
        db.queue("turns", {**row, "text": "before", "created_at": "t"})
        db.queue("turns", {**row, "text": "half \ud83d of it", "created_at": "t"})
        db.queue("turns", {**row, "text": "after", "created_at": "t"})
        db.flush()
        db.insert("turns", {**row, "text": "later", "created_at": "t"})
    with sqlite3.connect(path) as connection:
        texts = [text for (text,) in connection.execute("SELECT text FROM turns ORDER BY id")]
    connection.close()
    assert texts == ["before", "half \\ud83d of it", "after", "later"]


def test_writes_after_close_raise(tmp_path: Path) -> None:
    db = Database(tmp_path / "loopbreak.db")
    db.close()
    row = {"status": "ok", "text": "x", "created_at": "t"}
    for write in (lambda: db.queue("turns", row), lambda: db.insert("turns", row), db.flush):
        with pytest.raises(StoreError, match="the database is closed"):
            write()
    db.close()  # closing twice is harmless


def test_a_decision_after_the_database_closed_is_an_error_not_a_silent_loss(
    tmp_path: Path,
) -> None:
    db = Database(tmp_path / "loopbreak.db")
    audit = AuditLog([SqliteSink(db)])
    policy = RunPolicy(PolicyConfig(max_steps=10), run_id="run-a", audit=audit)
    policy.before_step("prompt")
    db.close()
    assert [seq for _, seq, _ in committed(tmp_path / "loopbreak.db")] == [0]
    with pytest.raises(StoreError, match="the database is closed"):
        policy.check_tool_call("read_file", {"path": "a.py"})
