"""JSON lines: each value that ``--field`` reaches in a line is one row (a line of a chat with
``messages.*.content`` gives one row per message). Lines are read and scanned in chunks.

A line that is not JSON, or a value that is not text, is an error: reported with its line
number and counted, and the scan goes on. ``null`` scans as an empty text. In the cleaned copy
a trimmed line is written anew, with the removals beside the text (``content_loopbreak`` beside
``content``, when the text sits in an object); every other line is copied byte for byte."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from typing import IO, Any, Callable, Iterator, Optional

from loopbreak.scanning.atomic import cleaned_copy
from loopbreak.scanning.field_path import FieldPath, Slot
from loopbreak.scanning.findings import BatchFindings, note, note_name, scan_batch
from loopbreak.errors import ScanError
from loopbreak.scanning.report import Report
from loopbreak.scanning.sources import STDIN, Source

# A chunk ends at this many lines or bytes, whichever comes first: enough texts to keep every
# core busy, little enough memory for lines of runaway outputs.
CHUNK_LINES = 4096
CHUNK_BYTES = 16 << 20


def scan(source: Source, field: Optional[FieldPath], report: Report, advance: Callable[[float], None]) -> None:
    if field is None:
        raise ScanError("JSON lines need --field, the path to the text in each line (e.g. messages.*.content)")
    path = str(source.path)
    first_document: Optional[tuple[int, Any]] = None  # (line number, document), for the error below
    reached = False
    line_number = 1
    done_bytes = 0
    with ExitStack() as stack:
        stream: IO[bytes] = sys.stdin.buffer if source.path == STDIN else stack.enter_context(source.path.open("rb"))
        pending = stack.enter_context(cleaned_copy(source)) if source.dest is not None else None
        out = stack.enter_context(pending.path.open("wb")) if pending is not None else None
        for lines in _chunks(stream):
            documents: list[Any] = [None] * len(lines)
            texts: list[str] = []
            slots: list[tuple[int, Slot]] = []  # (line in the chunk, slot) of each text
            for i, raw in enumerate(lines):
                if not raw.strip():
                    continue
                try:
                    documents[i] = json.loads(raw.decode("utf-8", errors="surrogateescape"))
                except json.JSONDecodeError as error:
                    report.error(path, f"line {line_number + i}: not JSON: {error.msg} (column {error.colno})")
                    continue
                if first_document is None:
                    first_document = (line_number + i, documents[i])
                for slot in field.find(documents[i]):
                    reached = True
                    value = slot.value
                    if value is None or isinstance(value, str):
                        texts.append(value or "")
                        slots.append((i, slot))
                    else:
                        report.error(path, f"line {line_number + i}: {slot.path} is {_kind(value)}, not text")
            found = scan_batch(texts)
            report.scanned(len(texts))
            report.add(found, lambda row: {"path": path, "line": line_number + slots[row][0], "field": slots[row][1].path})
            if out is not None and pending is not None:
                changed = _trim_documents(found, slots)
                pending.wanted = pending.wanted or bool(changed)
                for i, raw in enumerate(lines):
                    out.write(_dump(documents[i], raw) if i in changed else raw)
            line_number += len(lines)
            done_bytes += sum(map(len, lines))
            advance(done_bytes / source.size if source.size else 0.0)
        if first_document is not None and not reached:
            # Raised inside the `with`: a field that matches nothing leaves no copy behind.
            number, document = first_document
            raise ScanError(f"no line has a value at {field.text!r} (line {number} {_members(document)})")


def _chunks(stream: IO[bytes]) -> Iterator[list[bytes]]:
    chunk: list[bytes] = []
    size = 0
    for raw in stream:
        chunk.append(raw)
        size += len(raw)
        if len(chunk) >= CHUNK_LINES or size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _trim_documents(found: BatchFindings, slots: list[tuple[int, Slot]]) -> set[int]:
    """Puts each trimmed text in its place, and its removals beside it; returns the lines changed."""
    changed = set()
    for row, trimmed in found.trimmed.items():
        line, slot = slots[row]
        slot.container[slot.key] = trimmed.text  # type: ignore[index]
        if isinstance(slot.container, dict) and isinstance(slot.key, str):
            slot.container[note_name(slot.key)] = note(trimmed)
        changed.add(line)
    return changed


def _dump(document: Any, raw: bytes) -> bytes:
    ending = raw[len(raw.rstrip(b"\r\n")) :]
    try:
        return json.dumps(document, ensure_ascii=False).encode("utf-8", errors="surrogateescape") + ending
    except UnicodeEncodeError:  # a lone surrogate that came from a JSON escape, not a raw byte
        return json.dumps(document).encode("ascii") + ending


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
