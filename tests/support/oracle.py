"""A slow, obviously correct pure-Python oracle of loopbreak's rules.

It is written from the rule spec (the docstrings of ``loopbreak.Rules`` and ``rust/rules.rs``),
not from the Rust detector, so that the property tests can catch bugs in the detector. It favours
plain loops over speed: every maximal run of every period is enumerated, every line streak is
built in full, and only then are the candidates filtered by the claim rule.

Units are Python ``str`` code points (``u[0..n)``), exactly what the core reports offsets in.

Character classes follow Rust's ``char`` predicates:

- whitespace is Rust's ``char::is_whitespace`` (the Unicode ``White_Space`` property), listed
  below by hand, because Python's ``str.isspace`` also accepts U+001C..U+001F;
- letters are Rust's ``char::is_alphabetic`` (the Unicode ``Alphabetic`` property). Python has no
  predicate for it: ``str.isalpha`` is the ``L*`` categories, while ``Alphabetic`` adds ``Nl``
  (which we add here from ``unicodedata``) and ``Other_Alphabetic`` (many combining vowel signs
  such as U+0345 or Devanagari U+093E, and circled letters such as U+24B6), which we do not model.
  Tests therefore draw letters only from sets where the two agree: ASCII letters, Latin-1 letters
  such as ``é``, Cyrillic, CJK ideographs, and combining marks from U+0300..U+0344 (not
  alphabetic in either). Python's ``unicodedata`` version may also lag Rust's for recently
  assigned code points, another reason to keep test alphabets to long-assigned characters;
- a lone surrogate (U+D800..U+DFFF) is not a Rust ``char``: the core treats it as a visible,
  non-letter unit, and so does this oracle.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import loopbreak

if TYPE_CHECKING:
    from loopbreak._core import RuleName

# Rust's char::is_whitespace: the Unicode White_Space property, in full.
WHITESPACE: frozenset[str] = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)

BlockClass = Literal["whitespace", "single_char", "text", "code", "table", "payload"]

# Letters that are hex digits, or the x of a hex prefix; and the marks of a hex block.
HEX_LETTERS = frozenset("abcdefABCDEFxX")
HEX_MARKS = frozenset("0123456789xX")
# A table row has fewer than one distinct unit per VARIETY units and at most TABLE_ALPHABET of
# them, or is a block of TABLE_LINES lines or more of code with no letters of words (numbers);
# PACKED_CONTEXT units of packed data before a run of packed data make it a payload.
VARIETY = 6
TABLE_ALPHABET = 11
TABLE_LINES = 2
PACKED_CONTEXT = 64
PACKED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/,;")


def is_surrogate(ch: str) -> bool:
    return 0xD800 <= ord(ch) <= 0xDFFF


def is_whitespace(ch: str) -> bool:
    return ch in WHITESPACE


def is_letter(ch: str) -> bool:
    """Rust's ``char::is_alphabetic`` for the characters the tests use (see the module doc)."""
    if is_surrogate(ch):
        return False
    return ch.isalpha() or unicodedata.category(ch) == "Nl"


def is_lowercase(ch: str) -> bool:
    return not is_surrogate(ch) and ch.islower() and is_letter(ch)


def class_of(block: str) -> BlockClass:
    """``BlockClass::of`` in rust/classes.rs (a line's class). A block of words is mostly letters (3 of 4
    visible units) and not mostly indentation (at most one whitespace unit per two visible ones);
    a block with at least as much whitespace as visible units is a table row. Letters do not count in
    a hex block (every letter in ``HEX_LETTERS``, with a unit of ``HEX_MARKS``) nor in a block of
    one or two capitals with no whitespace."""
    visible = [ch for ch in block if not is_whitespace(ch)]
    whitespace = len(block) - len(visible)
    if not visible:
        return "whitespace"
    if all(ch == visible[0] for ch in visible):
        return "single_char"
    if whitespace >= len(visible):
        return "table"
    if 4 * word_letters(block) >= 3 * len(visible) and 2 * whitespace <= len(visible):
        return "text"
    return "code"


def word_letters(block: str) -> int:
    """The letters of ``block`` that read as words: none in a hex block (every letter in
    ``HEX_LETTERS``, with a unit of ``HEX_MARKS``), in a block of one or two capitals with no
    whitespace, or in a block of ASCII letters and digits alone that mixes case or letters with
    digits (an identifier, base64)."""
    visible = [ch for ch in block if not is_whitespace(ch)]
    whitespace = len(block) - len(visible)
    letters = [ch for ch in visible if is_letter(ch)]
    hex_block = all(ch in HEX_LETTERS for ch in letters) and any(ch in HEX_MARKS for ch in visible)
    capitals = len(visible) <= 2 and whitespace == 0 and not any(is_lowercase(ch) for ch in visible)
    ascii_letters = [ch for ch in visible if ch.isascii() and ch.isalpha()]
    ascii_digits = [ch for ch in visible if ch in "0123456789"]
    mixed = (
        any(ch.isupper() for ch in ascii_letters) and any(ch.islower() for ch in ascii_letters)
    ) or (bool(ascii_digits) and bool(letters))
    encoded = whitespace == 0 and len(ascii_letters) + len(ascii_digits) == len(visible) and mixed
    return 0 if hex_block or capitals or encoded else len(letters)


CODE_MARKS = frozenset("_()[]{}<>=;\"'`")


