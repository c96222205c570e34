"""loopbreak.integrations.crewai against CrewAI itself: real crews on a scripted model of
CrewAI's custom-model base (``BaseLLM``, tests/support/crewai_model.py), offline."""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Callable, cast

import pytest
from crewai import Agent, Crew, CrewOutput, Task
from crewai.agents.crew_agent_executor import CrewAgentExecutor
from crewai.hooks.dispatch import HookAborted
from crewai.tools import tool
from crewai.tools.tool_failure import ToolExecutionFailedError

from loopbreak.agent import AuditLog, Budgets, PolicyConfig, Reason, Receipt, ReceiptState
from loopbreak.agent.kill_switch import KILL_SWITCH_ENV
from loopbreak.agent.policy import FINAL_STEP_NUDGE, LOCKDOWN_ENV, REFUSAL_MESSAGE
from loopbreak.integrations._governance import LOCKDOWN_TOOL_ANSWER, AgentRun
from loopbreak.integrations.crewai import HOOK_SOURCE, LoopbreakHooks, LoopbreakStream
from support.crewai_model import CHUNK, ScriptedLLM, Step, scripted
from support.recorded import RECORDED

LOOP = RECORDED["d10-greedy"].text  # a real greedy loop of SmolLM2-135M
SAME: Step = {"a": 1, "b": 2}
COUNTING: list[Step] = [{"a": n, "b": 1} for n in range(10)]


class Crewed:
    """One agent, one task and the tool ``add`` (which counts its runs), on a scripted model."""

    def __init__(
        self,
        script: list[Step],
        *,
        stream: bool = False,
        add: Callable[..., str] | None = None,
        **agent: Any,
    ) -> None:
        self.ran: list[tuple[int, int]] = []

        def add_numbers(a: int, b: int) -> str:
            """Adds two numbers."""
            self.ran.append((a, b))
            return str(a + b)

        self.llm: ScriptedLLM = scripted(script)
        self.agent = Agent(
            role="adder",
            goal="Add the numbers asked for.",
            backstory="A careful calculator.",
            llm=self.llm,
            tools=[tool("add")(add or add_numbers)],
            **agent,
        )
        self.task = Task(
            description="Add the numbers.", expected_output="The sum.", agent=self.agent
        )
        self.crew = Crew(agents=[self.agent], tasks=[self.task], stream=stream)

    def kickoff(self, hooks: LoopbreakHooks) -> CrewOutput:
        output = hooks.kickoff(self.crew)
        assert isinstance(output, CrewOutput)
        return output


def receipt_of(hooks: LoopbreakHooks) -> tuple[AgentRun, Receipt]:
    run = hooks.last_run
    assert run is not None and run.receipt is not None
    return run, run.receipt


def tool_results(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(m["content"]) for m in messages if m["role"] == "tool"]


def test_the_fourth_identical_call_is_stopped_before_it_runs_and_the_stop_is_the_answer() -> None:
    crew = Crewed([SAME] * 6 + ["3"])
    hooks = LoopbreakHooks()
    output = crew.kickoff(hooks)
    run, receipt = receipt_of(hooks)

    assert (receipt.state, receipt.reason) == (ReceiptState.STUCK, "loop_detected")
    assert crew.ran == [(1, 2)] * 3 and crew.llm.answered == 4  # no model call after the stop
    assert run.stop is not None and output.raw == run.stop.message
    # CrewAI's own history: the blocked call answered with the stop message, as the output.
    kept = crew.task.output
    assert kept is not None and tool_results(kept.messages) == ["3"] * 3 + [run.stop.message]
    assert run.messages[-1] == {"role": "assistant", "content": run.stop.message}


def test_max_steps_warns_counting_down_nudges_on_the_last_step_then_stops() -> None:
    crew = Crewed(COUNTING)
    hooks = LoopbreakHooks(PolicyConfig(max_steps=4, warning_steps=3))
    output = crew.kickoff(hooks)
    run, receipt = receipt_of(hooks)

    assert (receipt.state, receipt.reason) == (ReceiptState.BOUNDED_STOP, Reason.MAX_STEPS.value)
    assert len(crew.ran) == 4 and crew.llm.answered == 4
    assert run.stop is not None and output.raw == run.stop.message
    # Each call ends with that step's note, and only that one: the previous one is removed.
    notes = [[m["content"] for m in seen if m["role"] == "user"][1:] for seen in crew.llm.seen]
    assert [len(n) for n in notes] == [1, 1, 1, 1]
    assert [n[0].startswith("Only") for n in notes] == [True, True, True, False]
    assert FINAL_STEP_NUDGE in notes[3][0]
    assert [seen[-1]["content"] for seen in crew.llm.seen] == [n[0] for n in notes]


