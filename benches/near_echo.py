"""Near-copies of any paragraph or line: the two readings used in the field, measured on the
hand-written part of the wide benign corpus and on every labelled model output, to say whether
either tells a paraphrase or drift loop from what people write.

    python benches/near_echo.py        # ~4 minutes

A segment's *words* are its runs of letters, case folded (numbers and punctuation dropped; a
CJK, kana or hangul unit is a word of its own). Segments are paragraphs (runs of non-blank
lines) or lines, each reading measured on both; a segment of fewer than three words is passed
over. The readings, as their authors describe them:

- **trigram**: a segment whose word trigrams have a Jaccard similarity of 0.8 or more with at
  least 3 of the 16 segments before it repeats, and the text is flagged at the first segment
  that repeats (a thinking-block rule reported with no false positive on 13.5k clean thinking
  blocks: can1357/oh-my-pi, packages/ai/src/utils/thinking-loop.ts);
- **echo density**: a segment whose word set has a Jaccard similarity of 0.5 or more with one of
  the 32 segments before it echoes, and the text is flagged once 8 of the last 12 segments echo
  (code-yeongyu/senpi#1763).

Each reading flags from the start of a text, and again with a warm-up (``WARM_UP``: nothing
flagged in the first 4,000 units, the history still kept). Each reading's count of flagged
hand-written files is what a near rule built on it would flag,
given also for documents alone (``DOCUMENTS``: no source code, as a reasoning trace holds
little); the labelled outputs show which loops it would find, and which clean answers it would
flag.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from inline_numbers import model_texts

import loopbreak

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support import benign  # noqa: E402

LETTERS = re.compile(r"[^\W\d_]+")
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
SEGMENTS = {"paragraphs": re.compile(r"(?:[^\n]*[^\s][^\n]*\n?)+"), "lines": re.compile(r"[^\n]+")}
SHORTEST = 3  # words
# Files of prose: documentation, licences, man pages and the like (no suffix).
DOCUMENTS = frozenset({".md", ".rst", ".txt", ".html", ".htm", ""})

TRIGRAM_SIMILAR = 0.8
TRIGRAM_LOOKBACK = 16
TRIGRAM_MATCHES = 3
ECHO_SIMILAR = 0.5
ECHO_LOOKBACK = 32
ECHO_WINDOW = 12
ECHO_NEEDED = 8
# A warm-up, as the trigram reading's authors apply one: nothing is flagged before it.
WARM_UP = 4000  # units

Shingles = frozenset[object]


def words(segment: str) -> list[str]:
    found: list[str] = []
    for run in LETTERS.findall(segment.lower()):
        found.extend(run if CJK.search(run) else [run])
    return found


def jaccard(a: Shingles, b: Shingles) -> float:
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def segments(text: str, kind: str) -> Iterator[tuple[int, list[str]]]:
    """Each segment's end and words, for segments of ``SHORTEST`` words or more."""
    for match in SEGMENTS[kind].finditer(text):
        found = words(match.group())
        if len(found) >= SHORTEST:
            yield match.end(), found


def trigram(text: str, kind: str, warm_up: int = 0) -> int | None:
    """Where the trigram reading flags ``text`` past its first ``warm_up`` units, or None."""
    before: list[Shingles] = []
    for end, found in segments(text, kind):
        grams = frozenset(zip(found, found[1:], found[2:]))
        similar = sum(jaccard(grams, other) >= TRIGRAM_SIMILAR for other in before)
        if similar >= TRIGRAM_MATCHES and end > warm_up:
            return end
        before = [*before[1 - TRIGRAM_LOOKBACK :], grams]
    return None


def echo_density(text: str, kind: str, warm_up: int = 0) -> int | None:
    """Where the echo-density reading flags ``text`` past its first ``warm_up`` units, or
    None."""
    before: list[Shingles] = []
    echoes: list[bool] = []
    for end, found in segments(text, kind):
        word_set = frozenset(found)
        echoes = [
            *echoes[1 - ECHO_WINDOW :],
            any(jaccard(word_set, o) >= ECHO_SIMILAR for o in before),
        ]
        if sum(echoes) >= ECHO_NEEDED and end > warm_up:
            return end
        before = [*before[1 - ECHO_LOOKBACK :], word_set]
    return None


READINGS: dict[str, Callable[[str, str, int], int | None]] = {
    "trigram": trigram,
    "echo density": echo_density,
}


def main() -> None:
    hand_written = list(benign.hand_written())
    outputs = model_texts()
    found_now = {name for name, (_, text) in outputs.items() if loopbreak.scan(text)}
    documents = sum(Path(path).suffix.lower() in DOCUMENTS for path, _ in hand_written)
    print(
        f"hand-written files: {len(hand_written)} ({documents} documents); "
        f"labelled outputs: {len(outputs)}"
    )
    for reading, flags in READINGS.items():
        for kind in SEGMENTS:
            flagged = [path for path, text in hand_written if flags(text, kind, 0) is not None]
            late = sum(flags(text, kind, WARM_UP) is not None for path, text in hand_written)
            by_label: dict[str, list[str]] = {"near-loop": [], "clean": [], "loop": []}
            for name, (label, text) in outputs.items():
                if flags(text, kind, 0) is not None:
                    by_label[label].append(name)
            near_new = [name for name in by_label["near-loop"] if name not in found_now]
            flagged_documents = [path for path in flagged if Path(path).suffix.lower() in DOCUMENTS]
            print(
                f"\n{reading}, {kind}: {len(flagged)} hand-written files flagged, "
                f"{len(flagged_documents)} of them documents; {late} past their first "
                f"{WARM_UP:,} units"
            )
            for path in flagged_documents[:5]:
                print(f"  {path}")
            print(
                f"  near-loops flagged: {len(by_label['near-loop'])}, of them no rule finds: "
                f"{len(near_new)} {near_new}"
            )
            print(f"  clean answers flagged: {by_label['clean']}")


if __name__ == "__main__":
    main()
