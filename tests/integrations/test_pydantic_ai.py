"""loopbreak.integrations.pydantic_ai against pydantic-ai itself: scripted runs of a real
``Agent`` with its own offline ``FunctionModel`` (streamed, as the capability makes every run)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Union

import pytest
from pydantic_ai import (
    Agent,
    ModelResponse,
    ModelRetry,
    RunContext,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UsageLimits,
)
from pydantic_ai.exceptions import RunCancelled, RunTimedOut, UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelRequest
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.models.test import TestModel

import loopbreak
from loopbreak.agent import (
    AuditLog,
    Check,
    DecisionKind,
    PolicyConfig,
    Reason,
    Receipt,
    ReceiptState,
)
from loopbreak.agent.policy import FINAL_STEP_NUDGE, LOCKDOWN_ENV, LOCKDOWN_INSTRUCTION
from loopbreak.integrations._governance import LOCKDOWN_TOOL_ANSWER
from loopbreak.integrations.pydantic_ai import LoopbreakCapability
from support.recorded import RECORDED

LOOP = RECORDED["d10-greedy"].text  # a real greedy loop of SmolLM2-135M
CHUNK = 8


@dataclass
class Turn:
    """What the scripted model answers on one request: a tool call (name, JSON args) or text."""

    tool: str = ""
    args: str = ""
    text: str = ""


@dataclass
class Script:
    """A FunctionModel stream function answering ``turns`` in order, recording what each
    request offered and said."""

    turns: list[Turn]
    tools_offered: list[list[str]] = field(default_factory=list)
    last_request_text: list[str] = field(default_factory=list)
    chunks_sent: int = 0

    async def __call__(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[Union[str, DeltaToolCalls]]:
        self.tools_offered.append([tool.name for tool in info.function_tools])
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        self.last_request_text.append(" ".join(str(getattr(p, "content", "")) for p in last.parts))
        turn = self.turns[min(len(self.tools_offered), len(self.turns)) - 1]
        if turn.tool:
            yield {0: DeltaToolCall(name=turn.tool, json_args=turn.args)}
            return
        for start in range(0, len(turn.text), CHUNK):
            self.chunks_sent += 1
            yield turn.text[start : start + CHUNK]


def make_agent(
    script: Script, capability: LoopbreakCapability, tool_calls: list[dict[str, Any]]
) -> Agent[None, str]:
    agent = Agent(FunctionModel(stream_function=script), capabilities=[capability])

    @agent.tool_plain
    def add(a: int, b: float) -> float:
        tool_calls.append({"a": a, "b": b})
        return a + b

    return agent


def call(**args: Any) -> Turn:
    return Turn(tool="add", args=json.dumps(args))


def decisions(capability: LoopbreakCapability) -> list[tuple[int, Check, DecisionKind, Reason]]:
    assert capability.last_run is not None
    events = capability.last_run.policy.audit.events
    assert [event.seq for event in events] == list(range(len(events)))
    return [(event.step, event.check, event.kind, event.reason) for event in events]


ALLOW = (DecisionKind.ALLOW, Reason.WITHIN_LIMITS)


def test_the_fourth_identical_call_is_stopped_before_it_runs() -> None:
    # The same call four times: keys reordered, 5 and 5.0.
    script = Script([call(a=1, b=5), call(b=5.0, a=1), call(a=1, b=5.0), call(b=5, a=1)])
    capability = LoopbreakCapability()
    ran: list[dict[str, Any]] = []
    result = make_agent(script, capability, ran).run_sync("add 1 and 5")

    assert ran == [{"a": 1, "b": 5.0}] * 3
    run = capability.last_run
    assert run is not None and run.stop is not None
    assert run.stop.reason is Reason.LOOP_DETECTED and run.stop.step == 3
    assert run.stop.action_key == 'add({"a":1,"b":5})'
    # The stopped call is answered with the stop message, and the run ends with it as its
    # answer: four model requests, the fifth skipped.
    assert len(script.tools_offered) == 4
    assert result.output == run.user_message() == run.stop.message
    assert "repeating the same action" in result.output
    returns = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [r.content for r in returns][-1] == run.user_message()
    receipt = run.receipt
    assert receipt is not None
    assert receipt.state is ReceiptState.STUCK and receipt.reason == Reason.LOOP_DETECTED.value
    steps, repeated, progress = Check.STEPS, Check.REPEATED_ACTION, Check.PROGRESS
    assert decisions(capability) == [
        (0, steps, *ALLOW), (0, repeated, *ALLOW), (0, progress, *ALLOW),
        (1, steps, *ALLOW), (1, repeated, *ALLOW), (1, progress, *ALLOW),
        (2, steps, *ALLOW), (2, repeated, *ALLOW), (2, progress, *ALLOW),
        (3, steps, *ALLOW), (3, repeated, DecisionKind.STOP, Reason.LOOP_DETECTED),
    ]  # fmt: skip


def test_a_stop_in_a_run_whose_output_is_not_text_ends_it_cancelled() -> None:
    capability = LoopbreakCapability()
    script = Script([call(a=1, b=2)])
    agent = Agent(FunctionModel(stream_function=script), output_type=int, capabilities=[capability])

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(RunCancelled) as raised:
        agent.run_sync("add 1 and 2 forever")

    run = capability.last_run
    assert run is not None and run.stop is not None and run.receipt is not None
    assert run.receipt.state is ReceiptState.STUCK and run.receipt.reason == "loop_detected"
    # The stop's answer and everything before it are kept.
    answers = [
        p.content for m in raised.value.all_messages() for p in m.parts if isinstance(p, TextPart)
    ]
    assert answers[0] == run.user_message()
    assert len(script.tools_offered) == 4


def counting_calls() -> list[Turn]:
    return [call(a=step, b=1) for step in range(10)]


def test_max_steps_warns_counting_down_nudges_on_the_last_step_then_stops() -> None:
    script = Script(counting_calls())
    capability = LoopbreakCapability(PolicyConfig(max_steps=6, final_step_lockdown=False))
    ran: list[dict[str, Any]] = []
    result = make_agent(script, capability, ran).run_sync("count")

    said = script.last_request_text
    assert len(said) == 6 and len(ran) == 6
    for step, steps_left in enumerate([5, 4, 3, 2]):
        assert f"Only {steps_left} tool-use steps remain" in said[step]
    assert "Only 1 tool-use step remains" in said[4]
    assert FINAL_STEP_NUDGE in said[5] and "remain" not in said[5]
    assert script.tools_offered == [["add"]] * 6  # the nudge keeps the tools
    run = capability.last_run
    assert run is not None and run.receipt is not None
    assert run.stop is not None and run.stop.reason is Reason.MAX_STEPS and run.stop.step == 6
    assert run.receipt.state is ReceiptState.BOUNDED_STOP
    assert result.output == run.user_message()
    step_decisions = [d for d in decisions(capability) if d[1] is Check.STEPS]
    assert [(step, kind, reason) for step, _, kind, reason in step_decisions] == [
        *[(step, DecisionKind.WARN, Reason.STEPS_RUNNING_OUT) for step in range(5)],
        (5, DecisionKind.WARN, Reason.FINAL_STEP),
        (6, DecisionKind.STOP, Reason.MAX_STEPS),
    ]


def test_lockdown_offers_no_tools_on_the_last_step_and_refuses_a_call_anyway() -> None:
    script = Script(counting_calls())  # the model calls the tool even when none is offered
    capability = LoopbreakCapability(PolicyConfig(max_steps=6, final_step_lockdown=True))
    ran: list[dict[str, Any]] = []
    result = make_agent(script, capability, ran).run_sync("count")

    assert script.tools_offered == [["add"]] * 5 + [[]]
    assert LOCKDOWN_INSTRUCTION in script.last_request_text[5]
    assert len(ran) == 5  # the last step's call did not run
    returns = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert returns[-1].content == LOCKDOWN_TOOL_ANSWER
    run = capability.last_run
    assert run is not None and run.stop is not None and run.receipt is not None
    assert run.stop.reason is Reason.MAX_STEPS
    assert run.receipt.state is ReceiptState.BOUNDED_STOP


async def drive_run(agent: Agent[None, str]) -> tuple[str, list[ModelMessage]]:
    result = await agent.run("get the house ready for the night")
    return result.output, result.all_messages()


async def drive_events(agent: Agent[None, str]) -> tuple[str, list[ModelMessage]]:
    async with agent.run_stream_events("get the house ready for the night") as events:
        async for event in events:
            last = event
    assert hasattr(last, "result")
    return last.result.output, last.result.all_messages()


async def drive_iter(agent: Agent[None, str]) -> tuple[str, list[ModelMessage]]:
    async with agent.iter("get the house ready for the night") as run:
        async for node in run:
            if Agent.is_model_request_node(node):
                async with node.stream(run.ctx) as stream:
                    async for _ in stream:
                        pass
    assert run.result is not None
    return run.result.output, run.result.all_messages()


Driver = Callable[[Agent[None, str]], Any]


@pytest.mark.parametrize(
    "drive", [drive_run, drive_events, drive_iter], ids=["run", "events", "iter"]
)
def test_a_looping_streamed_answer_is_cut_and_the_history_keeps_the_trimmed_text(
    drive: Driver,
) -> None:
    script = Script([Turn(text=LOOP)])
    capability = LoopbreakCapability()
    output, messages = asyncio.run(drive(make_agent(script, capability, [])))

    run = capability.last_run
    assert run is not None and run.degeneration is not None and run.receipt is not None
    cut = run.degeneration
    # Stopped reading a few hundred chars into the loop; the model's stream was closed.
    required = loopbreak.Rules().required_span(cut.finding.block)
    assert len(cut.text) - cut.finding.start <= required + CHUNK
    assert script.chunks_sent * CHUNK < len(cut.text) + 2 * CHUNK < len(LOOP)
    trimmed = cut.persist_text
    assert trimmed.startswith(LOOP[: cut.finding.start]) and len(trimmed) < len(cut.text)
    # The trimmed text is what the run answered and what its history keeps.
    assert output == trimmed
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    assert [p.content for p in responses[-1].parts if isinstance(p, TextPart)] == [trimmed]
    assert run.receipt.state is ReceiptState.STUCK and run.receipt.reason == "degeneration"
    details = run.receipt.evidence[0].details
    assert details["finding"]["units_removed"] == cut.units_removed > 0


def test_run_stream_cuts_the_loop_but_commits_the_text_read_untrimmed() -> None:
    # The documented gap: run_stream() builds its result's history from the stream itself.
    script = Script([Turn(text=LOOP)])
    capability = LoopbreakCapability()

    async def consume() -> list[ModelMessage]:
        agent = make_agent(script, capability, [])
        async with agent.run_stream("get the house ready for the night") as streamed:
            await streamed.get_output()
        return streamed.all_messages()

    messages = asyncio.run(consume())
    run = capability.last_run
    assert run is not None and run.degeneration is not None and run.receipt is not None
    assert script.chunks_sent * CHUNK < len(run.degeneration.text) + 2 * CHUNK < len(LOOP)
    response = messages[-1]
    assert isinstance(response, ModelResponse)
    assert [p.content for p in response.parts if isinstance(p, TextPart)] == [run.degeneration.text]
    # The history the capability keeps is trimmed: what to save from a run_stream() run.
    kept = run.messages[-1]
    assert isinstance(kept, ModelResponse)
    trimmed = run.degeneration.persist_text
    assert [p.content for p in kept.parts if isinstance(p, TextPart)] == [trimmed]
    assert len(trimmed) < len(run.degeneration.text)
    assert run.receipt.state is ReceiptState.STUCK


def test_a_looping_tool_argument_is_cut_and_the_tool_never_runs() -> None:
    looping_args = json.dumps({"a": 1, "b": 2, "note": "ok " * 400})
    script = Script([Turn(tool="add", args=looping_args)])
    capability = LoopbreakCapability()
    ran: list[dict[str, Any]] = []

    async def stream_arguments(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[DeltaToolCalls]:
        yield {0: DeltaToolCall(name="add", json_args="")}
        for start in range(0, len(looping_args), CHUNK):
            script.chunks_sent += 1
            yield {0: DeltaToolCall(json_args=looping_args[start : start + CHUNK])}

    agent = Agent(FunctionModel(stream_function=stream_arguments), capabilities=[capability])

    @agent.tool_plain
    def add(a: int, b: int, note: str) -> int:
        ran.append({"a": a})
        return a + b

    result = agent.run_sync("add")

    run = capability.last_run
    assert run is not None and run.degeneration is not None and run.receipt is not None
    assert run.degeneration.source == "tool_calls[0].arguments"
    assert ran == [] and script.chunks_sent * CHUNK < len(looping_args) / 2
    assert not [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolCallPart)]
    assert run.receipt.state is ReceiptState.STUCK


@pytest.mark.parametrize(
    ("verified", "state"),
    [(True, ReceiptState.VERIFIED_COMPLETE), (False, ReceiptState.FALSE_COMPLETE)],
)
def test_a_natural_finish_is_complete_only_as_the_verifier_says(
    verified: bool, state: ReceiptState
) -> None:
    script = Script([call(a=1, b=2), Turn(text="The sum is 3.")])
    capability = LoopbreakCapability(verifier=lambda run: verified)
    result = make_agent(script, capability, []).run_sync("add 1 and 2")

    assert result.output == "The sum is 3."
    run = capability.last_run
    assert run is not None and run.receipt is not None and run.stop is None
    assert run.receipt.state is state and run.receipt.verified is verified
    assert [e.name for e in run.receipt.evidence] == ["natural_finish"]


def test_every_run_of_one_agent_gets_a_fresh_policy_and_its_own_receipt() -> None:
    audit = AuditLog()
    receipts: list[Receipt] = []
    capability = LoopbreakCapability(audit=audit, on_receipt=receipts.append)
    script = Script([call(a=1, b=2), call(a=1, b=2), Turn(text="3")])
    agent = make_agent(script, capability, [])
    agent.run_sync("first")
    first = capability.last_run
    script.tools_offered.clear()  # the script starts over for the second run
    agent.run_sync("second")
    second = capability.last_run

    assert first is not None and second is not None and first is not second
    assert first.policy.run_id != second.policy.run_id
    assert [r.run_id for r in receipts] == [first.policy.run_id, second.policy.run_id]
    # Two copies of the call in each run: a shared policy would have seen four and stopped.
    assert second.stop is None and second.policy.usage().tool_calls == 2
    runs = [event.run_id for event in audit.events]
    assert runs == [first.policy.run_id] * runs.count(first.policy.run_id) + [
        second.policy.run_id
    ] * runs.count(second.policy.run_id)
    assert next(e.seq for e in audit.events if e.run_id == second.policy.run_id) == 0


def test_a_usage_limit_stays_pydantic_ais_and_is_a_bounded_stop_with_the_messages_kept() -> None:
    script = Script(counting_calls())
    capability = LoopbreakCapability()
    with pytest.raises(UsageLimitExceeded):
        make_agent(script, capability, []).run_sync(
            "count", usage_limits=UsageLimits(request_limit=3)
        )

    run = capability.last_run
    assert run is not None and run.receipt is not None and run.stop is None
    assert run.receipt.state is ReceiptState.BOUNDED_STOP
    assert run.receipt.reason == "request_limit"
    assert dict(run.receipt.evidence[0].details) == {"value": 3, "limit": 3}
    # pydantic-ai#931: the three requests and their answers survive the limit.
    assert sum(isinstance(m, ModelResponse) for m in run.messages) == 3
    assert run.policy.usage().input_tokens > 0  # usage recorded from each response


def test_a_token_limit_of_pydantic_ais_is_recorded_with_its_numbers() -> None:
    capability = LoopbreakCapability()
    with pytest.raises(UsageLimitExceeded):
        make_agent(Script(counting_calls()), capability, []).run_sync(
            "count", usage_limits=UsageLimits(total_tokens_limit=100)
        )

    run = capability.last_run
    assert run is not None and run.receipt is not None
    assert run.receipt.state is ReceiptState.BOUNDED_STOP
    assert run.receipt.reason == "total_tokens_limit"
    details = run.receipt.evidence[0].details
    assert details["limit"] == 100 and details["value"] > 100
    # The response the limit stopped is counted in the receipt's usage too.
    assert run.receipt.usage is not None and run.receipt.usage.total_tokens == details["value"]


def test_a_tool_that_raises_ends_the_run_failed_and_the_receipt_names_it() -> None:
    capability = LoopbreakCapability()
    agent = Agent(
        FunctionModel(stream_function=Script([Turn(tool="fetch", args="{}")])),
        capabilities=[capability],
    )

    @agent.tool_plain
    def fetch() -> str:
        raise ConnectionError("backend down")

    with pytest.raises(ConnectionError):
        agent.run_sync("fetch")
    run = capability.last_run
    assert run is not None and run.receipt is not None
    assert run.receipt.state is ReceiptState.FAILED and run.receipt.reason == "tool_failure"
    assert run.receipt.evidence[0].details["tool"] == "fetch"


def test_a_tool_that_keeps_asking_for_a_retry_makes_no_progress() -> None:
    # ModelRetry, like ToolFailed (the shared scenarios), is the model's to read: the run goes
    # on, and each retry is no progress however it is worded.
    capability = LoopbreakCapability(PolicyConfig(no_progress_window=2))
    script = Script([call(a=n, b=1) for n in range(6)])
    agent = Agent(FunctionModel(stream_function=script), capabilities=[capability])
    attempts: list[int] = []

    @agent.tool_plain(retries=5)
    def add(a: int, b: float) -> float:
        attempts.append(a)
        raise ModelRetry(f"the adder is busy (attempt {len(attempts)})")

    output = agent.run_sync("add").output
    run = capability.last_run
    assert run is not None and run.receipt is not None and run.stop is not None
    assert (run.receipt.state, run.receipt.reason) == (ReceiptState.STUCK, "no_progress")
    assert attempts == [0, 1] and output == run.stop.message


def test_a_cancelled_run_still_gets_a_receipt() -> None:
    capability = LoopbreakCapability()
    # Text that never repeats, so only the cancellation ends it.
    script = Script([Turn(text="".join(chr(0x4E00 + i * 7919 % 20_000) for i in range(20_000)))])

    async def cancel_midway() -> None:
        task = asyncio.ensure_future(make_agent(script, capability, []).run("go"))
        while script.chunks_sent < 10:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())
    run = capability.last_run
    assert run is not None and run.receipt is not None
    assert [e.name for e in run.receipt.evidence] == ["user_abort"]


def test_a_run_the_application_cancels_is_a_user_abort() -> None:
    capability = LoopbreakCapability()
    agent = Agent(
        FunctionModel(stream_function=Script([Turn(tool="leave", args="{}")])),
        capabilities=[capability],
    )

    @agent.tool
    async def leave(ctx: RunContext[None]) -> str:
        ctx.cancel()  # pydantic-ai's own way for the application to stop a run
        await asyncio.sleep(0)
        return "left"

    with pytest.raises(RunCancelled):
        agent.run_sync("go")
    run = capability.last_run
    assert run is not None and run.receipt is not None
    assert [e.name for e in run.receipt.evidence] == ["user_abort"]


def test_the_example_ends_each_run_in_its_state(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(LOCKDOWN_ENV, raising=False)  # the example's runs assume no lockdown
    path = Path(__file__).resolve().parents[2] / "examples" / "pydantic_ai_agent.py"
    spec = importlib.util.spec_from_file_location("pydantic_ai_example", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, example)
    spec.loader.exec_module(example)

    assert example.main() == 0
    rows = [line.split()[:3] for line in capsys.readouterr().out.splitlines()]
    assert rows == [
        ["finishes", "VERIFIED_COMPLETE", "natural_finish"],
        ["claims-done", "FALSE_COMPLETE", "natural_finish"],
        ["repeats", "STUCK", "loop_detected"],
        ["explores", "BOUNDED_STOP", Reason.MAX_STEPS.value],
        ["degenerates", "STUCK", "degeneration"],
    ]


def test_pydantic_ais_test_model_runs_governed_to_a_verified_finish() -> None:
    written: list[str] = []
    capability = LoopbreakCapability(verifier=lambda run: written == ["report"])
    agent = Agent(TestModel(), capabilities=[capability])

    @agent.tool_plain
    def write_report() -> str:
        written.append("report")
        return "written"

    agent.run_sync("write the report")
    run = capability.last_run
    assert run is not None and run.receipt is not None
    assert run.receipt.state is ReceiptState.VERIFIED_COMPLETE
    assert [event.check for event in run.policy.audit.events] == [
        Check.STEPS,
        Check.REPEATED_ACTION,
        Check.PROGRESS,
        Check.STEPS,
    ]


def test_a_run_that_times_out_gets_a_receipt_saying_so() -> None:
    capability = LoopbreakCapability()

    async def slow(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        yield "Thinking"
        await asyncio.sleep(10)
        yield " done."

    agent = Agent(FunctionModel(stream_function=slow), capabilities=[capability])
    with pytest.raises(RunTimedOut):
        agent.run_sync("think", timeout=0.2)
    run = capability.last_run
    assert run is not None and run.receipt is not None
    assert [e.name for e in run.receipt.evidence] == ["timeout"]
