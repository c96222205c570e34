"""Hostile input: every call gives a documented result or a clear error (``TypeError``,
``ValueError``), never a Rust panic (pyo3 raises those as ``pyo3_runtime.PanicException``, a
``BaseException`` that ``except Exception`` does not catch); memory stays bounded; and the
process keeps serving afterwards (the autouse fixture scans a known loop after every test).

The bugs found while writing these (fuzzing and hostile input) are fixed; their cases stay as
regression tests. Cases that could abort the process or deadlock run in a subprocess.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Callable

import numpy as np
import pytest

from loopbreak import Detector, Rules, TokenDetector, TokenStreams, scan, scan_many, trim
from support.oracle import first_held

PAGE = os.sysconf("SC_PAGE_SIZE")
MB = 1 << 20

# About the least `Rules` allows: the detector keeps a window of only ~34 units, so lines and
# runs longer than the window are cheap to build.
LOW = {
    "max_period": 3,
    "max_long_period": 12,
    "min_repeats": 2,
    "text_span": 32,
    "code_min_repeats": 2,
    "code_span": 32,
    "long_min_repeats": 2,
    "min_span": 32,
    "code_min_span": 32,
    "single_char_min_span": 32,
    "whitespace_min_span": 32,
    "table_span": 32,
    "min_lines": 2,
    "code_min_lines": 2,
}


def rss() -> int:
    """Resident memory of this process, in bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


def random_text(
    n: int, seed: int = 0, alphabet: bytes = b"abcdefghijklmnopqrstuvwxyz     \n"
) -> str:
    """`n` units of random ASCII from `alphabet`: no loop any rule could see."""
    table = bytes(alphabet[i % len(alphabet)] for i in range(256))
    return random.Random(seed).randbytes(n).translate(table).decode("ascii")


def run_python(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Runs `code` in a fresh interpreter (for cases that abort or hang the process)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "RUST_BACKTRACE": "0"},
    )


@pytest.fixture(autouse=True)
def keeps_serving() -> Iterator[None]:
    """After every test, the module still works: a known loop is found where it always is."""
    yield
    [finding] = scan("Here is the plan: " + "loadTools." * 30)
    assert (finding.rule, finding.period, finding.block, finding.start) == (
        "periodic_run",
        10,
        "loadTools.",
        18,
    )


# --- wrong types and values: TypeError / ValueError, never a panic -----------------------------


class NotAStr:
    def __str__(self) -> str:
        return "looks like text"


TYPE_ERRORS: list[tuple[str, Callable[[], object]]] = [
    ("feed bytes", lambda: Detector().feed(b"loadTools.")),  # type: ignore[arg-type]
    ("feed bytearray", lambda: Detector().feed(bytearray(b"x"))),  # type: ignore[arg-type]
    ("feed None", lambda: Detector().feed(None)),  # type: ignore[arg-type]
    ("feed int", lambda: Detector().feed(7)),  # type: ignore[arg-type]
    ("feed list of str", lambda: Detector().feed(["a", "b"])),  # type: ignore[arg-type]
    ("feed object with __str__", lambda: Detector().feed(NotAStr())),  # type: ignore[arg-type]
    ("feed numpy floats", lambda: Detector().feed(np.array([1.0, 2.0]))),  # type: ignore[arg-type]
    ("scan bytes", lambda: scan(b"x")),  # type: ignore[arg-type]
    ("scan None", lambda: scan(None)),  # type: ignore[arg-type]
    ("scan numpy floats", lambda: scan(np.zeros(8))),  # type: ignore[arg-type]
    ("scan rules dict", lambda: scan("x", {"min_span": 32})),  # type: ignore[arg-type]
    ("trim bytes", lambda: trim(b"x")),  # type: ignore[arg-type]
    ("trim keep float", lambda: trim("x", keep=1.5)),  # type: ignore[arg-type]
    ("trim keep str", lambda: trim("x", keep="3")),  # type: ignore[arg-type]
    ("Detector rules dict", lambda: Detector({"min_span": 32})),  # type: ignore[arg-type]
    ("Rules float", lambda: Rules(min_lines=30.0)),  # type: ignore[arg-type]
    ("Rules str", lambda: Rules(min_lines="30")),  # type: ignore[arg-type]
    ("Rules None", lambda: Rules(min_lines=None)),  # type: ignore[arg-type]
    ("Rules numpy float", lambda: Rules(min_lines=np.float64(30))),  # type: ignore[arg-type]
    ("Rules positional", lambda: Rules(30)),  # type: ignore[call-arg]
    ("Rules unknown field", lambda: Rules(min_loops=3)),  # type: ignore[call-arg]
    ("required_span bytes", lambda: Rules().required_span(b"ab")),  # type: ignore[arg-type]
    ("tokens numpy floats", lambda: TokenDetector().feed(np.array([1.0, 2.0]))),
    ("tokens numpy bools", lambda: TokenDetector().feed(np.array([True, False]))),
    ("tokens numpy complex", lambda: TokenDetector().feed(np.array([1j]))),
    ("tokens list of floats", lambda: TokenDetector().feed([1.0, 2.0])),
    ("tokens str", lambda: TokenDetector().feed("abc")),
    ("tokens None", lambda: TokenDetector().feed(None)),
    ("tokens 0-d array", lambda: TokenDetector().feed(np.int64(3))),
    ("scan_many bytes item", lambda: scan_many([b"x"])),
    ("scan_many None", lambda: scan_many(None)),
]

