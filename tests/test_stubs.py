"""The hand-written stubs (``python/loopbreak/_core.pyi``) state the defaults the core uses.

``make stubs`` (stubtest) checks every name and signature against the built module; defaults
computed in Rust show as ``...`` there, so they are checked here against the module's values."""

from __future__ import annotations

import ast
from pathlib import Path

import loopbreak

STUB = Path(loopbreak.__file__).with_name("_core.pyi")


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


def test_the_stub_states_every_default_rule_value() -> None:
    assert stub_defaults("Rules", "__new__") == loopbreak.Rules().to_dict()


def test_the_stub_states_trims_default_keep() -> None:
    assert stub_defaults(None, "trim")["keep"] == loopbreak.DEFAULT_KEEP
