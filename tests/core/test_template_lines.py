"""The template-lines rule (`template_lines`): numbered prose lines drawn from a few templates,
recurring in or out of order, and counted lists whose items come back. Real near-loops of small models and of issue threads are found,
early; text that only looks like them (numbered lists of distinct items, a reasoning trace that
returns to a number, lines indented as code, a table of similar rows) is not; a stream finds
what a scan finds; `trim` keeps the first lines and counts the rest."""

from __future__ import annotations

import json

import pytest

import loopbreak
from support import model_outputs
from support.issue_excerpts import EXCERPTS
from support.shared_corpus import DEVELOPMENT_SET


def outputs(name: str) -> dict[str, str]:
    return {str(row["id"]): str(row["text"]) for row in model_outputs.load(name)}


GEMMA = outputs("gemma3_270m_outputs.jsonl") | outputs("gemma3_270m_long_outputs.jsonl")

# Near-loops no other rule finds, with the block the rule reports and where it first holds (the
# unit the guard would stop a stream at).
NEAR_LOOPS = {
    # The prompt echoed again and again, its date changing among a few values in no order.
    "g01-sampled": ("gemma", 2440),
    "g01-seed7-long": ("gemma", 2440),
    # The prompt echoed with its replica count changing.
    "g17-sampled": ("gemma", 1212),
    # `<strong>N. 東京で一日X</strong>` items, each with a sentence holding X, X cycling through
    # five activities in no order: the sentences hold no digit, so the lookback spans 16 items.
    "g12-sampled": ("gemma", 1554),
    "g12-seed7-long": ("gemma", 1554),
    # Timestamped log lines whose sentence breaks at another word each time (llama.cpp issue):
    # a line whose break brings no word the lines before it lacked is a near-copy.
    "06.txt": ("excerpt", 1132),
    # `N. Alpacas are from South America.` with only the number changing (alpaca-lora issue).
    "32.txt": ("excerpt", 315),
}


def text_of(name: str, source: str) -> str:
    if source == "gemma":
        return GEMMA[name]
    return (EXCERPTS / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(NEAR_LOOPS))
def test_a_near_loop_is_found_as_template_lines(name: str) -> None:
    source, held_at = NEAR_LOOPS[name]
    text = text_of(name, source)
    findings = loopbreak.scan(text)
    assert [f.rule for f in findings][:1] == ["template_lines"], findings
    first = findings[0]
    assert first.detected_at == held_at
    assert first.block == text[first.start : first.start + first.period]
    assert first.repeats >= 8
    # Streamed in deltas, the detector holds where the scan says.
    detector = loopbreak.Detector()
    held = next(
        (found for k in range(0, len(text), 5) if (found := detector.feed(text[k : k + 5]))),
        None,
    )
    assert held is not None and (held.rule, held.detected_at) == ("template_lines", held_at)


def numbered(items: list[str], order: list[int]) -> str:
    return "".join(f"{n}. {items[i]}\n" for n, i in enumerate(order, start=1))


ITEMS = ["Water the plants in the morning.", "Feed the cat twice a day.", "Take a long walk."]


def test_items_cycling_in_no_fixed_order_hold_at_the_streaks_eighth_line() -> None:
    order = [0, 1, 2, 1, 0, 2, 2, 1, 0, 1, 2, 0, 0, 1, 2, 1]
    text = numbered(ITEMS, order)
    [found] = loopbreak.scan(text)
    lines = text.splitlines(keepends=True)
    starts = [sum(map(len, lines[:k])) for k in range(len(lines) + 1)]
    assert (found.rule, found.start, found.block) == (
        "template_lines",
        starts[3],
        "4. Feed the cat twice a day.",
    )
    assert (found.detected_at, found.end, found.repeats) == (starts[11], len(text), 13)
    trimmed = loopbreak.trim(text, keep=2)
    assert trimmed.text.startswith(text[: starts[5]])
    assert "repeated 11 more lines (template_lines)" in trimmed.text


def test_copies_of_a_few_numbered_lines_in_no_fixed_order_are_found() -> None:
    # Each line recurs as a copy: no block repeats back to back, so no exact rule holds.
    lines = [
        "Step 3: check the server logs again.",
        "Step 5: restart the web service now.",
        "Step 7: clear the cache and retry.",
    ]
    order = [0, 1, 2, 1, 0, 2, 2, 1, 0, 1, 2, 0, 0, 1, 2, 1]
    text = "".join(lines[i] + "\n" for i in order)
    [found] = loopbreak.scan(text)
    starts = [sum(len(lines[i]) + 1 for i in order[:k]) for k in range(len(order) + 1)]
    assert (found.rule, found.start, found.block, found.repeats) == (
        "template_lines",
        starts[3],
        lines[1],
        13,
    )
    assert found.detected_at == starts[11]


