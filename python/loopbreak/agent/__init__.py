"""Agent governance: explicit limits around an agent loop, an audit log of every decision, and a
stop receipt for every run.

- ``RunPolicy`` / ``PolicyConfig`` / ``StepPlan`` (``policy``): four calls around each step of
  any loop: step limit with warnings and a final-step nudge or lockdown, repeated actions
  (``action_key``), progress, and ``Budgets`` (``budget``) of seconds, money, tokens and tool
  calls.
- ``Decision`` (``decision``): what each check decided, why (``Reason``) and by which number.
- ``AuditLog`` and its sinks (``audit``): every decision, in memory, JSON lines, SQLite, logging.
- ``RunEvidence`` / ``Receipt`` / ``ReceiptState`` (``receipt``): how the run ended, decided from
  evidence in a fixed priority order, never from the final text, with the operator's next
  action; ``save_receipt``.
- ``KillSwitch`` (``kill_switch``): the emergency stop every policy checks before each step and
  tool call.
"""

from loopbreak.agent.actions import action_key
from loopbreak.agent.audit import AuditLog, JsonLinesSink, LoggingSink, SqliteSink
from loopbreak.agent.budget import Budgets, ModelPrice, Usage
from loopbreak.agent.decision import Check, Decision, DecisionKind, Reason
from loopbreak.agent.kill_switch import KillSwitch
from loopbreak.agent.policy import PolicyConfig, RunPolicy, StepPlan
from loopbreak.agent.receipt import Receipt, ReceiptState, RunEvidence, save_receipt

__all__ = [
    "action_key",
    "AuditLog",
    "Budgets",
    "Check",
    "Decision",
    "DecisionKind",
    "JsonLinesSink",
    "KillSwitch",
    "LoggingSink",
    "ModelPrice",
    "PolicyConfig",
    "Reason",
    "Receipt",
    "ReceiptState",
    "RunEvidence",
    "RunPolicy",
    "save_receipt",
    "SqliteSink",
    "StepPlan",
    "Usage",
]
