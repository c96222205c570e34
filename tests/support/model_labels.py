"""The labelling rule of ../shared/corpus/model/README.md, independent of the detector.

    python tests/support/model_labels.py IN.jsonl OUT.jsonl

Exact periodic runs: for every period p from 1 to 4096 characters, the longest stretch in which
each character equals the one p later, counted when it holds two full periods; its reported
period is the stretch's smallest period. An output is a ``loop`` when some run has at least 3
repeats and covers 400 characters or has 20 repeats, or when 10 identical non-empty lines come in
a row (blank lines ignored). The longest qualifying run is reported (on a tie, the smaller
period); for ``clean`` output the longest run of any size, for reference.

A row that already has a non-empty ``note`` carries a manual decision: its ``label`` is kept.
For a ``near-loop`` the run fields come from the same rule over the text with every run of
digits collapsed to ``0`` (period and repeats in collapsed characters, start and end in the
original text); if that finds no qualifying run, ``start`` (by eye) is kept, ``end`` is the end
of the text and period/repeats are null. Running this again over its own output changes nothing.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

MAX_PERIOD = 4096
MIN_REPEATS = 3
MIN_SPAN = 400
MANY_REPEATS = 20
MIN_LINE_STREAK = 10
DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class Run:
    """``text[start:end]`` repeats with ``period`` characters."""

    start: int
    end: int
    period: int

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def repeats(self) -> float:
        return self.length / self.period

    def qualifies(self) -> bool:
        return self.repeats >= MIN_REPEATS and (
            self.length >= MIN_SPAN or self.repeats >= MANY_REPEATS
        )


def smallest_period(text: str) -> int:
    """The smallest p with text[i] == text[i + p] for every i (prefix function)."""
    border = [0] * len(text)
    for i in range(1, len(text)):
        k = border[i - 1]
        while k and text[i] != text[k]:
            k = border[k - 1]
        if text[i] == text[k]:
            k += 1
        border[i] = k
    return len(text) - border[-1]


def periodic_runs(text: str) -> list[Run]:
    """For each period, its longest stretch (the first of equal ones) holding two full periods."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    runs = []
    for p in range(1, min(MAX_PERIOD, len(codes) // 2) + 1):
        equal = np.concatenate(([0], (codes[:-p] == codes[p:]).astype(np.int8), [0]))
        edges = np.flatnonzero(np.diff(equal))
        if len(edges) == 0:
            continue
        lengths = edges[1::2] - edges[0::2]
        best = int(np.argmax(lengths))
        if lengths[best] < p:  # the stretch is lengths + p characters: two periods
            continue
        start = int(edges[2 * best])
        end = start + int(lengths[best]) + p
        runs.append(Run(start, end, smallest_period(text[start:end])))
    return runs


def longest(runs: list[Run]) -> Optional[Run]:
    return min(runs, key=lambda run: (-run.length, run.period), default=None)


def identical_line_streak(text: str) -> int:
    lines = [line for line in text.split("\n") if line.strip()]
    best = streak = 0
    for i, line in enumerate(lines):
        streak = streak + 1 if i and line == lines[i - 1] else 1
        best = max(best, streak)
    return best


def collapse_digits(text: str) -> tuple[str, list[int]]:
    """The text with every digit run as ``0``, and each collapsed character's original offset
    (plus the end of the text)."""
    collapsed: list[str] = []
    offsets: list[int] = []
    last = 0
    for match in DIGITS.finditer(text):
        collapsed.append(text[last : match.start()] + "0")
        offsets.extend(range(last, match.start() + 1))
        last = match.end()
    collapsed.append(text[last:])
    offsets.extend(range(last, len(text) + 1))
    return "".join(collapsed), offsets


def run_fields(run: Optional[Run], offsets: Optional[list[int]] = None) -> dict[str, Any]:
    if run is None:
        return {"period": None, "repeats": None, "start": None, "end": None}
    start, end = (run.start, run.end) if offsets is None else (offsets[run.start], offsets[run.end])
    return {"period": run.period, "repeats": round(run.repeats, 2), "start": start, "end": end}


def label(row: dict[str, Any]) -> dict[str, Any]:
    """The row with ``label``, the run fields, ``identical_line_streak`` and ``note`` set."""
    text = row["text"]
    runs = periodic_runs(text)
    qualifying = longest([run for run in runs if run.qualifies()])
    streak = identical_line_streak(text)
    rule = "loop" if qualifying is not None or streak >= MIN_LINE_STREAK else "clean"
    note = row.get("note", "")
    decided = row["label"] if note else rule
    if decided == "near-loop":
        collapsed, offsets = collapse_digits(text)
        found = longest([run for run in periodic_runs(collapsed) if run.qualifies()])
        fields = run_fields(found, offsets)
        if found is None:
            fields["start"], fields["end"] = row["start"], len(text)
    else:
        fields = run_fields(qualifying if qualifying is not None else longest(runs))
    return {
        **row,
        "label": decided,
        **fields,
        "identical_line_streak": streak,
        "note": note,
    }


def main(source: Path, target: Path) -> None:
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    labelled = [label(row) for row in rows]
    target.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in labelled), encoding="utf-8"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
