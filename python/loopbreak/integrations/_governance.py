"""One governed agent run, as the framework adapters see it: the only place they call
``RunPolicy``, ``RunEvidence`` and the stream guard.

A framework calls the adapter at its own hook points; the adapter translates each into one of
these calls, so the policy's vocabulary (steps, tool calls, progress, usage, answers, errors,
stops) stays in this module and the adapters stay a mapping of hook names:

- ``begin_step()`` before each model call: closes the previous step with the progress seen
  since (``RunPolicy.after_step``), then asks for the next one (``RunPolicy.before_step``);
- ``check_tool(name, arguments)`` before a tool runs; ``record_tool_result`` when it returns;
- ``guard_stream(events, pieces)`` around a streamed answer, ``check_answer(answer, pieces)``
  on a whole one: the same rules either way. A loop ends the run, or, on a recovery step
  (``PolicyConfig.recovery_step``), leaves a nudge the adapter sends the model as the next
  message (``take_nudge()``) before its next model call; either way the answer enters the
  history trimmed (``cut``);
- ``tool_raised(tool, error)`` when a tool call raised: one of the framework's
  ``tool_errors`` is a failed result, like ``record_tool_result(..., failed=True)``;
- ``record_usage(...)`` after a model call, ``record_limit(...)`` for the framework's own
  usage limits, ``finished_naturally()`` when the model answered by itself;
- ``failed(error)`` for an exception that ended the run, mapped to evidence with the
  framework's own exception types (``FrameworkErrors``);
- ``finish()`` once, however the run ended: the receipt, handed to ``on_receipt``.

"Run" here is one agent run (many model calls and tool calls), as in ``RunPolicy``; one model
answer is a turn, as ``loopbreak.streaming.persist`` saves it (``save_turn``, the ``turns``
table).

After a stop the run is over: ``check_tool`` keeps answering with the stop decision instead of
asking the policy again, so a framework that runs several tool calls of one step still gets an
answer for each.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterable, Iterable
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar, Union

from loopbreak._core import Rules, trim
from loopbreak.agent import _validate
from loopbreak.agent.actions import Arguments
from loopbreak.agent.audit import AuditLog
from loopbreak.agent.decision import Decision, Number, Reason
from loopbreak.agent.policy import DEFAULT_STOP_MESSAGES, PolicyConfig, RunPolicy, StepPlan
from loopbreak.agent.receipt import Receipt, RunEvidence
from loopbreak.streaming.guard import AsyncGuarded, Degeneration, Guarded, Piece
from loopbreak.telemetry import record_run

T = TypeVar("T")
ReceiptCallback = Callable[[Receipt], object]
AgentVerifier = Callable[["AgentRun"], bool]
"""Checks a finished run's result at its destination, given the run (``run.state`` is the
framework's state at the end, ``run.messages`` its history)."""
Pieces = Callable[[T], Iterable[Piece]]

LOCKDOWN_TOOL_ANSWER = "Tools are disabled on the final step: answer from what you have."
"""What a tool call on a locked-down final step gets instead of running (the step offered no
tools; a model may call one anyway)."""

DEGENERATION_MESSAGE = DEFAULT_STOP_MESSAGES[Reason.DEGENERATION]

_ABORTS = (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit)


@dataclass(frozen=True)
class FrameworkErrors:
    """What a framework's exceptions mean for the receipt, by type (subclasses match):

    - ``halts``: a stop the policy already recorded (the framework's way of carrying it out),
      or a halt with no outcome to record (the receipt stays as the evidence says);
    - ``approvals``: the run pauses for a person (checked before ``halts``: a pause may be a
      kind of halt);
    - ``timeouts``, beside the builtin ``TimeoutError`` (also as an error's ``__cause__``);
    - ``aborts``, beside cancellation, ``KeyboardInterrupt`` and ``GeneratorExit``;
    - ``tool_errors``: what a tool raises that the framework hands the model as the call's
      result (the run goes on): a failed result, no progress (``AgentRun.tool_raised``).

    Any other error is the failure of the tool or model call in flight, when the adapter knows
    which one; otherwise no outcome (UNCERTAIN).
    """

    halts: tuple[type[BaseException], ...] = ()
    approvals: tuple[type[BaseException], ...] = ()
    timeouts: tuple[type[BaseException], ...] = ()
    aborts: tuple[type[BaseException], ...] = ()
    tool_errors: tuple[type[BaseException], ...] = ()