VALUE_ERRORS: list[tuple[str, Callable[[], object]]] = [
    ("trim keep 0", lambda: trim("x", keep=0)),
    ("trim keep negative", lambda: trim("x", keep=-5)),
    ("Rules negative", lambda: Rules(min_lines=-1)),
    ("Rules zero period", lambda: Rules(max_period=0)),
    ("Rules one line", lambda: Rules(min_lines=1)),
    ("Rules span below the sampled units", lambda: Rules(min_span=31)),
    ("Rules period above its limit", lambda: Rules(max_long_period=65537)),
    ("Rules span above its limit", lambda: Rules(text_span=2**24 + 1)),
    ("Rules long period below period", lambda: Rules(max_period=200, max_long_period=100)),
    ("Rules above u32", lambda: Rules(min_span=2**40)),
    ("required_span empty", lambda: Rules().required_span("")),
    ("tokens negative", lambda: TokenDetector().feed([-1])),
    ("tokens 2**32", lambda: TokenDetector().feed([2**32])),
    ("tokens uint64 above u32", lambda: TokenDetector().feed(np.array([2**63], dtype=np.uint64))),
    ("tokens 2-d", lambda: TokenDetector().feed(np.zeros((2, 2), dtype=np.int64))),
    ("streams unknown slot", lambda: TokenStreams().step([3], [1])),
    ("scan_many zero threads", lambda: scan_many(["x"], threads=0)),
]


@pytest.mark.parametrize("call", [c for _, c in TYPE_ERRORS], ids=[n for n, _ in TYPE_ERRORS])
def test_wrong_types_raise_type_error(call: Callable[[], object]) -> None:
    with pytest.raises(TypeError) as caught:
        call()
    assert str(caught.value)


@pytest.mark.parametrize("call", [c for _, c in VALUE_ERRORS], ids=[n for n, _ in VALUE_ERRORS])
def test_bad_values_raise_value_error(call: Callable[[], object]) -> None:
    with pytest.raises(ValueError) as caught:
        call()
    assert str(caught.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda: Rules(min_span=2**64),
        lambda: trim("x", keep=2**64),
        lambda: TokenDetector().feed([2**200]),
    ],
    ids=["Rules", "trim keep", "token id"],
)
def test_huge_ints_raise_value_error(call: Callable[[], object]) -> None:
    with pytest.raises(ValueError):
        call()


def test_str_subclasses_are_text() -> None:
    class Delta(str):
        pass

    detector = Detector()
    assert detector.feed(Delta("loadTools." * 30)) is not None
    assert scan(np.str_("loadTools." * 30))[0].block == "loadTools."


def test_a_failed_step_feeds_nothing() -> None:
    streams = TokenStreams()
    a = streams.add()
    with pytest.raises(ValueError, match="slot"):
        streams.step([a, a + 1], [1, 2])
    assert streams.units_seen(a) == 0
    with pytest.raises(ValueError, match="length"):
        streams.step([a], [1, 2])
    assert streams.units_seen(a) == 0


# --- hostile text ------------------------------------------------------------------------------


