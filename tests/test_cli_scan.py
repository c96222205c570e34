"""``loopbreak scan``: findings of text files, exit status 0 clean / 1 findings / 2 unreadable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopbreak.cli import main


def test_scan_reports_findings_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = tmp_path / "loop.txt"
    loop.write_text("Plan:\n" + "loadTools." * 300, encoding="utf-8")
    clean = tmp_path / "clean.txt"
    clean.write_text("Nothing repeats in this answer.\n", encoding="utf-8")

    assert main(["scan", str(clean)]) == 0
    assert "no loop" in capsys.readouterr().out

    assert main(["scan", str(clean), str(loop)]) == 1
    out = capsys.readouterr().out
    assert "periodic_run: 'loadTools.' x20+ from offset 6" in out

    assert main(["scan", "--json", str(loop)]) == 1
    record = json.loads(capsys.readouterr().out)
    assert (record["path"], record["block"], record["start"], record["detected_at"]) == (str(loop), "loadTools.", 6, 206)

    assert main(["scan", str(tmp_path / "missing.txt"), str(loop)]) == 2
    captured = capsys.readouterr()
    assert "missing.txt" in captured.err and "loadTools." in captured.out


def test_scan_undecodable_bytes_keep_offsets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bytes.txt"
    path.write_bytes(b"\xff\xfe" + "это снова ".encode() * 60)
    assert main(["scan", "--json", str(path)]) == 1
    record = json.loads(capsys.readouterr().out)
    assert (record["block"], record["start"]) == ("это снова ", 2)
