"""loopbreak for CrewAI crews: ``LoopbreakHooks(config).kickoff(crew)`` is ``crew.kickoff()``
with one governed run (``AgentRun``: policy, answer guard, evidence) for that kickoff.

The run is governed through CrewAI's execution hooks (``crewai.hooks``), registered for that
kickoff alone (``scoped_hooks``: a context variable, copied into CrewAI's threads, so concurrent
kickoffs and the application's own global hooks stay apart):

- ``PRE_MODEL_CALL`` (the executor's, before each model call): one policy step. The step
  warnings and the final-step nudge go to the model as a user message at the end of the
  executor's messages (the previous step's note is removed, so one note is ever there). A stop
  decided only here (the run's first model call, or one the tool hooks below did not see end a
  step) raises ``HookAborted``: CrewAI lets it through without retrying, and
  ``kickoff`` raises it (its ``reason`` is the stop message).
- ``PRE_TOOL_CALL``: the call's arguments through the answer guard (CrewAI calls no
  ``POST_MODEL_CALL`` for tool calls), then the repeated-action and tool-call checks on them,
  before the tool runs. A call whose arguments loop, a stopped call (or, with
  ``PolicyConfig.recovery_step``, a refused repeat, or any call on a final step under lockdown)
  is blocked; ``POST_TOOL_CALL`` answers it with the decision's message (or the recovery step's
  nudge), which is what the model reads as the call's result.
- ``POST_TOOL_CALL``: each result is the step's progress, except a tool that raised (CrewAI
  hands the model "Error executing tool: ..." and counts the error on the task:
  ``task.tools_errors`` grew during the call), a failed result, no progress. When the last call
  of the step returned, the step ends and the next is planned; a stop there (a repeat, no
  progress, the step cap, a budget, the kill switch) finishes the agent's execution with the
  stop message as its final answer (the executor's ``state.current_answer`` and
  ``state.is_finished``, as CrewAI's own ``result_as_answer`` tools finish it): no further
  model call, and ``kickoff`` returns a ``CrewOutput`` whose ``raw`` is the stop message.
- ``POST_MODEL_CALL`` (text answers; CrewAI calls it for no tool-call answer): the whole
  answer through the stream guard's rules; a loop is replaced by its trimmed text, which is
  what the executor keeps in its messages and makes the task's output.
- A model call outside the executor's hooks (CrewAI's forced final answer at ``max_iter``, a
  task's output conversion, an LLM guardrail) is guarded the same way when the model class calls
  the LLM-layer hooks (CrewAI's own providers do); the forced final answer records CrewAI's
  ``max_iter`` as the limit that ended the run.

Every kickoff gets a receipt when it returns or raises (``last_run.receipt``, ``on_receipt``).
``Crew(stream=True)`` returns a ``LoopbreakStream``: iterate it for CrewAI's chunks, then read
``result``. CrewAI's chunks are a side channel of a call that returns the whole answer: a
stream is not cut at a loop; the whole answer is trimmed when the call returns, and the chunks
already read held the loop (docs/integrations/crewai.md).

Not covered: a text answer's recovery step (CrewAI makes a text answer the task's final answer
and no hook can ask the model again: a cut answer ends the run, as without a recovery step),
offering no tools on a locked-down final step (the tools a call offers are chosen before the
hook runs; any call on that step is blocked instead), ``Agent.kickoff()`` alone (no crew).
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("crewai", "crewai")

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Optional, Union

from crewai import Crew, CrewOutput
from crewai.agents.parser import AgentFinish
from crewai.hooks.dispatch import HookAborted, HookFn, InterceptionPoint, scoped_hooks
from crewai.hooks.llm_hooks import LLMCallHookContext
from crewai.hooks.tool_hooks import ToolCallHookContext
from crewai.tools.tool_failure import ToolExecutionFailedError
from crewai.types.streaming import CrewStreamingOutput, StreamChunk
from crewai.utilities.types import LLMMessage

from loopbreak._core import DEFAULT_KEEP, Rules
from loopbreak.agent.audit import AuditLog
from loopbreak.agent.policy import PolicyConfig, StepPlan
from loopbreak.integrations._governance import (
    LOCKDOWN_TOOL_ANSWER,
    AgentRun,
    AgentVerifier,
    FrameworkErrors,
    Governance,
    ReceiptCallback,
)
from loopbreak.streaming.guard import CONTENT, Piece

__all__ = ["HOOK_SOURCE", "LoopbreakHooks", "LoopbreakStream"]

HOOK_SOURCE = "loopbreak"
"""The ``source`` of the ``HookAborted`` a stop raises."""

ERRORS = FrameworkErrors(halts=(HookAborted,))
"""loopbreak's own stop, or another hook's ``HookAborted`` (no outcome to record). A tool's
error never raises: CrewAI hands it to the model as the call's result."""


