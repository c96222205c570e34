"""Rows per second of ``loopbreak scan`` on Parquet rows (the test data: clean answers of about
100 chars, every 50th row a loop of 1-2 K chars), on this machine and on a Ray cluster.

    python benches/scan_rows.py                        # 100,000 rows on one machine
    python benches/scan_rows.py --ray 127.0.0.1:6379   # and the same scan on a running cluster

Each command runs as a user would run it, in its own process, best of ``--runs``; the time
includes starting Python (and, with ``--ray``, connecting the driver to the cluster).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.transcripts import texts, write_parquet  # noqa: E402


def best_seconds(command: list[str], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - started
        if result.returncode != 1:  # 1: loops found, as they are in this data
            raise SystemExit(f"{' '.join(command)} exited {result.returncode}:\n{result.stderr}")
        best = min(best, elapsed)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ray", metavar="ADDRESS", help="also scan on the Ray cluster at ADDRESS")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chats.parquet"
        write_parquet(path, texts(args.rows, 50))
        scan = ["loopbreak", "scan", "--column", "text", "--json", str(path)]
        commands = {"one machine": scan}
        if args.ray:
            commands[f"Ray at {args.ray}"] = [*scan, "--ray", args.ray]
        for name, command in commands.items():
            seconds = best_seconds(command, args.runs)
            print(
                f"{name:<24} {args.rows / seconds:>10,.0f} rows/s  ({seconds:.2f} s for {args.rows:,} rows)"
            )


if __name__ == "__main__":
    main()
