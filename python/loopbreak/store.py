"""The one SQLite store: every table loopbreak writes, how a database is opened, and the timestamp
format of every row.

``Database(path)`` opens (or creates) a database file and ``Database(connection)`` adopts a
``sqlite3.Connection`` the caller already holds (the one their own tables live in); every saver in
the package takes a ``Database``: ``save_result(db, guarded)``, ``save_receipt(db, receipt)``,
``SqliteSink(db)``. Opening creates each table below that does not exist yet, gives a table an
older loopbreak named otherwise its name (``runs`` of model turns is now ``turns``), and stamps
the schema version in ``PRAGMA user_version``; a database stamped by a newer loopbreak raises
``StoreError``.

A path is opened for several processes writing at once, as worker pools do: WAL journal (readers
never block the writer, and a commit is one append) and a busy timeout, so a writer waits for the
lock instead of raising ``database is locked``. An adopted connection keeps the journal mode and
timeout its owner chose: the file is theirs.

``insert`` commits its row at once (a saved turn, a receipt, a stop decision). ``queue`` is for rows
that come many a second and need not be on disk the moment they are made (allow and warn audit
decisions): they wait in memory and are written in one transaction with the next ``insert``, once
``BATCH_ROWS`` rows wait or ``BATCH_SECONDS`` have passed since the first (checked at each
``queue``), by ``flush()``, by ``close()``, and when the ``Database`` is garbage-collected or the
interpreter exits. Rows are written in the order they were queued or inserted. Only a process
killed outright (or an OS crash) can lose queued rows: at most ``BATCH_ROWS`` of them, never an
inserted one. After ``close()`` every write raises ``StoreError``: nothing is queued to vanish.

Every row is encodable: a lone surrogate in a text (half of an emoji split by a model's
tokenizer, an undecodable byte) is stored as its JSON escape (``\\ud83d``), which SQLite can
write, so one such row never fails the batch it is in, nor the batches queued after it.

Timestamps are ISO 8601 in UTC with milliseconds (``2026-12-01T09:03:40.123+00:00``), in every
table.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import threading
import time
import urllib.parse
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from types import TracebackType
from typing import Any, Optional, Union

from loopbreak._text import escape_surrogates
from loopbreak.errors import StoreError

SCHEMA_VERSION = 2
"""Stamped in ``PRAGMA user_version``; raised whenever a table changes shape or name. Version 2
renamed the table of saved model turns from ``runs`` to ``turns`` (see ``_OLD_NAMES``)."""

BUSY_TIMEOUT_MS = 10_000
"""How long a writer waits for another process's transaction before SQLite gives up. Commits
here are a few small inserts (milliseconds), so ten seconds means a stuck writer, not load."""

BATCH_ROWS = 100
BATCH_SECONDS = 0.2
"""Queued rows are written once this many wait, or this long after the first of them was queued.
A transaction per batch instead of per row: 4-6x the decisions per second, for 1 or 8 processes
on one database (docs/benchmarks.md); a reader of the table still sees a decision within about a
step of an agent's run."""

# An INSERT waiting in a Database's queue: its SQL and its values.
_Statement = tuple[str, tuple[Any, ...]]
_Queue = list[_Statement]

TABLES = {
    # A model turn saved by the stream guard (loopbreak.streaming.persist).
    "turns": """
        CREATE TABLE IF NOT EXISTS turns (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            status TEXT NOT NULL,     -- ok, degenerate, cancelled, error (loopbreak.streaming.guard.Status)
            error TEXT,               -- the stop reason; NULL when status is ok
            text TEXT NOT NULL,       -- what to keep: trimmed, or the no-text marker
            finding TEXT,             -- JSON of Degeneration.to_dict(); NULL without a finding
            stop_message TEXT,        -- for people: why the run policy stopped the run; else NULL
            created_at TEXT NOT NULL
        )""",
    # Every decision of a run policy (loopbreak.agent.audit.SqliteSink). `check` and `limit` are
    # SQL keywords, stored as check_name and limit_value.
    "audit_events": """
        CREATE TABLE IF NOT EXISTS audit_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            step INTEGER NOT NULL,
            decision TEXT NOT NULL,
            reason TEXT NOT NULL,
            check_name TEXT NOT NULL,
            value NUMERIC,
            limit_value NUMERIC,
            action_key TEXT,
            elapsed REAL NOT NULL,
            message TEXT,             -- a stop's one line for people; NULL for allow and warn
            recorded_at TEXT NOT NULL
        )""",
    # How a run ended (loopbreak.agent.receipt.save_receipt); the newest row of a run is current.
    "receipts": """
        CREATE TABLE IF NOT EXISTS receipts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL,
            state TEXT NOT NULL,
            reason TEXT NOT NULL,
            receipt TEXT NOT NULL,    -- JSON of Receipt.to_dict()
            created_at TEXT NOT NULL
        )""",
}

