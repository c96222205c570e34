"""Where a value sits in the text of a JSON document, so a trimmed line can be written by
replacing only that value's span: every other byte of the line (numbers as written, spacing,
escapes, member order) stays what it was.

The spans are found with the ``json`` module's own scanner, so a line reads here as
``json.loads`` reads it: in an object with a repeated member, the last one is the value."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, Union

from loopbreak._text import escape_surrogates

Key = Union[str, int]
Span = tuple[int, int]

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"


def value_span(document: str, keys: Sequence[Key]) -> Span:
    """The span of the value reached from the top of ``document`` by ``keys`` (member names and
    list indexes, as ``json.loads`` of the document has them)."""
    start = _skip(document, 0)
    end = _end(document, start)
    for key in keys:
        start, end = _child(document, start, key)
    return start, end


def member_span(document: str, container: Span, name: str) -> Union[Span, None]:
    """The span of member ``name`` of the object at ``container``, or None if it has none."""
    found = None
    for member, start, end in _members(document, container[0]):
        if member == name:
            found = (start, end)
    return found


def encoded(value: Any) -> str:
    """``value`` as JSON text that any reader accepts: non-ASCII written as is, a lone surrogate
    (an undecodable byte of the input, or an escape) as an escape."""
    return escape_surrogates(json.dumps(value, ensure_ascii=False))


def _child(document: str, at: int, key: Key) -> Span:
    found = None
    if isinstance(key, int):
        for index, start, end in _items(document, at):
            if index == key:
                return start, end
    else:
        for name, start, end in _members(document, at):
            if name == key:
                found = (start, end)  # the last of a repeated member, as json.loads keeps it
    if found is None:
        raise KeyError(key)
    return found


def _members(document: str, at: int) -> Iterator[tuple[str, int, int]]:
    """Each member of the object at ``at``: its name and its value's span."""
    if document[at] != "{":
        return
    at = _skip(document, at + 1)
    while document[at] != "}":
        name, at = json.decoder.scanstring(document, at + 1)  # type: ignore[attr-defined]
        at = _skip(document, _skip(document, at) + 1)  # past the colon
        end = _end(document, at)
        yield name, at, end
        at = _skip(document, end)
        if document[at] == ",":
            at = _skip(document, at + 1)


def _items(document: str, at: int) -> Iterator[tuple[int, int, int]]:
    """Each item of the list at ``at``: its index and its span."""
    if document[at] != "[":
        return
    at = _skip(document, at + 1)
    index = 0
    while document[at] != "]":
        end = _end(document, at)
        yield index, at, end
        index += 1
        at = _skip(document, end)
        if document[at] == ",":
            at = _skip(document, at + 1)


def _end(document: str, at: int) -> int:
    end: int = _DECODER.raw_decode(document, at)[1]
    return end


def _skip(document: str, at: int) -> int:
    while at < len(document) and document[at] in _WHITESPACE:
        at += 1
    return at
