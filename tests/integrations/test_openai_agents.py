"""loopbreak.integrations.openai_agents against the OpenAI Agents SDK itself: scripted runs of a
real ``Agent`` and ``Runner`` with the SDK's own offline ``ScriptedModel``, streaming the SDK's
real Responses event types."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    RunConfig,
    SQLiteSession,
    UserError,
    function_tool,
)
from agents.items import TResponseStreamEvent
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)

import loopbreak
from loopbreak.agent import (
    AuditLog,
    Budgets,
    Check,
    DecisionKind,
    PolicyConfig,
    Reason,
    Receipt,
    ReceiptState,
)
from loopbreak.agent.kill_switch import KillSwitch
from loopbreak.agent.policy import FINAL_STEP_NUDGE, LOCKDOWN_ENV, LOCKDOWN_INSTRUCTION
from loopbreak.integrations.openai_agents import AgentRunStopped, LoopbreakRunner
from support.recorded import RECORDED

LOOP = RECORDED["d10-greedy"].text  # a real greedy loop of SmolLM2-135M
CHUNK = 8
OFFLINE = RunConfig(tracing_disabled=True)
USAGE = Usage(requests=1, input_tokens=40, output_tokens=5, total_tokens=45)


def adder(ran: list[tuple[int, float]], result: str = "") -> FunctionTool:
    @function_tool
    def add(a: int, b: float) -> str:
        """Adds two numbers."""
        ran.append((a, b))
        return result or str(a + b)

    return add


def calls(*arguments: dict[str, Any]) -> ScriptedModel:
    """A model that calls ``add`` with each of ``arguments`` in turn, then answers."""
    steps: list[Any] = [
        [function_call("add", args, call_id=f"call-{index}")]
        for index, args in enumerate(arguments)
    ]
    return ScriptedModel([*steps, [assistant_message("Done.")]], default_usage=USAGE)


def decisions(runner: LoopbreakRunner) -> list[tuple[int, Check, DecisionKind, Reason]]:
    assert runner.last_run is not None
    events = runner.last_run.policy.audit.events
    assert [event.seq for event in events] == list(range(len(events)))
    return [(event.step, event.check, event.kind, event.reason) for event in events]


ALLOW = (DecisionKind.ALLOW, Reason.WITHIN_LIMITS)


def test_the_fourth_identical_call_is_stopped_before_it_runs() -> None:
    model = calls({"a": 1, "b": 5}, {"b": 5.0, "a": 1}, {"a": 1, "b": 5.0}, {"b": 5, "a": 1})
    ran: list[tuple[int, float]] = []
    agent = Agent(name="adder", instructions="Add.", model=model, tools=[adder(ran)])
    runner = LoopbreakRunner()
    result = asyncio.run(runner.run(agent, "add 1 and 5", run_config=OFFLINE))

    assert ran == [(1, 5.0)] * 3 and len(model.calls) == 4
    run = runner.last_run
    assert run is not None and run.stop is not None and run.receipt is not None
    assert run.stop.reason is Reason.LOOP_DETECTED and run.stop.step == 3
    assert run.stop.action_key == 'add({"a":1,"b":5})'
    assert run.receipt.state is ReceiptState.STUCK
    assert run.receipt.reason == Reason.LOOP_DETECTED.value
    # The stop ends the run the SDK's way: its message is the final output.
    assert result.final_output == run.user_message() == run.stop.message
    # The run's items are kept: the prompt, four calls and their results, the last one the
    # stop message instead of the tool's.
    assert [item.get("type") for item in run.messages][1:] == [
        "function_call",
        "function_call_output",
    ] * 4 + [None]
    assert run.messages[-2]["output"] == run.stop.message
    assert run.messages[-1] == {"role": "assistant", "content": run.stop.message}
    tool = agent.tools[0]
    assert isinstance(tool, FunctionTool) and tool.tool_input_guardrails is None  # untouched
    steps, repeated, progress = Check.STEPS, Check.REPEATED_ACTION, Check.PROGRESS
    assert decisions(runner) == [
        (0, steps, *ALLOW), (0, repeated, *ALLOW), (0, progress, *ALLOW),
        (1, steps, *ALLOW), (1, repeated, *ALLOW), (1, progress, *ALLOW),
        (2, steps, *ALLOW), (2, repeated, *ALLOW), (2, progress, *ALLOW),
        (3, steps, *ALLOW), (3, repeated, DecisionKind.STOP, Reason.LOOP_DETECTED),
    ]  # fmt: skip


def counting(steps: int) -> ScriptedModel:
    return calls(*({"a": step, "b": 1} for step in range(steps)))


def test_max_steps_warns_counting_down_nudges_on_the_last_step_then_stops() -> None:
    model = counting(10)
    ran: list[tuple[int, float]] = []
    agent = Agent(name="counter", instructions="Count.", model=model, tools=[adder(ran)])
    runner = LoopbreakRunner(PolicyConfig(max_steps=6, final_step_lockdown=False))
    result = asyncio.run(runner.run(agent, "count", run_config=OFFLINE))

    said = [call.system_instructions or "" for call in model.calls]
    assert len(said) == 6 and len(ran) == 6
    assert all(instructions.startswith("Count.") for instructions in said)
    for step, steps_left in enumerate([5, 4, 3, 2]):
        assert f"Only {steps_left} tool-use steps remain" in said[step]
    assert "Only 1 tool-use step remains" in said[4]
    assert said[5].endswith(FINAL_STEP_NUDGE)
    assert [[tool.name for tool in call.tools] for call in model.calls] == [["add"]] * 6
    run = runner.last_run
    assert run is not None and run.stop is not None and run.receipt is not None
    assert run.stop.reason is Reason.MAX_STEPS and run.stop.step == 6
    assert run.receipt.state is ReceiptState.BOUNDED_STOP
    # The stop is the run's final answer: no exception, and in the history.
    assert result.final_output == run.user_message()
    assert run.messages[-1] == {"role": "assistant", "content": run.user_message()}
    step_decisions = [d for d in decisions(runner) if d[1] is Check.STEPS]
    assert [(step, kind, reason) for step, _, kind, reason in step_decisions] == [
        *[(step, DecisionKind.WARN, Reason.STEPS_RUNNING_OUT) for step in range(5)],
        (5, DecisionKind.WARN, Reason.FINAL_STEP),
        (6, DecisionKind.STOP, Reason.MAX_STEPS),
    ]
    assert run.policy.usage().input_tokens == 6 * USAGE.input_tokens


def test_lockdown_offers_no_tools_on_the_last_step() -> None:
    def answer_when_no_tools(call: ModelCall) -> Any:
        if not call.tools:
            return [assistant_message("Counted to 4; step 5 is left.")]
        return [function_call("add", {"a": len(call.input), "b": 1}, call_id=str(len(call.input)))]

    model = ScriptedModel([ModelStep.respond(answer_when_no_tools)] * 6, default_usage=USAGE)
    ran: list[tuple[int, float]] = []
    agent = Agent(name="counter", instructions="Count.", model=model, tools=[adder(ran)])
    runner = LoopbreakRunner(PolicyConfig(max_steps=6, final_step_lockdown=True))
    result = asyncio.run(runner.run(agent, "count", run_config=OFFLINE))

    assert [[tool.name for tool in call.tools] for call in model.calls] == [["add"]] * 5 + [[]]
    assert (model.calls[5].system_instructions or "").endswith(LOCKDOWN_INSTRUCTION)
    assert len(ran) == 5 and result.final_output == "Counted to 4; step 5 is left."
    run = runner.last_run
    assert run is not None and run.stop is None
    assert decisions(runner)[-1] == (5, Check.STEPS, DecisionKind.WARN, Reason.FINAL_STEP_LOCKDOWN)


def test_a_call_on_a_locked_down_last_step_finds_no_tool_and_the_step_cap_ends_the_run() -> None:
    model = counting(10)  # the model calls the tool even when none is offered
    ran: list[tuple[int, float]] = []
    agent = Agent(name="counter", instructions="Count.", model=model, tools=[adder(ran)])
    runner = LoopbreakRunner(PolicyConfig(max_steps=6, final_step_lockdown=True))
    lenient = replace(OFFLINE, tool_not_found_behavior="return_error_to_model")
    result = asyncio.run(runner.run(agent, "count", run_config=lenient))

    assert [[tool.name for tool in call.tools] for call in model.calls] == [["add"]] * 5 + [[]]
    assert len(ran) == 5  # the SDK answered the last call with "tool not found"
    run = runner.last_run
    assert run is not None and run.stop is not None and run.receipt is not None
    assert run.stop.reason is Reason.MAX_STEPS and result.final_output == run.user_message()
    assert run.receipt.state is ReceiptState.BOUNDED_STOP


def response(status: Any, output: list[Any]) -> Response:
    return Response(
        id="resp-loop",
        created_at=0,
        model="scripted",
        object="response",
        output=output,
        parallel_tool_calls=False,
        tool_choice="auto",
        tools=[],
        status=status,
    )


class StreamedAnswer:
    """The Responses events of one streamed answer, a delta of CHUNK chars at a time, as a
    model step; counts the deltas the run pulled."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.deltas_sent = 0

    async def __call__(self, call: ModelCall) -> AsyncIterator[TResponseStreamEvent]:
        message = ResponseOutputMessage(
            id="msg-1", type="message", role="assistant", status="in_progress", content=[]
        )
        yield ResponseCreatedEvent(
            type="response.created", response=response("in_progress", []), sequence_number=0
        )
        yield ResponseOutputItemAddedEvent(
            type="response.output_item.added", item=message, output_index=0, sequence_number=1
        )
        yield ResponseContentPartAddedEvent(
            type="response.content_part.added",
            item_id="msg-1",
            output_index=0,
            content_index=0,
            part=ResponseOutputText(type="output_text", text="", annotations=[]),
            sequence_number=2,
        )
        for start in range(0, len(self.text), CHUNK):
            await asyncio.sleep(0)  # a real model takes time per token: the run can cancel
            self.deltas_sent += 1
            yield ResponseTextDeltaEvent(
                type="response.output_text.delta",
                item_id="msg-1",
                output_index=0,
                content_index=0,
                delta=self.text[start : start + CHUNK],
                logprobs=[],
                sequence_number=3 + self.deltas_sent,
            )
        done = message.model_copy(
            update={
                "status": "completed",
                "content": [ResponseOutputText(type="output_text", text=self.text, annotations=[])],
            }
        )
        yield ResponseCompletedEvent(
            type="response.completed",
            response=response("completed", [done]),
            sequence_number=4 + self.deltas_sent,
        )


