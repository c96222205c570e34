"""The files behind ``loopbreak scan PATH...``: directories are walked, each file's format is
told by its first bytes or its name (``loopbreak.scanning.readers``), and with ``--trim`` each
file gets the path of its copy."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from loopbreak.scanning.readers import BINARY, DEFAULT_FORMAT, detect_format

STDIN = Path("-")


@dataclass(frozen=True)
class InputFile:
    path: Path
    format: str  # a key of loopbreak.scanning.readers.READERS
    size: int  # bytes, for the progress bar (0 for stdin)
    dest: Optional[Path]  # where the cleaned copy goes; None without --trim


@dataclass
class Inputs:
    files: list[InputFile] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, why it is not scanned)
    skipped: int = 0  # binary files, not scanned


def find_inputs(
    paths: list[Path],
    *,
    format: Optional[str] = None,
    out: Optional[Path] = None,
    in_place: bool = False,
) -> Inputs:
    """The files to scan, in order: a directory's files sorted by path, hidden ones left out.
    With ``out`` the copies land as ``cp -r PATH... OUT`` would put them; with ``in_place``
    each copy replaces its input."""
    found = Inputs()
    excluded = out.resolve() if out is not None else None
    for path in paths:
        if path == STDIN:
            found.files.append(InputFile(STDIN, format or DEFAULT_FORMAT, 0, None))
        elif path.is_dir():
            for file in _walk(path, excluded, found):
                dest = (
                    out / path.resolve().name / file.relative_to(path) if out is not None else None
                )
                _add(file, dest, format, in_place, found)
        elif path.exists():
            _add(path, out / path.name if out is not None else None, format, in_place, found)
        else:
            found.problems.append((str(path), "no such file or directory"))
    if not in_place:
        _check_destinations(found)
    return found


def _add(
    path: Path, dest: Optional[Path], format: Optional[str], in_place: bool, found: Inputs
) -> None:
    try:
        kind = format or detect_format(path)
        size = path.stat().st_size
    except OSError as error:
        found.problems.append((str(path), error.strerror or str(error)))
        return
    if kind == BINARY:
        found.skipped += 1
        return
    found.files.append(InputFile(path, kind, size, path if in_place else dest))


def _walk(top: Path, excluded: Optional[Path], found: Inputs) -> Iterator[Path]:
    def unreadable(error: OSError) -> None:
        found.problems.append((str(error.filename), error.strerror or str(error)))

    for root, dirs, files in os.walk(top, onerror=unreadable):
        # Sorted in place, so the walk itself goes in order; the output folder is never input.
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and Path(root, d).resolve() != excluded
        )
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(root, name)


def _check_destinations(found: Inputs) -> None:
    """Drops, as problems, files whose copy would overwrite their input or another's copy."""
    writers: dict[Path, Path] = {}
    kept = []
    for file in found.files:
        if file.dest is None:
            kept.append(file)
            continue
        dest = file.dest.resolve()
        if dest == file.path.resolve():
            found.problems.append(
                (str(file.path), "its cleaned copy would overwrite it (use --in-place)")
            )
        elif dest in writers:
            found.problems.append(
                (str(file.path), f"its cleaned copy would overwrite that of {writers[dest]}")
            )
        else:
            writers[dest] = file.path
            kept.append(file)
    found.files = kept
