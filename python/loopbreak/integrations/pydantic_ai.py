"""loopbreak for pydantic-ai agents: a capability that governs each run.

``Agent(model, capabilities=[LoopbreakCapability(PolicyConfig(max_steps=6))])`` gives every run
of the agent its own ``RunPolicy``, stream guard and ``RunEvidence`` (``for_run``), through the
capability hooks of pydantic-ai:

- ``before_model_request``: one policy step per model request. The step warnings and the
  final-step nudge go into that request as a request-scoped ``SystemPromptPart``
  (``RunContext.enqueue``); under lockdown the final request offers no function tools. A stop
  skips the model (``SkipModelRequest``) with a final text answer that says why, so the run
  ends the framework's way and its messages are kept. When the agent's output type does not
  accept that text (pydantic-ai asks again), the run is cancelled instead (``ctx.cancel()``):
  ``RunCancelled`` carries the messages.
- ``before_tool_execute``: the repeated-action and tool-call checks, before the tool runs; a
  stopped call is answered with the stop message instead (``SkipToolExecution``) and the next
  request ends the run. ``after_tool_execute`` reports each result as progress.
- ``wrap_run_event_stream``: the model's streamed text and tool-call arguments go through a
  stream guard; on a loop the guard stops pulling, which closes the model's stream, and
  ``after_model_request`` puts the trimmed text in the response the history keeps (its cut
  tool calls are dropped, so the run ends with that text). ``after_model_request`` also
  records the token usage.
- ``wrap_run``: the receipt, however the run ended. pydantic-ai's own ``UsageLimits`` stay in
  charge of what they count: their ``UsageLimitExceeded`` is recorded as a limit (a bounded
  stop), with the run's messages kept on the run (pydantic-ai#931).

Overriding ``wrap_run_event_stream`` makes ``agent.run()`` stream its model requests, so the
model must support streaming (every provider model does; a ``FunctionModel`` needs a
``stream_function``). ``agent.run()``, ``agent.iter()`` and ``agent.run_stream_events()`` keep
the trimmed text in the history; ``agent.run_stream()`` cuts the stream too but commits the text
read up to the cut as it was.
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("pydantic-ai", "pydantic_ai")

import asyncio
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from dataclasses import replace
from decimal import Decimal
from typing import Any, Optional

from pydantic_ai import (
    ModelResponse,
    RunContext,
    SkipModelRequest,
    SkipToolExecution,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.capabilities import AbstractCapability, WrapRunHandler
from pydantic_ai.exceptions import (
    ModelRequestTimeout,
    ModelTimeoutError,
    RunCancelled,
    UsageLimitExceeded,
)
from pydantic_ai.messages import (
    AgentStreamEvent,
    ModelMessage,
    PartDeltaEvent,
    PartStartEvent,
    SystemPromptPart,
    TextPartDelta,
    ToolCallPartDelta,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import ToolDefinition

from loopbreak._core import Rules
from loopbreak.agent.audit import AuditLog
from loopbreak.agent.decision import Number
from loopbreak.agent.policy import PolicyConfig
from loopbreak.agent.receipt import Verifier
from loopbreak.integrations._governance import (
    LOCKDOWN_TOOL_ANSWER,
    GovernedRun,
    ReceiptCallback,
)
from loopbreak.streaming.guard import CONTENT, AsyncGuarded, Piece

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


class LoopbreakCapability(AbstractCapability[Any]):
    """Governs every run of the agent it is given to (see the module docstring).

    ``config`` holds the policy's limits (one fresh ``RunPolicy`` per run); ``verifier`` checks
    the destination for the receipt of a finished run; ``audit`` receives every run's
    decisions (default: one in-memory log per run); ``on_receipt`` is called with each run's
    receipt; ``rules`` tunes the stream guard. ``last_run`` is the most recent run's
    ``GovernedRun`` (policy, evidence, receipt, messages).
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
        super().__init__()
        if config is not None and not isinstance(config, PolicyConfig):
            raise TypeError(f"config must be a PolicyConfig, got {type(config).__name__}")
        if verifier is not None and not callable(verifier):
            raise TypeError(f"verifier must be callable, got {type(verifier).__name__}")
        self._config = config
        self._verifier = verifier
        self._audit = audit
        self._on_receipt = on_receipt
        self._rules = rules
        self._template: LoopbreakCapability = self
        self._run: Optional[GovernedRun] = None
        self._last_run: Optional[GovernedRun] = None
        self._messages: list[ModelMessage] = []
        self._failed_tool: Optional[str] = None
        self._stop_answered = False
        self._model_name = "unknown"  # the model of the last request

    @property
    def last_run(self) -> Optional[GovernedRun]:
        """The most recent run of the agent (None before the first)."""
        return self._template._last_run

    async def for_run(self, ctx: RunContext[Any]) -> LoopbreakCapability:
        """A fresh instance per run, holding that run's policy and evidence."""
        instance = LoopbreakCapability(
            self._config,
            verifier=self._verifier,
            audit=self._audit,
            on_receipt=self._on_receipt,
            rules=self._rules,
        )
        instance._template = self
        instance._run = GovernedRun(
            self._config,
            verifier=self._verifier,
            audit=self._audit,
            on_receipt=self._on_receipt,
            run_id=ctx.run_id,
        )
        self._last_run = instance._run
        return instance

    def _governed(self) -> GovernedRun:
        if self._run is None:
            raise RuntimeError("LoopbreakCapability hooks run only inside an agent run")
        return self._run

    async def wrap_run(
        self, ctx: RunContext[Any], *, handler: WrapRunHandler
    ) -> AgentRunResult[Any]:
        run = self._governed()
        try:
            result = await handler()
        except BaseException as error:
            run.error = error
            self._record_error(ctx, error)
            raise
        else:
            if not run.ended_by_loopbreak:
                run.evidence.record_natural_finish()
            return result
        finally:
            run.messages = list(self._messages)
            run.finish()

    def _record_error(self, ctx: RunContext[Any], error: BaseException) -> None:
        evidence = self._governed().evidence
        if isinstance(error, UsageLimitExceeded):
            name, value, limit = _usage_limit(ctx, error)
            evidence.record_limit(name, value=value, limit=limit)
            # A token limit stops a streamed response before after_model_request sees it:
            # its tokens are in pydantic-ai's count only.
            used = self._governed().policy.usage()
            unseen_in = max(ctx.usage.input_tokens - used.input_tokens, 0)
            unseen_out = max(ctx.usage.output_tokens - used.output_tokens, 0)
            if unseen_in or unseen_out:
                self._governed().record_usage(self._model_name, unseen_in, unseen_out)
        elif _timed_out(ctx, error):
            evidence.record_timeout(error)
        elif isinstance(error, (RunCancelled, asyncio.CancelledError)):
            if not self._governed().ended_by_loopbreak:  # else loopbreak cancelled it
                evidence.record_user_abort(error)
        elif self._failed_tool is not None:
            evidence.record_tool_failure(self._failed_tool, error)
        # Anything else (a model API error, a bug) leaves no outcome: the receipt is UNCERTAIN.

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        run = self._governed()
        self._messages = ctx.messages  # the run's history, read again when the run ends
        self._model_name = request_context.model.model_name
        plan = None if run.ended_by_loopbreak else run.begin_step()
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
        if run.degeneration is None:
            return response
        # The stream was cut: keep the trimmed text, drop the tool calls it may have begun.
        return replace(response, parts=[TextPart(run.degeneration.persist_text)])

    async def wrap_run_event_stream(
        self, ctx: RunContext[Any], *, stream: AsyncIterable[AgentStreamEvent]
    ) -> AsyncIterator[AgentStreamEvent]:
        run = self._governed()
        guarded = AsyncGuarded(stream, _event_pieces, on_degeneration="stop", rules=self._rules)
        try:
            async for event in guarded:
                yield event
        finally:
            await guarded.aclose()
            if guarded.degeneration is not None:
                run.record_degeneration(guarded.degeneration)

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
        if run.check_tool(call.tool_name, call.args).stopped:
            raise SkipToolExecution(run.user_message())
        return args

    async def after_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        result: Any,
    ) -> Any:
        self._governed().record_progress(f"{call.tool_name}: {result}")
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


def _timed_out(ctx: RunContext[Any], error: BaseException) -> bool:
    """Whether a timeout ended the run: a model request's or a tool's, or the run's own
    ``timeout=``, which the run sees as a cancellation (the caller gets ``RunTimedOut``)
    after its deadline."""
    if isinstance(error, (TimeoutError, ModelRequestTimeout, ModelTimeoutError)):
        return True
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
