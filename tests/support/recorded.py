"""Real model outputs for the stream-guard tests (see tests/data/README.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"


@dataclass(frozen=True)
class Recorded:
    id: str
    label: str
    prompt: str
    text: str


def _load() -> dict[str, Recorded]:
    recordings = {}
    with open(DATA / "recorded_streams.jsonl", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            recordings[row["id"]] = Recorded(row["id"], row["label"], row["prompt"], row["text"])
    return recordings


RECORDED = _load()
LOOPS = [r for r in RECORDED.values() if r.label == "loop"]
CLEAN = [r for r in RECORDED.values() if r.label == "clean"]
