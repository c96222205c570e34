"""The baseline loopbreak is compared against: the baseline rules (docs/tuning.md), in pure Python.

Every ~2 KB of growth (``CHECK_EVERY`` chars), look at the last 3,000 chars (``WINDOW``) and flag:

- ``identical_lines``: >= 25 identical consecutive non-empty lines;
- ``periodic_run``: >= 20 back-to-back copies of a block of 1..150 chars, anywhere in the window.

The rules are read literally (a run of 20 spaces is 20 copies of a 1-char block). This is meant as
an honest baseline, written for speed: str methods do the per-char work, Python only probes.
"""

from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass
from typing import Literal, Optional

CHECK_EVERY = 2048
WINDOW = 3000
MIN_LINES = 25
MIN_REPEATS = 20
MAX_PERIOD = 150

# Short periods are probed with one char compare every (MIN_REPEATS - 1) * p chars; longer ones by
# searching the next occurrences of an ANCHOR-char string, which is cheaper per char of window but
# needs the run to hold an anchor plus one period, so it only suits periods above SHORT_PERIODS.
SHORT_PERIODS = 4
ANCHOR = 16
ANCHOR_STRIDE = (MIN_REPEATS - 1) * (SHORT_PERIODS + 1) - ANCHOR + 1

Rule = Literal["identical_lines", "periodic_run"]


@dataclass(frozen=True)
class BaselineFinding:
    rule: Rule
    block: str
    """The repeated line, or one copy of the repeated block (a rotation of it)."""
    detected_at: int
    """Chars seen at the check that fired."""


def _repeated_line(window: str) -> Optional[str]:
    lines = window.split("\n")
    # A streak needs MIN_LINES copies of one line: counting them in C rules out most windows.
    if max(collections.Counter(lines).values()) < MIN_LINES:
        return None
    for line, group in itertools.groupby(lines):
        if line.strip() and sum(1 for _ in group) >= MIN_LINES:
            return line
    return None


def _run_through(w: str, i: int, p: int) -> bool:
    """Whether ``w[k] == w[k + p]`` for (MIN_REPEATS - 1) * p consecutive ``k``, one of them ``i``
    (that is, MIN_REPEATS copies of a block of ``p`` chars, back to back, around ``i``)."""
    need = (MIN_REPEATS - 1) * p
    n = len(w)
    # Such a stretch contains all of [i + 9p, i + 10p) or all of [i - 9p, i - 8p): one slice
    # compare rules out almost every candidate before the exact search.
    ahead = i + 11 * p <= n and w[i + 9 * p : i + 10 * p] == w[i + 10 * p : i + 11 * p]
    behind = i >= 9 * p and w[i - 9 * p : i - 8 * p] == w[i - 8 * p : i - 7 * p]
    if not (ahead or behind):
        return False
    # Longest match forward from i (capped at need), then one compare for the rest behind i.
    lo, hi = 0, min(need, n - i - p)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if w[i : i + mid] == w[i + p : i + p + mid]:
            lo = mid
        else:
            hi = mid - 1
    back = need - lo
    return back <= i and w[i - back : i] == w[i - back + p : i + p]


def _repeated_block(w: str) -> Optional[str]:
    n = len(w)
    # A run of period p holds (MIN_REPEATS - 1) * p matching positions, so a probe every that many
    # chars lands in it.
    for p in range(1, SHORT_PERIODS + 1):
        for i in range(0, n - p, (MIN_REPEATS - 1) * p):
            if w[i] == w[i + p] and _run_through(w, i, p):
                return w[i : i + p]
    # For p > SHORT_PERIODS, a probe every ANCHOR_STRIDE chars has its ANCHOR chars and their copy
    # p later inside the run: every copy of them within MAX_PERIOD is a candidate period.
    for i in range(0, n - ANCHOR + 1, ANCHOR_STRIDE):
        anchor = w[i : i + ANCHOR]
        end = i + MAX_PERIOD + ANCHOR
        j = w.find(anchor, i + SHORT_PERIODS + 1, end)
        while j >= 0:
            if _run_through(w, i, j - i):
                return w[i:j]
            j = w.find(anchor, j + 1, end)
    return None


def check(window: str) -> Optional[tuple[Rule, str]]:
    """The rule that ``window`` breaks and its repeated line or block, or None."""
    line = _repeated_line(window)
    if line is not None:
        return "identical_lines", line
    block = _repeated_block(window)
    if block is not None:
        return "periodic_run", block
    return None


class BaselineDetector:
    """Fed deltas like ``loopbreak.Detector``; checks the last WINDOW chars once CHECK_EVERY chars
    have arrived since the last check (a larger delta is checked once, at its end)."""

    def __init__(self) -> None:
        self.units_seen = 0
        self.findings: list[BaselineFinding] = []
        self._tail = ""
        # Deltas since the last check, joined only when a check is due: `str +=` on an attribute
        # would copy the whole buffer at every token-sized delta.
        self._pending: list[str] = []
        self._pending_len = 0

    def feed(self, delta: str) -> Optional[BaselineFinding]:
        self._pending.append(delta)
        self._pending_len += len(delta)
        self.units_seen += len(delta)
        if self._pending_len < CHECK_EVERY:
            return None
        return self.finish()

    def finish(self) -> Optional[BaselineFinding]:
        """Checks what arrived since the last check (a stream's end)."""
        if not self._pending:
            return None
        self._tail = (self._tail + "".join(self._pending))[-WINDOW:]
        self._pending.clear()
        self._pending_len = 0
        broken = check(self._tail)
        if broken is None:
            return None
        finding = BaselineFinding(broken[0], broken[1], self.units_seen)
        self.findings.append(finding)
        return finding


def scan(text: str) -> list[BaselineFinding]:
    """What a BaselineDetector fed ``text`` in CHECK_EVERY-char pieces finds, the end included."""
    detector = BaselineDetector()
    for start in range(0, len(text), CHECK_EVERY):
        detector.feed(text[start : start + CHECK_EVERY])
    detector.finish()
    return detector.findings