class LoopbreakHooks:
    """Runs crews like ``crew.kickoff()``, each kickoff governed by its own ``AgentRun``
    (module docstring). The options are those of every loopbreak agent adapter
    (``Governance``); ``last_run`` is the most recent kickoff's run: ``messages`` is the
    conversation of the agent that answered last, ``state`` the crew."""

    def __init__(
        self,
        config: Optional[PolicyConfig] = None,
        *,
        verifier: Optional[AgentVerifier] = None,
        audit: Optional[AuditLog] = None,
        on_receipt: Optional[ReceiptCallback] = None,
        rules: Optional[Rules] = None,
        keep: int = DEFAULT_KEEP,
    ) -> None:
        self.governance = Governance(
            config, verifier=verifier, audit=audit, on_receipt=on_receipt, rules=rules, keep=keep
        )
        self.last_run: Optional[AgentRun] = None

    def kickoff(self, crew: Crew, **kwargs: Any) -> Union[CrewOutput, LoopbreakStream]:
        """``crew.kickoff(**kwargs)`` under a fresh policy. A streaming crew
        (``Crew(stream=True)``) gives a ``LoopbreakStream`` to iterate."""
        if not isinstance(crew, Crew):
            raise TypeError(f"crew must be a crewai.Crew, got {type(crew).__name__}")
        governed = self.governance.new_run(ERRORS)
        governed.state = crew
        self.last_run = governed
        run = _Run(governed)
        if crew.stream:
            return LoopbreakStream(run, crew, kwargs)
        with scoped_hooks(run.hooks()):
            try:
                output = crew.kickoff(**kwargs)
            except BaseException as error:
                run.ended_with(error)
                raise
        run.completed()
        assert isinstance(output, CrewOutput)  # what a crew that does not stream returns
        return output


class LoopbreakStream:
    """A streaming kickoff: iterate it for CrewAI's ``StreamChunk``s (the crew runs while
    they are read, governed), then read ``result``. The receipt is built when the chunks end,
    or when reading them raised or stopped early."""

    def __init__(self, run: _Run, crew: Crew, kwargs: dict[str, Any]) -> None:
        self._run = run
        self._hooks = run.hooks()
        output = crew.kickoff(**kwargs)
        assert isinstance(output, CrewStreamingOutput)  # what a streaming crew returns
        self.output = output

    def __iter__(self) -> Iterator[StreamChunk]:
        # CrewAI starts the crew's thread (copying this context) at the first chunk: the
        # kickoff's hooks must be in scope then.
        with scoped_hooks(self._hooks):
            try:
                yield from self.output
            except BaseException as error:  # GeneratorExit too: the reader stopped early
                self._run.ended_with(error)
                raise
        self._run.completed()

    @property
    def result(self) -> CrewOutput:
        """The crew's output, once every chunk was read."""
        result = self.output.result
        assert isinstance(result, CrewOutput)
        return result


@dataclass
class _Call:
    """One tool call between its two hooks: the answer it gets instead of running (None: it
    runs) and the task's tool-error count when it started."""

    answer: Optional[str]
    errors_before: Optional[int]


