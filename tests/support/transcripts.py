"""Stored model outputs for the ``loopbreak scan`` tests: clean answers and three kinds of runaway
loop, written as the files the command reads (Parquet, SQLite)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import pyarrow as pa
import pyarrow.parquet as pq

CLEAN_PREFIX = "Answer {i}: checking the inventory before the next step.\n"


def clean_text(i: int) -> str:
    weather = ("sunny", "rainy", "cloudy")[i % 3]
    return f"Row {i}: the weather in city {i % 97} is {weather} today, and the forecast says more of it."


def loop_text(i: int) -> str:
    """A clean prefix (``CLEAN_PREFIX`` with ``i``), then one of three kinds of loop."""
    prefix = CLEAN_PREFIX.format(i=i)
    kind = i % 3
    if kind == 0:  # a short block, as in the README's opening loop: loadTools. loadTools. ...
        return prefix + f"loadTools{i % 5}. " * 80
    if kind == 1:  # the same line over and over; trailing spaces that vary make it no periodic run
        line = f"- call read_file(path='src/{i % 11}.py')"
        return prefix + "".join(line + " " * (bin(j).count("1") % 3) + "\n" for j in range(120))
    # a paragraph longer than max_period, repeated
    paragraph = " ".join(
        f"sentence {j} of the plan for item {i % 13} is to check the state again." for j in range(4)
    )
    return prefix + (paragraph + "\n") * 6


def is_loop_row(i: int, every: int) -> bool:
    return i % every == every - 1


def texts(rows: int, every: int, nulls: bool = False) -> list[Optional[str]]:
    """``rows`` texts, every ``every``-th one a loop; with ``nulls`` every 1000th row (not a
    loop row) is null."""
    out: list[Optional[str]] = []
    for i in range(rows):
        if is_loop_row(i, every):
            out.append(loop_text(i))
        elif nulls and i % 1000 == 500:
            out.append(None)
        else:
            out.append(clean_text(i))
    return out


def write_parquet(path: Path, values: list[Optional[str]], row_group_size: int = 10_000) -> None:
    """An ``id`` column (row number) and a ``text`` column."""
    table = pa.table(
        {"id": pa.array(range(len(values)), pa.int64()), "text": pa.array(values, pa.string())}
    )
    pq.write_table(table, path, row_group_size=row_group_size)


def write_sqlite(path: Path, values: Sequence[object]) -> None:
    """A ``messages`` table: ``role`` and ``body`` (no declared type, so an integer stays one)."""
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, role TEXT, body)")
        connection.executemany(
            "INSERT INTO messages (role, body) VALUES ('assistant', ?)", [(v,) for v in values]
        )
    connection.close()
