"""LangChain v1 agents governed by ``LoopbreakMiddleware``: real ``create_agent`` graphs driven
by langchain-core's own ``GenericFakeChatModel``, scripted answer by answer.

``GenericFakeChatModel`` ships without ``bind_tools`` (``create_agent`` binds the agent's tools
to its model), so ``ScriptedModel`` adds the one method, as LangChain's own agent tests do: the
tools are bound as invocation parameters, which the prompt recorder (a callback handler, the
documented way to see what a model was sent) reads back.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional
from uuid import UUID

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    ModelCallLimitMiddleware,
    ModelRetryMiddleware,
    ToolCallLimitMiddleware,
)
from langchain_core.callbacks import BaseCallbackHandler, CallbackManager, Callbacks
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, ToolException, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt

from loopbreak import scan
from loopbreak.agent.audit import AuditLog
from loopbreak.agent.budget import Budgets
from loopbreak.agent.decision import Decision, DecisionKind, Reason
from loopbreak.agent.policy import (
    FINAL_STEP_NUDGE,
    LOCKDOWN_INSTRUCTION,
    PolicyConfig,
)
from loopbreak.agent.receipt import EvidenceKind, Receipt, ReceiptState, save_receipt
from loopbreak.integrations._governance import AgentRun
from loopbreak.integrations.langchain import LoopbreakMiddleware
from loopbreak.store import Database

SYSTEM = "You are a careful ops agent."
LOOPING_LINE = "I will check the deployment logs once more to be sure. "
INTRO = "The deployment failed at the migration step.\n"


class ScriptedModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` (answers scripted in order) that accepts the agent's tools."""

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Optional[str] = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(
            tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs
        )


class Prompts(BaseCallbackHandler):
    """What each model call was sent: its system message and the names of the tools offered."""

    def __init__(self) -> None:
        self.system: list[str] = []
        self.tools: list[list[str]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        invocation_params: Optional[dict[str, Any]] = None,
        **kwargs: Any,
    ) -> None:
        sent = messages[0]
        self.system.append(str(sent[0].content) if sent and sent[0].type == "system" else "")
        offered = (invocation_params or {}).get("tools") or []
        self.tools.append([t["function"]["name"] for t in offered])


class Decisions:
    """An audit sink keeping every decision of every run, in the order written."""

    def __init__(self) -> None:
        self.events: list[Decision] = []

    def write(self, decision: Decision) -> None:
        self.events.append(decision)

    def close(self) -> None:
        pass


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


class Depths:
    """A ``measure`` tool that counts its runs and returns a new reading each time."""

    def __init__(self) -> None:
        self.runs = 0

    def tool(self) -> BaseTool:
        @tool
        def measure(depth: float, unit: str) -> str:
            """Measures the queue depth."""
            self.runs += 1
            return f"reading {self.runs}: {depth} {unit}"

        return measure


def agent_with(
    answers: Sequence[AIMessage | str],
    middleware: LoopbreakMiddleware,
    tools: Sequence[BaseTool] = (),
    *others: Any,
) -> Any:
    model = ScriptedModel(messages=iter(answers))
    return create_agent(
        model, tools=list(tools), system_prompt=SYSTEM, middleware=[middleware, *others]
    )


def governed(**kwargs: Any) -> tuple[LoopbreakMiddleware, list[Receipt], Decisions]:
    receipts: list[Receipt] = []
    decisions = Decisions()
    config = kwargs.pop("config", PolicyConfig())
    middleware = LoopbreakMiddleware(
        config, on_receipt=receipts.append, audit=AuditLog([decisions]), **kwargs
    )
    return middleware, receipts, decisions


def ask(agent: Any, prompts: Optional[Prompts] = None) -> dict[str, Any]:
    config = {"callbacks": [prompts]} if prompts is not None else {}
    result: dict[str, Any] = agent.invoke({"messages": [("user", "Check the queue.")]}, config)
    return result


