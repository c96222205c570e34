"""SQLite: each value of ``--column`` in ``--table`` is one row, read in chunks in rowid order
through a read-only connection. A row is told by its rowid, reached by the first of SQLite's
names for it (``rowid``, ``_rowid_``, ``oid``) that the table does not declare as a column of its
own: a declared ``rowid`` column may hold anything, NULLs and numbers of other rows. A table that
declares all three, or has no rowid (``WITHOUT ROWID``), is refused. NULL scans as an empty text; an integer, real or blob is an
error, reported with its rowid and counted, and the scan goes on.

Cleaning: while the scan reads, the trimmed texts and their removals are staged in a temporary
table; at the end they are written in one transaction, the removals as JSON in a column
``<column>_loopbreak`` added to the table. With ``--out`` that happens in a copy of the
database (made with SQLite's backup API, so a database in WAL mode is copied whole) which is
then renamed into place; with ``--in-place`` in the input itself, where the transaction makes
the change all or nothing."""

from __future__ import annotations

import json
import sqlite3
import urllib.parse
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Callable, Optional

from loopbreak._core import Rules
from loopbreak.errors import ScanError
from loopbreak.scanning.atomic import cleaned_copy
from loopbreak.scanning.findings import note, note_name, scan_batch
from loopbreak.scanning.inputs import InputFile
from loopbreak.scanning.readers import ReaderOptions
from loopbreak.scanning.report import Report

# Rows fetched and scanned at a time.
CHUNK_ROWS = 4096
STAGING = "temp.loopbreak_trimmed"
# By typeof(): bytes, as every text comes through the scan's cursor (see there).
NOT_TEXT = {b"integer": "an integer", b"real": "a real number", b"blob": "a blob"}
ROWID_NAMES = ("rowid", "_rowid_", "oid")


def scan(
    file: InputFile,
    options: ReaderOptions,
    rules: Rules,
    report: Report,
    advance: Callable[[float], None],
) -> None:
    try:
        _scan(file, options.table, options.column, rules, report, advance)
    except sqlite3.Error as error:
        raise ScanError(f"SQLite: {error}") from error


def _scan(
    file: InputFile,
    table: Optional[str],
    column: Optional[str],
    rules: Rules,
    report: Report,
    advance: Callable[[float], None],
) -> None:
    path = str(file.path)
    uri = f"file:{urllib.parse.quote(str(file.path.resolve()))}?mode=ro"
    reader = sqlite3.connect(uri, uri=True)
    try:
        table, column, rowid = _check(reader, table, column)
        total_rows = max(reader.execute(f"SELECT count(*) FROM {_quote(table)}").fetchone()[0], 1)
        with ExitStack() as stack:
            target = (
                stack.enter_context(_cleaning(file, reader, table, column, rowid))
                if file.dest
                else None
            )
            # Texts come as bytes, decoded here: undecodable bytes become lone surrogates (one
            # unit each) instead of failing the whole chunk, and encode back to the same bytes.
            reader.text_factory = bytes
            cursor = reader.execute(
                f"SELECT {rowid}, typeof({_quote(column)}), {_quote(column)} FROM {_quote(table)} ORDER BY {rowid}"
            )
            done = 0
            while rows := cursor.fetchmany(CHUNK_ROWS):
                texts: list[str] = []
                rowids: list[int] = []
                for rowid, kind, value in rows:
                    if kind in NOT_TEXT:
                        report.error(
                            path, f"rowid {rowid}: {column} holds {NOT_TEXT[kind]}, not text"
                        )
                        continue
                    texts.append(
                        value.decode("utf-8", errors="surrogateescape") if value is not None else ""
                    )
                    rowids.append(rowid)
                found = scan_batch(texts, rules)
                report.scanned(len(texts))
                report.add(found, lambda row: {"path": path, "table": table, "rowid": rowids[row]})
                if target is not None:
                    target.executemany(
                        f"INSERT INTO {STAGING} VALUES (?, ?, ?)",
                        [
                            (
                                rowids[row],
                                trimmed.text.encode("utf-8", errors="surrogateescape"),
                                json.dumps(note(trimmed)),
                            )
                            for row, trimmed in found.trimmed.items()
                        ],
                    )
                done += len(rows)
                advance(done / total_rows)
    finally:
        reader.close()