class _Run:
    """CrewAI's hooks for one kickoff, each translated to an ``AgentRun`` call."""

    def __init__(self, governed: AgentRun) -> None:
        self.governed = governed
        # Tool hooks of one answer may run in CrewAI's threads, several at once.
        self._lock = threading.Lock()
        self._executor: Any = None  # the agent executor that made the last model call
        self._planned: Optional[StepPlan] = None  # the step planned when the tools' step ended
        self._note: Optional[LLMMessage] = None  # the step's note in the executor's messages
        self._calls: dict[int, _Call] = {}  # by the id of the call's tool_input dict
        self._step_calls: Optional[int] = None  # tool calls the model asked for in this step
        self._calls_done = 0
        self._stop_answered = False  # a stop finished the agent with its message as the answer
        self._max_iter_recorded = False
        self._usage: dict[int, tuple[Any, Any]] = {}  # id(llm) -> (llm, its usage when seen)

    def hooks(self) -> dict[InterceptionPoint, list[HookFn]]:
        return {
            InterceptionPoint.PRE_MODEL_CALL: [self.before_model],
            InterceptionPoint.POST_MODEL_CALL: [self.after_model],
            InterceptionPoint.PRE_TOOL_CALL: [self.before_tool],
            InterceptionPoint.POST_TOOL_CALL: [self.after_tool],
        }

    # Model calls.

    def before_model(self, ctx: LLMCallHookContext) -> None:
        self._track(ctx.llm)
        if ctx.executor is None:
            self._outside_executor()
            return
        self._executor = ctx.executor
        # A model call begins a step: the tool calls counted are those of its answer (a call
        # whose arguments were no JSON never reached the tool hooks).
        self._step_calls, self._calls_done = None, 0
        plan, self._planned = self._planned, None
        if plan is None:
            self._sync_usage()
            plan = self.governed.begin_step()
        if plan.decision.stopped:
            raise HookAborted(self.governed.user_message(), source=HOOK_SOURCE)
        messages = ctx.messages
        for index, message in enumerate(messages):
            if message is self._note:  # the previous step's note (by identity: a user's
                del messages[index]  # message may have the same words)
                break
        self._note = LLMMessage(role="user", content=plan.addendum) if plan.addendum else None
        if self._note is not None:
            messages.append(self._note)

    def _outside_executor(self) -> None:
        """A model call CrewAI makes outside the executor's hooks. After ``max_iter``
        iterations it is the forced final answer: CrewAI's own cap ended the run."""
        executor = self._executor
        if executor is None or self._max_iter_recorded:
            return
        if executor.iterations >= executor.max_iter:
            self._max_iter_recorded = True
            self.governed.record_limit(
                "max_iter", value=executor.iterations, limit=executor.max_iter
            )

    def after_model(self, ctx: LLMCallHookContext) -> Optional[str]:
        self._sync_usage()
        if not isinstance(ctx.response, str):
            return None
        cut = self.governed.check_answer(ctx.response, _answer_pieces)
        # The executor keeps what this returns, in its messages and as the answer.
        return None if cut is None else cut.persist_text

    # Tool calls.

    def before_tool(self, ctx: ToolCallHookContext) -> Optional[bool]:
        governed = self.governed
        with self._lock:
            if self._step_calls is None:
                self._step_calls = _calls_asked(_executor_of(ctx))
            plan = governed.plan
            answer: Optional[str] = None
            # CrewAI calls no POST_MODEL_CALL for an answer of tool calls: their arguments are
            # checked here, before the call runs.
            if governed.check_answer(ctx, _argument_pieces) is not None:
                # A cut call never runs: the model reads the nudge of a recovery step, or the
                # stop message (the step then ends the run).
                answer = governed.take_nudge() or governed.user_message()
            elif plan is not None and not plan.tools_enabled and not plan.decision.stopped:
                answer = LOCKDOWN_TOOL_ANSWER
            else:
                decision = governed.check_tool(ctx.tool_name, ctx.tool_input)
                if decision.stopped or decision.refused:
                    answer = decision.message or ""
            errors = ctx.task.tools_errors if ctx.task is not None else None
            self._calls[id(ctx.tool_input)] = _Call(answer, errors)
        return False if answer is not None else None  # False blocks the call

    def after_tool(self, ctx: ToolCallHookContext) -> Optional[str]:
        with self._lock:
            call = self._calls.pop(id(ctx.tool_input), None)
            if call is None:
                return None  # not a call this run's before_tool saw
            if call.answer is None:
                task = ctx.task
                failed = (
                    task is not None
                    and call.errors_before is not None
                    and task.tools_errors > call.errors_before
                )
                self.governed.record_tool_result(ctx.tool_name, ctx.tool_result, failed=failed)
            self._calls_done += 1
            if self._step_calls is not None and self._calls_done >= self._step_calls:
                self._tools_step_ended(_executor_of(ctx))
        return call.answer  # what the model reads instead of the blocked call's result

    def _tools_step_ended(self, executor: Any) -> None:
        """Every tool call of the step returned: the step ends and the next is planned. A
        stop finishes the agent's execution with the stop message as its final answer."""
        self._step_calls, self._calls_done = None, 0
        self._sync_usage()
        plan = self.governed.begin_step()
        self._planned = plan
        # The default executor (AgentExecutor) keeps its answer in ``state``; another (the
        # deprecated CrewAgentExecutor) has none to set: its next model call raises the stop.
        state = getattr(executor, "state", None)
        if plan.decision.stopped and state is not None:
            message = self.governed.user_message()
            state.current_answer = AgentFinish(thought="", output=message, text=message)
            state.is_finished = True
            self._stop_answered = True

    # Usage and the end of the run.

    def _track(self, llm: Any) -> None:
        if hasattr(llm, "get_token_usage_summary") and id(llm) not in self._usage:
            self._usage[id(llm)] = (llm, llm.get_token_usage_summary())

    def _sync_usage(self) -> None:
        """Records what each model used since it was last read (CrewAI counts usage per LLM
        instance, for its lifetime): one model call per request it counted."""
        for key, (llm, seen) in list(self._usage.items()):
            now = llm.get_token_usage_summary()
            self._usage[key] = (llm, now)
            calls = now.successful_requests - seen.successful_requests
            prompt = now.prompt_tokens - seen.prompt_tokens
            completion = now.completion_tokens - seen.completion_tokens
            for call in range(calls):
                first = call == 0
                self.governed.record_usage(
                    str(llm.model), prompt if first else 0, completion if first else 0
                )

    def history(self) -> list[Any]:
        """The messages of the agent that answered last, ending with the stop message when a
        stop was the final answer (CrewAI's history ends with the last tool result then, as
        for a tool whose result is the answer)."""
        executor = self._executor
        messages = [] if executor is None else [dict(message) for message in executor.messages]
        if self._stop_answered:
            messages.append({"role": "assistant", "content": self.governed.user_message()})
        return messages

    def completed(self) -> None:
        self._sync_usage()
        self.governed.messages = self.history()
        self.governed.finished_naturally()
        self.governed.finish()

    def ended_with(self, error: BaseException) -> None:
        self._sync_usage()
        where = error.record.tool_name if isinstance(error, ToolExecutionFailedError) else None
        self.governed.messages = self.history()
        self.governed.failed(error, where=where)
        self.governed.finish()


def _executor_of(ctx: ToolCallHookContext) -> Any:
    """The executor of the agent whose tool call this is (None outside a crew's agent)."""
    return getattr(ctx.agent, "agent_executor", None)


def _calls_asked(executor: Any) -> int:
    """The tool calls of the model's last answer, which the executor put in its messages
    before running any (one for a text-parsed ReAct action, which has none there)."""
    for message in reversed(executor.messages if executor is not None else []):
        if message.get("role") == "assistant":
            return len(message.get("tool_calls") or ()) or 1
    return 1


def _answer_pieces(answer: str) -> Iterator[Piece]:
    yield Piece(CONTENT, answer)


def _argument_pieces(ctx: ToolCallHookContext) -> Iterator[Piece]:
    """A tool call's arguments as the model wrote them, give or take JSON whitespace (CrewAI
    hands the hook the parsed dict)."""
    arguments = json.dumps(ctx.tool_input, ensure_ascii=False, default=str)
    yield Piece(f"tool_calls[{ctx.tool_name}].arguments", arguments, ctx.tool_name)
