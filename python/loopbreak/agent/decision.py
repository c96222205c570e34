"""What the run policy decided at one check, why, and the number that decided it.

Every check of a ``RunPolicy`` (before a step, before a tool call, after a step) returns one
``Decision`` and records it in the run's audit log. A decision names what it measured
(``check``), the measured ``value`` and the ``limit`` it was held against, so a reader of the
log never has to recompute why a run stopped.

Semantics of ``value`` and ``limit`` (the same for every check): ``value`` is what the run has
already used (steps started, tokens spent, identical calls made, steps without progress) and a
check stops once ``value >= limit``: the budget is spent, so the next step, call or token would
go over it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Optional, Union

Number = Union[int, float]


class DecisionKind(str, Enum):
    """The three outcomes of a check."""

    ALLOW = "allow"
    WARN = "warn"
    STOP = "stop"


class Reason(str, Enum):
    """Why a check decided what it did."""

    WITHIN_LIMITS = "within_limits"
    STEPS_RUNNING_OUT = "steps_running_out"
    FINAL_STEP = "final_step"
    FINAL_STEP_LOCKDOWN = "final_step_lockdown"
    STEP_LIMIT = "step_limit"
    LOOP_DETECTED = "loop_detected"
    NO_PROGRESS = "no_progress"
    BUDGET_EXHAUSTED = "budget_exhausted"


class Check(str, Enum):
    """What a decision measured: the step count, repeated actions, progress, or one budget."""

    STEPS = "steps"
    REPEATED_ACTION = "repeated_action"
    PROGRESS = "progress"
    SECONDS = "seconds"
    COST = "cost"
    INPUT_TOKENS = "input_tokens"
    OUTPUT_TOKENS = "output_tokens"
    TOTAL_TOKENS = "total_tokens"
    TOOL_CALLS = "tool_calls"


@dataclass(frozen=True)
class Decision:
    """One decision of a run's policy: an audit event.

    ``seq`` numbers the run's decisions from 0 in the order they were made; ``step`` is the
    zero-based step they belong to; ``action_key`` is the normalized tool call a tool-call check
    looked at (None for step checks); ``elapsed`` is seconds since the policy was created, by the
    policy's clock. ``limit`` is None when the check has no limit configured.
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

    @property
    def stopped(self) -> bool:
        """True for a stop: the run must not take the step or make the call."""
        return self.kind is DecisionKind.STOP

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
        }
