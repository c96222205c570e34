"""The LangChain example (examples/langchain_agent.py) runs offline and ends each of its runs in
the state it is meant to show."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from loopbreak.agent.policy import LOCKDOWN_ENV

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "langchain_agent.py"


def test_the_example_ends_each_run_in_its_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(LOCKDOWN_ENV, raising=False)
    spec = importlib.util.spec_from_file_location("langchain_agent_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, example)
    spec.loader.exec_module(example)

    assert example.main(["--dir", str(tmp_path)]) == 0

    with sqlite3.connect(tmp_path / "receipts.db") as connection:
        rows = connection.execute("SELECT run_id, state, reason FROM receipts ORDER BY id")
        receipts = rows.fetchall()
    assert [(state, reason) for _, state, reason in receipts] == [
        ("VERIFIED_COMPLETE", "natural_finish"),
        ("STUCK", "loop_detected"),
        ("STUCK", "degeneration"),
    ]
    events = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [e["run_id"] for e in events if e["seq"] == 0] == [run_id for run_id, _, _ in receipts]
    decisions = {
        run_id: [(e["decision"], e["check"], e["reason"]) for e in events if e["run_id"] == run_id]
        for run_id, _, _ in receipts
    }
    (_, repeats, degenerate) = (run_id for run_id, _, _ in receipts)
    assert decisions[repeats][-1] == ("stop", "repeated_action", "loop_detected")
    # The degenerate run's looping answer is decided and audited like a repeat.
    assert decisions[degenerate] == [
        ("allow", "steps", "within_limits"),
        ("stop", "looping_answer", "degeneration"),
    ]
    assert "VERIFIED_COMPLETE" in capsys.readouterr().out
