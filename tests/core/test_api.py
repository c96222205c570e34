"""The Python API contract of the core: types, errors, immutability, and what the default rules
find (real loops) and must not find (realistic benign text).

The benign texts below are written to look like what models and tools really produce; a failing
negative is a false positive of the defaults, to be fixed in the defaults, never here.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

import loopbreak
from loopbreak import DEFAULT_KEEP, Detector, Finding, Rules, scan, trim
from support.oracle import class_of, first_held, required_span

FIELDS = [
    "max_period",
    "max_long_period",
    "min_repeats",
    "text_span",
    "code_min_repeats",
    "code_span",
    "long_min_repeats",
    "min_span",
    "code_min_span",
    "single_char_min_span",
    "whitespace_min_span",
    "table_span",
    "min_lines",
    "code_min_lines",
    "counter_min_lines",
    "counter_span",
    "code_counter_min_lines",
    "code_counter_span",
    "payload_span",
    "data_counter_min_lines",
    "template_min_lines",
]


def feed_in_deltas(
    text: str, size: int, rules: Rules | None = None
) -> tuple[Detector, Finding | None, int]:
    """Feeds ``text`` in deltas of ``size`` units; returns the detector, the first finding a
    ``feed`` returned, and how many units had been fed when it was returned."""
    detector = Detector(rules)
    for i in range(0, len(text), size):
        found = detector.feed(text[i : i + size])
        if found is not None:
            return detector, found, min(i + size, len(text))
    return detector, None, len(text)


def only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, findings
    return findings[0]


# --- Rules ------------------------------------------------------------------------------------


def test_rules_defaults_are_readable_and_round_trip() -> None:
    rules = Rules()
    d = rules.to_dict()
    assert list(d) == FIELDS
    for name in FIELDS:
        value = getattr(rules, name)
        # A counter span of 0 asks no span: templates need their lines whatever their length.
        assert type(value) is int and value >= (0 if name.endswith("counter_span") else 1)
        assert d[name] == value
    assert Rules(**d) == rules
    assert Detector().rules == rules
    assert json.loads(json.dumps(d)) == d
    # The orders the validation promises hold for the defaults.
    assert rules.max_long_period >= rules.max_period
    assert (
        rules.min_repeats >= rules.long_min_repeats
        and rules.code_min_repeats >= rules.long_min_repeats
    )
    assert "Rules(" in repr(rules) and "max_period=" in repr(rules)


def test_the_conservative_preset_differs_only_where_model_output_is_not_the_input() -> None:
    """``Rules.conservative()`` asks more of every class that is not words, and of counter
    templates (spans of units, and more lines of code and data), and turns the template rule off
    in effect; words, lines of words, counter templates of words by their lines and the payload
    bound are the defaults'."""
    default, conservative = Rules().to_dict(), Rules.conservative().to_dict()
    raised = {k for k in FIELDS if conservative[k] != default[k]}
    assert raised == {
        "code_span",
        "single_char_min_span",
        "whitespace_min_span",
        "table_span",
        "code_min_lines",
        "counter_span",
        "code_counter_min_lines",
        "code_counter_span",
        "data_counter_min_lines",
        "template_min_lines",
    }
    assert all(conservative[k] > default[k] for k in raised)
    assert Rules(**conservative) == Rules.conservative()


def test_rules_keyword_overrides_one_field() -> None:
    rules = Rules(min_lines=31)
    assert rules.min_lines == 31
    assert {k: v for k, v in rules.to_dict().items() if k != "min_lines"} == {
        k: v for k, v in Rules().to_dict().items() if k != "min_lines"
    }
    assert rules != Rules()


