"""The run policy of an agent loop: step limit with warnings and a final-step nudge, repeated
actions, progress, budgets. Pure Python; works with any loop that can call it around each step.

One ``RunPolicy`` governs one run (the steps from a request to a final answer or a stop; the
words are those of docs/glossary.md). The loop calls:

- ``before_step(system_prompt)`` before each model call: a ``StepPlan`` with the system prompt
  to send (the caller's, with any addendum appended) and whether tools are offered;
- ``record_usage(model, input_tokens, output_tokens)`` after each model call;
- ``check_tool_call(tool, arguments)`` before running each tool call the model asked for;
- ``after_step(progress)`` when the step's tool results are in, with the progress it made;
- ``check_looping_answer(block)`` when the model's answer (or its reasoning, or a tool call's
  arguments) degenerated into a repetition loop and the stream guard cut it.

Each check returns a ``Decision`` (allow, warn or stop) and records it in the audit log; a stop
carries a one-line ``message`` for people (``PolicyConfig.stop_messages``). Before each step and
each tool call the policy also asks the kill switch (``loopbreak.agent.kill_switch``): an
engaged switch stops the run with ``kill_switch``. After a stop the run is over: further checks
raise ``CheckAfterStop``; a tool-call or progress check with no step in progress raises
``StepNotStarted``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
import uuid
import warnings
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, Optional, Union

from loopbreak.agent import _validate
from loopbreak.agent.actions import Arguments, action_key, cycle_copies
from loopbreak.agent.audit import AuditLog
from loopbreak.agent.budget import BudgetCheck, BudgetMeter, Budgets, Usage
from loopbreak.agent.decision import BUDGET_STOPS, Check, Decision, DecisionKind, Number, Reason
from loopbreak.agent.kill_switch import KillSwitch, Switch
from loopbreak.errors import CheckAfterStop, StepNotStarted

LOCKDOWN_ENV = "LOOPBREAK_FINAL_STEP_LOCKDOWN"
_ENV_TRUE = frozenset({"1", "true", "yes", "on"})
_ENV_FALSE = frozenset({"", "0", "false", "no", "off"})

WARNING_ADDENDUM = (
    "Only {steps_left} tool-use {steps_remain} in this run. Stop exploring and start acting now: "
    "use what you have already found and make only the calls the task still needs. "
    "Leave room to finish with a final text answer."
)
FINAL_STEP_NUDGE = (
    "This is the LAST step of this run. Write your final answer to the user now. You may still "
    "call tools, but the run ends after this step either way and you will not see their "
    "results: say what you did, what you found, and what is left to do."
)
LOCKDOWN_INSTRUCTION = (
    "This is the LAST step of this run and tools are disabled: do not try to call any. Write "
    "your final answer to the user now from what you have already found: what you did, what "
    "you found, and what is left to do."
)

REFUSAL_MESSAGE = (
    "Not run: this exact call was already made {value} times in a row. Use the results you "
    "already have or try a different action; repeating it again ends the run."
)
"""What the model is told of a call refused on its recovery step (``{value}``: the copies)."""

ANSWER_NUDGE = (
    "Your last answer was cut: it kept repeating {block}. Do not write that again; continue "
    "with what is still missing in new words, or give your final answer."
)
"""What the model is told after a looping answer cut on its recovery step (``{block}``: the
repeated text as a JSON string, at most ``NUDGE_BLOCK_CHARS`` of it)."""

NUDGE_BLOCK_CHARS = 80

_NEXT = " Rephrase the request or start a new run with a narrower scope."
DEFAULT_STOP_MESSAGES: Mapping[Reason, str] = MappingProxyType(
    {
        Reason.MAX_STEPS: "The run stopped after reaching its step limit ({limit} steps)." + _NEXT,
        Reason.LOOP_DETECTED: (
            "The run stopped because it kept repeating the same action ({value} times in a row)."
            + _NEXT
        ),
        Reason.NO_PROGRESS: "The run stopped after {value} steps without progress." + _NEXT,
        Reason.DEGENERATION: (
            "The run stopped because the answer degenerated into a repetition loop and was cut."
            + _NEXT
        ),
        Reason.MAX_SECONDS: (
            "The run stopped after reaching its time limit ({limit:g} seconds)." + _NEXT
        ),
        Reason.MAX_COST: "The run stopped after reaching its cost budget ({limit:g})." + _NEXT,
        Reason.MAX_INPUT_TOKENS: (
            "The run stopped after reaching its input token budget ({limit} tokens)." + _NEXT
        ),
        Reason.MAX_OUTPUT_TOKENS: (
            "The run stopped after reaching its output token budget ({limit} tokens)." + _NEXT
        ),
        Reason.MAX_TOTAL_TOKENS: (
            "The run stopped after reaching its token budget ({limit} tokens)." + _NEXT
        ),
        Reason.MAX_TOOL_CALLS: (
            "The run stopped after reaching its tool-call budget ({limit} calls)." + _NEXT
        ),
        Reason.KILL_SWITCH: (
            "The run was stopped by an operator's emergency switch; the work done so far is "
            "kept. Try again later."
        ),
    }
)
"""The message for people of each stop reason: why the run stopped and what to do next, one
line. ``{value}`` and ``{limit}`` are the decision's numbers (format specs like ``{limit:g}``
work)."""


@dataclass(frozen=True)
class PolicyConfig:
    """Every limit and threshold of the run policy. Defaults:

    - ``max_steps`` = 50: model calls per run. Steps are numbered from 0; the last is
      ``max_steps - 1`` and ``before_step`` for step ``max_steps`` stops with ``max_steps``.
    - ``warning_steps`` = 5: the steps just before the final one get the addendum "Only N
      tool-use steps remain in this run ..." with N counting down to 1 (with 50 steps: steps
      44-48, N = 5..1). N counts the steps left before the final one, this one included; the
      final step is kept for the answer. With fewer steps, every step before the final warns.
    - ``final_step_lockdown`` = None: the final step keeps tools and gets a nudge to answer now;
      True disables tools (``tool_choice="none"``) and asks for a synthesis instead. None reads
      the environment variable ``LOOPBREAK_FINAL_STEP_LOCKDOWN`` (1/true/yes/on or
      0/false/no/off, unset = off) when the ``RunPolicy`` is created; a bool here overrides it.
    - ``max_repeat_action`` = 3: back-to-back copies allowed of one tool call (same normalized
      name and arguments) or of one short cycle of calls (A,B,A,B,A,B); the next copy stops
      with ``loop_detected``. Only back-to-back copies count: a test run after each different
      edit is progress, and cycles catch the loops that alternate.
    - ``max_cycle_length`` = 4: longest cycle of calls watched (A,B,A,B has length 2), enough
      for read, edit, test, revert.
    - ``recovery_step`` = False: True gives the model one recovery step per run before a
      repeat stop, and one before a looping-answer stop. The first call over
      ``max_repeat_action`` is refused (``refuse``, not run, the model told why in one line,
      ``REFUSAL_MESSAGE``) and the run stops only if the model repeats it again. The first
      answer that loops is cut (``refuse``: the trimmed answer stays in the history, the model
      is told in one line what it repeated and what to do instead, ``ANSWER_NUDGE``) and the
      run stops only if a later answer loops again; no recovery step is given on the final
      step (no step is left for it). Off by default, so the 4th identical call and the first
      looping answer stop the run. ``recovery_turn``, its former name, still works as a
      keyword and an attribute, with a ``DeprecationWarning``; type checkers know only the
      attribute.
    - ``volatile_arguments`` = (): argument names left out of the repeat key at any depth (a
      progress note, a timestamp, a request id), so calls that differ only there are repeats.
    - ``no_progress_window`` = 4: steps in a row without a new progress signal that stop with
      ``no_progress``; None turns the check off.
    - ``budgets`` = ``Budgets()``: seconds, money, tokens, tool calls; none enforced by default.
    - ``stop_messages``: the one-line message for people of each stop reason, replacing the
      defaults of ``DEFAULT_STOP_MESSAGES`` for the reasons given (keys: ``Reason`` members or
      their values). After validation it holds every stop reason's message in force.
    """

    max_steps: int = 50
    warning_steps: int = 5
    final_step_lockdown: Optional[bool] = None
    max_repeat_action: int = 3
    max_cycle_length: int = 4
    recovery_step: bool = False
    volatile_arguments: frozenset[str] = frozenset()
    no_progress_window: Optional[int] = 4
    budgets: Budgets = field(default_factory=Budgets)
    stop_messages: Mapping[Union[Reason, str], str] = field(default_factory=dict)

    @property
    def recovery_turn(self) -> bool:
        """Deprecated: ``recovery_step``, by its former name."""
        warnings.warn(
            "PolicyConfig.recovery_turn is deprecated: use recovery_step",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.recovery_step

    def __post_init__(self) -> None:
        _validate.count("max_steps", self.max_steps, 1)
        _validate.count("warning_steps", self.warning_steps, 0)
        if self.final_step_lockdown is not None and not isinstance(self.final_step_lockdown, bool):
            raise TypeError(
                "final_step_lockdown must be a bool or None, "
                f"got {type(self.final_step_lockdown).__name__}"
            )
        _validate.count("max_repeat_action", self.max_repeat_action, 1)
        _validate.count("max_cycle_length", self.max_cycle_length, 1)
        if not isinstance(self.recovery_step, bool):
            raise TypeError(
                f"recovery_step must be a bool, got {type(self.recovery_step).__name__}"
            )
        object.__setattr__(self, "volatile_arguments", _argument_names(self.volatile_arguments))
        if self.no_progress_window is not None:
            _validate.count("no_progress_window", self.no_progress_window, 1)
        if not isinstance(self.budgets, Budgets):
            raise TypeError(f"budgets must be a Budgets, got {type(self.budgets).__name__}")
        # The messages in force, read-only, so a frozen config cannot change behind the policy.
        object.__setattr__(self, "stop_messages", _stop_messages(self.stop_messages))

    def to_dict(self) -> dict[str, Any]:
        """Every value in force, budgets and stop messages included, as plain values for JSON."""
        return {
            "max_steps": self.max_steps,
            "warning_steps": self.warning_steps,
            "final_step_lockdown": self.final_step_lockdown,
            "max_repeat_action": self.max_repeat_action,
            "max_cycle_length": self.max_cycle_length,
            "recovery_step": self.recovery_step,
            "volatile_arguments": sorted(self.volatile_arguments),
            "no_progress_window": self.no_progress_window,
            "budgets": self.budgets.to_dict(),
            "stop_messages": {
                Reason(reason).value: text for reason, text in self.stop_messages.items()
            },
        }

    def stop_message(self, reason: Reason, value: Number, limit: Number) -> str:
        """The message for people of a stop with ``reason`` at ``value`` against ``limit``."""
        return self.stop_messages[reason].format(value=value, limit=limit)


_init_fields = PolicyConfig.__init__


@functools.wraps(_init_fields)
def _init(
    self: PolicyConfig, *args: Any, recovery_turn: Optional[bool] = None, **kwargs: Any
) -> None:
    """The dataclass's ``__init__``, which also takes ``recovery_turn=``, the deprecated former
    name of ``recovery_step`` (not a field: ``replace`` and ``to_dict`` never see it)."""
    if recovery_turn is not None:
        warnings.warn(
            "PolicyConfig(recovery_turn=...) is deprecated: use recovery_step",
            DeprecationWarning,
            stacklevel=2,
        )
        if "recovery_step" in kwargs:
            raise TypeError("give recovery_step only (recovery_turn is its former name)")
        kwargs["recovery_step"] = recovery_turn
    _init_fields(self, *args, **kwargs)


PolicyConfig.__init__ = _init  # type: ignore[method-assign]


def _argument_names(given: object) -> frozenset[str]:
    if isinstance(given, str) or not isinstance(given, Iterable):
        raise TypeError(
            f"volatile_arguments must be a collection of str names, got {type(given).__name__}"
        )
    return frozenset(_validate.text("volatile_arguments[...]", name) for name in given)


def _stop_messages(given: object) -> Mapping[Reason, str]:
    if not isinstance(given, Mapping):
        raise TypeError(f"stop_messages must be a mapping, got {type(given).__name__}")
    messages = dict(DEFAULT_STOP_MESSAGES)
    for key, text in given.items():
        # A Reason is a str: its value ("max_steps") finds it too.
        reason = next((stop for stop in DEFAULT_STOP_MESSAGES if stop == key), None)
        if reason is None:
            stops = ", ".join(stop.value for stop in DEFAULT_STOP_MESSAGES)
            raise ValueError(f"stop_messages keys must be stop reasons ({stops}), got {key!r}")
        name = f"stop_messages[{reason.value!r}]"
        _validate.text(name, text)
        if "\n" in text or "\r" in text:
            raise ValueError(f"{name} must be one line")
        # Formatted at the stop, where it must not fail: values may be ints or floats.
        try:
            text.format(value=1, limit=1)
            text.format(value=1.5, limit=1.5)
        except (KeyError, IndexError, ValueError, AttributeError) as error:
            raise ValueError(
                f"{name} may use only the fields {{value}} and {{limit}}, with a format that "
                f"takes ints and floats: {error!r}"
            ) from None
        messages[reason] = text
    return MappingProxyType(messages)


def lockdown_from_env() -> bool:
    """``LOOPBREAK_FINAL_STEP_LOCKDOWN`` as a bool (unset: False); ``ValueError`` if unreadable."""
    raw = os.environ.get(LOCKDOWN_ENV, "")
    value = raw.strip().lower()
    if value in _ENV_TRUE:
        return True
    if value in _ENV_FALSE:
        return False
    raise ValueError(f"{LOCKDOWN_ENV} must be 1/true/yes/on or 0/false/no/off, got {raw!r}")


@dataclass(frozen=True)
class StepPlan:
    """How to run the next step. ``system_prompt`` is the caller's prompt with ``addendum``
    appended (unchanged when the addendum is empty). When the decision is a stop, the step must
    not run."""

    decision: Decision
    system_prompt: str
    addendum: str
    tools_enabled: bool

    @property
    def step(self) -> int:
        return self.decision.step

    def prompt_for(self, system_prompt: str) -> str:
        """``system_prompt`` with this step's addendum appended (unchanged without one)."""
        if not self.addendum:
            return system_prompt
        return f"{system_prompt}\n\n{self.addendum}" if system_prompt else self.addendum

    @property
    def tool_choice(self) -> Optional[str]:
        """``"none"`` when tools are disabled; None means keep the request's own choice."""
        return None if self.tools_enabled else "none"

    def to_dict(self) -> dict[str, Any]:
        """The plan as plain values, for JSON."""
        return {
            "decision": self.decision.to_dict(),
            "system_prompt": self.system_prompt,
            "addendum": self.addendum,
            "tools_enabled": self.tools_enabled,
            "tool_choice": self.tool_choice,
        }


