"""The counter-template rule (``counter_lines``): a model stuck on a template where only a number
advances is found, streamed or offline alike, and trimmed; numbered text that is not stuck (tables,
CSV, lists, years, fixtures) is not."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import loopbreak
from support.oracle import required_counter_lines, required_counter_lines_at
from support.shared_corpus import CORPUS, needs_corpus

DATA = Path(__file__).resolve().parents[1] / "data"

# The counter rule alone. A counting template of prose is also lines of one template recurring,
# which the default rules find first (`template_lines`, at the streak's eighth line: see
# test_the_defaults_find_a_counting_loop_no_later_than_the_counter_rule); the tests that read
# what the counter rule finds, and where, run it alone.
COUNTER_ONLY = loopbreak.Rules(template_min_lines=1 << 24)


def numbered(line: str, first: int, last: int) -> str:
    """``line`` (with ``{n}``) for every ``n`` from ``first`` to ``last``, one per line."""
    return "".join(line.format(n=n) + "\n" for n in range(first, last + 1))


def output(output_id: str) -> str:
    for line in (CORPUS / "model" / "outputs.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"] == output_id:
            return str(row["text"])
    raise KeyError(output_id)


# Different words, for numbered lists of distinct items.
ITEM_WORDS = (
    "apple banana cherry grape lemon mango melon olive peach pear plum berry carrot "
    "celery garlic onion pepper potato radish spinach tomato turnip bread butter cheese "
    "cream flour honey jam milk oats pasta rice salt sugar tea coffee juice water wine "
    "beer soda chair table lamp sofa desk shelf bed door window floor wall roof stairs "
    "garden fence gate path road bridge river lake hill mountain valley forest field "
    "meadow desert island beach harbor ship boat train plane car truck bicycle bus "
    "tram subway taxi rocket engine wheel brake mirror seat radio phone laptop screen "
    "keyboard mouse cable router server printer scanner camera speaker guitar piano "
    "violin drum flute trumpet cello harp organ choir song poem novel essay letter "
    "diary journal report review summary outline chapter preface index glossary "
    "appendix figure chart graph map atlas globe compass clock watch calendar"
)
DISTINCT_ITEMS = sorted(set(ITEM_WORDS.split()))


@needs_corpus
@pytest.mark.parametrize(
    ("output_id", "first_line", "lines"),
    [
        # `- N. Cleaning: ` counting 1..156: a template of words, 16 lines needed.
        ("d11-greedy", "- 1. Cleaning:", 156),
        # `N. A first-date activity:` 1..75 after a first `1.` line (a repeat, no step): words.
        ("d35-greedy", "1. A first-date activity:", 75),
        # `N. Kubernetes: https://kubernetes.io/...api-7f9c` 1..45: a URL holds no mark of
        # code, so words.
        (
            "d02-greedy",
            "1. Kubernetes: https://kubernetes.io/services/pod/api-7f9c/api-7f9c",
            45,
        ),
    ],
)
def test_the_development_sets_counter_near_loops_are_found(
    output_id: str, first_line: str, lines: int
) -> None:
    text = output(output_id)
    found = [f for f in loopbreak.scan(text, COUNTER_ONLY) if f.rule == "counter_lines"]
    assert len(found) >= 1, output_id
    f = found[0]
    assert (f.block, f.period, f.repeats) == (first_line, len(first_line), lines)
    assert text[f.start :].startswith(first_line)
    # What the rule needed is in text[start:detected_at], and the streak goes on past it.
    evidence = [line for line in text[f.start : f.detected_at].splitlines() if line.strip()]
    assert (
        len(evidence) == required_counter_lines_at(loopbreak.Rules(), text, f.start, f.block) == 16
    )


def test_a_counter_loop_streamed_in_deltas_finds_what_scan_finds() -> None:
    text = "Here are the files:\n\n" + numbered("{n}. test.py", 1, 300) + "Done.\n"
    [whole] = loopbreak.scan(text)
    assert (whole.rule, whole.start, whole.repeats) == ("counter_lines", 21, 300)
    assert whole.end == text.index("Done.")
    for size in (1, 3, 7, 64, 1000):
        detector = loopbreak.Detector()
        streamed = [
            f for i in range(0, len(text), size) if (f := detector.feed(text[i : i + size]))
        ]
        assert len(streamed) == 1, size
        f = streamed[0]
        first_held = (f.rule, f.period, f.block, f.start, f.detected_at)
        assert first_held == (whole.rule, whole.period, whole.block, whole.start, whole.detected_at)
        # Streaming reports the lines seen when the rule first held: 16 of a template of words.
        assert f.end == f.detected_at and f.repeats == 16


def test_counter_lines_apart_by_more_than_the_window_are_kept_to_compare() -> None:
    # Blank lines (of random whitespace, which no rule takes) between the counter lines push each
    # line out of the window (15,362 units) before the next arrives: the line before and the
    # streak's first line are copied as they leave, so the streak is seen streamed as offline.
    rng = random.Random(5)

    def blank_lines() -> str:
        return "".join(
            "".join(rng.choice(" \t") for _ in range(rng.randrange(4))) + "\n" for _ in range(8000)
        )

    parts = [f"{n}. a file to read\n{blank_lines()}" for n in range(1, 90)]
    assert min(len(part) for part in parts) > 16_000
    text = "".join(parts)
    [whole] = loopbreak.scan(text, COUNTER_ONLY)
    assert (whole.rule, whole.block, whole.start, whole.repeats) == (
        "counter_lines",
        "1. a file to read",
        0,
        89,
    )
    for size in (4, 4096, 50_000):
        detector = loopbreak.Detector(COUNTER_ONLY)
        streamed = [
            f for i in range(0, len(text), size) if (f := detector.feed(text[i : i + size]))
        ]
        assert [(f.block, f.start, f.detected_at) for f in streamed] == [
            (whole.block, whole.start, whole.detected_at)
        ], size


def test_trim_keeps_the_first_counter_lines_and_says_what_it_removed() -> None:
    text = "Steps:\n" + numbered("Step {n}: wait for the server", 1, 200) + "The end.\n"
    trimmed = loopbreak.trim(text, keep=3, rules=COUNTER_ONLY)
    assert trimmed.text.startswith("Steps:\n" + numbered("Step {n}: wait for the server", 1, 3))
    assert trimmed.text.endswith("The end.\n")
    [removal] = trimmed.removals
    assert (removal.finding.rule, removal.repeats) == ("counter_lines", 197)
    assert '"Step 1: wait for the server" repeated 197 more lines (counter_lines)' in trimmed.text


@pytest.mark.parametrize(
    "text",
    [
        # A clean numbered list of twenty (SmolLM2 asked for Roman numerals wrote both: bare
        # numbers are data, 64 lines; `N = VIVA` code, 25), and fifteen items that say the same
        # (a template of words needs 16).
        numbered("{n}", 1, 20),
        numbered("{n} = VIVA", 1, 20),
        numbered("{n}. item", 1, 15),
        # A long numbered list of distinct items, plain and in markdown.
        "".join(f"{n}. {word}\n" for n, word in enumerate(DISTINCT_ITEMS, 1)),
        "".join(f"{n}. **{word}**: see `{word}.md`\n" for n, word in enumerate(DISTINCT_ITEMS, 1)),
        # A markdown table whose rows differ only by an id, as long as a real status table
        # (a table row is data: 64 lines).
        "| id | state | owner |\n|---|---|---|\n" + numbered("| {n} | pending | - |", 1, 63),
        # CSV rows with a counter column: numbers alone never make a template, and rows of
        # data differ in their other columns.
        "id,x,y,z\n" + numbered("{n},0,0,0", 1, 2000),
        "id,name,score\n" + "".join(f"{n},user{n * 7 % 13},{n * n % 97}\n" for n in range(1, 500)),
        # Numbered lists of documentation: the items say different things.
        "".join(f"{n}. {step}\n" for n, step in enumerate(["Install", "Configure", "Run"], 1)),
        # Copyright years, one per line and all on one line: a counter of four digits is data.
        numbered("Copyright (C) {n} Free Software Foundation, Inc.", 1962, 2024),
        numbered("- {n}: the release of the year", 1962, 2024),
        "Copyright " + ", ".join(str(year) for year in range(1990, 2025)) + " the authors\n",
        # Test fixtures with numbered cases: other lines between the cases, numbered names.
        "".join(f"def test_case_{n}(self):\n    self.check({n})\n\n" for n in range(1, 300)),
        "".join(f'case_{n} = load("case_{n}.json")\n' for n in range(1, 300)),
        "".join(f"    let value_{n} = compute({n}, &input);\n" for n in range(90)),
        # Generated code indexing arrays: CUDA's tcgen05_ld.h counts these lines to 127.
        numbered('        "=r"(__out_var[{n}]),', 0, 127),
        # Code and key tables: equal once masked, without a +1 counter.
        numbered("    0x{n:02x}: 'key{n}',", 0, 255),
        "".join(f"    {n * 16}: 'U+{n * 16:04d}',\n" for n in range(64)),
        # Hex rows count in hex, not in decimal.
        numbered("0x{n:04x}, a", 0, 300),
        # Numbers glued to names: camel case (vim's syntax files), short names, after `_`.
        numbered("hi def link shHereDoc{n:02d}\t\tshRedir", 1, 200),
        numbered("highlight default link krlError{n} Error", 0, 200),
        numbered("ab{n} = ab{n}", 1, 200),
        # Templates without a letter where a column stays, or counts by a tenth.
        numbered("{n}\t0", 1, 2000),
        "".join(f"{n / 10:.1f}\n" for n in range(10, 2000)),
        # A bare year list and Python's minor versions in package metadata (10 lines of 16).
        numbered("{n}", 1990, 2024),
        # Decimal's test data (dqFMA.decTest): the case number and an exponent count on for 27
        # lines, the case number of six digits (data).
        "".join(
            f"dqadd3714{n:02d} fma  1   0 1.1234567899876E-{n - 20}  -> 1.1234567899876E-{n - 20}\n"
            for n in range(27, 90)
        ),
        # Expected tracebacks in test_traceback.py: a line of words and an ASCII-art rule,
        # each with a number that steps (a cycle with a line of data: 64 lines).
        "".join(
            f"                    '    | ValueError: {n}\\n'\n"
            f"                    '    +---------------- {n + 2} ----------------\\n'\n"
            for n in range(30)
        ),
        # A table of names (pygments' Csound builtins): one name a line, a cycle of three.
        "".join(f"pycall{n}\npycall{n}i\npycall{n}t\n" for n in range(1, 21)),
        # CSV rows of measurements: a date that counts, values that differ.
        "".join(
            f"2023-01-{n:02d},Phoenix,{20 + n * 7 % 13}.{n % 10},{40 + n * 3 % 17},{n * 5 % 23}\n"
            for n in range(1, 32)
        ),
        numbered("Classifier: Programming Language :: Python :: 3.{n}", 3, 12),
    ],
)
def test_numbered_text_that_is_not_stuck_is_not_a_counter_loop(text: str) -> None:
    assert [f for f in loopbreak.scan(text) if f.rule == "counter_lines"] == []


def test_numbers_step_on_their_digits_keeping_their_width() -> None:
    # A number keeps its width (099 -> 100), carries are worked out on the digits, and a
    # number longer than any machine integer compares as well.
    assert (
        loopbreak.scan(numbered("item {n:03d} of the list", 40, 140), COUNTER_ONLY)[0].rule
        == "counter_lines"
    )
    big = 10**40 - 20
    text = "".join(f"row {big + n} is ready\n" for n in range(150))
    assert [f.rule for f in loopbreak.scan(text, COUNTER_ONLY)] == ["counter_lines"]
    # A step of two, or back, breaks the streak.
    assert loopbreak.scan(numbered("row {n} is ready", 1, 200).replace("row 77 ", "row 78 ")) != []
    skipping = "".join(f"row {2 * n} is ready\n" for n in range(200))
    assert loopbreak.scan(skipping, COUNTER_ONLY) == []
    # (One sentence with its number changing line after line is lines of one template.)
    assert [f.rule for f in loopbreak.scan(skipping)] == ["template_lines"]
    # Leading zeros are part of a number: `0001` after `000` is another number, not one up.
    widths = random.Random(7).choices([3, 4], k=200)
    widening = "".join(f"row {n:0{width}d} is ready\n" for n, width in enumerate(widths))
    assert loopbreak.scan(widening, COUNTER_ONLY) == []
    # Two widths taking turns, each counting by two every other line, are a cycle of two lines.
    alternating = "".join(f"row {n:0{3 + n % 2}d} is ready\n" for n in range(200))
    [f] = loopbreak.scan(alternating, COUNTER_ONLY)
    assert (f.rule, f.block, f.repeats) == (
        "counter_lines",
        "row 000 is ready\nrow 0001 is ready",
        200,
    )


def test_a_line_gains_at_most_two_units_on_the_line_before() -> None:
    # Two numbers that carry at once (`(99, 99)` -> `(100, 100)`) continue the streak.
    pairs = "".join(f"({n}, {n}) is a pair\n" for n in range(30, 131))
    assert [(f.rule, f.start, f.repeats) for f in loopbreak.scan(pairs, COUNTER_ONLY)] == [
        ("counter_lines", 0, 101)
    ]
    # Three make the line three units longer: the streak ends at 99 and starts again from 100
    # (a template of code: 25 lines each).
    triples = "".join(f"({n}, {n}, {n}) is a triple\n" for n in range(70, 131))
    found = [(f.rule, f.start, f.repeats) for f in loopbreak.scan(triples, COUNTER_ONLY)]
    assert found == [("counter_lines", 0, 30), ("counter_lines", triples.index("(100,"), 31)]


def test_templates_need_the_lines_of_their_class_whatever_their_length() -> None:
    rules = loopbreak.Rules()
    assert (rules.counter_min_lines, rules.counter_span) == (16, 0)
    assert (rules.code_counter_min_lines, rules.code_counter_span) == (25, 0)
    assert rules.data_counter_min_lines == 64
    # `Server N:` is words: 16 lines needed, 15 are not enough.
    assert loopbreak.scan(numbered("Server {n}:", 1, 15)) == []
    assert [f.repeats for f in loopbreak.scan(numbered("Server {n}:", 1, 16))] == [16]
    # `server(N);` is code: 25 lines; `(N)` is data: 64.
    assert loopbreak.scan(numbered("server({n});", 1, 24)) == []
    assert [f.repeats for f in loopbreak.scan(numbered("server({n});", 1, 25))] == [25]
    assert loopbreak.scan(numbered("({n})", 1, 63)) == []
    assert [f.repeats for f in loopbreak.scan(numbered("({n})", 1, 64))] == [64]
    # The conservative preset keeps spans: a short template needs more lines.
    conservative = loopbreak.Rules.conservative()
    assert (conservative.counter_span, conservative.code_counter_span) == (640, 1600)
    assert conservative.data_counter_min_lines == 320
    assert loopbreak.scan(numbered("Server {n}:", 1, 63), rules=conservative) == []
    assert [
        f.repeats for f in loopbreak.scan(numbered("Server {n}:", 1, 64), rules=conservative)
    ] == [64]
    assert loopbreak.Rules.for_tokens().counter_min_lines == 1 << 24
    assert loopbreak.Rules.for_tokens().data_counter_min_lines == 1 << 24
    with pytest.raises(ValueError, match="counter_min_lines"):
        loopbreak.Rules(counter_min_lines=1)
    with pytest.raises(ValueError, match="code_counter_min_lines"):
        loopbreak.Rules(code_counter_min_lines=1)
    with pytest.raises(ValueError, match="counter_span"):
        loopbreak.Rules(counter_span=1 << 25)
    with pytest.raises(ValueError, match="data_counter_min_lines"):
        loopbreak.Rules(data_counter_min_lines=1)


# Counting loops of the shapes models write (issue reports and the development sets), each with
# the lines its template needs: a template of words by 16 lines whatever punctuation sits in it,
# code and markup by 25, one without a letter (when every number counts) by 64.
COUNTING_LOOP_NEEDS = [
    ("{n}. A first-date activity:", 16),
    ("Step {n}: wait for the server to start again", 16),
    ("Day {n}: rest and drink water", 16),
    ("{n}. Check the server's response to identify the server's response type.", 16),
    ("{n}. `test.py`", 16),
    ("{n}. Hamster", 16),
    ("{n}. apple", 16),
    ("{n}. Hamster {n}", 16),
    ('**Step {n}:** _wait_ for "the" server', 16),
    ("({n})", 64),
    ("${n}.5", 64),
    ("{n}", 64),
    ("{n}.", 64),
    ("{n}. {n}. {n}. {n}.", 64),
    ("file_size(/var/log/backup{n})", 25),
    ("<b>{n}.</b> <b>word</b>", 25),
    ("Checking backup{n} now", 16),
]
COUNTING_LOOPS = [line for line, _ in COUNTING_LOOP_NEEDS]


@pytest.mark.parametrize(("line", "needed"), COUNTING_LOOP_NEEDS)
def test_counting_loops_models_write_are_found(line: str, needed: int) -> None:
    # Three-digit numbers: no carry (four numbers that carry at once start the streak again).
    text = "Sure, here it is:\n\n" + numbered(line, 100, 499)
    [f] = loopbreak.scan(text, COUNTER_ONLY)
    assert (f.rule, f.start, f.repeats) == ("counter_lines", text.index("\n\n") + 2, 400)
    assert text[: f.detected_at].count("\n") - 2 == needed
    assert (
        required_counter_lines(loopbreak.Rules(), line.format(n=100), line.format(n=101)) == needed
    )
    # Streamed, the guard stops it at the same line.
    detector = loopbreak.Detector(COUNTER_ONLY)
    stopped = next(hit for i in range(0, len(text), 7) if (hit := detector.feed(text[i : i + 7])))
    assert stopped.detected_at == f.detected_at


def test_the_defaults_find_a_counting_loop_no_later_than_the_counter_rule() -> None:
    # A counting template of prose is numbered lines of one template: `template_lines` holds at
    # the streak's eighth line (from the template's second line), before the counter rule's 16th.
    for line in COUNTING_LOOPS:
        text = "Sure, here it is:\n\n" + numbered(line, 100, 499)
        [alone] = loopbreak.scan(text, COUNTER_ONLY)
        [f] = loopbreak.scan(text)
        assert f.detected_at <= alone.detected_at, line
        if f.rule == "template_lines":
            second_line = text.index("\n", text.index("\n\n") + 2) + 1
            assert (f.start, f.repeats) == (second_line, 399), line
            assert text[: f.detected_at].count("\n") - 2 == 9, line


def test_the_two_line_counter_of_a_public_issue_is_found_as_a_cycle() -> None:
    # llama.cpp#19585 (tests/data/llama_cpp_19585_loop.txt, the loop corpus's 13.txt):
    # `<|im_start|>assistantN` counts on every other line, between copies of one prompt line: a
    # cycle of two lines. Chat-template markers are no code, so the cycle is of words: 16 lines,
    # found at the excerpt's 17th line.
    text = (DATA / "llama_cpp_19585_loop.txt").read_text(encoding="utf-8")
    [f] = loopbreak.scan(text)
    first_cycle = "<|im_start|>assistant57\ntell me something about you？<|im_end|>"
    assert (f.rule, f.block, f.period, f.repeats) == ("counter_lines", first_cycle, 62, 41)
    assert text[f.start : f.start + f.period] == f.block
    assert text[: f.detected_at].count("\n") == 17
    assert required_counter_lines_at(loopbreak.Rules(), text, f.start, f.block) == 16
    # Trimmed, whole cycles stay: the first three, then the marker.
    trimmed = loopbreak.trim(text)
    assert trimmed.text.startswith(text[: text.index("<|im_start|>assistant60")] + "\n[loopbreak:")


@pytest.mark.parametrize(
    "cycle",
    [
        # Numbered items that take turns: each counts by two.
        ["{n}. Apple is a fruit", "{n}. Banana is a fruit"],
        # A counting line between lines that stay: the streak starts at its first step, so
        # from the first counting line.
        ["Question {c}:", "What is the capital of France?"],
        ["Tell me a joke, number {c}", "<|im_end|>"],
    ],
)
def test_cycles_of_two_lines_are_found(cycle: list[str]) -> None:
    period = len(cycle)
    lines = [cycle[i % period].format(n=i + 1, c=i // period + 1) for i in range(60)]
    text = "Sure:\n\n" + "".join(line + "\n" for line in lines)
    [f] = loopbreak.scan(text, COUNTER_ONLY)
    first = next(i for i, line in enumerate(lines) if "{" in cycle[i % period])
    first_cycle = "\n".join(lines[first : first + period])
    start = text.index(lines[first] + "\n")
    assert (f.rule, f.block, f.start, f.repeats) == (
        "counter_lines",
        first_cycle,
        start,
        60 - first,
    )
    need = required_counter_lines(loopbreak.Rules(), first_cycle, lines[first + period])
    assert text[f.start : f.detected_at].count("\n") == need
    # Streamed in small pieces, the guard stops at the same line.
    detector = loopbreak.Detector(COUNTER_ONLY)
    stopped = next(hit for i in range(0, len(text), 5) if (hit := detector.feed(text[i : i + 5])))
    assert stopped.detected_at == f.detected_at
    # Trimmed, the first three cycles stay.
    trimmed = loopbreak.trim(text, rules=COUNTER_ONLY)
    kept = lines[first : first + 3 * period]
    assert trimmed.text.startswith(text[: f.start] + "".join(line + "\n" for line in kept))
    assert f"repeated {60 - first - 3 * period} more lines" in trimmed.text


def test_numbered_text_that_takes_turns_but_is_not_stuck_is_not_a_cycle() -> None:
    # A numbered list with an explanation under each item.
    doc = "".join(
        f"{n}. Step {n}\n   Run the command and check the output of step {n}.\n"
        for n in range(1, 60)
    )
    assert [f.rule for f in loopbreak.scan(doc)] == []
    # A table of computed values (decimal's test data): several numbers step at once.
    values = "".join(
        f"sqtx{3300 + n} squareroot 0.{170 + n // 2} -> 0.{410 + n // 2}  Inexact Rounded\n"
        if n % 2
        else f"sqtx{3300 + n} squareroot 0.0{170 + n // 2} -> 0.{130 + n // 4}  Inexact Rounded\n"
        for n in range(200)
    )
    assert loopbreak.scan(values) == []
    # A two-line record whose id counts and whose values differ.
    records = "".join(f'  "id": {n},\n  "name": "user{n * 7 % 97}",\n' for n in range(100))
    assert loopbreak.scan(records) == []
    # Years in a list of events; a CSV with a counter column and varying values.
    events = ["won the final", "lost in the semi-final", "did not qualify", "won the group"]
    picks = random.Random(3).choices(events, k=60)
    years = "".join(f"- {1950 + n}: {event}\n" for n, event in enumerate(picks))
    assert loopbreak.scan(years) == []
    csv = "".join(f"{n},{n * 37 % 11},x\n{n},total\n" for n in range(100))
    assert loopbreak.scan(csv) == []
    # A cycle in which no number changes is a repeated block (long_block), not a counter.
    block = "Step 1: wait\nStep 2: retry\n" * 40
    assert all(f.rule != "counter_lines" for f in loopbreak.scan(block))


# Real counting loops of small models, each as written to the token limit: found by the 16th
# line of the template (words, whatever punctuation sits in it), streamed as offline.
@pytest.mark.parametrize(
    ("line", "first", "last"),
    [
        # A greedy output, 38 lines to the token limit; the apostrophes once made it code.
        (
            "{n}. Check the server's response to identify the server's response type and the "
            "server's response body.",
            1,
            38,
        ),
        ("{n}. `test.py`", 1, 40),
        ("{n}. Hamster {n}", 1, 30),
        ("2023-01-{n:02d},Phoenix,29.5,51,14", 1, 31),
    ],
)
def test_real_counting_loops_are_found_by_their_16th_line(line: str, first: int, last: int) -> None:
    text = "Here is the list:\n\n" + numbered(line, first, last)
    [f] = loopbreak.scan(text, COUNTER_ONLY)
    assert (f.rule, f.start, f.repeats) == (
        "counter_lines",
        text.index("\n\n") + 2,
        last - first + 1,
    )
    assert text[f.start : f.detected_at].count("\n") == 16
    detector = loopbreak.Detector(COUNTER_ONLY)
    stopped = next(hit for i in range(0, len(text), 3) if (hit := detector.feed(text[i : i + 3])))
    assert (stopped.start, stopped.detected_at) == (f.start, f.detected_at)


def test_cycles_of_three_numbered_items_are_found() -> None:
    # A small model's answer numbering three cat-care items on and on.
    items = ["定期更换猫的猫粮", "猫护理", "猫玩具"]
    lines = [f"{n}. {items[(n - 1) % 3]}" for n in range(1, 49)]
    text = "以下是建议：\n\n" + "".join(line + "\n" for line in lines)
    [f] = loopbreak.scan(text)
    assert (f.rule, f.block, f.repeats) == ("counter_lines", "\n".join(lines[:3]), 48)
    assert text[f.start : f.detected_at].count("\n") == 16
    detector = loopbreak.Detector()
    stopped = next(hit for i in range(0, len(text), 2) if (hit := detector.feed(text[i : i + 2])))
    assert (stopped.start, stopped.detected_at) == (f.start, f.detected_at)
    # Trimmed, whole cycles stay: the first three, then the marker.
    trimmed = loopbreak.trim(text)
    assert trimmed.text.startswith(text[: f.start] + "".join(line + "\n" for line in lines[:9]))
    assert "repeated 39 more lines (counter_lines)" in trimmed.text
    # A counter that steps once a cycle, between two lines that stay.
    steps = "".join(f"Step {n}:\nRun the tests.\nCheck the output.\n" for n in range(1, 30))
    [f] = loopbreak.scan(steps)
    assert (f.rule, f.block) == ("counter_lines", "Step 1:\nRun the tests.\nCheck the output.")


def test_three_line_records_that_differ_are_not_a_cycle() -> None:
    # Records of three lines whose id counts and whose values differ.
    records = "".join(
        f"id: {n}\nname: user{n * 7 % 97}\nscore: {n * 13 % 101}\n" for n in range(1, 200)
    )
    assert loopbreak.scan(records) == []
    # A numbered list with two lines of explanation under each item.
    doc = "".join(
        f"{n}. {word.title()}\n   Buy {word} at the market.\n   Keep the {word} cool.\n"
        for n, word in enumerate(DISTINCT_ITEMS, 1)
    )
    assert loopbreak.scan(doc) == []


def test_json_entries_where_only_a_counter_steps_are_found_as_code() -> None:
    # Structured output: one object a line whose id counts and whose other fields stay (code
    # and markup: 25 lines); entries whose fields differ are records, not a loop.
    stuck = "[\n" + numbered('  {{"id": {n}, "city": "Phoenix", "temp": 29.5}},', 1, 40) + "]\n"
    [f] = loopbreak.scan(stuck)
    assert (f.rule, f.block, f.repeats) == (
        "counter_lines",
        '  {"id": 1, "city": "Phoenix", "temp": 29.5},',
        40,
    )
    assert stuck[f.start : f.detected_at].count("\n") == 25
    cities = ["Phoenix", "Denver", "Austin", "Boston", "Seattle"]
    records = (
        "[\n"
        + "".join(
            f'  {{"id": {n}, "city": "{cities[n * 3 % 5]}", "temp": {20 + n * 7 % 13}.5}},\n'
            for n in range(1, 200)
        )
        + "]\n"
    )
    assert loopbreak.scan(records) == []
