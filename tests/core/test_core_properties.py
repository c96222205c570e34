"""Hypothesis properties of the core, checked against the pure-Python oracle (tests/oracle.py).

Most properties run with small rules, so that short random texts reach every rule often; one
runs with the default rules on texts a few thousand units long, where the detector's sampling
matters. Each generator is also checked (``test_generators_reach_*``) to actually produce texts
the rules fire on, so that a generator that drifted out of the rules' reach fails loudly instead
of making the equality properties vacuous.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import HealthCheck, Phase, event, find, given, settings
from hypothesis import strategies as st

import loopbreak
from loopbreak import Detector, Rules, scan, trim
from support.oracle import (
    Candidate,
    OracleFinding,
    first_held,
    is_whitespace,
    oracle_candidates,
    oracle_scan,
    oracle_stream,
    plain,
    rstrip_whitespace,
    template_streaks,
)

SMALL = Rules(
    max_period=8,
    max_long_period=40,
    min_repeats=6,
    text_span=40,
    code_min_repeats=8,
    code_span=60,
    long_min_repeats=3,
    min_span=32,
    code_min_span=32,
    single_char_min_span=40,
    whitespace_min_span=48,
    table_span=64,
    min_lines=3,
    code_min_lines=4,
    counter_min_lines=3,
    counter_span=20,
    code_counter_min_lines=4,
    code_counter_span=30,
    data_counter_min_lines=5,
    template_min_lines=4,
)

MEDIUM = Rules(
    max_period=20,
    max_long_period=120,
    min_repeats=8,
    text_span=100,
    code_min_repeats=10,
    code_span=150,
    long_min_repeats=3,
    min_span=32,
    code_min_span=32,
    single_char_min_span=64,
    whitespace_min_span=96,
    table_span=160,
    min_lines=4,
    code_min_lines=5,
    counter_min_lines=4,
    counter_span=60,
    code_counter_min_lines=5,
    code_counter_span=80,
    data_counter_min_lines=6,
    template_min_lines=6,
)

DEFAULT = Rules()

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ALPHABETS = ["ab", "ab \n", "a-\n ", "xyz.\n\n", "aé 人\n", "a \r\n\x1c\u3000\x85"]

# Letters for which str.isalpha() agrees with Rust's char::is_alphabetic (see oracle.py).
WORDS = [
    "the",
    "loop",
    "tools",
    "load",
    "agent",
    "model",
    "court",
    "it",
    "Wait,",
    "line",
    "is",
    "only",
    "data",
    "row",
    "here.",
    "Привет,",
    "как",
    "дела?",
    "снова",
    "и",
    "人民法院",
    "依据",
    "好。",
    "执行。",
    "café",
    "naïve",
    "x",
    "=",
    "0,",
    "{}",
    "->",
    "def",
    "f(x):",
    "return",
    "#",
    "|",
    "---",
    "    ",
    "\t",
    "",
    "-",
    "1",
    "42",
]

SEPARATORS = [" ", " ", " ", "\n", "\n\n", ", ", "  ", "\t"]

EMOJI = [
    "👍",
    "👍🏽",
    "👍🏿",
    "👨\u200d👩\u200d👧\u200d👦",
    "🏳️\u200d🌈",
    "🇫🇷",
    "❤️",
    "😀",
]
COMBINING = ["e\u0301", "a\u0300\u0323", "n\u0303", "o\u0308", "u\u0304\u0301"]
UNICODE_TOKENS = EMOJI + COMBINING + ["Привет", "мир", "人民", "法院", "é", " ", "\n", "ok", "—"]


# --- generators -------------------------------------------------------------------------------


def looped_texts(
    alphabet: str, longest_block: int = 45, most_copies: int = 14
) -> st.SearchStrategy[str]:
    """Texts over ``alphabet`` made of noise and of blocks repeated back to back."""
    noise = st.text(alphabet, max_size=12)
    loop = st.builds(
        lambda block, copies: block * copies,
        st.text(alphabet, min_size=1, max_size=longest_block),
        st.integers(1, most_copies),
    )
    return st.lists(st.one_of(noise, loop), max_size=6).map("".join)


@st.composite
def glitched_loop(
    draw: st.DrawFn, tokens: list[str], separators: list[str], most_tokens: int, most_copies: int
) -> str:
    """A block of tokens repeated, maybe with one copy altered, truncated or doubled."""
    n = draw(st.integers(1, most_tokens))
    parts = []
    for _ in range(n):
        parts.append(draw(st.sampled_from(tokens)))
        parts.append(draw(st.sampled_from(separators)))
    block = "".join(parts)
    copies = [block] * draw(st.integers(1, most_copies))
    if len(copies) > 2 and draw(st.booleans()):
        i = draw(st.integers(0, len(copies) - 1))
        kind = draw(st.sampled_from(["replace", "drop", "insert", "double"]))
        c = copies[i]
        j = draw(st.integers(0, len(c) - 1))
        if kind == "replace":
            copies[i] = c[:j] + draw(st.sampled_from(["x", "\n", " ", "é"])) + c[j + 1 :]
        elif kind == "drop":
            copies[i] = c[:j] + c[j + 1 :]
        elif kind == "insert":
            copies[i] = c[:j] + draw(st.sampled_from(tokens)) + c[j:]
        else:
            copies[i] = c + c
    return "".join(copies)


@st.composite
def prose(draw: st.DrawFn, tokens: list[str], separators: list[str], most_tokens: int) -> str:
    n = draw(st.integers(0, most_tokens))
    return "".join(
        draw(st.sampled_from(tokens)) + draw(st.sampled_from(separators)) for _ in range(n)
    )


def fragments(
    tokens: list[str], separators: list[str], loops: list[tuple[int, int]], most_prose: int
) -> st.SearchStrategy[str]:
    """Loops spliced into prose: prose + loop (+ prose + loop) + prose. ``loops`` lists the
    (most tokens in a block, most copies) pairs to draw loops from: short blocks need many
    copies, long ones few, and bounding both keeps the texts (and the oracle) fast."""
    loop = st.one_of(*[glitched_loop(tokens, separators, t, c) for t, c in loops])
    piece = st.tuples(prose(tokens, separators, most_prose), loop).map("".join)
    return st.tuples(
        st.lists(piece, min_size=1, max_size=3), prose(tokens, separators, most_prose)
    ).map(lambda t: "".join(t[0]) + t[1])


SMALL_FRAGMENTS = fragments(WORDS, SEPARATORS, [(6, 12)], most_prose=8)
MEDIUM_FRAGMENTS = fragments(WORDS, SEPARATORS, [(4, 14), (18, 6)], most_prose=20)
DEFAULT_FRAGMENTS = fragments(WORDS, SEPARATORS, [(3, 45), (12, 30), (80, 6)], most_prose=40)
UNICODE_TEXTS = fragments(UNICODE_TOKENS, [" ", "", "\n", ", "], [(5, 14)], most_prose=6)

# Templates of counter lines (`#` is a number): words, code, identifiers, numbers after words
# and names, decimals, templates without a letter, digits of the template's own.
COUNTER_TEMPLATES = [
    "# a",
    "#. ab",
    "x # y #",
    "##",
    "a#",
    "abc#",
    "aBc# d",
    "0ab# c",
    "- # é人",
    "0# it",
    "v_#",
    "(#, #, #) a",
    "(#)",
    "#.5",
    "# #",
    "=#;",
    "# it's `a`",
    "**a #:** b",
    "| # | a |",
    "#,a,1.5",
    "a 19#",
]


@st.composite
def counter_texts(draw: st.DrawFn) -> str:
    """Lines of templates whose numbers mostly count up by one, sometimes stay, jump, go back or
    carry (``9`` to ``10``, ``099`` to ``100``), padded to a width or behind a fixed run of zeros
    (``09`` to ``010``, which is no step), the template's first number alone or all of them
    counting (three that carry at once make a line three units longer), in cycles of one to four
    templates (the number counting on each line or once a cycle), with blank lines, trailing
    whitespace and noise lines between them."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        cycle = draw(st.lists(st.sampled_from(COUNTER_TEMPLATES), min_size=1, max_size=4))
        once_a_cycle = draw(st.booleans())
        a, b = draw(st.integers(0, 12)), draw(st.integers(0, 2))
        zeros = draw(st.sampled_from(["", "0", "00"]))
        width = draw(st.sampled_from([0, 2, 3]))
        together = draw(st.booleans())
        for i in range(draw(st.integers(0, 14 * len(cycle)))):
            tpl = cycle[i % len(cycle)]
            number = f"{a:0{width}d}" if width else f"{zeros}{a}"
            if together:
                out.append(tpl.replace("#", number))
            else:
                out.append(tpl.replace("#", number, 1).replace("#", str(b), 1))
            out.append(draw(st.sampled_from(["\n", " \n", "\n\n", "\n \n"])))
            if once_a_cycle and i % len(cycle) != len(cycle) - 1:
                continue
            step = draw(
                st.sampled_from(["up", "up", "up", "up", "same", "jump", "down", "b", "noise"])
            )
            a += {"up": 1, "jump": 2, "down": -1 if a else 0}.get(step, 0)
            b += step == "b"
            if step == "noise":
                out.append(draw(st.sampled_from(["a1\n", "zz\n", "1\n"])))
    if draw(st.booleans()):
        out.append(draw(st.sampled_from(["9 a", "1", "x 3 y"])))
    return "".join(out)


