"""``loopbreak scan`` on JSON lines against the floor of merely parsing them with the stdlib.

    python benches/json_lines.py                  # writes a ~98 MB file to a temporary folder
    python benches/json_lines.py --mb 20 --runs 3
    python benches/json_lines.py --write chats.jsonl   # only write the file

The file is chat transcripts, one conversation per line: ``{"id": ..., "model": ...,
"messages": [{"role": ..., "content": ...}, ...]}`` with a system prompt, then user questions and
assistant answers cut from the running Python's standard library (code, docs, non-ASCII text,
quotes and backslashes to escape); every 100th answer loops. Both commands run as fresh
processes, taking turns; the table gives the median of ``--runs`` of each, wall-clock (what
the target is about) and CPU seconds over all threads (what a loaded machine cannot distort):

- floor: ``json.loads`` of each line and ``len`` of every ``messages[*].content``;
- scan: ``loopbreak scan --field 'messages.*.content' FILE`` (exit status 1: loops found).

The package's bytecode is compiled first, as ``pip install`` does: the floor's ``json`` comes
with its bytecode, and with ``PYTHONDONTWRITEBYTECODE`` set (as on the machine of
docs/benchmarks.md) every fresh scan would otherwise compile the package from source (about
100 M instructions, a third of its start-up).
"""

from __future__ import annotations

import argparse
import compileall
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import corpus

import loopbreak

LOOP_EVERY = 100
SYSTEM = "You are a careful assistant. Answer in plain words, cite the file you read, and stop when done."
FLOOR = """
import json, sys
texts = 0
with open(sys.argv[1], "rb") as lines:
    for line in lines:
        for message in json.loads(line)["messages"]:
            texts += len(message["content"])
"""
SCAN = "import sys; from loopbreak.cli import main; sys.exit(main(sys.argv[1:]))"


def write(path: Path, megabytes: float, seed: int = 16) -> int:
    """Writes about ``megabytes`` MB of transcripts to ``path``; returns the answers written."""
    source = corpus.clean_text(4_000_000)
    pick = random.Random(seed)
    budget = int(megabytes * 1e6)
    answers = 0
    written = 0
    with path.open("w", encoding="utf-8") as out:
        conversation = 0
        while written < budget:
            messages = [{"role": "system", "content": SYSTEM}]
            for _ in range(pick.randint(1, 4)):
                start = pick.randrange(len(source) - 4000)
                messages.append(
                    {"role": "user", "content": source[start : start + pick.randint(40, 400)]}
                )
                answers += 1
                if answers % LOOP_EVERY == 0:
                    sentence = (
                        f"I will check the file {pick.randint(1, 99)}.py again before I answer. "
                    )
                    answer = source[start : start + 300] + sentence * 300
                else:
                    start = pick.randrange(len(source) - 4000)
                    answer = source[start : start + pick.randint(200, 3000)]
                messages.append({"role": "assistant", "content": answer})
            line = json.dumps(
                {"id": conversation, "model": "chat-model-1", "messages": messages},
                ensure_ascii=False,
            )
            out.write(line + "\n")
            written += len(line.encode("utf-8")) + 1
            conversation += 1
    return answers


def seconds(command: list[str], expect: int) -> tuple[float, float]:
    """Wall-clock and CPU (user + system, all threads) seconds of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr}")
    return elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def measure(path: Path, runs: int) -> list[tuple[float, float]]:
    """Median (wall, CPU) seconds of the floor and of the scan, as fresh processes taking turns
    (the package's bytecode compiled first: see the module's doc)."""
    compileall.compile_dir(Path(loopbreak.__file__).parent, quiet=1)
    floor = [sys.executable, "-c", FLOOR, str(path)]
    scan = [sys.executable, "-c", SCAN, "scan", "--field", "messages.*.content", str(path)]
    runs_of: tuple[list[tuple[float, float]], ...] = ([], [])
    for _ in range(runs):
        runs_of[0].append(seconds(floor, 0))
        runs_of[1].append(seconds(scan, 1))
    return [
        (statistics.median(wall for wall, _ in each), statistics.median(cpu for _, cpu in each))
        for each in runs_of
    ]


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=98.0, help="size of the file (10^6 bytes)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", type=Path, metavar="PATH", help="only write the file to PATH")
    args = parser.parse_args(argv)
    if args.write:
        write(args.write, args.mb)
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chats.jsonl"
        write(path, args.mb)
        size = path.stat().st_size
        (floor, floor_cpu), (scan, scan_cpu) = measure(path, args.runs)
    print(f"{size / 1e6:.1f} MB of JSON lines, median of {args.runs} fresh processes each")
    print(f"{'':42}{'wall MB/s':>12}{'CPU s':>10}")
    print(f"{'stdlib json parse + touch (floor)':42}{size / floor / 1e6:>12.1f}{floor_cpu:>10.2f}")
    print(
        f"{'loopbreak scan --field messages.*.content':42}{size / scan / 1e6:>12.1f}{scan_cpu:>10.2f}"
    )
    print(f"{'scan speed / floor speed (wall)':42}{floor / scan:>12.2f}")


if __name__ == "__main__":
    main()
