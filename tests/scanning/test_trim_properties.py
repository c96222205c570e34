"""``loopbreak scan --trim --out`` keeps every byte outside the loops' spans, in every format:
JSON-lines files as they come (CRLF, a byte-order mark, invalid UTF-8, NUL, lines that are not
objects, numbers of every form, no newline at the end, huge and deeply nested lines), SQLite
tables with and without columns named like the rowid, and text files."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import loopbreak
from loopbreak.cli import main

PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

BLOCKS = ["loadTools. ", "- call read_file(path='a.py')\n", "это снова ", "🙂 ok "]
NUMBERS = [
    "0", "-0", "-0.0", "1e400", "-1E-400", "1E+2", "0.1000", "2.5e-3", "NaN", "-Infinity",
    "12345678901234567890123.5", "123456789012345678901234567890",
]  # fmt: skip

prefixes = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
loops = st.builds(
    lambda prefix, block, copies: prefix + block * copies,
    prefixes,
    st.sampled_from(BLOCKS),
    st.integers(40, 120),
)
texts = st.one_of(prefixes, loops, st.just("\x00 NUL " * 3 + "loadTools. " * 60))


@dataclass(frozen=True)
class TextLine:
    """An object line: ``head`` + the text's JSON + ``tail``; ``raw_byte`` is an undecodable
    byte written inside the text's quotes."""

    head: bytes
    text: str
    raw_byte: bool
    ascii: bool
    tail: bytes

    def text_json(self) -> bytes:
        encoded = json.dumps(self.text, ensure_ascii=self.ascii).encode()
        return encoded[:1] + b"\xff" + encoded[1:] if self.raw_byte else encoded

    def data(self) -> bytes:
        return self.head + self.text_json() + self.tail

    def read_text(self) -> str:
        """The text as the scan reads it (an undecodable byte is one lone surrogate)."""
        return ("\udcff" if self.raw_byte else "") + self.text


@st.composite
def text_lines(draw: st.DrawFn) -> TextLine:
    number = draw(st.sampled_from(NUMBERS)).encode()
    off_path = draw(st.sampled_from([b'"x"', b'"\xfe\xff"', b'"\\ud800"', b"null"]))
    raw_byte, nested = draw(st.booleans()), b"[[[]], {}]"
    if draw(st.booleans()):
        # Deeper than Python's json recurses, in a line the Rust reader reads (a line it leaves
        # to json, as NaN does, is an error: "nested too deeply").
        number, off_path, raw_byte, nested = b"1.50", b'"x"', False, b"[" * 5_000 + b"]" * 5_000
    head = b'{"n": ' + number + b',  "s": ' + off_path + b', "t": '
    tail = b', "deep": ' + nested + b', "m": [' + number + b", {}]}"
    return TextLine(head, draw(texts), raw_byte, draw(st.booleans()), tail)


other_lines = st.sampled_from(
    [b"", b"   ", b"[1, 2]", b"42", b'"a string"', b"null", b"not json {", b'{"t": 7}',
     b'{"t": "\x00 raw NUL"}', b'{"no_t": "x"}', b'{"t": "clean", "t": "repeated"}']
)  # fmt: skip
Line = tuple[object, bytes]  # a TextLine or other bytes, and its ending


@st.composite
def json_lines_files(draw: st.DrawFn) -> tuple[bytes, list[Line]]:
    """A file's bytes (maybe with a byte-order mark), and its lines in order."""
    lines: list[object] = draw(st.lists(st.one_of(text_lines(), other_lines), max_size=8))
    if draw(st.booleans()):
        lines.append(TextLine(b'{"t": ', "loadTools. " * 20_000, False, True, b"}"))  # huge
    endings = [draw(st.sampled_from([b"\n", b"\r\n"])) for _ in lines]
    if draw(st.booleans()) and lines:
        endings[-1] = b""  # no newline at the end
    bom = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    body = b"".join(
        (line.data() if isinstance(line, TextLine) else line) + ending  # type: ignore[operator]
        for line, ending in zip(lines, endings)
    )
    return bom + body, list(zip(lines, endings))


def trim_out(folder: Path, name: str, data: bytes, *args: str) -> bytes:
    """The cleaned copy ``scan --trim --out`` writes of a file holding ``data`` (b"" for none:
    a JSON-lines file where no line has the field is an error, and gets none)."""
    path = folder / name
    path.write_bytes(data)
    assert main(["scan", *args, "--trim", "--out", str(folder / "out"), str(path)]) in (0, 1, 2)
    copy = folder / "out" / name
    return copy.read_bytes() if copy.exists() else b""


