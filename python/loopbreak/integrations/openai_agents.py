"""loopbreak for the OpenAI Agents SDK: ``Runner.run`` with one governed policy per run.

``LoopbreakRunner(config).run(agent, input)`` is ``Runner.run(agent, input)`` with a fresh
``AgentRun`` (policy, answer guard, evidence) for that run, wired to the SDK's own hook points:

- ``max_turns`` is the policy's ``max_steps`` (one step cap, the SDK's).
- A tool input guardrail on each of the agent's function tools checks repeated actions and the
  tool-call budget before the tool runs. A stop (or, with ``PolicyConfig.recovery_step``, the
  first refused repeat) rejects the call (``reject_content``): the tool does not run and the
  model gets the message as its result. Under lockdown, ``is_enabled`` offers no function
  tools on the final step. The tools are those of a per-run copy of the agent; the agent
  passed in is not changed.
- The copy's ``tool_use_behavior``, called once the step's tools ran, ends the step with its
  results as progress and plans the next: a stop there (the repeat stop above, no progress,
  a budget, the step cap) ends the run with the stop message as its final output.
- ``RunConfig.call_model_input_filter`` runs before every model call: it appends the step
  warnings and the final-step nudge to the instructions of that call. A stop decided only there
  (the kill switch or a budget before a step that followed no tool call) raises
  ``AgentRunStopped``; the max-turns error handler answers a run that reaches the SDK's cap
  without a tool call the same way as a stop, with the final output.
- The model, as a ``Model`` of one's own (the SDK's documented extension point): the run's
  model provider, and a model object set on the agent or the run config, are wrapped so that
  each whole (unstreamed) answer, its reasoning and its tool-call arguments are checked before
  the SDK reads the response: a loop is replaced by its trimmed text (the run ends with it as
  the final output, and no cut tool call runs).
- On a recovery step for an answer (``PolicyConfig.recovery_step``), the cut answer ends that
  SDK run and the runner starts the next the SDK's way: ``Runner.run`` again with the history
  (``to_input_list()``) plus the nudge as a user message, under the same ``AgentRun``, with
  the steps left as ``max_turns``; with a ``Session``, which puts the history before the input
  itself, only the nudge (and a cut streamed answer, which the SDK did not keep); with a
  conversation the server holds (``conversation_id``, ``previous_response_id`` or
  ``auto_previous_response_id``) and a run that was not streamed, only the nudge, in that
  conversation or after the last response. The result returned (``LoopbreakStream.result``)
  is the last SDK run's, whose ``to_input_list()`` holds the whole history (in a conversation
  the server holds, that run's items only; ``last_run.messages`` holds the whole either way).
- ``RunHooks``: ``on_llm_end`` records each call's token usage, ``on_tool_end`` each result as
  progress, except the SDK's answer for a tool that raised, a failed result (no progress). That
  answer is told by its call id, marked where the SDK makes it: the run's
  ``RunConfig.tool_error_formatter`` (the SDK's default answer; a formatter of one's own is
  still called) and, for a tool given a ``failure_error_function`` of its own, that function on
  the run's copy of the tool.
- ``run_streamed(...).stream_events()`` guards the streamed answer, reasoning and each tool
  call's arguments: on a loop it stops, cancels the run (``RunResultStreaming.cancel()``) so
  the model stops, and the trimmed answer is appended to the history the run leaves
  (``AgentRun.messages``, the input list a next run continues from); a cut tool call is never
  run.

Every run gets a receipt, however it ended (``last_run.receipt``, ``on_receipt``).

Not covered: the tools of agents reached by a handoff and hosted tools (no input guardrails in
the SDK), the whole answers of a handoff agent given a model object of its own, a ``Session``
of a run stopped on a streamed loop (the SDK kept nothing of the cut answer, so the session
lacks it), and a conversation the server holds: it keeps what the server wrote (a looping
answer in full), and after a streamed answer was cut the next SDK run of its recovery step
sends the run's items to it again (what the server kept of the cancelled response is not
known to the SDK).
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("openai-agents", "agents")

import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Iterator
from dataclasses import replace
from typing import Any, Callable, Optional, Union

from agents import (
    Agent,
    AgentsException,
    FunctionTool,
    FunctionToolResult,
    ItemHelpers,
    Model,
    ModelProvider,
    ModelRetryAdvice,
    ModelRetryAdviceRequest,
    RawResponsesStreamEvent,
    RunConfig,
    RunHooks,
    Runner,
    RunResult,
    RunResultStreaming,
    StreamEvent,
    Tool,
    ToolErrorFormatter,
    ToolErrorFormatterArgs,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailTripwireTriggered,
    ToolsToFinalOutputResult,
)
from agents.agent import AgentBase
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.run_config import CallModelData, ModelInputData
from agents.run_context import RunContextWrapper
from agents.run_error_handlers import RunErrorHandlerInput, RunErrorHandlerResult
from agents.tool import ToolErrorFunction
from agents.tool_context import ToolContext
from agents.tool_guardrails import ToolInputGuardrailData
from openai.types.responses import (
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionToolCall,
    ResponseOutputItem,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningTextDeltaEvent,
    ResponseTextDeltaEvent,
)

from loopbreak._core import DEFAULT_KEEP, Rules
from loopbreak.agent.audit import AuditLog
from loopbreak.agent.decision import Decision
from loopbreak.agent.policy import PolicyConfig
from loopbreak.errors import LoopbreakError
from loopbreak.integrations._governance import (
    AgentRun,
    AgentVerifier,
    FrameworkErrors,
    Governance,
    ReceiptCallback,
)
from loopbreak.streaming.guard import CONTENT, REASONING, Piece

__all__ = ["AgentRunStopped", "LoopbreakRunner", "LoopbreakStream"]

GUARDRAIL_NAME = "loopbreak"


class AgentRunStopped(LoopbreakError, AgentsException):
    """The run policy stopped the agent run before a model call that followed no tool call
    (the kill switch, a spent budget). An ``AgentsException``, so the SDK attaches the run's
    items as ``run_data``. Every other stop ends the run with the stop message as its final
    output."""

    def __init__(self, decision: Decision, message: str) -> None:
        super().__init__(message)
        self.decision = decision


ERRORS = FrameworkErrors(halts=(AgentRunStopped, ToolInputGuardrailTripwireTriggered))
"""A halt by loopbreak, or another guardrail's trip (no outcome to record)."""


