"""The public names: each package's ``__all__`` lists exactly its public names, every exported
class and function has a docstring, and ``import loopbreak`` stays light."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
import types

import pytest

# Every package whose namespace is public API, with the names it exports.
PACKAGES = ["loopbreak", "loopbreak.streaming", "loopbreak.agent"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    package = importlib.import_module(name)
    public = {
        attr
        for attr, value in vars(package).items()
        if not attr.startswith("_") and not isinstance(value, types.ModuleType)
    }
    # Subpackages and modules imported as attributes are reached by their dotted name, not
    # exported; typing aliases in a namespace would be public, and none are.
    assert set(package.__all__) - {"__version__"} == public - {"annotations"}


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_class_and_function_is_documented(name: str) -> None:
    package = importlib.import_module(name)
    undocumented = [
        attr
        for attr in package.__all__
        if (inspect.isclass(getattr(package, attr)) or inspect.isroutine(getattr(package, attr)))
        and not (inspect.getdoc(getattr(package, attr)) or "").strip()
    ]
    assert undocumented == []


@pytest.mark.parametrize("name", PACKAGES)
def test_every_public_method_is_documented(name: str) -> None:
    package = importlib.import_module(name)
    missing = []
    for attr in package.__all__:
        value = getattr(package, attr)
        if not inspect.isclass(value):
            continue
        for member, function in vars(value).items():
            if member.startswith("_") or not callable(function):
                continue
            if not (inspect.getdoc(function) or "").strip():
                missing.append(f"{attr}.{member}")
    assert missing == []


def test_importing_loopbreak_loads_no_product_dependencies() -> None:
    code = (
        "import sys, loopbreak; "
        "print(sorted(m for m in ('sqlite3', 'logging', 'hashlib', 'uuid', 'numpy', 'pyarrow') "
        "if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "[]"


def test_the_version_comes_from_cargo() -> None:
    import tomllib

    import loopbreak

    with open(
        importlib.import_module("pathlib").Path(__file__).parents[1] / "Cargo.toml", "rb"
    ) as f:
        assert loopbreak.__version__ == tomllib.load(f)["package"]["version"]
