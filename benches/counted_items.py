"""Numbered items that come back: a counted list whose items are drawn from a few texts in no
fixed order (a model listing countries `N. China`, `N. India`, `N. United Arab Emirates`, ...
with the same few coming back), measured on the hand-written part of the wide benign corpus and
on every labelled model output, to say whether such a reading tells a loop from what people
write.

    python benches/counted_items.py        # ~1 minute

Numbers and templates are the template rule's (tests/support/oracle.py: ``template_numbers``,
``template_mask``); a line with no number is passed over. A numbered line is a *counted item*
when its first number is one more than the first number of the numbered line before it, and it
*comes back* when one of the ``LOOKBACK`` numbered lines before it has its template. Per text:
the longest run of counted items that come back, among runs holding two templates or more (a
run of one template is the counter rule's, and cycles of two or three lines in a fixed order
are found by it too), with the count of its templates.
"""

from __future__ import annotations

import sys
from pathlib import Path

from inline_numbers import model_texts

import loopbreak

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support import benign  # noqa: E402
from support.oracle import template_mask, template_numbers  # noqa: E402

LOOKBACK = 16  # numbered lines, as the template rule's lookback


def longest_run(text: str) -> tuple[int, int]:
    """The most counted items that come back in a row, with two templates or more among them,
    and how many templates they hold."""
    best = (0, 0)
    first_before: int | None = None
    lookback: list[tuple[str, ...]] = []
    run: list[tuple[str, ...]] = []
    for line in text.split("\n"):
        content = line.rstrip()
        numbers = template_numbers(content)
        if not numbers:
            continue
        i, j = numbers[0]
        first = int(content[i:j])
        template = template_mask(content)
        counted = first_before is not None and first == first_before + 1
        run = [*run, template] if counted and template in lookback[-LOOKBACK:] else []
        templates = len(set(run))
        if templates >= 2 and len(run) > best[0]:
            best = (len(run), templates)
        first_before = first
        lookback.append(template)
    return best


def main() -> None:
    files = sorted(
        ((*longest_run(text), path) for path, text in benign.hand_written()), reverse=True
    )
    print(f"hand-written files: {len(files)}; the longest runs (lines, templates):")
    for lines, templates, path in files[:6]:
        print(f"  {lines:4d} {templates:3d}  {path}")
    print("\nlabelled model outputs with a run of 8 or more (found: some rule finds the output):")
    for name, (label, text) in model_texts().items():
        lines, templates = longest_run(text)
        if lines >= 8:
            found = "found" if loopbreak.scan(text) else "not found"
            print(f"  {name:24s} {label:10s} {lines:4d} {templates:3d}  {found}")


if __name__ == "__main__":
    main()
