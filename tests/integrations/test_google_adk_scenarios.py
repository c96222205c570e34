"""The shared scenarios (tests/support/agent_scenarios.py) through the Google ADK adapter, run in
the environment of its own (tests/envs/google-adk.txt): the same receipts and the same last answer
in the session ADK keeps as the frameworks of tests/integrations/test_agent_scenarios.py. ADK runs
for real on ``Scripted``, a ``BaseLlm`` (ADK's base for custom models) that answers from the
scenario's script; a failing tool raises, and ADK's own ``ReflectAndRetryToolPlugin`` hands the
error to the model as the call's result."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.agent_scenarios import PROMPT, SCENARIOS, Adder, Outcome, Scenario, check
from support.google_adk import Scripted, run_agent, session_texts


def adk(scenario: Scenario, adder: Adder) -> Outcome:
    from google.adk.agents import LlmAgent
    from google.adk.plugins.reflect_retry_tool_plugin import ReflectAndRetryToolPlugin

    from loopbreak.integrations.google_adk import LoopbreakPlugin

    plugin = LoopbreakPlugin(scenario.config, verifier=scenario.verifier())
    plugins: list[object] = [plugin]
    if scenario.failing:
        adder.error = RuntimeError
        plugins.append(ReflectAndRetryToolPlugin(max_retries=20))
    agent = LlmAgent(
        name="adder", model=Scripted(script=list(scenario.script)), tools=[adder.tool()]
    )
    events = run_agent(agent, PROMPT, plugins, streamed=scenario.streamed)
    governed = plugin.last_run
    assert governed is not None
    answers = [event for event in events if event.is_final_response() and event.content]
    texts = session_texts(governed.messages)
    last = answers[-1].content
    assert last is not None and last.parts
    return Outcome(governed, "".join(part.text or "" for part in last.parts), texts)


# ADK ends an invocation at a text answer, and no callback can call the model again after it: an
# answer cut on its recovery step ends the run with its trimmed text, the nudge unsent
# (docs/integrations/google_adk.md, Gaps). Strict: a version of ADK that lets it pass fails here.
NO_ANSWER_RECOVERY_TURN = pytest.mark.xfail(
    strict=True, reason="ADK: no model call after a text answer (docs/integrations/google_adk.md)"
)
CASES = [
    pytest.param(
        scenario,
        id=name,
        marks=[NO_ANSWER_RECOVERY_TURN] if name.startswith("recovery step, the answer") else [],
    )
    for name, scenario in SCENARIOS.items()
]


@pytest.mark.parametrize("scenario", CASES)
def test_adk_ends_each_scenario_in_the_same_receipt(
    scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check(adk, scenario, tmp_path, monkeypatch)
