"""``loopbreak scan --html FILE``: the scan as one self-contained page.

The page has the totals by rule and by file, a chart of loop sizes (inline SVG) and each finding
in its context: the text before the loop, the first copies (kept by ``--trim``, highlighted),
the copies cut, and what ``--trim`` keeps in their place (the marker, exactly as written). It
loads nothing: no script, no font, no image, and a Content-Security-Policy that forbids them,
so a page opened from a file or mailed on works the same. Text from the scanned files is
escaped; control characters show as their Unicode pictures (U+2400..), since HTML cannot hold
them.

The page stays small whatever the scan's size: excerpts, never whole texts; findings grouped by
file (each file folds, without a script), at most ``FINDINGS_PER_FILE`` per file and
``FINDINGS_SHOWN`` in all, the others counted (``--json`` lists every one); the file table shows
the ``FILES_SHOWN`` files with the most findings. A scan of 100,000 rows in 100 files, 10,000
of them loops, makes a page of 348 KB (docs/operators.md).
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from loopbreak._core import Trimmed

# How much of a text each finding shows, in units (code points).
BEFORE_UNITS = 300  # of the text before the loop
KEPT_UNITS = 600  # of the first copies, which --trim keeps
CUT_UNITS = 200  # of the copies cut
AFTER_UNITS = 200  # of the text after the loop

FINDINGS_SHOWN = 300
FINDINGS_PER_FILE = 20
FILES_SHOWN = 100

# The chart's bins of loop sizes (units from where the loop starts to where it ends): powers of
# four from 256, so a bar is one order of magnitude of bytes a loop wastes, roughly.
SIZE_BINS = (256, 1024, 4096, 16384, 65536, 262144)

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class _Excerpt:
    """One finding as the page shows it: its location and record, and the slices of its text."""

    where: str
    record: dict[str, Any]
    before: str
    before_cut: bool  # the text goes on before ``before``
    kept: str
    kept_more: int  # units of the kept copies not shown
    cut: str
    cut_more: int  # units of the cut copies not shown
    cut_copies: int
    marker: Optional[str]  # None: the loop lies in a region another finding's trim removes
    after: str
    after_more: int


@dataclass
class _FileCounts:
    rows: int = 0
    findings: int = 0
    trim_units: int = 0
    excerpts: list[_Excerpt] = field(default_factory=list)
    not_shown: int = 0


class HtmlReport:
    """Collects what the page shows as the scan goes; ``write`` makes the page."""

    def __init__(self) -> None:
        self._files: dict[str, _FileCounts] = {}
        self._sizes: Counter[int] = Counter()  # bin index -> findings
        self._shown = 0
        self._row: Optional[dict[str, Any]] = None

    def add(
        self, location: dict[str, Any], record: dict[str, Any], text: str, trimmed: Trimmed
    ) -> None:
        """One finding at ``location`` (as the text report has it) of ``text``, which trims to
        ``trimmed``."""
        counts = self._files.setdefault(str(location["path"]), _FileCounts())
        if location != self._row:
            self._row = location
            counts.rows += 1
        counts.findings += 1
        counts.trim_units += record["trim_units"]
        size = record["end"] - record["start"]
        self._sizes[sum(size >= edge for edge in SIZE_BINS)] += 1
        if self._shown >= FINDINGS_SHOWN or len(counts.excerpts) >= FINDINGS_PER_FILE:
            counts.not_shown += 1
            return
        self._shown += 1
        counts.excerpts.append(_excerpt(location, record, text, trimmed))

    def write(self, path: Path, report: Any, command: str) -> None:
        """Writes the page: ``report`` is the scan's ``Report`` (totals by rule, rows, errors),
        ``command`` the command line it ran."""
        path.write_text(_page(self._files, self._sizes, report, command), encoding="utf-8")


def _excerpt(
    location: dict[str, Any], record: dict[str, Any], text: str, trimmed: Trimmed
) -> _Excerpt:
    start, end = record["start"], record["end"]
    removal = next(
        (
            r
            for r in trimmed.removals
            if (r.finding.rule, r.finding.start, r.finding.detected_at)
            == (record["rule"], start, record["detected_at"])
        ),
        None,
    )
    kept_end = removal.start if removal is not None else end
    loop_end = removal.end if removal is not None else end
    kept = text[start:kept_end]
    cut = text[kept_end:loop_end]
    after = text[loop_end : loop_end + AFTER_UNITS]
    return _Excerpt(
        where=" ".join(f"{key} {value}" for key, value in location.items() if key != "path"),
        record=record,
        before=text[max(0, start - BEFORE_UNITS) : start],
        before_cut=start > BEFORE_UNITS,
        kept=kept[:KEPT_UNITS],
        kept_more=max(0, len(kept) - KEPT_UNITS),
        cut=cut[:CUT_UNITS],
        cut_more=max(0, len(cut) - CUT_UNITS),
        cut_copies=removal.repeats if removal is not None else 0,
        marker=removal.marker if removal is not None else None,
        after=after,
        after_more=max(0, len(text) - loop_end - len(after)),
    )


def _text(value: object) -> str:
    """``value`` as HTML text: escaped, control characters as their pictures, lone surrogates
    (undecodable bytes of the input) as U+FFFD."""
    shown = _CONTROL.sub(lambda match: _PICTURES[match[0]], str(value))
    return html.escape(_SURROGATE.sub("\ufffd", shown), quote=True)


# U+2400.. are the pictures of C0 controls in order; DEL's is U+2421.
_PICTURES = {chr(code): chr(0x2400 + code) for code in range(0x20)} | {"\x7f": "\u2421"}


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _units(n: int) -> str:
    return f"{n:,} units"


STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 1.5rem auto; max-width: 72rem; padding: 0 1rem;
       color: #1d1d1f; background: #fff; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
.sub { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { padding: .2rem .7rem; border-bottom: 1px solid #ddd; text-align: left; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.totals { display: flex; gap: 2rem; flex-wrap: wrap; align-items: flex-start; }
details.file { margin: .6rem 0; border: 1px solid #ccc; border-radius: 6px; padding: .3rem .8rem; }
details.file > summary { cursor: pointer; font-weight: 600; }
.finding { border-top: 1px solid #e3e3e3; padding: .6rem 0; }
.finding h3 { font-size: 1rem; margin: .2rem 0; }
.meta { color: #444; font-size: .9rem; }
.block { background: #f4f4f4; padding: 0 .25rem; border-radius: 3px; }
.label { font-size: .8rem; color: #666; text-transform: uppercase; letter-spacing: .04em; margin: .4rem 0 .1rem; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #fafafa; border: 1px solid #e5e5e5;
      border-radius: 4px; padding: .5rem; margin: 0; font: 13px/1.4 ui-monospace, monospace; }
mark { background: #ffe08a; }
del { background: #fbd3d3; color: #7a1f1f; }
ins { background: #cdeccd; text-decoration: none; }
.gap { color: #888; font-style: italic; }
.note { color: #555; }
svg text { font: 12px system-ui, sans-serif; fill: #333; }
"""


