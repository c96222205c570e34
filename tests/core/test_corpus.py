"""The default rules against real text: no finding in benign text, every exact loop long enough to
judge found. Every false positive and every loop found while tuning is a case here."""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

import pytest

import loopbreak

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
STDLIB = Path(sysconfig.get_paths()["stdlib"])
BENIGN_SUFFIXES = {".py", ".txt", ".rst", ".json", ".csv", ".html"}

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not beside the repo")


def stdlib_files() -> list[Path]:
    return sorted(
        path
        for path in STDLIB.rglob("*")
        if path.suffix in BENIGN_SUFFIXES
        and "site-packages" not in path.relative_to(STDLIB).parts
        and path.is_file()
    )


def test_the_standard_library_has_no_finding() -> None:
    files = stdlib_files()
    assert len(files) > 1000, "the stdlib should hold well over a thousand text files"
    flagged = {}
    for path in files:
        findings = loopbreak.scan(path.read_text(encoding="utf-8", errors="surrogateescape"))
        if findings:
            flagged[str(path.relative_to(STDLIB))] = findings
    assert flagged == {}


def stdlib_excerpt(relative: str, needle: str, lines: int) -> str:
    """`lines` lines of a stdlib file, from the first two lines in a row that equal `needle`."""
    text = (STDLIB / relative).read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i in range(len(text) - 1) if text[i] == needle == text[i + 1])
    return "".join(text[first : first + lines])


@pytest.mark.parametrize(
    ("relative", "needle", "lines", "copies"),
    [
        # 32 identical lines of a codec table: a false positive of the first defaults.
        ("encodings/iso8859_8.py", "    '\\ufffe'\n", 40, 32),
        # 26 indented `text/plain` lines in an email test.
        ("test/test_email/test_email.py", "        text/plain\n", 30, 26),
    ],
)
def test_benign_repeated_lines_from_the_stdlib(relative: str, needle: str, lines: int, copies: int) -> None:
    excerpt = stdlib_excerpt(relative, needle, lines)
    assert excerpt.count(needle) >= copies
    assert loopbreak.scan(excerpt) == []
    # The same line a few dozen more times is a loop.
    assert loopbreak.scan(excerpt + needle * 60)


# Excerpts of ../shared/corpus/loops that the default rules find, by the block they repeat. The
# others are too short to judge (fewer copies than benign text holds) or not exact (drift,
# counters, near-variants): see SOURCES.md there.
FOUND_LOOPS = {
    "01.txt": "人民法院 ",
    "04.txt": "ny",
    "09.txt": "ISIS-",
    "11.txt": "it ",
    "19.txt": "      cssAddon: true,",
    "24.txt": "Other; ",
    "25.txt": "the, ",
}
TOO_SHORT_OR_INEXACT = {
    "02.txt": "2.5 copies of a 7-line block",
    "03.txt": "12 lines of 'Yes,'",
    "05.txt": "5 copies of a 40-unit sentence",
    "06.txt": "2 copies of a 300-unit line",
    "07.txt": "5 copies of 'czapki, '",
    "08.txt": "3 copies of one line",
    "10.txt": "drifting",
    "12.txt": "drifting",
    "13.txt": "incrementing counter",
    "14.txt": "drifting short period",
    "15.txt": "1.5 copies of a paragraph pair",
    "16.txt": "7 copies of a 2-line cycle",
    "17.txt": "3 copies of a 330-unit block",
    "18.txt": "5 copies of one line",
    "20.txt": "drifting alternation",
    "21.txt": "fuzzy",
    "22.txt": "25 copies of an ASCII-art line (benign wireframes hold as many)",
    "23.txt": "100 copies of 'b ' (200 units, below benign one-letter runs)",
    "26.txt": "fuzzy",
}


@needs_corpus
def test_every_loop_excerpt_is_accounted_for() -> None:
    names = {path.name for path in (CORPUS / "loops").glob("*.txt")}
    assert names == set(FOUND_LOOPS) | set(TOO_SHORT_OR_INEXACT)


@needs_corpus
@pytest.mark.parametrize("name", sorted(FOUND_LOOPS))
def test_real_loop_excerpts_are_found(name: str) -> None:
    text = (CORPUS / "loops" / name).read_text(encoding="utf-8")
    findings = loopbreak.scan(text)
    assert findings, name
    first = findings[0]
    rotations = {FOUND_LOOPS[name][i:] + FOUND_LOOPS[name][:i] for i in range(len(FOUND_LOOPS[name]))}
    assert first.block in rotations or FOUND_LOOPS[name] in first.block
    # The evidence is in the text, at the offsets reported.
    if first.rule != "identical_lines":
        assert text[first.start : first.start + first.period] == first.block


@needs_corpus
@pytest.mark.parametrize("name", sorted(TOO_SHORT_OR_INEXACT))
def test_short_or_inexact_excerpts_are_not_found(name: str) -> None:
    text = (CORPUS / "loops" / name).read_text(encoding="utf-8")
    assert loopbreak.scan(text) == [], TOO_SHORT_OR_INEXACT[name]


def model_outputs() -> list[dict[str, object]]:
    lines = (CORPUS / "model" / "outputs.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@needs_corpus
def test_smollm2_outputs_loops_found_clean_untouched() -> None:
    outputs = model_outputs()
    missed = [o["id"] for o in outputs if o["label"] == "loop" and not loopbreak.scan(str(o["text"]))]
    flagged = [o["id"] for o in outputs if o["label"] == "clean" and loopbreak.scan(str(o["text"]))]
    assert (missed, flagged) == ([], [])


@needs_corpus
def test_smollm2_loops_are_stopped_soon_after_they_start() -> None:
    for output in model_outputs():
        if output["label"] != "loop":
            continue
        text, start = str(output["text"]), int(str(output["start"]))
        first = loopbreak.scan(text)[0]
        # Found within what its block requires of a loop that starts where the label says.
        assert first.detected_at - start <= loopbreak.Rules().required_span(text[start : start + int(str(output["period"]))])
