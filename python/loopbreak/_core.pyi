"""Type stubs of the Rust core. Offsets, periods and lengths count code points, so they index
the Python ``str`` the text came from. A ``str`` holding lone surrogates is accepted: each
surrogate is one unit like any other code point and comes back unchanged."""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal, Optional, Union, final

from _typeshed import SupportsRead
from typing_extensions import Self

__all__ = [
    "scan",
    "scan_many",
    "scan_utf8_columns",
    "scan_utf8_texts",
    "JsonLinesScan",
    "JsonLines",
    "Detector",
    "TokenDetector",
    "TokenStreams",
    "Finding",
    "TokenFinding",
    "Rules",
    "trim",
    "Removal",
    "Trimmed",
    "DEFAULT_KEEP",
    "RULE_NAMES",
    "RULE_INFO",
    "RuleInfo",
    "__version__",
]

__version__: Final[str]

DEFAULT_KEEP: Final[int]
"""Copies of each repeated block that ``trim`` keeps by default (3)."""

RuleName = Literal[
    "periodic_run",
    "long_block",
    "identical_lines",
    "counter_lines",
    "template_lines",
    "counter_run",
]

RULE_NAMES: Final[tuple[RuleName, ...]]
"""Every rule's name in code order: the rule column of ``scan_utf8_columns`` holds indexes into
this tuple."""

@final
class RuleInfo:
    """A rule's metadata (immutable, hashable), stated once in the core for every rule: what code
    that handles findings reads instead of switching on a rule's name."""

    @property
    def name(self) -> RuleName:
        """The rule's name, as ``Finding.rule`` gives it."""
    @property
    def copy(self) -> Literal["block", "line"]:
        """What one copy is, and so what ``repeats`` counts (in a ``Finding`` and a
        ``Removal``): ``"block"``, the block repeated back to back (``repeats`` counts copies);
        ``"line"``, a line or a cycle of lines, blank lines between copies allowed (``repeats``
        counts lines)."""
    @property
    def period(self) -> str:
        """What ``Finding.period`` counts for this rule, in words."""
    @property
    def thresholds(self) -> tuple[str, ...]:
        """The thresholds the rule reads: ``Rules`` attributes, in the order of ``to_dict()``."""
    @property
    def description(self) -> str:
        """What the rule finds, in one line."""

RULE_INFO: Final[Mapping[RuleName, RuleInfo]]
"""Every rule's ``RuleInfo`` by name, in code order (a read-only mapping: ``list(RULE_INFO) ==
list(RULE_NAMES)``); an unknown name raises ``KeyError``."""

