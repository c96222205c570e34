"""Governs LangChain v1 agents (``langchain.agents.create_agent``, on LangGraph) with one
``AgentMiddleware``: ``LoopbreakMiddleware``.

Each run of the agent (each ``invoke``/``stream``) gets its own ``AgentRun`` (policy, answer
guard, evidence), created by ``before_agent`` and kept in that run's graph state (an untracked,
private channel), so one middleware instance serves concurrent runs without sharing anything
between them. The hooks, in the order a step meets them:

- ``before_model``: ends the previous step (its tool results are the progress signals) and
  starts the next with ``RunPolicy.before_step``; a stop (step limit, budget, no progress) ends
  the run the framework's way, a jump to the end with a final message.
- ``wrap_model_call``: appends the step's warning or final-step nudge to the system message
  and, under the lockdown, offers no tools; watches the model's stream and cuts it where it
  starts looping; checks a whole (unstreamed) answer the same way; records token usage from
  the ``AIMessage``'s ``usage_metadata``. A degenerate answer enters the graph's state trimmed
  (its first copies plus a marker) and without its tool calls, which ends the run (on a
  recovery step, ``PolicyConfig.recovery_step``, see ``after_model``).
- ``after_model``: checks each tool call the model asked for (repeated actions, the tool-call
  budget) before any runs; a stop answers every pending call with an error ``ToolMessage``
  (as the framework's own ``ToolCallLimitMiddleware`` does) and jumps to the end; a refused
  repeat (``PolicyConfig.recovery_step``) is answered the same way, alone, and the run goes on.
  After an answer cut on its recovery step it adds the nudge as a ``HumanMessage`` and jumps
  back to the model.
- ``wrap_tool_call``: records each result as progress; an error (or a cancellation) leaving a
  tool ends the run with a receipt.
- ``after_agent``: builds the receipt, records a stop by the framework's own call-limit
  middlewares as a limit, and hands the receipt to ``on_receipt``.

Streaming: a middleware sees no stream; the model call runs inside the framework. The
middleware adds a callback handler to the model for the call (``request.override(model=...)``
with the model's documented ``callbacks``), which sees each token as ``on_llm_new_token`` and,
at a finding, raises ``StreamCut`` out of the model's stream, which stops it (the HTTP response
is closed): the loop is cut within the delta in which a rule holds, and the middleware answers
for the call with the trimmed text and logs one line saying what repeated (WARNING, logger
``loopbreak.integrations.langchain``). ``StreamCut`` is a ``BaseException``, as a cancellation
is: LangChain's callback manager logs every ``Exception`` a callback raises ("Error in
<handler>.<event> callback: ...", ``langchain_core.callbacks.manager.handle_event``) before it
re-raises it, and lets any other exception through unlogged; and a retry or fallback middleware
between the model and this one (``except Exception``) does not take the cut for a failed call
and call the model again. The model streams when the agent is streamed (``stream_mode="messages"``,
``astream_events``) or was built with ``streaming=True``; otherwise the whole answer is checked
when the call returns, after it was generated in full. Under LangGraph's experimental
content-block protocol (``stream_events(version="v3")``) the model's ``_stream`` still reports
each token to ``on_llm_new_token``, as LangChain's chat models do; a model that implements only
the native event hook (``_stream_chat_model_events``, none of the pinned packages does) would be
checked when the call returns. docs/integrations/langchain.md
lists what no hook of LangChain 1.x lets a middleware see (e.g. ``GraphRecursionError``).

Put the middleware first in ``create_agent(middleware=[...])``: its ``wrap_*`` hooks are then the
outermost, so an error reaching them ends the run (inner retries and tool-error handlers had
their turn), and its ``after_model`` runs after the others.
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("langchain", "langchain")

import json
import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Optional, Union
from uuid import UUID

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
    hook_config,
)
from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager, Callbacks
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.outputs import ChatGenerationChunk, GenerationChunk
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command
from typing_extensions import NotRequired

from loopbreak._core import DEFAULT_KEEP, Rules
from loopbreak.agent.audit import AuditLog
from loopbreak.agent.decision import Decision
from loopbreak.agent.policy import PolicyConfig, StepPlan
from loopbreak.integrations._governance import (
    AgentRun,
    AgentVerifier,
    FrameworkErrors,
    Governance,
    ReceiptCallback,
)
from loopbreak.streaming.guard import CONTENT, Degeneration, Guarded, Piece

__all__ = ["LoopbreakMiddleware", "LoopbreakState", "StreamCut"]

_logger = logging.getLogger(__name__)

RUN_KEY = "loopbreak_run"
"""The state key holding the run's ``AgentRun`` (private to the middleware)."""

