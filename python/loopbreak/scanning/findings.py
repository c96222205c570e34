"""The findings of one batch of texts, with the block and the units ``trim`` would remove.

Every format scans through ``scan_batch`` (JSON lines, scanned as they are read, through
``scanned_batch``), locally and on Ray, and every finding record is built by ``record`` from the
core's ``Finding``, so every path reports the same findings with the same numbers and the same
block."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from loopbreak._batch import Texts, scan_many
from loopbreak._core import Finding, Rules, Trimmed, trim

# The keys of one finding record, in ``Finding.to_dict`` order, plus what trimming removes.
RECORD_KEYS = ("rule", "period", "block", "start", "repeats", "detected_at", "end", "trim_units")


@dataclass(frozen=True)
class BatchFindings:
    """Every finding of a batch, in row order: ``rows[i]`` is the index of the text that
    finding ``records[i]`` came from. ``texts`` and ``trimmed`` hold the text of each row with
    findings and that text trimmed, keyed by row."""

    rows: list[int]
    records: list[dict[str, Any]]
    trimmed: dict[int, Trimmed]
    texts: dict[int, str]


def record(finding: Finding, trim_units: int) -> dict[str, Any]:
    """One finding as every output writes it: its fields, then the units trimming removes."""
    return {**finding.to_dict(), "trim_units": trim_units}


def scan_batch(
    texts: Texts, rules: Optional[Rules] = None, threads: Optional[int] = None
) -> BatchFindings:
    """Scans ``texts`` (a sequence of ``str`` or a pyarrow string column, whose nulls scan as
    empty texts) on all cores (or ``threads``); only the rows with findings are looked at again,
    one by one, to trim them. An Arrow row becomes a ``str`` only if it has a finding."""
    found = [
        (row, findings) for row, findings in enumerate(scan_many(texts, rules, threads)) if findings
    ]
    return _with_trims([(row, _text(texts, row), findings) for row, findings in found], rules)


def scanned_batch(
    rows: Sequence[tuple[str, Sequence[Finding]]], rules: Optional[Rules] = None
) -> BatchFindings:
    """The ``BatchFindings`` of texts scanned already (JSON lines are scanned as they are read):
    row ``i`` is ``rows[i]``, a text and its findings."""
    return _with_trims(
        [(row, text, findings) for row, (text, findings) in enumerate(rows) if findings], rules
    )


def _with_trims(
    found: Sequence[tuple[int, str, Sequence[Finding]]], rules: Optional[Rules]
) -> BatchFindings:
    """The records of each row's findings, and the row trimmed (``(row, text, findings)`` of each
    row with findings, in order)."""
    rows: list[int] = []
    records: list[dict[str, Any]] = []
    trimmed: dict[int, Trimmed] = {}
    texts: dict[int, str] = {}
    for row, text, findings in found:
        texts[row] = text
        trimmed[row] = trim(text, rules=rules)
        # Trimming skips a finding inside a region already removed: that finding removes 0.
        removed = {
            (r.finding.rule, r.finding.start, r.finding.detected_at): r.units
            for r in trimmed[row].removals
        }
        for finding in findings:
            rows.append(row)
            records.append(
                record(finding, removed.get((finding.rule, finding.start, finding.detected_at), 0))
            )
    return BatchFindings(rows, records, trimmed, texts)


def _text(texts: Texts, row: int) -> str:
    value = texts[row]
    if isinstance(value, str):
        return value
    text: Optional[str] = value.as_py()  # an Arrow scalar; a null scans as ""
    return text or ""


# Where a format can hold it, the finding is stored beside the text it was found in: a member,
# column or key named after the text's own, with this suffix.
NOTE_SUFFIX = "_loopbreak"


def note_name(name: str) -> str:
    return name + NOTE_SUFFIX


def note(trimmed: Trimmed) -> list[dict[str, Any]]:
    """What is stored beside a trimmed text: each removal with its finding, as plain values."""
    return [removal.to_dict() for removal in trimmed.removals]
