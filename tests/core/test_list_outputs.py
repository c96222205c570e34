"""The default rules against list answers of SmolLM2-135M and Gemma 3 270M (tests/data/README.md,
`list_outputs.jsonl`): the clean answers untouched, every loop and near-loop found early but the
named ones. Data only: the models are not needed to run these tests."""

from __future__ import annotations

from typing import Any

import pytest

import loopbreak
from support import model_labels, model_outputs

OUTPUTS = model_outputs.load("list_outputs.jsonl")
TEXTS = {str(output["id"]): str(output["text"]) for output in OUTPUTS}

# Loops the default rules do not find, by id, with why; the set is exact. Each is shorter than
# the span its block's class needs (the recall floor's, docs/tuning.md).
LOOPS_MISSED = {
    "gemma-l00-sampled": "6.6 copies of an 82-char block of code (541 chars): code needs 1,024 units",
    "gemma-l01-sampled": "13.9 copies of a 51-char line of numbers (710 chars): needs 21",
    "gemma-l07-sampled": "37.9 copies of an 18-char line of numbers (682 chars): needs 57",
}
# Near-loops the default rules do not find, by id, with why; the set is exact.
NEAR_LOOPS_MISSED = {
    "smollm2-l00-sampled": "bracketed lists of the same ten countries, no two alike",
    "smollm2-l11-sampled": "one line of words drifting a letter at a time",
    "gemma-l05-sampled": "two lines coming back with their repeats changing, in blocks of two",
    "gemma-l10-sampled": "sentences coming back with their numbers of four digits and more",
}
# Counted lists whose items come back, which no rule found before the template rule read them,
# with where it holds: the development set's d33 again (`N. United Arab Emirates (2.1 billion)`
# among six countries), five `African X` animals coming back in no fixed order, and animal names
# coming back (`N. Ocelot`, `N. Lion`) to the token limit.
COUNTED_LISTS = {"smollm2-l00-greedy": 1062, "smollm2-l03-greedy": 536, "smollm2-l03-sampled": 1097}


def ids(label: str) -> list[str]:
    return model_outputs.ids(OUTPUTS, label)


@pytest.mark.parametrize("output", OUTPUTS, ids=[str(output["id"]) for output in OUTPUTS])
def test_the_labels_follow_the_rule(output: dict[str, Any]) -> None:
    assert model_labels.label(output) == output


def test_no_clean_answer_is_flagged() -> None:
    assert {id_: loopbreak.scan(TEXTS[id_]) for id_ in ids("clean")} == {
        id_: [] for id_ in ids("clean")
    }


def test_loops_and_near_loops_missed_are_the_named_ones() -> None:
    missed = model_outputs.missed(OUTPUTS, "loop"), model_outputs.missed(OUTPUTS, "near-loop")
    assert missed == (set(LOOPS_MISSED), set(NEAR_LOOPS_MISSED))
    for id_, held_at in COUNTED_LISTS.items():
        first = loopbreak.scan(TEXTS[id_])[0]
        assert (first.rule, first.detected_at) == ("template_lines", held_at), id_


@pytest.mark.parametrize(
    "id_",
    [
        str(output["id"])
        for output in OUTPUTS
        if output["label"] != "clean" and output["id"] not in LOOPS_MISSED | NEAR_LOOPS_MISSED
    ],
)
def test_each_loop_and_near_loop_is_found_early(id_: str) -> None:
    [output] = [output for output in OUTPUTS if output["id"] == id_]
    assert model_outputs.found_early(output, loopbreak.scan(TEXTS[id_])[0])
