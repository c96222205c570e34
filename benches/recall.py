"""The recall floor of the design, measured: lines and pieces of real model answers repeated,
and every visible char, against each preset (tests/support/recall.py builds the probes).

    python benches/recall.py            # ~10 s

For each preset and each kind of probe: how many probes, the share found in time (by max(25
copies, 1 KB) as lines, max(20 copies, 1 KB) back to back, 1,024 units of one char, 512 lines of
one char), and the probes found latest against what they were due.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import loopbreak

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support import recall  # noqa: E402

PRESETS = {"default": loopbreak.Rules(), "conservative": loopbreak.Rules.conservative()}


def lateness(probe: recall.Probe) -> float:
    """Units of loop at the finding over the units it was due by (inf: never found)."""
    return float("inf") if probe.found_at is None else probe.found_at / probe.due


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pieces", type=int, default=2000, help="pieces cut from the answers")
    parser.add_argument("--worst", type=int, default=5, help="latest probes shown per kind")
    args = parser.parse_args()
    pieces = recall.model_pieces(args.pieces)
    for name, rules in PRESETS.items():
        kinds = {
            "lines": list(recall.line_probes(rules)),
            "pieces": list(recall.piece_probes(rules, pieces)),
            "one char": list(recall.char_probes(rules)),
        }
        for kind, probes in kinds.items():
            in_time = sum(p.in_time for p in probes)
            print(
                f"{name:12} {kind:8} {len(probes):5} probes, {in_time / len(probes):6.1%} in time"
            )
            for p in sorted(probes, key=lateness, reverse=True)[: args.worst]:
                if not p.in_time:
                    seen = "not found by then" if p.found_at is None else f"found at {p.found_at}"
                    print(f"{'':22}{p.shape[:60]!r} (period {p.period}): due {p.due}, {seen}")


if __name__ == "__main__":
    main()