ModelResult = Union[ModelResponse[Any], AIMessage]
ToolResult = Union[ToolMessage, Command[Any]]

ERRORS = FrameworkErrors(approvals=(GraphInterrupt,), halts=(GraphBubbleUp,))
"""An interrupt pauses the run for a person; another bubble-up hands it to the parent graph
(no outcome to record)."""


class LoopbreakState(AgentState[Any]):
    """The agent state with the run's loopbreak record: untracked (never checkpointed) and
    private (neither input nor output)."""

    loopbreak_run: NotRequired[Annotated[AgentRun, UntrackedValue, PrivateStateAttr]]


class StreamCut(BaseException):
    """Raised out of a model's stream where its output starts looping, to stop the stream; the
    middleware that raised it answers for the model call with the trimmed text. A
    ``BaseException``, as a cancellation is (see the module docstring): it never reaches the
    caller, and LangChain does not log it as a callback's error."""

    def __init__(self, degeneration: Degeneration) -> None:
        super().__init__(degeneration.reason)
        self.degeneration = degeneration


class _StreamWatch(BaseCallbackHandler):
    """Sees one model call's tokens and stops the call where its output starts looping, by
    raising ``StreamCut`` out of the model's stream. The middleware tells the stop by
    ``degeneration`` being set, not by the exception: a middleware between it and the model
    may catch it (then the watch cuts a retried call at its first token)."""

    raise_error = True  # LangChain logs and swallows a callback's Exception unless this is set
    run_inline = True  # async runs: called in order on the event loop, not in a thread

    def __init__(self, rules: Optional[Rules], keep: int) -> None:
        super().__init__()
        self._pending: deque[Union[BaseMessage, str]] = deque()
        self.guard = Guarded(
            self._next_pending(), _pieces, on_degeneration="stop", rules=rules, keep=keep
        )
        self.tokens = 0
        self.message_id: Optional[str] = None

    def _next_pending(self) -> Iterator[Union[BaseMessage, str]]:
        # The guard pulls one item per token pushed in ``on_llm_new_token``.
        while True:
            yield self._pending.popleft()

    @property
    def degeneration(self) -> Optional[Degeneration]:
        return self.guard.degeneration

    def on_llm_new_token(
        self,
        token: Union[str, list[Union[str, dict[str, Any]]]],
        *,
        chunk: Optional[Union[GenerationChunk, ChatGenerationChunk]] = None,
        run_id: UUID,
        parent_run_id: Optional[UUID] = None,
        tags: Optional[list[str]] = None,
        **kwargs: Any,
    ) -> None:
        self.tokens += 1
        if isinstance(chunk, ChatGenerationChunk):
            self.message_id = chunk.message.id or self.message_id
            self._pending.append(chunk.message)
        elif isinstance(token, str):
            self._pending.append(token)
        else:
            return
        try:
            next(self.guard)
        except StopIteration:  # a finding, now or in an earlier call (a retried call)
            assert self.degeneration is not None
            raise StreamCut(self.degeneration) from None


