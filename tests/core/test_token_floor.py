"""The token floor of the token preset (``Rules.for_tokens()``), on the ids of real model answers.

The ids are SmolLM2-135M's own tokenizer's (transformers' ``AutoTokenizer``), computed once by
``python benches/tune_tokens.py --write-data`` (tests/data/smollm2_token_ids.json; the tokenizer
is not a test dependency): the lines and pieces of the models' answers (tests/support/recall.py),
every SmolLM2 output of ../shared/corpus/model, and the strongest repetitions of the hand-written
standard library that the preset must not report. A shape is its ids repeated, as a model that loops emits them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import loopbreak

DATA = Path(__file__).resolve().parent.parent / "data" / "smollm2_token_ids.json"
PRESET = loopbreak.Rules.for_tokens()
FLOOR_COPIES = 20
FLOOR_TOKENS = 256
# Every block class is found by this span, or four copies of a longer block.
BOUND_TOKENS = 4096


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return loaded


def found_at(ids: list[int], offset: int = 0) -> int | None:
    detector = loopbreak.TokenDetector(PRESET)
    detector.feed(ids)
    finding = detector.finding
    return None if finding is None else finding.detected_at - offset


@pytest.mark.parametrize("kind", ["lines", "pieces"])
def test_every_shape_of_model_answers_is_found_by_the_floor(
    data: dict[str, Any], kind: str
) -> None:
    prefix: list[int] = data["prefix"]
    late = []
    for block in data["shapes"][kind]:
        due = max(FLOOR_COPIES * len(block), FLOOR_TOKENS)
        at = found_at(prefix + block * (due // len(block) + 4), len(prefix))
        if at is None or at > due:
            late.append((block, due, at))
    assert len(data["shapes"][kind]) > 300
    assert late == []


def test_every_smollm2_loop_is_found_and_no_clean_answer(data: dict[str, Any]) -> None:
    outputs: dict[str, dict[str, Any]] = data["outputs"]
    found = {name: found_at(o["ids"]) for name, o in outputs.items()}
    loops = [name for name, o in outputs.items() if o["label"] == "loop"]
    clean = [name for name, o in outputs.items() if o["label"] == "clean"]
    assert len(loops) == 28 and len(clean) == 16
    assert [name for name in loops if found[name] is None] == []
    assert {name: found[name] for name in clean if found[name] is not None} == {}


def test_the_strongest_hand_written_repetitions_are_no_finding(data: dict[str, Any]) -> None:
    benign: dict[str, list[int]] = data["benign"]
    assert len(benign) >= 5
    assert {source: found_at(ids) for source, ids in benign.items() if found_at(ids)} == {}


@pytest.mark.parametrize("period", [1, 2, 11, 17, 21, 22, 54, 64, 65, 300, 1024, 1536])
def test_every_block_is_found_within_the_bound(period: int) -> None:
    # Ids as a model's vocabulary spreads them: low (bytes, whitespace as code points), high.
    for base in (9, 32, 200, 30_000):
        block = [base + i % 7 for i in range(period)] if period > 1 else [base]
        at = found_at(block * (BOUND_TOKENS // period + 5))
        assert at is not None and at <= max(BOUND_TOKENS, 4 * period), (period, base)
