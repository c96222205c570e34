"""What ``loopbreak scan`` tells: one line per finding as it is found (text, or a JSON object with
``--json``), errors on stderr, and at the end the summary table and the exit status."""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Optional

from loopbreak._core import RULE_NAMES
from loopbreak.scanning.findings import BatchFindings
from loopbreak.scanning.html_report import HtmlReport
from loopbreak.scanning.progress import Progress

# Errors printed per file; the rest are counted. A file of broken lines would bury the report.
ERRORS_SHOWN_PER_FILE = 10

# Where a finding is: {"path": ...} plus, by format, "line" and "field", "row", or "table" and "rowid".
Location = dict[str, Any]


@dataclass
class RuleCounts:
    rows: int = 0
    findings: int = 0
    trim_units: int = 0


class Report:
    """``html``, when given, also collects each finding with its text for the page."""

    def __init__(
        self, progress: Progress, json_lines: bool, html: Optional[HtmlReport] = None
    ) -> None:
        self.progress = progress
        self.json_lines = json_lines
        self.html = html
        self.files = 0
        self.rows = 0
        self.rows_with_findings = 0
        self.files_with_findings = 0
        self._rows_with_findings_before_file = 0
        self.errors = 0
        self.skipped = 0
        self.by_rule = {rule: RuleCounts() for rule in RULE_NAMES}
        # A row's findings arrive together: a new location starts a new row.
        self._row: Optional[Location] = None
        self._row_rules: set[str] = set()
        self._errors_by_file: Counter[str] = Counter()

    def scanned(self, rows: int) -> None:
        self.rows += rows

    def add(self, found: BatchFindings, locate: Callable[[int], Location]) -> None:
        """Adds the findings of a batch; ``locate(row)`` tells where the batch's row is."""
        for row, record in zip(found.rows, found.records):
            location = locate(row)
            self.finding(location, record)
            if self.html is not None:
                self.html.add(location, record, found.texts[row], found.trimmed[row])

    def finding(self, location: Location, record: dict[str, Any]) -> None:
        if location != self._row:
            self._row, self._row_rules = location, set()
            self.rows_with_findings += 1
        counts = self.by_rule[record["rule"]]
        if record["rule"] not in self._row_rules:
            self._row_rules.add(record["rule"])
            counts.rows += 1
        counts.findings += 1
        counts.trim_units += record["trim_units"]
        if self.json_lines:
            self.progress.print(_json_line({**location, **record}), sys.stdout)
        else:
            self.progress.print(f"{_where(location)}: {describe(record)}", sys.stdout)

    def error(self, path: str, message: str) -> None:
        self.errors += 1
        self._errors_by_file[path] += 1
        if self._errors_by_file[path] <= ERRORS_SHOWN_PER_FILE:
            self.progress.print(f"loopbreak scan: {path}: {message}", sys.stderr)

    def note(self, path: str, message: str) -> None:
        """Something worth knowing about a file that was scanned all the same."""
        self.progress.print(f"loopbreak scan: {path}: {message}", sys.stderr)

    def not_utf8(self, path: str, where: str) -> None:
        """Notes that a file is not valid UTF-8 (``where``: its first undecodable byte); said
        once a file, in the style findings and cleaned copies show those bytes in."""
        self.note(
            path,
            f"not valid UTF-8 ({where}): each undecodable byte shows as \\udcXX"
            " and is kept as it was",
        )

    def file_done(self, path: str, scanned: bool) -> None:
        """Counts the file if it was scanned (with or without row errors)."""
        self.files += scanned
        self.files_with_findings += self.rows_with_findings > self._rows_with_findings_before_file
        self._rows_with_findings_before_file = self.rows_with_findings
        hidden = self._errors_by_file.pop(path, 0) - ERRORS_SHOWN_PER_FILE
        if hidden > 0:
            self.progress.print(
                f"loopbreak scan: {path}: {hidden} more errors not shown", sys.stderr
            )

    def summary(self) -> list[str]:
        """The summary table, as lines."""
        scanned = f"scanned {_count(self.files, 'file')}, {_count(self.rows, 'row')}"
        if not self.rows_with_findings:
            lines = [f"{scanned}: no loops found"]
        else:
            in_files = _count(self.files_with_findings, "file")
            lines = [
                f"{scanned}: {_count(self.rows_with_findings, 'row')} with findings, in {in_files}",
                "",
            ]
            lines.append(f"{'rule':<16}{'rows':>12}{'findings':>12}{'units to trim':>16}")
            for rule, counts in self.by_rule.items():
                lines.append(
                    f"{rule:<16}{counts.rows:>12,}{counts.findings:>12,}{counts.trim_units:>16,}"
                )
            total_findings = sum(counts.findings for counts in self.by_rule.values())
            total_units = sum(counts.trim_units for counts in self.by_rule.values())
            lines.append(
                f"{'all':<16}{self.rows_with_findings:>12,}{total_findings:>12,}{total_units:>16,}"
            )
        if self.skipped:
            lines.append(f"skipped {_count(self.skipped, 'binary file')}")
        if self.errors:
            lines.append(f"{_count(self.errors, 'error')} (see above)")
        return lines

    def exit_status(self) -> int:
        """2 if anything could not be scanned, else 1 if a loop was found, else 0."""
        if self.errors:
            return 2
        return 1 if self.rows_with_findings else 0


def describe(record: dict[str, Any]) -> str:
    block = record["block"] if len(record["block"]) <= 60 else record["block"][:60] + "..."
    return (
        f"{record['rule']}: {block!r} x{record['repeats']} from offset {record['start']} to {record['end']}"
        f" (period {record['period']}, rule held at {record['detected_at']})"
    )


def _where(location: Location) -> str:
    """``path`` then the rest of the location as words: ``a.jsonl line 3 field messages.1.content``."""
    return " ".join(
        [str(location["path"])]
        + [f"{key} {value}" for key, value in location.items() if key != "path"]
    )


def _json_line(record: dict[str, Any]) -> str:
    line = json.dumps(record, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (undecodable input bytes) only print escaped
        line = json.dumps(record)
    return line


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
