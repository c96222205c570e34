"""The integration examples (examples/anthropic_guard.py, examples/litellm_guard.py) run
offline, stop the recorded loop and save the trimmed answer."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from loopbreak import scan
from loopbreak.store import Database
from loopbreak.streaming.demo import load_recording
from loopbreak.streaming.persist import load_turn

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{name}_example", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


@pytest.mark.parametrize("name", ["anthropic_guard", "litellm_guard"])
def test_example_stops_the_loop_and_saves_it_trimmed(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = load_recording().text
    expected = scan(recording)[0]
    db = tmp_path / "runs.db"
    assert load_example(name).main(["--db", str(db)]) == 0

    out = capsys.readouterr().out
    assert "status: degenerate" in out
    assert "reason: Output degeneration detected in content: " in out
    connection = Database(db)
    turn = load_turn(connection, 1)
    connection.close()
    assert turn.status == "degenerate" and turn.finding is not None
    assert turn.finding["start"] == expected.start and turn.finding["rule"] == expected.rule
    assert turn.error is not None and turn.error.startswith(
        "Output degeneration detected in content"
    )
    assert turn.text.startswith(recording[: expected.start]) and "[loopbreak: removed" in turn.text