@final
class Rules:
    """Thresholds of every rule, validated on construction.

    ``Rules()`` are the defaults, for what language models write; ``Rules.conservative()``
    keeps the stricter thresholds for scanning arbitrary files (no finding in any text file of
    a full install, machine-generated tables and bundles included); ``Rules.for_tokens()`` is
    sized in token ids. docs/tuning.md gives both text presets side by side with their margins.

    What a block is made of decides its threshold, in a few content classes. A block repeated
    back to back becomes a finding once its span (units from the start of the first copy)
    reaches ``max(floor, repeats * period)``:

    - words (3 of 4 visible chars are letters, in any script, little whitespace): repeats >=
      clamp(ceil(``text_span`` / period), ``long_min_repeats``, ``min_repeats``), span >=
      ``min_span``. Defaults: 20 copies or 480 units (``min_repeats=20``, ``text_span=480``,
      ``min_span=64``);
    - code, digits, punctuation, markup: repeats >= clamp(ceil(``code_span`` / period),
      ``long_min_repeats``, ``code_min_repeats``), span >= ``code_min_span``. Defaults: 1,024
      units (``code_span=1024``), 120 copies of a block shorter than 9 units
      (``code_min_repeats=120``), at least 512 (``code_min_span=512``);
    - a table row: at least as much whitespace as visible chars (indented data, one short item
      per line), or at most 11 distinct chars, fewer than one per 6 units (``/.notdef `` eight
      times on a line, a minified array), or two lines or more of code with no letters of words
      (rows of numbers): the same with ``table_span``, span >= ``whitespace_min_span``.
      Defaults: 1,024 units (``table_span=1024``);
    - one visible char, e.g. ``-``, ``=``, ``a``: span >= ``single_char_min_span``; only
      whitespace: span >= ``whitespace_min_span``; both also need the repeats of code.
      Defaults: 1,024 units (``single_char_min_span=1024``, ``whitespace_min_span=1024``);
    - a run of base64 chars (and ``,`` ``;``) after 64 of them, part of a payload (a data URI,
      a source map): span >= ``payload_span``, 4,096 units (``payload_span=4096``).

    Letters that are not words do not count as letters: in a hex block (every letter a hex
    digit or ``x``, with a digit or an ``x``: ``0xffffffff, ``) and in a block of one or two
    capitals (``MV``, a code in a data table), nor in a block of ASCII letters and digits alone
    that mixes capitals with small letters or letters with digits (an identifier or base64:
    ``LS0t``, ``Kioq``). A run of words right after ``[`` or ``(`` is a list of items
    (``tuple[int, int, ...]``) and counts as code. A block of one line (one line break) that is
    not words needs at least ``min_repeats`` copies, however long the line.

    No class removes a threshold: in every preset, whatever keeps repeating is found by 4,096
    units, or by ``long_min_repeats`` copies of a longer block. Every block needs at least
    ``long_min_repeats`` copies (``long_min_repeats=4``). Blocks up to ``max_period`` units are
    reported as ``periodic_run`` (``max_period=150``), longer ones up to ``max_long_period`` as
    ``long_block`` (``max_long_period=3840``).

    ``min_lines`` (lines of words: with whitespace inside, or beyond ASCII; ``min_lines=14``) or
    ``code_min_lines`` (other lines, identifiers and statements among them;
    ``code_min_lines=25``, and a short one enough lines to cover ``code_span`` units with their
    newlines: 1,024 units, 512 lines of one char) identical non-empty lines in a row, blank
    lines between them allowed, are reported as ``identical_lines``. A table row needs
    ``code_min_lines`` and enough lines to cover ``table_span``: a line with as much whitespace
    as visible chars, its newline counted (``    None,``), or of ASCII with at most 11 distinct
    visible chars (its whitespace counting as one more), fewer than one per 6 units (a banner,
    ``// STOP STOP STOP ...``).

    Non-empty lines equal once every run of ASCII digits is masked, where from each line to the
    next every number is unchanged or one up and at least one is one up (``1. test.py``,
    ``2. test.py``, ...; blank lines between them allowed, trailing whitespace ignored), are
    reported as ``counter_lines``. How many lines a streak needs depends on what its template
    is made of. Data needs ``data_counter_min_lines`` (``data_counter_min_lines=64``): a template
    with fewer than one visible char in four a letter, a digit run counting as one (``(N)``,
    ``$N.5``, bare numbers, ``+---- N ----``), a table row (its first visible char ``|``), one
    name (ASCII letters and digits alone: ``pycallN``), or one whose counter has four digits or
    more (a year, an id: data counts on from large values, a model from 1). Code and markup, a
    template holding one of ``( ) [ ] { } < > = ; +``, needs ``code_counter_min_lines``
    (``code_counter_min_lines=25``). Anything else is words, whatever punctuation sits in it (an
    apostrophe, quotes, backticks, a colon, emphasis: ``N. Check the server's response ...``,
    ``N. `test.py```, ``2023-01-N,Phoenix,29.5,51,14``), and needs ``counter_min_lines``
    (``counter_min_lines=16``). A span (``counter_span=0``, ``code_counter_span=0``; 640 and
    1,600 in ``conservative()``) makes a short template need enough lines to cover it, L + 1
    units a line, L the template's length (without indentation, each digit run counted as one
    unit). Numbers are compared on their digits, of any length, and keep their width (``099``
    to ``100`` is one up, ``7`` to ``07`` is not); a line is at most two units longer than the
    one before (two numbers that carry at once, which may step together: ``N. Hamster N``). In
    a template without a letter every number must go one up (the fraction of a decimal aside):
    ``(7)``, ``$1.5``, bare numbers count, a CSV row with a counter column beside others
    (``7,0,0``) does not. A number that goes up right after ``_`` or ``[``, or after letters
    that are no word (fewer than three, glued to a digit or ``_``, or camel case: ``value_7``,
    ``x1``, ``0xff1``, ``shHereDoc01``, ``out[7]``: names and indexes of code) never counts;
    after a word it does (``backup7``, ``assistant57``). Lines longer than ``max_long_period``
    units never count. ``for_tokens`` turns the rule off in effect (see there): token ids 48-57
    are no digits.

    The same rule takes cycles of two or three non-empty lines where one number steps on
    (``<|im_start|>assistant57`` and a prompt line, then ``assistant58`` and the same line;
    ``1. Apple``, ``2. Banana``, ``3. Apple``; three numbered items in turn): each line equals
    the line a cycle before it once digits are masked, with exactly one number one up or up by
    the cycle's length, or is equal to it, and no cycle passes without a step. A streak starts
    at its first step (not at a line that repeats the line before it, which is
    ``identical_lines``'s) and is reported by its first cycle (its lines joined by newlines, as
    ``block``); a cycle's template is its lines' together: data if a line is data, else code if
    a line is, else words (a line of chat-template markers alone is none), and always a line
    more than the cycle (with a span, max(lines, ceil(span * P / (L + P))) for P lines of L
    units together). A chat-template marker (``<|im_end|>``: ``<|``, ASCII letters, digits or
    ``_``, ``|>``) is no code in a counter template: the llama.cpp#19585 cycle
    (tests/data/llama_cpp_19585_loop.txt) needs 16 lines.

    Lines drawn from a few templates that differ in their numbers, recurring in or out of order
    (a model cycling through numbered items, an echoed prompt whose date changes), are reported
    as ``template_lines``. A line is read if its content (trailing whitespace ignored) has 6
    units or more; it counts if it is at most ``max_long_period`` units long, is not indented as
    Markdown indents code (a tab first, or four spaces) and holds a number: a run of one to
    three ASCII digits with no letter right before or after it and no decimal point right
    before it after a digit (``on 21 March`` holds one, ``0.24`` one, its ``0``; ``x1``,
    ``3rd``, ``shHereDoc09`` and the year ``1958`` none). Its template is its content
    with each number masked,
    whatever the number's width. The lines remembered are the last 16 read that hold an ASCII
    digit, fit and are not indented as code. A line that counts continues a streak (or starts
    one) when a line that counts among them shares its template, or is a near-copy, and it
    reads as prose. A near-copy is a line whose template none of them shares, while two of
    them share one, and that brings nothing new: each token (a run of non-whitespace, its
    numbers masked, stops, brackets, quotes and emphasis stripped at both ends, case kept) of
    the text since the latest remembered line, its own included, at most 256 units, is one of
    the 1,024 units' before it (all of it within ``max_long_period`` units); it counts no
    template toward the 1.5 lines per template below. Prose is three
    words or more and at most one other token per three words (list marks and number tokens
    are neither; a camel-case name or a ``key:`` mid-line is no word), or six CJK chars. A
    line that shares a template but is no prose continues the streak as an item of a counted
    list that comes back: a copy of the latest line of its template save its first number,
    which is one more than the first number of the line remembered before it, with the same
    text before it, and no data (a table row, mostly numbers and punctuation, a name alone:
    ``N. China (1.33 billion)`` with the same few countries coming back). Any other line
    that counts ends the streak, and so does a remembered line whose digits are no number
    (a name, a year), and so does a line indented as code that holds a digit. Other lines (not
    read, with no digit, indented as code without a digit, too long) neither continue nor end
    it. A streak is found once it has ``template_min_lines`` lines
    (``template_min_lines=8``) and at least 1.5 lines per template among them (a line that
    recurs as a copy counts too: a few lines cycling in no fixed order repeat no block back to
    back), and, if it holds an item of a counted list, ``code_counter_min_lines`` lines
    (``code_counter_min_lines=25``) and two templates; ``block`` is its first line, ``repeats`` counts its
    lines. ``conservative()`` and ``for_tokens()`` turn the rule off in effect (see there).

    Numbers that count by one inside a line, with the same text between each pair (``54.55.56.``
    to the token limit, ``1, 2, 3, 4``), are reported as ``counter_run``. A number here is a run
    of one to three ASCII digits with no ASCII letter or ``_`` right before or after it and a
    unit after it; the text between two numbers of a count is at most 16 units and holds no
    newline or digit (a digit run that is no number ends the count). A count of numbers alone
    needs as many numbers as a template of the counter alone needs lines,
    ``data_counter_min_lines``, and is found at the unit after that number; ``block`` is its
    first number and the text after it, ``repeats`` counts its numbers, and ``end`` (offline)
    is one past the unit after its last number. The rule is off when twice
    ``data_counter_min_lines`` exceeds ``max_long_period`` (``for_tokens()``).

    Raises ``ValueError`` for values that cannot work together or lie outside ``0..2**32``
    (ints of any size), ``TypeError`` for non-ints.

    Each ``name=value`` gives a threshold's value: the defaults' here, the preset's in
    ``conservative()`` and ``for_tokens()``.
    """

    def __new__(
        cls,
        *,
        max_period: int = 150,
        max_long_period: int = 3840,
        min_repeats: int = 20,
        text_span: int = 480,
        code_min_repeats: int = 120,
        code_span: int = 1024,
        long_min_repeats: int = 4,
        min_span: int = 64,
        code_min_span: int = 512,
        single_char_min_span: int = 1024,
        whitespace_min_span: int = 1024,
        table_span: int = 1024,
        min_lines: int = 14,
        code_min_lines: int = 25,
        counter_min_lines: int = 16,
        counter_span: int = 0,
        code_counter_min_lines: int = 25,
        code_counter_span: int = 0,
        payload_span: int = 4096,
        data_counter_min_lines: int = 64,
        template_min_lines: int = 8,
    ) -> Self: ...
    @staticmethod
    def conservative() -> Rules:
        """The preset for scanning arbitrary files (``loopbreak scan --rules conservative``):
        no finding in any text file of a full install (stdlib, site-packages, /usr/share),
        machine-generated files included. It finds loops later than the defaults: code needs
        1,500 units (``code_span=1500``), lines of code 100 lines (``code_min_lines=100``), one
        char and whitespace 2,048 units (``single_char_min_span=2048``,
        ``whitespace_min_span=2048``), a table row 4,096 (``table_span=4096``); counter templates
        of words 16 lines or 640 units (``counter_span=640``), of code 40 lines or 1,600 units
        (``code_counter_min_lines=40``, ``code_counter_span=1600``), of data 320 lines
        (``data_counter_min_lines=320``); words and payloads as the defaults. The template rule
        is off in effect (``template_min_lines=2**24``): lines of machine-generated files, such
        as locale collation tables and Unicode name lists, recur by template."""
    @staticmethod
    def for_tokens() -> Rules:
        """The preset for token ids (``TokenDetector``, ``TokenStreams``, the engine
        integrations), held to the token floor: a block of words or markup repeated is found by
        max(20 copies, 256 tokens), and every block by 4,096 tokens or four copies of a longer
        one. An id says nothing about the text it stands for, so every class shares one
        threshold: 20 copies or 320 tokens (``min_repeats=20``, ``code_min_repeats=20``,
        ``text_span=320``, ``code_span=320``), at least 4 copies (``long_min_repeats=4``), and
        128 tokens in any case (``min_span=128``, ``code_min_span=128``; 240 for one id
        repeated, ``single_char_min_span=240``); 1536 tokens at most per block
        (``max_long_period=1536``, 13 KiB per stream for ids below 65,536). The counter rule is
        off in effect (``counter_min_lines=2**24``), and so is the template rule
        (``template_min_lines=2**24``): token ids 48-57 are no digits. Measured on
        SmolLM2's tokenizer (``benches/tune_tokens.py``, docs/tuning.md): every line and piece
        of real model answers is found in time, every SmolLM2 loop, no clean output."""
    @property
    def max_period(self) -> int: ...
    @property
    def max_long_period(self) -> int: ...
    @property
    def min_repeats(self) -> int: ...
    @property
    def text_span(self) -> int: ...
    @property
    def code_min_repeats(self) -> int: ...
    @property
    def code_span(self) -> int: ...
    @property
    def long_min_repeats(self) -> int: ...
    @property
    def min_span(self) -> int: ...
    @property
    def code_min_span(self) -> int: ...
    @property
    def single_char_min_span(self) -> int: ...
    @property
    def whitespace_min_span(self) -> int: ...
    @property
    def table_span(self) -> int: ...
    @property
    def min_lines(self) -> int: ...
    @property
    def code_min_lines(self) -> int: ...
    @property
    def counter_min_lines(self) -> int: ...
    @property
    def counter_span(self) -> int: ...
    @property
    def code_counter_min_lines(self) -> int: ...
    @property
    def code_counter_span(self) -> int: ...
    @property
    def payload_span(self) -> int: ...
    @property
    def data_counter_min_lines(self) -> int: ...
    @property
    def template_min_lines(self) -> int: ...
    def required_span(self, block: str) -> int:
        """The span (units from the start of the first copy) at which ``block``, repeated back to
        back at the start of a text, becomes a finding. Raises ``ValueError`` for an empty block."""
    def required_lines(self, line: str) -> int:
        """How many identical lines in a row make ``line`` (without its newline; trailing
        whitespace does not count) a finding."""
    def to_dict(self) -> dict[str, int]:
        """The rules as a dict of field name to value."""

