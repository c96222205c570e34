"""Plain text files: each file is one row. Its cleaned copy is the trimmed text, and the very
same bytes where nothing was found (the marker in the text says what was removed)."""

from __future__ import annotations

import sys
from typing import Callable

from loopbreak._core import Rules
from loopbreak.scanning.atomic import cleaned_copy
from loopbreak.scanning.findings import scan_batch
from loopbreak.scanning.inputs import STDIN, InputFile
from loopbreak.scanning.readers import ReaderOptions
from loopbreak.scanning.report import Report


def scan(
    file: InputFile,
    options: ReaderOptions,
    rules: Rules,
    report: Report,
    advance: Callable[[float], None],
) -> None:
    data = sys.stdin.buffer.read() if file.path == STDIN else file.path.read_bytes()
    # Undecodable bytes become lone surrogates: one unit each, so offsets still index the text,
    # and they encode back to the same bytes.
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        report.not_utf8(str(file.path), f"byte {error.start}")
        text = data.decode("utf-8", errors="surrogateescape")
    found = scan_batch([text], rules)
    report.scanned(1)
    report.add(found, lambda row: {"path": str(file.path)})
    if file.dest is not None:
        with cleaned_copy(file) as pending:
            if found.trimmed:
                pending.wanted = True
                data = found.trimmed[0].text.encode("utf-8", errors="surrogateescape")
            pending.path.write_bytes(data)
    advance(1.0)
