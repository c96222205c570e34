"""An agent loop governed by loopbreak, driven by a scripted fake model so it runs offline.

Every model reply is streamed through the stream guard; the run policy decides before each
step and each tool call, and asks the kill switch first; every decision goes to the audit log
(SQLite, JSON lines, logging); every run ends with a stop receipt and its next action. Each
model turn is saved once the policy has decided on it, with the stop's message for people when
the policy stopped the run there. Turns, audit events and receipts share one SQLite file.

Eight scripted runs show the ways a run ends:

1. ``healthy``: reads its notes, writes ``answer.txt``, answers; the verifier finds the file
   with the right SHA-256: VERIFIED_COMPLETE.
2. ``claims-done``: calls the done tool without writing the file: FALSE_COMPLETE.
3. ``repeats``: lists the same directory again and again: loop_detected, STUCK.
4. ``degenerates``: its answer turns into ``loadTools.loadTools....``; the guard stops the
   stream and only the trimmed text is saved: STUCK.
5. ``tool-fails``: reads a file that does not exist: FAILED.
6. ``times-out``: the model call times out after the run read its notes (progress): a time
   bound that fired, BOUNDED_STOP. A timeout before any progress would be STUCK.
7. ``explores``: keeps reading new files until the steps run out, past the warnings and the
   final-step nudge: max_steps, BOUNDED_STOP. Set ``LOOPBREAK_FINAL_STEP_LOCKDOWN=1`` to see
   the final step lock tools instead.
8. ``kill-switch``: an operator has engaged the kill switch (``touch DIR/agent.kill``): the run
   stops at its first check, kill_switch, BOUNDED_STOP.

Run: ``python examples/agent_loop.py [--dir DIR]``: the database (``loopbreak.db``), the
JSON lines audit log and the runs' workspaces go to DIR (default: a new temporary directory).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from loopbreak.agent.audit import AuditLog, JsonLinesSink, LoggingSink, SqliteSink
from loopbreak.agent.budget import Budgets, ModelPrice
from loopbreak.agent.decision import Decision
from loopbreak.agent.kill_switch import KillSwitch
from loopbreak.agent.policy import PolicyConfig, RunPolicy
from loopbreak.agent.receipt import Receipt, RunEvidence, save_receipt
from loopbreak.errors import DegenerationDetected
from loopbreak.store import Database
from loopbreak.streaming import persist
from loopbreak.streaming.guard import guard

MODEL = "scripted-model"
SYSTEM_PROMPT = "You are a file agent. Use the tools to do the task, then answer the user."
ANSWER = "The deploy script needs DEPLOY_ENV=staging.\n"
DONE_TOOL = "task_complete"

CONFIG = PolicyConfig(
    max_steps=8,  # small, so the step-limit run stays short; the default is 50
    budgets=Budgets(
        max_total_tokens=200_000,
        max_cost=0.50,
        prices={MODEL: ModelPrice(input_per_million=0.15, output_per_million=0.60)},
    ),
)


# The fake model: a script of turns, streamed as token-sized text deltas.


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, as chat APIs deliver it


@dataclass(frozen=True)
class Turn:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    times_out: bool = False


def call(name: str, **arguments: str) -> ToolCall:
    return ToolCall(name, json.dumps(arguments))


class Reply:
    """One streamed model reply; counts what was actually streamed, for the token usage."""

    _TOKEN = re.compile(r" ?\w+| ?[^\s\w]+|\s+")

    def __init__(self, turn: Turn, prompt: str) -> None:
        self.tool_calls = turn.tool_calls
        self._text = turn.text
        self.scripted_chars = len(turn.text)
        self.streamed_chars = 0
        self.input_tokens = len(prompt) // 4  # about four characters a token

    def deltas(self) -> Iterator[str]:
        for delta in self._TOKEN.findall(self._text):
            self.streamed_chars += len(delta)
            yield delta

    @property
    def output_tokens(self) -> int:
        return self.streamed_chars // 4


class ScriptedModel:
    def __init__(self, turns: Sequence[Turn]) -> None:
        self._turns = iter(turns)

    def reply(self, system_prompt: str, tools_enabled: bool) -> Reply:
        turn = next(self._turns)
        if turn.times_out:
            raise TimeoutError("the model did not answer within 60 s")
        if not tools_enabled:  # tool_choice="none": the model cannot call tools
            turn = Turn(turn.text or "Here is what I found so far.")
        return Reply(turn, system_prompt)


# The tools: a real directory, so the verifier can check the result on disk.


def run_tool(workspace: Path, tool: ToolCall) -> str:
    arguments: dict[str, str] = json.loads(tool.arguments)
    if tool.name == "list_dir":
        return ", ".join(sorted(path.name for path in workspace.iterdir()))
    if tool.name == "read_file":
        return (workspace / arguments["path"]).read_text(encoding="utf-8")
    if tool.name == "write_file":
        (workspace / arguments["path"]).write_text(arguments["content"], encoding="utf-8")
        return f"wrote {arguments['path']}"
    raise ValueError(f"unknown tool {tool.name}")


def answer_file_is_right(workspace: Path) -> Callable[[], bool]:
    """The verifier: the expected external result, checked where it lives."""
    expected = hashlib.sha256(ANSWER.encode()).hexdigest()

    def verify() -> bool:
        path = workspace / "answer.txt"
        return path.exists() and hashlib.sha256(path.read_bytes()).hexdigest() == expected

    return verify


# The loop.


def run_agent(
    run_id: str,
    model: ScriptedModel,
    workspace: Path,
    db: Database,
    audit: AuditLog,
    kill_switch: KillSwitch,
) -> Receipt:
    policy = RunPolicy(CONFIG, run_id=run_id, audit=audit, kill_switch=kill_switch)
    evidence = RunEvidence(policy=policy)
    try:
        agent_loop(policy, evidence, model, workspace, db)
    except TimeoutError as error:  # the model call timed out
        evidence.record_timeout(error)
        print(f"  timeout: {error}")
    receipt = evidence.receipt(answer_file_is_right(workspace))
    save_receipt(db, receipt)
    return receipt


def agent_loop(
    policy: RunPolicy,
    evidence: RunEvidence,
    model: ScriptedModel,
    workspace: Path,
    db: Database,
) -> None:
    """Runs steps until something ends the run, recording how it ended as evidence."""
    while True:
        plan = policy.before_step(SYSTEM_PROMPT)
        show(plan.step, plan.decision.kind.value, plan.decision.reason.value, plan.addendum)
        if plan.decision.stopped:  # no model call, so no turn to save: the audit log has it
            tell_user(plan.step, plan.decision)
            return
        reply = model.reply(plan.system_prompt, plan.tools_enabled)
        guarded = guard(reply.deltas())
        try:
            text = "".join(guarded)
        except DegenerationDetected as error:
            persist.save_result(db, error)  # the trimmed text, never the loop
            evidence.record_degeneration(error)
            streamed = f"{reply.streamed_chars:,} of {reply.scripted_chars:,} chars streamed"
            show(plan.step, f"guard stopped the stream ({streamed}):", error.reason)
            return
        finally:
            policy.record_usage(MODEL, reply.input_tokens, reply.output_tokens)
        ended = act(policy, evidence, plan.step, reply, text, workspace)
        # Saved once the policy has decided on this turn: a stop made here is stored beside the
        # model's text, never in it.
        stop = policy.stop
        persist.save_result(db, guarded, stop_message=stop.message if stop else None)
        if stop is not None:
            tell_user(plan.step, stop)
        if ended:
            return


def act(
    policy: RunPolicy, evidence: RunEvidence, step: int, reply: Reply, text: str, workspace: Path
) -> bool:
    """Acts on one model reply: answers, or runs its tool calls as the policy allows. True when
    the run ended in this step."""
    if not reply.tool_calls:
        evidence.record_natural_finish()
        show(step, "answer:", text)
        return True
    results = []
    for tool in reply.tool_calls:
        decision = policy.check_tool_call(tool.name, tool.arguments)
        show(step, decision.kind.value, decision.reason.value, decision.action_key or "")
        if decision.stopped:
            return True
        if tool.name == DONE_TOOL:
            evidence.record_done_tool(tool.name)
            return True
        try:
            results.append(run_tool(workspace, tool))
        except OSError as error:
            evidence.record_tool_failure(tool.name, error)
            show(step, "tool failed:", str(error))
            return True
    return policy.after_step(results).stopped  # each new tool result counts as progress


def show(step: int, *parts: str) -> None:
    line = " ".join(part.replace("\n", " ").strip() for part in parts if part)
    print(f"  step {step}: {line[:100]}{'...' if len(line) > 100 else ''}")


def tell_user(step: int, stop: Decision) -> None:
    """What the people waiting on the run see: the stop's message, in full."""
    print(f"  step {step}: to the user: {stop.message}")


