"""``loopbreak scan PATH...``: find repetition loops in stored model outputs, and trim them.

Each format has its own module in ``loopbreak.scanning``; this one parses the command line,
sends each file to its reader, and prints the report. ``--ray`` sends Parquet files to a Ray
cluster instead (``loopbreak.scanning.ray``). A format's dependencies (sqlite3, pyarrow, ray and
logging) are imported when a file of that format is scanned: most runs scan JSON lines or text,
and ``loopbreak scan`` is started once per run, so its start-up is part of every scan."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from loopbreak._core import Rules
from loopbreak._presets import RULE_PRESETS
from loopbreak.errors import MissingExtra, ScanError
from loopbreak.scanning import json_lines, text_files
from loopbreak.scanning.field_path import FieldPath
from loopbreak.scanning.findings import NOTE_SUFFIX, RECORD_KEYS
from loopbreak.scanning.html_report import HtmlReport
from loopbreak.scanning.progress import Progress
from loopbreak.scanning.report import Report
from loopbreak.scanning.sources import FORMATS, Source, find_sources

DESCRIPTION = """\
Find repetition loops in stored model outputs: plain text files, JSON lines, Parquet and SQLite,
or directories of them (walked in order, hidden files skipped). Prints each finding, then a
summary table; with --json, one JSON object per finding on stdout and the summary on stderr."""

EPILOG = f"""\
formats (told by a file's first bytes, else by its name; --format overrides):
  text      each file is one row ('-' reads stdin); binary files (a NUL byte early) are skipped
  jsonl     *.jsonl, *.ndjson: the value at --field in each line is a row
  parquet   the string column --column; a row's index in the file tells it
  sqlite    --column of --table, read in chunks by rowid
  Nulls scan as empty texts; numbers, objects, blobs are errors (reported, counted, skipped).

--field paths: segments separated by dots. In an object a segment is a member name, in a list
  an index (-1 is the last), and * is every item of a list or member of an object:
  'text', 'response.choices.0.message.content', 'messages.*.content'.
  \\. is a dot inside a name, \\* a member named *. Each value reached is one row.

--trim writes cleaned copies in the same format: each loop cut to its first 3 copies plus a
  marker saying what was removed, every other byte of text kept. The removals (with their
  findings) are stored beside the text where the format allows: a '<name>{NOTE_SUFFIX}' member
  next to the JSON text, a '<column>{NOTE_SUFFIX}' column (JSON) in Parquet and SQLite.
  --out DIR places copies as 'cp -r PATH... DIR' would; --in-place replaces the inputs that
  have findings, atomically (a temporary file renamed over it; SQLite: one transaction).

exit status: 0 no loop found, 1 loops found, 2 something could not be scanned (the rest was)."""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "scan",
        help="find (and trim) repetition loops in text, JSON lines, Parquet and SQLite files",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="files or directories; '-' reads stdin"
    )
    parser.add_argument("--format", choices=FORMATS, help="read every file as this format")
    parser.add_argument(
        "--field",
        type=_field_path,
        metavar="PATH",
        help="JSON lines: where the text is in each line",
    )
    parser.add_argument("--column", metavar="NAME", help="Parquet, SQLite: the column of texts")
    parser.add_argument("--table", metavar="NAME", help="SQLite: the table")
    parser.add_argument(
        "--rules",
        choices=RULE_PRESETS,
        default="default",
        help="the thresholds: default, for what models write; conservative, for arbitrary files"
        " (no finding in machine-generated tables; loops found later)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per finding on stdout")
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write the report as one self-contained web page: totals, loop sizes, and each"
        " loop in its text",
    )
    parser.add_argument(
        "--trim", action="store_true", help="write cleaned copies (needs --out or --in-place)"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out", type=Path, metavar="DIR", help="with --trim: the folder for the cleaned copies"
    )
    where.add_argument(
        "--in-place", action="store_true", help="with --trim: replace the inputs that have findings"
    )
    parser.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="scan Parquet files on the Ray cluster at ADDRESS (auto, HOST:PORT, ray://HOST:10001; local starts"
        " one here); needs pip install 'loopbreak[ray]' on every node, and the files readable from every node",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    problem = _misuse(args)
    if problem:
        print(f"loopbreak scan: {problem}", file=sys.stderr)
        return 2
    sources = find_sources(args.paths, format=args.format, out=args.out, in_place=args.in_place)
    # Ray draws its own progress; here the bar counts the bytes of the files read.
    progress = Progress(sum(source.size for source in sources.files), enabled=not args.ray)
    report = Report(progress, json_lines=args.json, html=HtmlReport() if args.html else None)
    report.skipped = sources.skipped
    for path, message in sources.problems:
        report.error(path, message)
    rules = RULE_PRESETS[args.rules]()
    try:
        if args.ray:
            _scan_on_ray(args.ray, sources.files, args.column, rules, report)
        else:
            for source in sources.files:
                _scan_file(source, args, rules, report, progress)
    finally:
        progress.close()
    summary = report.summary()
    if args.trim and args.out:
        summary.append(f"cleaned copies of {_files(report.files)} in {args.out}")
    elif args.trim:
        summary.append(f"trimmed {_files(report.files_with_findings)} in place")
    if report.html is not None:
        report.html.write(
            args.html, report, shlex.join(["loopbreak", "scan", *map(str, args.paths)])
        )
        summary.append(f"report written to {args.html}")
    for line in summary:
        print(line, file=sys.stderr if args.json else sys.stdout)
    return report.exit_status()


def _misuse(args: argparse.Namespace) -> str:
    """What is wrong with the options together, or ''."""
    trims_to = args.out is not None or args.in_place
    if args.trim and not trims_to:
        return "--trim needs --out DIR or --in-place"
    if trims_to and not args.trim:
        return "--out and --in-place go with --trim"
    if args.trim and Path("-") in args.paths:
        return "--trim cannot write a cleaned copy of stdin"
    if Path("-") in args.paths and sys.stdin is None:  # cron, daemons, `<&-`
        return "standard input is closed"
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        return f"--out {args.out} is a file, not a folder"
    if args.ray and args.trim:
        return "--ray scans only; trim on one machine"
    if args.ray and args.html:
        return "--html shows each loop in its text, which --ray does not bring back; scan on one machine"
    if args.html is not None and not args.html.parent.is_dir():
        return f"--html {args.html}: no folder {args.html.parent}"
    if args.field is not None and Path("-") in args.paths and args.format != "jsonl":
        return "--field reads JSON lines, and stdin is read as text: add --format jsonl"
    if args.out is not None:
        return _out_problem(args.out)
    return ""


def _out_problem(out: Path) -> str:
    """Why the cleaned copies cannot go to ``out`` (made here if missing), or ''."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return f"--out {out}: cannot make the folder ({error.strerror or error})"
    if not os.access(out, os.W_OK | os.X_OK):
        return f"--out {out}: the folder is not writable"
    return ""


def _scan_file(
    source: Source, args: argparse.Namespace, rules: Rules, report: Report, progress: Progress
) -> None:
    path = str(source.path)
    advance = progress.file(source.size)
    scanned = False
    try:
        if source.format == "text":
            text_files.scan(source, rules, report, advance)
        elif source.format == "jsonl":
            json_lines.scan(source, args.field, rules, report, advance)
        elif source.format == "parquet":
            _parquet_files().scan(source, args.column, rules, report, advance)
        else:
            from loopbreak.scanning import sqlite_tables

            sqlite_tables.scan(source, args.table, args.column, rules, report, advance)
        scanned = True
    except ScanError as error:
        report.error(path, str(error))
    except OSError as error:
        # An error writing the cleaned copy names that file, not the input.
        written = error.filename is not None and Path(error.filename) != source.path
        where = f"cannot write {error.filename}: " if written else ""
        report.error(path, where + (error.strerror or str(error)))
    except Exception as error:  # a bug or a resource running out: this file's error, not the run's
        report.error(path, f"unexpected error: {type(error).__name__}: {error}")
    finally:
        advance(1.0)
        report.file_done(path, scanned)


def _scan_on_ray(
    address: str, sources: list[Source], column: str, rules: Rules, report: Report
) -> None:
    """Scans the Parquet files among ``sources`` on the cluster at ``address`` and reports the
    findings in the order a local scan would."""
    import logging

    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
        import ray

        from loopbreak.scanning import parquet_files
        from loopbreak.scanning.ray import read_parquet_rows, scan_dataset
    except MissingExtra as error:
        report.error("--ray", str(error))
        return

    rows_by_path: dict[str, int] = {}
    for source in sources:
        path = str(source.path)
        try:
            if source.format != "parquet":
                raise ScanError(f"--ray scans Parquet files only, this is {source.format}")
            metadata = pq.read_metadata(source.path)
            parquet_files.text_column_type(metadata.schema.to_arrow_schema(), column)
            rows_by_path[path] = metadata.num_rows
        except ScanError as error:
            report.error(path, str(error))
            report.file_done(path, scanned=False)
        except (OSError, pa.ArrowException) as error:
            report.error(path, f"cannot read it as Parquet: {error}")
            report.file_done(path, scanned=False)
    if not rows_by_path:
        return
    # Ray Data draws its progress bars on a terminal; elsewhere it would log progress: keep
    # only its warnings then.
    if not sys.stderr.isatty():
        logging.getLogger("ray.data").setLevel(logging.WARNING)
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    except ConnectionError as error:
        report.error(address, f"cannot reach the Ray cluster: {error}")
        return
    try:
        findings = scan_dataset(
            read_parquet_rows(list(rows_by_path), column), column, keep=("path", "row"), rules=rules
        )
        batches: list[Any] = list(findings.iter_batches(batch_format="pyarrow", batch_size=None))
    except ray.exceptions.RayError as error:
        report.error(address, f"the scan failed on the cluster: {error}")
        return
    finally:
        ray.shutdown()
    records_by_path: dict[str, list[dict[str, Any]]] = {path: [] for path in rows_by_path}
    for batch in batches:
        for record in batch.to_pylist():
            records_by_path[record["path"]].append(record)
    for path, rows in rows_by_path.items():
        report.scanned(rows)
        # A stable sort by row: each row's findings keep the order the scan gave them.
        for record in sorted(records_by_path[path], key=lambda record: int(record["row"])):
            report.finding(
                {"path": path, "row": record["row"]}, {key: record[key] for key in RECORD_KEYS}
            )
        report.file_done(path, scanned=True)


def _parquet_files() -> Any:
    """The Parquet module, imported when first needed: pyarrow is an extra."""
    try:
        from loopbreak.scanning import parquet_files
    except MissingExtra as error:
        raise ScanError(f"Parquet: {error}") from None
    return parquet_files


def _field_path(text: str) -> FieldPath:
    try:
        return FieldPath.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _files(n: int) -> str:
    return f"{n:,} file{'' if n == 1 else 's'}"
