"""Loops inside one line: two readings of the numbers in a line, measured on the hand-written part
of the wide benign corpus and on every labelled model output, to say whether either tells a loop
from what people write.

    python benches/inline_numbers.py        # ~30 s

A *number* is a maximal run of ASCII digits that touches no ASCII letter or underscore (as the
line rules read numbers: `x1`, `uk_10` hold none). Per line:

- **counting**: the longest run of numbers of at most three digits (`MAX_DIGITS` of the template
  rule) that each step by one from the number before, with the same text between each pair
  (`54.55.56.`, `1, 2, 3`);
- **cycling**: the longest run of the texts between numbers in which each text equals the one
  `p` before it, for the smallest `p` of 1-4, and the `p` texts of the cycle hold at least two
  words (`'timestamp': [N.N, N.N]}, {'sentence': 'Take a look at the hood.', ` entry after
  entry). Numbers of any width are masked here: a float's digits are its own.

The largest of each over the hand-written files is what a rule's threshold would have to clear;
the loops' figures are what it would have to stay below. Last, the share of the clean text of
benches/instructions.py in lines long enough to hold a count of 64 (what reading them would cost).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import corpus

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support import benign  # noqa: E402
from support.issue_excerpts import EXCERPTS, labels  # noqa: E402
from support.model_outputs import load  # noqa: E402
from support.shared_corpus import CORPUS, DEVELOPMENT_SET  # noqa: E402

NUMBER = re.compile(r"(?<![A-Za-z_0-9])[0-9]+(?![A-Za-z_])")
WORD = re.compile(r"[^\W\d_]{2,}")
COUNTING_DIGITS = 3
LONGEST_CYCLE = 4
CYCLE_WORDS = 2
SHORTEST_LINE = 64  # a shorter line holds no run worth measuring
COUNT_LINE = 128  # 64 numbers, each with a unit after it


def counting(line: str, numbers: list[re.Match[str]]) -> int:
    """The most numbers in a row that count on by one with one separator."""
    best = run = min(len(numbers), 1)
    for i in range(1, len(numbers)):
        before, this = numbers[i - 1], numbers[i]
        steps = (
            len(before.group()) <= COUNTING_DIGITS
            and len(this.group()) <= COUNTING_DIGITS
            and int(this.group()) == int(before.group()) + 1
        )
        same_separator = run == 1 or (
            line[before.end() : this.start()] == line[numbers[i - 2].end() : before.start()]
        )
        run = run + 1 if steps and same_separator else 1
        best = max(best, run)
    return best


def cycling(line: str, numbers: list[re.Match[str]]) -> int:
    """The most texts between numbers in a row that repeat a cycle of words."""
    texts = [line[a.end() : b.start()] for a, b in zip(numbers, numbers[1:])]
    best = 0
    for p in range(1, LONGEST_CYCLE + 1):
        run = 0
        for i in range(p, len(texts)):
            run = run + 1 if texts[i] == texts[i - p] else 0
            if (
                run
                and sum(len(WORD.findall(text)) for text in texts[i - p + 1 : i + 1]) >= CYCLE_WORDS
            ):
                best = max(best, run + p)
    return best


def readings(text: str) -> tuple[int, int]:
    """The longest counting run and cycling run of any line of ``text``."""
    most = (0, 0)
    for line in text.split("\n"):
        if len(line) >= SHORTEST_LINE and any(c in "0123456789" for c in line):
            numbers = list(NUMBER.finditer(line))
            most = (max(most[0], counting(line, numbers)), max(most[1], cycling(line, numbers)))
    return most


def model_texts() -> dict[str, tuple[str, str]]:
    """Every labelled model output, issue excerpt and loop of ../shared/corpus: (label, text) by
    name."""
    texts = {}
    for name in (
        "gemma3_270m_outputs.jsonl",
        "gemma3_270m_long_outputs.jsonl",
        "gemma3_270m_server_outputs.jsonl",
    ):
        for output in load(name):
            texts[str(output["id"])] = (str(output["label"]), str(output["text"]))
    if DEVELOPMENT_SET.is_file():
        for line in DEVELOPMENT_SET.read_text(encoding="utf-8").splitlines():
            output = json.loads(line)
            texts[str(output["id"])] = (str(output["label"]), str(output["text"]))
    for name, label in labels().items():
        texts[name] = (label.split()[0], (EXCERPTS / name).read_text(encoding="utf-8"))
    for path in sorted((CORPUS / "loops").glob("*.txt")):
        texts[f"loops/{path.name}"] = ("loop", path.read_text(encoding="utf-8"))
    return texts


def main() -> None:
    files = [(readings(text), path) for path, text in benign.hand_written()]
    print(f"hand-written files: {len(files)}")
    for k, name in enumerate(("counting", "cycling")):
        print(f"\n{name}, largest in hand-written files:")
        for most, path in sorted(files, key=lambda f: -f[0][k])[:5]:
            print(f"  {most[k]:5d}  {path}")
    print("\nmodel outputs with a counting run of 8+ or a cycling run of 6+:")
    for name, (label, text) in model_texts().items():
        count, cycle = readings(text)
        if count >= 8 or cycle >= 6:
            print(f"  {name:24s} {label:10s} counting {count:4d}  cycling {cycle:4d}")
    clean = corpus.clean_text(8_000_000)  # as benches/instructions.py reads it
    long_lines = sum(len(line) for line in clean.split("\n") if len(line) >= COUNT_LINE)
    print(f"\nclean text in lines of {COUNT_LINE}+ units: {long_lines / len(clean):.1%}")


if __name__ == "__main__":
    main()
