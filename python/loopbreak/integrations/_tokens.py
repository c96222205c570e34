"""What the engine integrations report about a sequence that looped, built from token ids.

The engines feed ids to the core on every decode step and decode nothing; only when a sequence's
rule holds is its generated part decoded, once, to report the block as text and to give the text
to keep. The trimming itself is the core's (``trim`` over the ids as code points, which is how the
core sees ids), so the extents and counts are those of the text API.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional

from loopbreak._core import DEFAULT_KEEP, RULE_INFO, Rules, TokenFinding, trim

Decode = Callable[[list[int]], str]

# A marker names the block; blocks can be hundreds of tokens long.
_PREVIEW = 60


@dataclass(frozen=True)
class TokenLoop:
    """One generated sequence that looped: what fired, and what to keep of it."""

    finding: TokenFinding
    """Offsets count generated tokens: the prompt is not fed to the detector."""
    block_text: str
    """One copy of the repeated block, decoded."""
    text: str
    """The generated tokens up to the one at which the rule held, decoded: what the engine kept
    (the ``EOS`` a logits processor forced after it decodes to nothing)."""
    trimmed_text: str
    """``text`` with the loop cut to its first copies plus a marker such as
    ``[loopbreak: removed 212 tokens: " the end." repeated 53 more times (periodic_run)]``:
    what to save."""
    tokens_removed: int

    def to_dict(self) -> dict[str, Any]:
        """The finding's fields plus ``block_text`` and ``tokens_removed``: plain values, to store
        as JSON next to ``trimmed_text``."""
        return {
            **self.finding.to_dict(),
            "block_text": self.block_text,
            "tokens_removed": self.tokens_removed,
        }


def check_keep(keep: int) -> int:
    if not isinstance(keep, int) or isinstance(keep, bool):
        raise TypeError(f"keep must be an int, got {type(keep).__name__}")
    if keep < 1:
        raise ValueError(f"keep must be at least 1, got {keep}")
    return keep


def check_rules(rules: Optional[Rules]) -> Rules:
    if rules is None:
        return Rules.for_tokens()
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a loopbreak.Rules, got {type(rules).__name__}")
    return rules


def token_loop(
    finding: TokenFinding,
    generated: Sequence[int],
    decode: Decode,
    rules: Rules,
    keep: int = DEFAULT_KEEP,
) -> TokenLoop:
    """The report of a sequence whose rule held at ``generated[finding.detected_at - 1]``."""
    ids = [int(i) for i in generated[: finding.detected_at]]
    trimmed = trim("".join(map(chr, ids)), keep=keep, rules=rules)
    parts, cursor, removed = [], 0, 0
    for removal in trimmed.removals:
        found = removal.finding
        block = decode(ids[found.start : found.start + found.period])
        preview = block if len(block) <= _PREVIEW else block[:_PREVIEW] + "…"
        what = "lines" if RULE_INFO[found.rule].copy == "line" else "times"
        parts.append(decode(ids[cursor : removal.start]))
        parts.append(
            f"\n[loopbreak: removed {removal.units} tokens:"
            f" {json.dumps(preview, ensure_ascii=False)}"
            f" repeated {removal.repeats} more {what} ({found.rule})]"
            + ("\n" if removal.end < len(ids) else "")
        )
        cursor, removed = removal.end, removed + removal.units
    parts.append(decode(ids[cursor:]))
    return TokenLoop(
        finding=finding,
        block_text=decode(finding.block),
        text=decode(ids),
        trimmed_text="".join(parts),
        tokens_removed=removed,
    )
