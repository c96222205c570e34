"""loopbreak: stop language-model repetition loops.

The detector is a Rust core (``loopbreak._core``), re-exported here:

- ``Detector``: fed text deltas as they stream, reports a ``Finding`` where a rule first holds.
- ``scan(text)``: every degenerate region of a whole text; ``trim(text)``: the text to persist,
  each region cut to its first few copies plus a marker.
- ``Rules``: every threshold, validated; ``RULE_NAMES``: the rules' names; ``RULE_INFO``: each
  rule's ``RuleInfo`` (what a copy is, the thresholds it reads, what it finds).
- ``TokenDetector`` / ``TokenStreams``: the same over token ids, one stream or a batch per step.
- ``scan_many`` / ``scan_columns``: many texts (a list or an Arrow column) on all cores.

The stream guard's essentials: ``guard(deltas)`` / ``aguard(deltas)`` pass a stream of text
deltas through and stop it where it starts looping, raising ``DegenerationDetected`` (a
``LoopbreakError``) or, with ``on_degeneration="stop"``, just ending it; the returned
``Guarded`` / ``AsyncGuarded`` tells what happened and what to save.

Each product is a subpackage, imported when used:

- ``loopbreak.streaming``: the guard itself and ``loopbreak.streaming.persist`` (SQLite).
- ``loopbreak.agent``: governing agent loops: ``RunPolicy`` (step limit, warnings, final-step
  nudge or lockdown, repeated actions, progress, ``Budgets``), the ``AuditLog`` of every
  ``Decision``, and the stop ``Receipt`` that ``RunEvidence`` builds.
- ``loopbreak.scanning``: ``loopbreak scan`` over stored transcripts, and Ray.
- ``loopbreak.integrations``: adapters to the libraries streams and agents run in.
- ``loopbreak.store`` (the SQLite database every product writes) and ``loopbreak.errors``.
"""

from loopbreak._batch import scan_columns, scan_many
from loopbreak._core import (
    DEFAULT_KEEP,
    RULE_INFO,
    RULE_NAMES,
    Detector,
    Finding,
    Removal,
    RuleInfo,
    Rules,
    TokenDetector,
    TokenFinding,
    TokenStreams,
    Trimmed,
    __version__,
    scan,
    trim,
)
from loopbreak.errors import DegenerationDetected, LoopbreakError
from loopbreak.streaming.guard import AsyncGuarded, Guarded, aguard, guard

__all__ = [
    "__version__",
    "aguard",
    "AsyncGuarded",
    "DEFAULT_KEEP",
    "DegenerationDetected",
    "Detector",
    "Finding",
    "guard",
    "Guarded",
    "LoopbreakError",
    "Removal",
    "RULE_INFO",
    "RULE_NAMES",
    "RuleInfo",
    "Rules",
    "scan",
    "scan_columns",
    "scan_many",
    "TokenDetector",
    "TokenFinding",
    "TokenStreams",
    "trim",
    "Trimmed",
]
