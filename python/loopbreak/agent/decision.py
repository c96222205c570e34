"""What the run policy decided at one check, why, and the number that decided it.

Every check of a ``RunPolicy`` (before a step, before a tool call, after a step) returns one
``Decision`` and records it in the run's audit log. A decision names what it measured
(``check``), the measured ``value`` and the ``limit`` it was held against, so a reader of the
log never has to recompute why a run stopped.

Semantics of ``value`` and ``limit`` (the same for every check): ``value`` is what the run has
already used (steps started, tokens spent, identical calls made, steps without progress, answers
that looped) and a check stops once ``value >= limit``: the budget is spent, so the next step,
call or token would go over it. The kill switch is measured the same way: an engaged switch is
``value`` 1 against ``limit`` 1; so is the first answer that loops (an answer may not loop).

A stop's ``reason`` names the setting that stopped the run, as the configuration spells it
(``max_steps``, ``max_total_tokens``, ...), or the condition (``loop_detected``, ``no_progress``,
``kill_switch``); ``check`` says what was measured (``steps``, ``total_tokens``, ...). A stop
also carries ``message``: one line for the people waiting on the run, saying why it stopped and
what to do next (``PolicyConfig.stop_messages``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any, Optional, Union

Number = Union[int, float]


class DecisionKind(str, Enum):
    """The outcomes of a check. ``REFUSE`` is a recovery step (``PolicyConfig.recovery_step``):
    the tool call is not run, or the looping answer is cut, the model is told why
    (``message``) and the run goes on."""

    ALLOW = "allow"
    WARN = "warn"
    REFUSE = "refuse"
    STOP = "stop"


class Reason(str, Enum):
    """Why a check decided what it did. The first four allow or warn; every other one is a stop
    (or, for ``loop_detected`` and ``degeneration``, a refusal on a recovery step): the step
    cap, the loop conditions (a repeated action, no progress, an answer that degenerated into a
    repetition loop), one member per budget (named like its ``Budgets`` field) and the kill
    switch."""

    WITHIN_LIMITS = "within_limits"
    STEPS_RUNNING_OUT = "steps_running_out"
    FINAL_STEP = "final_step"
    FINAL_STEP_LOCKDOWN = "final_step_lockdown"
    MAX_STEPS = "max_steps"
    LOOP_DETECTED = "loop_detected"
    NO_PROGRESS = "no_progress"
    DEGENERATION = "degeneration"
    MAX_SECONDS = "max_seconds"
    MAX_COST = "max_cost"
    MAX_INPUT_TOKENS = "max_input_tokens"
    MAX_OUTPUT_TOKENS = "max_output_tokens"
    MAX_TOTAL_TOKENS = "max_total_tokens"
    MAX_TOOL_CALLS = "max_tool_calls"
    KILL_SWITCH = "kill_switch"


class Check(str, Enum):
    """What a decision measured: the step count, repeated actions, progress, looping answers,
    or one budget."""

    STEPS = "steps"
    REPEATED_ACTION = "repeated_action"
    PROGRESS = "progress"
    LOOPING_ANSWER = "looping_answer"
    SECONDS = "seconds"
    COST = "cost"
    INPUT_TOKENS = "input_tokens"
    OUTPUT_TOKENS = "output_tokens"
    TOTAL_TOKENS = "total_tokens"
    TOOL_CALLS = "tool_calls"
    KILL_SWITCH = "kill_switch"


BUDGET_STOPS: Mapping[Check, Reason] = MappingProxyType(
    {
        Check.SECONDS: Reason.MAX_SECONDS,
        Check.COST: Reason.MAX_COST,
        Check.INPUT_TOKENS: Reason.MAX_INPUT_TOKENS,
        Check.OUTPUT_TOKENS: Reason.MAX_OUTPUT_TOKENS,
        Check.TOTAL_TOKENS: Reason.MAX_TOTAL_TOKENS,
        Check.TOOL_CALLS: Reason.MAX_TOOL_CALLS,
    }
)
"""The stop reason of each budget: ``decision.reason in BUDGET_STOPS.values()`` matches any
budget stop."""


@dataclass(frozen=True)
class Decision:
    """One decision of a run's policy: an audit event.

    ``seq`` numbers the run's decisions from 0 in the order they were made; ``step`` is the
    zero-based step they belong to; ``action_key`` is the normalized tool call a tool-call check
    looked at (None for step checks); ``elapsed`` is seconds since the policy was created, by the
    policy's clock. ``limit`` is None when the check has no limit configured. ``message`` is the
    one line for people of a stop, or for the model of a refused call (None for allow and
    warn, which guide the model through the step's prompt instead).
    """

    run_id: str
    seq: int
    step: int
    kind: DecisionKind
    reason: Reason
    check: Check
    value: Number
    limit: Optional[Number]
    action_key: Optional[str]
    elapsed: float
    message: Optional[str]

    @property
    def stopped(self) -> bool:
        """True for a stop: the run must not take the step or make the call."""
        return self.kind is DecisionKind.STOP

    @property
    def refused(self) -> bool:
        """True for a refused tool call: do not run it, answer it with ``message``."""
        return self.kind is DecisionKind.REFUSE

    def to_dict(self) -> dict[str, Any]:
        """The decision as plain JSON values; enums become their string values."""
        return {
            "run_id": self.run_id,
            "seq": self.seq,
            "step": self.step,
            "decision": self.kind.value,
            "reason": self.reason.value,
            "check": self.check.value,
            "value": self.value,
            "limit": self.limit,
            "action_key": self.action_key,
            "elapsed": self.elapsed,
            "message": self.message,
        }
