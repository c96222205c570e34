"""Token ids, many streams per step, many texts per call: the same findings as the text API."""

from __future__ import annotations

import array
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopbreak

SMALL = loopbreak.Rules(
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
    min_lines=3,
    code_min_lines=4,
)


@st.composite
def loopy_texts(draw: st.DrawFn) -> str:
    """Noise and loops of random blocks, over a small alphabet, so the rules are reached often."""
    alphabet = draw(st.sampled_from(["ab", "ab \n", "a-\n ", "xé 人\n"]))
    noise = st.text(alphabet, max_size=30)
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        parts.append(draw(noise))
        parts.append(draw(st.text(alphabet, min_size=1, max_size=12)) * draw(st.integers(0, 14)))
    return "".join(parts)


def as_ids(text: str) -> list[int]:
    return [ord(ch) for ch in text]


def same(
    text_findings: list[loopbreak.Finding], token_findings: list[loopbreak.TokenFinding]
) -> bool:
    # Where each rule first held: streaming and offline findings agree on it.
    def key(f: loopbreak.Finding | loopbreak.TokenFinding) -> tuple[str, int, int, int]:
        return (f.rule, f.period, f.start, f.detected_at)

    return [key(f) for f in text_findings] == [key(f) for f in token_findings] and all(
        as_ids(t.block) == k.block for t, k in zip(text_findings, token_findings)
    )


@settings(max_examples=200, deadline=None)
@given(loopy_texts(), st.sampled_from(["list", "uint32", "int64"]))
def test_token_detector_finds_what_scan_finds_on_code_points(text: str, form: str) -> None:
    ids = as_ids(text)
    tokens: list[int] | np.ndarray = ids if form == "list" else np.array(ids, dtype=form)
    detector = loopbreak.TokenDetector(SMALL)
    detector.feed(tokens)
    assert same(loopbreak.scan(text, SMALL), detector.findings)
    assert detector.units_seen == len(ids)


@settings(max_examples=60, deadline=None)
@given(st.lists(loopy_texts(), min_size=1, max_size=6))
def test_token_streams_step_like_separate_detectors(texts: list[str]) -> None:
    streams = loopbreak.TokenStreams(SMALL)
    slots = [streams.add() for _ in texts]
    fired_at: dict[int, list[int]] = {slot: [] for slot in slots}
    for i in range(max(len(t) for t in texts)):
        live = [(slot, ord(t[i])) for slot, t in zip(slots, texts) if i < len(t)]
        step_slots = np.array([slot for slot, _ in live], dtype=np.int64)
        step_ids = np.array([token for _, token in live], dtype=np.uint32)
        for slot in streams.step(step_slots, step_ids):
            fired_at[slot].append(i + 1)
    for slot, text in zip(slots, texts):
        expected = loopbreak.scan(text, SMALL)
        assert fired_at[slot] == [f.detected_at for f in expected]
        first = streams.finding(slot)
        assert same(expected[:1], [first] if first else [])
        assert streams.units_seen(slot) == len(text)


def test_token_streams_slots_come_and_go() -> None:
    streams = loopbreak.TokenStreams()
    a, b = streams.add(), streams.add()
    streams.remove(a)
    assert len(streams) == 1
    with pytest.raises(ValueError, match="no stream in slot"):
        streams.step([a, b], [1, 2])
    assert streams.units_seen(b) == 0, "a failed step feeds nothing"
    assert streams.add() == a
    with pytest.raises(ValueError, match="differ in length"):
        streams.step([a, b], [1])
    with pytest.raises(ValueError, match="no stream in slot"):
        streams.remove(99)


