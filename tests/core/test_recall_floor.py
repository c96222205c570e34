"""The recall floor and the bound (docs/tuning.md, "The recall floor", "The bound"), for the
default rules.

The floor: lines and pieces of real model answers, repeated, are found by max(25 copies, 1 KB)
as lines and max(20 copies, 1 KB) back to back; one visible char by 1,024 units, a line of one
char by 512 lines (tests/support/recall.py builds the probes; ``python benches/recall.py``
prints the same with the worst shapes). The bound: whatever keeps repeating is found by 4,096
units, whatever it is made of.
"""

from __future__ import annotations

import pytest

import loopbreak
from support import recall
from support.shared_corpus import needs_corpus

DEFAULTS = loopbreak.Rules()


def share_in_time(probes: list[recall.Probe]) -> float:
    return sum(p.in_time for p in probes) / len(probes)


@needs_corpus  # over 800 of the lines are SmolLM2's, in ../shared/corpus
def test_the_models_lines_repeated_are_found_by_25_copies_or_a_kilobyte() -> None:
    probes = list(recall.line_probes(DEFAULTS))
    assert len(probes) > 800
    assert share_in_time(probes) >= 0.95, [p for p in probes if not p.in_time][:10]


def test_pieces_of_the_models_answers_back_to_back_are_found_by_20_copies_or_a_kilobyte() -> None:
    probes = list(recall.piece_probes(DEFAULTS, recall.model_pieces(1000)))
    assert share_in_time(probes) >= 0.95, [p for p in probes if not p.in_time][:10]


def test_every_visible_char_is_found_by_a_kilobyte_and_its_line_by_512_lines() -> None:
    probes = list(recall.char_probes(DEFAULTS))
    assert len(probes) > 100
    assert [p for p in probes if not p.in_time] == []


@pytest.mark.parametrize(
    "line",
    [
        # A real greedy answer of a small instruct model, 98 copies to the length limit: a line
        # with quotes and parentheses counted as code, and code needed 100 lines.
        '- "to be" (be)',
        # Line shapes of model answers that needed 89 to 293 copies.
        "    },",
        "else:",
        "30. Qatar (QAR)",
        "      app: nginx",
    ],
)
def test_lines_models_loop_on_are_found_within_the_floor(line: str) -> None:
    due = recall.copies_due(len(line) + 1, recall.LINE_COPIES)
    found = recall.probe(line, line + "\n", len(line) + 1, due, DEFAULTS)
    assert found.in_time, found


@pytest.mark.parametrize("piece", ['"tool": "run_tests", ', "21. Luxembourg (LUX) "])
def test_pieces_models_loop_on_are_found_within_the_floor(piece: str) -> None:
    due = recall.copies_due(len(piece), recall.PIECE_COPIES)
    assert recall.probe(piece, piece, len(piece), due, DEFAULTS).in_time


@pytest.mark.parametrize(
    ("text", "by"),
    [
        # A model's run of zeros to the token limit (1,117 of them), and a run of one letter.
        ("The value is 1" + "0" * 1117, 1024),
        ("a" * 2000, 1024),
        # A one-char line needed 750 lines.
        ("Any questions?\n" + "?\n" * 600, 1024),
        # After a data URI's prefix: the payload exemption left this loop unbounded.
        ("![img](data:image/png;base64," + "A" * 20000, 1024),
    ],
)
def test_the_named_loops_of_one_char_are_found(text: str, by: int) -> None:
    [finding] = loopbreak.scan(text)
    assert finding.detected_at - finding.start <= by


BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg"
)


@pytest.mark.parametrize(
    ("before", "loop"),
    [
        ("x = 1\n", " "),
        ("x = 1\n", "\n"),
        ("x = 1\n", "\t"),
        ("x = 1\n", "─"),
        ("x = 1\n", "-"),
        ("x = 1\n", "= "),
        ("DATA = [\n", "    None,\n"),
        ("| a | b |\n", "|---|---|\n"),
        ("row:", "0, "),
        ("src: data:image/png;base64," + BASE64, "A"),
        ("src: data:image/png;base64," + BASE64, "AAAB"),
        ("mappings: ", "AAAA,"),
        ("table:\n", "[ 0   1   2   3  ...... 30  31 ]\n[ 32  33  34  35 ...... 62  63 ]\n"),
    ],
)
def test_no_class_of_content_is_exempt_whatever_keeps_repeating_is_found_by_4096_units(
    before: str, loop: str
) -> None:
    for rules in (DEFAULTS, loopbreak.Rules.conservative()):
        found = loopbreak.scan(before + loop * (8192 // len(loop)), rules=rules)
        assert found, (rules, loop)
        assert found[0].detected_at - len(before) <= 4096 + len(loop)
