"""Stop receipts: how a run ended, decided from evidence, never from the final text.

The integration (the agent loop) records what it saw at its boundary as it happens: the model
finished on its own, called a done tool, a step or budget limit was hit, the stream guard
aborted a degenerate output, the user aborted, a timeout, a tool failure that ended the run, an
approval request. ``RunEvidence.receipt(verifier)`` then checks the expected external result
(a callable the caller supplies: the file exists with the right hash, the row was written) and
decides one state, taking the first condition that holds in this priority order:

===================  ========================================================================
FAILED               a tool failure ended the run
WAITING              an approval was requested with an owner, a deadline and a resume token
WAITING_UNROUTED     an approval was requested without one of them: nobody will act on it
STUCK                the run was going nowhere: ``loop_detected``, ``no_progress`` (or another
                     named stop condition), a degeneration abort of the model's output, or a
                     timeout before any progress
BOUNDED_STOP         a bound fired: the step cap (``max_steps``), a budget, the kill switch, a
                     limit of the caller's, a user abort, or a timeout after progress
VERIFIED_COMPLETE    the model finished (naturally or by a done tool) and the verifier confirmed
                     the result
FALSE_COMPLETE       the model finished and no result receipt was obtained: the verifier found
                     no result, or no verifier was given, however confident the final text
UNCERTAIN            anything else: no ending was recorded, or the check itself failed (the
                     verifier raised or returned a non-bool)
===================  ========================================================================

Progress, for a timeout: the run made progress when its policy saw a new progress signal
(``RunPolicy.after_step``) before the timeout was recorded. A timeout after progress is a time
bound that fired (keep the partial work); one before any is STUCK. A run without a policy has no
progress evidence, so its timeouts are STUCK.

The order means a timeout at the last allowed step that made no progress is STUCK, not
BOUNDED_STOP, a tool failure at the step limit is FAILED, and an approval request stays WAITING
even if the model also wrote a final answer. Each state has one next action for the operator
(``ReceiptState.next_action``). The receipt keeps every piece of evidence, the inputs and
outcome of each condition, the policy values in force and the usage, and serializes to JSON and
to an SQLite ``receipts`` table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from types import MappingProxyType
from typing import Any, Callable, Optional, Protocol, Union

from loopbreak.agent import _validate
from loopbreak.agent.budget import Usage
from loopbreak.agent.decision import Decision, Number, Reason
from loopbreak.agent.policy import PolicyConfig, RunPolicy
from loopbreak.errors import DegenerationDetected
from loopbreak.store import Database, check_database, utc_now


class ReceiptState(str, Enum):
    """How a run ended, in priority order (see the module docstring)."""

    FAILED = "FAILED"
    WAITING = "WAITING"
    WAITING_UNROUTED = "WAITING_UNROUTED"
    STUCK = "STUCK"
    BOUNDED_STOP = "BOUNDED_STOP"
    VERIFIED_COMPLETE = "VERIFIED_COMPLETE"
    FALSE_COMPLETE = "FALSE_COMPLETE"
    UNCERTAIN = "UNCERTAIN"

    @property
    def next_action(self) -> str:
        """What the operator does next with a run in this state, in one line."""
        return NEXT_ACTIONS[self]


NEXT_ACTIONS: Mapping[ReceiptState, str] = MappingProxyType(
    {
        ReceiptState.FAILED: (
            "Diagnose the tool boundary; do not blindly retry an uncertain side effect."
        ),
        ReceiptState.WAITING: "Route the decision and keep the run resumable.",
        ReceiptState.WAITING_UNROUTED: "Add an owner and an escalation path.",
        ReceiptState.STUCK: "Check the last durable progress and pick one bounded recovery.",
        ReceiptState.BOUNDED_STOP: (
            "Keep the partial work; decide whether a new bounded run is justified."
        ),
        ReceiptState.VERIFIED_COMPLETE: "Close the run.",
        ReceiptState.FALSE_COMPLETE: "Check the destination or reopen the task.",
        ReceiptState.UNCERTAIN: "Ask before acting.",
    }
)


class EvidenceKind(str, Enum):
    """What the integration saw."""

    NATURAL_FINISH = "natural_finish"
    DONE_TOOL = "done_tool"
    STOP_CONDITION = "stop_condition"
    LIMIT = "limit"
    DEGENERATION = "degeneration"
    USER_ABORT = "user_abort"
    TIMEOUT = "timeout"
    TOOL_FAILURE = "tool_failure"
    APPROVAL_REQUESTED = "approval_requested"


@dataclass(frozen=True)
class Evidence:
    """One thing the integration saw. ``name`` is the kind, or for a stop condition or limit
    the condition's own name (``loop_detected``, ``max_steps``, ...); ``step`` is the policy's
    current step when it was recorded (None without a policy)."""

    kind: EvidenceKind
    name: str
    step: Optional[int]
    details: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The evidence as plain values, for JSON."""
        return {
            "kind": self.kind.value,
            "name": self.name,
            "step": self.step,
            "details": dict(self.details),
        }


