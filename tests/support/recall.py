"""The recall floor (docs/tuning.md, "The recall floor"), as probes built from real model answers.

Every line that a model wrote (SmolLM2-135M's outputs in ../shared/corpus/model and Gemma 3
270M's in tests/data), repeated as identical lines after a short prefix, must be found by
max(25 copies, 1,024 units of loop); every piece of 20-150 units cut from those answers,
repeated back to back, by max(20 copies, 1,024 units); one visible char by 1,024 units, and a
line of one char by 512 lines. "Found by" is where the first finding's rule held
(``detected_at``), counted from the start of the loop; a copy is rounded up whole, so a line of
L units is due after max(25, ceil(1024 / (L + 1))) copies.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import loopbreak

from .shared_corpus import DEVELOPMENT_SET

TESTS = Path(__file__).resolve().parent.parent
OUTPUT_FILES = (DEVELOPMENT_SET, TESTS / "data" / "gemma3_270m_outputs.jsonl")

PREFIX = "Sure, here it is:\n"
FLOOR_UNITS = 1024
LINE_COPIES = 25
PIECE_COPIES = 20
PIECE_LENGTHS = (20, 150)
ONE_CHAR_LINES = 512


def model_outputs() -> list[dict[str, object]]:
    """Every output of both model families, as labelled in their files."""
    return [
        json.loads(line)
        for path in OUTPUT_FILES
        if path.is_file()
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


def model_lines() -> list[str]:
    """Every distinct non-empty line of the models' answers (trailing whitespace dropped)."""
    seen: dict[str, None] = {}
    for output in model_outputs():
        for line in str(output["text"]).splitlines():
            line = line.rstrip()
            if line:
                seen.setdefault(line, None)
    return list(seen)


def model_pieces(count: int, seed: int = 24) -> list[str]:
    """``count`` pieces of 20-150 units cut at random from the models' answers (at any unit,
    as a model that loops mid-line does), each distinct and holding a visible char."""
    texts = [str(o["text"]) for o in model_outputs() if len(str(o["text"])) > PIECE_LENGTHS[1]]
    rng = random.Random(seed)
    pieces: dict[str, None] = {}
    while len(pieces) < count:
        text = rng.choice(texts)
        length = rng.randint(*PIECE_LENGTHS)
        at = rng.randrange(len(text) - length)
        piece = text[at : at + length]
        if piece.strip():
            pieces.setdefault(piece, None)
    return list(pieces)


def copies_due(period: int, least_copies: int) -> int:
    """Copies by which a loop of ``period`` units must be found: max(least, 1 KB)."""
    return max(least_copies, -(-FLOOR_UNITS // period))


@dataclass(frozen=True)
class Probe:
    """One loop built from a model's line or piece, and whether it was found in time."""

    shape: str
    period: int
    due: int  # units of loop by which it must be found
    found_at: int | None  # units of loop at the first finding's detected_at, None if not found

    @property
    def in_time(self) -> bool:
        return self.found_at is not None and self.found_at <= self.due


def probe(shape: str, loop: str, period: int, due_copies: int, rules: loopbreak.Rules) -> Probe:
    """Feeds ``PREFIX`` and enough copies of the loop (its period ``period``) to see whether
    it is found by ``due_copies`` copies."""
    copies = loop * (due_copies + 4)
    found = loopbreak.scan(PREFIX + copies, rules=rules)
    found_at = found[0].detected_at - len(PREFIX) if found else None
    return Probe(shape, period, due_copies * period, found_at)


def line_probes(rules: loopbreak.Rules, lines: list[str] | None = None) -> Iterator[Probe]:
    """Each line repeated as identical lines."""
    for line in model_lines() if lines is None else lines:
        period = len(line) + 1
        yield probe(line, line + "\n", period, copies_due(period, LINE_COPIES), rules)


def piece_probes(rules: loopbreak.Rules, pieces: list[str]) -> Iterator[Probe]:
    """Each piece repeated back to back."""
    for piece in pieces:
        yield probe(piece, piece, len(piece), copies_due(len(piece), PIECE_COPIES), rules)


def char_probes(rules: loopbreak.Rules) -> Iterator[Probe]:
    """Each visible char of the answers repeated on its own, and as a line of one char."""
    chars = sorted({ch for line in model_lines() for ch in line if not ch.isspace()})
    for ch in chars:
        yield probe(ch, ch, 1, FLOOR_UNITS, rules)
        yield probe(ch + "\\n", ch + "\n", 2, ONE_CHAR_LINES, rules)