_OLD_NAMES = {"turns": "runs"}
"""The tables a file of schema version 1 (or an unstamped one) has under another name: ``runs``
held model turns, while every other "run" in loopbreak is a whole agent run. Opening such a file
for writing renames them; opening it read-only reads them under their old name."""


def _columns(schema: str) -> set[str]:
    """The column names of a ``CREATE TABLE`` statement of ``TABLES``: one per line."""
    body = schema[schema.index("(") + 1 :]
    return {
        line.split()[0] for line in body.splitlines() if line.strip() and line.split()[0] != ")"
    }


def utc_now() -> str:
    """The wall-clock time a row is written, as every table stores it."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def check_database(db: object) -> Database:
    """``db`` if it is a ``Database``; the ``TypeError`` every saver raises otherwise."""
    if not isinstance(db, Database):
        raise TypeError(
            f"db must be a loopbreak.store.Database, not {type(db).__name__} "
            "(open one with Database(path) or Database(connection))"
        )
    return db


def _use_wal(connection: sqlite3.Connection) -> None:
    """Puts the file in WAL mode. Switching a file that is not in WAL mode yet fails at once, with
    no busy wait, while another connection writes to it (``database is locked``): two processes
    opening a new store together, a test reading a store a server has just created. So the switch
    is retried for as long as the busy timeout; in WAL mode already, it takes no lock."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