@dataclass(frozen=True)
class Condition:
    """One state's condition as evaluated for a receipt: whether it held, and its inputs
    (counts of the evidence it looks at, and the verification result where it matters)."""

    state: ReceiptState
    held: bool
    inputs: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The condition as plain values, for JSON."""
        return {"state": self.state.value, "held": self.held, "inputs": dict(self.inputs)}


@dataclass(frozen=True)
class Receipt:
    """How one run ended. ``state`` is the first condition in ``conditions`` that held;
    ``reason`` names the evidence that made it hold (``no_outcome_recorded`` or
    ``verification_failed`` for UNCERTAIN). ``verified`` is the verifier's answer (None
    without a verifier, or when it failed: then ``verification_error`` says how). ``policy``
    and ``usage`` are the run policy's values in force and what the run used, when the evidence
    was recorded with a policy. ``next_action`` is the state's next action for the operator."""

    run_id: str
    state: ReceiptState
    reason: str
    verified: Optional[bool]
    verification_error: Optional[str]
    evidence: tuple[Evidence, ...]
    conditions: tuple[Condition, ...]
    policy: Optional[PolicyConfig]
    usage: Optional[Usage]

    @property
    def next_action(self) -> str:
        return self.state.next_action

    def to_dict(self) -> dict[str, Any]:
        """The receipt as plain values: the state, the evidence, every condition, the policy and the usage."""
        return {
            "run_id": self.run_id,
            "state": self.state.value,
            "reason": self.reason,
            "next_action": self.next_action,
            "verified": self.verified,
            "verification_error": self.verification_error,
            "evidence": [item.to_dict() for item in self.evidence],
            "conditions": [condition.to_dict() for condition in self.conditions],
            "policy": None if self.policy is None else self.policy.to_dict(),
            "usage": None if self.usage is None else self.usage.to_dict(),
        }

    def to_json(self, indent: Optional[int] = None) -> str:
        """``to_dict()`` as JSON text (non-ASCII kept as is)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)


class _HasToDict(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


Verifier = Callable[[], bool]
ErrorDetail = Union[str, BaseException]


class RunEvidence:
    """Collects the evidence of one run and builds its receipt.

    With ``policy``, the run id is the policy's (unless given, then they must match), each
    piece of evidence is stamped with the policy's current step, a timeout with the policy's
    last progress, the policy's stop decision is added as evidence when the receipt is built
    (``loop_detected``, ``no_progress`` and ``degeneration`` as a stop condition; ``max_steps``,
    the budgets and ``kill_switch`` as a limit), and the receipt carries the policy's values and
    usage.
    """

    def __init__(self, run_id: Optional[str] = None, *, policy: Optional[RunPolicy] = None) -> None:
        if policy is not None and not isinstance(policy, RunPolicy):
            raise TypeError(f"policy must be a RunPolicy, got {type(policy).__name__}")
        if run_id is None:
            if policy is None:
                raise ValueError("pass a run_id, or a policy to take it from")
            run_id = policy.run_id
        _validate.text("run_id", run_id)
        if policy is not None and run_id != policy.run_id:
            raise ValueError(f"run_id {run_id!r} differs from the policy's {policy.run_id!r}")
        self.run_id = run_id
        self.policy = policy
        self._evidence: list[Evidence] = []

    @property
    def evidence(self) -> tuple[Evidence, ...]:
        """What was recorded so far, oldest first (without the policy's stop)."""
        return tuple(self._evidence)

    def record_natural_finish(self) -> None:
        """The model ended the run by itself (a final answer, no tool calls)."""
        self._add(EvidenceKind.NATURAL_FINISH)

    def record_done_tool(self, tool: str) -> None:
        """The model called the tool that declares the task done."""
        self._add(EvidenceKind.DONE_TOOL, tool=_validate.text("tool", tool))

    def record_stop_condition(
        self, name: str, *, value: Optional[Number] = None, limit: Optional[Number] = None
    ) -> None:
        """A named condition stopped a run that was going nowhere (the caller's own, like the
        policy's ``loop_detected`` and ``no_progress``): the run is STUCK."""
        _validate.text("name", name)
        if value is not None:
            _validate.amount("value", value)
        if limit is not None:
            _validate.amount("limit", limit)
        self._add(EvidenceKind.STOP_CONDITION, name, value=value, limit=limit)

    def record_limit(self, name: str, *, value: Number, limit: Number) -> None:
        """A step or budget limit of the caller's own stopped the run: BOUNDED_STOP."""
        _validate.text("name", name)
        self._add(
            EvidenceKind.LIMIT,
            name,
            value=_validate.amount("value", value),
            limit=_validate.amount("limit", limit),
        )

    def record_degeneration(
        self, degeneration: Union[DegenerationDetected, _HasToDict, Mapping[str, Any]]
    ) -> None:
        """The stream guard aborted a degenerate output. Takes the ``DegenerationDetected`` it
        raised, the guard's ``degeneration`` (or a core ``Finding``), or a finding dict."""
        reason = None
        if isinstance(degeneration, DegenerationDetected):
            finding = degeneration.degeneration.to_dict()
            reason = degeneration.reason
        elif isinstance(degeneration, Mapping):
            finding = dict(degeneration)
        elif callable(getattr(degeneration, "to_dict", None)):
            finding = degeneration.to_dict()
            guard_reason = getattr(degeneration, "reason", None)
            reason = guard_reason if isinstance(guard_reason, str) else None
        else:
            raise TypeError(
                "degeneration must be a DegenerationDetected, a Degeneration, a Finding or a "
                f"finding dict, got {type(degeneration).__name__}"
            )
        self._add(EvidenceKind.DEGENERATION, reason=reason, finding=finding)

    def record_user_abort(self, detail: ErrorDetail = "") -> None:
        """The user stopped the run: a bound the user applied (BOUNDED_STOP)."""
        self._add(EvidenceKind.USER_ABORT, detail=_described(detail))

    def record_timeout(self, detail: ErrorDetail = "") -> None:
        """A timeout ended the run (a request or tool timing out; the policy's seconds budget
        is a limit instead). Records the policy's ``last_progress_step``: a timeout after
        progress is BOUNDED_STOP, one before any (or without a policy) STUCK."""
        progress = None if self.policy is None else self.policy.last_progress_step
        self._add(EvidenceKind.TIMEOUT, detail=_described(detail), last_progress_step=progress)

    def record_tool_failure(self, tool: str, error: ErrorDetail) -> None:
        """A tool failed and the run ended because of it. A tool error the model saw and worked
        around is an ordinary tool result, not this."""
        _validate.text("tool", tool)
        self._add(EvidenceKind.TOOL_FAILURE, tool=tool, error=_described(error))

    def record_approval_request(
        self,
        *,
        owner: Optional[str] = None,
        deadline: Union[str, datetime, None] = None,
        resume_token: Optional[str] = None,
    ) -> None:
        """The run paused for a human approval. It is routed (WAITING) only with all three of
        ``owner`` (who is asked), ``deadline`` (when the request lapses) and ``resume_token``
        (how the run continues); without any of them the request can be lost
        (WAITING_UNROUTED)."""
        if owner is not None:
            _validate.text("owner", owner)
        if resume_token is not None:
            _validate.text("resume_token", resume_token)
        if isinstance(deadline, datetime):
            deadline = deadline.isoformat()
        elif deadline is not None:
            _validate.text("deadline", deadline)
        fields = {"owner": owner, "deadline": deadline, "resume_token": resume_token}
        missing = [name for name, value in fields.items() if value is None]
        self._add(EvidenceKind.APPROVAL_REQUESTED, **fields, missing=missing)

    def receipt(self, verifier: Optional[Verifier] = None) -> Receipt:
        """Builds the receipt. ``verifier`` checks the expected external result and returns a
        bool; it is called once, whatever the state, so the receipt shows the result even for
        a stopped run. Without a verifier a finish has no result receipt: FALSE_COMPLETE. If
        it raises or returns a non-bool, the receipt records the error and a finish is
        UNCERTAIN (the check itself failed): a receipt is built for every run."""
        evidence = list(self._evidence)
        if self.policy is not None and self.policy.stop is not None:
            evidence.append(_policy_stop(self.policy.stop))
        verified, verification_error = _verify(verifier)
        conditions, reason = _classify(evidence, verified, verification_error is not None)
        decided = next(condition for condition in conditions if condition.held)
        return Receipt(
            run_id=self.run_id,
            state=decided.state,
            reason=reason,
            verified=verified,
            verification_error=verification_error,
            evidence=tuple(evidence),
            conditions=conditions,
            policy=None if self.policy is None else self.policy.config,
            usage=None if self.policy is None else self.policy.usage(),
        )

    def _add(self, kind: EvidenceKind, name: Optional[str] = None, **details: Any) -> None:
        step = None if self.policy is None else self.policy.step
        self._evidence.append(Evidence(kind, name or kind.value, step, MappingProxyType(details)))


def save_receipt(db: Database, receipt: Receipt) -> int:
    """Inserts ``receipt`` into the store's ``receipts`` table and commits; returns the row id.
    A run may have several rows (e.g. a WAITING run resumed later); the newest is its current
    receipt."""
    check_database(db)
    if not isinstance(receipt, Receipt):
        raise TypeError(f"receipt must be a Receipt, got {type(receipt).__name__}")
    return db.insert(
        "receipts",
        {
            "run_id": receipt.run_id,
            "state": receipt.state.value,
            "reason": receipt.reason,
            "receipt": receipt.to_json(),
            "created_at": utc_now(),
        },
    )


_LOOPING = (EvidenceKind.STOP_CONDITION, EvidenceKind.DEGENERATION)
_BOUNDS = (EvidenceKind.LIMIT, EvidenceKind.USER_ABORT)
_CLAIMS = (EvidenceKind.NATURAL_FINISH, EvidenceKind.DONE_TOOL)
# The policy's stops that mean the run was going nowhere; every other stop is a bound.
_POLICY_STOP_CONDITIONS = (Reason.LOOP_DETECTED, Reason.NO_PROGRESS, Reason.DEGENERATION)


def _policy_stop(stop: Decision) -> Evidence:
    kind = (
        EvidenceKind.STOP_CONDITION
        if stop.reason in _POLICY_STOP_CONDITIONS
        else EvidenceKind.LIMIT
    )
    return Evidence(kind, stop.reason.value, stop.step, MappingProxyType(stop.to_dict()))


def _verify(verifier: Optional[Verifier]) -> tuple[Optional[bool], Optional[str]]:
    if verifier is None:
        return None, None
    if not callable(verifier):
        raise TypeError(f"verifier must be callable, got {type(verifier).__name__}")
    try:
        result = verifier()
    except Exception as error:  # a failed check is evidence, and every run gets its receipt
        return None, f"verifier raised {type(error).__name__}: {error}"
    if not isinstance(result, bool):
        return None, f"verifier returned {type(result).__name__}, expected bool"
    return result, None


def _classify(
    evidence: list[Evidence], verified: Optional[bool], verification_failed: bool
) -> tuple[tuple[Condition, ...], str]:
    """Every state's condition in priority order, and the reason for the first that held: the
    name of the first evidence behind it. The last condition, UNCERTAIN, always holds."""

    def having(*kinds: EvidenceKind) -> list[Evidence]:
        return [item for item in evidence if item.kind in kinds]

    def counts(*kinds: EvidenceKind) -> dict[str, int]:
        return {kind.value: len(having(kind)) for kind in kinds}

    approvals = having(EvidenceKind.APPROVAL_REQUESTED)
    routed = [item for item in approvals if not item.details["missing"]]
    unrouted = [item for item in approvals if item.details["missing"]]

    def timeout(item: Evidence, *, after_progress: bool) -> bool:
        if item.kind is not EvidenceKind.TIMEOUT:
            return False
        return (item.details["last_progress_step"] is not None) is after_progress

    # In the order recorded, so the reason is the first evidence behind the state.
    stuck = [
        item for item in evidence if item.kind in _LOOPING or timeout(item, after_progress=False)
    ]
    bounded = [
        item for item in evidence if item.kind in _BOUNDS or timeout(item, after_progress=True)
    ]
    before_progress = [item for item in stuck if item.kind is EvidenceKind.TIMEOUT]
    after_progress = [item for item in bounded if item.kind is EvidenceKind.TIMEOUT]
    claims = having(*_CLAIMS)
    claim_inputs = {
        **counts(*_CLAIMS),
        "verified": verified,
        "verification_failed": verification_failed,
    }
    # Each state with the evidence that makes it hold (none: it does not) and its inputs.
    candidates = (
        (
            ReceiptState.FAILED,
            having(EvidenceKind.TOOL_FAILURE),
            counts(EvidenceKind.TOOL_FAILURE),
        ),
        (
            ReceiptState.WAITING,
            routed,
            {"approval_requested": len(approvals), "routed": len(routed)},
        ),
        (
            ReceiptState.WAITING_UNROUTED,
            unrouted,
            {"approval_requested": len(approvals), "unrouted": len(unrouted)},
        ),
        (
            ReceiptState.STUCK,
            stuck,
            {**counts(*_LOOPING), "timeout_before_progress": len(before_progress)},
        ),
        (
            ReceiptState.BOUNDED_STOP,
            bounded,
            {**counts(*_BOUNDS), "timeout_after_progress": len(after_progress)},
        ),
        (ReceiptState.VERIFIED_COMPLETE, claims if verified is True else [], claim_inputs),
        # No result receipt: the verifier said no, or there was none to ask.
        (
            ReceiptState.FALSE_COMPLETE,
            claims if verified is not True and not verification_failed else [],
            claim_inputs,
        ),
    )
    conditions = tuple(Condition(state, bool(items), inputs) for state, items, inputs in candidates)
    uncertain = Condition(ReceiptState.UNCERTAIN, True, claim_inputs)
    deciding = next((items for _, items, _ in candidates if items), None)
    if deciding is not None:
        reason = deciding[0].name
    else:
        reason = "verification_failed" if claims else "no_outcome_recorded"
    return (*conditions, uncertain), reason


def _described(detail: ErrorDetail) -> str:
    if isinstance(detail, BaseException):
        return f"{type(detail).__name__}: {detail}"
    if isinstance(detail, str):
        return detail
    raise TypeError(f"detail must be a str or an exception, got {type(detail).__name__}")
