"""Stop receipts: evidence to state in priority order, and what a receipt records."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional, Union

import pytest

from loopbreak import scan
from loopbreak.agent.budget import Budgets
from loopbreak.agent.policy import LOCKDOWN_ENV, PolicyConfig, RunPolicy
from loopbreak.agent.receipt import (
    NEXT_ACTIONS,
    EvidenceKind,
    ReceiptState,
    RunEvidence,
    save_receipt,
)
from loopbreak.errors import DegenerationDetected
from loopbreak.store import TABLES, Database
from loopbreak.streaming.guard import guard
from support.fakes import FakeClock

LOOPING_STREAM = ["Sure, loading the tools. "] + ["loadTools."] * 500


class FlagSwitch:
    """A kill switch source flipped by the test (the file switch is tested in
    test_kill_switch.py)."""

    def __init__(self) -> None:
        self.on = False

    def engaged(self) -> bool:
        return self.on


def new_run(**config: Any) -> RunEvidence:
    policy = RunPolicy(
        PolicyConfig(**config), run_id="run-1", clock=FakeClock(), kill_switch=FlagSwitch()
    )
    return RunEvidence(policy=policy)


def policy_of(run: RunEvidence) -> RunPolicy:
    assert run.policy is not None
    return run.policy


def take_steps(run: RunEvidence, count: int) -> None:
    for _ in range(count):
        plan = policy_of(run).before_step("prompt")
        assert not plan.decision.stopped


def degeneration_abort() -> DegenerationDetected:
    """A real abort: the stream guard stopping a looping stream."""
    with pytest.raises(DegenerationDetected) as raised:
        for _ in guard(iter(LOOPING_STREAM)):
            pass
    return raised.value


# The setups: what the integration saw during the run.


def natural_finish(run: RunEvidence) -> None:
    take_steps(run, 2)
    run.record_natural_finish()


def confident_natural_finish(run: RunEvidence) -> None:
    """The final text claims success; the evidence is only that the model stopped."""
    take_steps(run, 1)
    text = "".join(guard(iter(["Done! I wrote report.md ", "and verified every figure in it."])))
    assert "verified" in text
    run.record_natural_finish()


def done_tool(run: RunEvidence) -> None:
    take_steps(run, 1)
    run.record_done_tool("task_complete")


def hit_step_limit(run: RunEvidence) -> None:
    policy = policy_of(run)
    started = 0 if policy.step is None else policy.step + 1
    take_steps(run, policy.config.max_steps - started)
    assert policy_of(run).before_step("prompt").decision.stopped


def exhaust_token_budget(run: RunEvidence) -> None:
    take_steps(run, 1)
    policy_of(run).record_usage("small-model", 600, 400)
    assert policy_of(run).before_step("prompt").decision.stopped


def routed_approval(run: RunEvidence) -> None:
    take_steps(run, 1)
    run.record_approval_request(
        owner="ops@example.com", deadline="2030-01-01T00:00:00Z", resume_token="resume-42"
    )


def unrouted_approval(run: RunEvidence) -> None:
    take_steps(run, 1)
    run.record_approval_request(owner="ops@example.com")


def tool_failure(run: RunEvidence) -> None:
    take_steps(run, 1)
    run.record_tool_failure("deploy", RuntimeError("exit status 1"))


def tool_failure_then_step_limit(run: RunEvidence) -> None:
    tool_failure(run)
    hit_step_limit(run)


def approval_then_step_limit(run: RunEvidence) -> None:
    routed_approval(run)
    hit_step_limit(run)


def timeout_without_progress(run: RunEvidence) -> None:
    take_steps(run, 2)  # steps that report no progress signal at all
    run.record_timeout(TimeoutError("model call took longer than 60 s"))


def timeout_after_progress(run: RunEvidence) -> None:
    take_steps(run, 1)
    policy_of(run).after_step(["read notes.txt: DEPLOY_ENV=staging"])
    take_steps(run, 1)
    run.record_timeout(TimeoutError("model call took longer than 60 s"))


def timeout_at_the_step_limit(run: RunEvidence) -> None:
    """A timeout on the last allowed step without progress is STUCK, though the limit was hit
    too: STUCK comes before BOUNDED_STOP."""
    take_steps(run, policy_of(run).config.max_steps)
    run.record_timeout(TimeoutError("model call took longer than 60 s"))
    assert policy_of(run).before_step("prompt").decision.stopped


def user_abort(run: RunEvidence) -> None:
    take_steps(run, 1)
    run.record_user_abort("stop button")


def kill_switch(run: RunEvidence) -> None:
    take_steps(run, 2)
    switch = policy_of(run).kill_switch
    assert isinstance(switch, FlagSwitch)
    switch.on = True
    assert policy_of(run).before_step("prompt").decision.stopped


def degenerate_output(run: RunEvidence) -> None:
    take_steps(run, 1)
    run.record_degeneration(degeneration_abort())


def degenerate_output_then_step_limit(run: RunEvidence) -> None:
    take_steps(run, 1)
    run.record_degeneration(degeneration_abort())
    hit_step_limit(run)


def repeated_action(run: RunEvidence) -> None:
    for _ in range(4):
        take_steps(run, 1)
        policy_of(run).check_tool_call("list_dir", {"path": "."})
    assert policy_of(run).stop is not None


def no_progress(run: RunEvidence) -> None:
    for _ in range(4):
        take_steps(run, 1)
        policy_of(run).after_step([])
    assert policy_of(run).stop is not None


def callers_stop_condition(run: RunEvidence) -> None:
    take_steps(run, 1)
    run.record_stop_condition("same_question_asked_3_times", value=3, limit=3)


def callers_limit(run: RunEvidence) -> None:
    take_steps(run, 1)
    run.record_limit("graph_recursion_limit", value=25, limit=25)


def approval_after_a_confident_finish(run: RunEvidence) -> None:
    natural_finish(run)
    run.record_approval_request(owner="ops", deadline="tomorrow", resume_token="t")


def failure_and_approval(run: RunEvidence) -> None:
    routed_approval(run)
    run.record_tool_failure("send_email", "SMTP 550")


def nothing(run: RunEvidence) -> None:
    take_steps(run, 3)


RAISES = "raises"  # the verifier raises
NOT_A_BOOL = "not a bool"  # the verifier returns something else than a bool


@dataclass(frozen=True)
class Case:
    setup: Callable[[RunEvidence], None]
    # What the verifier answers; None: no verifier supplied.
    verifier: Union[bool, None, str]
    state: ReceiptState
    reason: str
    config: tuple[tuple[str, Any], ...] = ()


TOKEN_BUDGET = (("budgets", Budgets(max_total_tokens=1000)),)

CASES = {
    # The issue's table, one row per case.
    "tool failure": Case(tool_failure, True, ReceiptState.FAILED, "tool_failure"),
    "timeout without progress": Case(
        timeout_without_progress, False, ReceiptState.STUCK, "timeout"
    ),
    "timeout after progress": Case(
        timeout_after_progress, None, ReceiptState.BOUNDED_STOP, "timeout"
    ),
    "step limit": Case(
        hit_step_limit, True, ReceiptState.BOUNDED_STOP, "max_steps", (("max_steps", 3),)
    ),
    "token budget": Case(
        exhaust_token_budget, None, ReceiptState.BOUNDED_STOP, "max_total_tokens", TOKEN_BUDGET
    ),
    "user abort": Case(user_abort, True, ReceiptState.BOUNDED_STOP, "user_abort"),
    "kill switch": Case(kill_switch, False, ReceiptState.BOUNDED_STOP, "kill_switch"),
    "natural finish with result": Case(
        natural_finish, True, ReceiptState.VERIFIED_COMPLETE, "natural_finish"
    ),
    "done tool with result": Case(done_tool, True, ReceiptState.VERIFIED_COMPLETE, "done_tool"),
    "natural finish, verifier finds no result": Case(
        natural_finish, False, ReceiptState.FALSE_COMPLETE, "natural_finish"
    ),
    "done tool, verifier finds no result": Case(
        done_tool, False, ReceiptState.FALSE_COMPLETE, "done_tool"
    ),
    "natural finish without a verifier": Case(
        natural_finish, None, ReceiptState.FALSE_COMPLETE, "natural_finish"
    ),
    "done tool without a verifier": Case(done_tool, None, ReceiptState.FALSE_COMPLETE, "done_tool"),
    "finish, the verifier raises": Case(
        natural_finish, RAISES, ReceiptState.UNCERTAIN, "verification_failed"
    ),
    "finish, the verifier returns a non-bool": Case(
        done_tool, NOT_A_BOOL, ReceiptState.UNCERTAIN, "verification_failed"
    ),
    "nothing recorded": Case(nothing, True, ReceiptState.UNCERTAIN, "no_outcome_recorded"),
    # Priority: the first state whose condition holds wins.
    "timeout at the step limit": Case(
        timeout_at_the_step_limit, False, ReceiptState.STUCK, "timeout", (("max_steps", 4),)
    ),
    "failure beats a limit": Case(
        tool_failure_then_step_limit,
        None,
        ReceiptState.FAILED,
        "tool_failure",
        (("max_steps", 3),),
    ),
    "approval beats a limit": Case(
        approval_then_step_limit,
        None,
        ReceiptState.WAITING,
        "approval_requested",
        (("max_steps", 3),),
    ),
    "confident final text without a result receipt": Case(
        confident_natural_finish, None, ReceiptState.FALSE_COMPLETE, "natural_finish"
    ),
    "approval after a confident finish": Case(
        approval_after_a_confident_finish, True, ReceiptState.WAITING, "approval_requested"
    ),
    "failure and approval": Case(failure_and_approval, None, ReceiptState.FAILED, "tool_failure"),
    "degeneration then step limit": Case(
        degenerate_output_then_step_limit,
        None,
        ReceiptState.STUCK,
        "degeneration",
        (("max_steps", 3),),
    ),
    # The other ways a run goes nowhere, and the caller's own conditions.
    "routed approval": Case(routed_approval, None, ReceiptState.WAITING, "approval_requested"),
    "unrouted approval": Case(
        unrouted_approval, None, ReceiptState.WAITING_UNROUTED, "approval_requested"
    ),
    "degeneration abort": Case(degenerate_output, False, ReceiptState.STUCK, "degeneration"),
    "repeated action": Case(repeated_action, True, ReceiptState.STUCK, "loop_detected"),
    "no progress": Case(no_progress, False, ReceiptState.STUCK, "no_progress"),
    "caller's stop condition": Case(
        callers_stop_condition, None, ReceiptState.STUCK, "same_question_asked_3_times"
    ),
    "caller's limit": Case(callers_limit, True, ReceiptState.BOUNDED_STOP, "graph_recursion_limit"),
}


def verifier_for(answer: Union[bool, None, str], calls: list[None]) -> Optional[Callable[[], Any]]:
    if answer is None:
        return None

    def verifier() -> object:
        calls.append(None)
        if answer == RAISES:
            raise ConnectionError("destination unreachable")
        if answer == NOT_A_BOOL:
            return "yes"
        return answer

    return verifier


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_evidence_decides_the_state(case: Case) -> None:
    run = new_run(**dict(case.config))
    case.setup(run)
    calls: list[None] = []
    receipt = run.receipt(verifier_for(case.verifier, calls))
    assert (receipt.state, receipt.reason) == (case.state, case.reason)
    assert receipt.verified is (case.verifier if isinstance(case.verifier, bool) else None)
    assert (receipt.verification_error is not None) is (case.verifier in (RAISES, NOT_A_BOOL))
    assert len(calls) == (0 if case.verifier is None else 1)  # called once, whatever the state
    # The state is the first condition, in priority order, that held.
    assert [condition.state for condition in receipt.conditions] == list(ReceiptState)
    first_held = next(condition for condition in receipt.conditions if condition.held)
    assert first_held.state is case.state
    assert receipt.next_action == NEXT_ACTIONS[case.state]


def test_all_issue_cases_are_in_the_table() -> None:
    issue_cases = {
        "tool failure",
        "timeout without progress",
        "step limit",
        "token budget",
        "user abort",
        "natural finish with result",
        "done tool with result",
        "natural finish without a verifier",
        "done tool without a verifier",
        "finish, the verifier raises",
        "nothing recorded",
        "timeout at the step limit",
        "failure beats a limit",
        "approval beats a limit",
        "confident final text without a result receipt",
    }
    assert issue_cases <= set(CASES)
    assert {case.state for case in CASES.values()} == set(ReceiptState)


def test_conditions_record_their_inputs() -> None:
    run = new_run()
    routed_approval(run)
    run.record_approval_request(owner="ops")
    run.record_natural_finish()
    receipt = run.receipt(lambda: False)
    claims = {
        "natural_finish": 1,
        "done_tool": 0,
        "verified": False,
        "verification_failed": False,
    }
    stuck = {"stop_condition": 0, "degeneration": 0, "timeout_before_progress": 0}
    bounded = {"limit": 0, "user_abort": 0, "timeout_after_progress": 0}
    inputs = {c.state: (c.held, dict(c.inputs)) for c in receipt.conditions}
    assert inputs == {
        ReceiptState.FAILED: (False, {"tool_failure": 0}),
        ReceiptState.WAITING: (True, {"approval_requested": 2, "routed": 1}),
        ReceiptState.WAITING_UNROUTED: (True, {"approval_requested": 2, "unrouted": 1}),
        ReceiptState.STUCK: (False, stuck),
        ReceiptState.BOUNDED_STOP: (False, bounded),
        ReceiptState.VERIFIED_COMPLETE: (False, claims),
        ReceiptState.FALSE_COMPLETE: (True, claims),
        ReceiptState.UNCERTAIN: (True, claims),
    }
    assert receipt.state is ReceiptState.WAITING


def test_the_receipt_records_policy_values_in_force_and_usage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(LOCKDOWN_ENV, "true")
    run = new_run(max_steps=3, budgets=Budgets(max_total_tokens=1000))
    take_steps(run, 2)
    policy_of(run).record_usage("small-model", 300, 200)
    policy_of(run).check_tool_call("read_file", {"path": "a"})
    run.record_natural_finish()
    receipt = run.receipt(lambda: True).to_dict()
    assert receipt["policy"]["final_step_lockdown"] is True  # read from the env var
    assert receipt["policy"]["max_steps"] == 3
    assert receipt["policy"]["budgets"]["max_total_tokens"] == 1000
    assert receipt["usage"] == {
        "steps": 2,
        "elapsed_seconds": 0.0,
        "input_tokens": 300,
        "output_tokens": 200,
        "total_tokens": 500,
        "cost": None,
        "tool_calls": 1,
    }
    assert receipt["evidence"] == [
        {"kind": "natural_finish", "name": "natural_finish", "step": 1, "details": {}}
    ]


def test_the_policy_stop_is_evidence_with_its_numbers() -> None:
    run = new_run(budgets=Budgets(max_total_tokens=1000))
    exhaust_token_budget(run)
    (evidence,) = run.receipt().evidence
    assert (evidence.kind, evidence.name) == (EvidenceKind.LIMIT, "max_total_tokens")
    assert evidence.step == 1
    assert evidence.details["check"] == "total_tokens"
    assert (evidence.details["value"], evidence.details["limit"]) == (1000, 1000)
    assert evidence.details["message"] == (
        "The run stopped after reaching its token budget (1000 tokens). "
        "Rephrase the request or start a new run with a narrower scope."
    )


def test_a_timeout_records_the_last_progress_before_it() -> None:
    run = new_run()
    timeout_after_progress(run)
    (timeout,) = run.evidence
    assert (timeout.step, timeout.details["last_progress_step"]) == (1, 0)
    assert timeout.details["detail"] == "TimeoutError: model call took longer than 60 s"
    # Progress reported after the timeout does not change the evidence already recorded.
    policy_of(run).after_step(["a late result"])
    assert run.receipt().evidence[0].details["last_progress_step"] == 0


def test_a_timeout_without_a_policy_has_no_progress_evidence_and_is_stuck() -> None:
    run = RunEvidence("run-2")
    run.record_timeout("tool call took longer than 30 s")
    assert run.evidence[0].details["last_progress_step"] is None
    receipt = run.receipt()
    assert (receipt.state, receipt.reason) == (ReceiptState.STUCK, "timeout")


def test_every_state_has_one_next_action() -> None:
    assert set(NEXT_ACTIONS) == set(ReceiptState)
    for state in ReceiptState:
        assert state.next_action == NEXT_ACTIONS[state]
        assert state.next_action.strip() and "\n" not in state.next_action
    assert ReceiptState.FAILED.next_action == (
        "Diagnose the tool boundary; do not blindly retry an uncertain side effect."
    )
    assert ReceiptState.UNCERTAIN.next_action == "Ask before acting."


def test_degeneration_evidence_keeps_the_finding_and_reason() -> None:
    run = new_run()
    error = degeneration_abort()
    run.record_degeneration(error)
    details = run.evidence[0].details
    assert details["reason"] == error.reason
    assert details["reason"].startswith("Output degeneration detected")
    assert details["finding"]["block"] == "loadTools."
    assert details["finding"]["rule"] == "periodic_run"


def test_degeneration_evidence_takes_the_guards_other_forms() -> None:
    stopped = guard(iter(LOOPING_STREAM), on_degeneration="stop")
    for _ in stopped:
        pass
    assert stopped.degeneration is not None
    finding = scan("".join(LOOPING_STREAM))[0]
    run = new_run()
    run.record_degeneration(stopped.degeneration)
    run.record_degeneration(finding)
    run.record_degeneration(finding.to_dict())
    recorded = [item.details for item in run.evidence]
    assert recorded[0]["reason"] == stopped.reason
    assert recorded[1]["finding"] == recorded[2]["finding"] == finding.to_dict()
    assert recorded[1]["reason"] is None
    with pytest.raises(TypeError, match="degeneration must be a DegenerationDetected"):
        run.record_degeneration(3)  # type: ignore[arg-type]


def test_an_approval_request_lists_what_it_is_missing() -> None:
    run = RunEvidence("run-9")
    deadline = datetime(2030, 5, 1, 12, 0, tzinfo=timezone.utc)
    run.record_approval_request(owner="ops", deadline=deadline)
    details = run.evidence[0].details
    assert details["deadline"] == "2030-05-01T12:00:00+00:00"
    assert details["missing"] == ["resume_token"]
    assert run.evidence[0].step is None  # no policy, no step
    assert run.receipt().state is ReceiptState.WAITING_UNROUTED


def test_a_failing_verifier_makes_a_finish_uncertain_and_is_recorded() -> None:
    def broken() -> bool:
        raise ConnectionError("database unreachable")

    run = new_run()
    natural_finish(run)
    receipt = run.receipt(broken)
    assert (receipt.state, receipt.reason) == (ReceiptState.UNCERTAIN, "verification_failed")
    assert receipt.verified is None
    assert receipt.verification_error == "verifier raised ConnectionError: database unreachable"
    not_a_bool = run.receipt(lambda: "yes")  # type: ignore[arg-type, return-value]
    assert not_a_bool.verification_error == "verifier returned str, expected bool"
    assert not_a_bool.state is ReceiptState.UNCERTAIN


def test_the_receipt_serializes_to_json() -> None:
    run = new_run(max_steps=2)
    run.record_tool_failure("deploy", "exit status 1")
    hit_step_limit(run)
    receipt = run.receipt(lambda: False)
    assert json.loads(receipt.to_json()) == receipt.to_dict()
    assert receipt.to_dict()["state"] == "FAILED"
    assert receipt.to_dict()["next_action"] == ReceiptState.FAILED.next_action
    assert json.loads(receipt.to_json(indent=2))["evidence"][1]["name"] == "max_steps"


def stored(connection: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return connection.execute("SELECT id, run_id, state, reason, receipt FROM receipts").fetchall()


def test_receipts_are_saved_to_sqlite_by_path(tmp_path: Path) -> None:
    path = tmp_path / "loopbreak.db"
    run = new_run()
    routed_approval(run)
    first = run.receipt()
    run.record_natural_finish()
    second = run.receipt(lambda: True)
    with Database(path) as db:
        assert save_receipt(db, first) < save_receipt(db, second)
    with sqlite3.connect(path) as connection:
        rows = stored(connection)
    assert [(row[1], row[2], row[3]) for row in rows] == [
        ("run-1", "WAITING", "approval_requested"),
        ("run-1", "WAITING", "approval_requested"),
    ]
    assert json.loads(rows[1][4]) == second.to_dict()


def test_receipts_share_the_callers_database(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "app.db")
    connection.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, text TEXT)")
    connection.commit()
    run = new_run()
    natural_finish(run)
    with Database(connection) as db:
        save_receipt(db, run.receipt(lambda: True))
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    assert {table for table in tables if not table.startswith("sqlite_")} == {"messages", *TABLES}
    assert stored(connection)[0][2] == "VERIFIED_COMPLETE"  # still open: not closed by us
    connection.close()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: RunEvidence(), ValueError, "pass a run_id, or a policy"),
        (lambda: RunEvidence(""), ValueError, "run_id must not be empty"),
        (
            lambda: RunEvidence(policy="p"),  # type: ignore[arg-type]
            TypeError,
            "policy must be a RunPolicy, got str",
        ),
        (
            lambda: RunEvidence("other", policy=RunPolicy(run_id="mine")),
            ValueError,
            "run_id 'other' differs from the policy's 'mine'",
        ),
        (lambda: RunEvidence("r").record_done_tool(""), ValueError, "tool must not be empty"),
        (
            lambda: RunEvidence("r").record_timeout(3),  # type: ignore[arg-type]
            TypeError,
            "detail must be a str or an exception, got int",
        ),
        (
            lambda: RunEvidence("r").record_limit("steps", value=-1, limit=3),
            ValueError,
            "value must be a finite number >= 0",
        ),
        (
            lambda: RunEvidence("r").record_approval_request(owner=""),
            ValueError,
            "owner must not be empty",
        ),
        (
            lambda: RunEvidence("r").receipt(True),  # type: ignore[arg-type]
            TypeError,
            "verifier must be callable, got bool",
        ),
        (
            lambda: save_receipt(Database(":memory:"), "receipt"),  # type: ignore[arg-type]
            TypeError,
            "receipt must be a Receipt",
        ),
    ],
)
def test_bad_input_is_refused(call: Callable[[], object], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()