@final
class Finding:
    """One degenerate region (immutable, hashable).

    A streaming detector (``Detector``, ``TokenDetector``, ``TokenStreams``) reports the region
    as it stood when its rule first held: ``end == detected_at`` and ``repeats`` counts the
    copies seen by then. An offline scan of a whole text (``scan``, ``scan_many``,
    ``scan_columns``, ``trim``, ``loopbreak scan``) reports the whole region: ``end`` is where
    the repetition stops and ``repeats`` counts every full copy in ``text[start:end]``.
    ``rule``, ``period``, ``block``, ``start`` and ``detected_at`` are the same either way."""

    @property
    def rule(self) -> RuleName:
        """Which rule found it."""
    @property
    def period(self) -> int:
        """Units in one copy of the block (for ``identical_lines``, ``counter_lines`` and
        ``template_lines``: the (first) line without its newline and trailing whitespace; for a
        cycle of counter lines, its first cycle of lines joined by newlines; for
        ``counter_run``, the count's first number and the text after it)."""
    @property
    def block(self) -> str:
        """One copy of the repeated block (for ``identical_lines``, the line; for
        ``counter_lines``, the first line, or the first cycle's lines joined by newlines, each
        without trailing whitespace; for ``template_lines``, the streak's first line without
        trailing whitespace, the other lines differing from it in their numbers or their
        template; a line longer than
        the detector's window, 15,362 units at the defaults, is given by the part of it the
        window holds at the newline: its last ``window - 1 - w`` units, ``w`` being the trailing
        whitespace; for ``counter_run``, the count's first number and the text between it and
        the next)."""
    @property
    def start(self) -> int:
        """Offset where the first copy starts (for ``identical_lines``, ``counter_lines`` and
        ``template_lines``, the first line; for ``counter_run``, the count's first number)."""
    @property
    def repeats(self) -> int:
        """Full copies (or lines): those seen when the rule first held (streaming), or every one
        in the region (offline scan). For ``template_lines``, the streak's lines: the lines
        between them that it passes over (blank, short, without a number) do not count. For
        ``counter_run``, the numbers counted."""
    @property
    def detected_at(self) -> int:
        """Units seen when the rule first held: ``text[start:detected_at]`` is the evidence."""
    @property
    def end(self) -> int:
        """Where the region ends: ``detected_at`` when streaming; offline, where the repetition
        stops (a periodic run may end inside a copy; a run of lines ends after the last
        repeated line's newline, or at the end of a text that ends inside a copy; a count ends
        one past the unit after its last number)."""
    def to_dict(self) -> dict[str, Any]:
        """The finding as a dict of plain values, for JSON and logs."""

