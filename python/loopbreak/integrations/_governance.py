"""One governed run, as the framework adapters see it: the only place they call ``RunPolicy``
and ``RunEvidence``.

A framework calls the adapter at its own hook points; the adapter translates each into one of
these calls, so the policy's vocabulary (steps, tool calls, progress, usage, stops) stays in this
module and the adapters stay a mapping of hook names:

- ``begin_step()`` before each model call: closes the previous step with the progress seen
  since (``RunPolicy.after_step``), then asks for the next one (``RunPolicy.before_step``);
- ``check_tool(name, arguments)`` before a tool runs;
- ``record_progress(signal)`` when a tool returns, ``record_usage(...)`` after a model call;
- ``finish()`` once, however the run ended, for the receipt.

After a stop the run is over: ``check_tool`` keeps answering with the stop decision instead of
asking the policy again, so a framework that runs several tool calls of one step still gets an
answer for each.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from loopbreak.agent.actions import Arguments
from loopbreak.agent.audit import AuditLog
from loopbreak.agent.decision import Decision
from loopbreak.agent.policy import PolicyConfig, RunPolicy, StepPlan
from loopbreak.agent.receipt import Receipt, RunEvidence, Verifier
from loopbreak.streaming.guard import Degeneration
from loopbreak.telemetry import record_run

ReceiptCallback = Callable[[Receipt], None]

LOCKDOWN_TOOL_ANSWER = "Tools are disabled on the final step: answer from what you have."
"""What a tool call on a locked-down final step gets instead of running (the step offered no
tools; a model may call one anyway)."""

DEGENERATION_MESSAGE = (
    "Stopped by loopbreak: the answer degenerated into a repetition loop and was cut. "
    "Rephrase the request or start a new run with a narrower scope."
)


class GovernedRun:
    """The policy, the evidence and, once ``finish()`` was called, the receipt of one run.

    ``messages`` is the framework's message history when the run ended, kept also when a limit,
    a stop or an error ended it (for pydantic-ai a list of ``ModelMessage``, for the Agents SDK
    the input list a next run continues from); the adapter sets it. ``error`` is the exception
    that ended the run, if one did.
    """

    def __init__(
        self,
        config: Optional[PolicyConfig],
        *,
        verifier: Optional[Verifier],
        audit: Optional[AuditLog],
        on_receipt: Optional[ReceiptCallback],
        run_id: Optional[str] = None,
    ) -> None:
        self.policy = RunPolicy(config, run_id=run_id, audit=audit)
        self.evidence = RunEvidence(policy=self.policy)
        self.receipt: Optional[Receipt] = None
        self.degeneration: Optional[Degeneration] = None
        self.messages: list[Any] = []
        self.error: Optional[BaseException] = None
        self._verifier = verifier
        self._on_receipt = on_receipt
        self._plan: Optional[StepPlan] = None
        self._progress: list[str] = []

    @property
    def stop(self) -> Optional[Decision]:
        """The policy's stop decision, or None while the run may go on."""
        return self.policy.stop

    @property
    def plan(self) -> Optional[StepPlan]:
        """The plan of the current step (None before the first)."""
        return self._plan

    def begin_step(self, system_prompt: str = "") -> StepPlan:
        """Ends the open step with the progress recorded since it began, then plans the next.
        A stop (from either) comes back as a plan whose decision is the stop: the model must
        not be called."""
        if self._plan is not None and not self._plan.decision.stopped:
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

    def record_progress(self, signal: str) -> None:
        """A tool result of the current step (a signal counts once per run)."""
        self._progress.append(signal)

    def record_usage(self, model: str, input_tokens: int, output_tokens: int) -> None:
        self.policy.record_usage(model, input_tokens, output_tokens)

    def record_degeneration(self, degeneration: Degeneration) -> None:
        """The stream guard cut the model's output; the run ends here."""
        self.degeneration = degeneration
        self.evidence.record_degeneration(degeneration)

    @property
    def ended_by_loopbreak(self) -> bool:
        """True when the policy stopped the run or the guard cut its output."""
        return self.policy.stop is not None or self.degeneration is not None

    def user_message(self) -> str:
        """What to show a person for the stop (empty while the run was not stopped)."""
        if self.policy.stop is not None:
            return self.policy.stop.message or ""
        return DEGENERATION_MESSAGE if self.degeneration is not None else ""

    def finish(self) -> Receipt:
        """Builds the receipt (once; later calls return it) and hands it to ``on_receipt``."""
        if self.receipt is None:
            self.receipt = self.evidence.receipt(self._verifier)
            record_run(self.receipt, None if self.stop is None else self.stop.reason.value)
            if self._on_receipt is not None:
                self._on_receipt(self.receipt)
        return self.receipt