COUNTER_TEXTS = counter_texts()

# Prose templates of the template rule (each `{n}` a number): words with a number in each, most
# short enough to fit SMALL's max_long_period (40), one that does not; numbers with a width
# (`{n}.{n}`), lone `a` and `I`, a list mark, a heading, emphasis, quotes, apostrophes straight
# and curly, a hyphen, a `key:` that ends the line, a name among three words (one other token
# per three words is prose), Cyrillic, CJK (six chars of it are prose); two that reorder the
# words of another (a near-copy of it once two lines share a template).
TEMPLATE_PROSE = [
    "Day {n}: visit the old temple.",
    "visit the old temple, Day {n}.",
    "снова здесь Строка номер {n}",
    "Step {n}. Check the server's logs.",
    "On {n} March we met in Lisbon.",
    "- Item {n}: buy fresh bread",
    "I saw {n} cats, a dog and I ran",
    "**Note {n}:** it's late again",
    "## Part {n} of the long story",
    "Version {n}.{n} is out with fixes",
    '"Hello" said the bot {n} times',
    "It’s day {n} of a well-known trip",
    "Item {n} has the key:",
    "the cat x1 ran {n}",
    "Строка номер {n} снова здесь",
    "会议第 {n} 次在北京举行了讨论",
    "北京举行会议 {n}",
    "Day {n}: visit the old temple and walk by the river.",
    # Indented as code (four spaces, a tab): never numbered, whatever follows.
    "    Day {n}: we walk by the river",
    "\tStep {n} of the long walk home",
]
# Numbered lines that are no prose (code, a table row, a list of numbers, fields, names, five
# CJK chars where six are prose; `x = {n};` has 6 units): each ends a streak.
TEMPLATE_BREAKERS = [
    "x = {n};",
    "x = {n}; y = {n};",
    "| {n} | {n} |",
    "{n}, {n}, {n}, {n}",
    "key: {n} id: {n} ok",
    "callMe({n}) now",
    "the x1 y2 cat ran {n}",
    "北京举行会 {n}",
]
# Considered lines without a number (digits inside names and words are none): they take a place
# among the 16 lines a line recurs from, and neither continue nor end a streak.
TEMPLATE_UNNUMBERED = [
    "Nothing to report here.",
    "See the notes x1 and y2.",
    "第3章 开始了新的故事",
    "The 3rd call failed again",
    "Almost done now",
    "In 1958 it rained all year.",
]
# Lines of fewer than 6 units (trailing whitespace aside), passed over entirely.
TEMPLATE_SHORT = ["ok 1", "12", "a 3 b", "  7  ", "x = 5", "x", ""]