def test_the_fourth_identical_tool_call_is_stopped_before_it_runs() -> None:
    depths = Depths()
    answers: list[AIMessage | str] = [
        call("measure", {"depth": 5, "unit": "m"}, "c1"),
        call("measure", {"unit": "m", "depth": 5.0}, "c2"),
        call("measure", {"depth": 5.0, "unit": "m"}, "c3"),
        call("measure", {"unit": "m", "depth": 5}, "c4"),
        "never reached",
    ]
    middleware, receipts, decisions = governed()
    result = ask(agent_with(answers, middleware, [depths.tool()]))

    assert depths.runs == 3
    *_, refused, final = result["messages"]
    assert isinstance(refused, ToolMessage) and refused.tool_call_id == "c4"
    assert refused.status == "error"
    assert isinstance(final, AIMessage) and not final.tool_calls
    stop = decisions.events[-1]
    assert stop.kind is DecisionKind.STOP and stop.reason is Reason.LOOP_DETECTED
    assert stop.action_key == 'measure({"depth":5,"unit":"m"})'
    assert final.content == stop.message
    [receipt] = receipts
    assert receipt.state is ReceiptState.STUCK and receipt.reason == "loop_detected"


def test_a_loop_is_stopped_the_same_way_in_an_async_run() -> None:
    depths = Depths()
    answers: list[AIMessage | str] = [
        call("measure", {"depth": 5, "unit": "m"}, f"c{i}") for i in range(5)
    ]
    middleware, receipts, _ = governed()
    agent = agent_with(answers, middleware, [depths.tool()])
    asyncio.run(agent.ainvoke({"messages": [("user", "Check the queue.")]}))
    assert depths.runs == 3
    assert [r.reason for r in receipts] == ["loop_detected"]


def stepping_answers(steps: int) -> list[AIMessage | str]:
    """A tool call with new arguments on every step (progress, no repeat), then an answer."""
    answers: list[AIMessage | str] = [
        call("measure", {"depth": step, "unit": "m"}, f"c{step}") for step in range(steps)
    ]
    return [*answers, "done"]


def test_max_steps_6_warns_counting_down_nudges_on_the_last_then_stops() -> None:
    depths = Depths()
    prompts = Prompts()
    middleware, receipts, decisions = governed(config=PolicyConfig(max_steps=6))
    result = ask(agent_with(stepping_answers(10), middleware, [depths.tool()]), prompts)

    assert len(prompts.system) == 6  # steps 0..5 called the model; step 6 was refused
    for step, n in zip(range(5), (5, 4, 3, 2, 1)):
        remain = "step remains" if n == 1 else "steps remain"
        assert prompts.system[step].startswith(SYSTEM + "\n\n")
        assert f"Only {n} tool-use {remain} in this run." in prompts.system[step]
    assert prompts.system[5] == f"{SYSTEM}\n\n{FINAL_STEP_NUDGE}"
    assert all(offered == ["measure"] for offered in prompts.tools)
    assert depths.runs == 6  # the last step's call still ran: the nudge keeps tools
    steps = [d for d in decisions.events if d.check.value == "steps"]
    assert [d.reason for d in steps] == [Reason.STEPS_RUNNING_OUT] * 5 + [
        Reason.FINAL_STEP,
        Reason.MAX_STEPS,
    ]
    assert result["messages"][-1].content == steps[-1].message
    [receipt] = receipts
    assert receipt.state is ReceiptState.BOUNDED_STOP and receipt.reason == "max_steps"


def test_steps_whose_tool_results_bring_nothing_new_stop_with_no_progress() -> None:
    @tool
    def search(query: str) -> str:
        """Searches the runbook."""
        return "no results"

    answers: list[AIMessage | str] = [
        call("search", {"query": f"timeout cause {n}"}, f"c{n}") for n in range(8)
    ]
    middleware, receipts, decisions = governed()
    result = ask(agent_with(answers, middleware, [search]))
    stop = decisions.events[-1]
    assert (stop.reason, stop.step, stop.value) == (Reason.NO_PROGRESS, 4, 4)
    assert result["messages"][-1].content == stop.message
    [receipt] = receipts
    assert receipt.state is ReceiptState.STUCK and receipt.reason == "no_progress"


def test_a_tool_that_keeps_failing_makes_no_progress_however_each_error_is_worded() -> None:
    failures: list[int] = []

    @tool
    def search(query: str) -> str:
        """Searches the runbook."""
        failures.append(len(failures))
        raise ToolException(f"backend timeout (request {len(failures)})")

    search.handle_tool_error = True  # LangChain answers the model with the error
    answers: list[AIMessage | str] = [
        call("search", {"query": f"timeout cause {n}"}, f"c{n}") for n in range(8)
    ]
    middleware, receipts, decisions = governed(config=PolicyConfig(no_progress_window=3))
    result = ask(agent_with(answers, middleware, [search]))
    errors = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in errors] == ["error"] * 3 and len(failures) == 3
    assert len({m.content for m in errors}) == 3  # three wordings, one failure
    stop = decisions.events[-1]
    assert (stop.reason, stop.step, stop.value) == (Reason.NO_PROGRESS, 2, 3)
    [receipt] = receipts
    assert receipt.state is ReceiptState.STUCK and receipt.reason == "no_progress"


