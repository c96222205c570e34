"""loopbreak for pydantic-ai agents: a capability that governs each run.

``Agent(model, capabilities=[LoopbreakCapability(PolicyConfig(max_steps=6))])`` gives every run
of the agent its own ``AgentRun`` (policy, answer guard, evidence; ``for_run``), through the
capability hooks of pydantic-ai:

- ``before_model_request``: one policy step per model request. The step warnings and the
  final-step nudge go into that request as a request-scoped ``SystemPromptPart``
  (``RunContext.enqueue``); under lockdown the final request offers no function tools. A stop
  skips the model (``SkipModelRequest``) with a final text answer that says why, so the run
  ends the framework's way and its messages are kept. When the agent's output type does not
  accept that text (pydantic-ai asks again), the run is cancelled instead (``ctx.cancel()``):
  ``RunCancelled`` carries the messages.
- ``before_tool_execute``: the repeated-action and tool-call checks, before the tool runs; a
  stopped call (or, with ``PolicyConfig.recovery_step``, a refused repeat) is answered with the
  decision's message instead (``SkipToolExecution``); after a stop the next request ends the
  run. ``after_tool_execute`` reports each result as progress; ``wrap_tool_execute`` reports
  a ``ModelRetry`` or ``ToolFailed`` the tool raised (the model sees it as the call's result)
  as a failed result, which is no progress.
- ``wrap_run_event_stream``: the model's streamed text and tool-call arguments go through a
  stream guard; on a loop the guard stops pulling, which closes the model's stream, and
  ``after_model_request`` puts the trimmed text in the response the history keeps (its cut
  tool calls are dropped, so the run ends with that text). ``after_model_request`` also
  records the token usage. On a recovery step (``PolicyConfig.recovery_step``)
  ``after_node_run`` turns the end that text would bring into a next request carrying the
  nudge as a ``UserPromptPart``.
- ``wrap_run``: the receipt, however the run ended. pydantic-ai's own ``UsageLimits`` stay in
  charge of what they count: their ``UsageLimitExceeded`` is recorded as a limit (a bounded
  stop), with the run's messages kept on the run (pydantic-ai#931).

Overriding ``wrap_run_event_stream`` makes ``agent.run()`` stream its model requests, so the
model must support streaming (every provider model does; a ``FunctionModel`` needs a
``stream_function``). ``agent.run()``, ``agent.iter()`` and ``agent.run_stream_events()`` keep
the trimmed text in the history; ``agent.run_stream()`` cuts the stream too but commits the text
read up to the cut as it was (in its output and ``all_messages()``; ``last_run.messages`` holds
the trimmed text), and ends the run there (no recovery step for an answer).
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("pydantic-ai", "pydantic_ai")

import asyncio
import copy
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from dataclasses import replace
from decimal import Decimal
from typing import Any, Optional

from pydantic_ai import (
    CallToolsNode,
    ModelRequestNode,
    ModelResponse,
    ModelRetry,
    RunContext,
    SkipModelRequest,
    SkipToolExecution,
    TextPart,
    ToolCallPart,
    ToolFailed,
)
from pydantic_ai.capabilities import AbstractCapability, WrapRunHandler
from pydantic_ai.capabilities.abstract import AgentNode, NodeResult, WrapToolExecuteHandler
from pydantic_ai.exceptions import (
    ModelRequestTimeout,
    ModelTimeoutError,
    RunCancelled,
    ToolFailedError,
    ToolRetryError,
    UsageLimitExceeded,
)
from pydantic_ai.messages import (
    AgentStreamEvent,
    ModelMessage,
    ModelRequest,
    PartDeltaEvent,
    PartStartEvent,
    SystemPromptPart,
    TextPartDelta,
    ToolCallPartDelta,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import ToolDefinition

from loopbreak._core import DEFAULT_KEEP, Rules
from loopbreak.agent.audit import AuditLog
from loopbreak.agent.decision import Number
from loopbreak.agent.policy import PolicyConfig
from loopbreak.integrations._governance import (
    LOCKDOWN_TOOL_ANSWER,
    AgentRun,
    AgentVerifier,
    FrameworkErrors,
    Governance,
    ReceiptCallback,
)
from loopbreak.streaming.guard import CONTENT, Piece

__all__ = ["LoopbreakCapability"]

# UsageLimitExceeded carries only a message naming the limit ("... the request_limit of 3");
# the numbers come from the run's UsageLimits and RunUsage.
_LIMIT_NAME = re.compile(r"\b(\w+_limit)\b")
_USAGE_OF_LIMIT = {
    "request_limit": "requests",
    "tool_calls_limit": "tool_calls",
    "input_tokens_limit": "input_tokens",
    "output_tokens_limit": "output_tokens",
    "total_tokens_limit": "total_tokens",
    "cost_limit": "cost",
}


ERRORS = FrameworkErrors(
    timeouts=(ModelRequestTimeout, ModelTimeoutError),
    aborts=(RunCancelled,),
    # A tool's ModelRetry and ToolFailed, and the forms pydantic-ai carries them in to the model.
    tool_errors=(ModelRetry, ToolFailed, ToolRetryError, ToolFailedError),
)


class LoopbreakCapability(AbstractCapability[Any]):
    """Governs every run of the agent it is given to (see the module docstring). The options
    are those of every loopbreak agent adapter (``Governance``); ``last_run`` is the most recent
    run of the agent (policy, evidence, receipt, messages)."""

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
        super().__init__()
        self.governance = Governance(
            config, verifier=verifier, audit=audit, on_receipt=on_receipt, rules=rules, keep=keep
        )
        self._template: LoopbreakCapability = self
        self._run: Optional[AgentRun] = None
        self._last_run: Optional[AgentRun] = None
        self._messages: list[ModelMessage] = []
        self._failed_tool: Optional[str] = None
        self._stop_answered = False
        self._model_name = "unknown"  # the model of the last request

    @property
    def last_run(self) -> Optional[AgentRun]:
        """The most recent run of the agent (None before the first)."""
        return self._template._last_run

    async def for_run(self, ctx: RunContext[Any]) -> LoopbreakCapability:
        """A fresh instance per run, holding that run's policy and evidence."""
        instance = copy.copy(self)
        instance._run = self.governance.new_run(ERRORS, run_id=ctx.run_id)
        self._last_run = instance._run
        return instance

    def _governed(self) -> AgentRun:
        if self._run is None:
            raise RuntimeError("LoopbreakCapability hooks run only inside an agent run")
        return self._run

    async def wrap_run(
        self, ctx: RunContext[Any], *, handler: WrapRunHandler
    ) -> AgentRunResult[Any]:
        run = self._governed()
        run.state = ctx
        try:
            result = await handler()
        except BaseException as error:
            if isinstance(error, UsageLimitExceeded):
                self._record_usage_limit(ctx, error)
            run.failed(error, where=self._failed_tool, timed_out=_run_timed_out(ctx, error))
            raise
        else:
            run.finished_naturally()
            return result
        finally:
            run.messages = list(self._messages)
            run.finish()

    def _record_usage_limit(self, ctx: RunContext[Any], error: UsageLimitExceeded) -> None:
        run = self._governed()
        name, value, limit = _usage_limit(ctx, error)
        run.record_limit(name, value=value, limit=limit)
        # A token limit stops a streamed response before after_model_request sees it: its
        # tokens are in pydantic-ai's count only.
        used = run.policy.usage()
        unseen_in = max(ctx.usage.input_tokens - used.input_tokens, 0)
        unseen_out = max(ctx.usage.output_tokens - used.output_tokens, 0)
        if unseen_in or unseen_out:
            run.record_usage(self._model_name, unseen_in, unseen_out)

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        run = self._governed()
        self._messages = ctx.messages  # the run's history, read again when the run ends
        self._model_name = request_context.model.model_name
        plan = None if run.degeneration is not None else run.begin_step()
        if plan is None or plan.decision.stopped:
            if self._stop_answered:
                # The stop's text answer was no valid output (the agent's output type is not
                # text): end the run as cancelled instead (RunCancelled keeps the messages).
                ctx.cancel()
            self._stop_answered = True
            raise SkipModelRequest(_final_answer(run.user_message()))
        if plan.addendum:
            ctx.enqueue(SystemPromptPart(plan.addendum, scope="request"))
        if not plan.tools_enabled:
            request_context.model_request_parameters = replace(
                request_context.model_request_parameters, function_tools=[]
            )
        return request_context

    async def after_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        response: ModelResponse,
    ) -> ModelResponse:
        run = self._governed()
        model = response.model_name or request_context.model.model_name
        run.record_usage(model, response.usage.input_tokens, response.usage.output_tokens)
        if run.cut is None:
            return response
        # The stream was cut: keep the trimmed text, drop the tool calls it may have begun.
        return replace(response, parts=[TextPart(run.cut.persist_text)])

    async def after_node_run(
        self, ctx: RunContext[Any], *, node: AgentNode[Any], result: NodeResult[Any]
    ) -> NodeResult[Any]:
        if not isinstance(node, CallToolsNode):
            return result
        nudge = self._governed().take_nudge()
        if nudge is None:
            return result
        # The answer was cut on its recovery step: instead of ending with it, ask again.
        return ModelRequestNode(ModelRequest(parts=[UserPromptPart(nudge)]))

    async def wrap_run_event_stream(
        self, ctx: RunContext[Any], *, stream: AsyncIterable[AgentStreamEvent]
    ) -> AsyncIterator[AgentStreamEvent]:
        run = self._governed()
        guarded = run.guard_stream(stream, _event_pieces)
        try:
            async for event in guarded:
                yield event
        finally:
            await guarded.aclose()
            run.stream_ended(guarded)

    async def before_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
    ) -> dict[str, Any]:
        run = self._governed()
        plan = run.plan
        if plan is not None and not plan.tools_enabled and not plan.decision.stopped:
            raise SkipToolExecution(LOCKDOWN_TOOL_ANSWER)
        # The model's own arguments, before validation coerced them: the key normalizes them.
        decision = run.check_tool(call.tool_name, call.args)
        if decision.stopped or decision.refused:
            raise SkipToolExecution(decision.message or "")
        return args

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: WrapToolExecuteHandler,
    ) -> Any:
        try:
            return await handler(args)
        except Exception as error:
            self._governed().tool_raised(call.tool_name, error)
            raise

    async def after_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        result: Any,
    ) -> Any:
        self._governed().record_tool_result(call.tool_name, result)
        return result

    async def on_tool_execute_error(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        error: Exception,
    ) -> Any:
        # Not recovered here: if the error ends the run, the receipt names this tool.
        self._failed_tool = call.tool_name
        raise error


