"""A candidate rule measured against both gates, not a rule of the core: lines drawn from a few
templates, recurring in or out of order (docs/how-it-works.md, "What no rule finds").

    python benches/template_lines_candidate.py                 # the measured setting
    python benches/template_lines_candidate.py --min-lines 6 --copies 2
    python benches/template_lines_candidate.py --leave-counting

A line's *template* is the line, trailing whitespace dropped, with every run of digits that
touches no letter masked (`Lisbon to Prague on 21 March` and `on 13 March` share one;
`shHereDoc09` and `shHereDoc10` do not: a number inside a name is part of the name). A line
*recurs* when its template is among those of the 16 lines before it; lines of fewer than 6
visible characters (`課程`) are passed over, neither counted nor remembered. A streak is lines in
a row that recur and are prose: at least three words (two letters or more, or `a`/`I`; no camel
case), at most one other token per three words, or at least six CJK, kana or hangul
characters; any other line ends it. The candidate holds where a streak reaches `--min-lines`
lines, has at least `--copies` lines per distinct template in it, and holds a line that recurs
only by its template (its text is not among the 16 before: exact recurrence is the exact rules';
with `--leave-counting`, nor does a line that counts on from the latest line of its template 1
to 3 lines before, as the counter rule reads a counter).

Only a line that recurs is read for its words: the others are told apart by comparing them with
the 16 lines before (as the counter rule tells lines apart without reading them), which is what
would keep such a rule cheap in the core. The candidate is not streamed, trimmed or costed: it
measures whether the shape can be told from hand-written text before any of that is built.

The gates, as the rules of the core are judged: the near-loops of the development sets
(SmolLM2 in ../shared/corpus, Gemma 3 270M's 800-token and 3,000-token outputs) and of the
issue excerpts, with where the default rules first find each; no clean model answer; and no
hand-written file of the wide benign corpus (tests/support/benign.py; machine-generated files
counted apart), in about a minute and a half on two cores.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path

import loopbreak

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support import benign  # noqa: E402
from support.issue_excerpts import EXCERPTS, labels  # noqa: E402
from support.shared_corpus import DEVELOPMENT_SET  # noqa: E402

LOOKBACK = 16
SHORT_LINE = 6
MASKED_NUMBER = re.compile(r"(?<![^\W\d_])\d+(?![^\W\d_])")
WORD = re.compile(r"[(\[\"'*_`]*[^\W\d_]+(?:['’-][^\W\d_]+)*[)\]\"'*_`.,;:!?]*")
NUMBER = re.compile(r"[(\[#$]*\d[\d.,:/%-]*[)\].,;:!?]*")
MARKS = frozenset({"-", "*", "+", "|", ">", "#", "##", "###", "—", "–"})
WIDE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
CAMEL = re.compile(r"[a-z][A-Z]")


@dataclass(frozen=True)
class Setting:
    min_lines: int
    copies: float
    leave_counting: bool


def is_word(token: str, last: bool) -> bool:
    letters = sum(char.isalpha() for char in token)
    return (
        WORD.fullmatch(token) is not None
        and (last or not token.endswith(":"))  # `key:` mid-line is a field name
        and (letters >= 2 or token in ("a", "A", "I"))
        and not CAMEL.search(token)
    )


def is_prose(line: str) -> bool:
    if len(WIDE.findall(line)) >= 6:
        return True
    tokens = line.split()
    words = others = 0
    for i, token in enumerate(tokens):
        if is_word(token, i == len(tokens) - 1):
            words += 1
        elif NUMBER.fullmatch(token) is None and token not in MARKS:
            others += 1
    return words >= 3 and others * 3 <= words


def counts_on(line: str, templates: deque[str], lines: deque[str], template: str) -> bool:
    """Whether the line counts on from the latest line of its template, as the counter rule reads
    a counter: that line 1 to 3 lines before, every number unchanged, one up or that many up."""
    back = len(templates) - max(i for i, seen in enumerate(templates) if seen == template)
    if back > 3:
        return False
    before = lines[len(lines) - back]
    steps = [
        int(new) - int(old)
        for new, old in zip(MASKED_NUMBER.findall(line), MASKED_NUMBER.findall(before), strict=True)
    ]
    return all(step in (0, 1, back) for step in steps) and any(steps)


def first_hold(text: str, setting: Setting) -> tuple[int, str] | None:
    """The offset of the end of the line where the candidate first holds, and that line."""
    templates: deque[str] = deque()
    lines: deque[str] = deque()
    streak: Counter[str] = Counter()
    inexact = 0
    offset = 0
    for line in text.split("\n"):
        offset += len(line) + 1
        content = line.rstrip()
        if len(content.strip()) < SHORT_LINE:
            continue
        template = MASKED_NUMBER.sub("0", content)
        if template in templates and len(content) <= 4096 and is_prose(content.strip()):
            streak[template] += 1
            inexact += content not in lines and not (
                setting.leave_counting and counts_on(content, templates, lines, template)
            )
            count = sum(streak.values())
            if count >= setting.min_lines and count >= setting.copies * len(streak) and inexact:
                return min(offset, len(text)), content.strip()
        else:
            streak.clear()
            inexact = 0
        templates.append(template)
        lines.append(content)
        if len(templates) > LOOKBACK:
            templates.popleft()
            lines.popleft()
    return None


def model_outputs() -> Iterator[tuple[str, str, str]]:
    """(id, label, text) of every labelled model output at hand."""
    sets = [
        DEVELOPMENT_SET,
        REPO / "tests" / "data" / "gemma3_270m_outputs.jsonl",
        REPO / "tests" / "data" / "gemma3_270m_long_outputs.jsonl",
    ]
    for path in sets:
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                yield str(row["id"]), str(row["label"]), str(row["text"])
    for name, label in sorted(labels().items()):
        yield f"excerpt {name}", label.split()[0], (EXCERPTS / name).read_text(encoding="utf-8")


def judge(item: tuple[str, str, Setting]) -> tuple[str, str, str] | None:
    path, text, setting = item
    held = first_hold(text, setting)
    if held is None:
        return None
    return benign.machine_generated(path, text) or "hand-written", path, held[1][:80]


def corpus(setting: Setting) -> Iterator[tuple[str, str, Setting]]:
    for path, text in benign.everything():
        yield path, text, setting


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--min-lines", type=int, default=8)
    parser.add_argument("--copies", type=float, default=1.5)
    parser.add_argument("--leave-counting", action="store_true")
    args = parser.parse_args()
    setting = Setting(args.min_lines, args.copies, args.leave_counting)

    print(f"near-loops ({setting}): where the candidate holds, where the default rules find")
    found = total = 0
    for id_, label, text in model_outputs():
        held = first_hold(text, setting)
        if label == "clean" and held:
            print(f"  CLEAN ANSWER FLAGGED {id_}: {held[1][:70]}")
        if label != "near-loop":
            continue
        total += 1
        found += held is not None
        exact = min((f.detected_at for f in loopbreak.scan(text)), default=None)
        where = f"at {held[0]:>6}" if held else "    --    "
        print(f"  {id_:<20} {len(text):>6} chars  candidate {where}  rules {exact}")
    print(f"  {found} of {total} near-loops")

    flagged: Counter[str] = Counter()
    with Pool(2) as pool:
        for result in pool.imap_unordered(judge, corpus(setting), chunksize=64):
            if result:
                kind, path, line = result
                flagged[kind] += 1
                print(f"  {kind}: {path}: {line}")
    hand = flagged.pop("hand-written", 0)
    print(f"wide corpus: {hand} hand-written files flagged; machine-generated: {dict(flagged)}")


if __name__ == "__main__":
    main()
