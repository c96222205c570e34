"""The texts the benches run on, chosen exactly as in benches/core.rs so the Rust and Python
numbers describe the same input.

- Clean: a spread of the running Python's standard library (``*.py``, ``*.rst``, ``*.txt``), so it
  exists wherever Python does.
- Loops: the real loop excerpts in ``../shared/corpus/loops`` (beside the repository).
- Incident: prose, then ``loadTools.`` 20,000 times, like the incident the README opens with.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

CLEAN_BUDGET = 4_000_000
"""Bytes (UTF-8) of standard library text in the clean corpus."""

SUFFIXES = (".py", ".rst", ".txt")
# Installed packages vary from machine to machine; bytecode caches are not text.
SKIP_DIRS = frozenset({"site-packages", "__pycache__"})

LOOPS_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "loops"

INCIDENT_PROSE = (
    "The test suite passes and the build is green. Before I write the summary, I will check which "
    "tools are still available to me on this final step, so that the report lists every change I "
    "made and the reasons for it.\n\n"
)
INCIDENT_LOOP = "loadTools."
INCIDENT_REPEATS = 20_000


def _stdlib_paths(root: Path) -> list[tuple[str, Path]]:
    """Regular files with a text suffix, as (path relative to root with ``/``, path), sorted."""
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for name in filenames:
            path = Path(dirpath, name)
            if path.suffix in SUFFIXES and path.is_file() and not path.is_symlink():
                found.append((path.relative_to(root).as_posix(), path))
    return sorted(found)


def stdlib_files(budget: int = CLEAN_BUDGET) -> list[tuple[str, str]]:
    """About ``budget`` bytes of standard library files, as (relative path, text).

    Every ``step``-th file of the sorted list is taken, so the sample spans the whole library
    (code, docs, tests, data) rather than its alphabetical start; files that are not UTF-8 are
    skipped.
    """
    root = Path(sysconfig.get_paths()["stdlib"])
    paths = _stdlib_paths(root)
    step = max(1, sum(p.stat().st_size for _, p in paths) // budget)
    files: list[tuple[str, str]] = []
    total = 0
    for rel, path in paths[::step]:
        if total >= budget:
            break
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        total += len(text.encode("utf-8"))
        files.append((rel, text))
    return files


def clean_text(budget: int = CLEAN_BUDGET) -> str:
    return "\n".join(text for _, text in stdlib_files(budget))


def loop_files() -> list[tuple[str, str]]:
    """The real loop excerpts, as (file name, text), sorted by name."""
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(LOOPS_DIR.glob("*.txt"))]


def loops_text() -> str:
    return "\n".join(text for _, text in loop_files())


def incident_text() -> str:
    return INCIDENT_PROSE + INCIDENT_LOOP * INCIDENT_REPEATS
