"""The scenarios every agent-framework adapter is run through (tests/integrations/
test_agent_scenarios.py and, for the frameworks with environments of their own, their
``test_*_scenarios.py``): each framework's driver runs a ``Scenario`` on its own offline test
model and returns an ``Outcome``; ``check`` holds every framework to the same receipt, tool runs,
last answer and audit log."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Union

import pytest

from loopbreak.agent import Check, DecisionKind, PolicyConfig, Reason, ReceiptState
from loopbreak.agent.kill_switch import KILL_SWITCH_ENV
from loopbreak.integrations._governance import AgentRun, AgentVerifier
from support.recorded import RECORDED

LOOP = RECORDED["d10-greedy"].text  # a real greedy loop of SmolLM2-135M
PROMPT = "Add the numbers."
Step = Union[dict[str, int], str]  # a call of the tool ``add`` with these arguments, or an answer


@dataclass
class Adder:
    """The tool of every scenario (``add``): adds, counts its runs, and at run ``kill_at``
    engages the kill switch from another process (an operator's ``touch``). With ``error``
    (the framework's tool error) every run fails instead, each error worded differently."""

    switch: Path
    kill_at: Optional[int] = None
    error: Optional[Callable[[str], Exception]] = None
    ran: list[tuple[int, int]] = field(default_factory=list)

    def tool(self) -> Callable[[int, int], str]:
        def add(a: int, b: int) -> str:
            """Adds two numbers."""
            self.ran.append((a, b))
            if len(self.ran) == self.kill_at:
                touch = "import pathlib, sys; pathlib.Path(sys.argv[1]).touch()"
                subprocess.run([sys.executable, "-c", touch, self.switch], check=True, timeout=60)
            if self.error is not None:
                raise self.error(f"the adder is down (attempt {len(self.ran)}, {a} + {b})")
            return str(a + b)

        return add


@dataclass(frozen=True)
class Outcome:
    run: AgentRun
    answer: str  # the last answer in the history the framework keeps
    texts: list[str]  # the text of every message of that history, in order


STOP = "the stop message"
TRIMMED = "the trimmed answer"


@dataclass(frozen=True)
class Scenario:
    script: Sequence[Step]
    state: ReceiptState
    reason: str
    ran: int  # tool runs
    answer: str  # STOP, TRIMMED or the text itself
    config: PolicyConfig = PolicyConfig()
    verified: Optional[bool] = None
    streamed: bool = False
    kill_at: Optional[int] = None
    failing: bool = False
    refuses: Optional[bool] = None  # a recovery turn is given (default: when it is on)

    def verifier(self) -> Optional[AgentVerifier]:
        verified = self.verified
        return None if verified is None else (lambda run: verified)


Driver = Callable[[Scenario, Adder], Outcome]

SAME = {"a": 1, "b": 2}
COUNTING = [{"a": n, "b": 1} for n in range(10)]


SCENARIOS = {
    "repeat": Scenario([SAME] * 5 + ["3"], ReceiptState.STUCK, "loop_detected", 3, STOP),
    "recovery turn, the model repeats": Scenario(
        [SAME] * 6 + ["3"],
        ReceiptState.STUCK,
        "loop_detected",
        3,
        STOP,
        config=PolicyConfig(recovery_turn=True),
    ),
    "recovery turn, the model recovers": Scenario(
        [SAME] * 4 + ["3"],
        ReceiptState.VERIFIED_COMPLETE,
        "natural_finish",
        3,
        "3",
        config=PolicyConfig(recovery_turn=True),
        verified=True,
    ),
    "max_steps with warnings": Scenario(
        COUNTING,
        ReceiptState.BOUNDED_STOP,
        "max_steps",
        4,
        STOP,
        config=PolicyConfig(max_steps=4, final_step_lockdown=False),
    ),
    "looping answer": Scenario(
        [LOOP], ReceiptState.STUCK, "degeneration", 0, TRIMMED, verified=True
    ),
    "looping answer, streamed": Scenario(
        [LOOP], ReceiptState.STUCK, "degeneration", 0, TRIMMED, verified=True, streamed=True
    ),
    "finish without a verifier": Scenario(
        [SAME, "3"], ReceiptState.FALSE_COMPLETE, "natural_finish", 1, "3"
    ),
    "finish, verified": Scenario(
        [SAME, "3"], ReceiptState.VERIFIED_COMPLETE, "natural_finish", 1, "3", verified=True
    ),
    "kill switch from another process": Scenario(
        COUNTING, ReceiptState.BOUNDED_STOP, "kill_switch", 2, STOP, kill_at=2
    ),
    # The answer's recovery turn: the cut answer stays trimmed in the history, then the nudge.
    **{
        f"recovery turn, the answer loops again{streamed}": Scenario(
            [LOOP, LOOP],
            ReceiptState.STUCK,
            "degeneration",
            0,
            TRIMMED,
            config=PolicyConfig(recovery_turn=True),
            verified=True,
            streamed=bool(streamed),
        )
        for streamed in ("", ", streamed")
    },
    **{
        f"recovery turn, the answer recovers{streamed}": Scenario(
            [LOOP, SAME, "3"],
            ReceiptState.VERIFIED_COMPLETE,
            "natural_finish",
            1,
            "3",
            config=PolicyConfig(recovery_turn=True),
            verified=True,
            streamed=bool(streamed),
        )
        for streamed in ("", ", streamed")
    },
    "recovery turn on the final step: the loop stops the run": Scenario(
        [SAME, LOOP, "3"],
        ReceiptState.STUCK,
        "degeneration",
        1,
        TRIMMED,
        config=PolicyConfig(max_steps=2, recovery_turn=True),
        refuses=False,
    ),
    # Each error worded differently, each call different: only the errors say "no progress".
    "a tool that keeps failing": Scenario(
        COUNTING,
        ReceiptState.STUCK,
        "no_progress",
        3,
        STOP,
        config=PolicyConfig(no_progress_window=3),
        failing=True,
    ),
    "a failing tool called A-B-A-B: a cycle": Scenario(
        [SAME, {"a": 2, "b": 1}] * 4,
        ReceiptState.STUCK,
        "loop_detected",
        6,
        STOP,
        config=PolicyConfig(no_progress_window=None),
        failing=True,
    ),
}


def check(
    driver: Driver, scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs ``scenario`` through ``driver`` with the kill switch at a file of ``tmp_path`` and
    checks what every framework must end in."""
    switch = tmp_path / "stop-every-run"
    monkeypatch.setenv(KILL_SWITCH_ENV, str(switch))
    adder = Adder(switch, kill_at=scenario.kill_at)
    outcome = driver(scenario, adder)

    run = outcome.run
    assert run.receipt is not None
    assert (run.receipt.state, run.receipt.reason) == (scenario.state, scenario.reason)
    assert len(adder.ran) == scenario.ran
    if scenario.answer == STOP:
        assert run.stop is not None and outcome.answer == run.stop.message
    elif scenario.answer == TRIMMED:
        assert run.degeneration is not None and outcome.answer == run.degeneration.persist_text
        assert LOOP.startswith(outcome.answer[: run.degeneration.finding.start])
        assert len(outcome.answer) < len(LOOP) // 2
    else:
        assert outcome.answer == scenario.answer
    events = run.policy.audit.events
    kinds = [event.kind for event in events]
    answers = [event for event in events if event.check is Check.LOOPING_ANSWER]
    assert len(answers) == scenario.script.count(LOOP)  # each looping answer decided, audited
    if scenario.reason == "degeneration":
        assert answers[-1].kind is DecisionKind.STOP and run.stop == answers[-1]
    refuses = scenario.config.recovery_turn if scenario.refuses is None else scenario.refuses
    assert (DecisionKind.REFUSE in kinds) == refuses
    refused = [event for event in answers if event.refused]
    if refused:
        # The cut answer, trimmed, then the nudge: what it repeated, what to do instead.
        nudge = refused[0].message
        assert nudge is not None and nudge.startswith("Your last answer was cut")
        assert '"' in nudge and "\n" not in nudge
        at = outcome.texts.index(nudge)
        first = outcome.texts[at - 1]
        assert LOOP.startswith(first[: len(first) // 2]) and len(first) < len(LOOP) // 2
    if scenario.config.max_steps == 4:
        reasons = [
            event.reason for event in run.policy.audit.events if event.check.value == "steps"
        ]
        assert reasons == [Reason.STEPS_RUNNING_OUT] * 3 + [Reason.FINAL_STEP, Reason.MAX_STEPS]