def _page(files: dict[str, _FileCounts], sizes: Counter[int], report: Any, command: str) -> str:
    total_findings = sum(counts.findings for counts in report.by_rule.values())
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        # Nothing may load or run: a transcript's markup that escaping missed would still be inert.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>loopbreak scan report</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        "<h1>loopbreak scan report</h1>",
        f'<p class="sub"><code>{_text(command)}</code> &middot; {generated}</p>',
        f"<p>Scanned {_count(report.files, 'file')}, {_count(report.rows, 'row')}: "
        f"<strong>{_count(report.rows_with_findings, 'row')} with loops</strong> "
        f"({_count(total_findings, 'finding')}) in {_count(report.files_with_findings, 'file')}"
        + (
            f"; {_count(report.errors, 'error')} (see the command's output)"
            if report.errors
            else ""
        )
        + ".</p>",
    ]
    if total_findings:
        parts += [
            '<div class="totals">',
            _rule_table(report),
            _size_chart(sizes),
            "</div>",
            _file_table(files),
            "<h2>Findings</h2>",
            _findings_note(files),
        ]
        for path, counts in files.items():
            parts.append(_file_findings(path, counts, open_=path == next(iter(files))))
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def _rule_table(report: Any) -> str:
    rows = "".join(
        f"<tr><td>{_text(rule)}</td><td class=n>{counts.rows:,}</td>"
        f"<td class=n>{counts.findings:,}</td><td class=n>{counts.trim_units:,}</td></tr>"
        for rule, counts in report.by_rule.items()
    )
    return (
        "<section><h2>By rule</h2><table><thead><tr><th>rule</th><th class=n>rows</th>"
        "<th class=n>findings</th><th class=n>units to trim</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></section>"
    )


def _size_chart(sizes: Counter[int]) -> str:
    """A bar per size bin: how many loops span that many units."""
    edges = ["0", *(_short(edge) for edge in SIZE_BINS)]
    labels = [f"{low}–{high}" for low, high in zip(edges, edges[1:])] + [f"≥{edges[-1]}"]
    most = max(sizes.values(), default=0) or 1
    bar, gap, height, top = 58, 10, 140, 18
    width = len(labels) * (bar + gap) + gap
    shapes = []
    for index, label in enumerate(labels):
        count = sizes.get(index, 0)
        tall = round(height * count / most)
        x = gap + index * (bar + gap)
        y = top + height - tall
        shapes.append(
            f'<rect x="{x}" y="{y}" width="{bar}" height="{tall}" fill="#d9822b">'
            f"<title>{count:,} loops of {label} units</title></rect>"
            f'<text x="{x + bar / 2}" y="{y - 4}" text-anchor="middle">{count:,}</text>'
            f'<text x="{x + bar / 2}" y="{top + height + 16}" text-anchor="middle">{label}</text>'
        )
    return (
        "<section><h2>Loop sizes</h2>"
        f'<svg role="img" aria-label="findings by loop size in units" width="{width}" '
        f'height="{top + height + 40}" viewBox="0 0 {width} {top + height + 40}">'
        f'<line x1="0" y1="{top + height}" x2="{width}" y2="{top + height}" stroke="#999"/>'
        + "".join(shapes)
        + f'<text x="{width / 2}" y="{top + height + 34}" text-anchor="middle">'
        "units from the loop's start to its end</text></svg></section>"
    )