def _check(
    reader: sqlite3.Connection, table: Optional[str], column: Optional[str]
) -> tuple[str, str, str]:
    """The table, the column, and the name that reaches the table's rowid."""
    tables = [
        name
        for (name,) in reader.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        )
    ]
    if table is None or table not in tables:
        wanted = "SQLite needs --table" if table is None else f"no table {table!r}"
        raise ScanError(f"{wanted} (tables: {', '.join(tables) or 'none'})")
    columns = _columns(reader, table)
    if column is None or column not in columns:
        wanted = "SQLite needs --column" if column is None else f"no column {column!r} in {table}"
        raise ScanError(f"{wanted} (columns: {', '.join(columns)})")
    # Column names are case-insensitive: a column ROWID hides the rowid too.
    declared = {name.lower() for name in columns}
    free = [name for name in ROWID_NAMES if name not in declared]
    if not free:
        raise ScanError(
            f"table {table!r} has columns named rowid, _rowid_ and oid, which hide its rowid"
            " (the only way to tell its rows)"
        )
    try:
        reader.execute(f"SELECT {free[0]} FROM {_quote(table)} LIMIT 0")
    except sqlite3.OperationalError:
        raise ScanError(
            f"table {table!r} has no rowid to tell its rows by (a WITHOUT ROWID table)"
        ) from None
    return table, column, free[0]


@contextmanager
def _cleaning(
    file: InputFile, reader: sqlite3.Connection, table: str, column: str, rowid: str
) -> Iterator[sqlite3.Connection]:
    """The connection the cleaned rows are staged in; they are written when the scan ends."""
    (encoding,) = reader.execute("PRAGMA encoding").fetchone()
    if encoding != "UTF-8":
        # Staged texts are UTF-8 bytes cast to TEXT, which reads them in the database's encoding.
        raise ScanError(f"--trim writes UTF-8 databases only, this one is {encoding}")
    with ExitStack() as stack:
        if file.dest == file.path:
            target = sqlite3.connect(file.path, isolation_level=None)
        else:
            assert file.dest is not None
            pending = stack.enter_context(cleaned_copy(file))
            target = sqlite3.connect(pending.path, isolation_level=None)
            reader.backup(target)
        stack.callback(target.close)  # closed before the copy is renamed into place
        target.execute(f"CREATE TABLE {STAGING} (row_id INTEGER PRIMARY KEY, text BLOB, note TEXT)")
        yield target
        if target.execute(f"SELECT count(*) FROM {STAGING}").fetchone()[0]:
            _apply(target, table, column, rowid)


def _apply(target: sqlite3.Connection, table: str, column: str, rowid: str) -> None:
    """Writes the staged rows and their notes in one transaction."""
    t, text, notes = _quote(table), _quote(column), _quote(note_name(column))
    staged = f"FROM {STAGING} AS staged WHERE staged.row_id = {t}.{rowid}"
    target.execute("BEGIN IMMEDIATE")
    try:
        if note_name(column) not in _columns(target, table):
            target.execute(f"ALTER TABLE {t} ADD COLUMN {notes} TEXT")
        target.execute(
            f"UPDATE {t} SET {text} = (SELECT CAST(staged.text AS TEXT) {staged}), {notes} = (SELECT staged.note {staged})"
            f" WHERE {rowid} IN (SELECT row_id FROM {STAGING})"
        )
        target.execute("COMMIT")
    except BaseException:
        target.execute("ROLLBACK")
        raise


def _columns(connection: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in connection.execute(f"PRAGMA table_info({_quote(table)})")]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
