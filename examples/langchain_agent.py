"""A LangChain v1 agent governed by loopbreak, offline: ``create_agent`` with
``LoopbreakMiddleware``, driven by langchain-core's scripted ``GenericFakeChatModel``.

One agent, three runs (each with a fresh policy), each ending with a receipt in SQLite:

1. ``reports``: reads the queue depth, writes ``report.txt``, answers; the verifier finds the
   file: VERIFIED_COMPLETE.
2. ``repeats``: asks for the same reading again and again (``5`` and ``5.0``, keys reordered);
   the 4th copy is refused before it runs: loop_detected, STUCK.
3. ``degenerates``: its streamed answer turns into one sentence repeated; the stream is cut
   where the loop starts and only the trimmed text enters the agent's history: STUCK.

Run: ``python examples/langchain_agent.py [--dir DIR]`` (needs ``pip install
'loopbreak[langchain]'``); the database (``receipts.db``), the JSON lines audit log and the
report go to DIR (default: a new temporary directory).
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from langchain.agents import create_agent
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from loopbreak.agent.audit import AuditLog, JsonLinesSink
from loopbreak.agent.receipt import save_receipt
from loopbreak.integrations.langchain import LoopbreakMiddleware
from loopbreak.store import Database


class ScriptedModel(GenericFakeChatModel):
    """Answers from a script; accepts the agent's tools (the shipped fake lacks bind_tools)."""

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Optional[str] = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


def calls(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


SCRIPT: list[AIMessage | str] = [
    # 1. reports
    calls("queue_depth", {"queue": "billing", "unit": "messages"}, "r1"),
    calls("write_report", {"text": "billing: 5 messages"}, "r2"),
    "The billing queue holds 5 messages; the report is in report.txt.",
    # 2. repeats
    *(
        calls("queue_depth", args, f"q{n}")
        for n, args in enumerate(
            [
                {"queue": "billing", "unit": "messages", "min": 5},
                {"unit": "messages", "queue": "billing", "min": 5.0},
                {"queue": "billing", "min": 5, "unit": "messages"},
                {"min": 5.0, "queue": "billing", "unit": "messages"},
            ]
        )
    ),
    # 3. degenerates
    "The queue looks healthy.\n" + "Let me double-check the billing queue once more. " * 3000,
]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    out: Path = args.dir or Path(tempfile.mkdtemp(prefix="loopbreak-langchain-"))
    out.mkdir(parents=True, exist_ok=True)
    report = out / "report.txt"

    @tool
    def queue_depth(queue: str, unit: str, min: float = 0) -> str:
        """Reads how many messages wait in a queue."""
        return f"{queue}: 5 {unit}"

    @tool
    def write_report(text: str) -> str:
        """Writes the report."""
        report.write_text(text, encoding="utf-8")
        return "written"

    db_path = out / "receipts.db"
    db = Database(db_path)
    audit = JsonLinesSink(out / "audit.jsonl")
    middleware = LoopbreakMiddleware(
        verifier=lambda run: report.exists() and "billing" in report.read_text("utf-8"),
        on_receipt=lambda receipt: save_receipt(db, receipt),
        audit=AuditLog([audit]),
    )
    agent = create_agent(
        ScriptedModel(messages=iter(SCRIPT)),
        tools=[queue_depth, write_report],
        system_prompt="You watch the message queues.",
        middleware=[middleware],
    )
    for task in ("Report the billing queue.", "Watch the billing queue."):
        agent.invoke({"messages": [{"role": "user", "content": task}]})
        report.unlink(missing_ok=True)  # the next runs have no report: only run 1 is verified
    # Streamed, as a chat UI would: the model's stream is watched token by token.
    for _ in agent.stream(
        {"messages": [{"role": "user", "content": "Is the queue healthy?"}]},
        stream_mode="messages",
    ):
        pass
    audit.close()

    db.close()
    with sqlite3.connect(db_path) as connection:
        rows = connection.execute("SELECT state, reason FROM receipts ORDER BY id").fetchall()
    for name, (state, reason) in zip(("reports", "repeats", "degenerates"), rows):
        print(f"{name:<12} {state:<18} {reason}")
    print(f"receipts: {db_path}\naudit log: {out / 'audit.jsonl'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
