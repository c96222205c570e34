"""The same scenarios through the three agent-framework adapters, each driven by its framework's
own offline test model (the Agents SDK's ``ScriptedModel``, pydantic-ai's ``FunctionModel``,
LangChain's ``GenericFakeChatModel``), ending in the same receipts and the same last answer in
the history the framework keeps. A failing tool raises the error its framework hands the model
as the call's result (LangChain's ``ToolException`` under ``handle_tool_error``, pydantic-ai's
``ToolFailed``, any exception under the SDK's default failure answer)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

import pytest

from loopbreak.agent import Check, DecisionKind, PolicyConfig, Reason, ReceiptState
from loopbreak.agent.kill_switch import KILL_SWITCH_ENV
from loopbreak.agent.policy import REFUSAL_MESSAGE
from loopbreak.integrations._governance import AgentRun, AgentVerifier
from support.recorded import RECORDED

LOOP = RECORDED["d10-greedy"].text  # a real greedy loop of SmolLM2-135M
PROMPT = "Add the numbers."
Step = Union[dict[str, int], str]  # a call of the tool ``add`` with these arguments, or an answer


@dataclass
class Adder:
    """The tool of every scenario (``add``): adds, counts its runs, and at run ``kill_at``
    engages the kill switch from another process (an operator's ``touch``). With ``error``
    (the framework's tool error) every run fails instead, each error worded differently."""

    switch: Path
    kill_at: Optional[int] = None
    error: Optional[Callable[[str], Exception]] = None
    ran: list[tuple[int, int]] = field(default_factory=list)

    def tool(self) -> Callable[[int, int], str]:
        def add(a: int, b: int) -> str:
            """Adds two numbers."""
            self.ran.append((a, b))
            if len(self.ran) == self.kill_at:
                touch = "import pathlib, sys; pathlib.Path(sys.argv[1]).touch()"
                subprocess.run([sys.executable, "-c", touch, self.switch], check=True, timeout=60)
            if self.error is not None:
                raise self.error(f"the adder is down (attempt {len(self.ran)}, {a} + {b})")
            return str(a + b)

        return add


@dataclass(frozen=True)
class Outcome:
    run: AgentRun
    answer: str  # the last answer in the history the framework keeps
    texts: list[str]  # the text of every message of that history, in order


STOP = "the stop message"
TRIMMED = "the trimmed answer"


@dataclass(frozen=True)
class Scenario:
    script: Sequence[Step]
    state: ReceiptState
    reason: str
    ran: int  # tool runs
    answer: str  # STOP, TRIMMED or the text itself
    config: PolicyConfig = PolicyConfig()
    verified: Optional[bool] = None
    streamed: bool = False
    kill_at: Optional[int] = None
    failing: bool = False
    refuses: Optional[bool] = None  # a recovery turn is given (default: when it is on)

    def verifier(self) -> Optional[AgentVerifier]:
        verified = self.verified
        return None if verified is None else (lambda run: verified)


Driver = Callable[[Scenario, Adder], Outcome]


def sdk(scenario: Scenario, adder: Adder) -> Outcome:
    from agents import Agent, RunConfig, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from loopbreak.integrations.openai_agents import LoopbreakRunner

    if scenario.failing:
        adder.error = RuntimeError
    steps: list[Any] = [
        [function_call("add", step, call_id=f"call-{index}")]
        if isinstance(step, dict)
        else [assistant_message(step)]
        for index, step in enumerate(scenario.script)
    ]
    agent = Agent(name="adder", model=ScriptedModel(steps), tools=[function_tool(adder.tool())])
    runner = LoopbreakRunner(scenario.config, verifier=scenario.verifier())
    offline = RunConfig(tracing_disabled=True)

    async def run() -> None:
        if scenario.streamed:
            async for _ in runner.run_streamed(agent, PROMPT, run_config=offline).stream_events():
                pass
        else:
            await runner.run(agent, PROMPT, run_config=offline)

    asyncio.run(run())
    governed = runner.last_run
    assert governed is not None

    def text(item: Any) -> str:
        content = item.get("content", "")
        return content if isinstance(content, str) else "".join(p["text"] for p in content)

    answers = [item for item in governed.messages if item.get("role") == "assistant"]
    texts = [text(item) for item in governed.messages if item.get("role")]
    return Outcome(governed, text(answers[-1]), texts)


def pydantic_ai(scenario: Scenario, adder: Adder) -> Outcome:
    from pydantic_ai import Agent, ModelResponse, TextPart, ToolFailed
    from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

    from loopbreak.integrations.pydantic_ai import LoopbreakCapability

    requests: list[int] = []

    async def answer(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[Union[str, DeltaToolCalls]]:
        step = scenario.script[len(requests)]
        requests.append(len(requests))
        if isinstance(step, dict):
            yield {0: DeltaToolCall(name="add", json_args=json.dumps(step))}
            return
        for start in range(0, len(step), 8):
            yield step[start : start + 8]

    if scenario.failing:
        adder.error = ToolFailed
    capability = LoopbreakCapability(scenario.config, verifier=scenario.verifier())
    agent = Agent(FunctionModel(stream_function=answer), capabilities=[capability])
    agent.tool_plain(adder.tool())

    async def run() -> None:
        if scenario.streamed:
            async with agent.run_stream_events(PROMPT) as events:
                async for _ in events:
                    pass
        else:
            await agent.run(PROMPT)

    asyncio.run(run())
    governed = capability.last_run
    assert governed is not None
    responses = [message for message in governed.messages if isinstance(message, ModelResponse)]
    last = "".join(part.content for part in responses[-1].parts if isinstance(part, TextPart))
    texts = [
        str(part.content)
        for message in governed.messages
        for part in message.parts
        if isinstance(part, (TextPart, UserPromptPart))
        and isinstance(message, (ModelRequest, ModelResponse))
    ]
    return Outcome(governed, last, texts)


def langchain(scenario: Scenario, adder: Adder) -> Outcome:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import StructuredTool, ToolException
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from loopbreak.integrations.langchain import LoopbreakMiddleware

    class ScriptedModel(GenericFakeChatModel):
        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
            return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    # A call in the OpenAI form, which the fake model streams too (its tool_calls it does not).
    messages = [
        AIMessage(content="", additional_kwargs={"tool_calls": [_openai_call(index, step)]})
        if isinstance(step, dict)
        else AIMessage(content=step)
        for index, step in enumerate(scenario.script)
    ]
    if scenario.failing:
        adder.error = ToolException
    tool = StructuredTool.from_function(adder.tool(), handle_tool_error=True)
    middleware = LoopbreakMiddleware(scenario.config, verifier=scenario.verifier())
    agent = create_agent(
        ScriptedModel(messages=iter(messages)), tools=[tool], middleware=[middleware]
    )
    question: Any = {"messages": [("user", PROMPT)]}
    if scenario.streamed:
        for _ in agent.stream(question, stream_mode="messages"):
            pass
    else:
        agent.invoke(question)
    governed = middleware.last_run
    assert governed is not None
    last = [message for message in governed.messages if isinstance(message, AIMessage)][-1]
    texts = [str(message.content) for message in governed.messages if message.content]
    return Outcome(governed, str(last.content), texts)


def _openai_call(index: int, arguments: dict[str, int]) -> dict[str, Any]:
    function = {"name": "add", "arguments": json.dumps(arguments)}
    return {"id": f"call-{index}", "type": "function", "function": function}


DRIVERS: dict[str, Driver] = {
    "openai_agents": sdk,
    "pydantic_ai": pydantic_ai,
    "langchain": langchain,
}

SAME = {"a": 1, "b": 2}
COUNTING = [{"a": n, "b": 1} for n in range(10)]


SCENARIOS = {
    "repeat": Scenario([SAME] * 5 + ["3"], ReceiptState.STUCK, "loop_detected", 3, STOP),
    "recovery turn, the model repeats": Scenario(
        [SAME] * 6 + ["3"],
        ReceiptState.STUCK,
        "loop_detected",
        3,
        STOP,
        config=PolicyConfig(recovery_turn=True),
    ),
    "recovery turn, the model recovers": Scenario(
        [SAME] * 4 + ["3"],
        ReceiptState.VERIFIED_COMPLETE,
        "natural_finish",
        3,
        "3",
        config=PolicyConfig(recovery_turn=True),
        verified=True,
    ),
    "max_steps with warnings": Scenario(
        COUNTING,
        ReceiptState.BOUNDED_STOP,
        "max_steps",
        4,
        STOP,
        config=PolicyConfig(max_steps=4, final_step_lockdown=False),
    ),
    "looping answer": Scenario(
        [LOOP], ReceiptState.STUCK, "degeneration", 0, TRIMMED, verified=True
    ),
    "looping answer, streamed": Scenario(
        [LOOP], ReceiptState.STUCK, "degeneration", 0, TRIMMED, verified=True, streamed=True
    ),
    "finish without a verifier": Scenario(
        [SAME, "3"], ReceiptState.FALSE_COMPLETE, "natural_finish", 1, "3"
    ),
    "finish, verified": Scenario(
        [SAME, "3"], ReceiptState.VERIFIED_COMPLETE, "natural_finish", 1, "3", verified=True
    ),
    "kill switch from another process": Scenario(
        COUNTING, ReceiptState.BOUNDED_STOP, "kill_switch", 2, STOP, kill_at=2
    ),
    # The answer's recovery turn: the cut answer stays trimmed in the history, then the nudge.
    **{
        f"recovery turn, the answer loops again{streamed}": Scenario(
            [LOOP, LOOP],
            ReceiptState.STUCK,
            "degeneration",
            0,
            TRIMMED,
            config=PolicyConfig(recovery_turn=True),
            verified=True,
            streamed=bool(streamed),
        )
        for streamed in ("", ", streamed")
    },
    **{
        f"recovery turn, the answer recovers{streamed}": Scenario(
            [LOOP, SAME, "3"],
            ReceiptState.VERIFIED_COMPLETE,
            "natural_finish",
            1,
            "3",
            config=PolicyConfig(recovery_turn=True),
            verified=True,
            streamed=bool(streamed),
        )
        for streamed in ("", ", streamed")
    },
    "recovery turn on the final step: the loop stops the run": Scenario(
        [SAME, LOOP, "3"],
        ReceiptState.STUCK,
        "degeneration",
        1,
        TRIMMED,
        config=PolicyConfig(max_steps=2, recovery_turn=True),
        refuses=False,
    ),
    # Each error worded differently, each call different: only the errors say "no progress".
    "a tool that keeps failing": Scenario(
        COUNTING,
        ReceiptState.STUCK,
        "no_progress",
        3,
        STOP,
        config=PolicyConfig(no_progress_window=3),
        failing=True,
    ),
    "a failing tool called A-B-A-B: a cycle": Scenario(
        [SAME, {"a": 2, "b": 1}] * 4,
        ReceiptState.STUCK,
        "loop_detected",
        6,
        STOP,
        config=PolicyConfig(no_progress_window=None),
        failing=True,
    ),
}


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
@pytest.mark.parametrize("framework", DRIVERS)
def test_every_framework_ends_each_scenario_in_the_same_receipt(
    framework: str, scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip({"openai_agents": "agents"}.get(framework, framework))
    switch = tmp_path / "stop-every-run"
    monkeypatch.setenv(KILL_SWITCH_ENV, str(switch))
    adder = Adder(switch, kill_at=scenario.kill_at)
    outcome = DRIVERS[framework](scenario, adder)

    run = outcome.run
    assert run.receipt is not None
    assert (run.receipt.state, run.receipt.reason) == (scenario.state, scenario.reason)
    assert len(adder.ran) == scenario.ran
    if scenario.answer == STOP:
        assert run.stop is not None and outcome.answer == run.stop.message
    elif scenario.answer == TRIMMED:
        assert run.degeneration is not None and outcome.answer == run.degeneration.persist_text
        assert LOOP.startswith(outcome.answer[: run.degeneration.finding.start])
        assert len(outcome.answer) < len(LOOP) // 2
    else:
        assert outcome.answer == scenario.answer
    events = run.policy.audit.events
    kinds = [event.kind for event in events]
    answers = [event for event in events if event.check is Check.LOOPING_ANSWER]
    assert len(answers) == scenario.script.count(LOOP)  # each looping answer decided, audited
    if scenario.reason == "degeneration":
        assert answers[-1].kind is DecisionKind.STOP and run.stop == answers[-1]
    refuses = scenario.config.recovery_turn if scenario.refuses is None else scenario.refuses
    assert (DecisionKind.REFUSE in kinds) == refuses
    refused = [event for event in answers if event.refused]
    if refused:
        # The cut answer, trimmed, then the nudge: what it repeated, what to do instead.
        nudge = refused[0].message
        assert nudge is not None and nudge.startswith("Your last answer was cut")
        assert '"' in nudge and "\n" not in nudge
        at = outcome.texts.index(nudge)
        first = outcome.texts[at - 1]
        assert LOOP.startswith(first[: len(first) // 2]) and len(first) < len(LOOP) // 2
    if scenario.config.max_steps == 4:
        reasons = [
            event.reason for event in run.policy.audit.events if event.check.value == "steps"
        ]
        assert reasons == [Reason.STEPS_RUNNING_OUT] * 3 + [Reason.FINAL_STEP, Reason.MAX_STEPS]


def test_a_refused_call_is_answered_with_the_refusal_and_not_run(tmp_path: Path) -> None:
    pytest.importorskip("agents")
    adder = Adder(tmp_path / "switch")
    scenario = SCENARIOS["recovery turn, the model recovers"]
    outcome = sdk(scenario, adder)
    outputs = [
        item["output"]
        for item in outcome.run.messages
        if item.get("type") == "function_call_output"
    ]
    assert outputs == ["3"] * 3 + [REFUSAL_MESSAGE.format(value=3)] and len(adder.ran) == 3