@final
class TokenFinding:
    """A finding over token ids (immutable): like ``Finding``, with ``block`` a list of ids."""

    @property
    def rule(self) -> RuleName: ...
    @property
    def period(self) -> int: ...
    @property
    def block(self) -> list[int]: ...
    @property
    def start(self) -> int: ...
    @property
    def repeats(self) -> int: ...
    @property
    def detected_at(self) -> int: ...
    @property
    def end(self) -> int: ...
    def to_dict(self) -> dict[str, Any]: ...

Tokens = Union[Sequence[int], Any]
"""A list of ints or a 1-D integer buffer (numpy uint32/int64/int32/... array, ``array.array``)."""

@final
class TokenDetector:
    """The same rules over token ids, for serving engines that see ids, not text. Ids are
    classified as if they were code points (10 is a newline, 32 a space); choose rules sized in
    tokens. Raises ``TypeError`` for non-integer input, ``ValueError`` for ids outside 0..2**32
    or arrays that are not 1-D."""

    def __new__(cls, rules: Optional[Rules] = None) -> Self: ...
    def feed(self, tokens: Tokens) -> Optional[TokenFinding]:
        """Feeds token ids; returns the first finding whose rule first held among them, or None."""
    @property
    def finding(self) -> Optional[TokenFinding]: ...
    @property
    def findings(self) -> list[TokenFinding]: ...
    @property
    def units_seen(self) -> int: ...
    @property
    def rules(self) -> Rules: ...
    def reset(self) -> None: ...

