"""Repeated tool calls: a normalized key per call, and the cycles those keys form.

An agent that loops rarely repeats byte-identical calls: the same arguments come back with the
keys in another order, other spacing, ``2`` instead of ``2.0``. ``action_key`` maps all of
those to one key, so the policy can count how often a call (or a short cycle of calls) repeats.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Union

from loopbreak._text import escape_surrogates
from loopbreak.agent import _validate

Arguments = Union[Mapping[str, Any], str, None]


def action_key(
    tool: str, arguments: Arguments = None, *, ignore: Collection[str] = frozenset()
) -> str:
    """The normalized key of a tool call: ``name(canonical JSON of the arguments)``.

    Arguments are a mapping or a JSON string (as chat APIs deliver them); None or a blank string
    means no arguments. Two calls get the same key when they differ only in key order, JSON
    whitespace, whitespace inside string values (trimmed, runs collapsed to one space: a
    re-issued query with an extra space is the same action) or number formatting (``1``,
    ``1.0`` and ``1e0`` are one number). A string that is not JSON is compared as one
    whitespace-normalized string. Members named in ``ignore`` are left out at any depth (volatile
    arguments: a progress note, a timestamp). A lone surrogate is written as its JSON escape, so
    every key encodes as UTF-8. Raises ``TypeError`` for values JSON cannot hold.
    """
    _validate.text("tool", tool)
    if arguments is None:
        parsed: Any = {}
    elif isinstance(arguments, str):
        if not arguments.strip():
            parsed = {}
        else:
            try:
                parsed = json.loads(arguments)
            except json.JSONDecodeError:
                parsed = arguments
    elif isinstance(arguments, Mapping):
        parsed = arguments
    else:
        raise TypeError(
            f"arguments must be a mapping, a JSON string or None, got {type(arguments).__name__}"
        )
    canonical = json.dumps(
        _normalized(parsed, "arguments", ignore),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    # Escaped lone surrogates (a split emoji): the key is stored and logged, so it must encode.
    return escape_surrogates(f"{tool.strip()}({canonical})")


def _normalized(value: Any, path: str, ignore: Collection[str]) -> Any:
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, Mapping):
        normalized = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{path} keys must be str, got {type(key).__name__} ({key!r})")
            if key not in ignore:
                normalized[key] = _normalized(item, f"{path}[{key!r}]", ignore)
        return normalized
    if isinstance(value, (list, tuple)):
        return [_normalized(item, f"{path}[{index}]", ignore) for index, item in enumerate(value)]
    raise TypeError(f"{path} must hold JSON values, got {type(value).__name__}")


def cycle_copies(history: Sequence[str], key: str, max_cycle_length: int) -> int:
    """How many back-to-back copies of a cycle of at most ``max_cycle_length`` calls end
    ``history`` such that ``key`` starts the next copy: A,A with key A gives 2; A,B,A,B with
    key A gives 2 (cycle A,B); 0 when ``key`` continues no cycle. The longest run wins."""
    best = 0
    for length in range(1, min(max_cycle_length, len(history)) + 1):
        cycle = history[-length:]
        if cycle[0] != key:
            continue
        copies = 1
        while (copies + 1) * length <= len(history) and (
            history[-(copies + 1) * length : -copies * length] == cycle
        ):
            copies += 1
        best = max(best, copies)
    return best
