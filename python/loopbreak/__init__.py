"""loopbreak: stop language-model repetition loops.

The detector is a Rust core (``loopbreak._core``); this package re-exports it:

- ``Detector``: fed text deltas as they stream, reports a ``Finding`` where a rule first holds.
- ``scan(text)``: every degenerate region of a whole text.
- ``trim(text)``: the text to persist, each region cut to its first few copies plus a marker.
- ``Rules``: every threshold, validated.
- ``TokenDetector`` / ``TokenStreams``: the same over token ids, one stream or a batch per step.
- ``scan_many`` / ``scan_columns`` (``loopbreak.batch``): many texts on all cores.

On top of it (``loopbreak.stream``): ``guard(deltas)`` / ``aguard(deltas)`` pass a stream of
text deltas through and stop it where it starts looping, raising ``DegenerationDetected`` (a
``LoopbreakError``) or, with ``on_degeneration="stop"``, just ending it; the returned
``Guarded`` / ``AsyncGuarded`` tells what happened and what to save. ``loopbreak.persist``
saves it to SQLite; ``loopbreak.integrations`` adapts the OpenAI, Anthropic and LiteLLM streams
and Starlette SSE.

Around an agent loop (``loopbreak.policy``, ``budget``, ``audit``, ``receipt``): a ``RunPolicy``
decides before each step and tool call (step warnings, final-step nudge or lockdown, repeated
actions, progress, ``Budgets``), records every ``Decision`` in an ``AuditLog``, and
``RunEvidence`` turns what the loop saw into a stop ``Receipt``.
"""

from loopbreak._core import (
    DEFAULT_KEEP,
    Detector,
    Finding,
    Removal,
    Rules,
    TokenDetector,
    TokenFinding,
    TokenStreams,
    Trimmed,
    __version__,
    scan,
    trim,
)
from loopbreak.actions import action_key
from loopbreak.audit import AuditLog, JsonLinesSink, LoggingSink, SqliteSink
from loopbreak.batch import scan_columns, scan_many
from loopbreak.budget import Budgets, ModelPrice
from loopbreak.decision import Check, Decision, DecisionKind, Reason
from loopbreak.errors import DegenerationDetected, LoopbreakError
from loopbreak.policy import PolicyConfig, RunPolicy, StepPlan
from loopbreak.receipt import Receipt, ReceiptState, RunEvidence, save_receipt
from loopbreak.stream import AsyncGuarded, Degeneration, Guarded, Piece, aguard, guard

__all__ = [
    "__version__",
    "action_key",
    "aguard",
    "AsyncGuarded",
    "AuditLog",
    "Budgets",
    "Check",
    "Decision",
    "DecisionKind",
    "DEFAULT_KEEP",
    "Degeneration",
    "DegenerationDetected",
    "Detector",
    "Finding",
    "guard",
    "Guarded",
    "JsonLinesSink",
    "LoggingSink",
    "LoopbreakError",
    "ModelPrice",
    "Piece",
    "PolicyConfig",
    "Reason",
    "Receipt",
    "ReceiptState",
    "Removal",
    "Rules",
    "RunEvidence",
    "RunPolicy",
    "save_receipt",
    "scan",
    "scan_columns",
    "scan_many",
    "SqliteSink",
    "StepPlan",
    "TokenDetector",
    "TokenFinding",
    "TokenStreams",
    "trim",
    "Trimmed",
]