@final
class TokenStreams:
    """Many token streams stepped together: one call per decode step for a whole batch, one
    crossing of the Python/Rust boundary. Each stream finds exactly what its own
    ``TokenDetector`` would."""

    def __new__(cls, rules: Optional[Rules] = None) -> Self: ...
    def add(self) -> int:
        """Starts a stream; returns its slot (slots of removed streams are reused)."""
    def remove(self, slot: int) -> None:
        """Ends the stream in ``slot``; ``ValueError`` if there is none (for any int that is not a
        stream's slot, negative or huge ones included; the same for ``finding`` and
        ``units_seen``)."""
    def __len__(self) -> int: ...
    def step(self, slots: Tokens, tokens: Tokens) -> list[int]:
        """Feeds ``tokens[i]`` to the stream in ``slots[i]``, for every i; returns the slots whose
        stream produced a finding in this step. ``ValueError`` for an unknown slot (nothing is
        fed then) or lengths that differ."""
    def finding(self, slot: int) -> Optional[TokenFinding]:
        """The first finding of the stream in ``slot``, or None."""
    def units_seen(self, slot: int) -> int: ...

def scan_many(
    texts: Iterable[str], rules: Optional[Rules] = None, threads: Optional[int] = None
) -> list[list[Finding]]:
    """``[scan(t) for t in texts]`` on all cores (or ``threads``) with the GIL released.
    ``threads`` must be at least 1 and below ``2**64`` (``ValueError`` otherwise); more threads
    than cores run as many as there are cores, on a pool kept for later calls with as many.
    ``loopbreak.scan_many`` also takes pyarrow string arrays."""

