"""The formats ``loopbreak scan`` reads, in one registry: ``READERS``. Format detection, the
command's options, its ``--help`` text, the dispatch of each file and the Ray path all read it,
so a new format is one entry here and one module beside this one.

A reader is told by what it reads (``rows``: what one row of the format is), the reader options
it takes (``options``: names among ``OPTIONS``), and how its cleaned copy keeps the removals
(``notes``). Its module has one function, ``scan`` (the ``ReadsFormat`` protocol): it scans the
input file ``file.path`` and reports to ``report``; when ``file.dest`` is set it also writes the
cleaned copy there, in the same format, through ``loopbreak.scanning.atomic.cleaned_copy``.
A module is imported when the first file of its format is scanned: its dependencies may be an
extra (pyarrow), and most runs never need them.

An option that no reader of the files being scanned takes is refused before anything is read
(``misplaced_option``): ``--table t --column c`` on a text file is a mistake, not a text scan."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, cast

from loopbreak.errors import MissingExtra, ScanError
from loopbreak.scanning.field_path import FieldPath
from loopbreak.scanning.findings import NOTE_SUFFIX

if TYPE_CHECKING:
    from loopbreak._core import Rules
    from loopbreak.scanning.inputs import InputFile
    from loopbreak.scanning.report import Report

# Enough of a file to tell a binary one: a NUL byte this early is not in text or JSON lines.
SNIFF_BYTES = 8192
# What ``detect_format`` calls a file no reader claims and that is not text: it is skipped.
BINARY = "binary"


@dataclass(frozen=True)
class ReaderOptions:
    """The reader options of one scan, each None where it was not given."""

    field: Optional[FieldPath] = None
    column: Optional[str] = None
    table: Optional[str] = None


@dataclass(frozen=True)
class Option:
    """A reader option on the command line: ``--<name> METAVAR``, a field of ``ReaderOptions``."""

    name: str
    metavar: str
    help: str  # what it names; the help text puts the formats that take it in front
    parse: Callable[[str], Any] = str


OPTIONS = (
    Option("field", "PATH", "where the text is in each line", FieldPath.parse),
    Option("table", "NAME", "the table"),
    Option("column", "NAME", "the column of texts"),
)


class ReadsFormat(Protocol):
    """A reader's module."""

    def scan(
        self,
        file: InputFile,
        options: ReaderOptions,
        rules: Rules,
        report: Report,
        advance: Callable[[float], None],
    ) -> None:
        """Scans ``file`` (raising ``ScanError`` for what stops the whole file), reports its
        findings and errors, writes its cleaned copy to ``file.dest`` if set, and calls
        ``advance`` with the fraction of the file done."""


@dataclass(frozen=True)
class Reader:
    format: str  # the name ``--format`` takes and the reports use
    title: str  # the name in messages and the help text
    module: str  # in loopbreak.scanning, imported when a file of this format is first scanned
    rows: str  # the help text: what one row is
    notes: str  # the help text: where a cleaned copy keeps the removals
    options: tuple[str, ...] = ()
    magic: bytes = b""  # a file that starts with these bytes is in this format
    suffixes: tuple[str, ...] = ()  # else, a file whose name ends so

    def load(self) -> ReadsFormat:
        """The reader's module; ``ScanError`` if its extra is not installed."""
        try:
            module = importlib.import_module(f"loopbreak.scanning.{self.module}")
        except MissingExtra as error:
            raise ScanError(f"{self.title}: {error}") from None
        return cast(ReadsFormat, module)


READERS = {
    reader.format: reader
    for reader in (
        Reader(
            "text",
            "text",
            "text_files",
            "each file is one row ('-' reads stdin); binary files (a NUL byte early) are skipped",
            "only the marker in the text, which says what was removed",
        ),
        Reader(
            "jsonl",
            "JSON lines",
            "json_lines",
            "the value at --field in each line is a row",
            f"a '<name>{NOTE_SUFFIX}' member next to the text",
            options=("field",),
            suffixes=(".jsonl", ".ndjson"),
        ),
        Reader(
            "parquet",
            "Parquet",
            "parquet_files",
            "the string column --column; a row's index in the file tells it",
            f"a '<column>{NOTE_SUFFIX}' column (JSON)",
            options=("column",),
            magic=b"PAR1",
        ),
        Reader(
            "sqlite",
            "SQLite",
            "sqlite_tables",
            "--column of --table, read in chunks by rowid",
            f"a '<column>{NOTE_SUFFIX}' column (JSON)",
            options=("table", "column"),
            magic=b"SQLite format 3\x00",
        ),
    )
}
# The format a file is read as when no reader claims it by its bytes or name, and stdin's.
DEFAULT_FORMAT = "text"
# What ``--ray`` scans (loopbreak.scanning.ray reads it row group by row group).
RAY_FORMAT = "parquet"

if TYPE_CHECKING:
    # The type checker holds each registered module to the protocol (at run time they are
    # imported by name, when first needed).
    from loopbreak.scanning import json_lines, parquet_files, sqlite_tables, text_files

    _MODULES: tuple[ReadsFormat, ...] = (text_files, json_lines, parquet_files, sqlite_tables)


def detect_format(path: Path) -> str:
    """The reader whose magic bytes start the file, else the one whose suffix it has, else
    ``BINARY`` for a NUL byte in the first few KiB, else ``DEFAULT_FORMAT``."""
    with path.open("rb") as file:
        head = file.read(SNIFF_BYTES)
    for reader in READERS.values():
        if reader.magic and head.startswith(reader.magic):
            return reader.format
    for reader in READERS.values():
        if path.suffix.lower() in reader.suffixes:
            return reader.format
    return BINARY if b"\x00" in head else DEFAULT_FORMAT


def takers(option: str) -> list[Reader]:
    return [reader for reader in READERS.values() if option in reader.options]


def misplaced_option(
    options: ReaderOptions, formats: list[str], read_as: str, *, detected: bool
) -> str:
    """Why an option given in ``options`` is taken by none of ``formats`` (those of the files
    to scan; ``read_as`` says how they are read, as in "a.txt is read as text"), or ''. With
    ``detected`` (no ``--format`` given) it says which ``--format`` would take the option."""
    for option in OPTIONS:
        readers = takers(option.name)
        if getattr(options, option.name) is None or any(r.format in formats for r in readers):
            continue
        problem = f"--{option.name} reads {_titles(readers)}, and {read_as}"
        # A format told by its name can be asked for; one told by its bytes is what it is.
        named = [reader for reader in readers if not reader.magic]
        if detected and len(named) == 1:
            problem += f": add --format {named[0].format}"
        return problem
    return ""


def titles(formats: list[str]) -> str:
    return _titles([READERS[format] for format in dict.fromkeys(formats)])


def _titles(readers: list[Reader]) -> str:
    names = [reader.title for reader in readers]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
