"""Texts that must encode as UTF-8 wherever they are written (SQLite, JSON files): a lone
surrogate (half of an emoji split by a model's tokenizer, an undecodable input byte) is written
as its JSON escape, which every reader accepts."""

from __future__ import annotations

import re

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as its JSON escape (``\\ud83d``)."""
    return _LONE_SURROGATE.sub(lambda char: f"\\u{ord(char.group()):04x}", text)
