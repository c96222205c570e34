"""loopbreak.integrations.google_adk against Google ADK itself (tests/envs/google-adk.txt), run
offline on a scripted ``BaseLlm``: what the shared scenarios do not cover (ADK's own
``max_llm_calls``, a tool error that ends the run, the lockdown, the cut stream, the example)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.invocation_context import LlmCallsLimitExceededError
from google.adk.agents.run_config import RunConfig

from loopbreak.agent import PolicyConfig, ReceiptState
from loopbreak.integrations.google_adk import LoopbreakPlugin
from support.agent_scenarios import COUNTING, LOOP, PROMPT, SAME, Adder
from support.google_adk import Scripted, run_agent, session_texts

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "google_adk_agent.py"


def test_the_options_are_checked_like_every_adapter() -> None:
    with pytest.raises(TypeError, match="config"):
        LoopbreakPlugin({"max_steps": 3})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keep"):
        LoopbreakPlugin(keep=0)


def test_adk_max_llm_calls_is_recorded_as_a_limit(tmp_path: Path) -> None:
    adder = Adder(tmp_path / "switch")
    plugin = LoopbreakPlugin()
    agent = LlmAgent(name="adder", model=Scripted(script=COUNTING), tools=[adder.tool()])
    with pytest.raises(LlmCallsLimitExceededError):
        run_agent(agent, PROMPT, [plugin], run_config=RunConfig(max_llm_calls=3))
    run = plugin.last_run
    assert run is not None and run.receipt is not None
    assert (run.receipt.state, run.receipt.reason) == (ReceiptState.BOUNDED_STOP, "max_llm_calls")
    assert len(adder.ran) == 3 and run.messages  # the session's events are kept


def test_a_tool_error_that_ends_the_run_names_the_tool(tmp_path: Path) -> None:
    adder = Adder(tmp_path / "switch", error=RuntimeError)
    plugin = LoopbreakPlugin()
    agent = LlmAgent(name="adder", model=Scripted(script=[SAME, "3"]), tools=[adder.tool()])
    with pytest.raises(RuntimeError, match="the adder is down"):
        run_agent(agent, PROMPT, [plugin])
    run = plugin.last_run
    assert run is not None and run.receipt is not None
    assert (run.receipt.state, run.receipt.reason) == (ReceiptState.FAILED, "tool_failure")
    assert isinstance(run.error, RuntimeError)


def test_the_final_step_offers_no_tools_under_lockdown(tmp_path: Path) -> None:
    adder = Adder(tmp_path / "switch")
    model = Scripted(script=COUNTING)
    plugin = LoopbreakPlugin(PolicyConfig(max_steps=3, final_step_lockdown=True))
    agent = LlmAgent(name="adder", model=model, tools=[adder.tool()])
    run_agent(agent, PROMPT, [plugin])
    first, *_, final = model.requests
    assert first.config.tools and not final.config.tools
    assert "LAST step" in str(final.config.system_instruction)
    # The model called the tool anyway: not run, answered with the lockdown's message.
    assert len(adder.ran) == 2 and len(model.requests) == 3


def test_a_streamed_loop_closes_the_model_stream_and_keeps_only_the_trimmed_text(
    tmp_path: Path,
) -> None:
    model = Scripted(script=[LOOP])
    plugin = LoopbreakPlugin()
    agent = LlmAgent(name="adder", model=model, tools=[Adder(tmp_path / "switch").tool()])
    events = run_agent(agent, PROMPT, [plugin], streamed=True)
    run = plugin.last_run
    assert run is not None and run.degeneration is not None and run.receipt is not None
    assert run.receipt.reason == "degeneration"
    assert model.partials < len(LOOP) // 8 // 2  # stopped well before the end of the loop
    assert session_texts(run.messages) == [PROMPT, run.degeneration.persist_text]
    # The caller's last events: the trimmed answer, then ADK's seal of an aborted invocation.
    assert [event.error_code for event in events[-2:]] == [None, "INVOCATION_ABORTED"]


def test_the_example_ends_each_run_as_it_says(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("google_adk_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    assert example.main() == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:3] for line in lines] == [
        ["finishes", "VERIFIED_COMPLETE", "natural_finish"],
        ["claims-done", "FALSE_COMPLETE", "natural_finish"],
        ["repeats", "STUCK", "loop_detected"],
        ["explores", "BOUNDED_STOP", "max_steps"],
        ["degenerates", "STUCK", "degeneration"],
    ]


def test_the_callers_abort_signal_is_a_user_abort() -> None:
    import asyncio

    from google.adk.apps import App
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    plugin = LoopbreakPlugin()

    async def run() -> list[object]:
        abort = asyncio.Event()

        def add(a: int, b: int) -> str:
            """Adds two numbers; the caller aborts the run meanwhile."""
            abort.set()
            return str(a + b)

        agent = LlmAgent(name="adder", model=Scripted(script=[SAME, "3"]), tools=[add])
        runner = InMemoryRunner(app=App(name="abort", root_agent=agent, plugins=[plugin]))
        session = await runner.session_service.create_session(app_name="abort", user_id="u")
        ask = types.Content(role="user", parts=[types.Part.from_text(text=PROMPT)])
        return [
            event
            async for event in runner.run_async(
                user_id="u", session_id=session.id, new_message=ask, abort_signal=abort
            )
        ]

    asyncio.run(run())
    governed = plugin.last_run
    assert governed is not None and governed.receipt is not None
    assert governed.receipt.reason == "user_abort"


def test_a_tool_call_with_looping_arguments_never_runs(tmp_path: Path) -> None:
    adder = Adder(tmp_path / "switch")
    plugin = LoopbreakPlugin()
    script = [{"a": 1, "b": 2, "note": LOOP}, "3"]
    agent = LlmAgent(name="adder", model=Scripted(script=script), tools=[adder.tool()])
    run_agent(agent, PROMPT, [plugin])
    run = plugin.last_run
    assert run is not None and run.receipt is not None and run.degeneration is not None
    assert run.receipt.reason == "degeneration" and adder.ran == []
    assert run.degeneration.source == "tool_calls[0].arguments"
    assert run.degeneration.tool_name == "add"
    assert not any(event.get_function_calls() for event in run.messages)


def test_the_sync_runner_run_is_governed_the_same_way(tmp_path: Path) -> None:
    # runner.run() drives run_async() in a thread of its own, with its own event loop.
    from google.adk.apps import App
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    adder = Adder(tmp_path / "switch")
    plugin = LoopbreakPlugin()
    agent = LlmAgent(name="adder", model=Scripted(script=[SAME] * 5), tools=[adder.tool()])
    runner = InMemoryRunner(app=App(name="sync", root_agent=agent, plugins=[plugin]))
    session = runner.session_service.create_session_sync(app_name="sync", user_id="u")
    ask = types.Content(role="user", parts=[types.Part.from_text(text=PROMPT)])
    events = list(runner.run(user_id="u", session_id=session.id, new_message=ask))
    run = plugin.last_run
    assert run is not None and run.receipt is not None and run.stop is not None
    assert run.receipt.reason == "loop_detected" and len(adder.ran) == 3
    last = events[-1].content
    assert last is not None and last.parts and last.parts[0].text == run.stop.message
