"""Stream guarding and persistence.

- ``loopbreak.streaming.guard``: ``guard`` / ``aguard`` and the ``Guarded`` / ``AsyncGuarded``
  objects they return, ``Piece`` (how adapters tell the guard where the text is) and
  ``Degeneration`` (what a guard stopped on). The essentials are also at the top level.
- ``loopbreak.streaming.persist``: ``save_result`` / ``load_turn``, one row per model turn in the
  store's ``turns`` table (imported separately: it loads sqlite3).
- ``loopbreak.streaming.demo``: ``loopbreak demo``, a real loop replayed through the guard.
"""

from loopbreak.streaming.guard import (
    CONTENT,
    REASONING,
    AsyncGuarded,
    Degeneration,
    Guarded,
    OnDegeneration,
    Piece,
    Status,
    aguard,
    guard,
)

__all__ = [
    "aguard",
    "AsyncGuarded",
    "CONTENT",
    "Degeneration",
    "guard",
    "Guarded",
    "OnDegeneration",
    "Piece",
    "REASONING",
    "Status",
]