def test_rules_are_immutable() -> None:
    rules = Rules()
    with pytest.raises(AttributeError):
        rules.max_period = 3  # type: ignore[misc]
    assert rules.max_period == Rules().max_period


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_period": 0}, "max_period"),
        ({"max_period": -1}, "max_period"),
        ({"min_span": -64}, "min_span"),
        ({"min_lines": -25}, "min_lines"),
        ({"max_long_period": 10, "max_period": 20}, "max_long_period"),
        ({"max_long_period": 65_537}, "max_long_period"),
        ({"long_min_repeats": 1}, "long_min_repeats"),
        ({"long_min_repeats": 5, "min_repeats": 4}, "min_repeats"),
        ({"long_min_repeats": 5, "code_min_repeats": 4}, "code_min_repeats"),
        ({"min_span": 8}, "min_span"),
        ({"single_char_min_span": 1}, "single_char_min_span"),
        ({"whitespace_min_span": 0}, "whitespace_min_span"),
        ({"min_lines": 1}, "min_lines"),
        ({"code_min_lines": 0}, "code_min_lines"),
        ({"code_span": 2**24 + 1}, "code_span"),
        ({"text_span": 2**32}, "text_span"),
        ({"min_repeats": 2**63}, "min_repeats"),
        ({"max_period": 2**70}, "max_period"),
        ({"code_span": -(2**70)}, "code_span"),
    ],
)
def test_rules_reject_bad_values_with_value_error(kwargs: dict[str, int], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Rules(**kwargs)


@pytest.mark.parametrize("value", ["5", 5.0, None, [5], b"5", 1.5])
@pytest.mark.parametrize("field", ["max_period", "min_span", "code_min_lines"])
def test_rules_reject_wrong_types_with_type_error(field: str, value: Any) -> None:
    with pytest.raises(TypeError):
        Rules(**{field: value})


def test_rules_take_keywords_only() -> None:
    with pytest.raises(TypeError):
        Rules(150)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Rules(max_periods=150)  # type: ignore[call-arg]


def test_custom_rules_are_used() -> None:
    text = "loadTools. " * 30
    need = required_span(Rules(), 11, class_of("loadTools. "))
    assert only(scan(text)).detected_at == need
    rules = Rules(min_repeats=25, text_span=1000)
    assert only(scan(text, rules)).detected_at == 25 * 11
    detector, found, _ = feed_in_deltas(text, 4, rules)
    assert found is not None and (found.repeats, found.detected_at) == (25, 25 * 11)


# --- Rule metadata ----------------------------------------------------------------------------

# A text each rule finds first at the defaults; blank lines fall at random between the identical
# lines, so that no block repeats back to back there.
_LONG = (
    "The quick brown fox jumps over the lazy dog, and the cat sleeps on the warm mat by the door. "
    "Then a heron lands near the quiet pond where frogs sing all night long in June. "
)
_GAPS = random.Random(7)
_ITEMS = [
    "Water the plants in the morning.",
    "Feed the cat twice a day.",
    "Take the dog for a long walk.",
]
RULE_TEXTS = {
    "periodic_run": "Intro\n" + "loadTools. " * 30,
    "long_block": "Intro\n" + _LONG * 8,
    "identical_lines": "Intro\n"
    + "".join(
        "The answer is still the same line.\n" + "\n" * _GAPS.randrange(3) for _ in range(30)
    ),
    "counter_lines": "Intro\n" + "".join(f"{i}. test.py\n" for i in range(1, 60)),
    # Three numbered items in turn: item 4 recurs from item 1 (its template, another number),
    # and the rule holds at item 11 (8 lines, 3 templates); 12 lines are too few for a counter
    # cycle of words (16).
    "template_lines": "Intro\n" + "".join(f"{i}. {_ITEMS[(i - 1) % 3]}\n" for i in range(1, 13)),
    # Numbers counting on one line: found at the unit after the 64th.
    "counter_run": "Count: " + ", ".join(str(i) for i in range(1, 81)) + ".\n",
}


def test_rule_info_describes_every_rule_in_code_order() -> None:
    assert list(loopbreak.RULE_INFO) == list(loopbreak.RULE_NAMES)
    for name, info in loopbreak.RULE_INFO.items():
        assert isinstance(info, loopbreak.RuleInfo)
        assert info.name == name
        assert info.copy in ("block", "line")
        assert info.period and info.description
        assert repr(info).startswith(f"RuleInfo(name='{name}', copy='{info.copy}'")
    with pytest.raises(KeyError):
        loopbreak.RULE_INFO["near_miss"]  # type: ignore[index]
    with pytest.raises(TypeError):
        loopbreak.RULE_INFO["periodic_run"] = loopbreak.RULE_INFO["long_block"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        loopbreak.RULE_INFO["periodic_run"].copy = "line"  # type: ignore[misc]


def test_each_rule_reads_thresholds_of_rules_and_every_threshold_is_read() -> None:
    table = list(Rules().to_dict())
    for name, info in loopbreak.RULE_INFO.items():
        assert info.thresholds, name
        assert all(hasattr(Rules(), t) for t in info.thresholds), (name, info.thresholds)
        # In the order of the fields, as the table of thresholds lists them.
        assert sorted(info.thresholds, key=table.index) == list(info.thresholds), name
    read = {t for info in loopbreak.RULE_INFO.values() for t in info.thresholds}
    assert read == set(table)


def test_a_rules_copy_is_what_its_repeats_count() -> None:
    """``copy == "block"``: copies of ``period`` units back to back; ``"line"``: non-blank lines."""
    assert set(RULE_TEXTS) == set(loopbreak.RULE_NAMES)
    for rule, text in RULE_TEXTS.items():
        f = scan(text)[0]
        assert f.rule == rule
        region = text[f.start : f.end]
        if rule == "counter_run":
            # A copy is a number and the text after it; the numbers widen as they count.
            assert f.repeats == len(re.findall("[0-9]+", region)) > 1
        elif loopbreak.RULE_INFO[rule].copy == "block":
            assert f.repeats == len(region) // f.period > 1
        else:
            assert f.repeats == sum(1 for line in region.splitlines() if line.strip()) > 1


# --- Finding ----------------------------------------------------------------------------------


def a_finding() -> Finding:
    return only(scan("Intro\n" + "loadTools. " * 30))


def test_finding_is_immutable() -> None:
    f = a_finding()
    for name in ["rule", "period", "block", "start", "repeats", "detected_at", "end"]:
        with pytest.raises(AttributeError):
            setattr(f, name, 1)
    with pytest.raises(AttributeError):
        f.extra = 1  # type: ignore[attr-defined]
    assert f == a_finding()


def test_finding_fields_repr_and_dict() -> None:
    f = a_finding()
    assert (f.rule, f.period, f.block, f.start) == ("periodic_run", 11, "loadTools. ", 6)
    assert f.detected_at == 6 + required_span(Rules(), 11, "text")
    # An offline scan reports the region whole: every copy, to where the repetition stops.
    assert (f.repeats, f.end) == (30, 6 + 30 * 11)
    r = repr(f)
    assert (
        r.startswith("Finding(") and "periodic_run" in r and "'loadTools. '" in r and "start=6" in r
    )
    d = f.to_dict()
    assert d == {
        "rule": "periodic_run",
        "period": 11,
        "block": "loadTools. ",
        "start": 6,
        "repeats": f.repeats,
        "detected_at": f.detected_at,
        "end": f.end,
    }
    assert json.loads(json.dumps(d)) == d


def test_finding_repr_of_a_long_block_stays_readable() -> None:
    line = "This sentence is long enough that a repr should not print all of it. " * 4 + "\n"
    f = scan(line * 8)[0]
    assert f.period == len(line)
    assert len(repr(f)) < 300


def test_finding_equality() -> None:
    assert a_finding() == a_finding()
    assert a_finding() == a_finding()
    other = only(scan("Intro:\n" + "loadTools. " * 30))
    assert a_finding() != other
    not_findings: list[object] = [a_finding().to_dict(), ("periodic_run", 11), None]
    for other_value in not_findings:
        assert a_finding() != other_value


def test_removal_and_trimmed() -> None:
    text = "Intro\n" + "loadTools. " * 30 + "Outro."
    t = trim(text)
    r = only_removal(t)
    assert r.finding == a_finding()
    assert r.start == 6 + DEFAULT_KEEP * 11 and r.end == len(text) - len("Outro.")
    assert r.units == r.end - r.start
    d = r.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["finding"] == r.finding.to_dict()
    assert "loadTools." in t.text and t.text.endswith("Outro.")
    assert "periodic_run" in t.text and f"removed {r.units} units" in t.text
    assert (
        trim(text).text
        == trim(text, keep=DEFAULT_KEEP).text
        == trim(text, DEFAULT_KEEP, Rules()).text
    )
    assert DEFAULT_KEEP == 3


def only_removal(t: loopbreak.Trimmed) -> loopbreak.Removal:
    assert len(t.removals) == 1, t.removals
    return t.removals[0]


@pytest.mark.parametrize("tail", ["", " and then the end."])
def test_each_removal_carries_the_marker_written_in_its_place(tail: str) -> None:
    text = "Start. " + "loadTools." * 200 + "\nMiddle.\n" + "- the same line\n" * 60 + tail
    t = trim(text)
    assert len(t.removals) == 2
    rebuilt, cursor = [], 0
    for removal in t.removals:
        rebuilt += [text[cursor : removal.start], removal.marker]
        cursor = removal.end
    assert "".join([*rebuilt, text[cursor:]]) == t.text
    first, last = t.removals
    assert first.marker.startswith("\n[loopbreak: removed ") and first.marker.endswith(")]\n")
    # A newline after the marker only where text follows it.
    assert last.marker.endswith(")]\n" if tail else ")]")


@pytest.mark.parametrize("keep", [0, -1, -100])
def test_trim_keep_below_one_is_a_value_error(keep: int) -> None:
    with pytest.raises(ValueError, match="keep"):
        trim("loadTools. " * 30, keep=keep)


@pytest.mark.parametrize("keep", ["3", 2.0, None])
def test_trim_keep_of_wrong_type_is_a_type_error(keep: Any) -> None:
    with pytest.raises(TypeError):
        trim("loadTools. " * 30, keep=keep)


@pytest.mark.parametrize("keep", [1, 2, 5])
def test_trim_keeps_keep_copies(keep: int) -> None:
    text = "Intro\n" + "loadTools. " * 30 + "Outro."
    r = only_removal(trim(text, keep=keep))
    assert trim(text, keep=keep).text.startswith("Intro\n" + "loadTools. " * keep)
    assert r.start == 6 + keep * 11


# --- Detector ---------------------------------------------------------------------------------


@pytest.mark.parametrize("delta", [b"loadTools.", None, 3, ["a"], 1.5, bytearray(b"x")])
def test_feed_rejects_non_str_with_a_clear_type_error(delta: Any) -> None:
    detector = Detector()
    detector.feed("abc")
    with pytest.raises(TypeError, match="str") as info:
        detector.feed(delta)
    assert type(delta).__name__ in str(info.value)
    assert detector.units_seen == 3
    detector.feed("d")
    assert detector.units_seen == 4


@pytest.mark.parametrize("text", [b"abc", None, 3])
def test_scan_and_trim_reject_non_str(text: Any) -> None:
    with pytest.raises(TypeError):
        scan(text)
    with pytest.raises(TypeError):
        trim(text)


def test_detector_rules_argument() -> None:
    with pytest.raises(TypeError):
        Detector(3)  # type: ignore[arg-type]
    rules = Rules(min_repeats=30)
    assert Detector(rules).rules == rules
    assert Detector(None).rules == Rules()


def test_detector_state_finding_findings_units_seen_reset() -> None:
    detector = Detector()
    assert detector.finding is None and detector.findings == [] and detector.units_seen == 0
    assert detector.feed("Hello 👨\u200d👩\u200d👧 ") is None
    assert detector.units_seen == 6 + 5 + 1  # code points, not bytes or graphemes
    first = None
    for _ in range(40):
        got = detector.feed("loadTools. ")
        first = first or got
    assert first is not None and first == detector.finding == detector.findings[0]
    assert detector.units_seen == 12 + 40 * 11
    assert detector.feed("") is None
    # A second loop after the first one is a second finding; `finding` stays the first.
    for _ in range(3):
        detector.feed(" Then something else entirely, said once. ")
    for _ in range(40):
        detector.feed("ok ")
    findings = detector.findings
    assert len(findings) == 2 and findings[1].block.strip() == "ok"
    assert detector.finding == findings[0]
    # `findings` is a snapshot: changing it does not change the detector.
    findings.clear()
    assert len(detector.findings) == 2
    detector.reset()
    assert detector.finding is None and detector.findings == [] and detector.units_seen == 0
    assert detector.feed("loadTools. " * 40) == detector.finding
    # Streaming, a finding is the region as its rule first held; offline, the region whole.
    (streamed,), (whole,) = detector.findings, scan("loadTools. " * 40)
    assert (streamed.detected_at, streamed.end, streamed.repeats) == (whole.detected_at, 220, 20)
    assert (whole.end, whole.repeats) == (440, 40)


def test_feed_returns_the_first_finding_of_the_delta_only_once() -> None:
    detector = Detector()
    found = detector.feed("loadTools. " * 100 + "\n\n" + "ok " * 100)
    assert found is not None and found == detector.findings[0] and len(detector.findings) == 2
    assert detector.feed("loadTools. ") is None


# --- lone surrogates --------------------------------------------------------------------------


def test_lone_surrogates_do_not_crash_and_offsets_index_the_str() -> None:
    text = "start \ud800 middle " + "\udc00x" * 300 + " tail \udfff end"
    f = only(scan(text))
    assert text[f.start : f.start + f.period] == f.block
    assert set(f.block) == {"\udc00", "x"}
    assert f.start == text.index("\udc00x") and f.block == "\udc00x"
    detector, found, _ = feed_in_deltas(text, 7)
    assert found is not None and first_held(found) == first_held(f)
    t = trim(text)
    r = only_removal(t)
    assert t.text.startswith(text[: r.start]) and t.text.endswith(text[r.end :])
    assert "\ud800" in t.text and "\udfff" in t.text
    json.dumps(f.to_dict())  # JSON escapes lone surrogates; it must not raise


@pytest.mark.parametrize("block", ["\ud800", "\ud800x", "\udfff\ud800"])
def test_trim_marker_names_a_block_of_lone_surrogates(block: str) -> None:
    """The marker must name the block; a block of lone surrogates must not come out as ``""``."""
    text = "intro " + block * 2100 + " outro"
    t = trim(text)
    r = only_removal(t)
    marker = t.text[r.start : len(t.text) - (len(text) - r.end)]
    assert f"removed {r.units} units" in marker
    assert '""' not in marker, marker
    assert '"x"' not in marker, marker


def test_clean_text_with_lone_surrogates_comes_back_unchanged() -> None:
    text = "a\ud800b\udbff\udc00c " * 3 + "\udfff"
    assert scan(text) == []
    t = trim(text)
    assert t.text == text and t.removals == []
    detector = Detector()
    for ch in text:
        assert detector.feed(ch) is None
    assert detector.units_seen == len(text)


# --- large input ------------------------------------------------------------------------------


def prose_words(rng: random.Random, n: int) -> str:
    words = [
        "the",
        "of",
        "and",
        "to",
        "in",
        "is",
        "was",
        "for",
        "on",
        "that",
        "with",
        "as",
        "by",
        "it",
        "at",
        "from",
        "this",
        "be",
        "are",
        "or",
        "an",
        "which",
        "model",
        "output",
        "stream",
        "token",
        "detector",
        "agent",
        "tool",
        "call",
        "result",
        "error",
        "value",
        "file",
        "line",
        "code",
        "returns",
        "when",
        "where",
        "while",
        "because",
        "however",
        "therefore",
        "system",
        "user",
        "assistant",
        "response",
    ]
    out = []
    for i in range(n):
        out.append(rng.choice(words))
        out.append(
            rng.choice([" ", " ", " ", " ", ", ", ". ", ".\n", "\n\n"]) if i % 7 == 6 else " "
        )
    return "".join(out)


def test_scan_of_a_10_mb_text() -> None:
    rng = random.Random(7)
    head = prose_words(rng, 950_000)
    loop = "court " * 5_000
    tail = prose_words(rng, 950_000)
    text = head + loop + tail
    assert len(text) > 10_000_000
    findings = scan(text)
    f = only(findings)
    assert f.block in "court " * 2 and len(head) - 6 <= f.start <= len(head)
    assert f.detected_at - f.start <= 25 * 6
    detector = Detector()
    for i in range(0, len(text), 2048):
        detector.feed(text[i : i + 2048])
    assert [first_held(f) for f in detector.findings] == [first_held(f) for f in findings]
    t = trim(text)
    only_removal(t)
    assert len(t.text) < len(text) - 29_000 and t.text.startswith(head[:1000])


# --- positives: real loops the defaults must find ---------------------------------------------


@pytest.mark.parametrize("block", ["loadTools.\n", "loadTools."])
@pytest.mark.parametrize("prefix", ["", "I will load the tools now.\n", "Loading: "])
@pytest.mark.parametrize("delta", [1, 4, 16])
def test_load_tools_found_within_25_repeats(block: str, prefix: str, delta: int) -> None:
    text = prefix + block * 2_000
    detector, found, fed = feed_in_deltas(text, delta)
    assert found is not None
    loop_start = len(prefix)
    assert found.start >= loop_start - len(block)
    assert fed - loop_start <= 25 * len(block) + delta, (found, fed)
    assert found.period == len(block) or found.rule == "identical_lines"
    assert found.block in block * 2  # the block, maybe rotated


def test_the_readmes_loadtools_block_is_found_early_and_trimmed() -> None:
    """The loop the README opens with, an agent's last step of 255,388 chars with `loadTools.`
    20,416 times: found within ~250 chars, trimmed to a few hundred."""
    loop = "loadTools." * 20_416
    intro = "Now I have everything I need. Let me write the final answer.\n\n"
    intro += prose_words(random.Random(5), 12_000)[: 255_388 - len(intro) - len(loop)]
    text = intro + loop
    assert len(text) == 255_388 and scan(intro) == []
    detector, found, fed = feed_in_deltas(text, 3)
    assert found is not None and fed - len(intro) <= 250
    t = trim(text)
    r = only_removal(t)
    assert t.text.startswith(intro + "loadTools." * DEFAULT_KEEP)
    assert r.end == len(text) and r.units >= len(loop) - (DEFAULT_KEEP + 1) * 10
    assert len(t.text) < len(intro) + 300


@pytest.mark.parametrize(
    ("block", "copies"),
    [
        ("court ", 32_000),
        ("the ", 2_366),
        ("czapki, ", 100),
        ("it ", 400),
        ("Other; ", 170),
        # One visible char needs single_char_min_span (2,048 units).
        ("b ", 1100),
        ("ny", 32),
        ("Wait, line52 is the only data row here. ", 20),
        ("and then the model said that it would stop, ", 12),
    ],
)
def test_word_loops_without_newlines(block: str, copies: int) -> None:
    prefix = "Sure! Here is what I found about the hats: "
    text = prefix + block * copies
    findings = scan(text)
    f = findings[0]
    assert f.rule == "periodic_run" and f.period == len(block)
    assert f.block in block * 2  # the block, maybe rotated
    assert len(prefix) - len(block) <= f.start <= len(prefix)
    detector, found, fed = feed_in_deltas(text, 5)
    assert found is not None and first_held(found) == first_held(f)
    # Offline, the finding is the whole loop.
    assert f.end == len(text) and f.repeats >= copies - 1


@pytest.mark.parametrize(
    ("block", "copies"),
    [
        ("Привет, как дела? ", 40),
        ("и снова ", 100),
        ("Я не знаю. ", 60),
        ("Повторяю ответ: суд рассматривает дело.\n", 40),
        ("人民法院 ", 150),
    ],
)
def test_cyrillic_and_cjk_loops(block: str, copies: int) -> None:
    prefix = "Ответ на вопрос: "
    text = prefix + block * copies + "конец"
    f = scan(text)[0]
    assert f.period == len(block) or f.rule == "identical_lines"
    assert text[f.start : f.start + f.period] == f.block
    assert f.start <= len(prefix)
    assert f.detected_at - len(prefix) <= 25 * len(block)


EIGHT_LINES = (
    "I apologize for the confusion. Let me try again with a clearer explanation.\n"
    "The function reads the configuration file and validates every field.\n"
    "If a field is missing, it falls back to the default value.\n"
    "Then it opens a connection to the database using those settings.\n"
    "Each query is retried up to three times before an error is raised.\n"
    "Finally, the results are cached so the next call is fast.\n"
    "\n"
    "Does this answer your question?\n"
)


def test_repeated_8_line_block() -> None:
    assert EIGHT_LINES.count("\n") == 8 and scan(EIGHT_LINES) == []
    prefix = "User: explain the loader\nAssistant: "
    text = prefix + EIGHT_LINES * 12
    f = scan(text)[0]
    assert f.rule == "long_block" and f.period == len(EIGHT_LINES)
    assert f.start <= len(prefix)
    assert f.detected_at <= len(prefix) + 5 * len(EIGHT_LINES)
    t = trim(text)
    assert t.text.startswith(prefix + EIGHT_LINES * DEFAULT_KEEP)
    assert len(t.text) < len(prefix) + (DEFAULT_KEEP + 1) * len(EIGHT_LINES)


def test_repeated_300_char_line() -> None:
    line = (
        "The quick analysis shows that the service restarts every time the cache is flushed, "
        "which suggests the health check is reading a stale value from the shared memory segment "
        "before the writer has finished, so the supervisor decides the process is unhealthy and "
        "kills it; the fix is to wait for the writer."
    )
    assert 290 <= len(line) <= 310
    prefix = "Here is my conclusion:\n"
    text = prefix + (line + "\n") * 12
    f = scan(text)[0]
    assert f.period == len(line) + 1 and f.rule == "long_block"
    assert f.detected_at <= len(prefix) + 5 * (len(line) + 1)


def code_block_90_lines() -> str:
    names = [
        "create_user",
        "delete_user",
        "rename_user",
        "list_orders",
        "cancel_order",
        "refund_order",
        "export_report",
        "import_report",
        "rotate_keys",
        "audit_access",
    ]
    lines: list[str] = []
    for i, name in enumerate(names):
        lines += [
            f"def {name}(req, user_id):",
            f'    """{name.replace("_", " ").capitalize()}."""',
            f"    user = repo.get_user(user_id, {i})",
            "    if user is None:",
            f'        raise NotFound("{name}")',
            f"    res = services.{name}(user, req)",
            f"    log.info('{name}: %s', user_id)",
            f"    return {{'ok': True, 'step': {i}}}",
            "",
        ]
    return "\n".join(lines) + "\n"


def test_repeated_90_line_code_block() -> None:
    block = code_block_90_lines()
    assert block.count("\n") == 90 and len(block) < Rules().max_long_period
    assert scan(block) == []
    prefix = "Here is the complete file:\n```python\n"
    text = prefix + block * 6
    f = scan(text)[0]
    assert f.rule == "long_block" and f.period == len(block)
    assert f.start <= len(prefix)
    assert f.detected_at <= len(prefix) + 5 * len(block)
    detector, found, _ = feed_in_deltas(text, 64)
    assert found is not None and first_held(found) == first_held(f)


def test_50000_char_run_of_one_letter() -> None:
    prefix = "The answer is: "
    text = prefix + "a" * 50_000 + "\n"
    f = only(scan(text))
    assert (f.rule, f.period, f.block, f.start) == ("periodic_run", 1, "a", len(prefix))
    assert f.detected_at - f.start == Rules().single_char_min_span
    t = trim(text)
    assert t.text.startswith(prefix + "aaa") and t.text.endswith("\n") and len(t.text) < 300


# --- negatives: realistic benign text the defaults must leave alone ---------------------------


def edit_list(rng: random.Random) -> str:
    files = [
        f"src/{d}/{m}.py"
        for d in ("api", "core", "db", "ui", "utils")
        for m in ("models", "views", "handlers", "schema", "helpers", "routes", "client", "config")
    ]
    verbs = [
        "Renamed",
        "Updated",
        "Removed unused import in",
        "Added type hints to",
        "Fixed off-by-one in",
        "Reformatted",
        "Extracted helper from",
        "Edited",
    ]
    lines = ["I made the following edits:", ""]
    for _ in range(400):
        f = rng.choice(files)
        verb = rng.choice(verbs)
        lines.append(
            f"- {verb} `{f}` (line {rng.randint(1, 900)}): {rng.choice(['ok', 'done', 'applied'])}"
        )
    lines += ["", "Applied edits:"]
    for i in range(300):
        lines.append(
            f"Edit {i + 1}/300: {rng.choice(files)} +{rng.randint(0, 9)} -{rng.randint(0, 9)}"
        )
    lines += ["", "```diff"]
    for i in range(120):
        n = 10 + 7 * i
        lines += [
            f"--- a/{files[i % len(files)]}",
            f"+++ b/{files[i % len(files)]}",
            f"@@ -{n},7 +{n},7 @@",
            "     def handler(self, request):",
            "-        return self.old_api(request)",
            "+        return self.new_api(request)",
            "     ",
        ]
    lines.append("```")
    return "\n".join(lines) + "\n"


def markdown_tables(rng: random.Random) -> str:
    out = ["## Results", ""]
    cols = 24
    out.append("| " + " | ".join(f"c{i}" for i in range(cols)) + " |")
    out.append("|" + "---|" * cols)
    for _ in range(40):
        out.append("| " + " | ".join(str(rng.choice([0, 0, 0, 1])) for _ in range(cols)) + " |")
    out += ["", "| Feature | Supported | Notes |", "|:--------|:---------:|------:|"]
    for r in range(60):
        out.append(f"| feature_{r:02d} | yes | - |")
    out += ["", "| name | value |", "|" + "-" * 200 + "|" + "-" * 120 + "|"]
    for r in range(30):
        out.append(f"| setting.option.{r} | {'true' if r % 3 else 'false'} |")
    out += ["", "| Day | Mon | Tue | Wed | Thu | Fri |", "| --- | --- | --- | --- | --- | --- |"]
    for r in range(25):
        out.append(f"| {r + 9}:00 | - | - | - | - | - |")
    return "\n".join(out) + "\n"


def deep_code() -> str:
    out = ["#" * 79, "# Configuration loader", "#" * 79, "", "=" * 120, "Settings", "=" * 120, ""]
    out.append("def walk(tree):")
    indent = "    "
    for depth in range(1, 16):
        out.append(indent * depth + f"for node_{depth} in tree.children:")
        out.append(indent * (depth + 1) + f"if node_{depth}.kind == 'leaf_{depth}':")
        out.append(indent * (depth + 2) + f"yield node_{depth}")
    for depth in range(16, 0, -1):
        out.append(indent * depth + f"# end of level {depth}")
    out += ["", "/" + "*" * 78, " * License header", " " + "*" * 78 + "/", ""]
    out += ["# " + "-" * 77, "# " + "=" * 77, "#" * 200, "-" * 300, "=" * 300, "~" * 100, ""]
    out += ["    " * 8 + "x = 1" for _ in range(10)]
    return "\n".join(out) + "\n"


def box_diagram() -> str:
    """An architecture diagram, a sequence diagram with lifelines, a table and a file tree."""
    w = 40
    lines = []
    for name in ["Client", "API gateway", "Auth service", "Orders", "Database"]:
        lines.append("┌" + "─" * w + "┐")
        lines.append("│" + name.center(w) + "│")
        lines.append("│" + "(stateless, 3 replicas)".center(w) + "│")
        lines.append("└" + "─" * (w // 2 - 1) + "┬" + "─" * (w // 2) + "┘")
        lines.append(" " * (w // 2) + "│")
        lines.append(" " * (w // 2) + "▼")
    lane = "  │" + " " * 17 + "│" + " " * 17 + "│"
    lines.append("Client" + " " * 12 + "Server" + " " * 12 + "DB")
    for i in range(25):
        lines.append(lane)
        lines.append("  │── request " + str(i).rjust(2) + " ───►│" + " " * 17 + "│")
        lines.append(lane)
        lines.append("  │" + " " * 17 + "│── query ─────►│")
    lines.append("╔" + "═" * 100 + "╗")
    for i in range(20):
        lines.append("║" + f" row {i:2d} ".ljust(100, "·") + "║")
    lines.append("╚" + "═" * 100 + "╝")
    lines.append("project/")
    for i in range(30):
        lines.append(f"├── module_{i:02d}/")
        lines.append("│   ├── __init__.py")
        lines.append("│   └── core.py")
    return "\n".join(lines) + "\n"


def wireframe() -> str:
    """An 80-column ASCII wireframe of a page: a header, an empty content area, a footer."""
    w = 78
    lines = [
        "+" + "-" * w + "+",
        "|" + " Logo        Home   Docs   Blog   Login".ljust(w) + "|",
        "+" + "-" * w + "+",
    ]
    lines += ["|" + " " * w + "|"] * 3
    lines.append("|" + "(main content)".center(w) + "|")
    lines += ["|" + " " * w + "|"] * 8
    lines += [
        "+" + "-" * w + "+",
        "|" + " (c) 2024 Example Inc.".ljust(w) + "|",
        "+" + "-" * w + "+",
    ]
    return "\n".join(lines) + "\n"


def csv_text(rng: random.Random) -> str:
    rows = ["date,store,product,units,price,discount,currency,region,flag_a,flag_b,flag_c,flag_d"]
    for day in range(500):
        rows.append(
            f"2024-{1 + day // 28 % 12:02d}-{1 + day % 28:02d},store_{rng.randint(1, 9)},"
            f"SKU-{rng.randint(1000, 1020)},{rng.randint(0, 40)},{rng.choice(['9.99', '19.99', '4.50'])},"
            f"0,EUR,EU-West,0,0,0,{rng.choice([0, 1])}"
        )
    rows.append("id," + ",".join(f"x{i}" for i in range(40)))
    for i in range(60):
        rows.append(f"{i}," + ",".join(rng.choice(["0", "0", "0", "", "1"]) for _ in range(40)))
    return "\n".join(rows) + "\n"


def json_records(rng: random.Random) -> str:
    records = [
        {
            "id": 1000 + i,
            "name": f"user{i}",
            "email": f"user{i}@example.com",
            "active": True,
            "roles": ["reader"],
            "settings": {"theme": "dark", "notifications": {"email": True, "sms": False}},
            "score": 0.0,
            "tags": [],
        }
        for i in range(300)
    ]
    nested: Any = {"value": 1}
    for depth in range(30):
        nested = {"level": depth, "child": nested}
    return (
        json.dumps(records, indent=2)
        + "\n"
        + json.dumps(records[:200])
        + "\n"
        + json.dumps(nested, indent=2)
        + "\n"
        + json.dumps(nested)
        + "\n"
    )


def csv_pixels(rng: random.Random) -> str:
    """Images as CSV rows, the MNIST layout: a label, then 784 pixels, mostly background 0."""
    rows = ["label," + ",".join(f"{r}x{c}" for r in range(1, 29) for c in range(1, 29))]
    for _ in range(10):
        pixels = [0] * 784
        for r in range(5, 23):
            for c in range(7, 21):
                if rng.random() < 0.6:
                    pixels[r * 28 + c] = rng.randint(1, 255)
        rows.append(f"{rng.randint(0, 9)}," + ",".join(map(str, pixels)))
    return "\n".join(rows) + "\n"


def json_sparse_records(rng: random.Random) -> str:
    """Metrics records, each with a 64-bin latency histogram that is zero outside a few bins."""
    records = []
    for i in range(40):
        hist = [0] * 64
        for b in rng.sample(range(3, 12), 4):
            hist[b] = rng.randint(1, 500)
        records.append({"endpoint": f"/api/v1/items/{i}", "count": sum(hist), "histogram": hist})
    return json.dumps(records) + "\n" + json.dumps(records[:10], indent=2) + "\n"


NEGATIVES = {
    "edit list": edit_list(random.Random(1)),
    "markdown tables": markdown_tables(random.Random(2)),
    "deep code and rules": deep_code(),
    "box drawing": box_diagram(),
    "ascii wireframe": wireframe(),
    "csv": csv_text(random.Random(3)),
    "csv of image pixels": csv_pixels(random.Random(5)),
    "json records": json_records(random.Random(4)),
    "json records with sparse arrays": json_sparse_records(random.Random(6)),
}


@pytest.mark.parametrize("name", list(NEGATIVES))
def test_benign_text_has_no_finding(name: str) -> None:
    text = NEGATIVES[name]
    assert len(text) > 1_000
    assert scan(text) == []
    detector, found, _ = feed_in_deltas(text, 13)
    assert found is None
    assert trim(text).text == text