class Governance:
    """The options every framework adapter takes, checked once: ``config`` (the policy's
    limits; one fresh ``RunPolicy`` per run), ``verifier`` (called with the ``AgentRun`` when a
    finished run's receipt is built), ``audit`` (receives every run's decisions; default one
    in-memory log per run), ``on_receipt`` (called with each receipt), ``rules`` and ``keep``
    (the stream guard's rules and the copies of a loop kept in the trimmed text)."""

    def __init__(
        self,
        config: Optional[PolicyConfig],
        *,
        verifier: Optional[AgentVerifier],
        audit: Optional[AuditLog],
        on_receipt: Optional[ReceiptCallback],
        rules: Optional[Rules],
        keep: int,
    ) -> None:
        self.config = _validate.instance_or_none("config", config, PolicyConfig)
        self.verifier = _validate.callable_or_none("verifier", verifier)
        self.audit = _validate.instance_or_none("audit", audit, AuditLog)
        self.on_receipt = _validate.callable_or_none("on_receipt", on_receipt)
        self.rules = _validate.instance_or_none("rules", rules, Rules)
        self.keep = _validate.count("keep", keep, 1)

    def new_run(self, errors: FrameworkErrors, run_id: Optional[str] = None) -> AgentRun:
        return AgentRun(self, errors, run_id)


