"""``loopbreak scan PATH...``: find repetition loops in stored model outputs, and trim them.

Each format has its own module in ``loopbreak.scanning``, registered in
``loopbreak.scanning.readers``; this one parses the command line (its format options and help
text come from that registry), sends each file to its reader, and prints the report. ``--ray``
sends Parquet files to a Ray cluster instead (``loopbreak.scanning.ray``). A format's
dependencies (sqlite3, pyarrow, ray and logging) are imported when a file of that format is
scanned: most runs scan JSON lines or text, and ``loopbreak scan`` is started once per run, so
its start-up is part of every scan."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Callable

from loopbreak._core import Rules
from loopbreak._presets import RULE_PRESETS
from loopbreak.errors import MissingExtra, ScanError
from loopbreak.scanning.findings import NOTE_SUFFIX
from loopbreak.scanning.html_report import HtmlReport
from loopbreak.scanning.inputs import STDIN, InputFile, Inputs, find_inputs
from loopbreak.scanning.progress import Progress
from loopbreak.scanning.readers import (
    OPTIONS,
    RAY_FORMAT,
    READERS,
    Reader,
    ReaderOptions,
    misplaced_option,
    takers,
    titles,
)
from loopbreak.scanning.report import Report

ALL_FORMATS = titles(list(READERS))

DESCRIPTION = f"""\
Find repetition loops in stored model outputs: {ALL_FORMATS} files,
or directories of them (walked in order, hidden files skipped). Prints each finding, then a
summary table; with --json, one JSON object per finding on stdout and the summary on stderr."""


def _epilog() -> str:
    """The help text after the options, from the readers' registry."""
    formats = "\n".join(
        f"  {reader.format:<9} {_file_names(reader)}{reader.rows}" for reader in READERS.values()
    )
    notes = "\n".join(f"    {reader.title}: {reader.notes}" for reader in READERS.values())
    return f"""\
formats (told by a file's first bytes, else by its name; --format overrides):
{formats}
  Nulls scan as empty texts; numbers, objects, blobs are errors (reported, counted, skipped).
  An option no format of the files takes is an error (--table on a text file).

--field paths: segments separated by dots. In an object a segment is a member name, in a list
  an index (-1 is the last), and * is every item of a list or member of an object:
  'text', 'response.choices.0.message.content', 'messages.*.content'.
  \\. is a dot inside a name, \\* a member named *. Each value reached is one row.

--trim writes cleaned copies in the same format: each loop cut to its first 3 copies plus a
  marker saying what was removed, every other byte of text kept. The removals (with their
  findings, as JSON) are stored beside the text ('{NOTE_SUFFIX}' after the name):
{notes}
  --out DIR places copies as 'cp -r PATH... DIR' would; --in-place replaces the inputs that
  have findings, atomically (a temporary file renamed over it; SQLite: one transaction).

exit status: 0 no loop found, 1 loops found, 2 something could not be scanned (the rest was)."""


