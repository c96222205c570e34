"""Scanning on a Ray cluster (``pip install loopbreak[ray]``): the batch scan of ``loopbreak scan``
run by Ray Data's ``map_batches`` over Arrow batches, so it reports exactly what the command
reports on one machine.

    import ray
    import loopbreak.scanning.ray

    chats = ray.data.read_parquet("s3://bucket/chats/").select_columns(["id", "text"])
    findings = loopbreak.scanning.ray.scan_dataset(chats, "text", keep=["id"])   # one row per finding
    findings.write_parquet("s3://bucket/chat-loops/")

``loopbreak scan --ray ADDRESS --column text PATH...`` runs the same scan over Parquet files that
every node can read (``scan_files``; the format is ``RAY_FORMAT`` of the readers' registry), with
``read_parquet_rows`` telling each row by its file and index.
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("ray", "ray.data", "pyarrow", "numpy")

import logging
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import ray
import ray.data

from loopbreak._core import Rules
from loopbreak.errors import ScanError
from loopbreak.scanning import parquet_files
from loopbreak.scanning.findings import RECORD_KEYS, scan_batch
from loopbreak.scanning.inputs import InputFile
from loopbreak.scanning.readers import RAY_FORMAT, READERS, ReaderOptions
from loopbreak.scanning.report import Report

# The columns of each finding, as in the JSON lines of ``loopbreak scan --json``.
FINDING_SCHEMA = pa.schema(
    [
        ("rule", pa.string()),
        ("period", pa.int64()),
        ("block", pa.string()),
        ("start", pa.int64()),
        ("repeats", pa.int64()),
        ("detected_at", pa.int64()),
        ("end", pa.int64()),
        ("trim_units", pa.int64()),
    ]
)


def scan_dataset(
    dataset: ray.data.Dataset,
    column: str,
    *,
    keep: Sequence[str] = (),
    rules: Optional[Rules] = None,
    num_cpus: int = 1,
) -> ray.data.Dataset:
    """The findings of the string column ``column`` of ``dataset``, one row per finding: the
    ``keep`` columns of the row it was found in (an id, a path, ...), then ``FINDING_SCHEMA``.
    Null scans as an empty text. Each task scans its Arrow batch with the batch API on
    ``num_cpus`` threads, the CPUs Ray reserves for it, so tasks never crowd a node's cores."""
    # Rules do not pickle; their fields do.
    fields = rules.to_dict() if rules is not None else None
    scan = partial(_scan_table, column=column, keep=list(keep), rules=fields, threads=num_cpus)
    return dataset.map_batches(scan, batch_format="pyarrow", num_cpus=num_cpus)


def read_parquet_rows(paths: Sequence[str], column: str) -> ray.data.Dataset:
    """A dataset of ``path``, ``row`` (the row's index in its file) and ``column``, from Parquet
    files every node can read: one task per row group, sized from the files' footers (read
    here). Ray's own ``read_parquet`` cannot tell a row's index in its file."""
    pieces = []
    for path in paths:
        metadata = pq.read_metadata(path)
        first_row = 0
        for group in range(metadata.num_row_groups):
            pieces.append({"path": str(path), "row_group": group, "first_row": first_row})
            first_row += metadata.row_group(group).num_rows
    return ray.data.from_items(pieces, override_num_blocks=max(len(pieces), 1)).map_batches(
        partial(_read_pieces, column=column), batch_format="pyarrow", batch_size=1
    )


def scan_files(
    address: str, inputs: list[InputFile], options: ReaderOptions, rules: Rules, report: Report
) -> None:
    """Scans the Parquet files among ``inputs`` on the cluster at ``address`` and reports the
    findings in the order a local scan would (``loopbreak scan --ray``)."""
    column = options.column
    rows_by_path: dict[str, int] = {}
    for file in inputs:
        path = str(file.path)
        try:
            if file.format != RAY_FORMAT:
                raise ScanError(
                    f"--ray scans {READERS[RAY_FORMAT].title} files only, this is {file.format}"
                )
            metadata = pq.read_metadata(file.path)
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
    assert column is not None  # text_column_type refused every file without one
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


def _scan_table(
    batch: Any, column: str, keep: list[str], rules: Optional[dict[str, int]], threads: int
) -> Any:
    texts = batch.column(column)
    found = scan_batch(texts, Rules(**rules) if rules is not None else None, threads)
    rows = pa.array(found.rows, pa.int64())
    columns = {name: batch.column(name).take(rows) for name in keep}
    for field in FINDING_SCHEMA:
        columns[field.name] = pa.array([record[field.name] for record in found.records], field.type)
    return pa.table(columns)


def _read_pieces(pieces: Any, column: str) -> Any:
    tables = []
    for path, group, first_row in zip(
        *(pieces.column(name).to_pylist() for name in ("path", "row_group", "first_row"))
    ):
        texts = pq.ParquetFile(path).read_row_group(group, columns=[column]).column(column)
        tables.append(
            pa.table(
                {
                    "path": pa.repeat(path, len(texts)),
                    "row": pa.array(np.arange(first_row, first_row + len(texts), dtype=np.int64)),
                    column: texts,
                }
            )
        )
    return pa.concat_tables(tables)
