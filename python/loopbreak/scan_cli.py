"""``loopbreak scan FILE...``: the findings of plain text files.

Exit status: 0 when no file has a finding, 1 when some do, 2 when a file could not be read (the
other files are still scanned)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from loopbreak._core import Finding, scan


def register(commands: Any) -> None:
    parser = commands.add_parser("scan", help="print the repetition loops in text files")
    parser.add_argument("paths", nargs="+", type=Path, metavar="FILE", help="UTF-8 text files ('-' for stdin)")
    parser.add_argument("--json", action="store_true", help="one JSON object per finding")
    parser.set_defaults(handler=run)


def read(path: Path) -> str:
    if str(path) == "-":
        return sys.stdin.read()
    # Undecodable bytes become lone surrogates: one unit each, offsets still index the str.
    return path.read_text(encoding="utf-8", errors="surrogateescape")


def describe(finding: Finding) -> str:
    block = finding.block if len(finding.block) <= 60 else finding.block[:60] + "..."
    return (
        f"{finding.rule}: {block!r} x{finding.repeats}+ from offset {finding.start}"
        f" (period {finding.period}, rule held at {finding.detected_at})"
    )


def run(args: argparse.Namespace) -> int:
    status = 0
    for path in args.paths:
        try:
            text = read(path)
        except OSError as error:
            print(f"loopbreak scan: {path}: {error.strerror or error}", file=sys.stderr)
            status = 2
            continue
        findings = scan(text)
        for finding in findings:
            if args.json:
                print(json.dumps({"path": str(path), **finding.to_dict()}, ensure_ascii=False))
            else:
                print(f"{path}: {describe(finding)}")
        if not args.json and not findings:
            print(f"{path}: no loop ({len(text)} chars)")
        if findings and status == 0:
            status = 1
    return status