def _file_names(reader: Reader) -> str:
    """``*.jsonl, *.ndjson: `` for a format told by the file's name, else ''."""
    return f"{', '.join('*' + suffix for suffix in reader.suffixes)}: " if reader.suffixes else ""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "scan",
        help=f"find (and trim) repetition loops in {ALL_FORMATS} files",
        description=DESCRIPTION,
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="files or directories; '-' reads stdin"
    )
    parser.add_argument("--format", choices=list(READERS), help="read every file as this format")
    for option in OPTIONS:
        parser.add_argument(
            f"--{option.name}",
            type=_parsed(option.parse),
            metavar=option.metavar,
            help=f"{', '.join(reader.title for reader in takers(option.name))}: {option.help}",
        )
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
        help=f"scan {READERS[RAY_FORMAT].title} files on the Ray cluster at ADDRESS (auto,"
        " HOST:PORT, ray://HOST:10001; local starts one here); needs pip install"
        " 'loopbreak[ray]' on every node, and the files readable from every node",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    options = ReaderOptions(field=args.field, column=args.column, table=args.table)
    problem = _misuse(args)
    inputs = (
        Inputs()
        if problem
        else find_inputs(args.paths, format=args.format, out=args.out, in_place=args.in_place)
    )
    # Checked before the --out folder is made: a refused command leaves nothing behind.
    problem = (
        problem
        or _misplaced(args, options, inputs)
        or (_out_problem(args.out) if args.out is not None else "")
    )
    if problem:
        print(f"loopbreak scan: {problem}", file=sys.stderr)
        return 2
    # Ray draws its own progress; here the bar counts the bytes of the files read.
    progress = Progress(sum(file.size for file in inputs.files), enabled=not args.ray)
    report = Report(progress, json_lines=args.json, html=HtmlReport() if args.html else None)
    report.skipped = inputs.skipped
    for path, message in inputs.problems:
        report.error(path, message)
    rules = RULE_PRESETS[args.rules]()
    try:
        if args.ray:
            _scan_on_ray(args.ray, inputs.files, options, rules, report)
        else:
            for file in inputs.files:
                _scan_file(file, options, rules, report, progress)
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
    if args.trim and STDIN in args.paths:
        return "--trim cannot write a cleaned copy of stdin"
    if STDIN in args.paths and sys.stdin is None:  # cron, daemons, `<&-`
        return "standard input is closed"
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        return f"--out {args.out} is a file, not a folder"
    if args.ray and args.trim:
        return "--ray scans only; trim on one machine"
    if args.ray and args.html:
        return "--html shows each loop in its text, which --ray does not bring back; scan on one machine"
    if args.html is not None and not args.html.parent.is_dir():
        return f"--html {args.html}: no folder {args.html.parent}"
    return ""


def _misplaced(args: argparse.Namespace, options: ReaderOptions, inputs: Inputs) -> str:
    """The reader option that no file to scan takes, as a problem, or ''. ``--ray`` reads one
    format whatever the files are (the others are its errors, file by file)."""
    if args.ray:
        formats = [RAY_FORMAT]
        read_as = f"--ray reads {READERS[RAY_FORMAT].title} only"
    elif not inputs.files:  # nothing to scan: the problems say why
        return ""
    else:
        formats = [file.format for file in inputs.files]
        if len(inputs.files) == 1:
            path = inputs.files[0].path
            name = "stdin" if path == STDIN else str(path)
            read_as = f"{name} is read as {titles(formats)}"
        else:
            read_as = f"the {len(formats):,} files are read as {titles(formats)}"
    # The --format that would take the option is named for one file whose format was told.
    told = args.format is None and not args.ray and len(formats) == 1
    return misplaced_option(options, formats, read_as, detected=told)


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
    file: InputFile, options: ReaderOptions, rules: Rules, report: Report, progress: Progress
) -> None:
    path = str(file.path)
    advance = progress.file(file.size)
    scanned = False
    try:
        READERS[file.format].load().scan(file, options, rules, report, advance)
        scanned = True
    except ScanError as error:
        report.error(path, str(error))
    except OSError as error:
        # An error writing the cleaned copy names that file, not the input.
        written = error.filename is not None and Path(error.filename) != file.path
        where = f"cannot write {error.filename}: " if written else ""
        report.error(path, where + (error.strerror or str(error)))
    except Exception as error:  # a bug or a resource running out: this file's error, not the run's
        report.error(path, f"unexpected error: {type(error).__name__}: {error}")
    finally:
        advance(1.0)
        report.file_done(path, scanned)


def _scan_on_ray(
    address: str, inputs: list[InputFile], options: ReaderOptions, rules: Rules, report: Report
) -> None:
    """``loopbreak.scanning.ray.scan_files``, imported here: ray is an extra."""
    try:
        from loopbreak.scanning import ray
    except MissingExtra as error:
        report.error("--ray", str(error))
        return
    ray.scan_files(address, inputs, options, rules, report)


def _parsed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` for argparse: its ValueError is the option's one-line error."""

    def parsed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parsed


def _files(n: int) -> str:
    return f"{n:,} file{'' if n == 1 else 's'}"
