"""The registry of ``loopbreak scan``'s formats: each reader's module answers the protocol, a
file is told by the registry's magic bytes and names, and an option goes to the formats that
take it."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from loopbreak.scanning.field_path import FieldPath
from loopbreak.scanning.readers import (
    BINARY,
    DEFAULT_FORMAT,
    OPTIONS,
    READERS,
    ReaderOptions,
    detect_format,
    misplaced_option,
)
from support.transcripts import texts, write_parquet, write_sqlite


@pytest.mark.parametrize("format", list(READERS))
def test_each_reader_module_scans_by_the_protocol(format: str) -> None:
    reader = READERS[format]
    parameters = list(inspect.signature(reader.load().scan).parameters)
    assert parameters == ["file", "options", "rules", "report", "advance"]
    assert set(reader.options) <= {option.name for option in OPTIONS}


def test_a_file_is_told_by_its_bytes_then_its_name(tmp_path: Path) -> None:
    write_parquet(tmp_path / "table.jsonl", texts(10, 5))  # the bytes win over the name
    write_sqlite(tmp_path / "runs.txt", texts(10, 5))
    (tmp_path / "chats.NDJSON").write_text('{"text": "hi"}\n')
    (tmp_path / "notes").write_text("plain text")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert [
        detect_format(tmp_path / name)
        for name in ("table.jsonl", "runs.txt", "chats.NDJSON", "notes", "image.png")
    ] == ["parquet", "sqlite", "jsonl", DEFAULT_FORMAT, BINARY]


def test_an_option_goes_to_the_formats_that_take_it() -> None:
    field = ReaderOptions(field=FieldPath.parse("text"))
    assert misplaced_option(field, ["text", "jsonl"], "-", detected=True) == ""
    assert misplaced_option(field, ["text"], "a.txt is read as text", detected=False) == (
        "--field reads JSON lines, and a.txt is read as text"
    )
    column = ReaderOptions(column="body")
    assert misplaced_option(column, ["sqlite"], "-", detected=True) == ""
    # Told by their bytes, Parquet and SQLite files are what they are: no --format to suggest.
    assert misplaced_option(column, ["jsonl"], "x.jsonl is read as JSON lines", detected=True) == (
        "--column reads Parquet and SQLite, and x.jsonl is read as JSON lines"
    )
