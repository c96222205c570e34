"""SQLite tables whose columns take SQLite's names for the rowid (``rowid``, ``_rowid_``,
``oid``): ``loopbreak scan`` tells rows by the first name left to the rowid, and refuses a table
that leaves none, or has no rowid at all (``WITHOUT ROWID``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import loopbreak
from loopbreak.cli import main
from support.transcripts import clean_text, loop_text


def write_table(path: Path, schema: str, rows: list[tuple[object, ...]]) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute(f"CREATE TABLE t ({schema})")
        marks = ", ".join("?" for _ in rows[0])
        connection.executemany(f"INSERT INTO t VALUES ({marks})", rows)
    connection.close()


def bodies(path: Path) -> list[tuple[int, object]]:
    """Each row's body by its real rowid (``oid`` is free in these tables)."""
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT oid, body FROM t ORDER BY oid").fetchall()
    connection.close()
    return rows


@pytest.mark.parametrize(
    "schema",
    ["rowid, body", "ROWID TEXT, body TEXT", "rowid INTEGER, _rowid_, body"],
)
def test_a_column_named_rowid_does_not_mix_up_the_rows(tmp_path: Path, schema: str) -> None:
    # The declared rowid column holds NULLs and numbers naming other rows: the 4-row table of
    # the report, where row 2 got row 1's trimmed loop and row 1 kept looping.
    texts = [loop_text(0), clean_text(1), loop_text(2), clean_text(3)]
    fillers: list[tuple[object, ...]] = [(None,), (1,), (None,), (2,)]
    path = tmp_path / "runs.db"
    width = schema.count(",")
    write_table(path, schema, [filler * width + (text,) for filler, text in zip(fillers, texts)])
    out = tmp_path / "out"
    args = ["scan", "--table", "t", "--column", "body", "--trim", "--out", str(out), str(path)]
    assert main(args) == 1
    expected = [loopbreak.trim(text).text for text in texts]
    assert [body for _, body in bodies(out / "runs.db")] == expected
    assert main([*args[:-3], "--in-place", str(path)]) == 1
    assert [body for _, body in bodies(path)] == expected


def test_findings_name_the_real_rowid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.db"
    write_table(path, "rowid, body", [(7, clean_text(0)), (None, loop_text(1))])
    assert main(["scan", "--table", "t", "--column", "body", str(path)]) == 1
    assert "rowid 2" in capsys.readouterr().out


def test_a_table_that_leaves_no_name_to_its_rowid_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    write_table(path, "rowid, _rowid_, oid, body", [(1, 2, 3, loop_text(0))])
    before = path.read_bytes()
    args = ["scan", "--table", "t", "--column", "body", "--trim", "--in-place", str(path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert (
        f"{path}: table 't' has columns named rowid, _rowid_ and oid, which hide its rowid"
        " (the only way to tell its rows)" in err
    )
    assert path.read_bytes() == before


def test_a_without_rowid_table_is_refused_even_with_a_rowid_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE t (rowid INTEGER PRIMARY KEY, body TEXT) WITHOUT ROWID")
        connection.execute("INSERT INTO t VALUES (1, ?)", (loop_text(0),))
    connection.close()
    before = path.read_bytes()
    args = ["scan", "--table", "t", "--column", "body", "--trim", "--in-place", str(path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{path}: table 't' has no rowid to tell its rows by (a WITHOUT ROWID table)" in err
    assert path.read_bytes() == before