def scan_utf8_texts(
    data: Any, offsets: Any, rules: Optional[Rules] = None, threads: Optional[int] = None
) -> list[list[Finding]]:
    """``scan_many`` over an Arrow-style column (UTF-8 ``data`` buffer, int32/int64 ``offsets``),
    read from its buffers with no Python object per row. Used by ``loopbreak.scan_many``."""

def scan_utf8_columns(
    data: Any, offsets: Any, rules: Optional[Rules] = None, threads: Optional[int] = None
) -> list[bytes]:
    """``scan_many`` over an Arrow-style column (UTF-8 ``data`` buffer, int32/int64 ``offsets``):
    seven little-endian int64 columns (row, rule code, period, start, repeats, detected_at, end),
    the rule code indexing ``RULE_NAMES``.
    Used by ``loopbreak.scan_columns``."""

@final
class JsonLinesScan:
    """The chunks of a stream of JSON lines, read and scanned in Rust, each chunk's lines
    parsed and scanned on all cores (or ``threads``). Used by ``loopbreak scan``.

    ``source`` is a file descriptor (duplicated: the caller may close its own once this is
    made; it must not have been read through a buffer), read on threads of their own: the next
    chunk is read and the current one scanned while the caller works on the one before. Or a
    binary stream without one, read through its ``read`` method on the caller's thread as each
    chunk is taken (no thread of the scan calls Python, so none can outlive the caller; two
    threads taking chunks at once get a ``RuntimeError``). A UTF-8 byte-order mark at the start
    of the stream is in the first chunk's bytes, not in its first line. A chunk holds the whole lines that end within its first
    ``chunk_bytes`` (or one longer line); the field path ``segments`` is None for ``*``, else a
    member name and its value as a list index, if it has one. Iterating waits with the GIL
    released (and lets a signal through); a read error is raised as the ``OSError`` Python's own
    read would raise, after every chunk read before it."""

    def __new__(
        cls,
        source: Union[int, SupportsRead[bytes]],
        segments: Sequence[Optional[tuple[str, Optional[int]]]],
        chunk_bytes: int,
        rules: Optional[Rules] = None,
        threads: Optional[int] = None,
    ) -> Self: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> JsonLines: ...

