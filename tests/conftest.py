"""Shared by every test: ``tests/`` is on the import path (pyproject's ``pythonpath``), so the
helpers in ``tests/support/`` import as ``support.*``; fakes live in ``support/fakes.py``."""

from __future__ import annotations

import pytest

from loopbreak.agent.kill_switch import KILL_SWITCH_ENV
from loopbreak.agent.policy import LOCKDOWN_ENV


@pytest.fixture(autouse=True)
def no_policy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's shell must not decide any test: ``LOOPBREAK_FINAL_STEP_LOCKDOWN`` and
    ``LOOPBREAK_KILL_SWITCH`` are unset unless a test sets them."""
    monkeypatch.delenv(LOCKDOWN_ENV, raising=False)
    monkeypatch.delenv(KILL_SWITCH_ENV, raising=False)