def stream_all(runner: LoopbreakRunner, agent: Agent[Any]) -> str:
    async def consume() -> str:
        streamed = runner.run_streamed(agent, "get the house ready", run_config=OFFLINE)
        seen = []
        async for event in streamed.stream_events():
            if (
                event.type == "raw_response_event"
                and event.data.type == "response.output_text.delta"
            ):
                seen.append(event.data.delta)
        return "".join(seen)

    return asyncio.run(consume())


def test_a_looping_streamed_answer_is_cut_and_the_history_keeps_the_trimmed_text() -> None:
    answer = StreamedAnswer(LOOP)
    agent = Agent(name="house", model=ScriptedModel([ModelStep.stream(answer)]))
    runner = LoopbreakRunner()
    relayed = stream_all(runner, agent)

    run = runner.last_run
    assert run is not None and run.degeneration is not None and run.receipt is not None
    cut = run.degeneration
    # Cut a few hundred chars into the loop, and the run cancelled before the model finished.
    required = loopbreak.Rules().required_span(cut.finding.block)
    assert len(cut.text) - cut.finding.start <= required + CHUNK
    assert answer.deltas_sent * CHUNK < len(cut.text) + 4 * CHUNK < len(LOOP)
    assert LOOP.startswith(relayed) and len(relayed) < len(cut.text)
    # The history the run leaves ends with the trimmed answer.
    trimmed = run.messages[-1]
    assert trimmed["role"] == "assistant" and trimmed["content"] == cut.persist_text
    assert cut.persist_text.startswith(LOOP[: cut.finding.start])
    assert len(cut.persist_text) < len(cut.text)
    assert run.receipt.state is ReceiptState.STUCK and run.receipt.reason == "degeneration"
    assert run.receipt.evidence[0].details["finding"]["units_removed"] == cut.units_removed > 0


