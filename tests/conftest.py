"""Shared by every test: ``tests/`` is on the import path (pyproject's ``pythonpath``), so the
helpers in ``tests/support/`` import as ``support.*``; fakes live in ``support/fakes.py``."""

from __future__ import annotations

import importlib.util
import os

import pytest

from loopbreak.agent.kill_switch import KILL_SWITCH_ENV
from loopbreak.agent.policy import LOCKDOWN_ENV

# LiteLLM fetches its model-price map from the internet when imported, and with no network
# retries with sleeps; "True" makes it load the copy it ships (litellm_core_utils/
# get_model_cost_map.py reads it). Set here, before any test imports litellm, and inherited by
# the processes the tests start (the LiteLLM proxy).
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

# CrewAI sends telemetry and writes under ~ unless told not to, and reads some of its settings
# when imported: where it is installed, its offline settings go in before any test imports it.
if importlib.util.find_spec("crewai") is not None:
    import support.crewai_model  # noqa: F401

# Tests of libraries that the `test` extra does not always install: the agent frameworks need a
# newer Python than loopbreak does, the engines (torch, llama-cpp-python) come only with
# `make e2e`, and google-adk and CrewAI are tested in environments of their own (tests/envs/).
# Where the library is missing their modules are not collected.
ADAPTER_TESTS = {
    "pydantic_ai": ["integrations/test_pydantic_ai.py"],
    "agents": ["integrations/test_openai_agents.py"],
    "google.adk": [
        "integrations/test_google_adk.py",
        "integrations/test_google_adk_scenarios.py",
    ],
    "crewai": ["integrations/test_crewai.py", "integrations/test_crewai_scenarios.py"],
    "torch": ["e2e/test_engine_transformers.py"],
    "llama_cpp": ["e2e/test_engine_llama_cpp.py"],
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


collect_ignore = [
    path for module, paths in ADAPTER_TESTS.items() if not _installed(module) for path in paths
]


@pytest.fixture(autouse=True)
def no_policy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's shell must not decide any test: ``LOOPBREAK_FINAL_STEP_LOCKDOWN`` and
    ``LOOPBREAK_KILL_SWITCH`` are unset unless a test sets them."""
    monkeypatch.delenv(LOCKDOWN_ENV, raising=False)
    monkeypatch.delenv(KILL_SWITCH_ENV, raising=False)
