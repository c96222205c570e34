"""The default rules on a benign corpus held out of their tuning: documentation and source that
Debian packages and this machine does not hold, so that no threshold was chosen against it.

    python benches/held_out.py                 # downloads ~60 MB of packages once; ~2 minutes
    python benches/held_out.py --cache DIR     # where the packages are kept (default below)

Each package of ``PACKAGES`` is fetched with ``apt-get download`` (a Debian or Ubuntu machine
with its package lists) and unpacked with ``dpkg -x``, its gzipped files (man pages, changelogs,
info manuals) decompressed. Every text file is classified as ``benches/tune.py`` classifies the
wide corpus (tests/support/benign.py): the default rules are held to no finding on the
hand-written ones. Printed: the files and their findings, by rule.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import loopbreak

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support import benign  # noqa: E402

# Prose (manuals, release notes, references, man pages) and hand-written code (Go's tree),
# none of it in the tuning corpus.
PACKAGES = (
    "python3.11-doc",
    "git-doc",
    "postgresql-doc-15",
    "perl-doc",
    "debian-reference-en",
    "debian-policy",
    "manpages-dev",
    "sphinx-doc",
    "bash-doc",
    "ruby3.1-doc",
    "zsh-doc",
    "tcl8.6-doc",
    "golang-1.19-src",
)
CACHE = Path(tempfile.gettempdir()) / "loopbreak-held-out"


def unpacked(cache: Path) -> Path:
    """The packages unpacked under ``cache``/root, fetched and unpacked once."""
    root = cache / "root"
    if root.is_dir():
        return root
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", *PACKAGES], cwd=debs, check=True)
    staging = cache / "staging"
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg", "-x", str(deb), str(staging)], check=True)
    for packed in staging.rglob("*.gz"):
        if packed.is_file() and not packed.is_symlink():
            packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
            packed.unlink()
    staging.rename(root)
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cache", type=Path, default=CACHE)
    root = unpacked(parser.parse_args().cache)
    hand_written = 0
    rules_by_file: dict[str, list[str]] = defaultdict(list)
    for path, text in benign.hand_written(root):
        hand_written += 1
        for finding in loopbreak.scan(text):
            rules_by_file[path[len(str(root)) :]].append(finding.rule)
    files_by_rule: dict[str, int] = defaultdict(int)
    for found in rules_by_file.values():
        for rule in set(found):
            files_by_rule[rule] += 1
    print(f"hand-written files: {hand_written}; with a finding: {len(rules_by_file)}")
    print("files by rule: " + ", ".join(f"{r} {n}" for r, n in sorted(files_by_rule.items())))
    for path, found in sorted(rules_by_file.items()):
        print(f"  {path}  {', '.join(sorted(set(found)))} ({len(found)})")


if __name__ == "__main__":
    main()