@pytest.mark.parametrize("unit", ["\ud800", "\udfff", "\x00", "\U0010ffff", "\ufeff"])
def test_any_code_point_is_a_unit(unit: str) -> None:
    """Lone surrogates, NUL, the last code point and BOM: offsets index the str, blocks come
    back unchanged, chunking does not matter, trim keeps them."""
    prefix = f"clean {unit} text\n"
    text = prefix + (unit + "ab") * 300 + "\nend" + unit
    findings = scan(text)
    assert [(f.rule, f.period, f.block, f.start) for f in findings] == [
        ("periodic_run", 3, unit + "ab", len(prefix))
    ]
    detector = Detector()
    for at in range(0, len(text), 7):
        detector.feed(text[at : at + 7])
    assert [first_held(f) for f in detector.findings] == [first_held(f) for f in findings]
    trimmed = trim(text)
    assert trimmed.text.startswith(prefix + (unit + "ab") * 3)
    assert trimmed.text.endswith("\nend" + unit)
    clean = random_text(5000, seed=1) + unit + random_text(5000, seed=2)
    assert scan(clean) == [] and trim(clean).text == clean


def test_a_run_of_lone_surrogates_or_nul() -> None:
    for unit in ("\ud800", "\x00"):
        [finding] = scan(unit * 10_000)
        assert (finding.block, finding.start, finding.detected_at) == (
            unit,
            0,
            Rules().required_span(unit),
        )
        trimmed = trim(unit * 10_000)
        assert trimmed.text.startswith(unit * 3 + "\n[loopbreak: removed 9997 units")


def test_a_100_mb_single_feed() -> None:
    """One feed of 100 MB (with the GIL released): the loop at its end is found at its exact
    offset, and memory grows by far less than the text (the detector keeps a window)."""
    clean = random_text(MB, seed=3) * 100  # its period (1 MiB) is beyond every rule
    text = clean + "loadTools." * 30
    before = rss()
    detector = Detector()
    finding = detector.feed(text)
    grown = rss() - before
    assert finding is not None and (finding.start, finding.period) == (len(clean), 10)
    assert detector.units_seen == len(text)
    assert grown < 64 * MB, f"RSS grew by {grown / MB:.0f} MB for one 100 MB feed"


def test_a_10_mb_single_line() -> None:
    line = random_text(10 * MB, seed=4, alphabet=b"abcdefghijklmnopqrstuvwxyz ")
    assert "\n" not in line
    assert scan(line) == []
    assert trim(line).text == line
    detector = Detector()
    assert detector.feed(line) is None and detector.feed("\n") is None
    looping = "x" * (10 * MB)
    [finding] = scan(looping)
    assert (finding.period, finding.detected_at) == (1, Rules().required_span("x"))
    trimmed = trim(looping)
    assert (
        trimmed.text
        == 'xxx\n[loopbreak: removed 10485757 units: "x" repeated 10485757 more times (periodic_run)]'
    )


def test_one_million_identical_lines() -> None:
    text = "the same line\n" * 1_000_000
    # A short line repeated is also a periodic run of the line plus its newline; at the defaults
    # the lines of `identical_lines` hold first (14 lines, 196 units; the run needs 280).
    [finding] = scan(text)
    lines = Rules().required_lines("the same line")
    assert 14 * lines < Rules().required_span("the same line\n")
    assert (finding.rule, finding.period, finding.block, finding.detected_at) == (
        "identical_lines",
        13,
        "the same line",
        14 * lines,
    )
    assert (finding.repeats, finding.end) == (1_000_000, len(text))
    trimmed = trim(text)
    [removal] = trimmed.removals
    assert trimmed.text.startswith("the same line\n" * 3) and len(trimmed.text) < 200
    assert (removal.start, removal.end, removal.repeats) == (42, len(text), 1_000_000 - 3)
    before = rss()
    detector = Detector()
    for _ in range(1_000_000):
        detector.feed("the same line\n")
    assert len(detector.findings) == 1 and detector.units_seen == len(text)
    assert rss() - before < 16 * MB


def test_identical_long_lines_beyond_the_periodic_rules() -> None:
    line = random_text(5000, seed=5, alphabet=b"abcdefghij   ") + "z"
    [finding] = scan((line + "\n") * 30)
    assert (finding.rule, finding.period, finding.block, finding.repeats) == (
        "identical_lines",
        5001,
        line,
        30,
    )
    assert finding.detected_at == Rules().required_lines(line) * 5002


