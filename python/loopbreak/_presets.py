"""The named presets of ``Rules`` that the command line offers (``loopbreak scan --rules``,
``loopbreak proxy --rules``): one table, so both commands name the same presets."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Callable

from loopbreak._core import Rules

RULE_PRESETS: Mapping[str, Callable[[], Rules]] = MappingProxyType(
    {"default": Rules, "conservative": Rules.conservative}
)
"""``--rules`` names: ``default``, for what models write; ``conservative``, for scanning arbitrary
files (no finding in machine-generated tables and bundles; loops found later)."""