def has_field(line: bytes) -> bool:
    """Whether ``line`` is a JSON object with the field ``t``."""
    try:
        value = json.loads(line)
    except ValueError:
        return False
    return isinstance(value, dict) and "t" in value


def json_value_end(data: bytes, at: int) -> tuple[object, int]:
    """The JSON value at byte ``at`` of ``data`` and the byte where it ends."""
    rest = data[at:].decode("utf-8", errors="surrogateescape")
    value, end = json.JSONDecoder().raw_decode(rest)
    return value, at + len(rest[:end].encode("utf-8", errors="surrogateescape"))


@PROPERTY
@given(json_lines_files())
def test_json_lines_trim_keeps_every_byte_outside_the_texts(file: tuple[bytes, list[Line]]) -> None:
    data, lines = file
    with tempfile.TemporaryDirectory() as folder:
        copy = trim_out(Path(folder), "in.jsonl", data, "--field", "t")
    if not copy:
        # No line holds the field as JSON: a line that is not JSON (a raw NUL in a string) is
        # reported, and holds no field.
        assert not any(has_field(line) for line, _ in lines if isinstance(line, bytes))
        assert not any(isinstance(line, TextLine) for line, _ in lines)
        return
    at = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    assert copy[:at] == data[:at]
    for line, ending in lines:
        if not isinstance(line, TextLine):
            assert isinstance(line, bytes) and copy[at : at + len(line + ending)] == line + ending
            at += len(line + ending)
            continue
        read = line.read_text()
        assert copy[at : at + len(line.head)] == line.head
        at += len(line.head)
        if loopbreak.scan(read):
            value, at = json_value_end(copy, at)
            assert value == loopbreak.trim(read).text
            marker = b', "t_loopbreak": '
            assert copy[at : at + len(marker)] == marker
            note, at = json_value_end(copy, at + len(marker))
            assert note == [removal.to_dict() for removal in loopbreak.trim(read).removals]
        else:
            assert copy[at : at + len(line.text_json())] == line.text_json()
            at += len(line.text_json())
        assert copy[at : at + len(line.tail + ending)] == line.tail + ending
        at += len(line.tail + ending)
    assert at == len(copy)


rowid_schemas = st.sampled_from(
    ["body", "rowid, body", "ROWID TEXT, _rowid_, body", "id INTEGER PRIMARY KEY, body"]
)


@PROPERTY
@given(rowid_schemas, st.lists(st.one_of(texts, st.none()), min_size=1, max_size=6))
def test_sqlite_trim_keeps_every_row_and_column(schema: str, bodies: list[object]) -> None:
    fillers = [None, 1, 2, "x"]
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        path = folder / "runs.db"
        width = schema.count(",")
        with sqlite3.connect(path) as connection:
            connection.execute(f"CREATE TABLE t ({schema})")
            marks = ", ".join("?" for _ in range(width + 1))
            rows = [
                tuple(None if "PRIMARY" in schema else fillers[i % 4] for _ in range(width))
                + (body,)
                for i, body in enumerate(bodies)
            ]
            connection.executemany(f"INSERT INTO t VALUES ({marks})", rows)
            before = connection.execute("SELECT oid, * FROM t ORDER BY oid").fetchall()
        connection.close()
        trim_out(folder, "runs.db", path.read_bytes(), "--table", "t", "--column", "body")
        with sqlite3.connect(folder / "out" / "runs.db") as connection:
            after = connection.execute("SELECT oid, * FROM t ORDER BY oid").fetchall()
        connection.close()
    assert len(after) == len(before)
    for old, new in zip(before, after):
        body, columns = old[-1], len(old) - 1
        assert new[:columns] == old[:columns]  # the rowid and every other column
        if loopbreak.scan(body or ""):
            assert new[columns] == loopbreak.trim(body).text and new[columns + 1] is not None
        else:
            assert new[columns] == body and new[columns + 1 :] in ((), (None,))


@PROPERTY
@given(prefixes, texts, st.binary(max_size=20))
def test_text_trim_keeps_every_byte_before_the_loop(head: str, text: str, tail: bytes) -> None:
    data = head.encode() + b"\xff" + text.encode() + tail
    read = data.decode("utf-8", errors="surrogateescape")
    with tempfile.TemporaryDirectory() as folder:
        copy = trim_out(Path(folder), "answer.txt", data, "--format", "text")  # NUL: not binary
    expected = loopbreak.trim(read).text if loopbreak.scan(read) else read
    assert copy == expected.encode("utf-8", errors="surrogateescape")
    findings = loopbreak.scan(read)
    if findings:
        start = min(finding.start for finding in findings)
        assert copy.startswith(read[:start].encode("utf-8", errors="surrogateescape"))
