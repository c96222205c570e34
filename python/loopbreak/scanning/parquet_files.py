"""Parquet: each row of ``--column`` (a string column) is one row; rows are read in batches and
scanned straight from their Arrow buffers. Null scans as an empty text.

The cleaned copy has every column of the input, the trimmed texts in place, and a string column
``<column>_loopbreak`` holding each trimmed row's removals as JSON (null where nothing was
found). It is written with pyarrow's defaults, one row group per batch read."""

from __future__ import annotations

from loopbreak._core import Rules
from loopbreak._extras import require_extra

require_extra("parquet", "pyarrow", "numpy")

import json
from contextlib import ExitStack
from typing import Any, Callable, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from loopbreak.errors import ScanError
from loopbreak.scanning.atomic import cleaned_copy
from loopbreak.scanning.findings import BatchFindings, note, note_name, scan_batch
from loopbreak.scanning.inputs import InputFile
from loopbreak.scanning.readers import ReaderOptions
from loopbreak.scanning.report import Report

# Rows per batch: enough to keep every core busy, few enough that a batch of long runaway
# outputs stays small in memory.
BATCH_ROWS = 8192


def scan(
    file: InputFile,
    options: ReaderOptions,
    rules: Rules,
    report: Report,
    advance: Callable[[float], None],
) -> None:
    try:
        _scan(file, options.column, rules, report, advance)
    except pa.ArrowException as error:
        raise ScanError(f"cannot read it as Parquet: {error}") from error


def text_column_type(schema: Any, column: Optional[str]) -> Any:
    """The type of ``column`` in ``schema``; ``ScanError`` if it is missing or not a string."""
    if column is None:
        raise ScanError(f"Parquet needs --column (columns: {', '.join(schema.names)})")
    if column not in schema.names:
        raise ScanError(f"no column {column!r} (columns: {', '.join(schema.names)})")
    kind = schema.field(column).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise ScanError(f"column {column!r} holds {kind}, not text")
    return kind


def _scan(
    file: InputFile,
    column: Optional[str],
    rules: Rules,
    report: Report,
    advance: Callable[[float], None],
) -> None:
    parquet = pq.ParquetFile(file.path)
    schema = parquet.schema_arrow
    text_column_type(schema, column)
    assert column is not None
    total_rows = max(parquet.metadata.num_rows, 1)
    path = str(file.path)
    with ExitStack() as stack:
        writer, pending = None, None
        if file.dest is not None:
            pending = stack.enter_context(cleaned_copy(file))
            out_schema = _with_note_column(schema, column)
            writer = stack.enter_context(pq.ParquetWriter(pending.path, out_schema))
        first_row = 0
        # Without a copy to write, only the text column is read.
        for batch in parquet.iter_batches(
            batch_size=BATCH_ROWS, columns=None if writer else [column]
        ):
            texts = batch.column(column)
            found = scan_batch(texts, rules)
            report.scanned(batch.num_rows)
            report.add(found, lambda row: {"path": path, "row": first_row + row})
            if writer is not None and pending is not None:
                writer.write_batch(_cleaned(batch, column, out_schema, found))
                pending.wanted = pending.wanted or bool(found.trimmed)
            first_row += batch.num_rows
            advance(first_row / total_rows)


def _with_note_column(schema: Any, column: str) -> Any:
    name = note_name(column)
    if name not in schema.names:
        return schema.append(pa.field(name, pa.string()))
    if not pa.types.is_string(schema.field(name).type):
        raise ScanError(
            f"column {name!r} is there already and holds {schema.field(name).type}, not text"
        )
    return schema


def _cleaned(batch: Any, column: str, out_schema: Any, found: BatchFindings) -> Any:
    """``batch`` with its trimmed texts in place and their removals in the note column."""
    names = list(batch.schema.names)
    columns = list(batch.columns)
    notes_name = note_name(column)
    if notes_name not in names:
        names.append(notes_name)
        columns.append(pa.nulls(batch.num_rows, pa.string()))
    if found.trimmed:
        rows = sorted(found.trimmed)
        mask = np.zeros(batch.num_rows, dtype=bool)
        mask[rows] = True
        text_index, notes_index = names.index(column), names.index(notes_name)
        texts = [found.trimmed[row].text for row in rows]
        notes = [json.dumps(note(found.trimmed[row]), ensure_ascii=False) for row in rows]
        columns[text_index] = pc.replace_with_mask(
            columns[text_index], mask, pa.array(texts, columns[text_index].type)
        )
        columns[notes_index] = pc.replace_with_mask(
            columns[notes_index], mask, pa.array(notes, pa.string())
        )
    return pa.RecordBatch.from_arrays(columns, schema=out_schema)
