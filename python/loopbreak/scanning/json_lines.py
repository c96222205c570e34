"""JSON lines: each value that ``--field`` reaches in a line is one row (a line of a chat with
``messages.*.content`` gives one row per message). Lines are read and scanned in chunks.

A line that is not JSON, or a value that is not text, is an error: reported with its line
number and counted, and the scan goes on. ``null`` scans as an empty text. In the cleaned copy
a trimmed line has its text replaced and the removals beside it (``content_loopbreak`` beside
``content``, when the text sits in an object); every other byte is copied as it was.

The file is read and scanned in Rust (``loopbreak._core.JsonLinesScan``): one thread reads the
next chunk of lines while the current one is parsed and scanned on all cores (only the values on
the field path are parsed) and the one before it is reported here, so only what is reported
becomes a Python object. A UTF-8 byte-order mark at the start of the file is not part of line 1,
and stays in the cleaned copy. A line nested too deeply for ``json`` is that line's error. The lines that reader leaves to Python (not JSON, or JSON it might read
otherwise than Python's ``json`` module: ``NaN``, lone surrogates, invalid UTF-8 inside a text,
a repeated member on the path) are read here with ``json``, so every line reads as ``json``
reads it and errors are ``json``'s own. A trimmed text is spliced into its line by its field
path (``loopbreak.scanning.json_splice``): the rest of the line is kept as it was."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import IO, Any, Callable, Optional, Union, cast

from loopbreak._batch import scan_many
from loopbreak._core import Finding, JsonLinesScan, Rules
from loopbreak.errors import ScanError
from loopbreak.scanning.atomic import cleaned_copy
from loopbreak.scanning.field_path import FieldPath
from loopbreak.scanning.findings import BatchFindings, note, note_name, scanned_batch
from loopbreak.scanning.inputs import STDIN, InputFile
from loopbreak.scanning.json_splice import encoded, member_span, value_span
from loopbreak.scanning.readers import ReaderOptions
from loopbreak.scanning.report import Report

# A chunk is the whole lines in this many bytes (or one longer line): enough texts to keep every
# core busy, little enough memory for files of any size (a few chunks are in flight at once).
CHUNK_BYTES = 4 << 20


@dataclass(frozen=True)
class _Found:
    """A text with findings: its line (from 0 in the chunk), its index among the values the path
    reached in that line, the line's bytes in the chunk, its field path, text and findings."""

    line: int
    slot: int
    start: int
    end: int
    path: str
    text: str
    findings: Sequence[Finding]


def scan(
    file: InputFile,
    options: ReaderOptions,
    rules: Rules,
    report: Report,
    advance: Callable[[float], None],
) -> None:
    field = options.field
    if field is None:
        raise ScanError(
            "JSON lines need --field, the path to the text in each line (e.g. messages.*.content)"
        )
    path = str(file.path)
    segments = [
        None if segment is None else (segment, _list_index(segment)) for segment in field.segments
    ]
    first_document: Optional[tuple[int, Any]] = None  # (line number, document), for the error below
    reached = False
    line_number = 1
    done_bytes = 0
    noted_utf8 = False
    with ExitStack() as stack:
        stream: IO[bytes] = (
            sys.stdin.buffer if file.path == STDIN else stack.enter_context(file.path.open("rb"))
        )
        pending = stack.enter_context(cleaned_copy(file)) if file.dest is not None else None
        out = stack.enter_context(pending.path.open("wb")) if pending is not None else None
        for read in JsonLinesScan(_descriptor(stream), segments, CHUNK_BYTES, rules):
            # The chunk's bytes cross to Python only for what is done with them here.
            wants_bytes = bool(read.unread) or out is not None or first_document is None
            chunk = read.data if wants_bytes else b""
            errors = [(line, f"{where} is {kind}, not text") for line, where, kind in read.not_text]
            found = [_Found(*row) for row in read.found]
            if not noted_utf8 and (undecodable := _not_utf8(chunk, read.unread)) is not None:
                line, byte = undecodable
                report.not_utf8(path, f"line {line_number + line}, byte {byte}")
                noted_utf8 = True
            documents, rows, reached_here = _read_with_json(
                chunk, read.unread, field, rules, errors, found
            )
            for line, message in sorted(
                errors, key=lambda error: error[0]
            ):  # stable: in line order
                report.error(path, f"line {line_number + line}: {message}")
            found.sort(key=lambda row: (row.line, row.slot))
            reached = reached or bool(read.rows or read.not_text or reached_here)
            if first_document is None:
                first = _first_document(chunk, read.first_read, documents)
                first_document = None if first is None else (line_number + first[0], first[1])
            batch = scanned_batch([(row.text, row.findings) for row in found], rules)
            report.scanned(read.rows + rows)
            report.add(
                batch,
                lambda row: {
                    "path": path,
                    "line": line_number + found[row].line,
                    "field": found[row].path,
                },
            )
            if out is not None and pending is not None:
                pending.wanted = pending.wanted or bool(found)
                out.write(_trimmed_copy(chunk, found, batch))
            line_number += read.lines
            done_bytes += read.size
            advance(done_bytes / file.size if file.size else 0.0)
        if first_document is not None and not reached:
            # Raised inside the `with`: a field that matches nothing leaves no copy behind.
            number, document = first_document
            raise ScanError(
                f"no line has a value at {field.text!r} (line {number} {_members(document)})"
            )