@pytest.mark.parametrize(
    ("tokens", "error", "message"),
    [
        (np.zeros(4, dtype=np.float64), TypeError, "integers"),
        (np.zeros((2, 2), dtype=np.int64), ValueError, "1-D"),
        (np.array([-1], dtype=np.int64), ValueError, "0..2\\*\\*32"),
        ([2**32], ValueError, "0..2\\*\\*32"),
        (["a"], TypeError, "int"),
        ("abc", TypeError, "list of int"),
        (None, TypeError, "list of int"),
    ],
)
def test_token_input_errors(tokens: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        loopbreak.TokenDetector().feed(tokens)


def test_token_buffers_of_other_integer_types() -> None:
    ids = [7, 8, 9] * 300
    rules = loopbreak.Rules.for_tokens()
    expected = loopbreak.TokenDetector(rules).feed(ids)
    assert expected is not None
    for tokens in (
        array.array("H", ids),
        np.array(ids, dtype=np.int32),
        np.array(ids, dtype=np.uint64),
    ):
        assert loopbreak.TokenDetector(rules).feed(tokens) == expected


@settings(max_examples=50, deadline=None)
@given(st.lists(loopy_texts(), max_size=12), st.sampled_from([None, 1, 2]))
def test_scan_many_and_columns_match_scan(texts: list[str], threads: int | None) -> None:
    expected = [loopbreak.scan(t, SMALL) for t in texts]
    assert loopbreak.scan_many(texts, SMALL, threads) == expected
    columns = loopbreak.scan_columns(texts, SMALL, threads)
    flat = [(row, f) for row, findings in enumerate(expected) for f in findings]
    assert columns["row"].tolist() == [row for row, _ in flat]
    assert [loopbreak.RULE_NAMES[r] for r in columns["rule"]] == [f.rule for _, f in flat]
    for name in ("period", "start", "repeats", "detected_at"):
        assert columns[name].tolist() == [getattr(f, name) for _, f in flat]
        assert columns[name].dtype == np.int64


def test_scan_many_arrow_columns_match_lists() -> None:
    pa = pytest.importorskip("pyarrow")
    texts = ["loadTools. " * 40, "clean", "Привет " * 30, "", "ab" * 300, "x"]
    expected = [loopbreak.scan(t) for t in texts]
    whole = pa.array(texts)
    for column in (
        whole,
        pa.array(texts, type=pa.large_string()),
        whole.slice(2),
        pa.chunked_array([texts[:3], texts[3:]]),
    ):
        offset = len(texts) - len(column)
        assert loopbreak.scan_many(column) == expected[offset:]
        columns = loopbreak.scan_columns(column, threads=2)
        rows = [row for row, findings in enumerate(expected[offset:]) for _ in findings]
        assert columns["row"].tolist() == rows
    with pytest.raises(TypeError, match="string or large_string"):
        loopbreak.scan_many(pa.array([1, 2]))


def test_scan_many_errors() -> None:
    with pytest.raises(TypeError, match="each text must be str"):
        loopbreak.scan_many(["ok", b"bytes"])
    with pytest.raises(ValueError, match="threads must be at least 1"):
        loopbreak.scan_many(["ok"], threads=0)


def test_findings_are_hashable_values() -> None:
    text_findings = {loopbreak.scan("ab" * 100)[0], loopbreak.scan("ab" * 100)[0]}
    assert len(text_findings) == 1
    rules = loopbreak.Rules.for_tokens()
    token_finding = loopbreak.TokenDetector(rules).feed([1, 2, 3] * 200)
    assert token_finding is not None and hash(token_finding) == hash(
        loopbreak.TokenDetector(rules).feed([1, 2, 3] * 200)
    )


# --- Arrow columns: nulls have no text, and a row is read from the buffers ---------------------


def null_row_over_loop_bytes() -> Any:
    """Three rows over one buffer of loop bytes, the middle one null (validity 0b101): its
    offsets point at loop bytes, but a null has no text."""
    import pyarrow as pa

    loop = ("ab" * 400).encode()
    offsets = np.array([0, 800, 1600, 2400], dtype=np.int32).tobytes()
    buffers = [pa.py_buffer(bytes([0b101])), pa.py_buffer(offsets), pa.py_buffer(loop * 3)]
    return pa.Array.from_buffers(pa.string(), 3, buffers, null_count=1)


def test_a_null_arrow_row_has_no_findings_whatever_its_offsets_span() -> None:
    column = null_row_over_loop_bytes()
    assert column.null_count == 1 and column[1].as_py() is None
    assert loopbreak.scan_columns(column)["row"].tolist() == [0, 2]
    assert [len(findings) for findings in loopbreak.scan_many(column)] == [1, 0, 1]


def test_an_arrow_column_is_scanned_from_its_buffers_like_a_list() -> None:
    import pyarrow as pa

    texts = ["clean", "ab" * 300, None, "loadTools." * 40]
    as_list = loopbreak.scan_many([text or "" for text in texts])
    for kind in (pa.string(), pa.large_string()):
        column = pa.chunked_array([pa.array(texts[:2], kind), pa.array(texts[2:], kind)])
        assert loopbreak.scan_many(column) == as_list
        assert loopbreak.scan_many(column.chunk(1).slice(1)) == as_list[3:]


def test_a_tuple_of_texts_is_a_sequence_like_a_list() -> None:
    texts = ("clean", "ab" * 300)
    assert loopbreak.scan_many(texts) == loopbreak.scan_many(list(texts))
    assert loopbreak.scan_columns(texts)["row"].tolist() == [1]