class AgentRun:
    """The policy, the evidence, the answer guard and, once ``finish()`` was called, the
    receipt of one agent run.

    ``messages`` is the framework's message history when the run ended, kept also when a limit,
    a stop or an error ended it (for pydantic-ai a list of ``ModelMessage``, for the Agents SDK
    the input list a next run continues from, for LangChain the state's messages); ``state``
    is the framework's own state at the end (LangChain's agent state, pydantic-ai's
    ``RunContext``, the Agents SDK's ``RunContextWrapper``); the adapter sets both. ``error``
    is the exception that ended the run, if one did.
    """

    def __init__(
        self, governance: Governance, errors: FrameworkErrors, run_id: Optional[str]
    ) -> None:
        self.policy = RunPolicy(governance.config, run_id=run_id, audit=governance.audit)
        self.evidence = RunEvidence(policy=self.policy)
        self.receipt: Optional[Receipt] = None
        self.degeneration: Optional[Degeneration] = None
        self.cut: Optional[Degeneration] = None
        self._nudge: Optional[str] = None
        self.messages: list[Any] = []
        self.state: Any = None
        self.error: Optional[BaseException] = None
        self.model_calls = 0
        self.step_model_calls = 0  # of the current step
        self._governance = governance
        self._errors = errors
        self._plan: Optional[StepPlan] = None
        self._progress: list[str] = []
        self._outcome_recorded = False
        # Parallel tool calls may run in threads: two may fail at once and both try to finish.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        # LangGraph streams every channel: this is what stream_mode="values" shows of the run.
        return f"<loopbreak run {self.policy.run_id} step {self.policy.step}>"

    @property
    def stop(self) -> Optional[Decision]:
        """The policy's stop decision, or None while the run may go on."""
        return self.policy.stop

    @property
    def plan(self) -> Optional[StepPlan]:
        """The plan of the current step (None before the first)."""
        return self._plan

    @property
    def ended_by_loopbreak(self) -> bool:
        """True when the policy stopped the run or the guard cut its output."""
        return self.policy.stop is not None or self.degeneration is not None

    # Steps and tool calls.

    def begin_step(self, system_prompt: str = "") -> StepPlan:
        """Ends the open step with the progress recorded since it began, then plans the next.
        A stop (from either) comes back as a plan whose decision is the stop: the model must
        not be called."""
        if self.policy.stop is not None:  # decided at a tool call: the run is over
            self._plan = StepPlan(self.policy.stop, system_prompt, "", tools_enabled=False)
            return self._plan
        self.step_model_calls = 0
        self.cut = None
        if self._plan is not None:
            ended = self.policy.after_step(self._progress)
            self._progress = []
            if ended.stopped:
                self._plan = StepPlan(ended, system_prompt, "", tools_enabled=False)
                return self._plan
        self._plan = self.policy.before_step(system_prompt)
        return self._plan

    def next_step_offers_tools(self) -> bool:
        """Whether the step about to be planned keeps its tools: False only for the final step
        under ``final_step_lockdown``. For frameworks that choose the tools of a step before
        the hook that plans it runs."""
        config = self.policy.config
        step = 0 if self.policy.step is None else self.policy.step + 1
        return not (config.final_step_lockdown and step == config.max_steps - 1)

    def check_tool(self, tool: str, arguments: Arguments) -> Decision:
        """The policy's decision on one tool call; after a stop, that stop."""
        if self.policy.stop is not None:
            return self.policy.stop
        return self.policy.check_tool_call(tool, arguments)

    def record_tool_result(self, tool: str, result: object, *, failed: bool = False) -> None:
        """A tool result of the current step, as a progress signal (one counts once per run).
        An error the tool answered with (``failed``) is no progress: a tool that keeps failing
        leaves its steps without progress, however each error is worded, so the same error
        three times in a row is three steps without progress (``no_progress_window``)."""
        if not failed:
            self._progress.append(f"{tool}: {result}")

    def tool_raised(self, tool: str, error: BaseException) -> bool:
        """A tool call raised ``error``. True if it is one of the framework's ``tool_errors``
        (the framework hands it to the model as the call's result and the run goes on): it is
        recorded as a failed result. False for any other error, which may end the run
        (``failed``)."""
        if not isinstance(error, self._errors.tool_errors):
            return False
        self.record_tool_result(tool, error, failed=True)
        return True

    def record_usage(self, model: str, input_tokens: int, output_tokens: int) -> None:
        """One model call and its token usage."""
        self.model_calls += 1
        self.step_model_calls += 1
        self.policy.record_usage(model, input_tokens, output_tokens)

    # Answers: streamed or whole, the same rules.

    def guard_stream(self, events: AsyncIterable[T], pieces: Pieces[T]) -> AsyncGuarded[T]:
        """The framework's stream of one answer, guarded: it stops at a loop (close it, then
        call ``stream_ended``)."""
        governance = self._governance
        return AsyncGuarded(
            events, pieces, on_degeneration="stop", rules=governance.rules, keep=governance.keep
        )

    def stream_ended(
        self, guarded: Union[Guarded[Any], AsyncGuarded[Any]]
    ) -> Optional[Degeneration]:
        """Records the loop a guarded stream stopped at, if it did (see ``check_answer``)."""
        if guarded.degeneration is not None:
            self._answer_looped(guarded.degeneration)
        return guarded.degeneration

    def check_answer(self, answer: T, pieces: Pieces[T]) -> Optional[Degeneration]:
        """A whole (unstreamed) answer through the same guard as a stream: the loop it holds,
        or None. A loop is the step's ``cut`` (the adapter keeps the answer trimmed) and the
        policy's to decide: a stop ends the run (``degeneration``); a recovery step leaves a
        nudge for the model (``take_nudge()``)."""
        governance = self._governance
        guard = Guarded(
            iter([answer]),
            pieces,
            on_degeneration="stop",
            rules=governance.rules,
            keep=governance.keep,
        )
        for _ in guard:
            pass
        if guard.degeneration is not None:
            self._answer_looped(guard.degeneration)
        return guard.degeneration

    def trimmed(self, text: str) -> str:
        """``text`` with a loop cut to its first copies plus a marker (unchanged if clean)."""
        return trim(text, self._governance.keep, self._governance.rules).text

    def take_nudge(self) -> Optional[str]:
        """The one line to send the model as the next message, once, after an answer cut on
        its recovery step (what it repeated, what to do instead); None when there is none.
        The adapter sends it and calls the model again, the framework's way."""
        nudge, self._nudge = self._nudge, None
        return nudge

    def _answer_looped(self, degeneration: Degeneration) -> None:
        self.cut = degeneration
        if self.policy.stop is None:  # a run already stopped has nothing left to decide
            decision = self.policy.check_looping_answer(degeneration.finding.block)
            if decision.refused:
                self._nudge = decision.message
                return
        self._degenerated(degeneration)

    def _degenerated(self, degeneration: Degeneration) -> None:
        self.degeneration = degeneration
        self._outcome_recorded = True
        self.evidence.record_degeneration(degeneration)

    # How the run ended.

    @property
    def outcome_recorded(self) -> bool:
        """Whether evidence of how the run ended is in (a stop, a loop, a finish, an error)."""
        return self._outcome_recorded or self.policy.stop is not None

    def finished_naturally(self) -> None:
        """The model answered by itself (not after a loopbreak stop or cut). A run that ends
        with a nudge not sent (a framework path that cannot call the model again) ends with
        its cut answer, as without a recovery step."""
        if self._nudge is not None and self.cut is not None:
            self._nudge = None
            self._degenerated(self.cut)
        if not self.outcome_recorded:
            self._outcome_recorded = True
            self.evidence.record_natural_finish()

    def record_limit(self, name: str, *, value: Number, limit: Number) -> None:
        """The framework's own usage limit ended the run (a bounded stop)."""
        self._outcome_recorded = True
        self.evidence.record_limit(name, value=value, limit=limit)

    def failed(
        self, error: BaseException, *, where: Optional[str] = None, timed_out: bool = False
    ) -> None:
        """Records how ``error`` ended the run. ``where`` names the tool (or ``"model"``) whose
        call raised it, when the adapter knows; ``timed_out`` is the framework's own judgement
        that a deadline ended it."""
        self.error = error
        errors = self._errors
        if isinstance(error, errors.approvals):
            # The run pauses for a person; nothing here says who or until when.
            self.evidence.record_approval_request()
        elif self.outcome_recorded or isinstance(error, errors.halts):
            return  # loopbreak's stop or cut is the evidence; a framework's halt names none
        elif timed_out or _is_timeout(error, errors.timeouts):
            self.evidence.record_timeout(error)
        elif isinstance(error, (*_ABORTS, *errors.aborts)):
            self.evidence.record_user_abort(type(error).__name__)
        elif where is not None:
            self.evidence.record_tool_failure(where, error)
        else:
            return  # nothing says how it ended: the receipt is UNCERTAIN
        self._outcome_recorded = True

    def user_message(self) -> str:
        """What to show a person for the stop (empty while the run was not stopped)."""
        if self.policy.stop is not None:
            return self.policy.stop.message or ""
        return DEGENERATION_MESSAGE if self.degeneration is not None else ""

    def finish(self) -> Receipt:
        """Builds the receipt (once; later calls return it) and hands it to ``on_receipt``:
        every run's end goes through here."""
        with self._lock:
            if self.receipt is not None:
                return self.receipt
            verifier = self._governance.verifier
            self.receipt = self.evidence.receipt(
                None if verifier is None else (lambda: verifier(self))
            )
            record_run(self.receipt, None if self.stop is None else self.stop.reason.value)
        on_receipt = self._governance.on_receipt
        if on_receipt is not None:
            on_receipt(self.receipt)
        return self.receipt


def _is_timeout(error: BaseException, timeouts: tuple[type[BaseException], ...]) -> bool:
    # The Agents SDK raises a tool's error as a UserError caused by it.
    kinds: tuple[type[BaseException], ...] = (TimeoutError, asyncio.TimeoutError, *timeouts)
    return isinstance(error, kinds) or isinstance(error.__cause__, kinds)
