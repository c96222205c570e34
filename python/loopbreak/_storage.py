"""Where the audit log and receipts are written: the SQLite connection and the row timestamp.

Callers pass either a path or a connection they already hold (for example the one their stream
guard's ``runs`` table lives in): loopbreak then creates only its own tables there, and closes
only connections it opened itself.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime, timezone
from typing import Union

Database = Union[str, os.PathLike[str], sqlite3.Connection]


def connect(db: Database) -> tuple[sqlite3.Connection, bool]:
    """The connection to write to, and whether loopbreak opened it (and so must close it)."""
    if isinstance(db, sqlite3.Connection):
        return db, False
    if isinstance(db, (str, os.PathLike)):
        return sqlite3.connect(db), True
    raise TypeError(f"db must be a path or a sqlite3.Connection, got {type(db).__name__}")


def utc_now() -> str:
    """The wall-clock time a line or row is written, ISO 8601 in UTC."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")
