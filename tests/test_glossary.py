"""docs/glossary.md stays true: each word has one row, and every class or constant it names as
where the word appears is a name of the public API (renamed names would leave it behind)."""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path

GLOSSARY = Path(__file__).resolve().parents[1] / "docs" / "glossary.md"
# Where the names the glossary cites live: the public packages and the modules they point to.
MODULES = [
    "loopbreak",
    "loopbreak.streaming",
    "loopbreak.streaming.guard",
    "loopbreak.streaming.persist",
    "loopbreak.agent",
    "loopbreak.agent.policy",
    "loopbreak.errors",
]
WORDS = ["run", "turn", "step", "answer", "loop", "block", "period", "copies", "source", "class"]


def rows() -> list[list[str]]:
    """The cells of each table row, header rows left out."""
    lines = GLOSSARY.read_text(encoding="utf-8").splitlines()
    cells = [
        [cell.strip() for cell in line.strip("|").split("|")] for line in lines if line[:2] == "| "
    ]
    return [row for row in cells if row[0] != "word"]


def has(owner: object, name: str) -> bool:
    """Whether ``owner`` has ``name``: an attribute, or a field of a dataclass without default."""
    if hasattr(owner, name):
        return True
    if not (isinstance(owner, type) and dataclasses.is_dataclass(owner)):
        return False
    return name in {field.name for field in dataclasses.fields(owner)}


def resolves(name: str) -> bool:
    head, *members = name.split(".")
    for module in map(importlib.import_module, MODULES):
        if hasattr(module, head):
            owner = getattr(module, head)
            return all(has(owner, member) for member in members)
    return False


def test_each_word_has_one_meaning() -> None:
    words = [row[0] for row in rows()]
    assert len(words) == len(set(words))
    assert set(WORDS) <= set(words)


def test_every_name_the_glossary_cites_is_in_the_api() -> None:
    cited = [
        name
        for row in rows()
        for name in re.findall(r"`([A-Z][A-Za-z_]*(?:\.[A-Za-z_]+)?)`", row[-1])
    ]
    assert len(cited) > 30
    assert [name for name in cited if not resolves(name)] == []