def test_the_lockdown_offers_no_tools_on_the_last_step() -> None:
    depths = Depths()
    prompts = Prompts()
    answers = [*stepping_answers(5)[:5], "Summary: depths 0-4 m, queue stable."]
    config = PolicyConfig(max_steps=6, final_step_lockdown=True)
    middleware, receipts, _ = governed(config=config)
    result = ask(agent_with(answers, middleware, [depths.tool()]), prompts)

    assert prompts.tools[:5] == [["measure"]] * 5
    assert prompts.tools[5] == []
    assert prompts.system[5] == f"{SYSTEM}\n\n{LOCKDOWN_INSTRUCTION}"
    assert result["messages"][-1].content == "Summary: depths 0-4 m, queue stable."
    [receipt] = receipts
    # A finish nobody verified has no result receipt: FALSE_COMPLETE, however confident the text.
    assert receipt.state is ReceiptState.FALSE_COMPLETE and receipt.reason == "natural_finish"


def looping_answer(copies: int = 2000) -> str:
    return INTRO + LOOPING_LINE * copies


def test_a_streamed_answer_that_loops_is_cut_and_only_its_trimmed_text_is_kept() -> None:
    answer = looping_answer()
    middleware, receipts, _ = governed()
    agent = agent_with([answer], middleware)
    streamed: list[str] = []
    final: dict[str, Any] = {}
    for mode, data in agent.stream(
        {"messages": [("user", "Why did the deploy fail?")]}, stream_mode=["messages", "values"]
    ):
        if mode == "messages" and isinstance(data[0], AIMessageChunk):
            streamed.append(str(data[0].content))
        elif mode == "values":
            final = data

    [finding] = scan(answer)[:1]
    loop_start = finding.start
    seen = len("".join(streamed))
    assert loop_start <= seen < loop_start + 600  # cut within a few hundred chars of the loop
    assert seen < len(answer) // 50
    last = final["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls
    kept = str(last.content)
    assert kept.startswith(INTRO + LOOPING_LINE * 3)
    assert "[loopbreak: removed" in kept and len(kept) < 1000
    [receipt] = receipts
    assert receipt.state is ReceiptState.STUCK and receipt.reason == "degeneration"
    [evidence] = [e for e in receipt.evidence if e.kind is EvidenceKind.DEGENERATION]
    assert evidence.details["finding"]["source"] == "content"
    assert evidence.details["finding"]["units_removed"] > 0
    assert evidence.details["reason"].startswith("Output degeneration detected in content")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stream_cut_is_logged_once_by_loopbreak_and_never_as_a_callback_error(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    # langchain-core's callback manager logs every Exception a callback raises ("Error in
    # <handler>.<event> callback") before it re-raises it: the cut is not one.
    middleware, receipts, _ = governed()
    agent = agent_with([looping_answer()], middleware)
    question: Any = {"messages": [("user", "Why did the deploy fail?")]}
    caplog.set_level(logging.DEBUG)

    async def astream() -> None:
        async for _ in agent.astream(question, stream_mode="messages"):
            pass

    if mode == "sync":
        for _ in agent.stream(question, stream_mode="messages"):
            pass
    else:
        asyncio.run(astream())
    assert [r.reason for r in receipts] == ["degeneration"]
    assert not [r for r in caplog.records if "callback" in r.getMessage()]
    [line] = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert (line.name, line.levelno) == ("loopbreak.integrations.langchain", logging.WARNING)
    assert line.getMessage().startswith(
        "stopped the model's stream: Output degeneration detected in content: "
    )
    assert LOOPING_LINE.strip()[:40] in line.getMessage()  # says what repeated


def test_a_retry_middleware_inside_does_not_call_the_model_again_after_a_cut() -> None:
    middleware, receipts, _ = governed()
    prompts = Prompts()
    # After the cut the fake model would answer "fine" if it were called again.
    agent = agent_with(
        [looping_answer(), "fine"], middleware, (), ModelRetryMiddleware(max_retries=2)
    )
    for _ in agent.stream(
        {"messages": [("user", "Why did the deploy fail?")]},
        {"callbacks": [prompts]},
        stream_mode="messages",
    ):
        pass
    assert len(prompts.system) == 1  # one model call: the cut is no failure to retry
    assert [r.reason for r in receipts] == ["degeneration"]


@pytest.mark.filterwarnings("ignore:The v3 streaming protocol on Pregel is experimental")
def test_langgraphs_content_block_event_stream_is_cut_the_same_way() -> None:
    # stream_events(version="v3") routes the model through the v2 event protocol; the model's
    # _stream still reports each token to on_llm_new_token, as LangChain chat models do.
    middleware, receipts, _ = governed()
    agent = agent_with([looping_answer()], middleware)
    run = agent.stream_events({"messages": [("user", "Why did the deploy fail?")]}, version="v3")
    for _ in run:
        pass
    kept = str(run.output["messages"][-1].content)
    assert kept.startswith(INTRO + LOOPING_LINE * 3) and "[loopbreak: removed" in kept
    [receipt] = receipts
    [evidence] = [e for e in receipt.evidence if e.kind is EvidenceKind.DEGENERATION]
    assert evidence.details["finding"]["detected_at"] < 600  # cut in the stream, not after it


class Tokens(BaseCallbackHandler):
    def __init__(self) -> None:
        self.count = 0

    def on_llm_new_token(self, *args: Any, **kwargs: Any) -> None:
        self.count += 1


@pytest.mark.parametrize("as_manager", [False, True], ids=["list", "manager"])
def test_the_models_own_callbacks_keep_working_beside_the_watch(as_manager: bool) -> None:
    tokens = Tokens()
    callbacks: Callbacks = CallbackManager([tokens]) if as_manager else [tokens]
    model = ScriptedModel(messages=iter([looping_answer()]), callbacks=callbacks)
    middleware, receipts, _ = governed()
    agent = create_agent(model, middleware=[middleware])
    for _ in agent.stream(
        {"messages": [{"role": "user", "content": "why?"}]}, stream_mode="messages"
    ):
        pass
    # It saw the tokens up to the cut: a small part of the answer's.
    assert 0 < tokens.count < len(looping_answer().split()) // 10
    # The user's model is left as it was: the watch went on a copy for the call.
    own = model.callbacks
    assert (own.handlers if isinstance(own, CallbackManager) else own) == [tokens]
    assert [r.reason for r in receipts] == ["degeneration"]


def test_an_unstreamed_answer_that_loops_enters_the_state_trimmed() -> None:
    answer = looping_answer(300)
    middleware, receipts, _ = governed()
    result = ask(agent_with([answer], middleware))
    kept = str(result["messages"][-1].content)
    assert kept.startswith(INTRO + LOOPING_LINE * 3) and "[loopbreak: removed" in kept
    assert len(kept) < 1000
    assert [r.state for r in receipts] == [ReceiptState.STUCK]


def test_a_tool_call_with_looping_arguments_does_not_run() -> None:
    depths = Depths()
    looping = call("measure", {"depth": 1, "unit": "m, " * 400}, "c1")
    middleware, receipts, _ = governed()
    result = ask(agent_with([looping, "never reached"], middleware, [depths.tool()]))
    assert depths.runs == 0
    assert not result["messages"][-1].tool_calls
    [receipt] = receipts
    assert receipt.state is ReceiptState.STUCK
    [evidence] = [e for e in receipt.evidence if e.kind is EvidenceKind.DEGENERATION]
    assert evidence.details["finding"]["source"] == "tool_calls[0].arguments"
    assert evidence.details["finding"]["tool_name"] == "measure"


@pytest.mark.parametrize(
    ("verified", "state"),
    [(True, ReceiptState.VERIFIED_COMPLETE), (False, ReceiptState.FALSE_COMPLETE)],
)
def test_a_natural_finish_is_complete_only_if_the_verifier_says_so(
    verified: bool, state: ReceiptState
) -> None:
    depths = Depths()
    seen: list[int] = []

    def verifier(run: AgentRun) -> bool:
        seen.append(len(run.state["messages"]))
        assert run.messages == run.state["messages"]
        return verified

    answers: list[AIMessage | str] = [
        call("measure", {"depth": 3, "unit": "m"}, "c1"),
        "The queue is 3 m deep.",
    ]
    middleware, receipts, _ = governed(verifier=verifier)
    ask(agent_with(answers, middleware, [depths.tool()]))
    [receipt] = receipts
    assert receipt.state is state and receipt.verified is verified
    assert seen == [4]  # user, tool call, tool result, answer


def test_usage_is_recorded_from_usage_metadata_and_a_token_budget_stops_the_run() -> None:
    usage = UsageMetadata(input_tokens=700, output_tokens=400, total_tokens=1100)
    answers: list[AIMessage | str] = [
        AIMessage(
            content="",
            tool_calls=[
                {"name": "measure", "args": {"depth": step, "unit": "m"}, "id": f"c{step}"}
            ],
            usage_metadata=usage,
            response_metadata={"model_name": "scripted-1"},
        )
        for step in range(3)
    ]
    config = PolicyConfig(budgets=Budgets(max_total_tokens=2000))
    middleware, receipts, decisions = governed(config=config)
    ask(agent_with(answers, middleware, [Depths().tool()]))
    [receipt] = receipts
    assert receipt.usage is not None
    assert receipt.usage.to_dict()["input_tokens"] == 1400
    assert receipt.usage.to_dict()["output_tokens"] == 800
    assert decisions.events[-1].reason is Reason.MAX_TOTAL_TOKENS
    assert receipt.state is ReceiptState.BOUNDED_STOP


def test_a_tool_call_budget_stops_before_the_call_runs() -> None:
    depths = Depths()
    config = PolicyConfig(budgets=Budgets(max_tool_calls=2))
    middleware, receipts, decisions = governed(config=config)
    ask(agent_with(stepping_answers(5), middleware, [depths.tool()]))
    assert depths.runs == 2
    assert decisions.events[-1].reason is Reason.MAX_TOOL_CALLS
    assert decisions.events[-1].check.value == "tool_calls"
    assert [r.state for r in receipts] == [ReceiptState.BOUNDED_STOP]


def test_every_decision_is_audited_in_order_and_each_run_gets_a_fresh_policy() -> None:
    depths = Depths()
    middleware, receipts, decisions = governed()
    answers: list[AIMessage | str] = [
        call("measure", {"depth": 1, "unit": "m"}, "a1"),
        "First run done.",
        call("measure", {"depth": 2, "unit": "m"}, "b1"),
        call("measure", {"depth": 2, "unit": "m"}, "b2"),
        "Second run done.",
    ]
    agent = agent_with(answers, middleware, [depths.tool()])
    ask(agent)
    ask(agent)

    first, second = (r.run_id for r in receipts)
    assert first != second
    for run_id, expected in (
        (first, [("steps", 0), ("repeated_action", 0), ("progress", 0), ("steps", 1)]),
        (
            second,
            [
                ("steps", 0),
                ("repeated_action", 0),
                ("progress", 0),
                ("steps", 1),
                ("repeated_action", 1),
                ("progress", 1),
                ("steps", 2),
            ],
        ),
    ):
        events = [d for d in decisions.events if d.run_id == run_id]
        assert [d.seq for d in events] == list(range(len(events)))
        assert [(d.check.value, d.step) for d in events] == expected
    # The second run's repeat count starts from zero: it saw one earlier copy, its own.
    repeat = [d for d in decisions.events if d.run_id == second and d.step == 1][1]
    assert repeat.value == 1


def test_the_run_record_stays_out_of_the_result() -> None:
    middleware, receipts, _ = governed()
    agent = agent_with(["First.", "Second."], middleware)
    assert set(ask(agent)) == {"messages"}
    values = [
        data
        for data in agent.stream(
            {"messages": [{"role": "user", "content": "again"}]}, stream_mode="values"
        )
        if "loopbreak_run" in data
    ]
    assert repr(values[-1]["loopbreak_run"]) == f"<loopbreak run {receipts[-1].run_id} step 0>"


def test_concurrent_runs_of_one_agent_do_not_share_a_policy() -> None:
    depths = Depths()
    middleware, receipts, _ = governed()

    def one_agent() -> Any:
        answers = [call("measure", {"depth": 1, "unit": "m"}, f"c{i}") for i in range(2)]
        return agent_with([*answers, "done"], middleware, [depths.tool()])

    async def both() -> None:
        await asyncio.gather(
            *(agent.ainvoke({"messages": [("user", "go")]}) for agent in (one_agent(), one_agent()))
        )

    asyncio.run(both())
    # Each run made 2 identical calls (under the limit of 3 copies): pooled, the 4 would stop.
    assert depths.runs == 4
    assert sorted(r.state for r in receipts) == [ReceiptState.FALSE_COMPLETE] * 2


def test_a_failing_tool_ends_the_run_with_a_failed_receipt() -> None:
    @tool
    def deploy(target: str) -> str:
        """Deploys."""
        raise RuntimeError("permission denied")

    middleware, receipts, _ = governed()
    agent = agent_with([call("deploy", {"target": "prod"}, "c1")], middleware, [deploy])
    with pytest.raises(RuntimeError, match="permission denied"):
        ask(agent)
    [receipt] = receipts
    assert receipt.state is ReceiptState.FAILED and receipt.reason == "tool_failure"
    assert receipt.evidence[-1].details["tool"] == "deploy"


def test_a_cancelled_run_gets_a_receipt() -> None:
    started = asyncio.Event()

    @tool
    async def wait_for_approval(ticket: str) -> str:
        """Waits."""
        started.set()
        await asyncio.sleep(60)
        return "approved"

    middleware, receipts, _ = governed()
    agent = agent_with(
        [call("wait_for_approval", {"ticket": "T-1"}, "c1")], middleware, [wait_for_approval]
    )

    async def cancel_midway() -> None:
        task = asyncio.ensure_future(agent.ainvoke({"messages": [("user", "go")]}))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())
    [receipt] = receipts
    assert receipt.evidence[-1].kind is EvidenceKind.USER_ABORT


def test_an_interrupt_waits_and_the_resumed_run_gets_a_policy_of_its_own() -> None:
    @tool
    def restart(service: str) -> str:
        """Restarts a service, once a person approves."""
        answer = interrupt({"approve": f"restart {service}?"})
        return f"restarted {service}" if answer == "yes" else "not restarted"

    middleware, receipts, decisions = governed()
    model = ScriptedModel(messages=iter([call("restart", {"service": "db"}, "c1"), "Restarted."]))
    agent = create_agent(
        model, tools=[restart], middleware=[middleware], checkpointer=InMemorySaver()
    )
    thread: RunnableConfig = {"configurable": {"thread_id": "t1"}}
    paused = agent.invoke({"messages": [{"role": "user", "content": "Restart the db."}]}, thread)
    assert paused["__interrupt__"]
    [waiting] = receipts
    assert waiting.state is ReceiptState.WAITING_UNROUTED
    assert waiting.evidence[-1].details["missing"] == ["owner", "deadline", "resume_token"]

    approve: Command[Any] = Command(resume="yes")
    done = agent.invoke(approve, thread)
    assert done["messages"][-1].content == "Restarted."
    _, resumed = receipts
    assert resumed.run_id != waiting.run_id  # the policy is not checkpointed: a new one
    assert resumed.reason == "natural_finish"
    assert [d.step for d in decisions.events if d.run_id == resumed.run_id] == [0]


def test_the_frameworks_call_limits_are_recorded_as_limits() -> None:
    answers = [call("measure", {"depth": step, "unit": "m"}, f"c{step}") for step in range(5)]
    middleware, receipts, _ = governed()
    limit = ModelCallLimitMiddleware(run_limit=2, exit_behavior="end")
    ask(agent_with(answers, middleware, [Depths().tool()], limit))
    [receipt] = receipts
    assert receipt.state is ReceiptState.BOUNDED_STOP and receipt.reason == "model_call_limit"
    assert receipt.evidence[-1].details == {"value": 2, "limit": 2}

    depths = Depths()
    middleware, receipts, _ = governed()
    tool_limit = ToolCallLimitMiddleware(run_limit=1, exit_behavior="end")
    ask(agent_with(answers, middleware, [depths.tool()], tool_limit))
    [receipt] = receipts
    assert depths.runs == 1
    assert receipt.state is ReceiptState.BOUNDED_STOP and receipt.reason == "tool_call_limit"


def test_receipts_save_to_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    db = Database(path)
    middleware = LoopbreakMiddleware(on_receipt=lambda r: save_receipt(db, r))
    answers = [call("measure", {"depth": 5, "unit": "m"}, f"c{i}") for i in range(5)]
    ask(agent_with(answers, middleware, [Depths().tool()]))
    db.close()
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT state, reason FROM receipts").fetchall()
    assert rows == [("STUCK", "loop_detected")]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"config": "strict"}, TypeError),
        ({"verifier": 3}, TypeError),
        ({"keep": 0}, ValueError),
        ({"keep": True}, TypeError),
        ({"rules": {}}, TypeError),
    ],
)
def test_bad_arguments_are_refused(arguments: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        LoopbreakMiddleware(**arguments)
