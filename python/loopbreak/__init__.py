"""loopbreak: stop language-model repetition loops.

The detector is a Rust core (``loopbreak._core``); this package re-exports it:

- ``Detector``: fed text deltas as they stream, reports a ``Finding`` where a rule first holds.
- ``scan(text)``: every degenerate region of a whole text.
- ``trim(text)``: the text to persist, each region cut to its first few copies plus a marker.
- ``Rules``: every threshold, validated.
"""

from loopbreak._core import (
    DEFAULT_KEEP,
    Detector,
    Finding,
    Removal,
    Rules,
    Trimmed,
    __version__,
    scan,
    trim,
)

__all__ = [
    "DEFAULT_KEEP",
    "Detector",
    "Finding",
    "Removal",
    "Rules",
    "Trimmed",
    "__version__",
    "scan",
    "trim",
]
