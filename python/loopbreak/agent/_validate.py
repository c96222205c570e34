"""Argument checks shared by the policy, budget and receipt modules: wrong types raise
``TypeError``, wrong values ``ValueError``, each naming the argument."""

from __future__ import annotations

import math
from typing import Optional, TypeVar, Union

T = TypeVar("T")


def count(name: str, value: object, minimum: int) -> int:
    """An ``int`` (not a ``bool``, which is an int to Python but never a count) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def amount(name: str, value: object) -> Union[int, float]:
    """A finite ``int`` or ``float`` >= 0 (seconds, money, prices)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be an int or float, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    return value


def text(name: str, value: object) -> str:
    """A ``str`` with at least one non-whitespace character."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{name} must not be empty")
    return value


def callable_or_none(name: str, value: T) -> T:
    """None or something callable."""
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable or None, got {type(value).__name__}")
    return value


def instance_or_none(name: str, value: Optional[T], kind: type[T]) -> Optional[T]:
    """None or an instance of ``kind``."""
    if value is not None and not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__} or None, got {type(value).__name__}")
    return value
