"""The kill switch: a file any process can create stops every run that checks it, at its next
check, with an audit event and a BOUNDED_STOP receipt."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from loopbreak.agent.audit import AuditLog, SqliteSink
from loopbreak.agent.decision import Check, DecisionKind, Reason
from loopbreak.agent.kill_switch import KILL_SWITCH_ENV, KillSwitch
from loopbreak.agent.policy import LOCKDOWN_ENV, PolicyConfig, RunPolicy
from loopbreak.agent.receipt import ReceiptState, RunEvidence, save_receipt
from loopbreak.errors import CheckAfterStop
from loopbreak.store import Database

PYTHON_PATH = str(Path(__file__).resolve().parents[2] / "python")
KILL_MESSAGE = (
    "The run was stopped by an operator's emergency switch; the work done so far is kept. "
    "Try again later."
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOCKDOWN_ENV, raising=False)
    monkeypatch.delenv(KILL_SWITCH_ENV, raising=False)


def touch_from_another_process(path: Path) -> None:
    subprocess.run(
        [sys.executable, "-c", "import pathlib, sys; pathlib.Path(sys.argv[1]).touch()", path],
        check=True,
        timeout=60,
    )


def test_a_switch_flipped_by_another_process_stops_the_run_at_its_next_check(
    tmp_path: Path,
) -> None:
    switch_path = tmp_path / "agent.kill"
    path = tmp_path / "loopbreak.db"
    db = Database(path)
    audit = AuditLog([SqliteSink(db)])
    policy = RunPolicy(run_id="run-k", audit=audit, kill_switch=KillSwitch(switch_path))
    evidence = RunEvidence(policy=policy)
    assert not policy.before_step("prompt").decision.stopped
    assert not policy.check_tool_call("read_file", {"path": "a.txt"}).stopped
    policy.after_step(["read a.txt"])

    touch_from_another_process(switch_path)

    plan = policy.before_step("prompt")
    stop = plan.decision
    assert stop.stopped and not plan.tools_enabled
    assert (stop.reason, stop.check, stop.value, stop.limit) == (
        Reason.KILL_SWITCH,
        Check.KILL_SWITCH,
        1,
        1,
    )
    assert stop.step == 1 and policy.step == 0  # step 1 never started
    assert stop.message == KILL_MESSAGE
    with pytest.raises(CheckAfterStop, match="kill_switch"):
        policy.before_step("prompt")
    audit.close()

    receipt = evidence.receipt()
    assert (receipt.state, receipt.reason) == (ReceiptState.BOUNDED_STOP, "kill_switch")
    assert receipt.next_action == (
        "Keep the partial work; decide whether a new bounded run is justified."
    )
    save_receipt(db, receipt)
    db.close()
    with sqlite3.connect(path) as connection:
        events = connection.execute(
            "SELECT run_id, step, decision, reason, check_name, message FROM audit_events "
            "ORDER BY id"
        ).fetchall()
        receipts = connection.execute("SELECT run_id, state, reason FROM receipts").fetchall()
    assert events[-1] == ("run-k", 1, "stop", "kill_switch", "kill_switch", KILL_MESSAGE)
    assert [event[2] for event in events] == ["allow", "allow", "allow", "stop"]
    assert receipts == [("run-k", "BOUNDED_STOP", "kill_switch")]


def test_a_switch_flipped_mid_step_stops_the_next_tool_call(tmp_path: Path) -> None:
    switch = KillSwitch(tmp_path / "agent.kill")
    policy = RunPolicy(run_id="run-t", kill_switch=switch)
    policy.before_step("prompt")
    assert not policy.check_tool_call("list_dir").stopped
    touch_from_another_process(switch.path)
    stop = policy.check_tool_call("write_file", {"path": "out.txt"})
    assert (stop.kind, stop.reason) == (DecisionKind.STOP, Reason.KILL_SWITCH)
    assert stop.action_key == 'write_file({"path":"out.txt"})'
    assert policy.usage().tool_calls == 1  # the refused call was not made
    assert RunEvidence(policy=policy).receipt().state is ReceiptState.BOUNDED_STOP


def test_the_env_var_gives_every_policy_the_switch_until_it_is_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "agent.kill"
    monkeypatch.setenv(KILL_SWITCH_ENV, str(path))
    runs = [RunPolicy(run_id=f"run-{index}") for index in range(3)]
    assert all(isinstance(run.kill_switch, KillSwitch) for run in runs)
    for run in runs:
        run.before_step("prompt")
    KillSwitch(path).engage()
    assert [run.before_step("prompt").decision.reason for run in runs] == [Reason.KILL_SWITCH] * 3
    assert RunPolicy().before_step("prompt").decision.reason is Reason.KILL_SWITCH  # new runs too
    KillSwitch(path).release()
    assert not RunPolicy().before_step("prompt").decision.stopped


CHILD_RUN = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from loopbreak.agent.audit import AuditLog, JsonLinesSink
    from loopbreak.agent.policy import PolicyConfig, RunPolicy
    from loopbreak.agent.receipt import RunEvidence

    audit_path, ready = sys.argv[1], Path(sys.argv[2])
    audit = AuditLog([JsonLinesSink(audit_path)])
    # No switch passed: the policy takes the one LOOPBREAK_KILL_SWITCH names.
    config = PolicyConfig(max_steps=1_000_000, no_progress_window=None)
    policy = RunPolicy(config, run_id="child-run", audit=audit)
    while not policy.before_step("prompt").decision.stopped:
        policy.after_step([])
        ready.touch()
        time.sleep(0.01)
    audit.close()
    print(RunEvidence(policy=policy).receipt().to_json())
    """
)