def test_items_of_a_heading_and_paragraph_are_remembered_as_items() -> None:
    # Each item is a numbered heading and two sentences with no digit: the lookback holds the
    # last 16 lines with a digit, so five places cycling over three-line items still recur.
    places = ["museum", "harbour", "old town", "market", "castle"]
    order = [0, 1, 2, 3, 4, 2, 0, 3, 1, 4, 0, 2, 3, 1, 4, 2]
    text = "".join(
        f"**Day {n}: Visit the {places[i]}**\n"
        f"Spend the day at the {places[i]} and enjoy the view.\n"
        "Take a break for lunch and walk back in the evening.\n\n"
        for n, i in enumerate(order, start=1)
    )
    [found] = loopbreak.scan(text)
    held_at = text.index("\n", text.index("**Day 13:")) + 1
    assert (found.rule, found.block, found.detected_at, found.repeats) == (
        "template_lines",
        "**Day 6: Visit the old town**",
        held_at,
        11,
    )


# A list of the most populous countries whose items come back (d33-greedy of the development
# set): a name and a number, no prose.
COUNTRIES = [
    "China (1.33 billion)",
    "India (2.1 billion)",
    "United States (2.1 billion)",
    "Russia (2.1 billion)",
    "Brazil (2.1 billion)",
]
COUNTRY_ORDER = [0, 1, 2, 3, 4] + [3, 0, 1, 3, 3, 0, 3, 4, 1, 2] * 6


def test_a_counted_list_whose_items_come_back_holds_at_the_streaks_25th_line() -> None:
    text = numbered(COUNTRIES, COUNTRY_ORDER)
    [found] = loopbreak.scan(text)
    lines = text.splitlines(keepends=True)
    starts = [sum(map(len, lines[:k])) for k in range(len(lines) + 1)]
    # Its streak starts at the first item that comes back (the sixth), and holds at its 25th.
    assert (found.rule, found.start, found.block) == ("template_lines", starts[5], lines[5][:-1])
    assert (found.detected_at, found.end, found.repeats) == (starts[30], len(text), 60)
    assert loopbreak.scan("".join(lines[:29])) == []
    detector = loopbreak.Detector()
    held = next(
        (hit for k in range(0, len(text), 7) if (hit := detector.feed(text[k : k + 7]))),
        None,
    )
    assert held is not None and (held.rule, held.detected_at) == ("template_lines", starts[30])
    trimmed = loopbreak.trim(text, keep=2)
    assert trimmed.text.startswith(text[: starts[7]])
    assert "repeated 58 more lines (template_lines)" in trimmed.text


@pytest.mark.skipif(not DEVELOPMENT_SET.is_file(), reason="../shared/corpus is not beside the repo")
def test_the_development_sets_counted_list_is_found_within_its_loop() -> None:
    # d33-greedy lists 50 countries drawn from six, the same ones coming back from the 4th item;
    # its streak starts at the 10th (the 9th, `India (2.1 billion)`, is a new template).
    rows = [json.loads(line) for line in DEVELOPMENT_SET.read_text(encoding="utf-8").splitlines()]
    [row] = [row for row in rows if row["id"] == "d33-greedy"]
    [found] = loopbreak.scan(row["text"])
    assert (found.rule, found.block) == ("template_lines", "10. United Arab Emirates (2.1 billion)")
    assert row["text"][: found.detected_at].endswith("34. India (2.1 billion)\n")
    assert found.detected_at - row["start"] < 1_500


def keymap() -> str:
    """A keyboard map written by hand: each block's comments say which layer holds what, in a
    few templates that recur, and the code between them holds digits in names (`layer2`, `AE01`,
    `F3`) and no number."""
    roles = ["arrows", "numbers", "symbols", "accents"]
    pairs = [(0, 1), (0, 2), (1, 2), (0, 3), (2, 3)] * 3
    blocks = []
    for k, (a, b) in enumerate(pairs[:12]):
        lo, hi = 2 + k % 2, 3 + k % 3
        blocks.append(
            f"// Layer {lo} holds the {roles[a]}\n"
            f"// Layer {hi} holds the {roles[b]}\n"
            f'partial keymap "layer{lo}layer{hi}v{k}" {{\n'
            f"  key <AE0{k % 10}> {{ [ Left, Right ] }};\n"
            f"  key <AD0{k % 10}> {{ [ Up, Down, F{k % 12 + 1} ] }};\n"
            "};\n\n"
        )
    return "".join(blocks)


