"""loopbreak for Google ADK agents: a plugin that governs each run of a ``Runner``.

``InMemoryRunner(agent=agent, app_name=..., plugins=[LoopbreakPlugin(PolicyConfig(max_steps=6))])``
(or ``App(name, root_agent, plugins=[...])``) gives every run (``runner.run_async`` /
``runner.run``, one ADK invocation) its own ``AgentRun``, through the ``BasePlugin`` callbacks of
google-adk 2.13 (docs/integrations/google_adk.md has the table):

- ``before_run_callback``: a new ``AgentRun`` for the invocation (run id: its
  ``invocation_id``); the plugin serves every run of the Runner, so each hook finds its run by
  the invocation id it is given.
- ``before_model_callback``: one policy step per model call. The step warnings and the
  final-step nudge are appended to the request's system instruction (request-scoped: ADK builds
  a fresh ``LlmRequest`` per call); under lockdown the request declares no tools. A stop
  answers for the model with a final ``LlmResponse`` whose text says why: no model call, and
  the run ends with that answer, kept in the session.
- ``after_model_callback``: every streamed partial (``StreamingMode.SSE``) goes through a stream
  guard as it arrives; at a loop the plugin answers with a final response holding the trimmed
  text and aborts the invocation, which closes the model's stream (the caller then gets ADK's
  ``INVOCATION_ABORTED`` event that seals an aborted run). A whole answer is checked when it
  arrives and replaced by its trimmed text (its tool calls dropped). Usage is recorded from the
  final response's ``usage_metadata``.
- ``before_tool_callback``: the repeated-action and tool-call checks before the tool runs; a
  stopped or refused call (and any call on a locked-down final step) is answered with
  ``{"error": message}`` instead, and the next model call ends the run after a stop.
- ``on_tool_error_callback`` / ``after_tool_callback``: a tool result is progress; a tool error
  (recovered by another plugin such as ADK's ``ReflectAndRetryToolPlugin``, or ending the run)
  is a failed result, no progress, and names the tool if it ends the run.
- ``on_run_error_callback`` / ``after_run_callback``: the receipt, however the run ended. ADK's
  own ``RunConfig.max_llm_calls`` stays in charge of what it counts: its
  ``LlmCallsLimitExceededError`` is recorded as a limit (a bounded stop).

ADK ends an invocation at a text answer and no callback can call the model again after it, so an
answer cut on its recovery step (``PolicyConfig.recovery_step``) ends the run with its trimmed
text, as without a recovery step; refused tool calls do get theirs.
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("google-adk", "google.adk")

import asyncio
import json
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext, LlmCallsLimitExceededError
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from loopbreak._core import DEFAULT_KEEP, Rules
from loopbreak.agent.audit import AuditLog
from loopbreak.agent.policy import PolicyConfig
from loopbreak.integrations._governance import (
    LOCKDOWN_TOOL_ANSWER,
    AgentRun,
    AgentVerifier,
    FrameworkErrors,
    Governance,
    ReceiptCallback,
)
from loopbreak.streaming.guard import CONTENT, REASONING, Guarded, Piece

__all__ = ["LoopbreakPlugin"]

ERRORS = FrameworkErrors()
"""ADK hands no tool error to the model by itself (a plugin or callback may, see
``on_tool_error_callback``); its timeouts are ``TimeoutError``s and its aborts cancellations."""


class _StreamWatch:
    """The stream guard over one model call's partial responses, which ADK pushes into
    ``after_model_callback`` one at a time: each is queued and pulled by the guard at once."""

    def __init__(self, rules: Optional[Rules], keep: int) -> None:
        self._pending: deque[LlmResponse] = deque()
        self.guard = Guarded(
            self._next_pending(), _pieces, on_degeneration="stop", rules=rules, keep=keep
        )
        self.partials = 0

    def _next_pending(self) -> Iterator[LlmResponse]:
        while True:
            yield self._pending.popleft()

    def looped(self, partial: LlmResponse) -> bool:
        """Reads one partial; True at the partial in which a rule holds."""
        self.partials += 1
        self._pending.append(partial)
        try:
            next(self.guard)
        except StopIteration:
            return True
        return False


@dataclass
class _Invocation:
    """One ADK invocation's governed run and what the hooks of its model and tool calls share."""

    run: AgentRun
    model: str = "unknown"
    watch: Optional[_StreamWatch] = None
    answered: bool = False  # the model gave a final answer (no tool calls), or a stop did
    not_run: set[Optional[str]] = field(default_factory=set)  # tool calls loopbreak answered
    failed: set[Optional[str]] = field(default_factory=set)  # tool calls that raised
    failed_tool: Optional[str] = None


