"""The cost of ``LoopStoppingCriteria`` per decode step, against its floor in the same process:
``TokenStreams.step`` alone on the same ids, and the torch slicing any criteria starts with.

    python benches/engine_step.py      # needs transformers and torch (make e2e installs them)

No model: a batch of random ids below 49,152 (SmolLM2's vocabulary) grows by one column per step,
as ``generate`` grows ``input_ids``; a word-level tokenizer built here stands in for decoding,
which the criteria does only on a loop (none in random ids). The model's own step is measured
end to end by ``examples/transformers_stop.py`` and ``make e2e``.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import numpy as np
import torch
from tokenizers import Tokenizer, models
from transformers import GenerationConfig, PreTrainedTokenizerFast

import loopbreak
from loopbreak.integrations.transformers import LoopStoppingCriteria

PROMPT, STEPS = 100, 1000


def per_step(call: Callable[[int], object]) -> float:
    """The median seconds of ``call(step)`` over the steps."""
    seconds = []
    for step in range(STEPS):
        start = time.perf_counter()
        call(step)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def measure(batch: int, tokenizer: PreTrainedTokenizerFast, config: GenerationConfig) -> str:
    ids = torch.from_numpy(
        np.random.default_rng(7).integers(3, 49_152, size=(batch, PROMPT + STEPS))
    )
    criteria = LoopStoppingCriteria(tokenizer, config)
    full = per_step(lambda step: criteria(ids[:, : PROMPT + step + 1], None))
    streams = loopbreak.TokenStreams(loopbreak.Rules.for_tokens())
    slots = np.array([streams.add() for _ in range(batch)], dtype=np.int64)
    columns = ids[:, PROMPT:].numpy().T.copy()
    alone = per_step(lambda step: streams.step(slots, columns[step]))
    sliced = per_step(lambda step: ids[:, PROMPT + step : PROMPT + step + 1].cpu().numpy())
    return f"{batch:>5} {1e6 * full:>8.1f}us {1e6 * alone:>9.1f}us {1e6 * sliced:>10.1f}us"


def main() -> None:
    vocabulary = {"[UNK]": 0, "a": 1, "b": 2}
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel(vocabulary, unk_token="[UNK]"))
    )
    config = GenerationConfig(eos_token_id=2, pad_token_id=2)
    print(f"{'batch':>5} {'criteria':>10} {'step alone':>11} {'torch slice':>12}")
    for batch in (1, 8, 64):
        print(measure(batch, tokenizer, config))


if __name__ == "__main__":
    main()
