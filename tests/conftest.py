"""Shared by every test: ``tests/`` is on the import path (pyproject's ``pythonpath``), so the
helpers in ``tests/support/`` import as ``support.*``; fakes live in ``support/fakes.py``."""

from __future__ import annotations

import pytest

from loopbreak.agent.policy import LOCKDOWN_ENV


@pytest.fixture(autouse=True)
def no_lockdown_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's shell must not decide any test: ``LOOPBREAK_FINAL_STEP_LOCKDOWN`` is unset
    unless a test sets it."""
    monkeypatch.delenv(LOCKDOWN_ENV, raising=False)
