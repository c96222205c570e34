"""The counter-run rule: numbers counting by one inside one line. Real counts of models, found
at the unit after their 64th number; hard negatives from the benign corpus (benches/tune.py's
strongest regions) and shapes that are no count; streaming in deltas equals ``scan``; ``trim``
keeps the first numbers and a marker."""

from __future__ import annotations

import loopbreak
from loopbreak import Detector, Rules, scan, trim


def counting(first: int, last: int, separator: str) -> str:
    return separator.join(str(n) for n in range(first, last + 1))


def test_a_count_on_one_line_is_found_at_its_64th_number() -> None:
    # A model counting a JSON array of ids up to the token limit.
    text = '{"ids": [' + counting(1, 120, ", ") + ", 12"
    [found] = scan(text)
    assert (found.rule, found.block, found.start, found.repeats) == ("counter_run", "1, ", 9, 120)
    # Held at the unit after 64: the comma that ends it.
    assert text[found.detected_at - 1 :].startswith(", 65")
    assert found.end == text.index(", 12", text.index("120")) + 1


def test_counts_of_any_separator_up_to_16_units_are_found() -> None:
    for separator in [".", " ", ") (", "、", " -> ", "; step "]:
        text = "Counting: " + counting(7, 90, separator) + "\n"
        assert [f.rule for f in scan(text)] == ["counter_run"], separator


def test_what_is_no_count_is_not_found() -> None:
    negatives = {
        # The strongest counts of hand-written files: 25 and 20 numbers.
        "typeshed's Literal": "_PositiveInteger: TypeAlias = Literal["
        + counting(1, 25, ", ")
        + "]\n",
        "test_cmd's ruler": "    " + counting(0, 19, "  ") + "\n",
        # 63 numbers: one short.
        "63 numbers": counting(1, 63, ", ") + ".\n",
        # Numbers inside names, and hex, are no numbers.
        "names": " ".join(f"x{n}" for n in range(1, 100)) + "\n",
        "hex": ", ".join(f"0x{n:04X}" for n in range(1, 100)) + "\n",
        # Four digits and more are data (years, ids).
        "years": ", ".join(str(n) for n in range(1900, 2000)) + "\n",
        # A separator that changes makes no count.
        "two separators": "".join(f"{n}{', ' if n % 2 else '; '}" for n in range(1, 100)),
        # A separator longer than 16 units: the items are lines' matter.
        "long separator": counting(1, 80, " and then after that ") + ".\n",
    }
    for name, text in negatives.items():
        assert scan(text) == [], name
        assert scan(text, Rules.conservative()) == [], name
    # Numbers with a newline between them are lines: the counter rule's, not this one's.
    assert [f.rule for f in scan(counting(1, 100, ",\n") + "\n")] == ["counter_lines"]


def test_streamed_in_deltas_it_holds_where_scan_says() -> None:
    text = "Here: " + counting(54, 257, ".") + "25"
    [found] = scan(text)
    for size in (1, 3, 7, 64):
        detector = Detector()
        held = next(
            (f for k in range(0, len(text), size) if (f := detector.feed(text[k : k + size]))),
            None,
        )
        assert held is not None
        assert (held.rule, held.start, held.detected_at) == (
            found.rule,
            found.start,
            found.detected_at,
        )


def test_trim_keeps_the_first_numbers_and_a_marker() -> None:
    text = "Count: " + counting(1, 100, ", ") + ". Done.\n"
    trimmed = trim(text, keep=3)
    assert trimmed.text.startswith("Count: 1, 2, 3, \n[loopbreak: removed ")
    assert '"1, " repeated 97 more times (counter_run)]' in trimmed.text
    assert trimmed.text.endswith(" Done.\n")
    [removal] = trimmed.removals
    assert (removal.repeats, text[removal.end - 1]) == (97, ".")


def test_the_token_preset_reads_no_counts() -> None:
    # Ids 48-57 are no digits: the preset's counts need more than any stream of them holds.
    ids = [ord(c) for c in counting(1, 400, ",")]
    assert loopbreak.scan(counting(1, 400, ","))[0].rule == "counter_run"
    detector = loopbreak.TokenDetector(Rules.for_tokens())
    detector.feed(ids)
    assert detector.findings == []