class StreamedToolCall:
    """The Responses events of one streamed call of ``add``, its arguments CHUNK chars a delta."""

    def __init__(self, arguments: str) -> None:
        self.arguments = arguments
        self.deltas_sent = 0

    async def __call__(self, call: ModelCall) -> AsyncIterator[TResponseStreamEvent]:
        item = ResponseFunctionToolCall(
            id="fc-1", call_id="call-1", type="function_call", name="add", arguments=""
        )
        yield ResponseCreatedEvent(
            type="response.created", response=response("in_progress", []), sequence_number=0
        )
        yield ResponseOutputItemAddedEvent(
            type="response.output_item.added", item=item, output_index=0, sequence_number=1
        )
        for start in range(0, len(self.arguments), CHUNK):
            await asyncio.sleep(0)
            self.deltas_sent += 1
            yield ResponseFunctionCallArgumentsDeltaEvent(
                type="response.function_call_arguments.delta",
                item_id="fc-1",
                output_index=0,
                delta=self.arguments[start : start + CHUNK],
                sequence_number=1 + self.deltas_sent,
            )
        done = item.model_copy(update={"arguments": self.arguments})
        yield ResponseCompletedEvent(
            type="response.completed",
            response=response("completed", [done]),
            sequence_number=2 + self.deltas_sent,
        )


