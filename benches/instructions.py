"""Instructions per byte of an offline scan, counted by valgrind (what a loaded machine cannot
distort), for clean text and for the shapes of loop whose cost differs.

    cargo build --release --example speed && python benches/instructions.py

Each text is written to a temporary file and scanned once by ``target/release/examples/speed``
under ``valgrind --tool=cachegrind``; the count includes reading the file and the process's
start (about 0.3 M instructions).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import corpus

REPO = Path(__file__).resolve().parent.parent
SPEED = REPO / "target" / "release" / "examples" / "speed"
MB = 1_000_000


def texts() -> dict[str, str]:
    clean = corpus.clean_text(8 * MB)
    ascii_clean = "".join(ch for ch in clean if ch.isascii())
    return {
        "2 MB of ASCII stdlib text": ascii_clean[: 2 * MB],
        "8 MB of stdlib text": clean,
        "2 MB loop with no newline (`loadTools.` x200,000)": "loadTools." * 200_000,
        "a 1.7 MB line of words (no newline, no loop)": " ".join(
            word for word in re.findall(r"[A-Za-z]+", ascii_clean)
        )[: 17 * MB // 10],
        "40,000 identical lines (`the same line of words again`)": "the same line of words again\n"
        * 40_000,
    }


def instructions(path: Path) -> int:
    run = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        + [str(SPEED), str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    match = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    assert match, run.stderr
    return int(match.group(1).replace(",", ""))


def main() -> None:
    print("| text | bytes | instructions | per byte |")
    print("|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for name, text in texts().items():
            path = Path(folder) / "text.txt"
            path.write_text(text, encoding="utf-8")
            size = path.stat().st_size
            count = instructions(path)
            print(f"| {name} | {size:,} | {count / 1e6:.2f} M | {count / size:.1f} |")


if __name__ == "__main__":
    main()
