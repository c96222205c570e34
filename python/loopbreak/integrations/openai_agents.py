"""loopbreak for the OpenAI Agents SDK: ``Runner.run`` with one governed policy per run.

``LoopbreakRunner(config).run(agent, input)`` is ``Runner.run(agent, input)`` with a fresh
``RunPolicy``, stream guard and ``RunEvidence`` for that run, wired to the SDK's own hook points:

- ``max_turns`` is the policy's ``max_steps`` (one step cap, the SDK's), and the max-turns error
  handler ends a run that reaches it with a final answer saying so: the policy's ``max_steps``
  stop, no exception.
- ``RunConfig.call_model_input_filter`` runs before every model call: it ends the previous step
  with the tool results seen since (progress) and starts the next one, appending the step
  warnings and the final-step nudge to the instructions of that call. A stop there (no
  progress, a budget) raises ``RunStopped``.
- A tool input guardrail on each of the agent's function tools checks repeated actions and the
  tool-call budget before the tool runs; a stop trips it (``raise_exception``), so the SDK
  halts with ``ToolInputGuardrailTripwireTriggered``. Under lockdown, ``is_enabled`` offers no
  function tools on the final step. The tools are those of a per-run copy of the agent; the
  agent passed in is not changed.
- ``RunHooks``: ``on_llm_end`` records each call's token usage, ``on_tool_end`` each result
  as progress.
- ``run_streamed(...).stream_events()`` guards the streamed answer and each tool call's
  arguments: on a loop it stops, cancels the run (``RunResultStreaming.cancel()``) so the
  model stops, and the trimmed answer is appended to the history the run leaves
  (``GovernedRun.messages``, the input list a next run continues from); a cut tool call is
  never run.

Both SDK exceptions carry the run's items in ``run_data``. Every run gets a receipt, however it
ended (``last_run.receipt``, ``on_receipt``).

Not covered: the tools of agents reached by a handoff and hosted tools (no input guardrails in
the SDK), and a ``Session``, which keeps what the SDK saved (the cut answer is not in it).
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("openai-agents", "agents")

import asyncio
import inspect
from collections.abc import AsyncGenerator, Iterator
from dataclasses import replace
from typing import Any, Optional, Union

from agents import (
    Agent,
    AgentsException,
    FunctionTool,
    ItemHelpers,
    RawResponsesStreamEvent,
    RunConfig,
    RunHooks,
    Runner,
    RunResult,
    RunResultStreaming,
    StreamEvent,
    Tool,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailTripwireTriggered,
)
from agents.agent import AgentBase
from agents.items import ModelResponse, TResponseInputItem
from agents.run_config import CallModelData, ModelInputData
from agents.run_context import RunContextWrapper
from agents.run_error_handlers import RunErrorHandlerInput, RunErrorHandlerResult
from agents.tool_guardrails import ToolInputGuardrailData
from openai.types.responses import (
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseTextDeltaEvent,
)

from loopbreak._core import DEFAULT_KEEP, Rules, trim
from loopbreak.agent.audit import AuditLog
from loopbreak.agent.decision import Decision
from loopbreak.agent.policy import PolicyConfig
from loopbreak.agent.receipt import Verifier
from loopbreak.errors import LoopbreakError
from loopbreak.integrations._governance import GovernedRun, ReceiptCallback
from loopbreak.streaming.guard import CONTENT, AsyncGuarded, Piece

__all__ = ["LoopbreakRunner", "LoopbreakStream", "RunStopped"]

GUARDRAIL_NAME = "loopbreak"
TIMEOUTS = (TimeoutError, asyncio.TimeoutError)


class RunStopped(LoopbreakError, AgentsException):
    """The run policy stopped the run before a model call (no progress, a spent budget). An
    ``AgentsException``, so the SDK attaches the run's items as ``run_data``."""

    def __init__(self, decision: Decision, message: str) -> None:
        super().__init__(message)
        self.decision = decision