def line_class_of(content: str) -> BlockClass:
    """``BlockClass::of_line``: a line with at least as much whitespace, its newline counted, as
    visible units, or of ASCII with few distinct units (at most ``TABLE_ALPHABET`` visible ones and
    its whitespace as one, fewer than one per ``VARIETY`` units), is a table row; a line of words
    with no whitespace inside, nothing beyond ASCII and a mark of code (an identifier or a
    statement) counts as code."""
    block_class = class_of(content)
    visible_at = next((i for i, ch in enumerate(content) if not is_whitespace(ch)), len(content))
    inner = any(is_whitespace(ch) for ch in content[visible_at:])
    distinct = len({ch for ch in content if not is_whitespace(ch)}) + inner
    few_distinct = (
        all(ch.isascii() for ch in content if not is_whitespace(ch))
        and distinct <= TABLE_ALPHABET
        and distinct * VARIETY < len(content)
    )
    whitespace = sum(is_whitespace(ch) for ch in content)
    indented_item = whitespace + 1 >= len(content) - whitespace
    if block_class in ("text", "code") and (few_distinct or indented_item):
        return "table"
    if (
        block_class == "text"
        and not inner
        and content.isascii()
        and any(ch in CODE_MARKS for ch in content)
    ):
        return "code"
    return block_class


def run_class_of(block: str, before: str) -> BlockClass:
    """``BlockClass::of_run``: the class of a run of ``block`` after ``before`` (up to
    ``PACKED_CONTEXT`` units); "payload" if the run is part of a packed payload."""
    if len(before) >= PACKED_CONTEXT and all(
        ch in PACKED for ch in before[-PACKED_CONTEXT:] + block
    ):
        return "payload"
    block_class = class_of(block)
    distinct = len(set(block))
    if (
        block_class in ("text", "code")
        and len(block) > VARIETY
        and distinct <= TABLE_ALPHABET
        and distinct * VARIETY < len(block)
    ):
        return "table"
    if block_class == "code" and word_letters(block) == 0 and block.count("\n") >= TABLE_LINES:
        return "table"
    if block_class == "text" and before[-1:] in ("[", "("):
        return "code"
    return block_class


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def required_copies(rules: loopbreak.Rules, period: int, block_class: BlockClass) -> int:
    # Blocks of one visible char or of whitespace need the copies of code too.
    if block_class == "text":
        most, span = rules.min_repeats, rules.text_span
    elif block_class == "table":
        most, span = rules.code_min_repeats, rules.table_span
    else:
        most, span = rules.code_min_repeats, rules.code_span
    return min(max(ceil_div(span, period), rules.long_min_repeats), most)


def required_span(rules: loopbreak.Rules, period: int, block_class: BlockClass) -> int:
    if block_class == "whitespace":
        floor = rules.whitespace_min_span
    elif block_class == "single_char":
        floor = rules.single_char_min_span
    elif block_class == "code":
        floor = rules.code_min_span
    elif block_class == "table":
        floor = rules.whitespace_min_span
    elif block_class == "payload":
        floor = rules.payload_span
    else:
        floor = rules.min_span
    return max(required_copies(rules, period, block_class) * period, floor)


def run_span(rules: loopbreak.Rules, block: str, block_class: BlockClass) -> int:
    """``Rules::run_span``: a block of one line that is not words needs at least
    ``min_repeats`` copies, however long the line."""
    span = required_span(rules, len(block), block_class)
    if block_class != "text" and block.count("\n") == 1:
        return max(span, rules.min_repeats * len(block))
    return span


def required_lines(rules: loopbreak.Rules, block_class: BlockClass, length: int) -> int:
    """A line of words needs ``min_lines``; any other ``code_min_lines``, and a short one enough
    lines to cover ``code_span`` units (``table_span`` for a table row) with their newlines."""
    if block_class == "text":
        return rules.min_lines
    span = rules.table_span if block_class == "table" else rules.code_span
    return max(rules.code_min_lines, ceil_div(span, length + 1))


