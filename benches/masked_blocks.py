"""Blocks of lines that repeat once their numbers are masked: structured output whose entries
differ in a number field (a pretty-printed JSON list of objects whose `id` counts on), measured on
the hand-written part of the wide benign corpus and on every labelled model output, to say
whether such a reading tells a loop from what people write.

    python benches/masked_blocks.py        # ~15 s

A line's *template* is its content, whitespace at both ends dropped, with each number masked,
where a number is what the line rules read as one: a run of one to three ASCII digits that
touches no ASCII letter, underscore or further digit (years, ids and versions stay as they are).
Per text: the most copies, back to back, of a block of 2 to ``LONGEST_BLOCK`` non-blank lines
whose templates repeat, where the block is no repetition of a shorter one (a single line's
templates are the counter and template rules') and the copies are not all alike (exact copies
are the exact rules').
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from inline_numbers import model_texts

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support import benign  # noqa: E402

NUMBER = re.compile(r"(?<![A-Za-z_0-9])[0-9]{1,3}(?![A-Za-z_0-9])")
LONGEST_BLOCK = 12  # lines


def primitive(block: list[str]) -> bool:
    """Whether ``block`` is no repetition of a shorter block."""
    p = len(block)
    return not any(
        p % d == 0 and all(block[j] == block[j - d] for j in range(d, p)) for d in range(1, p)
    )


def most_copies(text: str) -> float:
    """The most copies of a block of lines whose templates repeat back to back, numbers
    changing."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    templates = [NUMBER.sub("0", line) for line in lines]
    best = 0.0
    for p in range(2, LONGEST_BLOCK + 1):
        run = 0  # lines whose template equals the one p before
        for i in range(p, len(lines)):
            run = run + 1 if templates[i] == templates[i - p] else 0
            if run >= p and primitive(templates[i - p + 1 : i + 1]):
                copies = lines[i - run - p + 1 : i + 1]
                if any(copies[j] != copies[j - p] for j in range(p, len(copies))):
                    best = max(best, (run + p) / p)
    return best


def main() -> None:
    files = sorted(
        ((most_copies(text), path) for path, text in benign.hand_written()), reverse=True
    )
    print(f"hand-written files: {len(files)}; the most copies:")
    for copies, path in files[:6]:
        print(f"  {copies:6.1f}  {path}")
    print("\nlabelled model outputs with 4 copies or more:")
    for name, (label, text) in model_texts().items():
        copies = most_copies(text)
        if copies >= 4:
            print(f"  {name:24s} {label:10s} {copies:6.1f}")
    entries = [{"id": n, "city": "Paris", "population": 2100000} for n in range(1, 65)]
    print(f"\n64 JSON objects, an id counting on: {most_copies(json.dumps(entries, indent=2)):.1f}")


if __name__ == "__main__":
    main()
