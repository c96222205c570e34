"""Saving guarded streams to SQLite, and the ``loopbreak demo`` command that shows it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from loopbreak import DegenerationDetected, guard, scan, trim
from loopbreak.cli import main
from loopbreak.errors import RunNotFound
from loopbreak.store import Database
from loopbreak.streaming.demo import load_recording, token_deltas
from loopbreak.streaming.persist import NO_TEXT_MARKER, load_run, save_result, save_run
from support.recorded import RECORDED


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    with Database(tmp_path / "runs.db") as database:
        yield database


def test_a_stopped_stream_is_saved_trimmed_with_its_reason(db: Database) -> None:
    guarded = guard(token_deltas(RECORDED["d10-greedy"].text), on_degeneration="stop")
    for _ in guarded:
        pass
    run = load_run(db, save_result(db, guarded))
    assert guarded.degeneration is not None
    assert run.status == "degenerate"
    assert run.error is not None and run.error == guarded.reason
    assert run.error.startswith("Output degeneration detected")
    assert run.text == trim(guarded.text).text == guarded.persist_text
    assert run.finding == guarded.degeneration.to_dict()
    assert datetime.fromisoformat(run.created_at).utcoffset() is not None


def test_the_raised_error_is_saved_the_same_way(db: Database) -> None:
    with pytest.raises(DegenerationDetected) as caught:
        for _ in guard(token_deltas(RECORDED["d22-greedy"].text)):
            pass
    run = load_run(db, save_result(db, caught.value))
    assert (run.status, run.error, run.text) == (
        "degenerate",
        caught.value.reason,
        caught.value.persist_text,
    )
    assert run.finding is not None and run.finding["rule"] == caught.value.finding.rule


def test_a_clean_stream_is_saved_unchanged(db: Database) -> None:
    text = RECORDED["d02-sampled"].text
    guarded = guard(token_deltas(text))
    assert "".join(guarded) == text
    run = load_run(db, save_result(db, guarded))
    assert (run.status, run.error, run.text, run.finding) == ("ok", None, text, None)


def test_user_stops_and_upstream_errors_get_their_own_status(db: Database) -> None:
    with guard(token_deltas(RECORDED["d20-sampled"].text)) as stopped:
        next(stopped)
    failing = guard(iter_then_fail(["partial", " answer"], ConnectionResetError("peer reset")))
    with pytest.raises(ConnectionResetError):
        list(failing)
    cancelled = load_run(db, save_result(db, stopped))
    failed = load_run(db, save_result(db, failing))
    assert (cancelled.status, cancelled.error) == ("cancelled", stopped.reason)
    assert (failed.status, failed.text) == ("error", "partial answer")
    assert failed.error == "Upstream error: ConnectionResetError: peer reset"


def iter_then_fail(deltas: list[str], error: Exception) -> Iterator[str]:
    yield from deltas
    raise error


def test_a_stream_still_running_is_not_saved(db: Database) -> None:
    guarded = guard(["a", "b"])
    next(guarded)
    with pytest.raises(ValueError, match="has not ended"):
        save_result(db, guarded)


def test_a_turn_without_text_gets_a_marker(db: Database) -> None:
    empty = guard(["", "  \n"])
    list(empty)
    assert load_run(db, save_result(db, empty)).text == NO_TEXT_MARKER
    step_limit = "(The step limit was reached before a final answer was written.)"
    run_id = save_run(db, status="ok", text="", empty_text=step_limit)
    assert load_run(db, run_id).text == step_limit


def test_a_turn_the_policy_stopped_keeps_the_stop_message_beside_its_text(db: Database) -> None:
    message = "The run stopped because it kept repeating the same action (3 times in a row)."
    spoke = guard(["Let me list ", "the files again."])
    list(spoke)
    silent = guard([])
    list(silent)
    spoke_run = load_run(db, save_result(db, spoke, stop_message=message))
    silent_run = load_run(db, save_result(db, silent, stop_message=message))
    marked_run = load_run(db, save_result(db, silent, empty_text=message, stop_message=message))
    # The text replayed to the model stays the model's (or the marker); the message is apart.
    assert (spoke_run.text, spoke_run.stop_message) == ("Let me list the files again.", message)
    assert (silent_run.text, silent_run.stop_message) == (NO_TEXT_MARKER, message)
    assert marked_run.text == message
    assert load_run(db, save_run(db, status="ok", text="answer")).stop_message is None
    with pytest.raises(TypeError, match="stop_message must be a str or None"):
        save_run(db, status="ok", text="x", stop_message=1)  # type: ignore[arg-type]


def test_rows_survive_reconnecting(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with Database(path) as first:
        run_id = save_run(first, status="ok", text="answer")
    with Database(path) as second:
        assert load_run(second, run_id).text == "answer"
        assert save_run(second, status="ok", text="next") == run_id + 1


def test_bad_input_is_refused(db: Database) -> None:
    with pytest.raises(TypeError, match="a database is a path or a sqlite3.Connection, not int"):
        Database(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="db must be a loopbreak.store.Database, not str"):
        save_run("runs.db", status="ok", text="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text must be a str"):
        save_run(db, status="ok", text=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="status"):
        save_run(db, status="", text="x")
    with pytest.raises(TypeError, match="expected a guard"):
        save_result(db, "text")  # type: ignore[arg-type]
    with pytest.raises(RunNotFound, match="no run with id 99") as caught:
        load_run(db, 99)
    assert isinstance(caught.value, LookupError)


# --- loopbreak demo ----------------------------------------------------------------------


def test_the_demo_recording_replays_exactly() -> None:
    recording = load_recording()
    deltas = token_deltas(recording.text)
    assert "".join(deltas) == recording.text
    assert len(deltas) > len(recording.text) / 8  # token-sized, not lines
    assert scan(recording.text)


def test_demo_stops_the_loop_and_stores_the_trimmed_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "demo.db"
    assert main(["demo", "--fast", "--db", str(path)]) == 0
    printed = capsys.readouterr().out
    recording = load_recording()
    finding = scan(recording.text)[0]

    match = re.search(r"Streamed (\d+) of (\d+) chars", printed)
    assert match is not None
    streamed, total = int(match.group(1)), int(match.group(2))
    assert total == len(recording.text)
    assert streamed < finding.detected_at < total // 2
    assert recording.text[:streamed] in printed

    with Database(path) as db:
        run = load_run(db, 1)
    assert run.status == "degenerate" and run.error is not None
    assert run.error.startswith("Output degeneration detected") and run.error in printed
    assert run.text.startswith(recording.text[: finding.start])
    assert "[loopbreak: removed" in run.text and run.text.splitlines()[-1] in printed
