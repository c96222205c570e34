"""Wrong invocations of the ``loopbreak`` command, run as a person runs it (a subprocess): each
gets one line on stderr that says what to do, no traceback, exit status 2, and nothing is
written or streamed first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

LOOP = "loadTools. " * 300


def loopbreak(
    *args: str, cwd: Path, stdin: Optional[str] = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopbreak.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        input=stdin,
    )


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("db", ["missing/folder/x.db", "notes.txt"])
def test_demo_with_a_database_it_cannot_use(tmp_path: Path, db: str) -> None:
    (tmp_path / "notes.txt").write_text("not a database\n" * 100)
    done = loopbreak("demo", "--fast", "--db", db, cwd=tmp_path)
    line = one_line_error(done)
    assert line.startswith(f"loopbreak demo: --db {db}: ")
    assert line.endswith("give a new file in an existing folder, or a loopbreak database")
    assert done.stdout == ""  # nothing streamed before the check
    assert (tmp_path / "notes.txt").read_text() == "not a database\n" * 100


def test_trim_into_a_folder_that_cannot_be_made(tmp_path: Path) -> None:
    (tmp_path / "chats.jsonl").write_text(json.dumps({"text": LOOP}) + "\n")
    (tmp_path / "taken").write_text("a file, so no folder can be made below it")
    done = loopbreak(
        "scan", "chats.jsonl", "--field", "text", "--trim", "--out", "taken/cleaned", cwd=tmp_path
    )
    line = one_line_error(done)
    assert line.startswith("loopbreak scan: --out taken/cleaned: cannot make the folder (")
    assert "chats.jsonl" not in line  # the input is not to blame
    assert done.stdout == ""  # no "cleaned copies of 0 files"


def test_field_on_stdin_needs_the_json_lines_format(tmp_path: Path) -> None:
    line = json.dumps({"text": LOOP}) + "\n"
    done = loopbreak("scan", "-", "--field", "text", cwd=tmp_path, stdin=line)
    assert one_line_error(done) == (
        "loopbreak scan: --field reads JSON lines, and stdin is read as text: add --format jsonl"
    )
    found = loopbreak("scan", "-", "--field", "text", "--format", "jsonl", cwd=tmp_path, stdin=line)
    assert found.returncode == 1  # the loop at that field
    assert found.stdout.startswith("- line 1 field text: periodic_run: 'loadTools. ' x300")


def test_a_file_that_is_not_utf8_is_noted_and_shown_in_one_style(tmp_path: Path) -> None:
    data = b"caf\xe9: " + b"d\xe9j\xe0 vu. " * 200
    (tmp_path / "latin1.txt").write_bytes(data)
    done = loopbreak("scan", "latin1.txt", "--trim", "--out", "cleaned", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "loopbreak scan: latin1.txt: not valid UTF-8 (byte 3): each undecodable byte shows as"
        " \\udcXX and is kept as it was"
    ]
    assert "latin1.txt: periodic_run: ' d\\udce9j\\udce0 vu.' x200" in done.stdout
    cleaned = (tmp_path / "cleaned" / "latin1.txt").read_bytes()
    assert cleaned.startswith(b"caf\xe9: d\xe9j\xe0 vu.")  # the bytes kept as they were
    assert b'removed 1774 units: " d\\udce9j\\udce0 vu." repeated 198 more times' in cleaned


@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_json_lines_that_are_not_utf8_are_noted_once_and_shown_in_one_style(
    tmp_path: Path, stdin: bool
) -> None:
    line = json.dumps({"text": "caf\u00e9: " + "d\u00e9j\u00e0 vu. " * 200})
    data = line.encode("ascii").replace(b"\\u00e9", b"\xe9").replace(b"\\u00e0", b"\xe0")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(data + b"\n" + data + b"\n")
    source = ["-", "--format", "jsonl"] if stdin else [path.name]
    with path.open("rb") as lines:
        done = subprocess.run(
            [sys.executable, "-m", "loopbreak.cli", "scan", *source, "--field", "text"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            stdin=lines if stdin else subprocess.DEVNULL,
        )
    name = "-" if stdin else path.name
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        f"loopbreak scan: {name}: not valid UTF-8 (line 1, byte 13): each undecodable byte"
        " shows as \\udcXX and is kept as it was"
    ]
    for number in (1, 2):
        finding = f"{name} line {number} field text: periodic_run: ' d\\udce9j\\udce0 vu.' x200"
        assert finding in done.stdout


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (["--table", "t", "--column", "c"], "--table reads SQLite, and notes.txt is read as text"),
        (["--column", "c"], "--column reads Parquet and SQLite, and notes.txt is read as text"),
        (
            ["--field", "text"],
            "--field reads JSON lines, and notes.txt is read as text: add --format jsonl",
        ),
        (
            ["--format", "text", "--field", "text"],
            "--field reads JSON lines, and notes.txt is read as text",
        ),
        (
            ["--ray", "auto", "--field", "text"],
            "--field reads JSON lines, and --ray reads Parquet only",
        ),
    ],
)
def test_an_option_no_format_of_the_files_takes(
    tmp_path: Path, options: list[str], problem: str
) -> None:
    (tmp_path / "notes.txt").write_text(LOOP)
    done = loopbreak("scan", "notes.txt", *options, cwd=tmp_path)
    assert one_line_error(done) == f"loopbreak scan: {problem}"
    assert done.stdout == ""  # refused before any file is read


def test_an_option_no_file_of_a_folder_takes_leaves_nothing_behind(tmp_path: Path) -> None:
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "a.txt").write_text(LOOP)
    (tmp_path / "answers" / "b.jsonl").write_text(json.dumps({"text": LOOP}) + "\n")
    done = loopbreak(
        "scan", "answers", "--field", "text", "--table", "runs", "--trim", "--out", "cleaned",
        cwd=tmp_path,
    )  # fmt: skip
    assert one_line_error(done) == (
        "loopbreak scan: --table reads SQLite, and the 2 files are read as text and JSON lines"
    )
    assert not (tmp_path / "cleaned").exists()
    # The folder's JSON lines take --field, so --field alone is a scan of both files.
    assert loopbreak("scan", "answers", "--field", "text", cwd=tmp_path).returncode == 1


def test_a_format_no_reader_claims(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("id,text\n1,hello\n")
    done = loopbreak("scan", "rows.csv", "--format", "csv", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "argument --format: invalid choice: 'csv' (choose from" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_help_names_each_format_and_what_its_options_read(tmp_path: Path) -> None:
    from loopbreak.scanning.readers import READERS

    done = loopbreak("scan", "--help", cwd=tmp_path)
    assert done.returncode == 0
    for reader in READERS.values():
        assert f"  {reader.format:<9} " in done.stdout
        assert f"    {reader.title}: {reader.notes}" in done.stdout
    assert "JSON lines: where the text is in each line" in done.stdout
    assert "Parquet, SQLite: the column of texts" in done.stdout