def _list_index(segment: str) -> Optional[int]:
    """The list index a segment names (as ``FieldPath`` reads it), if the Rust reader can hold
    it: an index beyond 64 bits is out of range of every list, as no index is."""
    try:
        index = int(segment)
    except ValueError:
        return None
    return index if -(2**63) <= index < 2**63 else None


def _descriptor(stream: IO[bytes]) -> Union[int, IO[bytes]]:
    """The stream's file descriptor, which the Rust reader reads on its own thread; a stream
    without one (in memory) is read through its ``read`` method."""
    try:
        return stream.fileno()
    except (AttributeError, OSError):  # io.UnsupportedOperation is an OSError
        return stream


def _not_utf8(chunk: bytes, unread: list[tuple[int, int, int]]) -> Optional[tuple[int, int]]:
    """The first line (from 0 in the chunk) that is not valid UTF-8, and its first undecodable
    byte (from 0 in the line). A value on the path holding invalid UTF-8 leaves its line to
    ``json``, so only those lines are decoded again here; bytes outside the values read are
    copied as they are, never shown, and not noted."""
    for line, start, end in unread:
        try:
            chunk[start:end].decode("utf-8")
        except UnicodeDecodeError as error:
            return line, error.start
    return None


def _read_with_json(
    chunk: bytes,
    unread: list[tuple[int, int, int]],
    field: FieldPath,
    rules: Rules,
    errors: list[tuple[int, str]],
    found: list[_Found],
) -> tuple[dict[int, Any], int, int]:
    """Reads the lines the Rust reader left to ``json``: adds their errors and texts with findings
    to ``errors`` and ``found``; returns their documents by line, the rows (texts and nulls)
    they hold, and how many values the path reached in them."""
    documents: dict[int, Any] = {}
    texts: list[str] = []
    places: list[tuple[int, int, int, int, str]] = []
    reached = 0
    for line, start, end in unread:
        try:
            document = json.loads(chunk[start:end].decode("utf-8", errors="surrogateescape"))
        except json.JSONDecodeError as error:
            errors.append((line, f"not JSON: {error.msg} (column {error.colno})"))
            continue
        except RecursionError:
            errors.append((line, "nested too deeply"))
            continue
        documents[line] = document
        for slot_index, slot in enumerate(field.find(document)):
            reached += 1
            value = slot.value
            if value is None or isinstance(value, str):
                texts.append(value or "")
                places.append((line, slot_index, start, end, slot.path))
            else:
                errors.append((line, f"{slot.path} is {_kind(value)}, not text"))
    for place, text, findings in zip(places, texts, scan_many(texts, rules)):
        if findings:
            found.append(_Found(*place, text, findings))
    return documents, len(texts), reached


def _first_document(
    chunk: bytes, first_read: Optional[tuple[int, int, int]], documents: dict[int, Any]
) -> Optional[tuple[int, Any]]:
    """The first line of the chunk that is JSON, and its document."""
    first_json = min(documents, default=None)
    if first_read is not None and (first_json is None or first_read[0] < first_json):
        line, start, end = first_read
        try:
            return line, json.loads(chunk[start:end].decode("utf-8", errors="surrogateescape"))
        except RecursionError:  # read in Rust, too deep for json: another line is named
            pass
    return None if first_json is None else (first_json, documents[first_json])


def _trimmed_copy(chunk: bytes, found: list[_Found], batch: BatchFindings) -> bytes:
    """The chunk with each trimmed text spliced into its line: only the text's span is replaced
    (by the trimmed text) and its removals added beside it (a member after the text, or in
    place of that member's old value); every other byte is copied as it was."""
    parts: list[bytes] = []
    copied = 0  # bytes of the chunk written so far
    rows_by_line: dict[int, list[int]] = {}
    for row, text in enumerate(found):
        rows_by_line.setdefault(text.line, []).append(row)
    for rows in rows_by_line.values():
        start, end = found[rows[0]].start, found[rows[0]].end
        raw = chunk[start:end].decode("utf-8", errors="surrogateescape")
        splices: list[tuple[int, int, str]] = []
        for row in rows:
            keys, trimmed = _keys(found[row].path), batch.trimmed[row]
            text_start, text_end = value_span(raw, keys)
            splices.append((text_start, text_end, encoded(trimmed.text)))
            name, removals = note_name(keys[-1]), encoded(note(trimmed))
            container = value_span(raw, keys[:-1])
            if raw[container[0]] == "{":
                member = member_span(raw, container, name)
                if member is None:
                    splices.append((text_end, text_end, f", {encoded(name)}: {removals}"))
                else:
                    splices.append((*member, removals))
        # From the end of the line back, so each span is where it was found.
        for splice_start, splice_end, replacement in sorted(splices, reverse=True):
            raw = raw[:splice_start] + replacement + raw[splice_end:]
        parts += [chunk[copied:start], raw.encode("utf-8", errors="surrogateescape")]
        copied = end
    parts.append(chunk[copied:])
    return b"".join(parts)


def _keys(path: str) -> list[str]:
    """The segments of a concrete field path (``messages.3.content``): names and indexes."""
    segments = FieldPath.parse(path).segments
    assert None not in segments  # a concrete path names each member and item, it has no *
    return cast(list[str], list(segments))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an object" if isinstance(value, dict) else "a list"


def _members(document: Any) -> str:
    if isinstance(document, dict):
        return f"has members {', '.join(document)}" if document else "is an empty object"
    return f"is {_kind(document)}"
