"""``loopbreak scan``: text files, directories, JSON lines, Parquet and SQLite; the summary, the
JSON lines, exit status 0 clean / 1 findings / 2 errors; ``--trim`` copies, in place or not."""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import pty
import sqlite3
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import loopbreak
from loopbreak.cli import main
from loopbreak.scanning.field_path import FieldPath
from support.transcripts import (
    clean_text,
    is_loop_row,
    loop_text,
    texts,
    write_parquet,
    write_sqlite,
)

LARGE_ROWS = 100_000
LARGE_EVERY = 50  # every 50th row of the large file is a loop: 2,000 rows


def test_scan_reports_findings_and_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop.txt"
    loop.write_text("Plan:\n" + "loadTools." * 300, encoding="utf-8")
    clean = tmp_path / "clean.txt"
    clean.write_text("Nothing repeats in this answer.\n", encoding="utf-8")

    assert main(["scan", str(clean)]) == 0
    assert capsys.readouterr().out == "scanned 1 file, 1 row: no loops found\n"

    assert main(["scan", str(clean), str(loop)]) == 1
    out = capsys.readouterr().out
    # The whole region: all 300 copies, up to the end of the file.
    assert "periodic_run: 'loadTools.' x300 from offset 6 to 3006" in out

    assert main(["scan", "--json", str(loop)]) == 1
    record = json.loads(capsys.readouterr().out)
    assert (record["path"], record["block"], record["start"], record["detected_at"]) == (
        str(loop),
        "loadTools.",
        6,
        206,
    )
    assert (record["repeats"], record["end"]) == (300, 3006)

    assert main(["scan", str(tmp_path / "missing.txt"), str(loop)]) == 2
    captured = capsys.readouterr()
    assert "missing.txt" in captured.err and "loadTools." in captured.out


@pytest.mark.parametrize("suffix", [".txt", ".jsonl"])
def test_scan_rules_conservative_asks_more_of_what_machine_generated_files_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    """1,500 dashes: a loop for the defaults (one char by 1,024 units), not yet for the
    conservative preset (2,048), in every format the rules reach."""
    text = "Header\n" + "-" * 1500
    path = tmp_path / f"rule{suffix}"
    path.write_text(json.dumps({"text": text}) + "\n" if suffix == ".jsonl" else text)
    field = ["--field", "text"] if suffix == ".jsonl" else []
    status, records, _ = run_json(capsys, *field, str(path))
    assert (status, [r["detected_at"] - r["start"] for r in records]) == (1, [1024])
    status, records, _ = run_json(capsys, *field, "--rules", "conservative", str(path))
    assert (status, records) == (0, [])
    with pytest.raises(SystemExit):
        main(["scan", "--rules", "lenient", str(path)])
    assert "invalid choice: 'lenient'" in capsys.readouterr().err


def test_scan_undecodable_bytes_keep_offsets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bytes.txt"
    path.write_bytes(b"\xff\xfe" + "это снова ".encode() * 60)
    assert main(["scan", "--json", str(path)]) == 1
    record = json.loads(capsys.readouterr().out)
    assert (record["block"], record["start"]) == ("это снова ", 2)


def run_json(
    capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, list[dict[str, Any]], str]:
    """Exit status, the JSON records on stdout, and stderr (errors and the summary)."""
    status = main(["scan", "--json", *args])
    captured = capsys.readouterr()
    return status, [json.loads(line) for line in captured.out.splitlines()], captured.err


def expected_records(values: list[Optional[str]], every: int) -> list[dict[str, Any]]:
    """What a scan reports, computed without the command: ``scan`` and ``trim`` on each loop row
    the data was made with. (``test_clean_rows_are_clean`` checks that the others are clean.)"""
    records = []
    for row, text in enumerate(values):
        if not is_loop_row(row, every):
            continue
        trimmed = loopbreak.trim(text or "")
        units = {(r.finding.start, r.finding.detected_at): r.units for r in trimmed.removals}
        for finding in loopbreak.scan(text or ""):
            trim_units = units.get((finding.start, finding.detected_at), 0)
            records.append({"row": row, **finding.to_dict(), "trim_units": trim_units})
    return records


def summary_counts(summary: str) -> dict[str, tuple[int, int, int]]:
    """The rule rows of the summary table: rule -> (rows, findings, units to trim)."""
    counts = {}
    for line in summary.splitlines():
        words = line.split()
        if words and words[0] in ("periodic_run", "long_block", "identical_lines", "all"):
            rows, findings, units = (int(word.replace(",", "")) for word in words[1:])
            counts[words[0]] = (rows, findings, units)
    return counts