def _short(units: int) -> str:
    return f"{units // 1024}K" if units >= 1024 else str(units)


def _file_table(files: dict[str, _FileCounts]) -> str:
    ranked = sorted(files.items(), key=lambda item: -item[1].findings)
    rows = "".join(
        f"<tr><td><code>{_text(path)}</code></td><td class=n>{counts.rows:,}</td>"
        f"<td class=n>{counts.findings:,}</td><td class=n>{counts.trim_units:,}</td></tr>"
        for path, counts in ranked[:FILES_SHOWN]
    )
    more = len(ranked) - FILES_SHOWN
    tail = (
        f'<p class="note">and {_count(more, "more file")} with findings, not listed.</p>'
        if more > 0
        else ""
    )
    return (
        "<h2>By file</h2><table><thead><tr><th>file</th><th class=n>rows with loops</th>"
        "<th class=n>findings</th><th class=n>units to trim</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>{tail}"
    )


def _findings_note(files: dict[str, _FileCounts]) -> str:
    hidden = sum(counts.not_shown for counts in files.values())
    shown_count = sum(len(counts.excerpts) for counts in files.values())
    shown = (
        "Each loop in its text: <mark>the first copies</mark>, which <code>--trim</code> keeps, "
    )
    shown += "<del>the copies it cuts</del>, and <ins>the marker</ins> it writes in their place."
    if hidden:
        shown += (
            f" {_count(shown_count, 'finding')} shown (at most {FINDINGS_PER_FILE} a file); "
            f"{hidden:,} more are counted above: <code>loopbreak scan --json</code> lists every one."
        )
    return f'<p class="note">{shown}</p>'


def _file_findings(path: str, counts: _FileCounts, open_: bool) -> str:
    body = "".join(_finding(excerpt) for excerpt in counts.excerpts)
    if counts.not_shown:
        body += f'<p class="note">{_count(counts.not_shown, "more finding")} in this file, not shown.</p>'
    summary = f"<code>{_text(path)}</code> &middot; {_count(counts.findings, 'finding')}"
    return f'<details class="file"{" open" if open_ else ""}><summary>{summary}</summary>{body}</details>'


def _finding(excerpt: _Excerpt) -> str:
    record = excerpt.record
    block = record["block"] if len(record["block"]) <= 80 else record["block"][:80] + "…"
    title = f"{_text(excerpt.where)} &middot; " if excerpt.where else ""
    head = (
        f"<h3>{title}{_text(record['rule'])}: <span class=block>{_text(repr(block))}</span> "
        f"&times;{record['repeats']:,}</h3>"
        f'<p class="meta">units {record["start"]:,}–{record["end"]:,} '
        f"(period {record['period']:,}; the rule held at {record['detected_at']:,}); "
        f"--trim cuts {_units(record['trim_units'])}"
        + (f", {excerpt.cut_copies:,} copies" if excerpt.cut_copies else "")
        + "</p>"
    )
    before = ('<span class="gap">…</span>' if excerpt.before_cut else "") + _text(excerpt.before)
    kept = f"<mark>{_text(excerpt.kept)}</mark>" + _gap(excerpt.kept_more, "of the kept copies")
    after = _text(excerpt.after) + _gap(excerpt.after_more, "to the end")
    if excerpt.marker is None:
        found = f"<pre>{before}{kept}{after}</pre>"
        trimmed = '<p class="note">This loop lies inside a loop cut above: nothing more to cut.</p>'
    else:
        cut = f"<del>{_text(excerpt.cut)}</del>" + _gap(excerpt.cut_more, "more cut")
        found = f"<pre>{before}{kept}{cut}{after}</pre>"
        trimmed = f"<pre>{before}{kept}<ins>{_text(excerpt.marker)}</ins>{after}</pre>"
    return (
        f'<div class="finding">{head}'
        f'<p class="label">in the text</p>{found}'
        f'<p class="label">what --trim keeps</p>{trimmed}</div>'
    )


def _gap(units: int, what: str) -> str:
    return f'<span class="gap">[… {_units(units)} {what}]</span>' if units else ""