def fill(template: str, numbers: list[str]) -> str:
    for number in numbers:
        template = template.replace("{n}", number, 1)
    return template


@st.composite
def template_texts(draw: st.DrawFn) -> str:
    """Lines drawn from two to four prose templates (``TEMPLATE_PROSE``) in random order or in
    turn, their numbers random (often equal: a line then repeats one before it exactly, which
    recurs as well), counting up (items numbered in turn, which the counter rule may
    also take) or of a fixed width, with blank lines, short lines, lines without a number,
    numbered lines that are no prose, bursts of unnumbered lines (those whose digits are in a
    name or a year push a template out of the 16 lines a line recurs from and end a streak;
    those with no digit do neither), trailing whitespace, and maybe a last line without a
    newline."""
    out = []
    for _ in range(draw(st.integers(1, 2))):
        templates = draw(
            st.lists(st.sampled_from(TEMPLATE_PROSE), min_size=2, max_size=4, unique=True)
        )
        in_turn, counting = draw(st.booleans()), draw(st.booleans())
        # Numbers of four digits or more (years, ids) are no numbers: they stay in the template.
        top = draw(st.sampled_from([3, 40, 500, 1200]))
        width = draw(st.sampled_from([0, 0, 2, 3]))
        item = draw(st.integers(0, top))
        for i in range(draw(st.integers(0, 28))):
            kind = draw(
                st.sampled_from(
                    ["template"] * 12 + ["blank", "short", "unnumbered", "breaker", "burst"]
                )
            )
            if kind == "template":
                template = (
                    templates[i % len(templates)] if in_turn else draw(st.sampled_from(templates))
                )
                first = item if counting else draw(st.integers(0, top))
                item += 1
                rest = draw(st.lists(st.integers(0, 9), min_size=2, max_size=2))
                numbers = [f"{n:0{width}d}" if width else str(n) for n in [first, *rest]]
                line = fill(template, numbers)
            elif kind == "blank":
                line = draw(st.sampled_from(["", " ", "\t"]))
            elif kind == "short":
                line = draw(st.sampled_from(TEMPLATE_SHORT))
            elif kind == "unnumbered":
                line = draw(st.sampled_from(TEMPLATE_UNNUMBERED))
            elif kind == "breaker":
                line = fill(draw(st.sampled_from(TEMPLATE_BREAKERS)), ["4", "17", "4", "2"])
            else:
                burst = draw(
                    st.lists(st.sampled_from(TEMPLATE_UNNUMBERED), min_size=8, max_size=18)
                )
                line = "\n".join(burst)
            out.append(line + draw(st.sampled_from(["\n", "\n", "\n", " \n", "\n\n"])))
    if draw(st.booleans()):
        last = fill(draw(st.sampled_from(TEMPLATE_PROSE + ["ok", "Almost"])), ["5", "6", "7"])
        out.append(last + draw(st.sampled_from(["", " "])))
    return "".join(out)


TEMPLATE_TEXTS = template_texts()

