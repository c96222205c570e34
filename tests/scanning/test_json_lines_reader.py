"""``loopbreak scan`` of JSON lines reads every line as Python's ``json`` module does, though the
lines are parsed in Rust: against an oracle (``json.loads`` of each line, ``FieldPath.find``,
``loopbreak.scan`` of each text), for generated lines and for the cases a second parser could get
wrong: escapes, lone surrogates and invalid UTF-8, ``NaN``, repeated members, ``\\.`` in names,
``-1`` indexes, ``*`` over objects, nulls, values that are not text, blank lines."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import loopbreak
from loopbreak.cli import main
from loopbreak.scanning import json_lines
from loopbreak.scanning.field_path import FieldPath

LOOP = "I will check the file again. " * 30
KINDS = {bool: "a boolean", int: "a number", float: "a number", dict: "an object", list: "a list"}


def expected(raw_lines: list[bytes], field: str) -> tuple[list[tuple[Any, ...]], list[str]]:
    """What the scan of a file of ``raw_lines`` must report: (line, field, rule, start, period,
    repeats, detected_at, block) of each finding, and the error message of each line, in order."""
    path = FieldPath.parse(field)
    records: list[tuple[Any, ...]] = []
    errors: list[str] = []
    for number, raw in enumerate(io.BytesIO(b"".join(raw_lines)), start=1):
        if not raw.strip():
            continue
        try:
            document = json.loads(raw.decode("utf-8", errors="surrogateescape"))
        except json.JSONDecodeError as error:
            errors.append(f"line {number}: not JSON: {error.msg} (column {error.colno})")
            continue
        for slot in path.find(document):
            value = slot.value
            if value is not None and not isinstance(value, str):
                errors.append(f"line {number}: {slot.path} is {KINDS[type(value)]}, not text")
                continue
            for f in loopbreak.scan(value or ""):
                records.append(
                    (
                        number,
                        slot.path,
                        f.rule,
                        f.start,
                        f.period,
                        f.repeats,
                        f.detected_at,
                        f.block,
                    )
                )
    return records, errors


def scanned(
    tmp_path: Path, raw_lines: list[bytes], field: str, capsys: pytest.CaptureFixture[str]
) -> tuple[list[tuple[Any, ...]], list[str]]:
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"".join(raw_lines))
    main(["scan", "--json", "--field", field, str(path)])
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines()]
    found = [
        (
            r["line"],
            r["field"],
            r["rule"],
            r["start"],
            r["period"],
            r["repeats"],
            r["detected_at"],
            r["block"],
        )
        for r in records
    ]
    prefix = f"loopbreak scan: {path}: "
    return found, [
        line[len(prefix) :] for line in err.splitlines() if line.startswith(prefix + "line ")
    ]


def check(
    tmp_path: Path, raw_lines: list[bytes], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    want_records, want_errors = expected(raw_lines, field)
    got_records, got_errors = scanned(tmp_path, raw_lines, field, capsys)
    assert got_records == want_records
    assert got_errors == want_errors[: len(got_errors)]  # the report shows the first errors
    assert len(got_errors) == min(len(want_errors), 10)


def line(document: Any, **dumps: Any) -> bytes:
    return json.dumps(document, **dumps).encode("utf-8", errors="surrogatepass") + b"\n"


CASES = [
    # Escapes of every kind in the text, ASCII-escaped or not.
    line({"m": [{"c": 'tab\t "q" \\ \u00e9 \u4eba \U0001f600 ' + LOOP}]}),
    line({"m": [{"c": 'tab\t "q" \\ \u00e9 \u4eba \U0001f600 ' + LOOP}]}, ensure_ascii=False),
    # A lone surrogate escaped in the text (Python reads it; UTF-8 cannot hold it).
    line({"m": [{"c": LOOP + "\ud800" + LOOP}]}),
    # Invalid UTF-8 inside a text, and inside a member off the path.
    b'{"m": [{"c": "' + LOOP.encode() + b'\xff\xfe"}]}\n',
    b'{"other": "\xff", "m": [{"c": "' + LOOP.encode() + b'"}]}\n',
    # NaN and an exponent beyond a double: JSON to Python's json.
    b'{"n": NaN, "big": 1e400, "m": [{"c": "' + LOOP.encode() + b'"}]}\n',
    # A repeated member on the path: Python keeps the last.
    b'{"m": [{"c": "clean"}], "m": [{"c": "' + LOOP.encode() + b'"}]}\n',
    b'{"m": [{"c": "' + LOOP.encode() + b'", "c": "clean"}]}\n',
    # Blank lines (form feed and vertical tab count as blank), CRLF endings.
    b"\n",
    b" \t\x0c\x0b\r\n",
    line({"m": [{"c": LOOP}, {"c": None}, {"c": 7}, {"c": {"x": 1}}, {"c": [LOOP]}, {"c": True}]})[
        :-1
    ]
    + b"\r\n",
    # Not JSON, trailing data, a BOM.
    b"not json {\n",
    line({"m": []})[:-1] + b" {}\n",
    b"\xef\xbb\xbf" + line({"m": [{"c": LOOP}]}),
    # `*` over objects, names with dots and stars, deep lists.
    line({"m": {"first": {"c": LOOP}, "a.b": {"c": LOOP}, "*": {"c": "star"}}}),
    line({"m": [[{"c": LOOP}]], "n": {"0": "zero"}}),
    # The last line has no newline.
    line({"m": [{"c": "clean"}, {"c": LOOP}]})[:-1],
]


@pytest.mark.parametrize(
    "field",
    [
        "m.*.c",
        "m.-1.c",
        "m.0.c",
        "m.-6.c",
        "m.*",
        "m.first.c",
        "m.a\\.b.c",
        "m.\\*.c",
        "m.0.0.c",
        "n.0",
    ],
)
def test_every_case_reads_as_json_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str
) -> None:
    check(tmp_path, CASES, field, capsys)


def test_the_cases_reach_findings_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cases are not vacuous: they hold loops in lines Rust reads and in lines left to json,
    and errors of both kinds."""
    records, errors = expected(CASES, "m.*.c")
    # Rust reads lines 1 and 2; 3 to 7 are json's (line 8 keeps its clean repeated member).
    assert {1, 2, 3, 4, 5, 6, 7} <= {number for number, *_ in records}
    assert 8 not in {number for number, *_ in records}
    assert any("not JSON" in error for error in errors) and any(
        "not text" in error for error in errors
    )


def test_lines_are_read_in_chunks_of_whole_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks smaller than a line, and chunk ends inside lines: line numbers run on."""
    monkeypatch.setattr(json_lines, "CHUNK_BYTES", 50)
    check(tmp_path, CASES * 3, "m.*.c", capsys)


texts = st.one_of(
    st.text(max_size=30),
    st.sampled_from([LOOP, "a\nb\n" * 40, "x" * 300, "\ud800" * 3, "é人" * 200]),
)
values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), texts),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["m", "c", "a.b", "*", "0"]), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    documents=st.lists(values, min_size=1, max_size=8),
    field=st.sampled_from(["m", "m.*", "m.*.c", "m.-1", "*.c", "a\\.b.*", "\\*", "0.0", "m.-2.c"]),
    ascii_only=st.booleans(),
)
def test_generated_lines_read_as_json_reads_them(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    documents: list[Any],
    field: str,
    ascii_only: bool,
) -> None:
    raw_lines = [line(document, ensure_ascii=ascii_only) for document in documents]
    check(tmp_path, raw_lines, field, capsys)
