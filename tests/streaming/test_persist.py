"""Saving guarded streams to SQLite, and the ``loopbreak demo`` command that shows it."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import pytest

from loopbreak import DegenerationDetected, guard, scan, trim
from loopbreak.cli import main
from loopbreak.errors import RunNotFound, TurnNotFound
from loopbreak.store import TABLES, Database
from loopbreak.streaming import persist
from loopbreak.streaming.demo import load_recording, token_deltas
from loopbreak.streaming.persist import NO_TEXT_MARKER, Turn, load_turn, save_result, save_turn
from support.recorded import RECORDED


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    with Database(tmp_path / "turns.db") as database:
        yield database


def test_a_stopped_stream_is_saved_trimmed_with_its_reason(db: Database) -> None:
    guarded = guard(token_deltas(RECORDED["d10-greedy"].text), on_degeneration="stop")
    for _ in guarded:
        pass
    turn = load_turn(db, save_result(db, guarded))
    assert guarded.degeneration is not None
    assert turn.status == "degenerate"
    assert turn.error is not None and turn.error == guarded.reason
    assert turn.error.startswith("Output degeneration detected")
    assert turn.text == trim(guarded.text).text == guarded.persist_text
    assert turn.finding == guarded.degeneration.to_dict()
    assert datetime.fromisoformat(turn.created_at).utcoffset() is not None


def test_the_raised_error_is_saved_the_same_way(db: Database) -> None:
    with pytest.raises(DegenerationDetected) as caught:
        for _ in guard(token_deltas(RECORDED["d22-greedy"].text)):
            pass
    turn = load_turn(db, save_result(db, caught.value))
    assert (turn.status, turn.error, turn.text) == (
        "degenerate",
        caught.value.reason,
        caught.value.persist_text,
    )
    assert turn.finding is not None and turn.finding["rule"] == caught.value.finding.rule


def test_a_clean_stream_is_saved_unchanged(db: Database) -> None:
    text = RECORDED["d02-sampled"].text
    guarded = guard(token_deltas(text))
    assert "".join(guarded) == text
    turn = load_turn(db, save_result(db, guarded))
    assert (turn.status, turn.error, turn.text, turn.finding) == ("ok", None, text, None)


def test_user_stops_and_upstream_errors_get_their_own_status(db: Database) -> None:
    with guard(token_deltas(RECORDED["d20-sampled"].text)) as stopped:
        next(stopped)
    failing = guard(iter_then_fail(["partial", " answer"], ConnectionResetError("peer reset")))
    with pytest.raises(ConnectionResetError):
        list(failing)
    cancelled = load_turn(db, save_result(db, stopped))
    failed = load_turn(db, save_result(db, failing))
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
    assert load_turn(db, save_result(db, empty)).text == NO_TEXT_MARKER
    step_limit = "(The step limit was reached before a final answer was written.)"
    turn_id = save_turn(db, status="ok", text="", empty_text=step_limit)
    assert load_turn(db, turn_id).text == step_limit


def test_a_turn_the_policy_stopped_keeps_the_stop_message_beside_its_text(db: Database) -> None:
    message = "The run stopped because it kept repeating the same action (3 times in a row)."
    spoke = guard(["Let me list ", "the files again."])
    list(spoke)
    silent = guard([])
    list(silent)
    spoke_turn = load_turn(db, save_result(db, spoke, stop_message=message))
    silent_turn = load_turn(db, save_result(db, silent, stop_message=message))
    marked_turn = load_turn(db, save_result(db, silent, empty_text=message, stop_message=message))
    # The text replayed to the model stays the model's (or the marker); the message is apart.
    assert (spoke_turn.text, spoke_turn.stop_message) == ("Let me list the files again.", message)
    assert (silent_turn.text, silent_turn.stop_message) == (NO_TEXT_MARKER, message)
    assert marked_turn.text == message
    assert load_turn(db, save_turn(db, status="ok", text="answer")).stop_message is None
    with pytest.raises(TypeError, match="stop_message must be a str or None"):
        save_turn(db, status="ok", text="x", stop_message=1)  # type: ignore[arg-type]


def test_rows_survive_reconnecting(tmp_path: Path) -> None:
    path = tmp_path / "turns.db"
    with Database(path) as first:
        turn_id = save_turn(first, status="ok", text="answer")
    with Database(path) as second:
        assert load_turn(second, turn_id).text == "answer"
        assert save_turn(second, status="ok", text="next") == turn_id + 1


def test_bad_input_is_refused(db: Database) -> None:
    with pytest.raises(TypeError, match="a database is a path or a sqlite3.Connection, not int"):
        Database(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="db must be a loopbreak.store.Database, not str"):
        save_turn("turns.db", status="ok", text="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text must be a str"):
        save_turn(db, status="ok", text=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="status"):
        save_turn(db, status="", text="x")
    with pytest.raises(TypeError, match="expected a guard"):
        save_result(db, "text")  # type: ignore[arg-type]
    with pytest.raises(TurnNotFound, match="no turn with id 99") as caught:
        load_turn(db, 99)
    # A RunNotFound still, as load_run raised: code that caught that keeps catching it.
    assert isinstance(caught.value, RunNotFound) and isinstance(caught.value, LookupError)


# The table of saved turns as schema version 1 created it, under its old name.
OLD_RUNS_TABLE = """
    CREATE TABLE IF NOT EXISTS runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        status TEXT NOT NULL,     -- ok, degenerate, cancelled, error (loopbreak.streaming.guard.Status)
        error TEXT,               -- the stop reason; NULL when status is ok
        text TEXT NOT NULL,       -- what to keep: trimmed, or the no-text marker
        finding TEXT,             -- JSON of Degeneration.to_dict(); NULL without a finding
        stop_message TEXT,        -- for people: why the run policy stopped the run; else NULL
        created_at TEXT NOT NULL
    )"""


def old_store(path: Path) -> None:
    """A store as a loopbreak of schema version 1 left it: two turns in ``runs``."""
    with sqlite3.connect(path) as connection:
        connection.execute(OLD_RUNS_TABLE)
        for table in ("audit_events", "receipts"):
            connection.execute(TABLES[table])
        connection.executemany(
            "INSERT INTO runs (status, error, text, finding, stop_message, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [
                ("ok", None, "first answer", None, None, "2026-11-30T08:00:00.000+00:00"),
                ("degenerate", "looped", "cut", '{"rule": "x"}', "stop", "2026-11-30T08:01:00.000"),
            ],
        )
        connection.execute("PRAGMA user_version = 1")
    connection.close()


def schema(path: Path) -> tuple[set[str], int]:
    """The tables of the file at ``path``, and its schema version."""
    with sqlite3.connect(path) as connection:
        names = {name for (name,) in connection.execute("SELECT name FROM sqlite_master")}
        (version,) = connection.execute("PRAGMA user_version").fetchone()
    connection.close()
    return names, version


def test_a_store_of_the_old_schema_is_migrated_on_open_with_its_turns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_store(path)
    with Database(path) as db:
        first, second = load_turn(db, 1), load_turn(db, 2)
        assert save_turn(db, status="ok", text="after") == 3
    assert first == Turn(1, "ok", None, "first answer", None, None, "2026-11-30T08:00:00.000+00:00")
    assert (second.error, second.finding, second.stop_message) == ("looped", {"rule": "x"}, "stop")
    names, version = schema(path)
    assert "turns" in names and "runs" not in names and version == 2
    with Database(path) as db:  # opening it again changes nothing
        assert [load_turn(db, n).text for n in (1, 2, 3)] == ["first answer", "cut", "after"]
    assert schema(path) == (names, version)


def test_connections_opening_an_old_store_at_once_all_find_it_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_store(path)
    start = threading.Barrier(8)

    def open_and_read(_: int) -> str:
        start.wait()
        with Database(path) as db:
            return load_turn(db, 1).text

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(open_and_read, range(8))) == ["first answer"] * 8


def test_a_runs_table_of_the_callers_own_is_left_alone(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "app.db")
    connection.execute("CREATE TABLE runs (name TEXT)")
    connection.execute("INSERT INTO runs VALUES ('nightly')")
    connection.commit()
    with Database(connection) as db:
        assert load_turn(db, save_turn(db, status="ok", text="answer")).text == "answer"
    assert connection.execute("SELECT * FROM runs").fetchall() == [("nightly",)]
    connection.close()


@pytest.mark.parametrize(
    ("old", "new"), [("Run", "Turn"), ("save_run", "save_turn"), ("load_run", "load_turn")]
)
def test_the_old_names_still_work_and_say_what_to_use(old: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"persist.{old} is deprecated: use {new}") as seen:
        assert getattr(persist, old) is getattr(persist, new)
    assert seen[0].filename == __file__  # the warning points at the caller's line
    with pytest.warns(DeprecationWarning, match=f"use {new}"):
        exec(f"from loopbreak.streaming.persist import {old}", {})
    with pytest.raises(AttributeError, match="has no attribute 'save_runs'"):
        persist.save_runs  # noqa: B018


# --- loopbreak demo ----------------------------------------------------------------------


def test_the_demo_recording_replays_exactly() -> None:
    recording = load_recording()
    deltas = token_deltas(recording.text)
    assert "".join(deltas) == recording.text
    assert len(deltas) > len(recording.text) / 8  # token-sized, not lines
    assert scan(recording.text)


def test_demo_stops_the_loop_and_stores_the_trimmed_turn(
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
        turn = load_turn(db, 1)
    assert turn.status == "degenerate" and turn.error is not None
    assert turn.error.startswith("Output degeneration detected") and turn.error in printed
    assert turn.text.startswith(recording.text[: finding.start])
    assert "[loopbreak: removed" in turn.text and turn.text.splitlines()[-1] in printed
