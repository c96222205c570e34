"""Cleaned copies are written to a temporary file beside their destination, flushed to disk,
then renamed over it: a crash leaves the old file or the new one, never half of one."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from loopbreak.scanning.inputs import InputFile


@dataclass
class Pending:
    """The temporary file to write. Clear ``wanted`` to leave the destination as it was."""

    path: Path
    wanted: bool = True


@contextmanager
def cleaned_copy(file: InputFile) -> Iterator[Pending]:
    """``replacing`` the copy of ``file``. A copy in place of the input is wanted only once
    the writer trims something and sets ``wanted``: a file without findings is never rewritten."""
    assert file.dest is not None
    with replacing(file.dest, keep_mode_of=file.path) as pending:
        pending.wanted = file.dest != file.path
        yield pending


@contextmanager
def replacing(dest: Path, keep_mode_of: Optional[Path] = None) -> Iterator[Pending]:
    """Yields an empty temporary file beside ``dest`` to write; when the block ends without an
    error (and the file is still wanted) it replaces ``dest``, with the permission bits of
    ``keep_mode_of``. Otherwise it is deleted."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    # A dot name, so a directory scan that meets it skips it.
    descriptor, name = tempfile.mkstemp(
        dir=dest.parent, prefix=f".{dest.name}.", suffix=".loopbreak-tmp"
    )
    os.close(descriptor)
    pending = Pending(Path(name))
    try:
        yield pending
        if pending.wanted:
            if keep_mode_of is not None:
                shutil.copymode(keep_mode_of, pending.path)
            _fsync(pending.path)
            os.replace(pending.path, dest)
            _fsync(dest.parent)  # makes the rename itself durable
    finally:
        pending.path.unlink(missing_ok=True)


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