class LoopbreakRunner:
    """Runs agents like ``Runner``, each run governed by its own policy (module docstring).

    ``config`` holds the policy's limits; ``verifier`` checks the destination for the receipt
    of a finished run; ``audit`` receives every run's decisions (default: one in-memory log per
    run); ``on_receipt`` is called with each receipt; ``rules`` tunes the stream guard.
    ``last_run`` is the most recent run's ``GovernedRun``.
    """

    def __init__(
        self,
        config: Optional[PolicyConfig] = None,
        *,
        verifier: Optional[Verifier] = None,
        audit: Optional[AuditLog] = None,
        on_receipt: Optional[ReceiptCallback] = None,
        rules: Optional[Rules] = None,
    ) -> None:
        if config is not None and not isinstance(config, PolicyConfig):
            raise TypeError(f"config must be a PolicyConfig, got {type(config).__name__}")
        if verifier is not None and not callable(verifier):
            raise TypeError(f"verifier must be callable, got {type(verifier).__name__}")
        self._config = config
        self._verifier = verifier
        self._audit = audit
        self._on_receipt = on_receipt
        self._rules = rules
        self.last_run: Optional[GovernedRun] = None

    def _start(self, agent: Agent[Any], kwargs: dict[str, Any]) -> _Run:
        for name in ("max_turns", "hooks"):
            if name in kwargs:
                raise TypeError(
                    f"{name} is set by LoopbreakRunner (max_turns is PolicyConfig.max_steps)"
                )
        governed = GovernedRun(
            self._config, verifier=self._verifier, audit=self._audit, on_receipt=self._on_receipt
        )
        self.last_run = governed
        return _Run(governed, agent, kwargs, self._rules)

    async def run(
        self, agent: Agent[Any], input: Union[str, list[TResponseInputItem]], **kwargs: Any
    ) -> RunResult:
        """``Runner.run(agent, input, **kwargs)`` under a fresh policy; ``max_turns`` and
        ``hooks`` are the runner's own."""
        run = self._start(agent, kwargs)
        try:
            result = await Runner.run(run.agent, input, **run.runner_kwargs())
        except BaseException as error:
            run.ended_with(error)
            raise
        run.governed.messages = result.to_input_list()
        if not run.governed.ended_by_loopbreak:
            run.governed.evidence.record_natural_finish()
        run.governed.finish()
        return result

    def run_streamed(
        self, agent: Agent[Any], input: Union[str, list[TResponseInputItem]], **kwargs: Any
    ) -> LoopbreakStream:
        """``Runner.run_streamed`` under a fresh policy; iterate ``stream_events()`` to the
        end (the receipt is built there)."""
        run = self._start(agent, kwargs)
        return LoopbreakStream(run, Runner.run_streamed(run.agent, input, **run.runner_kwargs()))


class LoopbreakStream:
    """A streamed run: ``stream_events()`` yields the SDK's events and cuts a looping answer.
    ``result`` is the SDK's ``RunResultStreaming``."""

    def __init__(self, run: _Run, result: RunResultStreaming) -> None:
        self._run = run
        self.result = result

    async def stream_events(self) -> AsyncGenerator[StreamEvent, None]:
        """The SDK's events, unchanged, up to the first delta in which the answer loops;
        there the run is cancelled and the stream ends. Close it (``aclose()``) when you stop
        reading early: that cancels the run too."""
        governed = self._run.governed
        offsets = _AnswerOffsets()
        guarded = AsyncGuarded(
            _RunEvents(self.result), offsets.pieces, on_degeneration="stop", rules=self._run.rules
        )
        try:
            async for event in guarded:
                yield event
        except BaseException as error:  # GeneratorExit too: the consumer stopped reading
            self._run.ended_with(error)
            raise
        finally:
            await guarded.aclose()  # cancels the run unless it completed
        degeneration = guarded.degeneration
        messages = self.result.to_input_list()
        if degeneration is not None:
            # The SDK keeps nothing of an answer cancelled mid-stream: add the trimmed one.
            governed.record_degeneration(degeneration)
            answer = trim(guarded.text[offsets.answer_start :], DEFAULT_KEEP, self._run.rules)
            if answer.text:  # empty when the loop was in a tool call's arguments
                messages.append({"role": "assistant", "content": answer.text})
        elif not governed.ended_by_loopbreak:
            governed.evidence.record_natural_finish()
        governed.messages = messages
        governed.finish()


class _RunEvents:
    """A streamed run's events as the stream guard reads them. Closing them cancels the run
    first, so the model stops: closing ``stream_events()`` alone waits for the run to end."""

    def __init__(self, result: RunResultStreaming) -> None:
        self._result = result
        self._events = result.stream_events()

    def __aiter__(self) -> _RunEvents:
        return self

    async def __anext__(self) -> StreamEvent:
        return await self._events.__anext__()

    async def aclose(self) -> None:
        if not self._result.is_complete:
            self._result.cancel()
        close = getattr(self._events, "aclose", None)  # an async generator in the SDK
        if close is not None:
            await close()


class _AnswerOffsets:
    """Stream-guard pieces of the SDK's events: the answer text of every model call is one
    source (and where the current call's answer starts in it), each tool call's arguments
    another."""

    def __init__(self) -> None:
        self.answer_start = 0
        self._length = 0

    def pieces(self, event: StreamEvent) -> Iterator[Piece]:
        if not isinstance(event, RawResponsesStreamEvent):
            return
        data = event.data
        if isinstance(data, ResponseCreatedEvent):
            self.answer_start = self._length
        elif isinstance(data, ResponseTextDeltaEvent):
            self._length += len(data.delta)
            yield Piece(CONTENT, data.delta)
        elif isinstance(data, ResponseFunctionCallArgumentsDeltaEvent):
            yield Piece(f"output[{data.output_index}].arguments", data.delta)