def test_lockdown_blocks_every_tool_call_on_the_final_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCKDOWN_ENV, "1")
    crew = Crewed(COUNTING)
    hooks = LoopbreakHooks(PolicyConfig(max_steps=3))
    crew.kickoff(hooks)
    run, receipt = receipt_of(hooks)

    assert receipt.reason == Reason.MAX_STEPS.value
    assert len(crew.ran) == 2  # the third step's call never ran
    assert tool_results(run.messages)[-1] == LOCKDOWN_TOOL_ANSWER


def test_a_looping_answer_is_trimmed_in_the_output_and_the_history() -> None:
    crew = Crewed([SAME, LOOP])
    hooks = LoopbreakHooks(verifier=lambda run: True)
    output = crew.kickoff(hooks)
    run, receipt = receipt_of(hooks)

    assert (receipt.state, receipt.reason) == (ReceiptState.STUCK, "degeneration")
    assert run.degeneration is not None
    trimmed = run.degeneration.persist_text
    assert output.raw == trimmed and len(trimmed) < len(LOOP) // 2
    kept = crew.task.output
    assert kept is not None and kept.messages[-1]["content"] == trimmed


def test_a_looping_tool_argument_is_cut_and_the_tool_never_runs() -> None:
    written: list[str] = []

    def note(text: str) -> str:
        """Keeps a note."""
        written.append(text)
        return "noted"

    crew = Crewed([{"text": LOOP}, "done"], add=note)
    hooks = LoopbreakHooks()
    output = crew.kickoff(hooks)
    run, receipt = receipt_of(hooks)

    assert (receipt.state, receipt.reason) == (ReceiptState.STUCK, "degeneration")
    assert written == [] and crew.llm.answered == 1
    assert run.stop is not None and output.raw == run.stop.message
    assert tool_results(run.messages) == [run.stop.message]


def test_a_looping_tool_argument_on_a_recovery_step_is_answered_with_the_nudge() -> None:
    written: list[str] = []

    def note(text: str) -> str:
        """Keeps a note."""
        written.append(text)
        return "noted"

    crew = Crewed([{"text": LOOP}, {"text": "Door locked."}, "done"], add=note)
    hooks = LoopbreakHooks(PolicyConfig(recovery_step=True), verifier=lambda run: True)
    output = crew.kickoff(hooks)
    run, receipt = receipt_of(hooks)

    assert receipt.state is ReceiptState.VERIFIED_COMPLETE and output.raw == "done"
    assert written == ["Door locked."]
    nudge = tool_results(run.messages)[0]
    assert nudge.startswith("Your last answer was cut")


def test_a_streamed_loop_reaches_the_reader_whole_and_only_the_answer_is_trimmed() -> None:
    """The documented gap: CrewAI's chunks are a side channel of a call that returns the whole
    answer, so the stream is not cut; the answer the crew keeps and returns is trimmed."""
    crew = Crewed([LOOP], stream=True)
    hooks = LoopbreakHooks()
    stream = hooks.kickoff(crew.crew)
    assert isinstance(stream, LoopbreakStream)
    read = "".join(chunk.content for chunk in stream)
    run, receipt = receipt_of(hooks)

    assert read == LOOP and len(LOOP) > CHUNK * 100
    assert receipt.reason == "degeneration" and run.degeneration is not None
    assert stream.result.raw == run.degeneration.persist_text


def test_a_text_answer_gets_no_recovery_step_the_cut_ends_the_run() -> None:
    """The documented gap: CrewAI makes a text answer the task's final answer, so the nudge of
    a recovery step cannot be sent; the cut answer ends the run."""
    crew = Crewed([LOOP, "3"])
    hooks = LoopbreakHooks(PolicyConfig(recovery_step=True))
    output = crew.kickoff(hooks)
    run, receipt = receipt_of(hooks)

    assert (receipt.state, receipt.reason) == (ReceiptState.STUCK, "degeneration")
    assert crew.llm.answered == 1
    assert run.degeneration is not None and output.raw == run.degeneration.persist_text


