"""The template candidate's figures in docs/how-it-works.md mean what its docstring says only if
its pieces do: which lines are prose, which numbers are masked, and what a streak needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from template_lines_candidate import Setting, first_hold, is_prose

MEASURED = Setting(min_lines=8, copies=1.5, leave_counting=False)
SHORT_OUTPUTS = (
    Path(__file__).resolve().parent.parent / "tests" / "data" / "gemma3_270m_outputs.jsonl"
)


@pytest.mark.parametrize(
    ("line", "prose"),
    [
        ("Write a YAML config for a Kubernetes deployment with 20 replicas.yaml", True),
        ("東京で一日旅をする際に、東京で何を感じるか", True),
        ("**Step 3:** check the logs again.", True),
        # Camel case is a name, one-letter tokens are no words, `key:` mid-line is a field.
        ("hi def link shHereDoc09 shRedir", False),
        ("R i 2009 2011 - S 21 24 0 -", False),
        ('order: _OrderCF = "C",', False),
        ("x = compute(a, b)  # see above", False),
    ],
)
def test_prose(line: str, prose: bool) -> None:
    assert is_prose(line) == prose


def lines(*rows: str) -> str:
    return "\n".join(rows) + "\n"


def test_a_template_recurring_with_its_number_changing_holds() -> None:
    # The first line is new; the 8 after it recur by their template (`課程` is passed over).
    dates = [8, 21, 13, 30, 21, 16, 8, 13, 30]
    rows = [f"Book the cheapest flight from Lisbon to Prague on {d} March.\n課程" for d in dates]
    assert first_hold(lines(*rows), MEASURED) == (len(lines(*rows)) - 3, rows[-1].split("\n")[0])
    assert first_hold(lines(*rows[:-1]), MEASURED) is None


def test_items_cycling_out_of_order_hold() -> None:
    order = ["a walk", "a museum", "a market", "a museum", "a walk", "a market", "a museum"] * 2
    text = lines(*(f"{n}. Spend the day with {x} in the old town." for n, x in enumerate(order, 1)))
    assert first_hold(text, MEASURED) is not None


def test_what_the_candidate_leaves_alone() -> None:
    # An exact cycle of lines is the exact rules'; distinct items, and lines of code, are no loop.
    cycle = lines(*["The server is up.", "The client retries now.", "The job is queued."] * 10)
    distinct = lines(
        *(f"{n}. Item number {n} is {w} in the list." for n, w in enumerate("abcdefghijklmnop"))
    )
    code = lines(*(f"    value_{n} = compute(x, {n})  # step" for n in range(40)))
    assert [first_hold(text, MEASURED) for text in (cycle, distinct, code)] == [None, None, None]


def test_counting_lines_are_left_to_the_counter_rule_only_when_asked() -> None:
    text = lines(*(f"{n}. Check the server response and the response body." for n in range(1, 20)))
    assert first_hold(text, MEASURED) is not None
    assert first_hold(text, Setting(8, 1.5, leave_counting=True)) is None


def test_the_replica_count_echo_holds_where_the_docs_say() -> None:
    rows = [json.loads(line) for line in SHORT_OUTPUTS.read_text(encoding="utf-8").splitlines()]
    [text] = [row["text"] for row in rows if row["id"] == "g17-sampled"]
    held = first_hold(text, MEASURED)
    assert held is not None and held[0] == 1212