# What separates the numbers of a count (a name's `_`, a digit run, a newline, more than 16 units:
# no separator), and the noise between counts (names with digits, a number of four digits).
COUNT_SEPARATORS = [".", ", ", " ", ") (", "人,", "x", "_", ",\n", "a b c d e f g h i j"]
COUNT_NOISE = ["ab", " ", "\n", "7", "x1", ". ", "1000", "_2"]


@st.composite
def count_texts(draw: st.DrawFn) -> str:
    """Counts inside lines: numbers that go one up with one separator, from small values, around
    100 (a digit more) and around 1,000 (four digits: no number), in half of the counts now and
    then skipping one, changing separator or broken by noise; some long enough for the default
    rules."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        out.extend(draw(st.lists(st.sampled_from(COUNT_NOISE), max_size=4)))
        separator = draw(st.sampled_from(COUNT_SEPARATORS))
        n = draw(st.sampled_from([0, 1, 7, 95, 990]))
        steps = ["up"] * 12 + ["jump", "separator", "noise"] if draw(st.booleans()) else ["up"]
        for _ in range(draw(st.sampled_from([0, 4, 9, 14, 70]))):
            out.append(f"{n}{separator}")
            step = draw(st.sampled_from(steps))
            n += 2 if step == "jump" else 1
            if step == "separator":
                separator = draw(st.sampled_from(COUNT_SEPARATORS))
            elif step == "noise":
                out.append(draw(st.sampled_from(COUNT_NOISE)))
    return "".join(out)


COUNT_TEXTS = count_texts()


@st.composite
def small_rules(draw: st.DrawFn) -> Rules:
    """Valid rules small enough for short texts, varied in every field."""
    max_period = draw(st.integers(1, 10))
    long_min_repeats = draw(st.integers(2, 4))
    return Rules(
        max_period=max_period,
        max_long_period=draw(st.integers(max_period, 40)),
        min_repeats=draw(st.integers(long_min_repeats, 10)),
        text_span=draw(st.integers(0, 80)),
        code_min_repeats=draw(st.integers(long_min_repeats, 12)),
        code_span=draw(st.integers(0, 100)),
        long_min_repeats=long_min_repeats,
        min_span=draw(st.integers(32, 60)),
        code_min_span=draw(st.integers(32, 60)),
        single_char_min_span=draw(st.integers(32, 80)),
        whitespace_min_span=draw(st.integers(32, 80)),
        table_span=draw(st.integers(0, 120)),
        min_lines=draw(st.integers(2, 5)),
        code_min_lines=draw(st.integers(2, 6)),
        counter_min_lines=draw(st.integers(2, 6)),
        counter_span=draw(st.integers(0, 60)),
        code_counter_min_lines=draw(st.integers(2, 6)),
        code_counter_span=draw(st.integers(0, 60)),
        data_counter_min_lines=draw(st.integers(2, 8)),
        template_min_lines=draw(st.integers(2, 10)),
    )


def core(text: str, rules: Rules) -> list[OracleFinding]:
    return [plain(f) for f in scan(text, rules)]


def window_tail(f: OracleFinding, found: list[OracleFinding]) -> OracleFinding:
    """A line longer than the detector's window is reported by the tail the window holds
    (documented): accept that tail in place of the whole line."""
    for g in found:
        if (g.rule, g.start, g.detected_at, g.period) == (
            f.rule,
            f.start,
            f.detected_at,
            f.period,
        ) and (
            f.rule == "identical_lines" and len(g.block) < f.period and f.block.endswith(g.block)
        ):
            return dataclasses.replace(f, block=g.block)
    return f


def agrees_with_oracle(text: str, rules: Rules) -> list[OracleFinding]:
    found = core(text, rules)
    expected = [window_tail(f, found) for f in oracle_scan(rules, text)]
    assert found == expected, f"text={text!r}"
    return expected


def check_against_oracle(text: str, rules: Rules) -> None:
    expected = agrees_with_oracle(text, rules)
    for f in expected:
        event(f"oracle finds {f.rule}")
    if not expected:
        event("oracle finds nothing")


# --- (a) the core equals the oracle ------------------------------------------------------------


@pytest.mark.parametrize("alphabet", ALPHABETS)
@FAST
@given(data=st.data())
def test_scan_equals_oracle_small_alphabets(alphabet: str, data: st.DataObject) -> None:
    text = data.draw(st.one_of(looped_texts(alphabet), st.text(alphabet, max_size=200)))
    check_against_oracle(text, SMALL)


@FAST
@given(text=SMALL_FRAGMENTS)
def test_scan_equals_oracle_on_fragments(text: str) -> None:
    check_against_oracle(text, SMALL)


@SLOW
@given(text=MEDIUM_FRAGMENTS)
def test_scan_equals_oracle_on_fragments_medium_rules(text: str) -> None:
    check_against_oracle(text, MEDIUM)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=DEFAULT_FRAGMENTS)
def test_scan_equals_oracle_on_fragments_default_rules(text: str) -> None:
    check_against_oracle(text, DEFAULT)


@FAST
@given(rules=small_rules(), text=st.one_of(looped_texts("ab \n-"), SMALL_FRAGMENTS))
def test_scan_equals_oracle_random_rules(rules: Rules, text: str) -> None:
    check_against_oracle(text, rules)


@FAST
@given(text=COUNTER_TEXTS)
def test_scan_equals_oracle_on_counter_texts(text: str) -> None:
    check_against_oracle(text, SMALL)


@FAST
@given(rules=small_rules(), text=COUNTER_TEXTS)
def test_scan_equals_oracle_on_counter_texts_random_rules(rules: Rules, text: str) -> None:
    check_against_oracle(text, rules)


@FAST
@given(rules=st.sampled_from([SMALL, DEFAULT]), text=COUNT_TEXTS)
def test_scan_equals_oracle_on_count_texts(rules: Rules, text: str) -> None:
    check_against_oracle(text, rules)


@given(rules=small_rules(), text=COUNT_TEXTS)
def test_scan_equals_oracle_on_count_texts_random_rules(rules: Rules, text: str) -> None:
    check_against_oracle(text, rules)


@given(text=TEMPLATE_TEXTS)
def test_scan_equals_oracle_on_template_texts(text: str) -> None:
    check_against_oracle(text, SMALL)


@FAST
@given(rules=small_rules(), long_lines=st.booleans(), text=TEMPLATE_TEXTS)
def test_scan_equals_oracle_on_template_texts_random_rules(
    rules: Rules, long_lines: bool, text: str
) -> None:
    if long_lines:
        # Most templates' lines are 16 to 40 units long: let them fit, whatever was drawn.
        rules = Rules(**{**rules.to_dict(), "max_long_period": 64})
    check_against_oracle(text, rules)


@SLOW
@given(text=TEMPLATE_TEXTS)
def test_scan_equals_oracle_on_template_texts_default_rules(text: str) -> None:
    check_against_oracle(text, DEFAULT)


@SLOW
@given(text=looped_texts("a\ud800 \n\udfff"))
def test_scan_equals_oracle_with_lone_surrogates(text: str) -> None:
    check_against_oracle(text, SMALL)


def _reaches(strategy: st.SearchStrategy[str], rules: Rules, rule: str) -> str:
    return find(
        strategy,
        lambda text: any(f.rule == rule for f in scan(text, rules)),
        # No shrinking: any example that fires will do, and shrinking one is slow.
        settings=settings(max_examples=2000, database=None, phases=[Phase.generate]),
    )


@pytest.mark.parametrize(
    ("strategy", "rules", "rule"),
    [
        (looped_texts("ab"), SMALL, "periodic_run"),
        (looped_texts("ab"), SMALL, "long_block"),
        (looped_texts("xyz.\n\n"), SMALL, "identical_lines"),
        (looped_texts("aé 人\n"), SMALL, "identical_lines"),
        (looped_texts("a-\n "), SMALL, "periodic_run"),
        (SMALL_FRAGMENTS, SMALL, "periodic_run"),
        (SMALL_FRAGMENTS, SMALL, "long_block"),
        (SMALL_FRAGMENTS, SMALL, "identical_lines"),
        (MEDIUM_FRAGMENTS, MEDIUM, "periodic_run"),
        (MEDIUM_FRAGMENTS, MEDIUM, "long_block"),
        (DEFAULT_FRAGMENTS, DEFAULT, "periodic_run"),
        (UNICODE_TEXTS, SMALL, "periodic_run"),
        (UNICODE_TEXTS, SMALL, "identical_lines"),
        (COUNTER_TEXTS, SMALL, "counter_lines"),
        (TEMPLATE_TEXTS, SMALL, "template_lines"),
        (TEMPLATE_TEXTS, DEFAULT, "template_lines"),
        (COUNT_TEXTS, SMALL, "counter_run"),
        (COUNT_TEXTS, DEFAULT, "counter_run"),
    ],
)
def test_generators_reach_the_rules(
    strategy: st.SearchStrategy[str], rules: Rules, rule: str
) -> None:
    """Each generator yields texts the core reports ``rule`` on, and the oracle agrees there.

    ``find`` raises if no example fires, so the equality properties above cannot pass by never
    reaching the rules."""
    text = _reaches(strategy, rules, rule)
    assert any(f.rule == rule for f in oracle_scan(rules, text)), f"text={text!r}"


# --- (b) chunking invariance -------------------------------------------------------------------


def feed_in_pieces(text: str, cuts: list[int], rules: Rules) -> Detector:
    """Feeds ``text`` split at ``cuts`` and checks what each ``feed`` returns on the way."""
    detector = Detector(rules)
    bounds = [0, *sorted(cuts), len(text)]
    for lo, hi in zip(bounds, bounds[1:]):
        before = detector.findings
        returned = detector.feed(text[lo:hi])
        after = detector.findings
        assert after[: len(before)] == before, "findings already reported changed"
        new = after[len(before) :]
        if new:
            assert returned == new[0], f"feed returned {returned!r}, first new finding {new[0]!r}"
        else:
            assert returned is None
        for f in new:
            # "the first finding whose rule first held inside it": held inside (lo, hi].
            assert lo < f.detected_at <= hi, f"{f!r} reported by the delta [{lo}, {hi})"
        assert detector.units_seen == hi
    return detector


@st.composite
def text_and_cuts(draw: st.DrawFn, texts: st.SearchStrategy[str]) -> tuple[str, list[int]]:
    text = draw(texts)
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=12))
    return text, cuts


@FAST
@given(
    case=text_and_cuts(st.one_of(SMALL_FRAGMENTS, looped_texts("ab \n"), looped_texts("xyz.\n\n")))
)
def test_any_chunking_gives_scan_findings(case: tuple[str, list[int]]) -> None:
    text, cuts = case
    detector = feed_in_pieces(text, cuts, SMALL)
    expected = oracle_stream(SMALL, text)
    assert [plain(f) for f in detector.findings] == expected, f"text={text!r} cuts={sorted(cuts)}"
    assert [first_held(f) for f in detector.findings] == [first_held(f) for f in scan(text, SMALL)]
    assert detector.finding == (detector.findings[0] if expected else None)
    for f in expected:
        event(f"chunked: {f.rule}")


@FAST
@given(
    rules=st.sampled_from([SMALL, DEFAULT]),
    case=st.one_of(text_and_cuts(TEMPLATE_TEXTS), text_and_cuts(COUNT_TEXTS)),
)
def test_any_chunking_of_template_and_count_texts_gives_the_oracles_findings(
    rules: Rules, case: tuple[str, list[int]]
) -> None:
    text, cuts = case
    detector = feed_in_pieces(text, cuts, rules)
    expected = oracle_stream(rules, text)
    assert [plain(f) for f in detector.findings] == expected, f"text={text!r} cuts={sorted(cuts)}"
    assert [first_held(f) for f in detector.findings] == [first_held(f) for f in scan(text, rules)]
    for f in expected:
        event(f"chunked: {f.rule}")


@SLOW
@given(case=text_and_cuts(DEFAULT_FRAGMENTS))
def test_any_chunking_gives_scan_findings_default_rules(case: tuple[str, list[int]]) -> None:
    text, cuts = case
    detector = feed_in_pieces(text, cuts, DEFAULT)
    found = [first_held(f) for f in detector.findings]
    assert found == [first_held(f) for f in scan(text, DEFAULT)], (
        f"text={text!r} cuts={sorted(cuts)}"
    )
    assert all(f.end == f.detected_at for f in detector.findings)


@SLOW
@given(text=st.one_of(SMALL_FRAGMENTS, looped_texts("a-\n ")), size=st.integers(1, 7))
def test_fixed_size_deltas_and_reset(text: str, size: int) -> None:
    """One unit at a time and small fixed deltas; after ``reset`` the detector starts afresh."""
    cuts = list(range(size, len(text), size))
    detector = feed_in_pieces(text, cuts, SMALL)
    expected = detector.findings
    assert [first_held(f) for f in expected] == [first_held(f) for f in scan(text, SMALL)]
    detector.reset()
    assert detector.findings == [] and detector.finding is None and detector.units_seen == 0
    for ch in text:
        detector.feed(ch)
    assert detector.findings == expected


# --- (c) trim ----------------------------------------------------------------------------------


def candidate_of(finding: OracleFinding, candidates: list[Candidate]) -> Candidate:
    for c in candidates:
        if first_held(c.finding) == first_held(finding):
            return c
    raise AssertionError(f"no oracle candidate for {finding!r}")


def check_trim(text: str, keep: int, rules: Rules) -> None:
    trimmed = trim(text, keep, rules)
    findings = scan(text, rules)
    removals = trimmed.removals
    if not findings:
        assert trimmed.text == text and removals == []
        return
    candidates = oracle_candidates(rules, text)
    last_end = 0
    for r in removals:
        assert last_end <= r.start < r.end <= len(text), removals
        assert r.units == r.end - r.start
        assert r.repeats >= 1
        assert r.finding in findings
        f = plain(r.finding)
        candidate = candidate_of(f, candidates)
        if f.rule == "template_lines":
            # The first ``keep`` lines of the streak are kept (with the lines it passed over
            # between them); the removal counts the streak's lines after them.
            (streak,) = [s for s in template_streaks(rules, text) if s.lines[0].start == f.start]
            copies = len(streak.lines) + streak.tail
            assert keep < copies, (r, copies)
            assert r.start == streak.lines[keep - 1].end, (r, streak)
            assert r.repeats == copies - keep, (r, copies)
        elif f.rule == "counter_run":
            # The first ``keep`` numbers are kept, each with the separator after it; the removal
            # starts at the next number and counts the numbers after them.
            assert len(re.findall(r"[0-9]+", text[f.start : r.start])) == keep, r
            assert text[r.start].isdigit() and r.repeats == candidate.copies - keep, r
        elif loopbreak.RULE_INFO[f.rule].copy == "line":
            # The first ``keep`` copies are kept: lines, or cycles of lines of a counter streak.
            kept = text[f.start : r.start]
            assert kept.endswith("\n")
            lines = [rstrip_whitespace(line) for line in kept[:-1].split("\n")]
            nonblank = [line for line in lines if line]
            if f.rule == "identical_lines":
                assert nonblank == [f.block] * keep, kept
            else:
                assert len(nonblank) == keep * (f.block.count("\n") + 1), kept
        else:
            assert r.start == f.start + keep * f.period
            assert text[f.start : r.start] == f.block * keep
        # The removal reaches the end of the repetition: the maximal periodic run, or the last
        # line of the streak, plus (at the very end of the text) blank lines and an unterminated
        # last line that is a cut-short copy (identical lines) or one more line (counter and
        # template lines, which the region takes whole).
        region_end = candidate.region_end
        if f.rule == "identical_lines" and r.end != region_end:
            *blanks, last = text[region_end : r.end].split("\n")
            assert r.end == len(text) and all(not rstrip_whitespace(b) for b in blanks), r
            assert f.block.startswith(last) or rstrip_whitespace(last) == f.block, (r, last)
        elif f.rule in ("counter_lines", "template_lines"):
            assert r.end == candidate.whole_end, (r, candidate.whole_end)
        else:
            assert r.end == region_end, (r, region_end)
        last_end = r.end
    # The output is the text with each removed span replaced by a marker naming it.
    pieces = [0, *[x for r in removals for x in (r.start, r.end)], len(text)]
    kept_spans = [text[a:b] for a, b in zip(pieces[::2], pieces[1::2])]
    # Each marker holds "[loopbreak: removed ...]" (two removals can touch: the kept span
    # between their markers is then empty, so the marker pattern decides where one ends).
    pattern = r"(.*?\[loopbreak: removed .*?\].*?)".join(re.escape(s) for s in kept_spans)
    m = re.fullmatch(pattern, trimmed.text, flags=re.DOTALL)
    assert m is not None, f"trimmed text is not the kept spans plus markers: {trimmed.text!r}"
    for marker, r in zip(m.groups(), removals):
        # The marker names the units removed, the repeat count and the rule.
        assert f"removed {r.units} units" in marker and f"({r.finding.rule})" in marker, marker
        assert f" {r.repeats} more " in marker, marker
    if removals:
        assert trimmed.text.startswith(text[: removals[0].start])
        assert trimmed.text.endswith(text[removals[-1].end :])
        assert len(trimmed.text) < len(text) + 200 * len(removals)


@FAST
@given(
    text=st.one_of(SMALL_FRAGMENTS, looped_texts("ab \n"), looped_texts("xyz.\n\n")),
    keep=st.integers(1, 5),
)
def test_trim_keeps_everything_outside_the_removals(text: str, keep: int) -> None:
    check_trim(text, keep, SMALL)


@FAST
@given(rules=st.sampled_from([SMALL, DEFAULT]), text=TEMPLATE_TEXTS, keep=st.integers(1, 6))
def test_trim_template_texts(rules: Rules, text: str, keep: int) -> None:
    check_trim(text, keep, rules)


@FAST
@given(rules=st.sampled_from([SMALL, DEFAULT]), text=COUNT_TEXTS, keep=st.integers(1, 6))
def test_trim_count_texts(rules: Rules, text: str, keep: int) -> None:
    check_trim(text, keep, rules)


@SLOW
@given(text=DEFAULT_FRAGMENTS, keep=st.integers(1, 4))
def test_trim_default_rules(text: str, keep: int) -> None:
    check_trim(text, keep, DEFAULT)


ANY_CHAR = st.characters(exclude_categories=())  # lone surrogates included


@FAST
@given(text=st.one_of(st.text(ANY_CHAR, max_size=300), looped_texts("a\ud800 \n\udfff-")))
def test_trim_returns_clean_text_unchanged(text: str) -> None:
    """Arbitrary text (lone surrogates included) with no finding comes back exactly."""
    if scan(text, SMALL):
        event("not clean")
        check_trim(text, 3, SMALL)
        return
    trimmed = trim(text, 3, SMALL)
    assert trimmed.text == text
    assert trimmed.removals == []


# --- (d) offsets slice the Python string -------------------------------------------------------


def check_offsets(text: str, rules: Rules) -> list[loopbreak.Finding]:
    findings = scan(text, rules)
    for f in findings:
        assert 0 <= f.start < f.detected_at <= f.end <= len(text)
        assert text[f.start : f.start + f.period] == f.block, f
        assert len(f.block) == f.period
        evidence = text[f.start : f.detected_at]
        if f.rule == "identical_lines":
            lines = evidence.split("\n")
            assert lines[-1] == "", "evidence ends with the newline of the last counted line"
            nonblank = [rstrip_whitespace(line) for line in lines[:-1] if rstrip_whitespace(line)]
            assert set(nonblank) == {f.block} and len(nonblank) <= f.repeats
        else:
            # The whole region repeats the block: every full copy is counted.
            region = text[f.start : f.end]
            assert region == (f.block * (len(region) // f.period + 1))[: len(region)]
            assert f.repeats == len(region) // f.period
    return findings


@FAST
@given(text=UNICODE_TEXTS)
def test_offsets_slice_unicode_text(text: str) -> None:
    findings = check_offsets(text, SMALL)
    for f in findings:
        event(f"unicode: {f.rule}")
    assert [plain(f) for f in findings] == oracle_scan(SMALL, text), f"text={text!r}"


UNICODE_LOOPS = [
    ("Привет, как дела? ", 60),
    ("人民法院 ", 200),
    ("👍🏽 ", 400),
    ("👨\u200d👩\u200d👧\u200d👦", 300),
    ("e\u0301a\u0300 ", 300),
    ("🇫🇷 café naïve ", 80),
    # A line of code (two letters of four visible units): 150 copies, above code_min_repeats.
    ("ok 👍🏿\n", 150),
]


@pytest.mark.parametrize(("block", "copies"), UNICODE_LOOPS)
@pytest.mark.parametrize("prefix", ["", "Ответ: ", "答案：👍 e\u0301 ", "x\n\n"])
def test_offsets_slice_unicode_loops_default_rules(prefix: str, block: str, copies: int) -> None:
    text = prefix + block * copies + " 完。"
    findings = check_offsets(text, DEFAULT)
    assert findings, f"no finding in {text[:80]!r}..."
    first = findings[0]
    # The repetition starts at the first copy, or (for lines, when the prefix has no newline) at
    # the second, since the first copy ends the prefix's line.
    assert first.start <= len(prefix) + (len(block) if first.rule == "identical_lines" else 0)
    assert text[first.start : first.start + first.period] in (block + block)
    detector = Detector()
    for i in range(0, len(text), 3):
        detector.feed(text[i : i + 3])
    assert [first_held(f) for f in detector.findings] == [first_held(f) for f in findings]


@pytest.mark.parametrize(
    ("text", "rules"),
    [
        # Minimised from test_scan_equals_oracle_random_rules: with a window of a few units, a
        # span beyond the window panicked (index out of bounds in rust/window.rs) ...
        ("x" * 600, Rules(max_period=1, max_long_period=1)),
        ("0, 1, 2, " * 60, Rules(max_period=10, max_long_period=10)),
        ("abcd" * 20, Rules(max_period=4, max_long_period=4, whitespace_min_span=32)),
        ("loop " * 20, Rules(max_period=5, max_long_period=5, whitespace_min_span=32)),
        (
            " " * 32 + "x" + "loop " * 30,
            Rules(max_period=5, max_long_period=16, whitespace_min_span=32),
        ),
        # ... or reported a block that is not text[start:start + period] ("aaa-----").
        (
            "aaaaa---" * 6,
            Rules(
                max_period=8,
                max_long_period=20,
                code_span=41,
                long_min_repeats=2,
                min_span=32,
                code_min_span=32,
                whitespace_min_span=32,
            ),
        ),
        # Minimised from random rules: a repeated line longer than a small window came back as
        # its last 41 units while the period said 70.
        (
            "the quick brown fox jumps over the lazy dog and keeps running far away\n" * 2,
            Rules(
                max_period=10, max_long_period=10, code_span=1, single_char_min_span=34, min_lines=2
            ),
        ),
        # Minimised from test_scan_equals_oracle_small_alphabets: a blank line inside a streak
        # of identical lines holds a whitespace run (a finding of its own); the streak goes on
        # after it, so the "\nab" run that follows is still the lines' region, not a new one.
        ("ab\n" * 3 + " " * 48 + "\nab" * 12, SMALL),
        ("ab\n" * 3 + " " * 2048 + "\nab" * 40, Rules(min_lines=3)),
    ],
)
def test_minimised_cases_match_the_oracle(text: str, rules: Rules) -> None:
    """Cases the properties found, kept so they run every time: no panic, the oracle's findings."""
    agrees_with_oracle(text, rules)
    detector = Detector(rules)
    for ch in text:
        detector.feed(ch)
    assert [plain(f) for f in detector.findings] == oracle_stream(rules, text)


def test_whitespace_classes_follow_rust() -> None:
    """U+001C..U+001F are not whitespace for the core (Python's isspace says they are), U+0085
    and U+3000 are; the oracle's whitespace set is what this file's other tests rely on."""
    assert "\x1c".isspace() and not is_whitespace("\x1c")
    assert is_whitespace("\x85") and is_whitespace("\u3000") and not is_whitespace("\u200b")
    # "x\x1c" repeated is a block of two visible chars (code), not "x" plus whitespace.
    text = "x\x1c" * 40
    assert core(text, SMALL) == oracle_scan(SMALL, text)
    # Code: max(8 * 2, 32) = 32 units, 16 repeats (as one char plus whitespace it would need 40).
    assert core(text, SMALL)[0].detected_at == 32
    text = "x\u3000" * 40
    assert core(text, SMALL) == oracle_scan(SMALL, text)
    assert core(text, SMALL)[0].detected_at == SMALL.single_char_min_span
