"""Where a value sits in the text of a JSON document, so a trimmed line can be written by
replacing only that value's span: every other byte of the line (numbers as written, spacing,
escapes, member order) stays what it was.

A value is found by its concrete field path (``messages.3.content``: a member name in an
object, an index in a list), as ``json.loads`` would reach it: in an object with a repeated
member, the last one is the value. Values off the path are skipped without being parsed, by
their brackets and strings alone, so a line nested deeper than ``json`` recurses is spliced too.
The document is JSON already (the reader read it)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, Optional

from loopbreak._text import escape_surrogates

Span = tuple[int, int]

_WHITESPACE = " \t\n\r"
_SCALAR = json.JSONDecoder()


def value_span(document: str, keys: Sequence[str]) -> Span:
    """The span of the value that ``keys`` (the segments of a concrete field path) reach from
    the top of ``document``."""
    start = _skip(document, 0)
    end = _end(document, start)
    for key in keys:
        found: Optional[Span] = None
        children = _items(document, start) if document[start] == "[" else _members(document, start)
        for name, child_start, child_end in children:
            if name == key:
                found = (child_start, child_end)  # the last of a repeated member, as json keeps
        if found is None:
            raise KeyError(key)
        start, end = found
    return start, end


def member_span(document: str, container: Span, name: str) -> Optional[Span]:
    """The span of member ``name`` of the object at ``container``, or None if it has none (or
    ``container`` is not an object)."""
    found = None
    if document[container[0]] == "{":
        for member, start, end in _members(document, container[0]):
            if member == name:
                found = (start, end)
    return found


def encoded(value: Any) -> str:
    """``value`` as JSON text that any reader accepts: non-ASCII written as is, a lone surrogate
    (an undecodable byte of the input, or an escape) as an escape."""
    return escape_surrogates(json.dumps(value, ensure_ascii=False))


def _members(document: str, at: int) -> Iterator[tuple[str, int, int]]:
    """Each member of the object at ``at``: its name and its value's span."""
    at = _skip(document, at + 1)
    while document[at] != "}":
        name, at = json.decoder.scanstring(document, at + 1)  # type: ignore[attr-defined]
        at = _skip(document, _skip(document, at) + 1)  # past the colon
        end = _end(document, at)
        yield name, at, end
        at = _skip(document, end)
        if document[at] == ",":
            at = _skip(document, at + 1)


def _items(document: str, at: int) -> Iterator[tuple[str, int, int]]:
    """Each item of the list at ``at``: its index (as a path names it) and its span."""
    at = _skip(document, at + 1)
    index = 0
    while document[at] != "]":
        end = _end(document, at)
        yield str(index), at, end
        index += 1
        at = _skip(document, end)
        if document[at] == ",":
            at = _skip(document, at + 1)


def _end(document: str, at: int) -> int:
    """Where the value at ``at`` ends: an object or list by counting brackets outside strings
    (no recursion, whatever the depth), a scalar as ``json`` reads it."""
    if document[at] not in "{[":
        end: int = _SCALAR.raw_decode(document, at)[1]
        return end
    depth = 0
    while True:
        char = document[at]
        if char == '"':
            at = json.decoder.scanstring(document, at + 1)[1]  # type: ignore[attr-defined]
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return at + 1
        at += 1


def _skip(document: str, at: int) -> int:
    while at < len(document) and document[at] in _WHITESPACE:
        at += 1
    return at