def test_a_refused_repeat_is_answered_with_the_refusal_and_the_run_goes_on() -> None:
    crew = Crewed([SAME] * 4 + ["3"])
    hooks = LoopbreakHooks(PolicyConfig(recovery_step=True), verifier=lambda run: True)
    output = crew.kickoff(hooks)
    run, receipt = receipt_of(hooks)

    assert receipt.state is ReceiptState.VERIFIED_COMPLETE and output.raw == "3"
    assert tool_results(run.messages) == ["3"] * 3 + [REFUSAL_MESSAGE.format(value=3)]
    assert len(crew.ran) == 3


def test_the_kill_switch_set_before_the_kickoff_stops_it_before_any_model_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    switch = tmp_path / "stop-every-run"
    switch.touch()
    monkeypatch.setenv(KILL_SWITCH_ENV, str(switch))
    crew = Crewed(["3"])
    hooks = LoopbreakHooks()
    with pytest.raises(HookAborted) as raised:
        hooks.kickoff(crew.crew)
    run, receipt = receipt_of(hooks)

    assert (receipt.state, receipt.reason) == (ReceiptState.BOUNDED_STOP, "kill_switch")
    assert crew.llm.answered == 0 and raised.value.source == HOOK_SOURCE
    assert run.stop is not None and raised.value.reason == run.stop.message


def test_crewais_max_iter_stays_in_charge_and_is_recorded_as_the_limit() -> None:
    crew = Crewed(COUNTING[:2] + ["Forced: 3"], max_iter=2)
    hooks = LoopbreakHooks(verifier=lambda run: True)
    output = crew.kickoff(hooks)
    run, receipt = receipt_of(hooks)

    assert output.raw == "Forced: 3" and len(crew.ran) == 2
    assert (receipt.state, receipt.reason) == (ReceiptState.BOUNDED_STOP, "max_iter")
    assert crew.llm.seen[-1][-1]["role"] == "user"  # CrewAI's own request for a final answer


def test_every_model_call_and_its_tokens_are_recorded_and_a_token_budget_stops_the_run() -> None:
    crew = Crewed(COUNTING)
    hooks = LoopbreakHooks(PolicyConfig(budgets=Budgets(max_output_tokens=40)))
    output = crew.kickoff(hooks)
    run, receipt = receipt_of(hooks)

    summary = crew.llm.get_token_usage_summary()
    usage = run.policy.usage()
    assert run.model_calls == crew.llm.answered == 3  # 16 characters of arguments each: 48 > 40
    assert (usage.input_tokens, usage.output_tokens) == (
        summary.prompt_tokens,
        summary.completion_tokens,
    )
    assert (receipt.state, receipt.reason) == (ReceiptState.BOUNDED_STOP, "max_output_tokens")
    assert run.stop is not None and output.raw == run.stop.message


def test_a_tool_error_is_no_progress_however_it_is_worded() -> None:
    failures = iter(range(100))

    def add(a: int, b: int) -> str:
        """Adds two numbers."""
        raise RuntimeError(f"the adder is down (attempt {next(failures)})")

    crew = Crewed(COUNTING, add=add)
    hooks = LoopbreakHooks(PolicyConfig(no_progress_window=3))
    crew.kickoff(hooks)
    run, receipt = receipt_of(hooks)

    assert (receipt.state, receipt.reason) == (ReceiptState.STUCK, "no_progress")
    assert all(r.startswith("Error executing tool") for r in tool_results(run.messages))


def test_calls_of_one_answer_run_in_parallel_and_the_step_ends_when_all_returned() -> None:
    both: Step = [{"a": 1, "b": 2}, {"a": 1, "b": 2}]  # CrewAI runs them in two threads
    crew = Crewed([both] * 3 + ["3"])
    hooks = LoopbreakHooks()
    output = crew.kickoff(hooks)
    run, receipt = receipt_of(hooks)

    assert (receipt.state, receipt.reason) == (ReceiptState.STUCK, "loop_detected")
    assert crew.ran == [(1, 2)] * 3 and crew.llm.answered == 2
    stop = run.user_message()
    assert stop and output.raw == stop
    assert sorted(tool_results(run.messages)) == sorted(["3"] * 3 + [stop])