class Database:
    """A loopbreak database: a path to open, or a ``sqlite3.Connection`` to adopt.

    Use it as a context manager or call ``close()``; only a connection opened here is closed.
    Threads may share one ``Database`` (agent frameworks run their hooks on worker threads): its
    writes are serialised by a lock, and a connection opened here may be used from any thread.
    An adopted connection keeps its own thread rule.
    """

    def __init__(self, target: Union[str, os.PathLike[str], sqlite3.Connection]) -> None:
        if isinstance(target, sqlite3.Connection):
            self.connection, self._owned = target, False
        elif isinstance(target, (str, os.PathLike)):
            # Any thread may write (under the lock), and queued rows are written at interpreter
            # exit, which runs on the main thread.
            self.connection = sqlite3.connect(
                target, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False
            )
            self._owned = True
            _use_wal(self.connection)
            # NORMAL is durable across a process crash in WAL mode (only an OS crash can lose the
            # last commits), and saves an fsync per commit.
            self.connection.execute("PRAGMA synchronous=NORMAL")
        else:
            raise TypeError(
                f"a database is a path or a sqlite3.Connection, not {type(target).__name__}"
            )
        self._lock = threading.Lock()
        self._closed = False
        # (SQL, values) of each queued row, oldest first; written by _write_queued, which the
        # finalizer also calls (it holds the connection and the list, not the Database).
        self._queued: _Queue = []
        self._first_queued_at = 0.0
        self._finalizer = weakref.finalize(self, _write_queued, self.connection, self._queued)
        try:
            self._create_tables()
        except BaseException:
            self.close()
            raise

    def _create_tables(self) -> None:
        connection = self.connection
        (version,) = connection.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the database has schema version {version}, newer than this loopbreak's "
                f"({SCHEMA_VERSION}): upgrade loopbreak to write to it"
            )
        with connection:
            if version < SCHEMA_VERSION:
                if not connection.in_transaction:
                    # One writer from here to the stamp: of two processes opening an old file at
                    # once, one renames its tables and the other then finds them renamed.
                    connection.execute("BEGIN IMMEDIATE")
                _rename_old_tables(connection)
            for schema in TABLES.values():
                connection.execute(schema)
            if version < SCHEMA_VERSION:
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        # An adopted database may hold a table of the caller's under one of these names: writing
        # loopbreak's rows into it would fail later, or worse, not fail.
        _check_tables(connection, "use another database file", SCHEMA_VERSION)

    def insert(self, table: str, row: Mapping[str, Any]) -> int:
        """Inserts ``row`` (column name -> value) into ``table`` and commits, together with the
        rows queued before it; returns its id."""
        statement = _insert_statement(table, row)
        with self._lock, self._open(), self.connection:
            _execute_queued(self.connection, self._queued)
            cursor = self.connection.execute(*statement)
            self._queued.clear()
        assert cursor.lastrowid is not None  # always set after an INSERT
        return cursor.lastrowid

    def queue(self, table: str, row: Mapping[str, Any]) -> None:
        """Inserts ``row`` into ``table`` with the next commit: at the latest once ``BATCH_ROWS``
        rows wait or ``BATCH_SECONDS`` after the first of them (see the module's docstring)."""
        statement = _insert_statement(table, row)
        now = time.monotonic()
        with self._lock, self._open():
            if not self._queued:
                self._first_queued_at = now
            self._queued.append(statement)
            due = len(self._queued) >= BATCH_ROWS or now - self._first_queued_at >= BATCH_SECONDS
        if due:
            self.flush()

    def flush(self) -> None:
        """Commits the queued rows."""
        with self._lock, self._open():
            _write_queued(self.connection, self._queued)

    def close(self) -> None:
        """Commits the queued rows, then closes the connection if it was opened here; under the
        lock, so a row queued by another thread meanwhile is written or refused, never dropped.
        Closing again does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                _write_queued(self.connection, self._queued)
            finally:
                self._finalizer.detach()
                if self._owned:
                    self.connection.close()

    @contextmanager
    def _open(self) -> Iterator[None]:
        """Raises ``StoreError`` once the database is closed (called under the lock)."""
        if self._closed:
            raise StoreError("the database is closed: open it again to write to it")
        yield

    def __enter__(self) -> Database:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()


def open_read_only(path: Union[str, os.PathLike[str]]) -> sqlite3.Connection:
    """An existing loopbreak database, opened for reading only: nothing is created or changed in
    it, so an operator looking at the file that agents write cannot disturb them. Raises
    ``StoreError`` if there is no such file or it is not a loopbreak database this version reads."""
    if not os.path.isfile(path):
        raise StoreError(f"no database file {os.fspath(path)!r}")
    uri = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"
    connection = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        (version,) = connection.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the database has schema version {version}, newer than this loopbreak's "
                f"({SCHEMA_VERSION}): upgrade loopbreak to read it"
            )
        _check_tables(connection, "is it a loopbreak database?", version)
    except sqlite3.DatabaseError as error:  # not SQLite at all
        connection.close()
        raise StoreError(f"cannot read {os.fspath(path)!r} as SQLite: {error}") from None
    except StoreError:
        connection.close()
        raise
    return connection


def _table_columns(connection: sqlite3.Connection, table: str) -> set[str]:
    """The column names of ``table``; none if there is no such table."""
    return {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}


def _rename_old_tables(connection: sqlite3.Connection) -> None:
    """Gives each table of ``_OLD_NAMES`` its name in ``TABLES``. A table under the old name
    that lacks one of loopbreak's columns is the caller's own, and is left alone."""
    for table, old in _OLD_NAMES.items():
        have = _table_columns(connection, old)
        if have and _columns(TABLES[table]) <= have and not _table_columns(connection, table):
            connection.execute(f"ALTER TABLE {old} RENAME TO {table}")


def _check_tables(connection: sqlite3.Connection, advice: str, version: int) -> None:
    """Raises ``StoreError`` if a table of ``TABLES`` is missing or lacks one of its columns, in
    a file of schema ``version``: one older than ``SCHEMA_VERSION`` may have a table under its
    old name (opened read-only, nothing renamed it)."""
    for table, schema in TABLES.items():
        name = table
        if version < SCHEMA_VERSION and not _table_columns(connection, table):
            name = _OLD_NAMES.get(table, table)
        have = _table_columns(connection, name)
        missing = _columns(schema) - have
        if not have:
            raise StoreError(f"the database has no table {table!r}: {advice}")
        if missing:
            raise StoreError(
                f"the database has a table {name!r} that is not loopbreak's "
                f"(it lacks {', '.join(sorted(missing))}): {advice}"
            )


def _insert_statement(table: str, row: Mapping[str, Any]) -> _Statement:
    if table not in TABLES:
        raise ValueError(f"no table {table!r} in the loopbreak store")
    marks = ", ".join("?" for _ in row)
    values = tuple(
        escape_surrogates(value) if isinstance(value, str) else value for value in row.values()
    )
    return f"INSERT INTO {table} ({', '.join(row)}) VALUES ({marks})", values


def _execute_queued(connection: sqlite3.Connection, queued: _Queue) -> None:
    """Executes the queued inserts in order, inside the caller's transaction."""
    for sql, statements in itertools.groupby(queued, key=lambda statement: statement[0]):
        connection.executemany(sql, [values for _, values in statements])


def _write_queued(connection: sqlite3.Connection, queued: _Queue) -> None:
    """Commits the queued rows in one transaction and empties the queue; on an error the rows
    stay queued (the next commit tries again) and the error is raised."""
    if not queued:
        return
    with connection:
        _execute_queued(connection, queued)
    queued.clear()