class LoopbreakMiddleware(AgentMiddleware[LoopbreakState, Any, Any]):
    """Governs each run of a LangChain v1 agent with a fresh ``AgentRun``. The options are
    those of every loopbreak agent adapter (``Governance``): the verifier's ``run.state`` is the
    agent's last state; ``audit`` is shared by the runs. ``last_run`` is the most recently
    started run."""

    state_schema = LoopbreakState

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
        self.last_run: Optional[AgentRun] = None

    # Node hooks: run once per step (or run) in the graph; the async ones do the same work.

    def before_agent(self, state: LoopbreakState, runtime: Runtime[Any]) -> dict[str, Any]:
        return {RUN_KEY: self._new_run(runtime)}

    async def abefore_agent(self, state: LoopbreakState, runtime: Runtime[Any]) -> dict[str, Any]:
        return self.before_agent(state, runtime)

    @hook_config(can_jump_to=["end"])
    def before_model(
        self, state: LoopbreakState, runtime: Runtime[Any]
    ) -> Optional[dict[str, Any]]:
        update: dict[str, Any] = {}
        run = _run_of(state)
        if run is None:  # resumed from a checkpoint: the record is not checkpointed
            run = update[RUN_KEY] = self._new_run(runtime)
        plan = run.begin_step()
        if plan.decision.stopped:
            return {**update, **_stop_update(plan.decision, ())}
        return update or None

    @hook_config(can_jump_to=["end"])
    async def abefore_model(
        self, state: LoopbreakState, runtime: Runtime[Any]
    ) -> Optional[dict[str, Any]]:
        return self.before_model(state, runtime)

    @hook_config(can_jump_to=["end", "model"])
    def after_model(self, state: LoopbreakState, runtime: Runtime[Any]) -> Optional[dict[str, Any]]:
        run = _run_of(state)
        if run is None or run.degeneration is not None or not run.step_model_calls:
            return None  # a degenerate answer carries no tool calls: the run ends
        nudge = run.take_nudge()
        if nudge is not None:  # the answer was cut on its recovery step: ask again
            return {"messages": [HumanMessage(content=nudge)], "jump_to": "model"}
        message = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
        if message is None:
            return None
        if not message.tool_calls:
            run.finished_naturally()
            return None
        refused: list[ToolMessage] = []
        for call in message.tool_calls:  # in order, before any of them runs
            decision = run.check_tool(call["name"], call["args"])
            if decision.stopped:
                return _stop_update(decision, message.tool_calls)
            if decision.refused:
                refused.append(_not_run(call, decision))
        return {"messages": refused} if refused else None

    @hook_config(can_jump_to=["end", "model"])
    async def aafter_model(
        self, state: LoopbreakState, runtime: Runtime[Any]
    ) -> Optional[dict[str, Any]]:
        return self.after_model(state, runtime)

    def after_agent(self, state: LoopbreakState, runtime: Runtime[Any]) -> None:
        run = _run_of(state)
        if run is not None:
            _record_framework_stop(run, state)
            _finish(run, state)

    async def aafter_agent(self, state: LoopbreakState, runtime: Runtime[Any]) -> None:
        self.after_agent(state, runtime)

    # Wrap hooks: around each model call and each tool call.

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResult:
        run = _run_of(request.state)
        if run is None:
            return handler(request)
        watch = _StreamWatch(self.governance.rules, self.governance.keep)
        try:
            response = handler(_prepared(request, run.plan, watch))
        except BaseException as error:
            if watch.degeneration is not None:  # the watch cut the stream
                return _cut(run, request, watch)
            _fail(run, request.state, error, where="model")
            raise
        return _checked(run, request, response, watch)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResult:
        run = _run_of(request.state)
        if run is None:
            return await handler(request)
        watch = _StreamWatch(self.governance.rules, self.governance.keep)
        try:
            response = await handler(_prepared(request, run.plan, watch))
        except BaseException as error:
            if watch.degeneration is not None:  # the watch cut the stream
                return _cut(run, request, watch)
            _fail(run, request.state, error, where="model")
            raise
        return _checked(run, request, response, watch)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolResult],
    ) -> ToolResult:
        try:
            result = handler(request)
        except BaseException as error:
            _tool_failed(request, error)
            raise
        return _tool_ran(request, result)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        try:
            result = await handler(request)
        except BaseException as error:
            _tool_failed(request, error)
            raise
        return _tool_ran(request, result)

    # Shared by the sync and async hooks.

    def _new_run(self, runtime: Runtime[Any]) -> AgentRun:
        # The run id the caller passed in the config (LangSmith's), else a fresh one.
        info = getattr(runtime, "execution_info", None)
        run_id = getattr(info, "run_id", None)
        run = self.governance.new_run(ERRORS, str(run_id) if run_id else uuid.uuid4().hex)
        self.last_run = run
        return run


