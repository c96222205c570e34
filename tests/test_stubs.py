"""The hand-written stubs (``python/loopbreak/_core.pyi``) state the defaults the core uses.

``make stubs`` (stubtest) checks every name and signature against the built module; defaults
computed in Rust show as ``...`` there, so they are checked here against the module's values.
The thresholds come from one table in the core (rust/thresholds.rs): the stub's ``Rules``
states each as a keyword with its default and a property, in the table's order, and its
docstrings state values as ``name=value`` (the defaults' in the class docstring, each preset's
in its own), all held here to what the built module reports."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import loopbreak

STUB = Path(loopbreak.__file__).with_name("_core.pyi")

# A threshold's value as a docstring states it: ``min_lines=14``, ``counter_min_lines=2**24``.
STATED_VALUE = re.compile(r"``(\w+)=(\d+(?:\*\*\d+)?)``")


def stub_defaults(class_name: str | None, function: str) -> dict[str, object]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    scope: list[ast.stmt] = tree.body
    if class_name is not None:
        (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
        scope = cls.body
    (node,) = [n for n in scope if isinstance(n, ast.FunctionDef) and n.name == function]
    args = node.args
    named = [*args.args[len(args.args) - len(args.defaults) :], *args.kwonlyargs]
    defaults = [*args.defaults, *args.kw_defaults]
    return {arg.arg: ast.literal_eval(default) for arg, default in zip(named, defaults) if default}


def stub_class(name: str) -> ast.ClassDef:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    return cls


def docstring(cls: ast.ClassDef, function: str | None) -> str:
    if function is None:
        return ast.get_docstring(cls) or ""
    (node,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == function]
    return ast.get_docstring(node) or ""


def stated_values(text: str) -> list[tuple[str, int]]:
    stated: list[tuple[str, int]] = []
    for name, value in STATED_VALUE.findall(text):
        base, _, exponent = value.partition("**")
        stated.append((name, int(base) ** int(exponent or 1)))
    return stated


def test_the_stub_states_every_default_rule_value() -> None:
    assert stub_defaults("Rules", "__new__") == loopbreak.Rules().to_dict()


def test_the_stub_states_trims_default_keep() -> None:
    assert stub_defaults(None, "trim")["keep"] == loopbreak.DEFAULT_KEEP


def test_the_stub_lists_the_thresholds_in_the_tables_order() -> None:
    names = list(loopbreak.Rules().to_dict())
    assert list(stub_defaults("Rules", "__new__")) == names
    rules = stub_class("Rules")
    properties = [
        n.name
        for n in rules.body
        if isinstance(n, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "property" for d in n.decorator_list)
    ]
    assert properties == names


def test_the_stub_docstrings_state_each_presets_values() -> None:
    rules = stub_class("Rules")
    presets = {
        None: loopbreak.Rules(),
        "conservative": loopbreak.Rules.conservative(),
        "for_tokens": loopbreak.Rules.for_tokens(),
    }
    for function, preset in presets.items():
        stated = stated_values(docstring(rules, function))
        assert stated, f"Rules.{function}: no ``name=value`` found"
        values = preset.to_dict()
        assert stated == [(name, values.get(name)) for name, _ in stated], function