def test_a_looping_streamed_tool_call_is_cut_and_never_runs() -> None:
    arguments = '{"a": 1, "b": 2, "note": "' + "ok " * 400 + '"}'
    streamed_call = StreamedToolCall(arguments)
    ran: list[tuple[int, float]] = []
    model = ScriptedModel([ModelStep.stream(streamed_call)])
    agent = Agent(name="adder", model=model, tools=[adder(ran)])
    runner = LoopbreakRunner()
    stream_all(runner, agent)

    run = runner.last_run
    assert run is not None and run.degeneration is not None and run.receipt is not None
    assert run.degeneration.source == "output[0].arguments"
    assert ran == [] and streamed_call.deltas_sent * CHUNK < len(arguments) / 2
    assert [item.get("role") for item in run.messages] == ["user"]
    assert run.receipt.state is ReceiptState.STUCK


def test_a_streamed_run_that_answers_cleanly_is_relayed_whole() -> None:
    text = RECORDED["d02-sampled"].text
    agent = Agent(name="writer", model=ScriptedModel([ModelStep.stream(StreamedAnswer(text))]))
    runner = LoopbreakRunner(verifier=lambda run: True)
    assert stream_all(runner, agent) == text
    run = runner.last_run
    assert run is not None and run.receipt is not None and run.degeneration is None
    assert run.receipt.state is ReceiptState.VERIFIED_COMPLETE


@pytest.mark.parametrize(
    ("verified", "state"),
    [(True, ReceiptState.VERIFIED_COMPLETE), (False, ReceiptState.FALSE_COMPLETE)],
)
def test_a_natural_finish_is_complete_only_as_the_verifier_says(
    verified: bool, state: ReceiptState
) -> None:
    agent = Agent(name="adder", model=calls({"a": 1, "b": 2}), tools=[adder([])])
    runner = LoopbreakRunner(verifier=lambda run: verified)
    result = asyncio.run(runner.run(agent, "add 1 and 2", run_config=OFFLINE))

    assert result.final_output == "Done."
    run = runner.last_run
    assert run is not None and run.receipt is not None and run.stop is None
    assert run.receipt.state is state and run.receipt.verified is verified
    assert [e.name for e in run.receipt.evidence] == ["natural_finish"]


def test_every_run_of_one_agent_gets_a_fresh_policy_and_its_own_receipt() -> None:
    audit = AuditLog()
    receipts: list[Receipt] = []
    runner = LoopbreakRunner(audit=audit, on_receipt=receipts.append)
    steps: list[Any] = []
    for run_index in range(2):
        steps += [
            [function_call("add", {"a": 1, "b": 2}, call_id=f"{run_index}-{n}")] for n in "ab"
        ]
        steps.append([assistant_message("3")])
    model = ScriptedModel(steps, default_usage=USAGE)
    agent = Agent(name="adder", model=model, tools=[adder([])])
    asyncio.run(runner.run(agent, "add", run_config=OFFLINE))
    first = runner.last_run
    asyncio.run(runner.run(agent, "add", run_config=OFFLINE))
    second = runner.last_run

    assert first is not None and second is not None and first is not second
    assert [r.run_id for r in receipts] == [first.policy.run_id, second.policy.run_id]
    # Two copies of the call per run: a shared policy would have stopped the second run.
    assert second.stop is None and second.policy.usage().tool_calls == 2
    first_events = [e for e in audit.events if e.run_id == first.policy.run_id]
    assert audit.events[: len(first_events)] == tuple(first_events)
    assert audit.events[len(first_events)].seq == 0


