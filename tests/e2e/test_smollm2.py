"""A real model end to end: SmolLM2-135M (greedy decoding, no repetition penalty) loops on
plain prompts; the OpenAI adapter must stop those streams long before ``max_tokens`` (and the
model server must see the client go, which stops its generation), leave clean answers
untouched, and the saved rows must be trimmed.

Each prompt runs twice: unguarded (the full output, to compare with) and guarded. The prompts
come from the project's model corpus (ids ``dNN-greedy``), where the same model and settings
looped (or answered cleanly). What the model generates is saved outside the tree; the summary at
the end says where, and how to keep it as tests/data/smollm2_e2e.jsonl.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from loopbreak import trim
from loopbreak.integrations.openai import guard_chat
from loopbreak.store import Database
from loopbreak.streaming.persist import load_turn, save_result

from .conftest import ModelServer

pytestmark = pytest.mark.e2e

MAX_TOKENS = 1500
SETTINGS = {"temperature": 0.0, "repeat_penalty": 1.0, "max_tokens": MAX_TOKENS}


@dataclass(frozen=True)
class Prompt:
    id: str
    label: str  # "loop" or "clean": what the model did with it in the corpus
    text: str


PROMPTS = [
    Prompt(
        "d10-greedy",
        "loop",
        "You are a home-automation agent with turn_on(device), turn_off(device) and get_state(device). "
        "Get the house ready for the night: living-room lights, heating, front door lock, oven and garage "
        "door. Report each call and the device state afterwards.",
    ),
    Prompt(
        "d14-greedy",
        "loop",
        "Составь план тренировок в спортзале на неделю: для каждого дня укажи упражнения, число подходов "
        "и повторений.",
    ),
    Prompt(
        "d27-greedy",
        "loop",
        "Return a JSON array of 15 books, each with title, author, year, a genres array and a nested "
        "publisher object with name and country. Output only the JSON.",
    ),
    Prompt(
        "d37-greedy",
        "loop",
        "Write a work song for bakers kneading bread before dawn, with a chorus that is sung after every verse.",
    ),
    Prompt(
        "d01-greedy",
        "clean",
        "You are a calendar assistant with the tools list_events(date), create_event(title, start, end) and "
        "send_invite(email, event_id). Schedule a one-hour design review with ana@example.com and "
        "raj@example.com next Tuesday afternoon, avoiding conflicts. Show each tool call as 'CALL: ...' and "
        "its result as 'RESULT: ...'.",
    ),
    Prompt(
        "d08-greedy",
        "clean",
        "You are a hotel-booking agent with the tools find_hotels(city, checkin, checkout), check_price(hotel_id) "
        "and book(hotel_id). Book the cheapest 3-star hotel in Porto from 12 to 15 May. Print each tool call "
        "and its response until the booking is confirmed.",
    ),
    Prompt(
        "d13-greedy",
        "clean",
        "Опиши по шагам, как поменять колесо у легкового автомобиля на обочине дороги.",
    ),
]

RESULTS: dict[str, dict[str, Any]] = {}


@pytest.fixture(scope="module", autouse=True)
def save_outputs(outputs: Path) -> Iterator[None]:
    """Writes the generated outputs (outside the tree) once every prompt has run."""
    yield
    if len(RESULTS) == len(PROMPTS):
        with open(outputs, "w", encoding="utf-8") as out:
            for prompt in PROMPTS:
                out.write(json.dumps(RESULTS[prompt.id], ensure_ascii=False) + "\n")


@pytest.fixture(scope="module")
def client(model_server: ModelServer) -> Iterator[OpenAI]:
    with OpenAI(base_url=model_server.url, api_key="local", max_retries=0, timeout=600) as client:
        yield client


def wait_for_disconnects(server: ModelServer, count: int) -> int:
    """The server's count of closed streams once it reaches ``count`` (or after 60 s)."""
    deadline = time.monotonic() + 60
    while server.disconnects() < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return server.disconnects()


def stream(client: OpenAI, prompt: Prompt) -> Any:
    return client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": prompt.text}],
        stream=True,
        temperature=0.0,
        max_tokens=MAX_TOKENS,
        extra_body={"repeat_penalty": 1.0},
    )


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda prompt: prompt.id)
def test_real_model(
    client: OpenAI, model_server: ModelServer, prompt: Prompt, tmp_path: Path
) -> None:
    unguarded_chunks = list(stream(client, prompt))
    unguarded = "".join(c.choices[0].delta.content or "" for c in unguarded_chunks if c.choices)
    finish_reason = next(
        c.choices[0].finish_reason for c in reversed(unguarded_chunks) if c.choices
    )

    disconnects = model_server.disconnects()
    guarded = guard_chat(stream(client, prompt), on_degeneration="stop")
    guarded_chunks = list(guarded)
    streamed = "".join(c.choices[0].delta.content or "" for c in guarded_chunks if c.choices)

    connection = Database(tmp_path / "runs.db")
    turn = load_turn(connection, save_result(connection, guarded))
    connection.close()

    RESULTS[prompt.id] = {
        "id": prompt.id,
        "label": prompt.label,
        "prompt": prompt.text,
        "settings": SETTINGS,
        "text": unguarded,
        "finish_reason": finish_reason,
        "completion_chunks": len(unguarded_chunks),
        "guarded_chars": len(streamed),
        "guarded_chunks": len(guarded_chunks),
        "finding": None if guarded.degeneration is None else guarded.degeneration.to_dict(),
    }

    if prompt.label == "loop":
        assert finish_reason == "length", "unguarded, the model should loop to max_tokens"
        assert guarded.status == "degenerate", guarded.reason
        assert len(guarded_chunks) < MAX_TOKENS // 3
        # llama-cpp-python stops generating when it sees the client go (and logs it).
        assert wait_for_disconnects(model_server, disconnects + 1) == disconnects + 1
        assert len(streamed) < len(unguarded) // 2
        assert turn.status == "degenerate" and turn.text == trim(guarded.text).text
        assert "[loopbreak: removed" in turn.text and len(turn.text) < len(unguarded) // 2
    else:
        assert finish_reason == "stop"
        assert guarded.status == "ok", guarded.reason
        assert streamed == guarded.text == unguarded
        assert (turn.status, turn.text) == ("ok", unguarded)
