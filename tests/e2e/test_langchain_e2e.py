"""A LangChain v1 agent on a real model: ``create_agent`` drives SmolLM2-135M (greedy, served by
llama-cpp-python) through ``langchain-openai``'s ``ChatOpenAI`` over real HTTP. Given the
home-automation task of the model corpus (``d10-greedy``), the model loops until ``max_tokens``
(tests/data/smollm2_e2e.jsonl holds that output, unguarded with the same settings, as
test_smollm2.py records it); with ``LoopbreakMiddleware`` the agent's stream is cut where the
loop starts, the server sees the client go, the agent's last message is the trimmed text and the
run's STUCK receipt is in SQLite.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_openai import ChatOpenAI

from loopbreak.agent.receipt import Receipt, save_receipt
from loopbreak.integrations.langchain import LoopbreakMiddleware
from loopbreak.store import Database

from .conftest import ModelServer
from .test_smollm2 import MAX_TOKENS, PROMPTS, wait_for_disconnects

pytestmark = pytest.mark.e2e

TASK = next(prompt for prompt in PROMPTS if prompt.id == "d10-greedy")


def smollm2(server: ModelServer) -> ChatOpenAI:
    return ChatOpenAI(
        model="smollm2",
        base_url=server.url,
        api_key="local",  # type: ignore[arg-type]
        temperature=0.0,
        max_tokens=MAX_TOKENS,  # type: ignore[call-arg]
        extra_body={"repeat_penalty": 1.0},
        streaming=True,
        max_retries=0,
        timeout=600,
    )


def unguarded_output(regression_data: Path) -> str:
    """The model's whole output for the task, as test_smollm2.py recorded it unguarded."""
    with open(regression_data, encoding="utf-8") as lines:
        row = next(r for r in map(json.loads, lines) if r["id"] == TASK.id)
    assert row["settings"]["max_tokens"] == MAX_TOKENS and row["finish_reason"] == "length"
    text: str = row["text"]
    return text


def test_a_looping_agent_run_is_stopped_and_its_receipt_saved(
    model_server: ModelServer, regression_data: Path, tmp_path: Path
) -> None:
    unguarded = unguarded_output(regression_data)

    path = tmp_path / "runs.db"
    db = Database(path)
    receipts: list[Receipt] = []

    def keep(receipt: Receipt) -> None:
        receipts.append(receipt)
        save_receipt(db, receipt)

    agent = create_agent(smollm2(model_server), middleware=[LoopbreakMiddleware(on_receipt=keep)])
    disconnects = model_server.disconnects()
    result = agent.invoke({"messages": [{"role": "user", "content": TASK.text}]})

    # llama-cpp-python stops generating when it sees the client go (and logs it).
    assert wait_for_disconnects(model_server, disconnects + 1) == disconnects + 1
    answer = str(result["messages"][-1].content)
    assert "[loopbreak: removed" in answer
    assert answer.startswith(unguarded[:200])  # the same greedy output, up to the cut
    assert len(answer) < len(unguarded) // 2
    db.close()
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT run_id, state, reason, receipt FROM receipts").fetchall()
    [(run_id, state, reason, saved)] = rows
    assert (run_id, state, reason) == (receipts[0].run_id, "STUCK", "degeneration")
    evidence = json.loads(saved)["evidence"]
    # The guard's finding, then the policy's stop on it (an audited decision).
    assert [e["kind"] for e in evidence] == ["degeneration", "stop_condition"]
    finding = evidence[0]["details"]["finding"]
    assert finding["source"] == "content"
    # Cut where the rule first held, long before the unguarded run's end.
    assert finding["detected_at"] < len(unguarded) // 4
