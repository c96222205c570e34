"""The shared scenarios (tests/support/agent_scenarios.py) through the three agent-framework
adapters of the test environment, each driven by its framework's own offline test model (the
Agents SDK's ``ScriptedModel``, pydantic-ai's ``FunctionModel``, LangChain's
``GenericFakeChatModel``), ending in the same receipts and the same last answer in the history
the framework keeps. A failing tool raises the error its framework hands the model as the
call's result (LangChain's ``ToolException`` under ``handle_tool_error``, pydantic-ai's
``ToolFailed``, any exception under the SDK's default failure answer)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Union

import pytest

from loopbreak.agent.policy import REFUSAL_MESSAGE
from support.agent_scenarios import (
    PROMPT,
    SCENARIOS,
    Adder,
    Driver,
    Outcome,
    Scenario,
    check,
)


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


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
@pytest.mark.parametrize("framework", DRIVERS)
def test_every_framework_ends_each_scenario_in_the_same_receipt(
    framework: str, scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip({"openai_agents": "agents"}.get(framework, framework))
    check(DRIVERS[framework], scenario, tmp_path, monkeypatch)


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
