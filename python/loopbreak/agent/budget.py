"""Budgets of one run (wall-clock seconds, money, tokens, tool calls) and the meter that counts
what the run has used against them.

A budget left at None is not enforced; by default only the step limit bounds a run
(``PolicyConfig.max_steps``), because no token or money figure fits every model. A budget is
exhausted once the amount used reaches its limit (``value >= limit``): a run with
``max_tool_calls=10`` makes 10 calls and the 11th is refused; a run with
``max_total_tokens=1000`` that has used 1000 tokens takes no further step. The policy's stop
names the budget as its field does (reason ``max_tool_calls``, ``max_total_tokens``, ...; see
``loopbreak.agent.decision.BUDGET_STOPS``), and its ``check`` what was measured (``tool_calls``,
``total_tokens``, ...).
"""

from __future__ import annotations

import time
from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Optional

from loopbreak.agent import _validate
from loopbreak.agent.decision import Check, Number

# Providers quote token prices per million tokens; so does ``ModelPrice``.
_TOKENS_PER_PRICE_UNIT = 1_000_000


@dataclass(frozen=True)
class ModelPrice:
    """What one model costs per million tokens, in the currency of ``Budgets.max_cost``."""

    input_per_million: float
    output_per_million: float

    def __post_init__(self) -> None:
        _validate.amount("input_per_million", self.input_per_million)
        _validate.amount("output_per_million", self.output_per_million)

    def to_dict(self) -> dict[str, float]:
        """The prices as plain values, for JSON."""
        return {
            "input_per_million": self.input_per_million,
            "output_per_million": self.output_per_million,
        }


@dataclass(frozen=True)
class Budgets:
    """The limits of one run; None (the default for each) means not enforced.

    - ``max_seconds``: wall-clock seconds since the policy was created, by its clock.
    - ``max_cost``: money, computed from token usage and ``prices``. Setting it requires a price
      for every model whose usage is recorded: a budget that counted an unknown model as free
      would not be a budget.
    - ``max_input_tokens``, ``max_output_tokens``, ``max_total_tokens``: tokens as the provider
      reports them (total = input + output).
    - ``max_tool_calls``: tool calls the policy allowed. Checked before each tool call only:
      once it is spent, a step may still run and answer without tools.
    - ``prices``: model name -> ``ModelPrice``; receipts report the cost computed from it even
      when ``max_cost`` is None.
    """

    max_seconds: Optional[float] = None
    max_cost: Optional[float] = None
    max_input_tokens: Optional[int] = None
    max_output_tokens: Optional[int] = None
    max_total_tokens: Optional[int] = None
    max_tool_calls: Optional[int] = None
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("max_seconds", "max_cost"):
            if getattr(self, name) is not None:
                _validate.amount(name, getattr(self, name))
        for name in ("max_input_tokens", "max_output_tokens", "max_total_tokens", "max_tool_calls"):
            if getattr(self, name) is not None:
                _validate.count(name, getattr(self, name), 0)
        if not isinstance(self.prices, Mapping):
            raise TypeError(f"prices must be a mapping, got {type(self.prices).__name__}")
        for model, price in self.prices.items():
            _validate.text("a model name in prices", model)
            if not isinstance(price, ModelPrice):
                raise TypeError(
                    f"prices[{model!r}] must be a ModelPrice, got {type(price).__name__}"
                )
        # A read-only copy, so a frozen config cannot change behind the policy's back.
        object.__setattr__(self, "prices", MappingProxyType(dict(self.prices)))

    def to_dict(self) -> dict[str, Any]:
        """Every limit (None where not enforced) and the prices, as plain values for JSON."""
        return {
            "max_seconds": self.max_seconds,
            "max_cost": self.max_cost,
            "max_input_tokens": self.max_input_tokens,
            "max_output_tokens": self.max_output_tokens,
            "max_total_tokens": self.max_total_tokens,
            "max_tool_calls": self.max_tool_calls,
            "prices": {model: price.to_dict() for model, price in self.prices.items()},
        }


@dataclass(frozen=True)
class BudgetCheck:
    """One budget measured: which, how much is used, and its limit."""

    budget: Check
    value: Number
    limit: Number

    @property
    def exhausted(self) -> bool:
        return self.value >= self.limit

    def to_dict(self) -> dict[str, Any]:
        """The check as plain values, for JSON."""
        return {
            "budget": self.budget.value,
            "value": self.value,
            "limit": self.limit,
            "exhausted": self.exhausted,
        }