class LoopbreakRunner:
    """Runs agents like ``Runner``, each run governed by its own ``AgentRun`` (module
    docstring). The options are those of every loopbreak agent adapter (``Governance``);
    ``last_run`` is the most recent run."""

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

    def _start(self, agent: Agent[Any], kwargs: dict[str, Any]) -> _Run:
        for name in ("max_turns", "hooks"):
            if name in kwargs:
                raise TypeError(
                    f"{name} is set by LoopbreakRunner (max_turns is PolicyConfig.max_steps)"
                )
        governed = self.governance.new_run(ERRORS)
        self.last_run = governed
        return _Run(governed, agent, kwargs)

    async def run(
        self, agent: Agent[Any], input: Union[str, list[TResponseInputItem]], **kwargs: Any
    ) -> RunResult:
        """``Runner.run(agent, input, **kwargs)`` under a fresh policy; ``max_turns`` and
        ``hooks`` are the runner's own."""
        run = self._start(agent, kwargs)
        try:
            result = await Runner.run(run.agent, input, **run.runner_kwargs())
            while (nudge := run.governed.take_nudge()) is not None:
                # The answer was cut on its recovery step: the next SDK run asks again.
                history = run.recovery_input(result, [], nudge)
                result = await Runner.run(run.agent, history, **run.runner_kwargs())
        except BaseException as error:
            run.ended_with(error)
            raise
        run.governed.messages = run.history(result)
        run.governed.finished_naturally()
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
        there the run is cancelled and the stream ends (on a recovery step, the events of the
        next SDK run follow). Close it (``aclose()``) when you stop reading early: that
        cancels the run too."""
        governed = self._run.governed
        while True:
            offsets = _AnswerOffsets()
            guarded = governed.guard_stream(_RunEvents(self.result), offsets.pieces)
            try:
                async for event in guarded:
                    yield event
            except BaseException as error:  # GeneratorExit too: the consumer stopped reading
                self._run.ended_with(error)
                raise
            finally:
                await guarded.aclose()  # cancels the run unless it completed
            history = self._run.history(self.result)
            unsaved: list[TResponseInputItem] = []
            degeneration = governed.stream_ended(guarded)
            if degeneration is not None:
                # The SDK keeps nothing of an answer cancelled mid-stream: add the trimmed one.
                answer = governed.trimmed(guarded.text[offsets.answer_start :])
                if answer:  # empty when the loop was in a tool call's arguments
                    unsaved.append({"role": "assistant", "content": answer})
            messages = [*history, *unsaved]
            nudge = governed.take_nudge()
            if nudge is None:
                break
            # The answer was cut on its recovery step: the next SDK run asks again.
            self.result = Runner.run_streamed(
                self._run.agent,
                self._run.recovery_input(self.result, unsaved, nudge),
                **self._run.runner_kwargs(),
            )
        governed.finished_naturally()
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
    source (and where the current call's answer starts in it), its reasoning another, each
    tool call's arguments another."""

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
        elif isinstance(
            data, (ResponseReasoningTextDeltaEvent, ResponseReasoningSummaryTextDeltaEvent)
        ):
            yield Piece(REASONING, data.delta)
        elif isinstance(data, ResponseFunctionCallArgumentsDeltaEvent):
            yield Piece(f"output[{data.output_index}].arguments", data.delta)


