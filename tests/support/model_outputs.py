"""The labelled model outputs of tests/data (tests/data/README.md says how each file was made),
and the issue's recall target they are held to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import loopbreak

DATA = Path(__file__).resolve().parent.parent / "data"

# A loop is found before it has run 1,500 units or 8 copies from the labelled run's start,
# whichever is later.
EARLY_UNITS = 1500
EARLY_COPIES = 8


def load(name: str) -> list[dict[str, Any]]:
    """The outputs of tests/data/``name``, one per line."""
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()]


def ids(outputs: list[dict[str, Any]], label: str) -> list[str]:
    return [str(output["id"]) for output in outputs if output["label"] == label]


def missed(outputs: list[dict[str, Any]], label: str) -> set[str]:
    """The ids of the outputs labelled ``label`` in which the default rules find nothing."""
    return {
        str(output["id"])
        for output in outputs
        if output["label"] == label and not loopbreak.scan(str(output["text"]))
    }


def found_early(output: dict[str, Any], finding: loopbreak.Finding) -> bool:
    """Whether ``finding`` comes early in the loop ``output``, from where the labeller's longest
    exact run starts (a finding may come earlier still, on a shorter loop before it); a
    near-loop whose start was set by eye has no period, and 1,500 units."""
    late = max(EARLY_UNITS, EARLY_COPIES * (output["period"] or 0))
    return bool(finding.detected_at - output["start"] <= late)
