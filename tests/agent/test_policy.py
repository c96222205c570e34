"""The run policy: step warnings and the final step, repeated actions and cycles, progress."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from loopbreak.agent.actions import Arguments, action_key
from loopbreak.agent.decision import Check, Decision, DecisionKind, Reason
from loopbreak.agent.policy import (
    ANSWER_NUDGE,
    DEFAULT_STOP_MESSAGES,
    FINAL_STEP_NUDGE,
    LOCKDOWN_ENV,
    LOCKDOWN_INSTRUCTION,
    NUDGE_BLOCK_CHARS,
    REFUSAL_MESSAGE,
    PolicyConfig,
    RunPolicy,
    StepPlan,
)
from loopbreak.errors import CheckAfterStop, LoopbreakError, StepNotStarted
from support.fakes import FakeClock

MAX = 50
PROMPT = "You are a careful coding agent. Answer in English."


def new_policy(**config: Any) -> RunPolicy:
    return RunPolicy(PolicyConfig(**config), run_id="run-1", clock=FakeClock(1000.0))


def all_plans(policy: RunPolicy) -> list[StepPlan]:
    return [policy.before_step(PROMPT) for _ in range(policy.config.max_steps)]


# Steps: 0-43 unchanged, 44-48 warn with N = 5..1, 49 nudge or lockdown, 50 stops.


def test_steps_0_to_43_leave_the_prompt_and_tools_unchanged() -> None:
    plans = all_plans(new_policy(max_steps=MAX))
    for step, plan in enumerate(plans[:44]):
        assert plan.step == step
        assert plan.decision.kind is DecisionKind.ALLOW
        assert plan.decision.reason is Reason.WITHIN_LIMITS
        assert plan.system_prompt == PROMPT
        assert plan.addendum == ""
        assert plan.tools_enabled and plan.tool_choice is None


def test_steps_44_to_48_warn_with_n_counting_down() -> None:
    plans = all_plans(new_policy(max_steps=MAX))
    for step, expected_n in zip(range(44, 49), (5, 4, 3, 2, 1)):
        plan = plans[step]
        assert plan.decision.kind is DecisionKind.WARN
        assert plan.decision.reason is Reason.STEPS_RUNNING_OUT
        noun = "step remains" if expected_n == 1 else "steps remain"
        assert plan.addendum.startswith(f"Only {expected_n} tool-use {noun} in this run.")
        assert "Stop exploring and start acting now" in plan.addendum
        assert "Leave room to finish with a final text answer." in plan.addendum
        # Appended to the caller's prompt, never replacing it.
        assert plan.system_prompt == f"{PROMPT}\n\n{plan.addendum}"
        assert plan.tools_enabled and plan.tool_choice is None


def test_step_49_keeps_tools_and_nudges_by_default() -> None:
    policy = new_policy(max_steps=MAX)
    final = all_plans(policy)[49]
    assert policy.config.final_step_lockdown is False
    assert final.decision.kind is DecisionKind.WARN
    assert final.decision.reason is Reason.FINAL_STEP
    assert final.addendum == FINAL_STEP_NUDGE
    assert final.addendum.startswith("This is the LAST step of this run.")
    assert "You may still call tools" in final.addendum
    assert final.system_prompt == f"{PROMPT}\n\n{FINAL_STEP_NUDGE}"
    assert final.tools_enabled and final.tool_choice is None


def assert_locked_down(plans: list[StepPlan]) -> None:
    final = plans[49]
    assert final.decision.kind is DecisionKind.WARN
    assert final.decision.reason is Reason.FINAL_STEP_LOCKDOWN
    assert final.addendum == LOCKDOWN_INSTRUCTION
    assert final.system_prompt == f"{PROMPT}\n\n{LOCKDOWN_INSTRUCTION}"
    assert not final.tools_enabled
    assert final.tool_choice == "none"
    # Only the final step changes: every earlier step still has its tools.
    assert all(plan.tools_enabled for plan in plans[:49])


def test_step_49_locks_down_with_the_argument() -> None:
    assert_locked_down(all_plans(new_policy(max_steps=MAX, final_step_lockdown=True)))


@pytest.mark.parametrize("value", ["1", "true", "YES", " on "])
def test_step_49_locks_down_with_the_env_var(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(LOCKDOWN_ENV, value)
    policy = new_policy(max_steps=MAX)
    assert policy.config.final_step_lockdown is True  # the value in force, for receipts
    assert_locked_down(all_plans(policy))


@pytest.mark.parametrize("value", ["", "0", "false", "No", "off"])
def test_env_var_off_values_keep_the_nudge(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(LOCKDOWN_ENV, value)
    assert all_plans(new_policy(max_steps=MAX))[49].decision.reason is Reason.FINAL_STEP


def test_the_argument_overrides_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCKDOWN_ENV, "1")
    plans = all_plans(new_policy(max_steps=MAX, final_step_lockdown=False))
    assert plans[49].decision.reason is Reason.FINAL_STEP
    assert plans[49].tools_enabled


def test_an_unreadable_env_var_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCKDOWN_ENV, "maybe")
    with pytest.raises(ValueError, match=f"{LOCKDOWN_ENV}.*'maybe'"):
        new_policy()


def test_step_50_stops_with_max_steps_and_the_run_is_over() -> None:
    policy = new_policy(max_steps=MAX)
    all_plans(policy)
    plan = policy.before_step(PROMPT)
    assert plan.decision.stopped
    assert plan.decision.reason is Reason.MAX_STEPS
    assert (plan.decision.check, plan.decision.value, plan.decision.limit) == (Check.STEPS, 50, 50)
    assert plan.decision.message == (
        "The run stopped after reaching its step limit (50 steps). "
        "Rephrase the request or start a new run with a narrower scope."
    )
    assert plan.step == 50
    assert not plan.tools_enabled
    assert policy.stop == plan.decision
    assert policy.step == 49  # step 50 never started
    with pytest.raises(
        CheckAfterStop, match="already stopped at step 50 \\(max_steps\\)"
    ) as raised:
        policy.before_step(PROMPT)
    assert raised.value.stop == plan.decision


@pytest.mark.parametrize("max_steps", [1, 2, 6, 7, 20, 120])
def test_every_boundary_follows_max_steps(max_steps: int) -> None:
    plans = all_plans(new_policy(max_steps=max_steps))
    final = max_steps - 1
    first_warning = max(0, final - 5)
    reasons = [plan.decision.reason for plan in plans]
    assert reasons == (
        [Reason.WITHIN_LIMITS] * first_warning
        + [Reason.STEPS_RUNNING_OUT] * (final - first_warning)
        + [Reason.FINAL_STEP]
    )
    counts = [plan.addendum.split()[1] for plan in plans[first_warning:final]]
    assert counts == [str(n) for n in range(final - first_warning, 0, -1)]


def test_warning_steps_sets_how_many_steps_warn() -> None:
    plans = all_plans(new_policy(max_steps=10, warning_steps=2))
    assert [plan.decision.kind for plan in plans] == [DecisionKind.ALLOW] * 7 + [
        DecisionKind.WARN
    ] * 3
    assert plans[7].addendum.startswith("Only 2 tool-use steps remain")


def test_an_empty_caller_prompt_gets_just_the_addendum() -> None:
    policy = new_policy(max_steps=1)
    assert policy.before_step("").system_prompt == FINAL_STEP_NUDGE


# Repeated actions.


def test_key_ignores_key_order_whitespace_and_number_formatting() -> None:
    variants: list[Arguments] = [
        {"path": "src/app.py", "limit": 10, "opts": {"a": 1.5, "b": [1, 2]}},
        '{"opts": {"b": [1.0, 2e0], "a": 1.50}, "limit": 10.0, "path": "src/app.py"}',
        '{ "limit" : 1e1 ,\n  "path":"  src/app.py ", "opts":{"a":15e-1,"b":[1,2]} }',
    ]
    keys = {action_key("read_file", variant) for variant in variants}
    assert len(keys) == 1
    assert keys.pop() == 'read_file({"limit":10,"opts":{"a":1.5,"b":[1,2]},"path":"src/app.py"})'


def test_key_collapses_whitespace_inside_strings_and_in_non_json_arguments() -> None:
    assert action_key("search", {"q": "loop  break\n docs"}) == action_key(
        "search", {"q": "loop break docs"}
    )
    assert action_key("shell", "ls   -la  /tmp") == action_key("shell", " ls -la /tmp")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"limit": 10}, {"limit": "10"}),  # a string is not a number
        ({"flag": True}, {"flag": 1}),  # a bool is not a number
        ({"ids": [1, 2]}, {"ids": [2, 1]}),  # list order is meaning
        ({"path": "a.txt"}, {"path": "b.txt"}),
        ({"x": 0.1}, {"x": 0.10000001}),
    ],
)
def test_key_tells_different_arguments_apart(first: Any, second: Any) -> None:
    assert action_key("tool", first) != action_key("tool", second)


def test_no_arguments_are_one_key() -> None:
    assert action_key("list_dir") == action_key("list_dir", "") == action_key("list_dir", "{}")
    assert action_key("list_dir", {}) == action_key(" list_dir ", None)


@pytest.mark.parametrize(
    ("tool", "arguments", "error", "message"),
    [
        ("", None, ValueError, "tool must not be empty"),
        (3, None, TypeError, "tool must be a str"),
        ("t", ["a"], TypeError, "arguments must be a mapping"),
        ("t", {"a": {1, 2}}, TypeError, r"arguments\['a'\] must hold JSON values, got set"),
        ("t", {1: "a"}, TypeError, "keys must be str"),
    ],
)
def test_key_rejects_bad_input(tool: Any, arguments: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        action_key(tool, arguments)


def call_in_new_step(policy: RunPolicy, tool: str, arguments: Any = None) -> Decision:
    policy.before_step(PROMPT)
    return policy.check_tool_call(tool, arguments)


def test_fourth_identical_call_stops_with_loop_detected() -> None:
    policy = new_policy()
    variants = [
        {"path": "a.py", "start": 1},
        '{"start": 1.0, "path": "a.py"}',
        '{ "path" : "a.py" , "start" : 1e0 }',
        {"start": 1, "path": " a.py"},
    ]
    decisions = [call_in_new_step(policy, "read_file", variant) for variant in variants]
    assert [d.kind for d in decisions] == [DecisionKind.ALLOW] * 3 + [DecisionKind.STOP]
    assert [d.value for d in decisions] == [0, 1, 2, 3]
    stop = decisions[-1]
    assert stop.reason is Reason.LOOP_DETECTED
    assert (stop.check, stop.limit) == (Check.REPEATED_ACTION, 3)
    assert stop.action_key == 'read_file({"path":"a.py","start":1})'
    assert policy.stop == stop
    assert policy.usage().tool_calls == 3  # the stopped call is not counted as made
    assert stop.message == (
        "The run stopped because it kept repeating the same action (3 times in a row). "
        "Rephrase the request or start a new run with a narrower scope."
    )
    with pytest.raises(CheckAfterStop, match="loop_detected"):
        policy.check_tool_call("read_file", {"path": "b.py"})


def test_identical_calls_count_only_back_to_back() -> None:
    policy = new_policy()
    calls = ["a", "a", "a", "b", "a", "a", "a"]
    decisions = [call_in_new_step(policy, "read_file", {"path": path}) for path in calls]
    assert all(d.kind is DecisionKind.ALLOW for d in decisions)
    assert call_in_new_step(policy, "read_file", {"path": "a"}).reason is Reason.LOOP_DETECTED


@pytest.mark.parametrize("cycle", [["A", "B"], ["A", "B", "C"], ["A", "B", "C", "D"]])
def test_a_cycle_repeated_max_repeat_action_times_stops(cycle: list[str]) -> None:
    policy = new_policy()
    for _ in range(3):
        for name in cycle:
            assert call_in_new_step(policy, name).kind is DecisionKind.ALLOW
    stop = call_in_new_step(policy, cycle[0])
    assert stop.reason is Reason.LOOP_DETECTED
    assert (stop.value, stop.limit) == (3, 3)
    assert stop.action_key == f"{cycle[0]}({{}})"


def test_a_cycle_longer_than_max_cycle_length_is_not_watched() -> None:
    policy = new_policy(max_cycle_length=2)
    for _ in range(4):
        for name in ["A", "B", "C"]:
            assert call_in_new_step(policy, name).kind is DecisionKind.ALLOW


def test_a_broken_cycle_starts_counting_again() -> None:
    policy = new_policy()
    for name in ["A", "B", "A", "B", "C", "A", "B", "A", "B"]:
        assert call_in_new_step(policy, name).kind is DecisionKind.ALLOW
    assert call_in_new_step(policy, "A").value == 2


# A recovery step before the repeat stop (off by default: the 4th identical call stops).


def test_with_a_recovery_step_the_first_repeat_over_the_limit_is_refused_and_the_next_stops() -> (
    None
):
    policy = new_policy(recovery_step=True)
    for _ in range(3):
        assert call_in_new_step(policy, "read_file", {"path": "a"}).kind is DecisionKind.ALLOW
    refused = call_in_new_step(policy, "read_file", {"path": "a"})
    assert refused.refused and not refused.stopped and policy.stop is None
    assert (refused.reason, refused.value, refused.limit) == (Reason.LOOP_DETECTED, 3, 3)
    assert refused.message == REFUSAL_MESSAGE.format(value=3) and "\n" not in refused.message
    assert policy.usage().tool_calls == 3  # the refused call did not run
    stop = call_in_new_step(policy, "read_file", {"path": "a"})
    assert stop.stopped and stop.reason is Reason.LOOP_DETECTED and stop.value == 3
    kinds = [event.kind for event in policy.audit.events if event.check is Check.REPEATED_ACTION]
    assert kinds == [DecisionKind.ALLOW] * 3 + [DecisionKind.REFUSE, DecisionKind.STOP]


def test_a_model_that_takes_its_recovery_step_goes_on_and_a_later_loop_stops_at_once() -> None:
    policy = new_policy(recovery_step=True)
    for path in ["a", "a", "a", "a", "b", "b", "b"]:
        decision = call_in_new_step(policy, "read_file", {"path": path})
        assert not decision.stopped
    assert call_in_new_step(policy, "read_file", {"path": "b"}).stopped  # one recovery per run


def test_without_a_recovery_step_the_fourth_identical_call_stops() -> None:
    policy = new_policy()
    assert not policy.config.recovery_step
    for _ in range(3):
        call_in_new_step(policy, "read_file", {"path": "a"})
    assert call_in_new_step(policy, "read_file", {"path": "a"}).stopped


# Looping answers: a stop, or with a recovery step a refusal that nudges the model first.


def answer_loops_in_new_step(policy: RunPolicy, block: str = "la la ") -> Decision:
    policy.before_step(PROMPT)
    return policy.check_looping_answer(block)


def test_without_a_recovery_step_the_first_looping_answer_stops_the_run() -> None:
    policy = new_policy()
    stop = answer_loops_in_new_step(policy)
    assert stop.stopped and policy.stop == stop
    assert (stop.reason, stop.check, stop.value, stop.limit) == (
        Reason.DEGENERATION, Check.LOOPING_ANSWER, 1, 1,
    )  # fmt: skip
    assert stop.message == DEFAULT_STOP_MESSAGES[Reason.DEGENERATION]
    with pytest.raises(CheckAfterStop):
        policy.check_looping_answer("la la ")


def test_with_a_recovery_step_the_first_looping_answer_is_refused_with_a_nudge() -> None:
    policy = new_policy(recovery_step=True)
    block = 'say "hi"\n' * 20  # longer than the preview, with a quote and a newline
    refused = answer_loops_in_new_step(policy, block)
    assert refused.refused and policy.stop is None
    assert (refused.reason, refused.value, refused.limit) == (Reason.DEGENERATION, 1, 1)
    preview = json.dumps(block[:NUDGE_BLOCK_CHARS] + "…", ensure_ascii=False)
    assert refused.message == ANSWER_NUDGE.format(block=preview) and "\n" not in refused.message
    policy.after_step([])
    stop = answer_loops_in_new_step(policy)
    assert stop.stopped and (stop.reason, stop.value) == (Reason.DEGENERATION, 2)
    kinds = [event.kind for event in policy.audit.events if event.check is Check.LOOPING_ANSWER]
    assert kinds == [DecisionKind.REFUSE, DecisionKind.STOP]


def test_the_answer_recovery_step_is_its_own_and_needs_a_step_left() -> None:
    policy = new_policy(recovery_step=True, max_steps=6)
    for _ in range(4):  # the repeat's recovery step is used at the 4th call
        call_in_new_step(policy, "read_file", {"path": "a"})
    assert policy.audit.events[-1].refused
    assert answer_loops_in_new_step(policy).refused  # step 4: the answer's own recovery step
    assert answer_loops_in_new_step(policy).stopped
    final = new_policy(recovery_step=True, max_steps=2)
    call_in_new_step(final, "read_file", {"path": "a"})
    assert answer_loops_in_new_step(final).stopped  # the final step: no step left for it


# Volatile arguments: left out of the repeat key.


def test_calls_that_differ_only_in_volatile_arguments_are_repeats() -> None:
    policy = new_policy(volatile_arguments={"note", "request_id"})
    for index in range(3):
        arguments = {"path": "a", "note": f"attempt {index}", "request_id": index}
        assert call_in_new_step(policy, "read_file", arguments).kind is DecisionKind.ALLOW
    stop = call_in_new_step(policy, "read_file", {"path": "a", "note": "surely now"})
    assert stop.reason is Reason.LOOP_DETECTED and stop.action_key == 'read_file({"path":"a"})'
    # Without the setting the notes make every call different.
    plain = new_policy()
    for index in range(4):
        arguments = {"path": "a", "note": f"attempt {index}"}
        assert not call_in_new_step(plain, "read_file", arguments).stopped


def test_an_alternation_that_differs_only_in_volatile_arguments_stays_a_cycle() -> None:
    policy = new_policy(volatile_arguments=["at"])
    for index in range(3):
        assert not call_in_new_step(policy, "read", {"path": "a", "at": index}).stopped
        assert not call_in_new_step(policy, "write", {"path": "a", "at": index}).stopped
    assert call_in_new_step(policy, "read", {"path": "a", "at": 9}).reason is Reason.LOOP_DETECTED


def test_volatile_argument_names_are_left_out_at_any_depth() -> None:
    ignore = frozenset({"ts"})
    nested = {"q": {"text": "x", "ts": 1}, "items": [{"ts": 2, "id": 1}]}
    assert action_key("t", nested, ignore=ignore) == 't({"items":[{"id":1}],"q":{"text":"x"}})'


@pytest.mark.parametrize(
    ("value", "error"), [("note", TypeError), (["note", ""], ValueError), ([3], TypeError)]
)
def test_volatile_arguments_must_be_names(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="volatile_arguments"):
        PolicyConfig(volatile_arguments=value)


def test_recovery_step_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="recovery_step"):
        PolicyConfig(recovery_step=1)  # type: ignore[arg-type]


def test_recovery_turn_the_former_name_still_works_and_says_what_to_use() -> None:
    deprecated = r"PolicyConfig\(recovery_turn=\.\.\.\) is deprecated: use recovery_step"
    with pytest.warns(DeprecationWarning, match=deprecated) as seen:
        config = PolicyConfig(recovery_turn=True)  # type: ignore[call-arg]
    assert seen[0].filename == __file__  # the warning points at the caller's line
    assert config.recovery_step and config == PolicyConfig(recovery_step=True)
    assert config.to_dict()["recovery_step"] is True
    with pytest.warns(DeprecationWarning, match="recovery_turn is deprecated: use recovery_step"):
        assert config.recovery_turn is True
    policy = RunPolicy(config)
    for _ in range(3):
        assert call_in_new_step(policy, "ls", {"path": "."}).kind is DecisionKind.ALLOW
    assert call_in_new_step(policy, "ls", {"path": "."}).kind is DecisionKind.REFUSE
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="must be a bool"):
        PolicyConfig(recovery_turn=1)  # type: ignore[call-arg]
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="recovery_step only"):
        PolicyConfig(recovery_step=True, recovery_turn=True)  # type: ignore[call-arg]
    assert replace(config, max_steps=3).recovery_step  # a plain field to dataclasses


def test_same_tool_with_different_arguments_never_stops() -> None:
    policy = new_policy()
    for index in range(40):
        decision = call_in_new_step(policy, "read_file", {"path": f"src/module_{index}.py"})
        assert decision.kind is DecisionKind.ALLOW
        assert decision.value == 0
    assert policy.stop is None


def test_several_calls_in_one_step_count_in_order() -> None:
    policy = new_policy(max_repeat_action=1)
    policy.before_step(PROMPT)
    assert policy.check_tool_call("grep", {"q": "x"}).kind is DecisionKind.ALLOW
    assert policy.check_tool_call("grep", {"q": "y"}).kind is DecisionKind.ALLOW
    assert policy.check_tool_call("grep", {"q": "y"}).reason is Reason.LOOP_DETECTED


# Progress.


def step_with_progress(policy: RunPolicy, progress: list[str]) -> Decision:
    policy.before_step(PROMPT)
    return policy.after_step(progress)


def test_a_window_of_steps_without_new_signals_stops_with_no_progress() -> None:
    policy = new_policy()
    assert step_with_progress(policy, ["found: config in settings.py"]).value == 0
    decisions = [step_with_progress(policy, []) for _ in range(4)]
    assert [d.kind for d in decisions] == [DecisionKind.ALLOW] * 3 + [DecisionKind.STOP]
    assert [d.value for d in decisions] == [1, 2, 3, 4]
    stop = decisions[-1]
    assert stop.reason is Reason.NO_PROGRESS
    assert (stop.check, stop.limit, stop.step) == (Check.PROGRESS, 4, 4)
    assert stop.message is not None
    assert stop.message.startswith("The run stopped after 4 steps without progress.")
    assert all(decision.message is None for decision in decisions[:-1])  # only stops have one
    with pytest.raises(CheckAfterStop, match="no_progress"):
        policy.after_step(["a new fact, too late"])


def test_the_last_progress_step_is_the_last_with_a_new_signal() -> None:
    policy = new_policy(no_progress_window=None)
    assert policy.last_progress_step is None
    step_with_progress(policy, [])
    assert policy.last_progress_step is None
    step_with_progress(policy, ["fact a"])
    step_with_progress(policy, ["fact a"])  # seen before: not progress
    assert policy.last_progress_step == 1
    step_with_progress(policy, ["fact a", "fact b"])
    assert policy.last_progress_step == 3


def test_a_signal_seen_before_is_no_progress() -> None:
    policy = new_policy(no_progress_window=2)
    step_with_progress(policy, ["result:abc"])
    assert step_with_progress(policy, ["result:abc"]).value == 1
    assert step_with_progress(policy, ["result:abc"]).reason is Reason.NO_PROGRESS


def test_a_new_signal_resets_the_window() -> None:
    policy = new_policy(no_progress_window=2)
    for index in range(10):
        assert step_with_progress(policy, []).kind is DecisionKind.ALLOW
        assert step_with_progress(policy, [f"fact {index}"]).value == 0


def test_no_progress_window_none_turns_the_check_off() -> None:
    policy = new_policy(no_progress_window=None)
    for _ in range(20):
        decision = step_with_progress(policy, [])
        assert decision.kind is DecisionKind.ALLOW and decision.limit is None


def test_progress_must_be_str_signals() -> None:
    policy = new_policy()
    policy.before_step(PROMPT)
    with pytest.raises(TypeError, match="not a single str"):
        policy.after_step("new fact")
    with pytest.raises(TypeError, match="progress signals must be str, got int"):
        policy.after_step([1])  # type: ignore[list-item]


# Misuse and bad configuration.


def test_calls_outside_a_step_are_errors() -> None:
    policy = new_policy()
    with pytest.raises(StepNotStarted, match="call before_step first"):
        policy.check_tool_call("t")
    with pytest.raises(StepNotStarted, match="call before_step first"):
        policy.after_step([])
    policy.before_step(PROMPT)
    policy.after_step([])
    with pytest.raises(StepNotStarted, match="step 0 already ended"):
        policy.after_step([])
    with pytest.raises(StepNotStarted, match="step 0 already ended"):
        policy.check_tool_call("t")


@pytest.mark.parametrize(("error", "stop_first"), [(CheckAfterStop, True), (StepNotStarted, False)])
def test_misuse_errors_are_package_errors_and_runtime_errors(
    error: type[LoopbreakError], stop_first: bool
) -> None:
    assert issubclass(error, RuntimeError)
    policy = new_policy(max_steps=1)
    policy.before_step(PROMPT)
    policy.after_step([])
    if stop_first:
        assert policy.before_step(PROMPT).decision.stopped
    with pytest.raises(LoopbreakError) as raised:
        policy.check_tool_call("t")
    assert type(raised.value) is error
    with pytest.raises(RuntimeError):  # callers that caught RuntimeError still do
        policy.check_tool_call("t")


# Stop messages for people.


def test_every_stop_reason_has_a_default_message_of_one_line() -> None:
    stops = set(Reason) - {
        Reason.WITHIN_LIMITS,
        Reason.STEPS_RUNNING_OUT,
        Reason.FINAL_STEP,
        Reason.FINAL_STEP_LOCKDOWN,
    }
    assert set(DEFAULT_STOP_MESSAGES) == stops
    config = PolicyConfig()
    for reason in stops:
        message = config.stop_message(reason, 12, 50)
        assert message.startswith("The run ") and "\n" not in message
    assert config.stop_message(Reason.MAX_SECONDS, 61.5, 60.0) == (
        "The run stopped after reaching its time limit (60 seconds). "
        "Rephrase the request or start a new run with a narrower scope."
    )


def test_stop_messages_are_configurable_per_reason() -> None:
    policy = new_policy(
        max_steps=1,
        stop_messages={"max_steps": "Out of steps after {value} of {limit}: try a smaller ask."},
    )
    messages = policy.config.stop_messages
    assert messages[Reason.LOOP_DETECTED] == DEFAULT_STOP_MESSAGES[Reason.LOOP_DETECTED]
    assert set(policy.config.to_dict()["stop_messages"]) == {r.value for r in DEFAULT_STOP_MESSAGES}
    policy.before_step(PROMPT)
    stop = policy.before_step(PROMPT).decision
    assert stop.message == "Out of steps after 1 of 1: try a smaller ask."
    assert stop.to_dict()["message"] == stop.message


@pytest.mark.parametrize(
    ("messages", "error", "match"),
    [
        ({"final_step": "x"}, ValueError, "keys must be stop reasons .* got 'final_step'"),
        ({"step_limit": "x"}, ValueError, "keys must be stop reasons"),
        ({Reason.MAX_STEPS: ""}, ValueError, r"stop_messages\['max_steps'\] must not be empty"),
        ({Reason.MAX_STEPS: 3}, TypeError, r"stop_messages\['max_steps'\] must be a str"),
        ({Reason.NO_PROGRESS: "a\nb"}, ValueError, "must be one line"),
        ({Reason.MAX_COST: "{budget}"}, ValueError, "only the fields {value} and {limit}"),
        ({Reason.MAX_COST: "{limit:d}"}, ValueError, "a format that takes ints and floats"),
        ({Reason.MAX_COST: "{limit.x}"}, ValueError, "only the fields {value} and {limit}"),
        ([("max_steps", "x")], TypeError, "stop_messages must be a mapping"),
    ],
)
def test_bad_stop_messages_are_refused(messages: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        PolicyConfig(stop_messages=messages)


@pytest.mark.parametrize(
    ("config", "error", "message"),
    [
        ({"max_steps": 0}, ValueError, "max_steps must be >= 1, got 0"),
        ({"max_steps": True}, TypeError, "max_steps must be an int, got bool"),
        ({"max_steps": "50"}, TypeError, "max_steps must be an int, got str"),
        ({"warning_steps": -1}, ValueError, "warning_steps must be >= 0"),
        ({"final_step_lockdown": "yes"}, TypeError, "final_step_lockdown must be a bool or None"),
        ({"max_repeat_action": 0}, ValueError, "max_repeat_action must be >= 1"),
        ({"max_cycle_length": 0}, ValueError, "max_cycle_length must be >= 1"),
        ({"no_progress_window": 0}, ValueError, "no_progress_window must be >= 1"),
        ({"budgets": {}}, TypeError, "budgets must be a Budgets, got dict"),
    ],
)
def test_bad_config_values_are_refused(config: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        PolicyConfig(**config)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"config": {"max_steps": 3}}, TypeError, "config must be a PolicyConfig"),
        ({"run_id": ""}, ValueError, "run_id must not be empty"),
        ({"kill_switch": "/var/run/agent.kill"}, TypeError, "kill_switch must have an engaged"),
    ],
)
def test_bad_policy_arguments_are_refused(kwargs: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        RunPolicy(**kwargs)


def test_system_prompt_must_be_a_str() -> None:
    with pytest.raises(TypeError, match="system_prompt must be a str, got NoneType"):
        new_policy().before_step(None)  # type: ignore[arg-type]


def test_decisions_are_numbered_and_serialize_to_json() -> None:
    clock = FakeClock(1000.0)
    policy = RunPolicy(PolicyConfig(), run_id="run-7", clock=clock)
    plan = policy.before_step(PROMPT)
    clock.now += 2.5
    call = policy.check_tool_call("read_file", {"path": "a"})
    assert (plan.decision.seq, call.seq) == (0, 1)
    assert json.loads(json.dumps(call.to_dict())) == {
        "run_id": "run-7",
        "seq": 1,
        "step": 0,
        "decision": "allow",
        "reason": "within_limits",
        "check": "repeated_action",
        "value": 0,
        "limit": 3,
        "action_key": 'read_file({"path":"a"})',
        "elapsed": 2.5,
        "message": None,
    }
    assert plan.to_dict()["tool_choice"] is None


def test_default_run_ids_are_unique() -> None:
    ids = {RunPolicy().run_id for _ in range(20)}
    assert len(ids) == 20