def test_a_run_making_no_progress_stops_before_the_next_model_call() -> None:
    # Different calls, the same result every time: nothing new is learned.
    model = counting(10)
    agent = Agent(name="counter", model=model, tools=[adder([], result="unchanged")])
    runner = LoopbreakRunner(PolicyConfig(no_progress_window=3))
    result = asyncio.run(runner.run(agent, "count", run_config=OFFLINE))

    assert len(model.calls) == 4 and len(result.new_items) == 8
    run = runner.last_run
    assert run is not None and run.receipt is not None and run.stop is not None
    assert run.stop.reason is Reason.NO_PROGRESS
    assert result.final_output == run.stop.message
    assert run.receipt.state is ReceiptState.STUCK and run.receipt.reason == "no_progress"


def test_a_consumer_that_stops_reading_ends_the_run_with_a_receipt() -> None:
    text = "".join(chr(0x4E00 + i * 7919 % 20_000) for i in range(20_000))  # never repeats
    agent = Agent(name="writer", model=ScriptedModel([ModelStep.stream(StreamedAnswer(text))]))
    runner = LoopbreakRunner()

    async def read_a_little() -> None:
        events = runner.run_streamed(agent, "write", run_config=OFFLINE).stream_events()
        async for event in events:
            if (
                event.type == "raw_response_event"
                and event.data.type == "response.output_text.delta"
            ):
                break
        await events.aclose()

    asyncio.run(read_a_little())
    run = runner.last_run
    assert run is not None and run.receipt is not None
    assert [e.name for e in run.receipt.evidence] == ["user_abort"]


def test_the_runner_owns_max_turns_and_hooks() -> None:
    agent = Agent(name="a", model=ScriptedModel([]))
    with pytest.raises(TypeError, match="max_steps"):
        asyncio.run(LoopbreakRunner().run(agent, "x", max_turns=3))