@pytest.mark.parametrize(
    "text",
    [
        # A long numbered list of distinct items.
        "".join(
            f"{n}. Step {n} of the recipe: {word} the {thing}.\n"
            for n, (word, thing) in enumerate(
                [
                    (w, t)
                    for w in ("mix", "stir", "bake", "cool", "slice")
                    for t in ("dough", "sauce", "crust", "filling")
                ],
                start=1,
            )
        ),
        # A reasoning trace that returns to a number and moves on.
        "So the total is 14 apples.\nWait, let me check: 9 plus 5 is 14.\nYes, the total is 14 apples.\n"
        "Now the price: each apple costs 2 dollars.\nSo 14 apples cost 28 dollars.\n"
        "Let me check: 14 times 2 is 28.\nYes, 28 dollars.\nThe answer is 28 dollars.\n",
        # The same numbered sentence, indented as code (a listing of output; its numbers do not
        # count on, which would be `counter_lines`).
        "".join(
            f"    Epoch {n * 7 % 60}: the loss went down to 0.{n * 13 % 100:02d} on the test set\n"
            for n in range(1, 60)
        ),
        # A table of similar rows is no prose.
        "".join(f"| {n} | pending | 2024-01-{n:02d} | ok |\n" for n in range(1, 29)),
        # Comments of a few templates recurring between lines of code whose digits are in names:
        # such a line ends a streak (an X keyboard map of /usr/share/X11/xkb has this shape).
        keymap(),
        # A table of device names by id: each row's words are the rows' before it, with the
        # four-digit id (data, no number) new every row or two (libdrm's amdgpu.ids has this
        # shape). A rule of rows that add no word, or one reading four-digit ids as numbers, would
        # flag it.
        "".join(
            f"{6600 + n // 2},\t{n % 2 * 81:02d},\tAcme Graphics R{5 + n % 3} {200 + n % 4 * 40} Series\n"
            for n in range(48)
        ),
        # SQL functions of one template: the recurring line of words sits between recurring
        # lines that are no prose, which end a streak (postgresql's system_functions.sql).
        "".join(
            f"CREATE OR REPLACE FUNCTION {a}_pl_{b}({a}, {b})\n RETURNS {b}\n LANGUAGE sql\n"
            " IMMUTABLE PARALLEL SAFE STRICT COST 1\nRETURN $2 + $1;\n\n"
            for a in ("date", "time", "interval", "timetz")
            for b in ("date", "time", "interval", "timestamp")
        ),
        # The same, whose recurring lines that are no prose hold two words each (postgresql's
        # `overlaps` functions): prose of two words would make the streak.
        "".join(
            f'CREATE OR REPLACE FUNCTION "overlaps"({a}, {b},\n  {a}, {b})\n RETURNS boolean\n'
            f" LANGUAGE sql\n {kind} PARALLEL SAFE COST 1\nRETURN {body};\n\n"
            for kind in ("STABLE", "IMMUTABLE")
            for a, b in (("timestamptz", "interval"), ("timestamp", "interval"), ("time", "time"))
            for body in (
                "($1, $2) overlaps ($3, ($3 + $4))",
                "($1, ($1 + $2)) overlaps ($3, ($3 + $4))",
                "($1, ($1 + $2)) overlaps ($3, $4)",
            )
        ),
        # Functions each under a comment of two words and the version that added it, their
        # bodies holding no number (pynvml.py).
        "".join(
            f"# Added in {version}\ndef nvmlDeviceGet{name}(handle):\n"
            f'    fn = _nvmlGetFunctionPointer("nvmlDeviceGet{name}")\n'
            "    value = c_uint()\n    ret = fn(handle, byref(value))\n"
            "    _nvmlCheckReturn(ret)\n    return value.value\n\n"
            for version, names in (
                ("2.285", ("Name", "Serial", "Uuid", "Board")),
                ("3.295", ("PcieLinkGeneration", "PcieLinkWidth", "MaxPcieLinkWidth", "Fan")),
                ("4.304", ("Power", "PowerLimit", "Temperature", "Clock", "MaxClock")),
            )
            for name in names
        ),
        # Release notes module by module, each upgraded between two versions (perl5101delta.pod
        # of Debian's perl-doc, held out of the tuning corpus): a version's digits after its
        # point are no number, so the lines share no template.
        "".join(
            f"=item C<{name}>\n\nUpgraded from version {k % 5}.{24 + 7 * k % 60} to "
            f"{k % 5}.{31 + 11 * k % 60}.\n\n"
            for k, name in enumerate(
                ("Archive::Tar", "Attribute::Handlers", "AutoLoader", "B::Debug", "B::Deparse")
                + ("B::Lint", "CGI", "Compress::Zlib", "Cwd", "DB_File", "Data::Dumper")
                + ("Digest::MD5", "Encode", "Exporter")
            )
        ),
        # Features each introduced in a release (perlexperiment.pod).
        "".join(
            f"=item {name}\n\nIntroduced in Perl 5.{(6 + 2 * k) % 40}.{k % 3}\n\n"
            for k, name in enumerate(
                ("Smart match", "Lexical subroutines", "Postfix dereference", "Signatures")
                + ("Unicode strings", "Regular expression sets", "The DB module")
                + ("Weak references", "Internal file glob", "Pluggable keywords")
            )
        ),
        # Kernel versions explained one by one (the man page syscalls.2 of manpages-dev).
        "".join(
            f'.IP \\[bu]\nWhere a system call is marked "2.{2 * k}"\nthis means the system call '
            f"probably appeared in a Linux 2.{2 * k - 1}.x kernel version,\n"
            f"and first appeared in a stable kernel with Linux 2.{2 * k}.0.\n"
            for k in range(1, 9)
        ),
        # A compiler's rewrite rules: a numbered line of words opens each, its body indented as
        # code with numbers in it, which ends a streak (Go's ssa/gen/ARM64.rules).
        "".join(
            f"({op} [{n}] ptr mem) =>\n\t(MOVBstore [{n - 1}] ptr (MOVDconst [0])\n"
            f"\t\t(MOVHstore [{n - 3}] ptr (MOVDconst [0]) mem))\n"
            for op in ("Zero", "Move")
            for n in range(5, 17)
        ),
        # Records of one shape whose id counts on, a city among three and a temperature that
        # changes: each comes back as a new record, not as the one before it.
        "".join(
            f'{{"id": {n}, "city": "{("Paris", "Lyon", "Nice")[n % 3]}", "temp": {20 + n * 5 % 11}}}\n'
            for n in range(1, 60)
        ),
        # A table of settings whose rows count on, true or false: rows are data, which the counter
        # rule reads with its count for data (64).
        "".join(f"| setting.option.{n} | {str(n % 3 > 0).lower()} |\n" for n in range(40)),
        # Numbers that count on by chance from one line to the next (`$2` after `COST 1`): the
        # text before them differs, so no list counts.
        "".join(
            f"CREATE FUNCTION plus_{a}{b}()\n IMMUTABLE PARALLEL SAFE STRICT COST 1\nRETURN $2 + $1;\n"
            for a in "abcdef"
            for b in "ghijkl"
        ),
    ],
    ids=[
        "distinct items",
        "reasoning trace",
        "indented as code",
        "table rows",
        "keymap",
        "table of names by id",
        "sql functions",
        "sql overlaps",
        "functions by version",
        "releases by version",
        "features by release",
        "kernel versions",
        "rewrite rules",
        "records whose values change",
        "table of settings",
        "numbers that count on by chance",
    ],
)
def test_text_that_only_looks_like_it_has_no_finding(text: str) -> None:
    assert [f.rule for f in loopbreak.scan(text)] == []


def test_the_conservative_and_token_presets_leave_it_off() -> None:
    order = [0, 1, 2, 1, 0, 2, 2, 1, 0, 1, 2, 0, 0, 1, 2, 1] * 4
    text = numbered(ITEMS, order)
    assert loopbreak.Rules.conservative().template_min_lines == 1 << 24
    assert loopbreak.Rules.for_tokens().template_min_lines == 1 << 24
    assert "template_lines" not in {
        f.rule for f in loopbreak.scan(text, loopbreak.Rules.conservative())
    }
    countries = numbered(COUNTRIES, COUNTRY_ORDER)
    assert "template_lines" not in {
        f.rule for f in loopbreak.scan(countries, loopbreak.Rules.conservative())
    }