def _response_pieces(response: ModelResponse) -> Iterator[Piece]:
    """A whole model response as the stream guard reads a streamed one: the same sources."""
    for index, item in enumerate(response.output):
        if isinstance(item, ResponseOutputMessage):
            for part in item.content:
                if isinstance(part, ResponseOutputText):
                    yield Piece(CONTENT, part.text)
        elif isinstance(item, ResponseReasoningItem):
            for summary in item.summary:
                yield Piece(REASONING, summary.text)
            for content in item.content or ():
                yield Piece(REASONING, content.text)
        elif isinstance(item, ResponseFunctionToolCall):
            yield Piece(f"output[{index}].arguments", item.arguments, item.name)


def _user(text: str) -> TResponseInputItem:
    return {"role": "user", "content": text}


def _answer(text: str) -> ResponseOutputItem:
    return ResponseOutputMessage(
        id="loopbreak",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


class _Run:
    """The SDK hook points of one run, each translated to an ``AgentRun`` call."""

    def __init__(self, governed: AgentRun, agent: Agent[Any], kwargs: dict[str, Any]) -> None:
        self.governed = governed
        self._kwargs = kwargs
        self._tool_in_flight: Optional[str] = None
        self._calls_checked = 0  # tool calls of the current step that reached the guardrail
        self._planned_ahead = False  # the step after the tools' step is planned
        self._stop_answered = False  # a stop ended the run with its message as final output
        self._failed_calls: set[str] = set()  # call ids the SDK answered with a tool's error
        # The history before the last SDK run, when a server conversation holds it and that
        # run was given only the nudge (so its own items lack it).
        self._held_by_server: list[TResponseInputItem] = []
        self._guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(
            guardrail_function=self._check_tool, name=GUARDRAIL_NAME
        )
        behavior = agent.tool_use_behavior
        if behavior != "run_llm_again" and not callable(behavior):
            raise TypeError(
                "LoopbreakRunner governs agents whose tool_use_behavior is 'run_llm_again' or "
                f"a function, got {behavior!r}"
            )
        self._behavior = behavior
        model = agent.model
        self.agent = agent.clone(
            tools=[self._governed_tool(tool) for tool in agent.tools],
            tool_use_behavior=self._tools_ran,
            model=_CheckedModel(model, self.model_answered) if isinstance(model, Model) else model,
        )

    def runner_kwargs(self) -> dict[str, Any]:
        kwargs = dict(self._kwargs)
        run_config = kwargs.pop("run_config", None) or RunConfig()
        if run_config.call_model_input_filter is not None:
            raise TypeError("run_config.call_model_input_filter is set by LoopbreakRunner")
        error_handlers = dict(kwargs.pop("error_handlers", None) or {})
        if "max_turns" in error_handlers:
            raise TypeError("the max_turns error handler is set by LoopbreakRunner")
        error_handlers["max_turns"] = self._on_max_turns
        model = run_config.model
        checked = replace(
            run_config,
            call_model_input_filter=self._filter,
            tool_error_formatter=self._marking_formatter(run_config.tool_error_formatter),
            model_provider=_CheckedProvider(run_config.model_provider, self.model_answered),
            model=_CheckedModel(model, self.model_answered) if isinstance(model, Model) else model,
        )
        return {
            **kwargs,
            "run_config": checked,
            "error_handlers": error_handlers,
            "hooks": _Hooks(self),
            "max_turns": self._steps_left(),
        }

    def _steps_left(self) -> int:
        """The SDK's turn cap of the next SDK run: the policy's steps not yet started (a run
        continued after a recovery step has used some)."""
        policy = self.governed.policy
        started = 0 if policy.step is None else policy.step + 1
        return policy.config.max_steps - started

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
        governed = replace(tool, tool_input_guardrails=guardrails, is_enabled=is_enabled)
        # The SDK answers a raised error with the tool's own failure function, if it was given
        # one (the SDK keeps it in these two fields, read from the copy the run uses): the
        # copy's marks the call as failed. The default answer is marked by the run's formatter.
        answer = tool._failure_error_function
        if not tool._use_default_failure_error_function and answer is not None:
            governed._failure_error_function = self._marking_answer(answer)
        return governed

    def _marking_answer(self, answer: ToolErrorFunction) -> ToolErrorFunction:
        async def marked(context: RunContextWrapper[Any], error: Exception) -> str:
            if isinstance(context, ToolContext):
                self._failed_calls.add(context.tool_call_id)
            message = answer(context, error)
            return await message if inspect.isawaitable(message) else message

        return marked

    def _marking_formatter(self, formatter: Optional[ToolErrorFormatter]) -> ToolErrorFormatter:
        """The run's tool error formatter: the SDK calls it when it answers a tool's raised error
        with its default answer (``kind`` ``tool_exception``), which marks the call as failed;
        the answer stays the SDK's (None) or that of the formatter passed in."""

        def marking(
            args: ToolErrorFormatterArgs[Any],
        ) -> Union[Optional[str], Awaitable[Optional[str]]]:
            if args.kind == "tool_exception":
                self._failed_calls.add(args.call_id)
            return None if formatter is None else formatter(args)

        return marking

    def _offers_tools(self) -> bool:
        """Whether a function tool is enabled now. The SDK asks twice per step: when it offers
        the tools of the next model call (that step was planned when the tools of the last one
        ran, or is about to be by the input filter) and when it runs the current step's calls,
        before any of them reached the guardrail (they were offered: yes). A call to a tool
        the step did not offer never gets that far: the SDK finds no such tool."""
        plan = self.governed.plan
        if plan is not None and self._planned_ahead:
            return plan.tools_enabled
        if plan is not None and not self._calls_checked:
            return True
        return self.governed.next_step_offers_tools()

    def _check_tool(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        self._calls_checked += 1
        decision = self.governed.check_tool(data.context.tool_name, data.context.tool_arguments)
        if decision.stopped or decision.refused:
            # Not run; the model reads why as the call's result (a stop ends the run next).
            message = decision.message or ""
            return ToolGuardrailFunctionOutput.reject_content(message, decision.to_dict())
        return ToolGuardrailFunctionOutput.allow(output_info=decision.to_dict())

    async def _tools_ran(
        self, context: RunContextWrapper[Any], results: list[FunctionToolResult]
    ) -> ToolsToFinalOutputResult:
        """The step's tools ran: end the step, plan the next; a stop is the final output."""
        self._calls_checked = 0
        plan = self.governed.begin_step()
        self._planned_ahead = True
        if plan.decision.stopped:
            self._stop_answered = True
            return ToolsToFinalOutputResult(
                is_final_output=True, final_output=self.governed.user_message()
            )
        if self._behavior == "run_llm_again":
            return ToolsToFinalOutputResult(is_final_output=False, final_output=None)
        assert callable(self._behavior)
        answer = self._behavior(context, results)
        return await answer if inspect.isawaitable(answer) else answer

    def history(self, result: Union[RunResult, RunResultStreaming]) -> list[TResponseInputItem]:
        """The input list a next run continues from, ending with the stop message when a stop
        was the final output (the SDK keeps a final output from tools out of its items)."""
        messages = [*self._held_by_server, *result.to_input_list()]
        if self._stop_answered:
            messages.append({"role": "assistant", "content": self.governed.user_message()})
        return messages

    def recovery_input(
        self,
        result: Union[RunResult, RunResultStreaming],
        unsaved: list[TResponseInputItem],
        nudge: str,
    ) -> list[TResponseInputItem]:
        """The next SDK run's input on an answer's recovery step: the history, the items the SDK
        did not keep (a streamed answer it cancelled), then the nudge. A ``Session`` holds the
        history already, and the SDK puts it before the input: then only the rest is sent. A
        conversation the server holds (``conversation_id``, a ``previous_response_id`` chain)
        has every response of a run that was not streamed, the looping one too: then only the
        nudge, in that conversation or after the last response. A streamed answer's response
        was cancelled, and what the server kept of it and of that request is not known: the
        run's items are sent again, as the first time."""
        kwargs = self._kwargs
        if isinstance(result, RunResult):
            chained = kwargs.get("previous_response_id") or kwargs.get("auto_previous_response_id")
            if chained and result.last_response_id is not None:
                kwargs["previous_response_id"] = result.last_response_id
            if kwargs.get("conversation_id") or kwargs.get("previous_response_id"):
                self._held_by_server = self.history(result)
                return [_user(nudge)]
        kept = [] if kwargs.get("session") is not None else self.history(result)
        return [*kept, *unsaved, _user(nudge)]

    def _filter(self, data: CallModelData[Any]) -> ModelInputData:
        instructions = data.model_data.instructions or ""
        plan = self.governed.plan
        if plan is None or not self._planned_ahead:
            plan = self.governed.begin_step()
        self._planned_ahead = False
        self._calls_checked = 0
        if plan.decision.stopped:
            raise AgentRunStopped(plan.decision, self.governed.user_message())
        return ModelInputData(
            input=data.model_data.input, instructions=plan.prompt_for(instructions)
        )

    def _on_max_turns(self, data: RunErrorHandlerInput[Any]) -> RunErrorHandlerResult:
        # The SDK's turn cap is the policy's step cap: the policy records the stop it makes.
        self.governed.begin_step()
        return RunErrorHandlerResult(final_output=self.governed.user_message())

    def record_usage(self, agent: Agent[Any], response: ModelResponse) -> None:
        usage = response.usage
        self.governed.record_usage(_model_name(agent), usage.input_tokens, usage.output_tokens)

    def model_answered(self, response: ModelResponse) -> None:
        """Checks a whole answer (a streamed one is checked as it streams): a loop is replaced
        by its trimmed text, which ends the run."""
        degeneration = self.governed.check_answer(response, _response_pieces)
        if degeneration is not None:
            text = degeneration.persist_text if degeneration.source == CONTENT else ""
            # The SDK builds the history and the final output from this list, after this hook.
            response.output[:] = [_answer(text or self.governed.user_message())]

    def tool_started(self, tool: Tool) -> None:
        self._tool_in_flight = tool.name

    def tool_ended(self, context: RunContextWrapper[Any], tool: Tool, result: object) -> None:
        self._tool_in_flight = None
        failed = False
        if isinstance(context, ToolContext) and context.tool_call_id in self._failed_calls:
            self._failed_calls.discard(context.tool_call_id)
            failed = True  # the SDK answered the tool's raised error
        self.governed.record_tool_result(tool.name, result, failed=failed)

    def ended_with(self, error: BaseException) -> None:
        """Records how an exception ended the run, keeps its items, builds the receipt."""
        governed = self.governed
        governed.failed(error, where=self._tool_in_flight)
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
        self._run.tool_ended(context, tool, result)


class _CheckedModel(Model):
    """A run's model whose whole answers are checked (``answered``) before the SDK reads them;
    a streamed answer passes through (``stream_events()`` guards it)."""

    def __init__(self, inner: Model, answered: Callable[[ModelResponse], None]) -> None:
        self.inner = inner
        self._answered = answered

    # The interface's arguments, passed on unchanged (``Model.get_response`` names them).
    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        response = await self.inner.get_response(*args, **kwargs)
        self._answered(response)
        return response

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        return self.inner.stream_response(*args, **kwargs)

    def get_retry_advice(self, request: ModelRetryAdviceRequest) -> Optional[ModelRetryAdvice]:
        return self.inner.get_retry_advice(request)

    async def close(self) -> None:
        await self.inner.close()


class _CheckedProvider(ModelProvider):
    """The run's model provider, handing out its models checked."""

    def __init__(self, inner: ModelProvider, answered: Callable[[ModelResponse], None]) -> None:
        self._inner = inner
        self._answered = answered

    def get_model(self, model_name: Optional[str]) -> Model:
        return _CheckedModel(self._inner.get_model(model_name), self._answered)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _model_name(agent: Agent[Any]) -> str:
    """The model's name as budgets' prices know it: the agent's model string, or the
    ``model`` attribute of a model object (the SDK's OpenAI models have one)."""
    model = agent.model
    if isinstance(model, _CheckedModel):
        model = model.inner
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__