class _Run:
    """The SDK hook points of one run, each translated to a ``GovernedRun`` call."""

    def __init__(
        self,
        governed: GovernedRun,
        agent: Agent[Any],
        kwargs: dict[str, Any],
        rules: Optional[Rules],
    ) -> None:
        self.governed = governed
        self.rules = rules
        self._kwargs = kwargs
        self._tool_in_flight: Optional[str] = None
        self._calls_checked = 0  # tool calls of the current step that reached the guardrail
        self._guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(
            guardrail_function=self._check_tool, name=GUARDRAIL_NAME
        )
        self.agent = agent.clone(tools=[self._governed_tool(tool) for tool in agent.tools])

    def runner_kwargs(self) -> dict[str, Any]:
        kwargs = dict(self._kwargs)
        run_config = kwargs.pop("run_config", None) or RunConfig()
        if run_config.call_model_input_filter is not None:
            raise TypeError("run_config.call_model_input_filter is set by LoopbreakRunner")
        error_handlers = dict(kwargs.pop("error_handlers", None) or {})
        if "max_turns" in error_handlers:
            raise TypeError("the max_turns error handler is set by LoopbreakRunner")
        error_handlers["max_turns"] = self._on_max_turns
        return {
            **kwargs,
            "run_config": replace(run_config, call_model_input_filter=self._filter),
            "error_handlers": error_handlers,
            "hooks": _Hooks(self),
            "max_turns": self.governed.policy.config.max_steps,
        }

    def _governed_tool(self, tool: Tool) -> Tool:
        if not isinstance(tool, FunctionTool):
            return tool
        enabled = tool.is_enabled

        async def is_enabled(context: RunContextWrapper[Any], agent: AgentBase) -> bool:
            if not self._offers_tools():
                return False
            if not callable(enabled):
                return enabled
            answer = enabled(context, agent)
            return await answer if inspect.isawaitable(answer) else answer

        guardrails = [*(tool.tool_input_guardrails or []), self._guardrail]
        return replace(tool, tool_input_guardrails=guardrails, is_enabled=is_enabled)

    def _offers_tools(self) -> bool:
        """Whether a function tool is enabled now. The SDK asks twice per turn: when it offers
        the tools of the next model call, before the input filter plans that step (so the
        answer is the policy's for the next step), and when it runs the current step's calls,
        before any of them reached the guardrail (they were offered: yes). A call to a tool
        the step did not offer never gets that far: the SDK finds no such tool."""
        if self.governed.plan is not None and not self._calls_checked:
            return True
        return self.governed.next_step_offers_tools()

    def _check_tool(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        self._calls_checked += 1
        decision = self.governed.check_tool(data.context.tool_name, data.context.tool_arguments)
        if decision.stopped:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=decision.to_dict())
        return ToolGuardrailFunctionOutput.allow(output_info=decision.to_dict())

    def _filter(self, data: CallModelData[Any]) -> ModelInputData:
        self._calls_checked = 0
        plan = self.governed.begin_step(data.model_data.instructions or "")
        if plan.decision.stopped:
            raise RunStopped(plan.decision, self.governed.user_message())
        return ModelInputData(input=data.model_data.input, instructions=plan.system_prompt)

    def _on_max_turns(self, data: RunErrorHandlerInput[Any]) -> RunErrorHandlerResult:
        # The SDK's turn cap is the policy's step cap: the policy records the stop it makes.
        self.governed.begin_step()
        return RunErrorHandlerResult(final_output=self.governed.user_message())

    def record_usage(self, agent: Agent[Any], response: ModelResponse) -> None:
        usage = response.usage
        self.governed.record_usage(_model_name(agent), usage.input_tokens, usage.output_tokens)

    def tool_started(self, tool: Tool) -> None:
        self._tool_in_flight = tool.name

    def tool_ended(self, tool: Tool, result: object) -> None:
        self._tool_in_flight = None
        self.governed.record_progress(f"{tool.name}: {result}")

    def ended_with(self, error: BaseException) -> None:
        """Records how an exception ended the run, keeps its items, builds the receipt."""
        governed = self.governed
        governed.error = error
        evidence = governed.evidence
        if isinstance(error, (RunStopped, ToolInputGuardrailTripwireTriggered)):
            pass  # the policy's own stop is the evidence (another guardrail's trip: no outcome)
        elif isinstance(error, TIMEOUTS) or isinstance(error.__cause__, TIMEOUTS):
            # The SDK raises a tool's error as a UserError caused by it.
            evidence.record_timeout(error)
        elif isinstance(error, (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit)):
            evidence.record_user_abort(type(error).__name__)
        elif self._tool_in_flight is not None:
            evidence.record_tool_failure(self._tool_in_flight, error)
        run_data = error.run_data if isinstance(error, AgentsException) else None
        if run_data is not None:
            governed.messages = ItemHelpers.input_to_new_input_list(run_data.input) + [
                item.to_input_item() for item in run_data.new_items
            ]
        governed.finish()


class _Hooks(RunHooks[Any]):
    def __init__(self, run: _Run) -> None:
        self._run = run

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        self._run.record_usage(agent, response)

    async def on_tool_start(
        self, context: RunContextWrapper[Any], agent: AgentBase, tool: Tool
    ) -> None:
        self._run.tool_started(tool)

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: AgentBase, tool: Tool, result: object
    ) -> None:
        self._run.tool_ended(tool, result)


def _model_name(agent: Agent[Any]) -> str:
    """The model's name as budgets' prices know it: the agent's model string, or the
    ``model`` attribute of a model object (the SDK's OpenAI models have one)."""
    model = agent.model
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__
