"""Budgets: each at its limit stops, one below allows; cost from prices; bad values refused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pytest

from loopbreak.agent.budget import BudgetMeter, Budgets, ModelPrice
from loopbreak.agent.decision import Check, DecisionKind, Number, Reason
from loopbreak.agent.policy import PolicyConfig, RunPolicy
from support.fakes import FakeClock

# Prices chosen so costs are exact in binary floating point: 125,000 output tokens at 8.0 per
# million cost exactly 1.0.
PRICES = {"small-model": ModelPrice(input_per_million=2.0, output_per_million=8.0)}


@dataclass(frozen=True)
class Case:
    """One budget: how to spend ``amount`` of it, the amounts just below and at its limit, and
    the value the policy reports for each."""

    budgets: Budgets
    check: Check
    spend: Callable[[RunPolicy, FakeClock, int], None]
    below: int
    at: int
    value_below: Number
    value_at: Number
    limit: Number


def wait(policy: RunPolicy, clock: FakeClock, seconds: int) -> None:
    clock.now += seconds


def input_tokens(policy: RunPolicy, clock: FakeClock, tokens: int) -> None:
    policy.record_usage("small-model", tokens, 0)


def output_tokens(policy: RunPolicy, clock: FakeClock, tokens: int) -> None:
    policy.record_usage("small-model", 0, tokens)


def mixed_tokens(policy: RunPolicy, clock: FakeClock, tokens: int) -> None:
    policy.record_usage("small-model", 400, 0)
    policy.record_usage("small-model", 0, tokens - 400)


def tool_calls(policy: RunPolicy, clock: FakeClock, calls: int) -> None:
    for index in range(calls):
        decision = policy.check_tool_call("read_file", {"path": f"{index}.py"})
        assert decision.kind is DecisionKind.ALLOW


# Spend 999 (value 999) or 1000 (value 1000) tokens against a limit of 1000.
TOKENS_999_1000 = (999, 1000, 999, 1000, 1000)

CASES = {
    "seconds": Case(Budgets(max_seconds=60), Check.SECONDS, wait, 59, 60, 59.0, 60.0, 60),
    "cost": Case(
        Budgets(max_cost=1.0, prices=PRICES),
        Check.COST,
        output_tokens,
        124_999,
        125_000,
        124_999 * 8.0 / 1_000_000,
        1.0,
        1.0,
    ),
    "input_tokens": Case(
        Budgets(max_input_tokens=1000), Check.INPUT_TOKENS, input_tokens, *TOKENS_999_1000
    ),
    "output_tokens": Case(
        Budgets(max_output_tokens=1000), Check.OUTPUT_TOKENS, output_tokens, *TOKENS_999_1000
    ),
    "total_tokens": Case(
        Budgets(max_total_tokens=1000), Check.TOTAL_TOKENS, mixed_tokens, *TOKENS_999_1000
    ),
    "tool_calls": Case(Budgets(max_tool_calls=3), Check.TOOL_CALLS, tool_calls, 2, 3, 2, 3, 3),
}


def started_policy(budgets: Budgets) -> tuple[RunPolicy, FakeClock]:
    clock = FakeClock(500.0)
    policy = RunPolicy(PolicyConfig(budgets=budgets), run_id="budget-run", clock=clock)
    assert policy.before_step("").decision.kind is DecisionKind.ALLOW
    return policy, clock


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_one_below_the_limit_the_next_step_and_tool_call_run(case: Case) -> None:
    policy, clock = started_policy(case.budgets)
    case.spend(policy, clock, case.below)
    (check,) = policy.budget_checks()
    assert (check.budget, check.value, check.limit) == (case.check, case.value_below, case.limit)
    assert not check.exhausted
    assert policy.check_tool_call("write_file", {"path": "out.txt"}).kind is DecisionKind.ALLOW
    assert policy.before_step("").decision.kind is DecisionKind.ALLOW


STEP_BUDGETS = {name: case for name, case in CASES.items() if case.check is not Check.TOOL_CALLS}


@pytest.mark.parametrize("case", STEP_BUDGETS.values(), ids=STEP_BUDGETS.keys())
def test_at_the_limit_the_next_step_stops_naming_the_budget(case: Case) -> None:
    policy, clock = started_policy(case.budgets)
    case.spend(policy, clock, case.at)
    plan = policy.before_step("")
    decision = plan.decision
    assert decision.stopped
    # The reason names the budget as its Budgets field does; the check says what was measured.
    assert decision.reason is Reason(f"max_{case.check.value}")
    assert case.budgets.to_dict()[decision.reason.value] == case.limit
    assert decision.message is not None and f"({case.limit:g}" in decision.message  # the limit
    assert (decision.check, decision.value) == (case.check, case.value_at)
    assert decision.limit == case.limit
    assert decision.step == 1
    assert policy.budget_checks()[0].to_dict() == {
        "budget": case.check.value,
        "value": case.value_at,
        "limit": case.limit,
        "exhausted": True,
    }


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_at_the_limit_the_next_tool_call_stops_too(case: Case) -> None:
    policy, clock = started_policy(case.budgets)
    case.spend(policy, clock, case.at)
    decision = policy.check_tool_call("write_file", {"path": "out.txt"})
    assert decision.stopped
    assert (decision.reason, decision.check) == (Reason(f"max_{case.check.value}"), case.check)
    assert decision.action_key == 'write_file({"path":"out.txt"})'


def test_spent_tool_calls_leave_a_step_to_answer_in() -> None:
    policy, clock = started_policy(CASES["tool_calls"].budgets)
    tool_calls(policy, clock, 3)
    plan = policy.before_step("")
    assert plan.decision.kind is DecisionKind.ALLOW and plan.tools_enabled
    decision = policy.check_tool_call("read_file", {"path": "next.py"})
    assert decision.stopped
    assert (decision.check, decision.value, decision.limit) == (Check.TOOL_CALLS, 3, 3)


def test_the_first_exhausted_budget_in_order_decides() -> None:
    policy, clock = started_policy(Budgets(max_seconds=10, max_output_tokens=5))
    policy.record_usage("m", 0, 5)
    clock.now += 10
    assert policy.before_step("").decision.check is Check.SECONDS


def test_cost_adds_every_priced_model() -> None:
    prices = {
        "small": ModelPrice(input_per_million=1.0, output_per_million=2.0),
        "large": ModelPrice(input_per_million=10.0, output_per_million=30.0),
    }
    meter = BudgetMeter(Budgets(prices=prices), FakeClock(500.0))
    meter.record_usage("small", 1_000_000, 500_000)  # 1.0 + 1.0
    meter.record_usage("large", 100_000, 100_000)  # 1.0 + 3.0
    meter.record_usage("small", 0, 500_000)  # 1.0
    usage = meter.usage()
    assert usage.cost == pytest.approx(7.0)
    assert (usage.input_tokens, usage.output_tokens) == (1_100_000, 1_100_000)
    assert usage.total_tokens == 2_200_000


def test_cost_is_unknown_when_a_model_has_no_price_and_no_cost_budget() -> None:
    meter = BudgetMeter(Budgets(prices=PRICES), FakeClock(500.0))
    meter.record_usage("small-model", 10, 10)
    meter.record_usage("other-model", 10, 10)
    assert meter.cost() is None
    assert meter.usage().to_dict()["cost"] is None


def test_a_cost_budget_refuses_a_model_without_a_price() -> None:
    policy, _ = started_policy(Budgets(max_cost=1.0, prices=PRICES))
    with pytest.raises(ValueError, match="no price for model 'gpt-x': max_cost is set"):
        policy.record_usage("gpt-x", 10, 10)


def test_usage_recorded_after_a_stop_still_counts() -> None:
    policy, _ = started_policy(Budgets(max_output_tokens=10))
    policy.record_usage("m", 0, 10)
    assert policy.before_step("").decision.stopped
    policy.record_usage("m", 0, 3)
    assert policy.usage().output_tokens == 13


def test_prices_cannot_change_behind_the_config() -> None:
    prices = dict(PRICES)
    budgets = Budgets(max_cost=1.0, prices=prices)
    prices["small-model"] = ModelPrice(input_per_million=0.0, output_per_million=0.0)
    assert budgets.prices["small-model"].output_per_million == 8.0
    with pytest.raises(TypeError):
        budgets.prices["x"] = ModelPrice(1.0, 1.0)  # type: ignore[index]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"max_seconds": -1}, ValueError, "max_seconds must be a finite number >= 0, got -1"),
        ({"max_cost": float("nan")}, ValueError, "max_cost must be a finite number >= 0"),
        ({"max_cost": "1.0"}, TypeError, "max_cost must be an int or float, got str"),
        ({"max_input_tokens": 1.5}, TypeError, "max_input_tokens must be an int, got float"),
        ({"max_total_tokens": -5}, ValueError, "max_total_tokens must be >= 0"),
        ({"max_tool_calls": True}, TypeError, "max_tool_calls must be an int, got bool"),
        ({"prices": [("m", 1.0)]}, TypeError, "prices must be a mapping"),
        ({"prices": {"m": 1.0}}, TypeError, r"prices\['m'\] must be a ModelPrice, got float"),
        ({"prices": {"": ModelPrice(1.0, 1.0)}}, ValueError, "name in prices must not be empty"),
    ],
)
def test_bad_budgets_are_refused(kwargs: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        Budgets(**kwargs)


def test_bad_prices_and_usage_are_refused() -> None:
    with pytest.raises(ValueError, match="output_per_million must be a finite number >= 0"):
        ModelPrice(input_per_million=1.0, output_per_million=-2.0)
    meter = BudgetMeter(Budgets(), FakeClock(500.0))
    with pytest.raises(ValueError, match="input_tokens must be >= 0"):
        meter.record_usage("m", -1, 0)
    with pytest.raises(TypeError, match="output_tokens must be an int, got float"):
        meter.record_usage("m", 0, 2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="model must not be empty"):
        meter.record_usage(" ", 0, 0)
    with pytest.raises(TypeError, match="budgets must be a Budgets"):
        BudgetMeter({"max_seconds": 1})  # type: ignore[arg-type]


def test_no_budget_is_enforced_by_default() -> None:
    policy, clock = started_policy(Budgets())
    policy.record_usage("m", 10**9, 10**9)
    clock.now += 10**6
    assert policy.budget_checks() == ()
    assert policy.before_step("").decision.kind is DecisionKind.ALLOW