class LoopbreakPlugin(BasePlugin):  # type: ignore[misc]
    """Governs every run of the ``Runner`` it is given to (see the module docstring). The
    options are those of every loopbreak agent adapter (``Governance``): the verifier's
    ``run.state`` is ADK's ``InvocationContext``, ``run.messages`` the session's events.
    ``last_run`` is the most recently started run."""

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
        super().__init__(name="loopbreak")
        self.governance = Governance(
            config, verifier=verifier, audit=audit, on_receipt=on_receipt, rules=rules, keep=keep
        )
        self.last_run: Optional[AgentRun] = None
        # The Runner shares its plugins between its runs (``runner.run`` runs each in a thread).
        self._invocations: dict[str, _Invocation] = {}

    def _of(self, invocation_id: str) -> Optional[_Invocation]:
        return self._invocations.get(invocation_id)

    # The run.

    async def before_run_callback(
        self, *, invocation_context: InvocationContext
    ) -> Optional[types.Content]:
        run = self.governance.new_run(ERRORS, run_id=invocation_context.invocation_id)
        run.state = invocation_context
        self._invocations[invocation_context.invocation_id] = _Invocation(run)
        self.last_run = run
        return None

    async def on_run_error_callback(
        self, *, invocation_context: InvocationContext, error: Exception
    ) -> None:
        invocation = self._invocations.pop(invocation_context.invocation_id, None)
        if invocation is None:
            return
        run = invocation.run
        if isinstance(error, LlmCallsLimitExceededError):
            limit = _max_llm_calls(invocation_context)
            run.record_limit("max_llm_calls", value=limit + 1, limit=limit)
        run.failed(error, where=invocation.failed_tool)
        _finish(run, invocation_context)

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        invocation = self._invocations.pop(invocation_context.invocation_id, None)
        if invocation is None:
            return
        run = invocation.run
        if invocation.answered or run.cut is not None:
            run.finished_naturally()
        else:
            # ADK runs this callback also when the caller's abort signal ended the run, or the
            # caller stopped reading its events, before the model answered.
            run.failed(asyncio.CancelledError("the caller ended the invocation"))
        _finish(run, invocation_context)

    # Model calls.

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> Optional[LlmResponse]:
        invocation = self._of(callback_context.invocation_id)
        if invocation is None:
            return None
        run = invocation.run
        invocation.model = llm_request.model or invocation.model
        invocation.watch = _StreamWatch(self.governance.rules, self.governance.keep)
        plan = run.begin_step()
        if plan.decision.stopped:
            invocation.answered = True
            return _final(run.user_message())
        if plan.addendum:
            llm_request.append_instructions([plan.addendum])
        if not plan.tools_enabled:
            llm_request.config.tools = None
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> Optional[LlmResponse]:
        invocation = self._of(callback_context.invocation_id)
        if invocation is None or invocation.watch is None:
            return None
        run, watch = invocation.run, invocation.watch
        if llm_response.partial:
            if run.cut is not None or not watch.looped(llm_response):
                return None
            # A loop: keep the trimmed text, and abort, which closes the model's stream.
            run.record_usage(invocation.model, 0, 0)  # a cut stream reports no usage
            degeneration = run.stream_ended(watch.guard)
            assert degeneration is not None
            callback_context.get_invocation_context().abort()
            return _final(degeneration.persist_text, partial=False, turn_complete=True)
        invocation.answered = not llm_response.get_function_calls()
        usage = llm_response.usage_metadata
        run.record_usage(
            llm_response.model_version or invocation.model,
            (usage and usage.prompt_token_count) or 0,
            (usage and usage.candidates_token_count) or 0,
        )
        if watch.partials:  # streamed: read partial by partial already
            return None
        degeneration = run.check_answer(llm_response, _pieces)
        if degeneration is None:
            return None
        return _final(degeneration.persist_text)

    # Tool calls.

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> Optional[dict[str, Any]]:
        invocation = self._of(tool_context.invocation_id)
        if invocation is None:
            return None
        run, plan = invocation.run, invocation.run.plan
        if plan is not None and not plan.tools_enabled and not plan.decision.stopped:
            invocation.not_run.add(tool_context.function_call_id)
            return {"error": LOCKDOWN_TOOL_ANSWER}
        decision = run.check_tool(tool.name, tool_args)
        if decision.stopped or decision.refused:
            invocation.not_run.add(tool_context.function_call_id)
            return {"error": decision.message or ""}
        return None

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> Optional[dict[str, Any]]:
        invocation = self._of(tool_context.invocation_id)
        if invocation is not None and not isinstance(error, asyncio.CancelledError):
            # Answered by another callback (the run goes on: a failed result) or not (the
            # error ends the run, and the receipt names this tool).
            invocation.failed.add(tool_context.function_call_id)
            invocation.failed_tool = tool.name
        return None

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> Optional[dict[str, Any]]:
        invocation = self._of(tool_context.invocation_id)
        call = tool_context.function_call_id
        if invocation is None or call in invocation.not_run:
            return None  # not run: neither progress nor a failure
        invocation.run.record_tool_result(tool.name, result, failed=call in invocation.failed)
        return None


def _final(text: str, **fields: Any) -> LlmResponse:
    """A model answer of ``text`` alone (no tool calls): ADK ends the run with it."""
    content = types.Content(role="model", parts=[types.Part.from_text(text=text)])
    return LlmResponse(content=content, **fields)


def _max_llm_calls(invocation_context: InvocationContext) -> int:
    run_config = invocation_context.run_config
    return run_config.max_llm_calls if run_config is not None else 0


def _finish(run: AgentRun, invocation_context: InvocationContext) -> None:
    run.state = invocation_context
    run.messages = list(invocation_context.session.events)
    run.finish()


def _pieces(response: LlmResponse) -> Iterator[Piece]:
    """A response's text (thoughts apart, as reasoning), and each tool call's arguments as a
    source of its own."""
    content = response.content
    calls = 0
    for part in (content.parts if content is not None else None) or ():
        if part.function_call is not None:
            call = part.function_call
            arguments = json.dumps(call.args or {}, ensure_ascii=False)
            yield Piece(f"tool_calls[{calls}].arguments", arguments, call.name)
            calls += 1
        elif part.text:
            yield Piece(REASONING if part.thought else CONTENT, part.text)