# The scripts.

READ_NOTES = call("read_file", path="notes.txt")
LIST = call("list_dir", path=".")

SCRIPTS = {
    "healthy": [
        Turn("Let me read the notes.", (READ_NOTES,)),
        Turn("Writing the answer.", (call("write_file", path="answer.txt", content=ANSWER),)),
        Turn(f"Done: {ANSWER}"),
    ],
    "claims-done": [
        Turn("Let me read the notes.", (READ_NOTES,)),
        Turn("I have written answer.txt, all done!", (call(DONE_TOOL),)),
    ],
    "repeats": [Turn("Let me look around.", (LIST,))] * 6,
    "degenerates": [
        Turn("Let me read the notes.", (READ_NOTES,)),
        Turn("To finish I will call " + "loadTools." * 20_416),
    ],
    "tool-fails": [Turn("Let me read the config.", (call("read_file", path="config.toml"),))],
    "times-out": [Turn("Let me read the notes.", (READ_NOTES,)), Turn("", times_out=True)],
    "explores": [
        Turn(f"Reading file {index}.", (call("read_file", path=f"file_{index}.txt"),))
        for index in range(CONFIG.max_steps)
    ],
    "kill-switch": [Turn("Let me read the notes.", (READ_NOTES,))],
}


def prepare_workspace(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "notes.txt").write_text("Deploys fail unless DEPLOY_ENV=staging.\n", encoding="utf-8")
    for index in range(CONFIG.max_steps):
        (root / f"file_{index}.txt").write_text(f"fact number {index}\n", encoding="utf-8")
    return root


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="where to write (default: a temporary one)")
    args = parser.parse_args(argv)
    directory: Path = args.dir or Path(tempfile.mkdtemp(prefix="loopbreak-agent-"))
    directory.mkdir(parents=True, exist_ok=True)
    db_path = directory / "loopbreak.db"
    logging.basicConfig(level=logging.WARNING, format="  log: %(levelname)s %(message)s")

    db = Database(db_path)  # the stream guard's turns table ...
    audit = AuditLog(  # ... and the audit log, in the same database
        [SqliteSink(db), JsonLinesSink(directory / "audit.jsonl"), LoggingSink()]
    )
    kill_switch = KillSwitch(directory / "agent.kill")  # every run's policy checks it
    receipts = []
    for run_id, script in SCRIPTS.items():
        print(f"run {run_id}")
        if run_id == "kill-switch":
            kill_switch.engage()  # what an operator does with: touch DIR/agent.kill
        workspace = prepare_workspace(directory / run_id)
        model = ScriptedModel(script)
        receipt = run_agent(run_id, model, workspace, db, audit, kill_switch)
        print(f"  receipt: {receipt.state.value} ({receipt.reason}), verified={receipt.verified}")
        print(f"  next action: {receipt.next_action}")
        receipts.append(receipt)
    kill_switch.release()  # rm DIR/agent.kill: new runs go again
    audit.close()

    print(f"\nstored in {db_path}:")
    for table in ("turns", "audit_events", "receipts"):
        (count,) = db.connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
        print(f"  {table}: {count} rows")
    longest = db.connection.execute("SELECT MAX(LENGTH(text)) FROM turns").fetchone()[0]
    print(f"  longest saved model text: {longest} chars (the loop was trimmed)")
    for text, message in db.connection.execute(
        "SELECT text, stop_message FROM turns WHERE stop_message IS NOT NULL"
    ):
        print(f"  a turn the policy stopped: {text!r}, then for the user: {message!r}")
    print(f"audit log also in {directory / 'audit.jsonl'}")
    last = next(receipt for receipt in receipts if receipt.run_id == "explores")
    print(
        f"\nreceipt of run {last.run_id!r}: {last.state.value}, the first of its conditions "
        "(in priority order) that held:"
    )
    for condition in last.conditions:
        print(
            f"  {condition.state.value:<18} {'held' if condition.held else '-':<5}"
            f"{json.dumps(dict(condition.inputs))}"
        )
    print(f"  usage: {json.dumps(last.usage.to_dict() if last.usage else None)}")
    db.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