def test_a_run_in_another_process_stops_when_this_one_flips_the_switch(tmp_path: Path) -> None:
    switch = KillSwitch(tmp_path / "agent.kill")
    audit_path, ready = tmp_path / "audit.jsonl", tmp_path / "ready"
    env = {"PYTHONPATH": PYTHON_PATH, KILL_SWITCH_ENV: str(switch.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_RUN, audit_path, ready],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():  # the child's run is under way
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        switch.engage()
        out, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 0
    receipt = json.loads(out)
    assert (receipt["state"], receipt["reason"]) == ("BOUNDED_STOP", "kill_switch")
    events = [json.loads(line) for line in audit_path.read_text(encoding="utf-8").splitlines()]
    assert events[-1]["decision"] == "stop" and events[-1]["reason"] == "kill_switch"
    assert events[-1]["message"] == KILL_MESSAGE
    assert all(event["decision"] == "allow" for event in events[:-1]) and len(events) > 2


def test_engage_and_release_are_touch_and_rm(tmp_path: Path) -> None:
    switch = KillSwitch(str(tmp_path / "agent.kill"))
    assert not switch.engaged()
    switch.engage()
    switch.engage()  # already engaged: still engaged
    assert switch.engaged() and switch.path.exists()
    switch.release()
    switch.release()  # already released: nothing to do
    assert not switch.engaged()
    assert repr(switch) == f"KillSwitch({str(switch.path)!r})"


@pytest.mark.parametrize("value", ["", "   "])
def test_no_switch_without_a_path_in_the_env(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(KILL_SWITCH_ENV, value)
    assert KillSwitch.from_env() is None
    assert RunPolicy().kill_switch is None


def test_an_explicit_switch_overrides_the_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engaged = tmp_path / "engaged.kill"
    engaged.touch()
    monkeypatch.setenv(KILL_SWITCH_ENV, str(engaged))
    mine = KillSwitch(tmp_path / "mine.kill")
    policy = RunPolicy(PolicyConfig(), kill_switch=mine)
    assert policy.kill_switch is mine
    assert not policy.before_step("prompt").decision.stopped


@pytest.mark.parametrize(
    ("path", "error", "match"),
    [(3, TypeError, "path must be a str or os.PathLike, got int"), (" ", ValueError, "empty")],
)
def test_bad_paths_are_refused(path: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        KillSwitch(path)  # type: ignore[arg-type]


def test_a_switch_that_cannot_be_checked_is_engaged_and_says_why_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # An emergency stop fails safe: only "no such file" releases it.
    loop = tmp_path / "loop.kill"
    loop.symlink_to(tmp_path / "other.kill")
    (tmp_path / "other.kill").symlink_to(loop)
    not_a_folder = tmp_path / "file"
    not_a_folder.touch()
    for path in (loop, not_a_folder / "agent.kill"):
        caplog.clear()
        switch = KillSwitch(path)
        with caplog.at_level("WARNING", logger="loopbreak.agent"):
            assert switch.engaged()
            assert switch.engaged()
            policy = RunPolicy(kill_switch=switch)
            assert policy.before_step("prompt").decision.reason is Reason.KILL_SWITCH
        warnings = [record.getMessage() for record in caplog.records]
        assert len(warnings) == 1
        assert warnings[0].startswith(f"kill switch {path}: cannot tell whether it is engaged (")
        assert warnings[0].endswith("); treated as engaged")
    assert not KillSwitch(tmp_path / "absent.kill").engaged()


def test_a_kill_file_behind_a_folder_the_worker_cannot_search_is_engaged(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "agent.kill").touch()
    locked.chmod(0o600)  # readable, not searchable: stat of what is inside fails with EACCES
    tmp_path.chmod(0o755)
    # Checked in a child process of another user: root searches every folder.
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's result is its exit status)
        try:
            if os.geteuid() == 0:
                os.setuid(65534)  # nobody
            os._exit(0 if KillSwitch(locked / "agent.kill").engaged() else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(child, 0)
    locked.chmod(0o700)
    assert os.waitstatus_to_exitcode(status) == 0