@dataclass(frozen=True)
class Usage:
    """What a run has used so far. ``cost`` is None when a model without a price was used."""

    steps: int
    elapsed_seconds: float
    input_tokens: int
    output_tokens: int
    cost: Optional[float]
    tool_calls: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        """What the run used, ``total_tokens`` included, as plain values for JSON."""
        return {
            "steps": self.steps,
            "elapsed_seconds": self.elapsed_seconds,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost": self.cost,
            "tool_calls": self.tool_calls,
        }


class BudgetMeter:
    """Counts a run's steps, tokens per model and tool calls, and measures them against
    ``budgets``. Elapsed seconds are counted by ``clock`` from the meter's creation."""

    def __init__(self, budgets: Budgets, clock: Callable[[], float] = time.monotonic) -> None:
        if not isinstance(budgets, Budgets):
            raise TypeError(f"budgets must be a Budgets, got {type(budgets).__name__}")
        self.budgets = budgets
        self._clock = clock
        self._started = clock()
        self._steps = 0
        self._tool_calls = 0
        # Tokens per model: the cost is computed from these totals when asked, so rounding
        # does not accumulate over many small records.
        self._tokens: dict[str, tuple[int, int]] = {}

    def elapsed(self) -> float:
        return self._clock() - self._started

    def record_step(self) -> None:
        self._steps += 1

    def record_tool_call(self) -> None:
        self._tool_calls += 1

    def record_usage(self, model: str, input_tokens: int, output_tokens: int) -> None:
        """Adds one model call's token usage. Raises ``ValueError`` for a model without a price
        when ``max_cost`` is set."""
        _validate.text("model", model)
        _validate.count("input_tokens", input_tokens, 0)
        _validate.count("output_tokens", output_tokens, 0)
        if self.budgets.max_cost is not None and model not in self.budgets.prices:
            raise ValueError(
                f"no price for model {model!r}: max_cost is set, so pass "
                f"Budgets(prices={{{model!r}: ModelPrice(...)}})"
            )
        used_in, used_out = self._tokens.get(model, (0, 0))
        self._tokens[model] = (used_in + input_tokens, used_out + output_tokens)

    def cost(self) -> Optional[float]:
        """Money spent, or None if a model without a price was used."""
        total = 0.0
        for model, (input_tokens, output_tokens) in self._tokens.items():
            price = self.budgets.prices.get(model)
            if price is None:
                return None
            total += (
                input_tokens * price.input_per_million + output_tokens * price.output_per_million
            ) / _TOKENS_PER_PRICE_UNIT
        return total

    def usage(self) -> Usage:
        """What the run has used so far."""
        return Usage(
            steps=self._steps,
            elapsed_seconds=self.elapsed(),
            input_tokens=sum(used_in for used_in, _ in self._tokens.values()),
            output_tokens=sum(used_out for _, used_out in self._tokens.values()),
            cost=self.cost(),
            tool_calls=self._tool_calls,
        )

    def checks(self) -> tuple[BudgetCheck, ...]:
        """Every enforced budget, in a fixed order: seconds, cost, input, output and total
        tokens, tool calls."""
        usage = self.usage()
        budgets = self.budgets
        measured: tuple[tuple[Check, Number, Optional[Number]], ...] = (
            (Check.SECONDS, usage.elapsed_seconds, budgets.max_seconds),
            # The cost is unknown only without max_cost (record_usage refuses unpriced models
            # when it is set), and then this check is skipped.
            (Check.COST, usage.cost or 0.0, budgets.max_cost),
            (Check.INPUT_TOKENS, usage.input_tokens, budgets.max_input_tokens),
            (Check.OUTPUT_TOKENS, usage.output_tokens, budgets.max_output_tokens),
            (Check.TOTAL_TOKENS, usage.total_tokens, budgets.max_total_tokens),
            (Check.TOOL_CALLS, usage.tool_calls, budgets.max_tool_calls),
        )
        return tuple(
            BudgetCheck(budget, value, limit)
            for budget, value, limit in measured
            if limit is not None
        )

    def exhausted(self, ignore: Container[Check] = ()) -> Optional[BudgetCheck]:
        """The first exhausted budget in that order, leaving out those in ``ignore``, or
        None."""
        return next(
            (check for check in self.checks() if check.exhausted and check.budget not in ignore),
            None,
        )
