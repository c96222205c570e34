"""The example agent loop (examples/agent_loop.py) runs offline and ends each scripted run in
the state its script is meant to show, with everything stored in one database."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from loopbreak.agent.policy import LOCKDOWN_ENV

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_loop.py"


def test_the_example_ends_each_run_in_its_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(LOCKDOWN_ENV, raising=False)
    spec = importlib.util.spec_from_file_location("agent_loop_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, example)  # dataclasses look their module up
    spec.loader.exec_module(example)

    assert example.main(["--dir", str(tmp_path)]) == 0

    with sqlite3.connect(tmp_path / "loopbreak.db") as connection:
        receipts = connection.execute("SELECT run_id, state, reason FROM receipts ORDER BY id")
        assert receipts.fetchall() == [
            ("healthy", "VERIFIED_COMPLETE", "natural_finish"),
            ("claims-done", "FALSE_COMPLETE", "done_tool"),
            ("repeats", "STUCK", "loop_detected"),
            ("degenerates", "STUCK", "degeneration"),
            ("tool-fails", "FAILED", "tool_failure"),
            ("times-out", "BOUNDED_STOP", "timeout"),  # after progress: a time bound fired
            ("explores", "BOUNDED_STOP", "max_steps"),
            ("kill-switch", "BOUNDED_STOP", "kill_switch"),
        ]
        next_actions = connection.execute("SELECT receipt FROM receipts ORDER BY id").fetchall()
        (degenerate_text,) = connection.execute(
            "SELECT text FROM turns WHERE status = 'degenerate'"
        ).fetchone()
        stops = connection.execute(
            "SELECT run_id, reason, message FROM audit_events WHERE decision = 'stop' ORDER BY id"
        ).fetchall()
        stopped_turns = connection.execute(
            "SELECT text, stop_message FROM turns WHERE stop_message IS NOT NULL"
        ).fetchall()
    # The 204,182-char loop was never saved: only its first copies and a marker.
    assert "loadTools." in degenerate_text and len(degenerate_text) < 300
    assert [(run_id, reason) for run_id, reason, _ in stops] == [
        ("repeats", "loop_detected"),
        ("explores", "max_steps"),
        ("kill-switch", "kill_switch"),
    ]
    messages = [message for _, _, message in stops]
    assert messages[1] == (
        "The run stopped after reaching its step limit (8 steps). "
        "Rephrase the request or start a new run with a narrower scope."
    )
    # The turn in which the policy stopped the run keeps the model's text and, apart, the
    # message for people.
    assert stopped_turns == [("Let me look around.", messages[0])]
    assert [json.loads(row[0])["next_action"] for row in next_actions][:2] == [
        "Close the run.",
        "Check the destination or reopen the task.",
    ]
    audit_lines = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["decision"] for line in audit_lines].count("stop") == 3
    assert not (tmp_path / "agent.kill").exists()  # released after the run
    out = capsys.readouterr().out
    assert "guard stopped the stream" in out
    for message in messages:
        assert f"to the user: {message}" in out
    assert "next action: Keep the partial work" in out
