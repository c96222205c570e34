"""The wide benign corpus: every text file of a full Python install and of /usr/share.

A file counts as text when it is a regular file (not a link), has no NUL byte in its first 8 KiB
and decodes as UTF-8. The roots are the running Python's standard library (without its
site-packages), the site-packages of the environment running the tests, and /usr/share, less
/usr/share/package-lists: that folder holds this machine's copies of package registries' name
lists (pypi.tsv and the like), which are registry data, not installed text.
"""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Iterator
from pathlib import Path

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])
USR_SHARE = Path("/usr/share")
SKIP = frozenset({STDLIB / "site-packages", USR_SHARE / "package-lists"})

SNIFF_BYTES = 8192


def text_of(path: Path) -> str | None:
    """The file's text, or None if it is not a UTF-8 text file."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:SNIFF_BYTES]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def text_files(root: Path) -> Iterator[tuple[str, str]]:
    """(path, text) of every text file under ``root``, in sorted order."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if Path(dirpath, d) not in SKIP and d != "__pycache__"
        )
        for name in sorted(filenames):
            path = Path(dirpath, name)
            if path.is_symlink() or not path.is_file():
                continue
            text = text_of(path)
            if text is not None:
                yield str(path), text


def python_install() -> Iterator[tuple[str, str]]:
    """The standard library and the test environment's site-packages."""
    yield from text_files(STDLIB)
    yield from text_files(SITE_PACKAGES)


def everything() -> Iterator[tuple[str, str]]:
    """The Python install and /usr/share."""
    yield from python_install()
    yield from text_files(USR_SHARE)
