"""The baseline must be the rules read literally, or the comparison says nothing: its fast periodic
search is checked against a regex that states the rule directly (but takes ~10 ms a window)."""

from __future__ import annotations

import re

import baseline
from hypothesis import given, settings
from hypothesis import strategies as st

LITERAL = re.compile(rf"(.{{1,{baseline.MAX_PERIOD}}}?)\1{{{baseline.MIN_REPEATS - 1}}}", re.DOTALL)


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Small-alphabet noise with blocks repeated just under, at and over the threshold."""
    alphabet = draw(st.sampled_from(["ab", "abc", "a b\n", "xy z"]))
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            block = draw(st.text(alphabet, min_size=1, max_size=40))
            copies = draw(st.integers(baseline.MIN_REPEATS - 3, baseline.MIN_REPEATS + 1))
            parts.append(block * copies + block[: draw(st.integers(0, len(block)))])
        else:
            parts.append(draw(st.text(alphabet, max_size=60)))
    return "".join(parts)[: baseline.WINDOW]


@settings(max_examples=300, deadline=None)
@given(texts())
def test_periodic_search_is_the_literal_rule(window: str) -> None:
    block = baseline.check(window)
    if block is None or block[0] == "periodic_run":
        assert (block is not None) == (LITERAL.search(window) is not None)


def test_thresholds() -> None:
    assert baseline.check("loadTools." * 20) == ("periodic_run", "loadTools.")
    assert baseline.check("loadTools." * 19) is None
    # A line longer than MAX_PERIOD, so only the lines rule can see its copies.
    line = " ".join(map(str, range(60)))
    assert baseline.check((line + "\n") * 25) == ("identical_lines", line)
    assert baseline.check((line + "\n") * 24) is None
    assert baseline.check((line + "\n\n") * 25) is None  # read literally, blank lines break it


def test_checks_every_check_every_chars() -> None:
    detector = baseline.BaselineDetector()
    loop = "loadTools." * baseline.CHECK_EVERY
    assert detector.feed(loop[: baseline.CHECK_EVERY - 1]) is None
    finding = detector.feed(loop[baseline.CHECK_EVERY - 1 : baseline.CHECK_EVERY])
    assert finding is not None and finding.detected_at == baseline.CHECK_EVERY
    assert len(baseline.scan("loadTools." * 30)) == 1  # the end of a stream is checked too