def _checked(
    run: AgentRun, request: ModelRequest[Any], response: ModelResponse[Any], watch: _StreamWatch
) -> ModelResponse[Any]:
    """Records the answer; an unstreamed answer is checked whole (a streamed one was checked
    token by token) and, if it loops, replaced by its trimmed text."""
    if watch.degeneration is not None:  # an inner middleware answered for the cut call
        return ModelResponse(result=[_cut(run, request, watch)])
    index, message = _ai_message(response.result)
    _model_answered(run, message, request.model)
    if message is None or watch.tokens:
        return response
    degeneration = run.check_answer(message, _pieces)
    if degeneration is None:
        return response
    trimmed = AIMessage(
        content=degeneration.persist_text,
        id=message.id,
        name=message.name,
        response_metadata=message.response_metadata,
        usage_metadata=message.usage_metadata,
    )
    result = [*response.result[:index], trimmed, *response.result[index + 1 :]]
    return ModelResponse(result=result, structured_response=response.structured_response)


def _cut(run: AgentRun, request: ModelRequest[Any], watch: _StreamWatch) -> AIMessage:
    """The answer of a stream stopped at a loop: its trimmed text, no tool calls (they were
    cut too). A cut stream reports no usage."""
    degeneration = watch.degeneration
    assert degeneration is not None  # the watch stops a stream only at a finding
    _logger.warning("stopped the model's stream: %s", degeneration.reason)
    _model_answered(run, None, request.model)
    run.stream_ended(watch.guard)
    return AIMessage(content=degeneration.persist_text, id=watch.message_id)


def _model_answered(run: AgentRun, message: Optional[AIMessage], model: BaseChatModel) -> None:
    usage = None if message is None else message.usage_metadata
    if message is None or usage is None:
        run.record_usage(type(model).__name__, 0, 0)  # a call with no usage reported
        return
    name = message.response_metadata.get("model_name") or type(model).__name__
    run.record_usage(str(name), usage["input_tokens"], usage["output_tokens"])


def _tool_ran(request: ToolCallRequest, result: ToolResult) -> ToolResult:
    run = _run_of(request.state)
    if run is not None and isinstance(result, ToolMessage):
        failed = result.status == "error"  # the tool node's answer for a tool's error
        run.record_tool_result(request.tool_call["name"], result.content, failed=failed)
    return result


def _tool_failed(request: ToolCallRequest, error: BaseException) -> None:
    run = _run_of(request.state)
    if run is not None:
        _fail(run, request.state, error, where=request.tool_call["name"])


def _fail(run: AgentRun, state: AgentState[Any], error: BaseException, where: str) -> None:
    run.failed(error, where=where)
    _finish(run, state)


def _finish(run: AgentRun, state: AgentState[Any]) -> None:
    run.state = state
    run.messages = list(state.get("messages", ()))
    run.finish()


def _record_framework_stop(run: AgentRun, state: AgentState[Any]) -> None:
    """Records a stop by the framework's ``ModelCallLimitMiddleware`` (a jump to the end
    before a model call) or ``ToolCallLimitMiddleware`` (after one). Their limits are not
    visible to other middleware, so the count at which they stopped is both value and limit."""
    if run.outcome_recorded:
        return
    if not run.step_model_calls and "run_model_call_count" in state:
        calls = run.model_calls
        run.record_limit("model_call_limit", value=calls, limit=calls)
    elif run.step_model_calls and "run_tool_call_count" in state:
        calls = run.policy.usage().tool_calls
        run.record_limit("tool_call_limit", value=calls, limit=calls)