@pytest.fixture(scope="module")
def large_parquet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Optional[str]]]:
    values = texts(LARGE_ROWS, LARGE_EVERY, nulls=True)
    path = tmp_path_factory.mktemp("large") / "chats.parquet"
    write_parquet(path, values)
    return path, values


def test_parquet_100k_rows(
    large_parquet: tuple[Path, list[Optional[str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, values = large_parquet
    status, records, err = run_json(capsys, "--column", "text", str(path))
    assert status == 1
    assert all(record.pop("path") == str(path) for record in records)
    expected = expected_records(values, LARGE_EVERY)
    assert len({r["row"] for r in expected}) == LARGE_ROWS // LARGE_EVERY
    assert records == expected

    assert (
        f"scanned 1 file, 100,000 rows: {LARGE_ROWS // LARGE_EVERY:,} rows with findings, in 1 file"
        in err
    )
    counts = summary_counts(err)
    for rule in ("periodic_run", "long_block", "identical_lines"):
        of_rule = [r for r in expected if r["rule"] == rule]
        assert counts[rule] == (
            len({r["row"] for r in of_rule}),
            len(of_rule),
            sum(r["trim_units"] for r in of_rule),
        )
    assert counts["all"][2] == sum(r["trim_units"] for r in expected) > 0


def test_clean_rows_are_clean() -> None:
    assert not any(loopbreak.scan_many([clean_text(i) for i in range(0, LARGE_ROWS, 37)]))


def test_parquet_trim_out_round_trip(
    large_parquet: tuple[Path, list[Optional[str]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, values = large_parquet
    before = digest(path)
    status, records, err = run_json(
        capsys, "--column", "text", "--trim", "--out", str(tmp_path / "out"), str(path)
    )
    assert status == 1 and "cleaned copies of 1 file in" in err
    assert digest(path) == before

    copy = pq.read_table(tmp_path / "out" / path.name)
    assert copy.column_names == ["id", "text", "text_loopbreak"]
    assert copy.column("id").to_pylist() == list(range(LARGE_ROWS))
    starts = {r["row"]: r["start"] for r in reversed(records)}  # the first finding of each row
    for row, (old, new, note) in enumerate(
        zip(values, copy.column("text").to_pylist(), copy.column("text_loopbreak").to_pylist())
    ):
        if row not in starts:
            assert (new, note) == (old, None)
        else:
            assert old is not None and new is not None and note is not None
            assert new.startswith(old[: starts[row]]) and len(new) < len(old)
            assert "[loopbreak: removed" in new
            assert json.loads(note)[0]["finding"]["start"] == starts[row]

    # The cleaned copy has nothing left to trim.
    assert main(["scan", "--column", "text", str(tmp_path / "out" / path.name)]) == 0
    assert "no loops found" in capsys.readouterr().out


def test_parquet_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": [1, 2], "text": ["a", "b"]}), path)
    for args, message in [
        ([], "Parquet needs --column (columns: id, text)"),
        (["--column", "body"], "no column 'body' (columns: id, text)"),
        (["--column", "id"], "column 'id' holds int64, not text"),
    ]:
        status, records, err = run_json(capsys, *args, str(path))
        assert (status, records) == (2, [])
        assert f"{path}: {message}" in err
        assert "scanned 0 files, 0 rows" in err
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 and then nothing useful")
    status, _, err = run_json(capsys, "--column", "text", str(broken))
    assert status == 2 and f"{broken}: cannot read it as Parquet" in err


CHAT_LINES = [
    {
        "id": 0,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": loop_text(0)},
        ],
    },
    "not json {",
    {
        "id": 2,
        "messages": [
            {"role": "assistant", "content": None},
            {"role": "tool", "content": {"rows": 3}},
        ],
    },
    "",
    {"id": 4, "messages": [{"role": "assistant", "content": clean_text(4)}]},
    {
        "id": 5,
        "messages": [
            {"role": "user", "content": loop_text(5)},
            {"role": "assistant", "content": loop_text(7)},
        ],
    },
    {"id": 6, "meta": "no messages here"},
]


def write_chats(path: Path) -> list[bytes]:
    """The chat lines as bytes, one with a CRLF ending, one with non-ASCII text."""
    raw = []
    for i, line in enumerate(CHAT_LINES):
        text = (
            line
            if isinstance(line, str)
            else json.dumps(line, ensure_ascii=False, separators=(",", ":"))
        )
        raw.append(text.encode() + (b"\r\n" if i == 4 else b"\n"))
    raw.append(
        json.dumps(
            {"id": 7, "messages": [{"content": "Привет, всё хорошо."}]}, ensure_ascii=False
        ).encode()
        + b"\n"
    )
    path.write_bytes(b"".join(raw))
    return raw


def test_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chats.jsonl"
    write_chats(path)
    status, records, err = run_json(capsys, "--field", "messages.*.content", str(path))
    assert status == 2
    assert [(r["line"], r["field"], r["start"]) for r in records] == [
        (1, "messages.1.content", loopbreak.scan(loop_text(0))[0].start),
        (6, "messages.0.content", loopbreak.scan(loop_text(5))[0].start),
        (6, "messages.1.content", loopbreak.scan(loop_text(7))[0].start),
    ]
    assert f"{path}: line 2: not JSON: Expecting value (column 1)" in err
    assert f"{path}: line 3: messages.1.content is an object, not text" in err
    # Rows: 2 + 2 (null scans as empty) - 1 (the object) + 1 + 2 + 0 + 1.
    assert "scanned 1 file, 7 rows: 3 rows with findings, in 1 file" in err
    assert "2 errors (see above)" in err

    # A single index, and the last item with -1.
    assert [
        r["field"] for r in run_json(capsys, "--field", "messages.-1.content", str(path))[1]
    ] == [
        "messages.1.content",
        "messages.1.content",
    ]


def test_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chats.jsonl"
    write_chats(path)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    status, records, _ = run_json(capsys, "--format", "jsonl", "--field", "messages.*.content", "-")
    assert status == 2 and [(r["path"], r["line"]) for r in records] == [
        ("-", 1),
        ("-", 6),
        ("-", 6),
    ]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(loop_text(0).encode())))
    status, records, _ = run_json(capsys, "-")
    assert status == 1 and [(r["path"], r["start"]) for r in records] == [
        ("-", loopbreak.scan(loop_text(0))[0].start)
    ]


def test_json_lines_bad_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chats.jsonl"
    write_chats(path)
    status, records, err = run_json(capsys, "--field", "mesages.*.content", str(path))
    assert (status, records) == (2, [])
    assert (
        f"{path}: no line has a value at 'mesages.*.content' (line 1 has members id, messages)"
        in err
    )
    status, _, err = run_json(capsys, str(path))
    assert status == 2 and "JSON lines need --field" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["scan", "--field", "messages..content", str(path)])
    assert exit_info.value.code == 2
    assert "has an empty segment" in capsys.readouterr().err


def test_json_lines_trim_out_keeps_other_lines_byte_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chats.jsonl"
    raw = write_chats(path)
    before = digest(path)
    status, records, _ = run_json(
        capsys, "--field", "messages.*.content", "--trim", "--out", str(tmp_path / "out"), str(path)
    )
    assert status == 2  # the broken lines are errors, and are copied as they are
    assert digest(path) == before
    copied = (tmp_path / "out" / "chats.jsonl").read_bytes().splitlines(keepends=True)
    assert len(copied) == len(raw)
    trimmed_lines = {r["line"] for r in records}
    for number, (old, new) in enumerate(zip(raw, copied), start=1):
        if number not in trimmed_lines:
            assert new == old
    line_one = json.loads(copied[0])
    content = line_one["messages"][1]["content"]
    assert (
        content.startswith(loop_text(0)[: records[0]["start"]]) and "[loopbreak: removed" in content
    )
    assert (
        line_one["messages"][1]["content_loopbreak"][0]["finding"]["block"] == records[0]["block"]
    )
    assert line_one["messages"][0] == {"role": "user", "content": "hi"}
    line_six = json.loads(copied[5])
    assert [len(m["content_loopbreak"]) for m in line_six["messages"]] == [1, 1]


def test_field_paths() -> None:
    document = {
        "a.b": {"*": "star", "x": "dotted"},
        "list": ["one", {"t": "two"}],
        "n": {"0": "zero"},
    }

    def find(path: str) -> list[tuple[str, Any]]:
        return [(slot.path, slot.value) for slot in FieldPath.parse(path).find(document)]

    assert find("a\\.b.x") == [("a\\.b.x", "dotted")]
    assert find("a\\.b.\\*") == [("a\\.b.\\*", "star")]
    assert find("a\\.b.*") == [("a\\.b.\\*", "star"), ("a\\.b.x", "dotted")]
    assert find("list.*") == [("list.0", "one"), ("list.1", {"t": "two"})]
    assert find("list.-1.t") == [("list.1.t", "two")]
    assert find("n.0") == [("n.0", "zero")]  # a digit names a member of an object
    assert find("list.2") == find("list.x") == find("missing.*") == find("list.0.t") == []
    for bad in ("", "a.", ".a", "a\\"):
        with pytest.raises(ValueError):
            FieldPath.parse(bad)


def sqlite_values() -> list[object]:
    values: list[object] = list(texts(10_000, 25))  # 400 loops over three chunks of reads
    values[10], values[11], values[12] = 42, b"\x00blob", None
    return values


def test_sqlite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.db"
    values = sqlite_values()
    write_sqlite(path, values)
    status, records, err = run_json(capsys, "--table", "messages", "--column", "body", str(path))
    assert status == 2
    assert {(r["table"], r["rowid"]) for r in records} == {
        ("messages", i + 1) for i in range(len(values)) if is_loop_row(i, 25)
    }
    assert f"{path}: rowid 11: body holds an integer, not text" in err
    assert f"{path}: rowid 12: body holds a blob, not text" in err
    assert "scanned 1 file, 9,998 rows: 400 rows with findings, in 1 file" in err

    for args, message in [
        (["--column", "body"], "SQLite needs --table (tables: messages)"),
        (["--table", "runs", "--column", "body"], "no table 'runs' (tables: messages)"),
        (
            ["--table", "messages", "--column", "text"],
            "no column 'text' in messages (columns: id, role, body)",
        ),
    ]:
        status, records, err = run_json(capsys, *args, str(path))
        assert (status, records) == (2, [])
        assert f"{path}: {message}" in err


def read_bodies(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT * FROM messages ORDER BY id").fetchall()
    connection.close()
    return rows


def test_sqlite_trim_out_and_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.db"
    values = sqlite_values()
    write_sqlite(path, values)
    before, original = digest(path), read_bodies(path)
    status, records, _ = run_json(
        capsys,
        "--table",
        "messages",
        "--column",
        "body",
        "--trim",
        "--out",
        str(tmp_path / "out"),
        str(path),
    )
    assert status == 2  # the integer and the blob
    assert digest(path) == before
    starts = {r["rowid"]: r["start"] for r in reversed(records)}
    cleaned = read_bodies(tmp_path / "out" / "runs.db")
    assert len(cleaned) == len(original)
    for (rowid, role, body), (same_id, same_role, new_body, note) in zip(original, cleaned):
        assert (same_id, same_role) == (rowid, role)
        if rowid in starts:
            assert new_body.startswith(body[: starts[rowid]]) and "[loopbreak: removed" in new_body
            assert json.loads(note)[0]["finding"]["start"] == starts[rowid]
        else:
            assert (new_body, note) == (body, None)

    status, _, err = run_json(
        capsys, "--table", "messages", "--column", "body", "--trim", "--in-place", str(path)
    )
    assert status == 2 and "trimmed 1 file in place" in err
    assert read_bodies(path) == cleaned
    assert sorted(os.listdir(tmp_path)) == ["out", "runs.db"]  # no temporary or journal file left


def test_directory_of_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "transcripts"
    (data / "2024" / "june").mkdir(parents=True)
    (data / ".cache").mkdir()
    (data / "2024" / "june" / "answer.txt").write_text(loop_text(3), encoding="utf-8")
    (data / "2024" / "clean.txt").write_bytes(b"line one\r\nline two \xff\r\n")
    (data / ".cache" / "hidden.txt").write_text(loop_text(0), encoding="utf-8")
    (data / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    write_chats(data / "chats.jsonl")
    write_parquet(data / "table.parquet", texts(1000, 10))
    write_sqlite(data / "runs.sqlite", texts(100, 10))

    status, records, err = run_json(
        capsys,
        "--field",
        "messages.*.content",
        "--column",
        "body",
        "--table",
        "messages",
        str(data),
    )
    assert status == 2  # chats.jsonl's broken lines, table.parquet has no column "body"
    assert sorted({Path(r["path"]).relative_to(data).as_posix() for r in records}) == [
        "2024/june/answer.txt",
        "chats.jsonl",
        "runs.sqlite",
    ]
    assert f"{data / 'table.parquet'}: no column 'body' (columns: id, text)" in err
    # 2 text files (1 row each), 7 JSON rows, 100 SQLite rows; the hidden file and the image are left out.
    assert "scanned 4 files, 109 rows: 14 rows with findings, in 3 files" in err
    assert "skipped 1 binary file" in err

    status, _, err = run_json(
        capsys, "--column", "text", "--format", "parquet", str(data / "table.parquet")
    )
    assert status == 1 and "100 rows with findings" in err


def test_text_trim_out_mirrors_the_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    clean_bytes = b"line one\r\nline two \xff\r\n"
    (data / "sub" / "clean.txt").write_bytes(clean_bytes)
    (data / "loop.txt").write_bytes(b"\xfe" + loop_text(0).encode())
    single = tmp_path / "single.txt"
    single.write_text(loop_text(1), encoding="utf-8")
    out = tmp_path / "out"
    status, records, _ = run_json(capsys, "--trim", "--out", str(out), str(data), str(single))
    assert status == 1
    assert (out / "data" / "sub" / "clean.txt").read_bytes() == clean_bytes
    trimmed = (out / "data" / "loop.txt").read_bytes()
    start = next(r["start"] for r in records if r["path"].endswith("loop.txt"))
    assert (
        trimmed.startswith(b"\xfe" + loop_text(0)[: start - 1].encode())
        and b"[loopbreak: removed" in trimmed
    )
    assert (out / "single.txt").read_text(encoding="utf-8") == loopbreak.trim(loop_text(1)).text


def test_in_place_rewrites_only_files_with_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop, clean, table = tmp_path / "loop.txt", tmp_path / "clean.txt", tmp_path / "t.parquet"
    loop.write_text(loop_text(2), encoding="utf-8")
    loop.chmod(0o640)
    clean.write_text(clean_text(2), encoding="utf-8")
    write_parquet(table, texts(200, 20))
    untouched = (clean.stat().st_ino, clean.stat().st_mtime_ns)
    status, _, err = run_json(
        capsys, "--column", "text", "--trim", "--in-place", str(loop), str(clean), str(table)
    )
    assert status == 1 and "trimmed 2 files in place" in err
    assert loop.read_text(encoding="utf-8") == loopbreak.trim(loop_text(2)).text
    assert loop.stat().st_mode & 0o777 == 0o640
    assert (clean.stat().st_ino, clean.stat().st_mtime_ns) == untouched
    assert pq.read_table(table).column("text_loopbreak").null_count == 190
    assert sorted(os.listdir(tmp_path)) == ["clean.txt", "loop.txt", "t.parquet"]
    assert main(["scan", "--column", "text", str(loop), str(clean), str(table)]) == 0


def test_option_misuse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "a.txt"
    path.write_text("fine", encoding="utf-8")
    for args, message in [
        (["--trim"], "--trim needs --out DIR or --in-place"),
        (["--out", str(tmp_path / "out")], "--out and --in-place go with --trim"),
        (["--trim", "--out", str(path)], "is a file, not a folder"),
        (
            ["--trim", "--out", str(tmp_path)],
            "its cleaned copy would overwrite it (use --in-place)",
        ),
    ]:
        assert main(["scan", *args, str(path)]) == 2
        assert message in capsys.readouterr().err
    assert path.read_text(encoding="utf-8") == "fine"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    path = tmp_path / "chats.parquet"
    write_parquet(path, texts(20_000, 100))
    command = [sys.executable, "-m", "loopbreak.cli", "scan", "--column", "text", str(path)]

    piped = subprocess.run(command, capture_output=True, text=True, check=False)
    assert piped.returncode == 1 and piped.stderr == ""

    # stderr on a terminal (of 100 columns): the bar is drawn there; the report goes to stdout.
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with (tmp_path / "out.txt").open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=follower)
    os.close(follower)
    screen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the command ended and closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    os.close(leader)
    assert process.wait() == 1
    assert b"scanning:" in screen and b"%|" in screen
    assert "200 rows with findings" in (tmp_path / "out.txt").read_text()


def test_one_record_for_a_finding_whatever_the_format() -> None:
    """A line longer than the detector's window is reported by the part of it the window holds:
    the record of its finding is the same from a list of texts and from an Arrow column (so
    JSON lines, SQLite and text output agree with Parquet and Ray)."""
    import random

    from loopbreak.scanning.findings import scan_batch

    words = ["model", "answer", "tool", "loader", "stream", "guard", "token", "agent", "plan"]
    pick = random.Random(7).choice
    long_line = " ".join(pick(words) for _ in range(4000))  # ~24,000 units: longer than the window
    text = "header\n" + (long_line + "\n") * 30
    as_list = scan_batch([text, "clean"])
    as_arrow = scan_batch(pa.chunked_array([pa.array([text]), pa.array(["clean"])]))
    assert as_list.records and as_list.records == as_arrow.records
    assert as_list.rows == as_arrow.rows == [0]
    (finding,) = loopbreak.scan(text)
    assert (
        as_list.records[0]["block"]
        == finding.block
        != text[finding.start : finding.start + finding.period]
    )
