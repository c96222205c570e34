"""Counted lists whose items come back: the template rule's streaks that hold a line of no prose
(docs/how-it-works.md, Template lines), measured on the hand-written part of the wide benign
corpus (or of any folder) and on every labelled model output, for the margin of the count such a
streak needs (`code_counter_min_lines`).

    python benches/counted_items.py                 # the wide benign corpus; ~1 minute
    python benches/counted_items.py --root DIR      # the hand-written files under DIR

Streaks are read by the Python oracle (tests/support/oracle.py, ``template_streaks``), whatever
their length: a line of no prose continues one as an item of a counted list that comes back (it
counts on from the line before it, the text before its count the same, and is a copy of the
latest line of its template save its count, and no data). Printed: the longest such streaks of
the hand-written files (lines, templates), and those of the labelled outputs of 8 lines or more.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from inline_numbers import model_texts

import loopbreak

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support import benign  # noqa: E402
from support.oracle import is_template_prose, template_streaks  # noqa: E402

RULES = loopbreak.Rules()


def longest_counted_streak(text: str) -> tuple[int, int]:
    """The most lines of a streak that holds a line of no prose, and its templates."""
    best = (0, 0)
    for streak in template_streaks(RULES, text):
        if all(is_template_prose(line.content) for line in streak.lines):
            continue
        templates = len({line.template for line in streak.lines})
        best = max(best, (len(streak.lines), templates))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, help="read the hand-written files under this folder")
    args = parser.parse_args()
    files = sorted(
        ((*longest_counted_streak(text), path) for path, text in benign.hand_written(args.root)),
        reverse=True,
    )
    print(f"hand-written files: {len(files)}; the longest streaks (lines, templates):")
    for lines, templates, path in files[:6]:
        print(f"  {lines:4d} {templates:3d}  {path}")
    print("\nlabelled model outputs with such a streak of 8 lines or more:")
    for name, (label, text) in model_texts().items():
        lines, templates = longest_counted_streak(text)
        if lines >= 8:
            print(f"  {name:24s} {label:10s} {lines:4d} {templates:3d}")


if __name__ == "__main__":
    main()