class RunPolicy:
    """The policy of one run; see the module docstring for the calls the loop makes.

    ``run_id`` defaults to a random hex id. ``audit`` receives every decision (default: an
    in-memory ``AuditLog``). ``clock`` measures wall-clock seconds (inject a fake in tests).
    ``kill_switch`` is asked before each step and tool call; None takes the ``KillSwitch`` that
    ``LOOPBREAK_KILL_SWITCH`` names (no switch when it is unset). ``config.final_step_lockdown``
    left at None is read from the environment here, so ``self.config`` holds the values in force.
    """

    def __init__(
        self,
        config: Optional[PolicyConfig] = None,
        *,
        run_id: Optional[str] = None,
        audit: Optional[AuditLog] = None,
        clock: Callable[[], float] = time.monotonic,
        kill_switch: Optional[Switch] = None,
    ) -> None:
        config = config if config is not None else PolicyConfig()
        if not isinstance(config, PolicyConfig):
            raise TypeError(f"config must be a PolicyConfig, got {type(config).__name__}")
        if config.final_step_lockdown is None:
            config = replace(config, final_step_lockdown=lockdown_from_env())
        self.config = config
        self.run_id = _validate.text("run_id", run_id) if run_id is not None else uuid.uuid4().hex
        self.audit = audit if audit is not None else AuditLog()
        if kill_switch is not None and not isinstance(kill_switch, Switch):
            raise TypeError(
                "kill_switch must have an engaged() method (a KillSwitch), "
                f"got {type(kill_switch).__name__}"
            )
        self.kill_switch = kill_switch if kill_switch is not None else KillSwitch.from_env()
        self._meter = BudgetMeter(config.budgets, clock)
        self._decisions = 0
        self._step: Optional[int] = None
        self._step_ended = False
        self._stop: Optional[Decision] = None
        # Enough history to see max_repeat_action copies of the longest cycle watched.
        self._recent_actions: deque[str] = deque(
            maxlen=config.max_cycle_length * config.max_repeat_action
        )
        self._recovery_used = False
        self._answer_recovery_used = False
        self._looping_answers = 0
        self._progress_seen: set[bytes] = set()
        self._steps_without_progress = 0
        self._last_progress_step: Optional[int] = None

    @property
    def step(self) -> Optional[int]:
        """The current (last started) step, or None before the first."""
        return self._step

    @property
    def stop(self) -> Optional[Decision]:
        """The stop decision that ended the run, or None while it may go on."""
        return self._stop

    @property
    def last_progress_step(self) -> Optional[int]:
        """The last step whose ``after_step`` reported a new progress signal, or None if none
        has: the run's last durable progress."""
        return self._last_progress_step

    def usage(self) -> Usage:
        """What the run has used so far: steps, seconds, tokens, cost, tool calls."""
        return self._meter.usage()

    def budget_checks(self) -> tuple[BudgetCheck, ...]:
        """Each enforced budget with its value and limit."""
        return self._meter.checks()

    def before_step(self, system_prompt: str) -> StepPlan:
        """Decides whether the next step may run and how: stop on the kill switch, at the step
        limit (``max_steps``) or on an exhausted budget other than tool calls (named by the
        budget: ``max_total_tokens``, ...); otherwise allow, warn (``steps_running_out``) or, on
        the final step, warn with the nudge (``final_step``) or the lockdown
        (``final_step_lockdown``)."""
        if not isinstance(system_prompt, str):
            raise TypeError(f"system_prompt must be a str, got {type(system_prompt).__name__}")
        self._require_running()
        step = 0 if self._step is None else self._step + 1
        if self._kill_switch_engaged():
            stop = self._kill_switch_stop(step, key=None)
            return StepPlan(stop, system_prompt, "", tools_enabled=False)
        max_steps = self.config.max_steps
        if step >= max_steps:
            stop = self._decide(
                step, DecisionKind.STOP, Reason.MAX_STEPS, Check.STEPS, step, max_steps
            )
            return StepPlan(stop, system_prompt, "", tools_enabled=False)
        # A spent tool-call budget does not stop a step: the step can still answer in text.
        exhausted = self._meter.exhausted(ignore=(Check.TOOL_CALLS,))
        if exhausted is not None:
            stop = self._budget_stop(step, exhausted, key=None)
            return StepPlan(stop, system_prompt, "", tools_enabled=False)

        kind, reason, addendum, tools_enabled = self._guidance(step)
        self._step, self._step_ended = step, False
        self._meter.record_step()
        decision = self._decide(step, kind, reason, Check.STEPS, step, max_steps)
        plan = StepPlan(decision, system_prompt, addendum, tools_enabled)
        return replace(plan, system_prompt=plan.prompt_for(system_prompt))

    def record_usage(self, model: str, input_tokens: int, output_tokens: int) -> None:
        """Adds one model call's token usage (also after a stop: the call was made). Budgets
        are checked by the next ``before_step`` or ``check_tool_call``."""
        self._meter.record_usage(model, input_tokens, output_tokens)

    def check_tool_call(self, tool: str, arguments: Arguments = None) -> Decision:
        """Decides whether a tool call the model asked for may run: stop on the kill switch, on
        an exhausted budget (tool calls included), or with ``loop_detected`` when the call would
        be copy ``max_repeat_action + 1`` of one call or cycle in a row. An allowed call is
        counted."""
        step = self._current_step()
        key = action_key(tool, arguments, ignore=self.config.volatile_arguments)
        if self._kill_switch_engaged():
            return self._kill_switch_stop(step, key)
        exhausted = self._meter.exhausted()
        if exhausted is not None:
            return self._budget_stop(step, exhausted, key)
        copies = cycle_copies(list(self._recent_actions), key, self.config.max_cycle_length)
        limit = self.config.max_repeat_action
        if copies >= limit and self.config.recovery_step and not self._recovery_used:
            # Not counted: a call that was not run is no copy; the same call next is the stop.
            self._recovery_used = True
            refused = self._decide(
                step, DecisionKind.REFUSE, Reason.LOOP_DETECTED, Check.REPEATED_ACTION,
                copies, limit, key,
            )  # fmt: skip
            return refused
        if copies >= limit:
            kind, reason = DecisionKind.STOP, Reason.LOOP_DETECTED
        else:
            kind, reason = DecisionKind.ALLOW, Reason.WITHIN_LIMITS
            self._recent_actions.append(key)
            self._meter.record_tool_call()
        return self._decide(step, kind, reason, Check.REPEATED_ACTION, copies, limit, key)

    def after_step(self, progress: Iterable[str] = ()) -> Decision:
        """Ends the current step with its progress signals (new facts, state changes, results,
        as strings). A signal counts only the first time it is reported in the run, so passing
        every result seen is fine; ``no_progress_window`` steps in a row without a new one stop
        with ``no_progress``."""
        if isinstance(progress, str):
            raise TypeError("progress must be an iterable of str signals, not a single str")
        signals = set()
        for signal in progress:
            if not isinstance(signal, str):
                raise TypeError(f"progress signals must be str, got {type(signal).__name__}")
            # A digest, not the signal: callers may pass whole tool results.
            digest = hashlib.blake2b(signal.encode("utf-8", "surrogatepass"), digest_size=16)
            signals.add(digest.digest())
        step = self._current_step()
        self._step_ended = True
        new_signals = signals - self._progress_seen
        self._progress_seen |= new_signals
        if new_signals:
            self._steps_without_progress, self._last_progress_step = 0, step
        else:
            self._steps_without_progress += 1
        window = self.config.no_progress_window
        if window is not None and self._steps_without_progress >= window:
            kind, reason = DecisionKind.STOP, Reason.NO_PROGRESS
        else:
            kind, reason = DecisionKind.ALLOW, Reason.WITHIN_LIMITS
        return self._decide(
            step, kind, reason, Check.PROGRESS, self._steps_without_progress, window
        )

    def check_looping_answer(self, block: str) -> Decision:
        """Decides on an answer of the current step that degenerated into a repetition loop
        (the stream guard cut it; ``block`` is the repeated text): with ``recovery_step``, the
        first time and with a step left, a refusal whose ``message`` nudges the model
        (``ANSWER_NUDGE``); otherwise a stop with ``degeneration``. ``value`` counts the run's
        looping answers against a limit of 1: an answer may not loop."""
        if not isinstance(block, str):  # may be whitespace: a loop of blank lines
            raise TypeError(f"block must be a str, got {type(block).__name__}")
        step = self._current_step()
        self._looping_answers += 1
        step_left = step < self.config.max_steps - 1
        if self.config.recovery_step and step_left and not self._answer_recovery_used:
            self._answer_recovery_used = True
            preview = block if len(block) <= NUDGE_BLOCK_CHARS else block[:NUDGE_BLOCK_CHARS] + "…"
            return self._decide(
                step, DecisionKind.REFUSE, Reason.DEGENERATION, Check.LOOPING_ANSWER,
                self._looping_answers, 1,
                message=ANSWER_NUDGE.format(block=json.dumps(preview, ensure_ascii=False)),
            )  # fmt: skip
        return self._decide(
            step, DecisionKind.STOP, Reason.DEGENERATION, Check.LOOPING_ANSWER,
            self._looping_answers, 1,
        )  # fmt: skip

    def _require_running(self) -> None:
        if self._stop is not None:
            raise CheckAfterStop(self._stop)

    def _current_step(self) -> int:
        self._require_running()
        if self._step is None:
            raise StepNotStarted("no step started: call before_step first")
        if self._step_ended:
            raise StepNotStarted(
                f"step {self._step} already ended with after_step: call before_step first"
            )
        return self._step

    def _kill_switch_engaged(self) -> bool:
        return self.kill_switch is not None and self.kill_switch.engaged()

    def _kill_switch_stop(self, step: int, key: Optional[str]) -> Decision:
        # Engaged is 1 against a limit of 1, so value >= limit reads as for every other stop.
        return self._decide(
            step, DecisionKind.STOP, Reason.KILL_SWITCH, Check.KILL_SWITCH, 1, 1, key
        )

    def _guidance(self, step: int) -> tuple[DecisionKind, Reason, str, bool]:
        """Decision kind, reason, system-prompt addendum and whether tools stay on, for a step
        below the limit."""
        final_step = self.config.max_steps - 1
        if step == final_step and self.config.final_step_lockdown:
            return DecisionKind.WARN, Reason.FINAL_STEP_LOCKDOWN, LOCKDOWN_INSTRUCTION, False
        if step == final_step:
            return DecisionKind.WARN, Reason.FINAL_STEP, FINAL_STEP_NUDGE, True
        steps_left = final_step - step  # steps before the final one, this one included
        if steps_left <= self.config.warning_steps:
            addendum = WARNING_ADDENDUM.format(
                steps_left=steps_left,
                steps_remain="step remains" if steps_left == 1 else "steps remain",
            )
            return DecisionKind.WARN, Reason.STEPS_RUNNING_OUT, addendum, True
        return DecisionKind.ALLOW, Reason.WITHIN_LIMITS, "", True

    def _budget_stop(self, step: int, exhausted: BudgetCheck, key: Optional[str]) -> Decision:
        return self._decide(
            step,
            DecisionKind.STOP,
            BUDGET_STOPS[exhausted.budget],
            exhausted.budget,
            exhausted.value,
            exhausted.limit,
            key,
        )

    def _decide(
        self,
        step: int,
        kind: DecisionKind,
        reason: Reason,
        check: Check,
        value: Number,
        limit: Optional[Number],
        key: Optional[str] = None,
        message: Optional[str] = None,
    ) -> Decision:
        if kind is DecisionKind.STOP:
            assert limit is not None  # every stop is a value held against its limit
            message = self.config.stop_message(reason, value, limit)
        elif kind is DecisionKind.REFUSE and message is None:
            message = REFUSAL_MESSAGE.format(value=value)
        decision = Decision(
            run_id=self.run_id,
            seq=self._decisions,
            step=step,
            kind=kind,
            reason=reason,
            check=check,
            value=value,
            limit=limit,
            action_key=key,
            elapsed=self._meter.elapsed(),
            message=message,
        )
        self._decisions += 1
        if decision.stopped:
            self._stop = decision
        self.audit.record(decision)
        return decision
