"""The pieces of model text quoted in public issue threads (tests/data/issue_excerpts) and their
labels, as SOURCES.md's table gives them."""

from __future__ import annotations

import re
from pathlib import Path

EXCERPTS = Path(__file__).resolve().parents[1] / "data" / "issue_excerpts"


def labels() -> dict[str, str]:
    """Each excerpt's label (clean, loop or near-loop, with any qualifier), by file name."""
    found = {}
    for line in (EXCERPTS / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        match = re.match(r"\|\s*(\d\d\.txt)\s*\|", line)
        if match:
            cells = [cell.strip() for cell in line.split("|")]
            found[match.group(1)] = cells[5]
    return found