def test_extremely_long_periods() -> None:
    """The longest block a rule looks for (max_long_period) repeats into a long_block; one unit
    longer is not a periodic finding; at the limit of max_long_period (65536) too."""
    longest, repeats = Rules().max_long_period, Rules().long_min_repeats
    block = random_text(longest, seed=6, alphabet=b"abcdefghijklmnopqrstuvwxyz ")
    [finding] = scan(block * (repeats + 1))
    assert (finding.rule, finding.period, finding.start, finding.repeats) == (
        "long_block",
        longest,
        0,
        repeats + 1,
    )
    assert finding.detected_at == repeats * longest
    assert scan((block + "!") * (repeats + 1)) == []
    rules = Rules(max_long_period=65536)
    huge = random_text(65536, seed=7, alphabet=b"abcdefghijklmnopqrstuvwxyz ")
    before = rss()
    detector = Detector(rules)
    finding2 = detector.feed(huge * (repeats + 1))
    assert finding2 is not None and (finding2.rule, finding2.period, finding2.repeats) == (
        "long_block",
        65536,
        repeats,
    )
    assert finding2.block == huge
    assert rss() - before < 64 * MB


def test_rules_at_their_limits() -> None:
    most = 2**24
    extreme = Rules(
        max_period=65536,
        max_long_period=65536,
        min_repeats=most,
        text_span=most,
        code_min_repeats=most,
        code_span=most,
        min_span=most,
        code_min_span=most,
        single_char_min_span=most,
        whitespace_min_span=most,
        table_span=most,
        min_lines=most,
        code_min_lines=most,
    )
    before = rss()
    detector = Detector(extreme)
    assert detector.feed(random_text(MB, seed=8)) is None
    assert detector.feed("loadTools." * 10_000) is None  # far below every threshold
    assert rss() - before < 160 * MB  # a window of 2**24 units (64 MiB) at most
    least = Rules(**LOW)
    assert scan("ab" * 20, least)[0].period == 2


def test_trim_keep_at_its_extremes() -> None:
    text = "Plan:\n" + "abc " * 100 + "\nDone."
    for keep in (1, 2, 99, 100, 10**6):
        trimmed = trim(text, keep=keep)
        if keep >= 100:
            assert trimmed.text == text and trimmed.removals == []
        else:
            assert trimmed.text.startswith("Plan:\n" + "abc " * keep + "\n[loopbreak: removed")
            assert trimmed.text.endswith("\nDone.")


@pytest.mark.parametrize("keep", [2**62, 2**63 - 1])
def test_trim_keeps_every_copy_when_keep_is_huge(keep: int) -> None:
    text = "Plan:\n" + "abc " * 100 + "\nDone."
    # Today 6 + keep * 4 wraps: keep=2**62 removes every copy, keep=2**63-1 even removes clean
    # text before the loop ('Pl' + marker + 'Done.').
    assert trim(text, keep=keep).text == text


def test_trim_keep_beyond_64_bits_is_a_clear_error() -> None:
    with pytest.raises((ValueError, OverflowError)):
        trim("abc " * 100, keep=2**64)


# --- found by fuzzing, fixed: units read from outside the detector's window ----------------------


@pytest.mark.parametrize("low", [False, True], ids=["default rules", "LOW rules"])
def test_identical_lines_longer_than_the_window(low: bool) -> None:
    """A line longer than the window (15,362 units at the defaults), with trailing whitespace,
    repeated: the finding's block is the line's tail (documented), not a panic or other units."""
    n = 100 if low else 20_000
    rules = Rules(**LOW) if low else None
    line = "".join(chr(0x4E00 + i % 20_000) for i in range(n))
    findings = scan((line + " \n") * 30, rules)
    assert findings, "no finding"
    finding = findings[0]
    assert (finding.rule, finding.period, finding.start) == ("identical_lines", n, 0)
    assert line.endswith(finding.block)


@pytest.mark.parametrize(
    ("field", "text"),
    [("whitespace_min_span", "x" + " " * 210), ("single_char_min_span", "x" + "-    " * 50)],
)
def test_spans_longer_than_the_window(field: str, text: str) -> None:
    rules = Rules(**{**LOW, field: 200})
    [finding] = scan(text, rules)
    assert finding.start == 1 and finding.detected_at == 201
    assert finding.block == text[finding.start : finding.start + finding.period]


def test_valid_rules_never_abort_the_process() -> None:
    """Either the rules are refused (ValueError) or the detector works: the process must not
    die (today: 'memory allocation of 4398046511112 bytes failed', SIGABRT)."""
    result = run_python(
        """
        from loopbreak import Detector, Rules
        most = 2**24
        try:
            rules = Rules(max_long_period=65536, long_min_repeats=most, min_repeats=most, code_min_repeats=most)
        except ValueError:
            print("refused")
        else:
            Detector(rules).feed("a")
            print("fed")
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() in ("refused", "fed")
