"""JSON lines as users have them: numbers beyond a double, a byte-order mark, a line nested
deeper than any parser recurses, standard input closed. Each was a fault (a rewritten number,
a lost line, a traceback); each is a regression test here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import loopbreak
from loopbreak.cli import main
from support.transcripts import loop_text

LOOP = loop_text(0)


def trim_out(tmp_path: Path, data: bytes, field: str = "t") -> tuple[int, bytes, str]:
    """Exit status, the cleaned copy and stderr of ``scan --trim --out`` over ``data``."""
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "loopbreak.cli",
            "scan",
            "--field",
            field,
            "--trim",
            "--out",
            str(tmp_path / "out"),
            str(path),
        ],
        capture_output=True,
        timeout=120,
    )
    copy = tmp_path / "out" / "in.jsonl"
    return done.returncode, copy.read_bytes() if copy.exists() else b"", done.stderr.decode()


@pytest.mark.parametrize(
    "number",
    ["1e400", "12345678901234567890123.5", "-0.0", "1E+2", "123456789012345678901234567890"],
)
def test_trimming_a_line_keeps_its_numbers_as_written(tmp_path: Path, number: str) -> None:
    before = f'{{"n": {number},  "t": {json.dumps(LOOP)}, "m": [1.50, {number}]}}\n'
    status, copy, err = trim_out(tmp_path, before.encode())
    assert status == 1, err
    head, text = before.split('"t": ')[0], loopbreak.trim(LOOP).text
    assert copy.decode().startswith(
        head + '"t": ' + json.dumps(text, ensure_ascii=False) + ', "t_loopbreak": '
    )
    assert copy.decode().endswith(f', "m": [1.50, {number}]}}\n')
    assert json.loads(copy)["t"] == text


def test_a_byte_order_mark_is_not_part_of_line_one(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    data = bom + json.dumps({"t": LOOP}).encode() + b"\n" + b'{"t": "clean"}\n'
    status, copy, err = trim_out(tmp_path, data)
    assert status == 1, err
    assert (
        "line 1 field t: periodic_run"
        in subprocess.run(
            [
                sys.executable,
                "-m",
                "loopbreak.cli",
                "scan",
                "--field",
                "t",
                str(tmp_path / "in.jsonl"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    )
    assert copy.startswith(bom)
    assert json.loads(copy[len(bom) :].splitlines()[0])["t"] == loopbreak.trim(LOOP).text
    assert copy.endswith(b'\n{"t": "clean"}\n')


def test_a_byte_order_mark_before_a_line_python_reads(tmp_path: Path) -> None:
    # NaN is left to Python's json: the mark must not reach it either.
    data = b"\xef\xbb\xbf" + f'{{"x": NaN, "t": {json.dumps(LOOP)}}}\n'.encode()
    status, copy, err = trim_out(tmp_path, data)
    assert status == 1, err
    assert copy.startswith(b'\xef\xbb\xbf{"x": NaN, "t": ')


def test_a_line_nested_too_deeply_is_that_lines_error(tmp_path: Path) -> None:
    # NaN leaves the line to Python's json, which recurses once per bracket.
    deep = b'{"x": NaN, "t": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    data = (
        json.dumps({"t": LOOP}).encode() + b"\n" + deep + json.dumps({"t": LOOP}).encode() + b"\n"
    )
    status, copy, err = trim_out(tmp_path, data)
    assert status == 2
    assert "Traceback" not in err
    assert f"{tmp_path / 'in.jsonl'}: line 2: nested too deeply" in err
    lines = copy.splitlines(keepends=True)
    assert lines[1] == deep and json.loads(lines[2])["t"] == loopbreak.trim(LOOP).text


def test_a_loop_beside_a_value_nested_deeper_than_json_recurses_is_trimmed(tmp_path: Path) -> None:
    # The Rust reader skips the deep list; the splice skips it too, without recursing.
    deep = "[" * 100_000 + "]" * 100_000
    status, copy, err = trim_out(tmp_path, f'{{"x": {deep}, "t": {json.dumps(LOOP)}}}\n'.encode())
    assert status == 1, err
    head = f'{{"x": {deep}, "t": {json.dumps(loopbreak.trim(LOOP).text, ensure_ascii=False)}, '
    assert copy.decode().startswith(head + '"t_loopbreak": [')


def test_an_unexpected_error_in_one_file_is_reported_and_the_scan_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopbreak.scanning import text_files

    def broken(*args: object) -> None:
        raise MemoryError("out of memory")

    (tmp_path / "a.txt").write_text(LOOP)
    (tmp_path / "b.jsonl").write_text(json.dumps({"t": LOOP}) + "\n")
    monkeypatch.setattr(text_files, "scan", broken)
    assert main(["scan", "--field", "t", str(tmp_path / "a.txt"), str(tmp_path / "b.jsonl")]) == 2
    captured = capsys.readouterr()
    assert f"{tmp_path / 'a.txt'}: unexpected error: MemoryError: out of memory" in captured.err
    assert "b.jsonl line 1 field t: periodic_run" in captured.out


def test_scanning_stdin_when_it_is_closed(tmp_path: Path) -> None:
    for args in (["-"], ["--format", "jsonl", "--field", "t", "-"]):
        done = subprocess.run(
            [sys.executable, "-m", "loopbreak.cli", "scan", *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0
        closed = subprocess.run(
            f'"{sys.executable}" -m loopbreak.cli scan {" ".join(args)} <&-',
            shell=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (closed.returncode, closed.stdout) == (2, "")
        assert closed.stderr == "loopbreak scan: standard input is closed\n"