def test_the_example_ends_each_run_in_its_state(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(LOCKDOWN_ENV, raising=False)  # the example's runs assume no lockdown
    path = Path(__file__).resolve().parents[2] / "examples" / "openai_agents_agent.py"
    spec = importlib.util.spec_from_file_location("openai_agents_example", path)
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


def test_a_spent_token_budget_stops_the_next_tool_call() -> None:
    model = counting(10)
    ran: list[tuple[int, float]] = []
    agent = Agent(name="counter", model=model, tools=[adder(ran)])
    runner = LoopbreakRunner(PolicyConfig(budgets=Budgets(max_total_tokens=100)))
    result = asyncio.run(runner.run(agent, "count", run_config=OFFLINE))

    assert len(model.calls) == 3 and len(ran) == 2  # 3 x 45 tokens spent the 100
    run = runner.last_run
    assert run is not None and run.stop is not None and run.receipt is not None
    assert run.stop.check is Check.TOTAL_TOKENS and run.stop.value == 135
    assert run.receipt.state is ReceiptState.BOUNDED_STOP
    assert result.final_output == run.stop.message


@pytest.mark.parametrize(
    ("error", "evidence"),
    [(ConnectionError("backend down"), "tool_failure"), (TimeoutError("slow"), "timeout")],
)
def test_a_tool_error_that_ends_the_run_is_in_its_receipt(error: Exception, evidence: str) -> None:
    def fail(a: int, b: float) -> str:
        raise error

    tool = function_tool(fail, name_override="add", failure_error_function=None)
    agent = Agent(name="adder", model=calls({"a": 1, "b": 2}), tools=[tool])
    runner = LoopbreakRunner()
    with pytest.raises(UserError) as raised:  # the SDK's wrapping of a tool's error
        asyncio.run(runner.run(agent, "add", run_config=OFFLINE))
    assert isinstance(raised.value.__cause__, type(error))

    run = runner.last_run
    assert run is not None and run.receipt is not None
    assert [e.name for e in run.receipt.evidence] == [evidence]


def test_a_looping_answer_of_a_run_that_is_not_streamed_is_trimmed_in_the_output_and_history() -> (
    None
):
    # The SDK's first documented example: await Runner.run(...), and a verifier that says yes.
    agent = Agent(name="house", model=ScriptedModel([[assistant_message(LOOP)]]))
    runner = LoopbreakRunner(verifier=lambda run: True)
    result = asyncio.run(runner.run(agent, "get the house ready", run_config=OFFLINE))

    run = runner.last_run
    assert run is not None and run.degeneration is not None and run.receipt is not None
    cut = run.degeneration
    assert cut.source == "content" and cut.text == LOOP
    assert result.final_output == cut.persist_text and len(cut.persist_text) < len(LOOP)
    assert cut.persist_text.startswith(LOOP[: cut.finding.start])
    [answer] = [item for item in run.messages if item.get("role") == "assistant"]
    assert answer["content"][0]["text"] == cut.persist_text
    assert run.receipt.state is ReceiptState.STUCK and run.receipt.reason == "degeneration"


def _role_and_text(item: Any) -> tuple[str, str]:
    content = item["content"]
    return item["role"], content if isinstance(content, str) else content[0]["text"]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_recovery_step_with_a_session_sends_the_session_nothing_twice(streamed: bool) -> None:
    # A Session holds the history and the SDK puts it before a run's input: the recovery step's
    # run is given only what the session lacks (a cancelled streamed answer) and the nudge.
    first = ModelStep.stream(StreamedAnswer(LOOP)) if streamed else [assistant_message(LOOP)]
    model = ScriptedModel([first, [assistant_message("The house is ready.")]])
    agent = Agent(name="house", model=model)
    session = SQLiteSession("recovery")
    runner = LoopbreakRunner(PolicyConfig(recovery_step=True), verifier=lambda run: True)

    async def run() -> Any:
        options: dict[str, Any] = {"run_config": OFFLINE, "session": session}
        if not streamed:
            return await runner.run(agent, "get the house ready", **options)
        stream = runner.run_streamed(agent, "get the house ready", **options)
        async for _ in stream.stream_events():
            pass
        return stream.result

    result = asyncio.run(run())
    run_ = runner.last_run
    assert run_ is not None and run_.receipt is not None
    assert result.final_output == "The house is ready."
    [nudge] = [e.message for e in run_.policy.audit.events if e.kind is DecisionKind.REFUSE]
    assert nudge is not None
    cut = _role_and_text(model.calls[1].input[1])[1]  # the looping answer, trimmed
    assert cut[:200] == LOOP[:200] and len(cut) < len(LOOP) // 2
    asked_again = [("user", "get the house ready"), ("assistant", cut), ("user", nudge)]
    assert [_role_and_text(item) for item in model.calls[1].input] == asked_again
    saved = asyncio.run(session.get_items())
    assert [_role_and_text(item) for item in saved] == [
        *asked_again,
        ("assistant", "The house is ready."),
    ]
    assert [_role_and_text(item) for item in run_.messages] == [_role_and_text(i) for i in saved]
    assert run_.receipt.state is ReceiptState.VERIFIED_COMPLETE


def _down(args: Any, error: Exception) -> str:
    return f"add is down: {error}"


@pytest.mark.parametrize(
    ("tool_options", "formatter"),
    [
        ({"failure_error_function": _down}, None),
        ({}, lambda args: _down(args, args.error)),
    ],
    ids=["the tool's own failure_error_function", "the run's tool_error_formatter"],
)
def test_a_tool_whose_errors_are_answered_in_words_of_ones_own_makes_no_progress(
    tool_options: dict[str, Any], formatter: Any
) -> None:
    # Each call different, each error worded differently: only the failures say "no progress".
    attempts: list[int] = []

    def add(a: int, b: float) -> str:
        """Adds two numbers."""
        attempts.append(a)
        raise RuntimeError(f"attempt {len(attempts)}")

    agent = Agent(name="adder", model=counting(6), tools=[function_tool(add, **tool_options)])
    runner = LoopbreakRunner(PolicyConfig(no_progress_window=3))
    run_config = replace(OFFLINE, tool_error_formatter=formatter)
    result = asyncio.run(runner.run(agent, "add", run_config=run_config))

    run = runner.last_run
    assert run is not None and run.receipt is not None
    assert (run.receipt.state, run.receipt.reason) == (ReceiptState.STUCK, "no_progress")
    assert attempts == [0, 1, 2] and result.final_output == run.user_message()
    outputs = [
        item["output"] for item in run.messages if item.get("type") == "function_call_output"
    ]
    assert outputs == [f"add is down: attempt {n}" for n in (1, 2, 3)]  # the answer stays ours


def test_a_tool_error_formatter_that_keeps_the_default_answer_still_makes_it_a_failure() -> None:
    attempts: list[int] = []

    def add(a: int, b: float) -> str:
        """Adds two numbers."""
        attempts.append(a)
        raise RuntimeError(f"attempt {len(attempts)}")

    seen: list[str] = []

    def keep_default(args: Any) -> None:
        seen.append(args.call_id)

    agent = Agent(name="adder", model=counting(6), tools=[function_tool(add)])
    runner = LoopbreakRunner(PolicyConfig(no_progress_window=3))
    run_config = replace(OFFLINE, tool_error_formatter=keep_default)
    asyncio.run(runner.run(agent, "add", run_config=run_config))
    run = runner.last_run
    assert run is not None and run.receipt is not None
    assert (run.receipt.state, run.receipt.reason) == (ReceiptState.STUCK, "no_progress")
    assert seen == ["call-0", "call-1", "call-2"]


SERVER_HELD = {
    "conversation_id": {"conversation_id": "conv-house"},
    "previous_response_id": {"previous_response_id": "resp-before"},
    "auto_previous_response_id": {"auto_previous_response_id": True},
}


@pytest.mark.parametrize("conversation", SERVER_HELD.values(), ids=SERVER_HELD.keys())
def test_a_recovery_step_in_a_conversation_the_server_holds_sends_only_the_nudge(
    conversation: dict[str, Any],
) -> None:
    # The server has the question and the looping answer (it wrote it): the next SDK run sends
    # the nudge alone, in the same conversation or after the looping answer's response.
    looping = ModelStep(output=[assistant_message(LOOP)], response_id="resp-loop")
    model = ScriptedModel([looping, [assistant_message("The house is ready.")]])
    agent = Agent(name="house", model=model)
    runner = LoopbreakRunner(PolicyConfig(recovery_step=True), verifier=lambda run: True)
    result = asyncio.run(
        runner.run(agent, "get the house ready", run_config=OFFLINE, **conversation)
    )

    run = runner.last_run
    assert run is not None and run.receipt is not None
    assert result.final_output == "The house is ready."
    [nudge] = [e.message for e in run.policy.audit.events if e.kind is DecisionKind.REFUSE]
    assert nudge is not None
    first, second = model.calls
    assert [_role_and_text(item) for item in first.input] == [("user", "get the house ready")]
    assert [_role_and_text(item) for item in second.input] == [("user", nudge)]
    assert second.conversation_id == conversation.get("conversation_id")
    chained = "conversation_id" not in conversation
    assert second.previous_response_id == ("resp-loop" if chained else None)
    # The run's history is whole all the same: the question, the trimmed answer, the nudge.
    history = [_role_and_text(item) for item in run.messages]
    cut = history[1][1]  # the looping answer, trimmed
    assert cut[:200] == LOOP[:200] and len(cut) < len(LOOP) // 2
    assert history == [
        ("user", "get the house ready"),
        ("assistant", cut),
        ("user", nudge),
        ("assistant", "The house is ready."),
    ]
    assert run.receipt.state is ReceiptState.VERIFIED_COMPLETE


def test_a_looping_tool_call_of_a_run_that_is_not_streamed_never_runs() -> None:
    arguments = {"a": 1, "b": 2, "note": "ok " * 400}
    ran: list[tuple[int, float]] = []
    model = ScriptedModel([[function_call("add", arguments, call_id="c1")]])
    agent = Agent(name="adder", model=model, tools=[adder(ran)])
    runner = LoopbreakRunner()
    result = asyncio.run(runner.run(agent, "add", run_config=OFFLINE))

    run = runner.last_run
    assert run is not None and run.degeneration is not None and run.receipt is not None
    assert run.degeneration.source == "output[0].arguments" and ran == []
    assert result.final_output == run.user_message() and len(model.calls) == 1
    assert run.receipt.state is ReceiptState.STUCK


def test_an_engaged_kill_switch_stops_a_run_before_its_first_model_call(tmp_path: Path) -> None:
    switch = KillSwitch(tmp_path / "stop")
    switch.engage()
    model = calls({"a": 1, "b": 2})
    agent = Agent(name="adder", model=model, tools=[adder([])])
    runner = LoopbreakRunner()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LOOPBREAK_KILL_SWITCH", str(switch.path))
        with pytest.raises(AgentRunStopped) as raised:
            asyncio.run(runner.run(agent, "add", run_config=OFFLINE))

    assert raised.value.decision.reason is Reason.KILL_SWITCH and model.calls == ()
    run = runner.last_run
    assert run is not None and run.receipt is not None
    assert run.receipt.state is ReceiptState.BOUNDED_STOP