def is_primitive(block: str) -> bool:
    """False if ``block`` is some shorter string repeated two or more times."""
    p = len(block)
    return all(not (p % d == 0 and block[:d] * (p // d) == block) for d in range(1, p))


def rstrip_whitespace(line: str) -> str:
    end = len(line)
    while end > 0 and is_whitespace(line[end - 1]):
        end -= 1
    return line[:end]


@dataclass(frozen=True)
class OracleFinding:
    """The fields of a ``loopbreak.Finding``, as plain values."""

    rule: RuleName
    period: int
    block: str
    start: int
    repeats: int
    detected_at: int
    end: int


class FindingLike(Protocol):
    @property
    def rule(self) -> RuleName: ...
    @property
    def period(self) -> int: ...
    @property
    def block(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def repeats(self) -> int: ...
    @property
    def detected_at(self) -> int: ...
    @property
    def end(self) -> int: ...


def plain(finding: FindingLike) -> OracleFinding:
    """A ``loopbreak.Finding`` (or an ``OracleFinding``) as an ``OracleFinding``."""
    return OracleFinding(
        rule=finding.rule,
        period=finding.period,
        block=finding.block,
        start=finding.start,
        repeats=finding.repeats,
        detected_at=finding.detected_at,
        end=finding.end,
    )


def first_held(finding: FindingLike) -> tuple[str, int, str, int, int]:
    """What a finding says about where its rule first held, the same streaming and offline:
    ``(rule, period, block, start, detected_at)``."""
    return (finding.rule, finding.period, finding.block, finding.start, finding.detected_at)


@dataclass(frozen=True)
class Candidate:
    # The finding as its rule first held (end == detected_at), and the region whole.
    finding: OracleFinding
    anchor: int
    whole_end: int
    copies: int
    # periodic: the end of the maximal run; lines: the ends of the streak's lines from the
    # need-th on (each the offset just after its '\n').
    region_end: int
    # Where the claim grows, for a region claimed copy by copy (the ends of a streak's lines,
    # of a count's numbers, from the need-th on); empty for a periodic run, claimed unit by unit.
    claim_steps: tuple[int, ...]

    def sort_key(self) -> tuple[int, int, int, int]:
        f = self.finding
        return (f.detected_at, f.start, loopbreak.RULE_NAMES.index(f.rule), f.period)

    def claim(self, t: int) -> int:
        """How far this region reaches once ``t`` units have been seen."""
        if self.claim_steps:
            return max((end for end in self.claim_steps if end <= t), default=0)
        return min(self.region_end, t)


def periodic_candidates(rules: loopbreak.Rules, u: str) -> list[Candidate]:
    out: list[Candidate] = []
    n = len(u)
    # A candidate spans at least long_min_repeats * p <= n units, so longer periods cannot fire
    # (this bound only saves time: the loop below would find no candidate for them).
    for p in range(1, min(rules.max_long_period, n // rules.long_min_repeats) + 1):
        # Positions j >= p where the p-periodicity breaks, with sentinels at both ends; every
        # gap between two consecutive breaks is a maximal p-run [a, b).
        breaks = [p - 1, *[j for j in range(p, n) if u[j] != u[j - p]], n]
        for prev, nxt in zip(breaks, breaks[1:]):
            a, b = prev + 1, nxt
            if a >= b:
                continue
            s = a - p
            if b - s < rules.long_min_repeats * p:
                continue  # need >= long_min_repeats * p: checked first because it is cheap
            block = u[s:a]
            if not is_primitive(block):
                continue
            block_class = run_class_of(block, u[max(0, s - PACKED_CONTEXT) : s])
            need = run_span(rules, block, block_class)
            if b - s >= need:
                rule: RuleName = "periodic_run" if p <= rules.max_period else "long_block"
                finding = OracleFinding(rule, p, block, s, need // p, s + need, s + need)
                out.append(Candidate(finding, a, b, (b - s) // p, region_end=b, claim_steps=()))
    return out


def lines_candidates(rules: loopbreak.Rules, u: str) -> list[Candidate]:
    # Terminated lines only: (start offset, content, end offset just after its '\n').
    lines: list[tuple[int, str, int]] = []
    start = 0
    for i, ch in enumerate(u):
        if ch == "\n":
            lines.append((start, rstrip_whitespace(u[start:i]), i + 1))
            start = i + 1
    nonblank = [line for line in lines if line[1] != ""]
    out: list[Candidate] = []
    i = 0
    while i < len(nonblank):
        k = i
        while k + 1 < len(nonblank) and nonblank[k + 1][1] == nonblank[i][1]:
            k += 1
        streak = nonblank[i : k + 1]
        content = streak[0][1]
        need = required_lines(rules, line_class_of(content), len(content))
        if len(streak) >= need:
            first = streak[0][0]
            ends = tuple(line[2] for line in streak[need - 1 :])
            finding = OracleFinding(
                "identical_lines", len(content), content, first, need, ends[0], ends[0]
            )
            # Offline, a last line the text ends in (no newline) is one more copy if it equals
            # the line, part of one if it starts it.
            whole_end, copies = ends[-1], len(streak)
            tail = u[start:]
            if (
                k == len(nonblank) - 1
                and rstrip_whitespace(tail)
                and (rstrip_whitespace(tail) == content or content.startswith(tail))
            ):
                whole_end, copies = len(u), copies + (rstrip_whitespace(tail) == content)
            out.append(
                Candidate(finding, first, whole_end, copies, region_end=ends[-1], claim_steps=ends)
            )
        i = k + 1
    return out


DIGITS = "0123456789"


def template(line: str) -> tuple[str, list[str], list[str]]:
    """``line`` with every maximal run of ASCII digits masked (as ``0``), the runs, and the
    unit before each run ("" at the line's start)."""
    masked, numbers, before = "", [], []
    i = 0
    while i < len(line):
        if line[i] in DIGITS:
            j = i
            while j < len(line) and line[j] in DIGITS:
                j += 1
            masked += "0"
            numbers.append(line[i:j])
            before.append(line[i - 1] if i > 0 else "")
            i = j
        else:
            masked += "\x00" if line[i] == "0" else line[i]
            i += 1
    return masked, numbers, before


# A line at most this many units longer than the one before can count on from it.
MAX_GAIN = 2


def plus(digits: str, step: int) -> str:
    """A digit string plus ``step``, keeping its width unless its first digit carries
    (``099`` + 1 -> ``100``, ``98`` + 3 -> ``101``)."""
    return str(int(digits) + step).zfill(len(digits))


def part_of_a_name(line: str, at: int) -> bool:
    """Whether the number at ``at`` is a name's tail or an index: after ``_`` or ``[``, or after
    letters that are no word: fewer than three, following a digit or ``_``, or with a capital
    after the first (``x1``, ``0xff1``, ``shHereDoc01``); after a word (``backup7``) it is not."""
    if at == 0:
        return False
    if line[at - 1] in "_[":
        return True
    word = at
    while word > 0 and is_letter(line[word - 1]):
        word -= 1
    letters = at - word
    glued = word > 0 and line[word - 1] in DIGITS + "_"
    camel = any(ch.isupper() for ch in line[word + 1 : at])
    return letters > 0 and (letters < 3 or glued or camel)


def counts_on(prev: str, line: str, cycle_lines: int = 1) -> bool:
    """Whether ``line`` steps on from ``prev``, the line ``cycle_lines`` non-blank lines before it:
    at most ``MAX_GAIN`` units longer and no shorter, the same template, every number's digits
    unchanged, plus one or plus ``cycle_lines``, at least one up (in a cycle, ``cycle_lines`` above 1,
    exactly one), none that goes up as part of a name
    (an identifier's tail or an index), and in a template without a letter every number up but
    the fraction of a decimal."""
    if not 0 <= len(line) - len(prev) <= MAX_GAIN:
        return False
    (t1, n1, _), (t2, n2, _) = template(prev), template(line)
    if t1 != t2:
        return False
    steps = [
        0 if b == a else 1 if b in (plus(a, 1), plus(a, cycle_lines)) else None
        for a, b in zip(n1, n2)
    ]
    if None in steps or 1 not in steps or (cycle_lines > 1 and steps.count(1) > 1):
        return False
    starts = [m.start() for m in re.finditer("[0-9]+", prev)]
    if any(part_of_a_name(prev, at) for at, step in zip(starts, steps) if step == 1):
        return False
    fraction = [at >= 2 and prev[at - 1] == "." and prev[at - 2] in DIGITS for at in starts]
    has_letter = any(is_letter(ch) for ch in prev if ch not in DIGITS)
    return has_letter or all(step == 1 or f for step, f in zip(steps, fraction))


# A chat-template marker (``<|im_end|>``): text a model writes between turns, not code.
CHAT_MARKER = re.compile(r"<\|[A-Za-z0-9_]+\|>")


# Marks of code in a counter template: quotes, backticks, `_` and `*` sit in prose as well.
TEMPLATE_CODE_MARKS = frozenset("()[]{}<>=;+")


def counter_width(before: str, after: str) -> int:
    """The digits of the widest number of ``before`` that differs in ``after`` (the same
    template)."""
    _, n1, _ = template(before)
    _, n2, _ = template(after)
    return max((len(a) for a, b in zip(n1, n2) if a != b), default=0)


def template_line_class(line: str) -> str:
    """What a line of a counter template is made of: ``marker`` (chat-template markers alone),
    ``data`` (fewer than one visible unit in four a letter, a digit run counting as one; a table
    row, starting with ``|``; one name of ASCII letters and digits alone), ``code`` (one of
    ``()[]{}<>=;+``) or ``words``."""
    content = line.lstrip("".join(WHITESPACE))
    masked, _, _ = template(content)
    visible = [ch for ch in CHAT_MARKER.sub("", masked) if ch not in WHITESPACE]
    name = CHAT_MARKER.search(content) is None and content.isascii() and content.isalnum()
    letters = sum(is_letter(ch) for ch in visible)
    if not visible:
        return "marker"
    if content.startswith("|") or name or 4 * letters < len(visible):
        return "data"
    return "code" if any(ch in TEMPLATE_CODE_MARKS for ch in visible) else "words"


def required_counter_lines(rules: loopbreak.Rules, cycle: str, stepped: str) -> int:
    """Counter lines a streak needs whose first cycle is ``cycle`` (its lines joined by
    newlines, as a finding's block) and whose next line, stepping on from the first, is
    ``stepped``. A line's template leaves out the indentation and counts each digit run as one
    unit; a cycle's is its lines' together. Data (``data_counter_min_lines``) if a line is data
    (``template_line_class``) or the widest number that steps has four digits or more; else
    code and markup (the ``code_counter_`` values) if a line is code; else words
    (``counter_min_lines``, ``counter_span``). Any cycle needs a line more than its lines."""
    lines = cycle.split("\n")
    length = 0
    for line in lines:
        indent = len(line) - len(line.lstrip("".join(WHITESPACE)))
        length += len(template(line[indent:])[0])
    classes = {template_line_class(line) for line in lines}
    if "data" in classes or counter_width(lines[0], stepped) >= 4:
        least, span = rules.data_counter_min_lines, 0
    elif "code" in classes:
        least, span = rules.code_counter_min_lines, rules.code_counter_span
    else:
        least, span = rules.counter_min_lines, rules.counter_span
    cycle_lines = len(lines)
    return max(least, ceil_div(span * cycle_lines, length + cycle_lines), cycle_lines + 1)


def required_counter_lines_at(rules: loopbreak.Rules, text: str, start: int, block: str) -> int:
    """``required_counter_lines`` of the streak of first cycle ``block`` that starts at
    ``start`` of ``text`` (its line after the first cycle read from the text)."""
    lines = [line for line in text[start:].split("\n") if rstrip_whitespace(line)]
    cycle_lines = block.count("\n") + 1
    return required_counter_lines(rules, block, rstrip_whitespace(lines[cycle_lines]))


def counter_candidates(rules: loopbreak.Rules, u: str) -> list[Candidate]:
    """Streaks of counter lines, read line by line: non-blank lines (blank ones skipped) of at
    most ``max_long_period`` units (newline excluded). With no streak running, a line that does
    not repeat the line before it and steps on from the line 1 or 2 before it (the first that
    does, all of them fitting) starts a
    streak of cycles of that many lines from that line. A running streak goes on with each line
    that steps on from the line a cycle before it, or equals it while fewer than a cycle of lines
    in a row do; any other line ends it and starts none."""
    lines: list[tuple[int, str, int, bool]] = []
    start = 0
    for i, ch in enumerate(u):
        if ch == "\n":
            content = rstrip_whitespace(u[start:i])
            if content:
                lines.append((start, content, i + 1, i - start <= rules.max_long_period))
            start = i + 1
    tail = rstrip_whitespace(u[start:])
    tail_fits = len(u) - start <= rules.max_long_period

    def continues(before: str, line: str, cycle_lines: int, flat: int) -> int | None:
        """The count of equal lines in a row after ``line``, if it continues the streak."""
        if cycle_lines > 1 and before == line:
            return flat + 1 if flat + 1 < cycle_lines else None
        return 0 if counts_on(before, line, cycle_lines) else None

    out: list[Candidate] = []
    first, cycle_lines, flat = -1, 0, 0
    for k in range(len(lines) + 1):
        if cycle_lines:
            after = (
                continues(lines[k - cycle_lines][1], lines[k][1], cycle_lines, flat)
                if k < len(lines) and lines[k][3]
                else None
            )
            if after is not None:
                flat = after
                continue
            # Offline, a last line the text ends in (no newline) is one more if it continues.
            more = (
                k == len(lines)
                and bool(tail)
                and tail_fits
                and continues(lines[k - cycle_lines][1], tail, cycle_lines, flat) is not None
            )
            out.extend(counter_candidate(rules, u, lines[first:k], cycle_lines, more))
            cycle_lines = 0
            continue
        # A line that repeats the one before starts none (that is identical_lines).
        if k == len(lines) or not lines[k][3] or (k > 0 and lines[k - 1][1] == lines[k][1]):
            continue
        for p in range(1, min(3, k) + 1):
            if all(line[3] for line in lines[k - p : k]) and counts_on(
                lines[k - p][1], lines[k][1], p
            ):
                first, cycle_lines, flat = k - p, p, 0
                break
    return out


def counter_candidate(
    rules: loopbreak.Rules,
    u: str,
    streak: list[tuple[int, str, int, bool]],
    cycle_lines: int,
    more: bool,
) -> list[Candidate]:
    """The candidate of a streak of cycles of ``cycle_lines`` lines over ``streak`` if it reached
    the lines it needs (``more``: the text ends in one more line that continues it)."""
    block = "\n".join(line[1] for line in streak[:cycle_lines])
    need = required_counter_lines(rules, block, streak[cycle_lines][1])
    if len(streak) < need:
        return []
    first = streak[0][0]
    ends = tuple(line[2] for line in streak[need - 1 :])
    finding = OracleFinding("counter_lines", len(block), block, first, need, ends[0], ends[0])
    whole_end, copies = (len(u), len(streak) + 1) if more else (ends[-1], len(streak))
    return [Candidate(finding, first, whole_end, copies, region_end=ends[-1], claim_steps=ends)]


# --- template_lines ---------------------------------------------------------------------------

# A line of fewer units (its content, leading whitespace counted) is passed over entirely.
TEMPLATE_MIN_UNITS = 6
# The remembered lines (lines with a digit) before a line that it may recur from.
TEMPLATE_LOOKBACK = 16
# The most digits of a number: a longer run (a year, an id) stays in the template as it is.
TEMPLATE_MAX_DIGITS = 3
# The units before a stretch that a near-copy is read against (``near_copy``).
NEAR_MEMORY = 1024
# The longest stretch a near-copy closes (units from the end of the latest remembered line's
# content to the near-copy's newline).
NEAR_STRETCH = 256
# What a token is stripped of at both ends before it is compared: stops, brackets, quotes,
# emphasis.
TOKEN_EDGES = frozenset(".,;:!?()[]{}\"'*_`<>")
# CJK: kana, ideographs (extension A and the unified block), hangul syllables.
WIDE_RANGES = ((0x3040, 0x30FF), (0x3400, 0x9FFF), (0xAC00, 0xD7AF))
# Tokens that mark a list item, a quote, a heading or a table cell: neither word nor other.
MARKS = frozenset({"-", "*", "+", "|", ">", "#", "##", "###", "\u2014", "\u2013"})
# A number as a token: a count, a date, a time, a price, a percentage, a range, in brackets.
NUMBER_TOKEN = re.compile(r"[(\[#$]*[0-9][0-9.,:/%-]*[)\].,;:!?]*")
# What may open or close a word without being part of it: brackets, quotes, emphasis, stops.
WORD_OPENERS = frozenset("([\"'*_`")
WORD_CLOSERS = frozenset(")]\"'*_`.,;:!?")
# What may join two runs of letters inside a word: an apostrophe (straight or curly), a hyphen.
WORD_JOINERS = frozenset("'\u2019-")


def template_numbers(content: str) -> list[tuple[int, int]]:
    """The ``[i, j)`` spans of the numbers of a line's content: maximal runs of one to
    ``TEMPLATE_MAX_DIGITS`` ASCII digits with no letter right before or after them in the line,
    and no decimal point right before them after a digit (``on 21 March`` holds one, ``0.24``
    one, its ``0``; ``x1``, ``3rd``, ``shHereDoc09`` and ``1958`` none)."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(content):
        if content[i] not in DIGITS:
            i += 1
            continue
        j = i
        while j < len(content) and content[j] in DIGITS:
            j += 1
        before_letter = i > 0 and is_letter(content[i - 1])
        after_letter = j < len(content) and is_letter(content[j])
        fraction = i >= 2 and content[i - 1] == "." and content[i - 2] in DIGITS
        if not before_letter and not after_letter and not fraction and j - i <= TEMPLATE_MAX_DIGITS:
            spans.append((i, j))
        i = j
    return spans


def template_mask(content: str) -> tuple[str, ...]:
    """The content with each number masked: the pieces of text between its numbers, so that
    two contents share a template when these pieces are equal (``on 21 March``, ``on 3
    March``: the number's width does not matter, and the mask is no unit)."""
    pieces: list[str] = []
    at = 0
    for i, j in template_numbers(content):
        pieces.append(content[at:i])
        at = j
    pieces.append(content[at:])
    return tuple(pieces)


def is_template_word(token: str, last: bool) -> bool:
    """Whether ``token`` (the line's last token if ``last``) reads as a word: its core (the token
    without its opening brackets, quotes and emphasis and its closing ones and stops) is
    letters, with single apostrophes or hyphens between letters; it has two letters or more or
    is ``a``, ``A`` or ``I``; no ASCII lowercase letter is followed by an ASCII capital (camel
    case is a name); and it ends with ``:`` only as the line's last token (``key:`` mid-line is
    a field name)."""
    lo, hi = 0, len(token)
    while lo < hi and token[lo] in WORD_OPENERS:
        lo += 1
    while hi > lo and token[hi - 1] in WORD_CLOSERS:
        hi -= 1
    core = token[lo:hi]
    if not core or not is_letter(core[0]) or not is_letter(core[-1]):
        return False
    for k, ch in enumerate(core):
        if is_letter(ch):
            continue
        if ch not in WORD_JOINERS or not is_letter(core[k - 1]) or not is_letter(core[k + 1]):
            return False
    letters = sum(1 for ch in token if is_letter(ch))
    if letters < 2 and token not in ("a", "A", "I"):
        return False
    for a, b in zip(token, token[1:]):
        if "a" <= a <= "z" and "A" <= b <= "Z":
            return False
    return last or not token.endswith(":")


def is_template_prose(content: str) -> bool:
    """Whether a numbered line's content is prose: six units or more of CJK (``WIDE_RANGES``),
    or three words or more (``is_template_word``) and at most one other token per three words.
    Tokens are the runs of non-whitespace units; marks (``MARKS``) and number tokens
    (``NUMBER_TOKEN``) are neither words nor others."""
    wide = sum(1 for ch in content if any(lo <= ord(ch) <= hi for lo, hi in WIDE_RANGES))
    if wide >= 6:
        return True
    tokens: list[str] = []
    token = ""
    for ch in content:
        if is_whitespace(ch):
            if token:
                tokens.append(token)
            token = ""
        else:
            token += ch
    if token:
        tokens.append(token)
    words, others = 0, 0
    for k, token in enumerate(tokens):
        if is_template_word(token, last=k == len(tokens) - 1):
            words += 1
        elif token not in MARKS and NUMBER_TOKEN.fullmatch(token) is None:
            others += 1
    return words >= 3 and 3 * others <= words


@dataclass(frozen=True)
class TemplateLine:
    """A line the template rule remembers (content of ``TEMPLATE_MIN_UNITS`` units or more with an
    ASCII digit, fitting ``max_long_period``, not indented as code): its template if it is
    numbered (holds a number), else None."""

    start: int
    content: str
    end: int
    template: tuple[str, ...] | None


@dataclass(frozen=True)
class TemplateStreak:
    """A streak of the template rule: its lines (each numbered, recurring and prose), how many
    it had when the rule held (0: it never held), and whether the text's last line, which has
    no newline, would continue it (offline only)."""

    lines: tuple[TemplateLine, ...]
    held: int
    tail: bool


def tokens(text: str) -> set[tuple[str | None, ...]]:
    """The tokens of ``text``: in each line (split at ``\\n``) with its numbers masked (None
    in place of each), the runs of non-whitespace units, stripped of ``TOKEN_EDGES`` at both
    ends; case kept."""
    found: set[tuple[str | None, ...]] = set()
    for line in text.split("\n"):
        masked: list[str | None] = []
        at = 0
        for i, j in template_numbers(line):
            masked.extend(line[at:i])
            masked.append(None)
            at = j
        masked.extend(line[at:])
        token: list[str | None] = []
        for unit in [*masked, " "]:
            if unit is not None and is_whitespace(unit):
                lo, hi = 0, len(token)
                while lo < hi and token[lo] in TOKEN_EDGES:
                    lo += 1
                while hi > lo and token[hi - 1] in TOKEN_EDGES:
                    hi -= 1
                if hi > lo:
                    found.add(tuple(token[lo:hi]))
                token = []
            else:
                token.append(unit)
    return found


def near_copy(
    rules: loopbreak.Rules, u: str, lookback: list[TemplateLine], gap_start: int, x: int
) -> bool:
    """Whether a numbered line ended at ``x`` (its newline, or the text's end) that recurs to no
    line of ``lookback`` is a near-copy, prose aside: two numbered lines of the lookback share
    a template, and nothing in the stretch from ``gap_start`` (the end of the latest
    remembered line's content) to ``x`` is new: each of its tokens is one of the
    ``NEAR_MEMORY`` units' before it, where the stretch is ``NEAR_STRETCH`` units at most and
    it and these fit ``max_long_period`` units."""
    templates = [line.template for line in lookback if line.template is not None]
    if len(set(templates)) == len(templates):
        return False
    memory = max(0, gap_start - NEAR_MEMORY)
    if x - gap_start > NEAR_STRETCH or x - memory > rules.max_long_period:
        return False
    return tokens(u[gap_start:x]) <= tokens(u[memory:gap_start])


def template_verdict(
    rules: loopbreak.Rules, u: str, start: int, x: int, gap_start: int, lookback: list[TemplateLine]
) -> tuple[TemplateLine | None, int | None, bool | None]:
    """How the line of ``u`` from ``start`` to ``x`` (its newline, or the text's end) reads after
    the remembered lines ``lookback`` (the ``TEMPLATE_LOOKBACK`` before it, or fewer), the
    stretch since the latest of them starting at ``gap_start``: the line as remembered (None if
    it is not remembered); the index in ``lookback`` of the latest line of its template (None
    if there is none); and True if it continues a streak, False if it ends one, None if
    neither."""
    line = u[start:x]
    content = rstrip_whitespace(line)
    fits = len(line) <= rules.max_long_period
    # Indented as Markdown indents code (a tab first, or four spaces): code, never numbered.
    code = content.startswith(("\t", "    "))
    has_digit = any(ch in DIGITS for ch in content)
    if len(content) < TEMPLATE_MIN_UNITS or not fits or not has_digit:
        return None, None, None
    if code:
        # Code with a digit ends a streak, as a numbered line of no prose does; not remembered.
        return None, None, False
    tpl = template_mask(content) if template_numbers(content) else None
    remembered = TemplateLine(start, content, x + 1, tpl)
    if tpl is None:
        # Digits that are no number (a name, a year): code or data, which ends a streak.
        return remembered, None, False
    recurs_to = next(
        (k for k in reversed(range(len(lookback))) if lookback[k].template == tpl), None
    )
    prose = is_template_prose(content)
    if recurs_to is not None:
        item = (
            counted_item(lookback, content)
            and copy_save_count(content, lookback[recurs_to].content)
            and template_line_class(content) != "data"
        )
        return remembered, recurs_to, prose or item
    return remembered, None, prose and near_copy(rules, u, lookback, gap_start, x)


def first_number(content: str) -> tuple[int, int, int]:
    """Where a numbered line's first number (``template_numbers``) starts and ends, and its
    value."""
    i, j = template_numbers(content)[0]
    return i, j, int(content[i:j])


def counted_item(lookback: list[TemplateLine], content: str) -> bool:
    """Whether a numbered line counts on from the latest line of ``lookback``: that line is
    numbered, its first number is one less than the line's, and the text before it is the
    same."""
    if not lookback or lookback[-1].template is None:
        return False
    i, _, before = first_number(lookback[-1].content)
    k, _, value = first_number(content)
    return before + 1 == value and lookback[-1].content[:i] == content[:k]


def copy_save_count(content: str, other: str) -> bool:
    """Whether two numbered lines are the same save their first numbers."""
    i, j, _ = first_number(content)
    k, m, _ = first_number(other)
    return content[:i] == other[:k] and content[j:] == other[m:]


def template_streaks(rules: loopbreak.Rules, u: str) -> list[TemplateStreak]:
    """Every streak of the template rule in ``u``, read line by line (terminated lines only;
    the last line, with no newline, only for whether it continues the last streak).

    Templates are numbered as the rule numbers them, for the count of distinct templates: a
    line that recurs takes the number of the latest line of its template in its lookback (a new
    one if that line has none), a near-copy and any other line none; a near-copy counts no
    template."""
    remembered_lines: list[TemplateLine] = []
    numbers: list[int] = []
    made = 0
    streaks: list[TemplateStreak] = []
    streak: list[TemplateLine] = []
    streak_numbers: list[int] = []
    held = 0
    all_prose = True
    start = 0
    gap_start = 0
    for i, ch in enumerate(u):
        if ch != "\n":
            continue
        first = max(0, len(remembered_lines) - TEMPLATE_LOOKBACK)
        remembered, recurs_to, verdict = template_verdict(
            rules, u, start, i, gap_start, remembered_lines[first:]
        )
        if remembered is not None:
            number = 0
            if recurs_to is not None:
                if numbers[first + recurs_to] == 0:
                    made += 1
                    numbers[first + recurs_to] = made
                number = numbers[first + recurs_to]
            remembered_lines.append(remembered)
            numbers.append(number)
            gap_start = start + len(remembered.content)
        if verdict is True and remembered is not None:
            streak.append(remembered)
            streak_numbers.append(numbers[-1])
            all_prose = all_prose and is_template_prose(remembered.content)
            distinct = len({n for n in streak_numbers if n != 0})
            # With an item of a counted list, `code_counter_min_lines` and two templates as well.
            counted = all_prose or (len(streak) >= rules.code_counter_min_lines and distinct >= 2)
            if (
                held == 0
                and len(streak) >= rules.template_min_lines
                and 2 * len(streak) >= 3 * distinct
                and counted
            ):
                held = len(streak)
        elif verdict is False and streak:
            streaks.append(TemplateStreak(tuple(streak), held, tail=False))
            streak, streak_numbers, held, all_prose = [], [], 0, True
        start = i + 1
    if streak:
        tail = False
        if start < len(u):
            first = max(0, len(remembered_lines) - TEMPLATE_LOOKBACK)
            _, _, verdict = template_verdict(
                rules, u, start, len(u), gap_start, remembered_lines[first:]
            )
            tail = verdict is True
        streaks.append(TemplateStreak(tuple(streak), held, tail))
    return streaks


def template_candidates(rules: loopbreak.Rules, u: str) -> list[Candidate]:
    """Streaks of lines drawn from a few templates that differ in their numbers.

    Only remembered lines count: lines (ended by ``\\n``) whose content (the line without its
    trailing whitespace) has at least ``TEMPLATE_MIN_UNITS`` units and an ASCII digit, that fit
    (at most ``max_long_period`` units, newline excluded) and are not indented as code; the
    others are passed over entirely. A remembered line is numbered if it holds a number
    (``template_numbers``); its template is its content with each number masked
    (``template_mask``). A numbered line recurs when a numbered line of the
    ``TEMPLATE_LOOKBACK`` remembered lines before it shares its template, whether its content
    is new or a copy.

    A numbered line that recurs and is prose (``is_template_prose``), or is an item of a counted
    list (``counted_item``, ``copy_save_count``, no data: ``template_line_class``), or is prose
    and a near-copy (``near_copy``), continues the streak, or starts one; any other remembered
    line (numbered but none of these, or with digits that are no number) ends it and starts
    none, and so does a line indented as code that holds an ASCII digit (of
    ``TEMPLATE_MIN_UNITS`` units or more, fitting, not remembered); other lines neither continue
    nor end it. The rule holds at the first line of a streak where the streak has
    ``template_min_lines`` lines or more and at least 1.5 lines per distinct template among
    them, and, if a line of it is no prose, ``code_counter_min_lines`` lines and two templates;
    a streak holds at most once. The finding is the streak's first line (``block``, ``start``, ``period`` its length),
    ``repeats`` the streak's lines then; offline, the region runs to the newline of the streak's
    last line, or to the text's end if its last line, with no newline, would continue it."""
    out: list[Candidate] = []
    for streak in template_streaks(rules, u):
        if streak.held == 0:
            continue
        first = streak.lines[0]
        ends = tuple(line.end for line in streak.lines[streak.held - 1 :])
        finding = OracleFinding(
            "template_lines",
            len(first.content),
            first.content,
            first.start,
            streak.held,
            ends[0],
            ends[0],
        )
        whole_end = len(u) if streak.tail else ends[-1]
        copies = len(streak.lines) + streak.tail
        out.append(
            Candidate(
                finding, first.start, whole_end, copies, region_end=ends[-1], claim_steps=ends
            )
        )
    return out


# --- counter_run ------------------------------------------------------------------------------

# A digit run and what touches it: a number has none of these on either side.
DIGIT_RUN = re.compile(r"[0-9]+")
NAME_UNITS = frozenset("_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
# The most units between two numbers of a count.
COUNT_MAX_SEPARATOR = 16


def counter_run_candidates(rules: loopbreak.Rules, u: str) -> list[Candidate]:
    """Counts inside a line: digit runs in order; a number is one of at most three digits with
    no ASCII letter or ``_`` on either side and a unit after it; two digit runs in a row step
    when both are numbers, the second one more, with at most 16 units and no newline between
    them; a count is a maximal run of steps with one separator, found at the unit after its
    ``data_counter_min_lines``-th number (the rule is off when twice that exceeds
    ``max_long_period``)."""
    need = rules.data_counter_min_lines
    if 2 * need > rules.max_long_period:
        return []
    runs = list(DIGIT_RUN.finditer(u))

    def value(k: int) -> int | None:
        i, j = runs[k].span()
        touches_name = (i > 0 and u[i - 1] in NAME_UNITS) or (j < len(u) and u[j] in NAME_UNITS)
        return None if j == len(u) or j - i > 3 or touches_name else int(u[i:j])

    def separator(k: int) -> str:
        return u[runs[k].end() : runs[k + 1].start()]

    def steps(k: int) -> bool:
        a, b, between = value(k), value(k + 1), separator(k)
        return (
            a is not None
            and b == a + 1
            and len(between) <= COUNT_MAX_SEPARATOR
            and "\n" not in between
        )

    out: list[Candidate] = []
    k = 0
    while k + 1 < len(runs):
        if not steps(k):
            k += 1
            continue
        last = k + 1
        while last + 1 < len(runs) and steps(last) and separator(last) == separator(k):
            last += 1
        if last - k + 1 >= need:
            first = runs[k].start()
            block = u[first : runs[k + 1].start()]
            ends = tuple(runs[m].end() + 1 for m in range(k + need - 1, last + 1))
            finding = OracleFinding("counter_run", len(block), block, first, need, ends[0], ends[0])
            out.append(
                Candidate(
                    finding, first, ends[-1], last - k + 1, region_end=ends[-1], claim_steps=ends
                )
            )
        # The next count may start at this one's last number, behind another separator.
        k = last
    return out


def oracle_candidates(rules: loopbreak.Rules, text: str) -> list[Candidate]:
    """Every candidate of every rule, before the claim filter, in detection order."""
    cands = (
        periodic_candidates(rules, text)
        + lines_candidates(rules, text)
        + counter_candidates(rules, text)
        + template_candidates(rules, text)
        + counter_run_candidates(rules, text)
    )
    cands.sort(key=Candidate.sort_key)
    return cands


def emitted(rules: loopbreak.Rules, text: str) -> list[Candidate]:
    """The candidates no earlier finding claims, in detection order."""
    kept: list[Candidate] = []
    for cand in oracle_candidates(rules, text):
        t = cand.finding.detected_at
        claimed = max((e.claim(t) for e in kept), default=0)
        if cand.anchor >= claimed:
            kept.append(cand)
    return kept


def oracle_scan(rules: loopbreak.Rules, text: str) -> list[OracleFinding]:
    """What ``loopbreak.scan(text, rules)`` must return (each region whole), as plain values."""
    return [
        dataclasses.replace(c.finding, end=c.whole_end, repeats=c.copies)
        for c in emitted(rules, text)
    ]


def oracle_stream(rules: loopbreak.Rules, text: str) -> list[OracleFinding]:
    """What a ``Detector`` fed ``text`` must report (each region as its rule first held)."""
    return [c.finding for c in emitted(rules, text)]
