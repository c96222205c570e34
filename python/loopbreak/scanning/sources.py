"""The files behind ``loopbreak scan PATH...``: directories are walked, each file's format is
told by its first bytes or its name, and with ``--trim`` each file gets the path of its copy."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

FORMATS = ("text", "jsonl", "parquet", "sqlite")
STDIN = Path("-")
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")
# Enough of a file to tell a binary one: a NUL byte this early is not in text or JSON lines.
SNIFF_BYTES = 8192


@dataclass(frozen=True)
class Source:
    path: Path
    format: str
    size: int  # bytes, for the progress bar (0 for stdin)
    dest: Optional[Path]  # where the cleaned copy goes; None without --trim


@dataclass
class Sources:
    files: list[Source] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, why it is not scanned)
    skipped: int = 0  # binary files, not scanned


def find_sources(
    paths: list[Path],
    *,
    format: Optional[str] = None,
    out: Optional[Path] = None,
    in_place: bool = False,
) -> Sources:
    """The files to scan, in order: a directory's files sorted by path, hidden ones left out.
    With ``out`` the copies land as ``cp -r PATH... OUT`` would put them; with ``in_place``
    each copy replaces its input."""
    found = Sources()
    excluded = out.resolve() if out is not None else None
    for path in paths:
        if path == STDIN:
            found.files.append(Source(STDIN, format or "text", 0, None))
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


def detect_format(path: Path) -> str:
    """``sqlite`` or ``parquet`` by their magic bytes, ``jsonl`` by the name, ``binary`` for a
    NUL byte in the first few KiB, else ``text``."""
    with path.open("rb") as file:
        head = file.read(SNIFF_BYTES)
    if head.startswith(b"SQLite format 3\x00"):
        return "sqlite"
    if head.startswith(b"PAR1"):
        return "parquet"
    if path.suffix.lower() in JSON_LINES_SUFFIXES:
        return "jsonl"
    return "binary" if b"\x00" in head else "text"


def _add(
    path: Path, dest: Optional[Path], format: Optional[str], in_place: bool, found: Sources
) -> None:
    try:
        kind = format or detect_format(path)
        size = path.stat().st_size
    except OSError as error:
        found.problems.append((str(path), error.strerror or str(error)))
        return
    if kind == "binary":
        found.skipped += 1
        return
    found.files.append(Source(path, kind, size, path if in_place else dest))


def _walk(top: Path, excluded: Optional[Path], found: Sources) -> Iterator[Path]:
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


def _check_destinations(found: Sources) -> None:
    """Drops, as problems, files whose copy would overwrite their input or another's copy."""
    writers: dict[Path, Path] = {}
    kept = []
    for source in found.files:
        if source.dest is None:
            kept.append(source)
            continue
        dest = source.dest.resolve()
        if dest == source.path.resolve():
            found.problems.append(
                (str(source.path), "its cleaned copy would overwrite it (use --in-place)")
            )
        elif dest in writers:
            found.problems.append(
                (str(source.path), f"its cleaned copy would overwrite that of {writers[dest]}")
            )
        else:
            writers[dest] = source.path
            kept.append(source)
    found.files = kept