def _run_timed_out(ctx: RunContext[Any], error: BaseException) -> bool:
    """Whether the run's own ``timeout=`` ended it: the run sees it as a cancellation (the
    caller gets ``RunTimedOut``) after its deadline."""
    remaining = ctx.remaining_time()
    return isinstance(error, asyncio.CancelledError) and remaining is not None and remaining <= 0


def _final_answer(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)], model_name="loopbreak")


def _event_pieces(event: AgentStreamEvent) -> Iterator[Piece]:
    """The streamed text of one event: answer text, and each tool call's arguments apart."""
    if isinstance(event, PartStartEvent):
        part = event.part
        if isinstance(part, TextPart):
            yield Piece(CONTENT, part.content)
        elif isinstance(part, ToolCallPart) and isinstance(part.args, str):
            yield Piece(f"tool_calls[{event.index}].arguments", part.args, part.tool_name)
    elif isinstance(event, PartDeltaEvent):
        delta = event.delta
        if isinstance(delta, TextPartDelta):
            yield Piece(CONTENT, delta.content_delta)
        elif isinstance(delta, ToolCallPartDelta) and isinstance(delta.args_delta, str):
            yield Piece(f"tool_calls[{event.index}].arguments", delta.args_delta)


def _usage_limit(ctx: RunContext[Any], error: UsageLimitExceeded) -> tuple[str, Number, Number]:
    """The limit a ``UsageLimitExceeded`` names, what the run used of it, and the limit (both
    0 when pydantic-ai names a limit this adapter does not know)."""
    match = _LIMIT_NAME.search(error.message)
    name = match.group(1) if match else "usage_limit"
    limit = _number(getattr(ctx.usage_limits, name, None))
    value = _number(getattr(ctx.usage, _USAGE_OF_LIMIT.get(name, ""), None))
    return name, value if limit else 0, limit


def _number(value: object) -> Number:
    if isinstance(value, Decimal):  # cost_limit
        return float(value)
    return value if isinstance(value, (int, float)) else 0
