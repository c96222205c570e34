"""Model text quoted in public issue threads (tests/data/issue_excerpts, SOURCES.md says where
each piece is from and what it shows). The clean pieces are hard negatives: loopy-looking text
that is no loop (a reasoning trace that re-checks a point and moves on, parallel bullets, JSON
rows with the same keys, letter-by-letter lines), so no rule may find anything in them. The
exact loops long enough to judge are found by the rule that fits them. The near-loops (paraphrase
and drift cycles) are pieces of loops that ran for thousands of tokens; most are shorter than
any rule needs and are not asserted on."""

from __future__ import annotations

import pytest

import loopbreak
from support.issue_excerpts import EXCERPTS, labels

LABELS = labels()
CLEAN = sorted(name for name, label in LABELS.items() if label.startswith("clean"))

# The exact loops of the set long enough for a rule, with the rule that finds each first.
FOUND = {
    "07.txt": "long_block",  # a 9-tag list cycling, line breaks at two alternating places
    "12.txt": "periodic_run",  # "Wait, I'll output ..." / "Okay, I'll output ..." two-line cycle
    "13.txt": "periodic_run",  # an exact two-paragraph cycle
    "23.txt": "long_block",  # an exact four-line cycle
}


def test_every_excerpt_has_a_label() -> None:
    files = sorted(path.name for path in EXCERPTS.glob("*.txt"))
    assert files == sorted(LABELS)
    assert {label.split()[0] for label in LABELS.values()} == {"clean", "loop", "near-loop"}
    assert len(CLEAN) == 14


@pytest.mark.parametrize("name", CLEAN)
@pytest.mark.parametrize("preset", ["default", "conservative"])
def test_a_clean_excerpt_has_no_finding(name: str, preset: str) -> None:
    text = (EXCERPTS / name).read_text(encoding="utf-8")
    rules = loopbreak.Rules() if preset == "default" else loopbreak.Rules.conservative()
    assert loopbreak.scan(text, rules) == []


# The near-loops the default rules find, by the rule that finds each first; the others are
# pieces shorter than any rule needs, or copies alike in no way a rule reads (paraphrase, drift),
# and the set is exact.
NEAR_LOOPS_FOUND = {
    "06.txt": "template_lines",  # timestamped log lines whose sentence comes back
    "12.txt": "periodic_run",  # the two-line cycle above, exact once it settles
    "32.txt": "template_lines",  # `N. Alpacas are from South America.` counting on
}


def test_the_near_loops_found_are_the_named_ones() -> None:
    found = {}
    for name, label in LABELS.items():
        if label.startswith("near-loop"):
            findings = loopbreak.scan((EXCERPTS / name).read_text(encoding="utf-8"))
            if findings:
                found[name] = findings[0].rule
    assert found == NEAR_LOOPS_FOUND


@pytest.mark.parametrize("name", sorted(FOUND))
def test_an_exact_loop_excerpt_is_found_by_its_rule(name: str) -> None:
    text = (EXCERPTS / name).read_text(encoding="utf-8")
    findings = loopbreak.scan(text)
    assert [finding.rule for finding in findings][:1] == [FOUND[name]]
    # The guard stops a stream of it where the scan says the rule first held.
    detector = loopbreak.Detector()
    held = next(
        (found for k in range(0, len(text), 7) if (found := detector.feed(text[k : k + 7]))),
        None,
    )
    assert held is not None and held.detected_at == findings[0].detected_at