@final
class JsonLines:
    """What one chunk of a ``JsonLinesScan`` holds to report. Lines count from 0 at the chunk's
    first line; ``start``/``end`` are byte offsets of a line (with its newline) in the chunk."""

    @property
    def lines(self) -> int:
        """Lines in the chunk."""
    @property
    def rows(self) -> int:
        """Texts and nulls the field path reached in the lines read."""
    @property
    def first_read(self) -> Optional[tuple[int, int, int]]:
        """``(line, start, end)`` of the first line read (neither blank nor left unread)."""
    @property
    def unread(self) -> list[tuple[int, int, int]]:
        """``(line, start, end)`` of each line left to Python's ``json`` (not JSON, or JSON the
        Rust reader might read otherwise: ``NaN``, lone surrogates, invalid UTF-8 in a text, a
        repeated member on the path), in order."""
    @property
    def not_text(self) -> list[tuple[int, str, str]]:
        """``(line, path, kind)`` of each value reached that is neither text nor null; kind is
        ``"a boolean"``, ``"a number"``, ``"an object"`` or ``"a list"``."""
    @property
    def found(self) -> list[tuple[int, int, int, int, str, str, list[Finding]]]:
        """``(line, slot, start, end, path, text, findings)`` of each text with findings, in
        order; ``slot`` is the value's index among those the path reached in its line."""
    @property
    def data(self) -> bytes:
        """The chunk's bytes (a copy; the reader fills its buffer again once this is freed)."""
    @property
    def size(self) -> int:
        """Bytes in the chunk."""

@final
class Detector:
    """A streaming detector: feed it text deltas as they arrive.

    Findings and their offsets do not depend on how the text is split into deltas. The state is
    bounded by the rules' window, allocated on the first unit, not by the stream length: at the
    defaults about 16 KiB while every char is below U+0100, 31 KiB while they are in the Basic
    Multilingual Plane, 63 KiB beyond it; the storage narrows again once the last ~64K chars
    needed no wider. The ``findings`` list grows by one
    per degenerate region.
    """

    def __new__(cls, rules: Optional[Rules] = None) -> Self: ...
    def feed(self, delta: str) -> Optional[Finding]:
        """Feeds a delta; returns the first finding whose rule first held inside it, or None.
        Raises ``TypeError`` if ``delta`` is not a ``str``."""
    @property
    def finding(self) -> Optional[Finding]:
        """The first finding since creation or the last reset: the one to stop a stream on."""
    @property
    def findings(self) -> list[Finding]:
        """Every finding so far, in order: the same list ``scan`` gives for the text fed."""
    @property
    def units_seen(self) -> int:
        """Code points fed since creation or the last reset."""
    @property
    def rules(self) -> Rules: ...
    def reset(self) -> None:
        """Forgets everything fed so far; the rules stay."""

def scan(text: str, rules: Optional[Rules] = None) -> list[Finding]:
    """Every degenerate region of ``text``, in order: what a ``Detector`` fed ``text`` reports.
    Large texts are scanned with the GIL released."""

@final
class Removal:
    """One region that ``trim`` shortened. Offsets index the original text."""

    @property
    def finding(self) -> Finding: ...
    @property
    def start(self) -> int:
        """Where the removed part starts (after the kept copies)."""
    @property
    def end(self) -> int:
        """Where the repetition ends."""
    @property
    def units(self) -> int:
        """Units removed: ``end - start``."""
    @property
    def repeats(self) -> int:
        """Copies (or lines) removed; a cut-short last copy counts as one."""
    @property
    def marker(self) -> str:
        """The note that stands for the removed units in ``Trimmed.text``, exactly as written
        there (it starts with a newline, and ends with one when more text follows)."""
    def to_dict(self) -> dict[str, Any]: ...

@final
class Trimmed:
    """The text to persist, and what was removed from it."""

    @property
    def text(self) -> str:
        """The input with each degenerate region cut to its first copies plus a marker such as
        ``[loopbreak: removed 4970 units: "loadTools." repeated 497 more times (periodic_run)]``.
        Everything outside the removed parts is kept exactly; clean text comes back unchanged."""
    @property
    def removals(self) -> list[Removal]: ...

def trim(text: str, keep: int = 3, rules: Optional[Rules] = None) -> Trimmed:
    """Shortens every degenerate region of ``text`` to its first ``keep`` copies plus a marker.
    Works over the text as stored (an ASCII text is never widened to four bytes per char) and
    joins the result from slices of it; a text without loops comes back as the same object.
    Raises ``ValueError`` if ``keep`` is not in ``1..2**64`` (ints of any size)."""