def _run_of(state: object) -> Optional[AgentRun]:
    """The run record in a hook's state (None if the run started before this middleware
    governed it, e.g. resumed from a checkpoint, which does not hold the record)."""
    run = state.get(RUN_KEY) if isinstance(state, Mapping) else None
    return run if isinstance(run, AgentRun) else None


def _stop_update(decision: Decision, pending: Iterable[ToolCall]) -> dict[str, Any]:
    """Ends the run the framework's way: every pending tool call answered (so the history
    stays valid and none runs), a final message, and a jump to the end."""
    messages: list[AnyMessage] = [_not_run(call, decision) for call in pending]
    messages.append(AIMessage(content=decision.message or ""))
    return {"messages": messages, "jump_to": "end"}


def _not_run(call: ToolCall, decision: Decision) -> ToolMessage:
    """The answer of a tool call loopbreak did not let run: the tool sees nothing of it."""
    return ToolMessage(
        content=f"Not run. {decision.message or ''}",
        tool_call_id=call["id"] or "",
        name=call["name"],
        status="error",
    )


def _prepared(
    request: ModelRequest[Any], plan: Optional[StepPlan], watch: _StreamWatch
) -> ModelRequest[Any]:
    """The request with the step's addendum on the system message, no tools under the
    lockdown, and the watch on the model's callbacks."""
    model = request.model
    watched = model.model_copy(update={"callbacks": _with_handler(model.callbacks, watch)})
    if plan is None or (not plan.addendum and plan.tools_enabled):
        return request.override(model=watched)
    system = _with_addendum(request.system_message, plan.addendum)
    if plan.tools_enabled:
        return request.override(model=watched, system_message=system)
    return request.override(model=watched, system_message=system, tools=[], tool_choice=None)


def _with_handler(callbacks: Callbacks, handler: BaseCallbackHandler) -> Callbacks:
    """The model's own callbacks (a list or a manager) plus ``handler``."""
    if callbacks is None:
        return [handler]
    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        manager.add_handler(handler, inherit=False)
        return manager
    return [*callbacks, handler]


def _with_addendum(system: Optional[SystemMessage], addendum: str) -> Optional[SystemMessage]:
    if not addendum:
        return system
    if system is None:
        return SystemMessage(content=addendum)
    if isinstance(system.content, str):
        text = f"{system.content}\n\n{addendum}" if system.content else addendum
        return SystemMessage(content=text)
    return SystemMessage(content=[*system.content, {"type": "text", "text": addendum}])


def _ai_message(messages: Sequence[BaseMessage]) -> tuple[int, Optional[AIMessage]]:
    for index, message in enumerate(messages):
        if isinstance(message, AIMessage):
            return index, message
    return -1, None


def _pieces(item: Union[BaseMessage, str]) -> list[Piece]:
    """The text of a streamed token, a streamed chunk or a whole answer: its text, and each
    tool call's arguments as a source of its own. Called per token: the common chunk (text
    only) costs one ``Piece``."""
    if isinstance(item, str):
        return [Piece(CONTENT, item)]
    content = item.content
    pieces = [Piece(CONTENT, content if isinstance(content, str) else str(item.text))]
    if isinstance(item, AIMessageChunk):
        for position, chunk in enumerate(item.tool_call_chunks):
            index = chunk.get("index")
            source = f"tool_calls[{position if index is None else index}].arguments"
            pieces.append(Piece(source, chunk.get("args") or "", chunk.get("name")))
    elif isinstance(item, AIMessage):
        for position, call in enumerate(item.tool_calls):
            arguments = json.dumps(call["args"], ensure_ascii=False)
            pieces.append(Piece(f"tool_calls[{position}].arguments", arguments, call["name"]))
    return pieces
