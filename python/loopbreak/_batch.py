"""Scanning many texts at once, on all cores, with the GIL released.

``scan_many(texts)`` returns each text's findings as ``Finding`` objects; ``scan_columns(texts)``
returns every finding of the batch as numpy columns, for batches too large for one object per
finding. Both take a list of ``str`` or a pyarrow string array (``string``/``large_string``,
plain or chunked); an Arrow column is read from its buffers, without a Python object per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from loopbreak._core import RULE_NAMES, Finding, Rules, scan_utf8_columns, scan_utf8_texts
from loopbreak._core import scan_many as _scan_many
from loopbreak._extras import require_extra

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

COLUMNS = ("row", "rule", "period", "start", "repeats", "detected_at", "end")

Texts = Union[Sequence[str], Any]  # Any: a pyarrow StringArray, LargeStringArray or ChunkedArray


def _arrow_chunks(texts: Any) -> Optional[list[Any]]:
    """The chunks of a pyarrow string column, each with its nulls as empty texts, or None if
    ``texts`` is not one (pyarrow is imported only for its own objects)."""
    if not type(texts).__module__.startswith("pyarrow"):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(texts, pa.ChunkedArray):
        chunks = list(texts.chunks)
    elif isinstance(texts, pa.Array):
        chunks = [texts]
    else:
        return None
    for chunk in chunks:
        if not (pa.types.is_string(chunk.type) or pa.types.is_large_string(chunk.type)):
            raise TypeError(
                f"an Arrow column of texts must be string or large_string, got {chunk.type}"
            )
    # A null row has no text, whatever bytes its offsets span: it scans as "" (a copy made by
    # Arrow, only of chunks that hold a null).
    return [pc.fill_null(chunk, "") if chunk.null_count else chunk for chunk in chunks]


def _buffers(chunk: Any) -> tuple[Any, Any]:
    """The UTF-8 data and the offsets of an Arrow string chunk, as numpy views of its buffers."""
    import numpy as np
    import pyarrow as pa

    _, offsets_buffer, data_buffer = chunk.buffers()
    width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=width)[
        chunk.offset : chunk.offset + len(chunk) + 1
    ]
    data = (
        np.zeros(0, np.uint8) if data_buffer is None else np.frombuffer(data_buffer, dtype=np.uint8)
    )
    return data, np.ascontiguousarray(offsets)


def scan_many(
    texts: Texts, rules: Optional[Rules] = None, threads: Optional[int] = None
) -> list[list[Finding]]:
    """The findings of every text, in order: ``[scan(t) for t in texts]``, in parallel.
    ``threads`` (default: one per core) caps the worker threads. A null in an Arrow column
    scans as an empty text."""
    chunks = _arrow_chunks(texts)
    if chunks is None:
        return _scan_many(texts, rules, threads)
    found: list[list[Finding]] = []
    for chunk in chunks:
        found.extend(scan_utf8_texts(*_buffers(chunk), rules, threads))
    return found


def scan_columns(
    texts: Texts, rules: Optional[Rules] = None, threads: Optional[int] = None
) -> dict[str, npt.NDArray[np.int64]]:
    """Every finding of the batch as int64 numpy columns ``row`` (index of the text), ``rule``
    (an index into ``RULE_NAMES``), ``period``, ``start``, ``repeats``, ``detected_at`` and
    ``end``, one entry per finding, in row order; ``repeats`` and ``end`` are each region's
    whole extent, as ``scan`` reports them. Needs numpy (``pip install 'loopbreak[numpy]'``). A
    null in an Arrow column scans as an empty text."""
    require_extra("numpy", "numpy")
    import numpy as np

    chunks = _arrow_chunks(texts)
    if chunks is None:
        columns: dict[str, list[int]] = {name: [] for name in COLUMNS}
        for row, findings in enumerate(_scan_many(texts, rules, threads)):
            for f in findings:
                values = (
                    row,
                    RULE_NAMES.index(f.rule),
                    f.period,
                    f.start,
                    f.repeats,
                    f.detected_at,
                    f.end,
                )
                for name, value in zip(COLUMNS, values):
                    columns[name].append(value)
        return {name: np.asarray(values, dtype=np.int64) for name, values in columns.items()}
    parts: list[list[npt.NDArray[np.int64]]] = [[] for _ in COLUMNS]
    first_row = 0
    for chunk in chunks:
        columns_bytes = scan_utf8_columns(*_buffers(chunk), rules, threads)
        for part, raw in zip(parts, columns_bytes):
            part.append(np.frombuffer(raw, dtype="<i8").astype(np.int64))
        parts[0][-1] += first_row
        first_row += len(chunk)
    return {
        name: np.concatenate(part) if part else np.zeros(0, np.int64)
        for name, part in zip(COLUMNS, parts)
    }
