"""The findings of one batch of texts, with the block and the units ``trim`` would remove.

Every format scans through ``scan_batch``, locally and on Ray, so both paths report the same
findings with the same numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from loopbreak._core import Rules, Trimmed, trim
from loopbreak._batch import RULE_NAMES, Texts, scan_columns, scan_many

# The keys of one finding record, in ``Finding.to_dict`` order, plus what trimming removes.
RECORD_KEYS = ("rule", "period", "block", "start", "repeats", "detected_at", "end", "trim_units")


@dataclass(frozen=True)
class BatchFindings:
    """Every finding of a batch, in row order: ``rows[i]`` is the index of the text that
    finding ``records[i]`` came from. ``trimmed`` holds the trimmed text of each row with
    findings, keyed by row."""

    rows: list[int]
    records: list[dict[str, Any]]
    trimmed: dict[int, Trimmed]


def scan_batch(texts: Texts, rules: Optional[Rules] = None, threads: Optional[int] = None) -> BatchFindings:
    """Scans ``texts`` (a list of ``str`` or a pyarrow string column) on all cores (or
    ``threads``); only the rows with findings are looked at again, one by one, to trim them."""
    found = _scan_list(texts, rules, threads) if isinstance(texts, list) else _scan_arrow(texts, rules, threads)
    trimmed: dict[int, Trimmed] = {}
    removed_units: dict[tuple[int, str, int, int], int] = {}
    for row, text, record in found:
        if row not in trimmed:
            trimmed[row] = trim(text, rules=rules)
            # Trimming skips a finding inside a region already removed: that finding removes 0.
            removed_units.update(
                ((row, r.finding.rule, r.finding.start, r.finding.detected_at), r.units) for r in trimmed[row].removals
            )
        record["trim_units"] = removed_units.get((row, record["rule"], record["start"], record["detected_at"]), 0)
    return BatchFindings([row for row, _, _ in found], [record for _, _, record in found], trimmed)


# Each finding as (row, the row's text, the finding's record without "trim_units").
_Found = list[tuple[int, str, dict[str, Any]]]


def _scan_list(texts: list[str], rules: Optional[Rules], threads: Optional[int]) -> _Found:
    return [
        (row, texts[row], finding.to_dict())
        for row, findings in enumerate(scan_many(texts, rules, threads))
        for finding in findings
    ]


def _scan_arrow(texts: Any, rules: Optional[Rules], threads: Optional[int]) -> _Found:
    """Straight from the column's buffers, with no Python object per row: only the rows with
    findings become ``str``."""
    columns = scan_columns(texts, rules, threads)
    found = []
    for i, row in enumerate(columns["row"].tolist()):
        text = texts[row].as_py() or ""  # a null scans as ""
        start, period = int(columns["start"][i]), int(columns["period"][i])
        record = {
            "rule": RULE_NAMES[columns["rule"][i]],
            "period": period,
            # The repeated block is one period from the start, for every rule.
            "block": text[start : start + period],
            "start": start,
            "repeats": int(columns["repeats"][i]),
            "detected_at": int(columns["detected_at"][i]),
            "end": int(columns["end"][i]),
        }
        found.append((row, text, record))
    return found


# Where a format can hold it, the finding is stored beside the text it was found in: a member,
# column or key named after the text's own, with this suffix.
NOTE_SUFFIX = "_loopbreak"


def note_name(name: str) -> str:
    return name + NOTE_SUFFIX


def note(trimmed: Trimmed) -> list[dict[str, Any]]:
    """What is stored beside a trimmed text: each removal with its finding, as plain values."""
    return [removal.to_dict() for removal in trimmed.removals]
