"""The default rules against held-out outputs of Gemma 3 270M: new prompts (lists, plans, tables,
logs) at a server's default sampling, repeat penalty 1.1 (tests/data/README.md). The rules were
not tuned on them. Every exact loop long enough is found early, no clean output is flagged, and
the loops and near-loops no rule finds are named with why. Data only: the model is not needed
to run these tests."""

from __future__ import annotations

from typing import Any

import pytest

import loopbreak
from support import model_labels, model_outputs

OUTPUTS = model_outputs.load("gemma3_270m_server_outputs.jsonl")
TEXTS = {str(output["id"]): str(output["text"]) for output in OUTPUTS}

# Exact loops the default rules do not find, by id, with why; the set is exact.
LOOPS_MISSED = {
    # An echoed prompt line and `next-row`, 3.1 copies of 198 chars at the 700-token cut.
    "h05-server": "3 copies of a 198-char block: a long block needs 4",
    # ` \n` 32 times (64 units) under `請回答下列問題：\n1、`, then again with fewer: whitespace
    # blocks need 1,024 units, and the runs between the headers are shorter each time.
    "h14-server": "runs of blank lines of 64 units or less",
}
# Near-loops the default rules do not find, by id, with why; the set is exact.
NEAR_LOOPS_MISSED = {
    "h02-server": "a line of numbers losing a `.0` every few copies: no line equals the last",
    "h06-server": "the echoed prompt's endings change, each new ending bringing new words",
    "h09-server": "the count reaches 4 digits (data, no number) and the last word changes",
    "h15-server": "lines of dates of 4 digits and more: data, no number, no exact repeat",
}
# The near-loops the template-lines rule finds, where it first holds: the echoed prompt cycling
# through a few numbered wordings in no fixed order, copies among them (`Write 20 numbered tips
# for shopping ...`); the echoed prompt in eight wordings (`Составь список из N книг для чтения
# летом/зимой с (кратким) описанием каждой/каждого.`), a new wording of the words before it
# being a near-copy. Both echo from their first line: h13 is found within the 1,500 units of the
# recall target, h03 past them. h04 counts `#N` (lines too short to count) broken every 2-7 lines
# by a header, `Exercise N` or `Exercise N (1)`, the headers counting on: a counted list of two
# templates, found at its 25th header, 810 units into the loop.
TEMPLATE_LOOPS = {"h03-server": 1647, "h04-server": 1007, "h13-server": 946}


def ids(label: str) -> list[str]:
    return model_outputs.ids(OUTPUTS, label)


@pytest.mark.parametrize("output", OUTPUTS, ids=[str(output["id"]) for output in OUTPUTS])
def test_the_labels_follow_the_rule(output: dict[str, Any]) -> None:
    assert model_labels.label(output) == output


def test_no_clean_output_is_flagged() -> None:
    assert {id_: loopbreak.scan(TEXTS[id_]) for id_ in ids("clean")} == {
        id_: [] for id_ in ids("clean")
    }


def test_loops_and_near_loops_missed_are_the_named_ones() -> None:
    missed = model_outputs.missed(OUTPUTS, "loop"), model_outputs.missed(OUTPUTS, "near-loop")
    assert missed == (set(LOOPS_MISSED), set(NEAR_LOOPS_MISSED))
    for id_, held_at in TEMPLATE_LOOPS.items():
        first = loopbreak.scan(TEXTS[id_])[0]
        assert (first.rule, first.detected_at) == ("template_lines", held_at), id_


@pytest.mark.parametrize("id_", [id_ for id_ in ids("loop") if id_ not in LOOPS_MISSED])
def test_each_loop_is_found_early(id_: str) -> None:
    [output] = [output for output in OUTPUTS if output["id"] == id_]
    assert model_outputs.found_early(output, loopbreak.scan(TEXTS[id_])[0])
