"""``--field``: where the texts sit in each JSON line.

A field path is a list of segments separated by dots. Each segment selects from the value
reached so far:

- in an object, the member of that name: ``text``, ``response.content``;
- in a list, the item at that index (``-1`` is the last): ``messages.0.content``;
- ``*``: every item of a list, or every member of an object: ``messages.*.content``.

``\\.`` is a dot inside a name, ``\\*`` a member named ``*``, ``\\\\`` a backslash. Where a line
has nothing at the path (a missing member, an index out of range, a value of another kind)
there is nothing to scan in that line; the command reports a file where no line has anything.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Optional, Union

Container = Union[dict[str, Any], list[Any]]


@dataclass(frozen=True)
class Slot:
    """One place the path reached: ``container[key]``, at ``path`` (indexes made concrete,
    e.g. ``messages.3.content``)."""

    container: Container
    key: Union[str, int]
    path: str

    @property
    def value(self) -> Any:
        return self.container[self.key]  # type: ignore[index]


@dataclass(frozen=True)
class FieldPath:
    text: str
    # None is the wildcard ``*``; a str is a member name or a list index.
    segments: tuple[Optional[str], ...]

    @classmethod
    def parse(cls, text: str) -> FieldPath:
        """Raises ``ValueError`` for an empty path or segment, or a dangling backslash."""
        segments: list[Optional[str]] = []
        name, escaped, literal = "", False, False

        def close_segment() -> None:
            if not name and not literal:
                raise ValueError(f"field path {text!r} has an empty segment")
            segments.append(None if name == "*" and not literal else name)

        for char in text:
            if escaped:
                # An escaped char makes the segment a literal name: "\\*" is a member named "*".
                name, escaped, literal = name + char, False, True
            elif char == "\\":
                escaped = True
            elif char == ".":
                close_segment()
                name, literal = "", False
            else:
                name += char
        if escaped:
            raise ValueError(f"field path {text!r} ends with a backslash")
        close_segment()
        return cls(text, tuple(segments))

    def find(self, document: Any) -> Iterator[Slot]:
        """Every place in ``document`` (a parsed JSON value) that the path reaches, in order."""
        yield from self._walk(document, 0, "")

    def _walk(self, value: Any, depth: int, path: str) -> Iterator[Slot]:
        for key in _keys(value, self.segments[depth]):
            where = f"{path}.{_escape(key)}" if path else _escape(key)
            if depth + 1 == len(self.segments):
                yield Slot(value, key, where)
            else:
                yield from self._walk(value[key], depth + 1, where)


def _keys(value: Any, segment: Optional[str]) -> list[Union[str, int]]:
    """The keys of ``value`` that ``segment`` selects (none where it does not apply)."""
    if isinstance(value, dict):
        if segment is None:
            return list(value)
        return [segment] if segment in value else []
    if isinstance(value, list):
        if segment is None:
            return list(range(len(value)))
        try:
            index = int(segment)
        except ValueError:
            return []
        return [index % len(value)] if -len(value) <= index < len(value) else []
    return []


def _escape(key: Union[str, int]) -> str:
    if isinstance(key, int):
        return str(key)
    escaped = key.replace("\\", "\\\\").replace(".", "\\.")
    return "\\*" if escaped == "*" else escaped