def test_under_crewais_deprecated_executor_a_stop_raises_at_the_next_model_call() -> None:
    crew = Crewed([SAME] * 5 + ["3"], executor_class=CrewAgentExecutor)
    hooks = LoopbreakHooks()
    with pytest.raises(HookAborted) as raised:
        hooks.kickoff(crew.crew)
    run, receipt = receipt_of(hooks)

    assert (receipt.state, receipt.reason) == (ReceiptState.STUCK, "loop_detected")
    assert run.stop is not None and raised.value.reason == run.stop.message
    assert crew.ran == [(1, 2)] * 3 and crew.llm.answered == 4


def test_a_tool_failure_crewai_raises_ends_the_run_failed_naming_the_tool() -> None:
    def add(a: int, b: int) -> str:
        """Adds two numbers."""
        raise RuntimeError("the adder is down")

    crew = Crewed([SAME, "3"], add=add, tool_failure_policy="raise")
    hooks = LoopbreakHooks()
    with pytest.raises(ToolExecutionFailedError):
        hooks.kickoff(crew.crew)
    _, receipt = receipt_of(hooks)

    assert (receipt.state, receipt.reason) == (ReceiptState.FAILED, "tool_failure")
    assert "add" in json.dumps(receipt.to_dict())


def test_after_a_stop_the_next_task_of_the_crew_raises_at_its_first_model_call() -> None:
    crew = Crewed([SAME] * 4 + ["3"])
    crew.crew.tasks.append(
        Task(description="Check the sum.", expected_output="Yes or no.", agent=crew.agent)
    )
    hooks = LoopbreakHooks()
    with pytest.raises(HookAborted) as raised:
        hooks.kickoff(crew.crew)
    run, receipt = receipt_of(hooks)

    assert (receipt.state, receipt.reason) == (ReceiptState.STUCK, "loop_detected")
    assert run.stop is not None and raised.value.reason == run.stop.message
    first = crew.crew.tasks[0].output
    assert first is not None and first.raw == run.stop.message
    assert crew.llm.answered == 4  # nothing asked of the model after the stop


def test_every_kickoff_gets_a_fresh_policy_and_its_own_receipt() -> None:
    receipts: list[Receipt] = []
    audit = AuditLog()
    hooks = LoopbreakHooks(on_receipt=receipts.append, audit=audit)
    first = Crewed([SAME] * 5)
    first.kickoff(hooks)
    second = Crewed([SAME, "3"])
    second.kickoff(hooks)

    assert [r.reason for r in receipts] == ["loop_detected", "natural_finish"]
    assert second.ran == [(1, 2)]  # the first run's repeats do not count in the second
    assert len({event.run_id for event in audit.events}) == 2


def test_a_kickoff_that_raises_still_gets_a_receipt() -> None:
    crew = Crewed([SAME])  # the script ends: the model raises on its second call
    hooks = LoopbreakHooks()
    with pytest.raises(AssertionError, match="the script has 1 answers"):
        hooks.kickoff(crew.crew)
    run, receipt = receipt_of(hooks)

    assert receipt.state is ReceiptState.UNCERTAIN and isinstance(run.error, AssertionError)


def test_the_options_are_checked_and_kickoff_takes_a_crew() -> None:
    with pytest.raises(TypeError, match="config"):
        LoopbreakHooks(config={"max_steps": 3})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="crewai.Crew"):
        LoopbreakHooks().kickoff(cast(Any, object()))


def test_a_governed_kickoff_looks_up_no_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The offline settings of tests/support/crewai_model.py (documented for users): CrewAI
    resolves no host during a run (without them it looks up its telemetry host)."""
    looked_up: list[str] = []
    resolve = socket.getaddrinfo

    def recording(host: Any, *args: Any, **kwargs: Any) -> Any:
        looked_up.append(str(host))
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", recording)
    Crewed([SAME, "3"]).kickoff(LoopbreakHooks())
    assert looked_up == []


def test_the_example_ends_each_run_in_its_state(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = Path(__file__).resolve().parents[2] / "examples" / "crewai_crew.py"
    spec = importlib.util.spec_from_file_location("crewai_example", path)
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
