"""Without its optional library, a module says which extra installs it: each integration module
on import, ``scan_columns`` (numpy) and ``loopbreak scan`` of a Parquet file.

The checks run in a real interpreter that has no third-party package at all: ``python -S`` (no
site-packages) with only a copy of the installed loopbreak package on its path.
"""

from __future__ import annotations

import importlib.metadata
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import loopbreak
import loopbreak.integrations

EXTRAS = set(importlib.metadata.metadata("loopbreak").get_all("Provides-Extra") or [])
INTEGRATIONS = [
    module.name
    for module in pkgutil.iter_modules(loopbreak.integrations.__path__)
    if not module.name.startswith("_")
]
HINT = re.compile(r"No module named '[\w.]+': pip install 'loopbreak\[([\w-]+)\]'$")


@pytest.fixture(scope="module")
def bare_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only the loopbreak package (with its built extension)."""
    folder = tmp_path_factory.mktemp("bare")
    package = Path(loopbreak.__file__).parent
    shutil.copytree(package, folder / "loopbreak", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def run_bare(bare_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-S", *args],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(bare_path)},
        cwd=bare_path,
    )


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    return done.stderr.strip().splitlines()[-1]


def test_the_bare_interpreter_has_no_third_party_package(bare_path: Path) -> None:
    done = run_bare(
        bare_path, "-c", "import loopbreak, importlib.util as u; print(u.find_spec('numpy'))"
    )
    assert done.stdout == "None\n", done.stderr


@pytest.mark.parametrize("name", INTEGRATIONS)
def test_an_integration_without_its_library_names_its_extra(bare_path: Path, name: str) -> None:
    done = run_bare(bare_path, "-c", f"import loopbreak.integrations.{name}")
    if done.returncode == 0:
        return  # a module that needs no optional library
    line = last_line(done)
    assert line.startswith("loopbreak.errors.MissingExtra: "), done.stderr
    hint = HINT.search(line)
    assert hint is not None and hint.group(1) in EXTRAS, line


def test_integrations_are_found() -> None:
    assert {"openai", "openai_agents", "transformers", "llama_cpp"} <= set(INTEGRATIONS)


def test_scan_columns_without_numpy_names_its_extra(bare_path: Path) -> None:
    done = run_bare(bare_path, "-c", "import loopbreak; loopbreak.scan_columns(['ab' * 300])")
    assert last_line(done) == (
        "loopbreak.errors.MissingExtra: No module named 'numpy': pip install 'loopbreak[numpy]'"
    )
    assert "numpy" in EXTRAS


def test_a_missing_extra_is_still_an_import_error(bare_path: Path) -> None:
    done = run_bare(
        bare_path,
        "-c",
        "try:\n import loopbreak.integrations.openai\nexcept ImportError as e: print(e.name)",
    )
    assert done.stdout == "openai\n", done.stderr


def test_scanning_parquet_without_pyarrow_names_its_extra(bare_path: Path) -> None:
    (bare_path / "chats.parquet").write_bytes(b"PAR1")
    done = run_bare(bare_path, "-m", "loopbreak.cli", "scan", "chats.parquet", "--column", "text")
    assert done.returncode == 2
    assert (
        "chats.parquet: Parquet: No module named 'pyarrow': pip install 'loopbreak[parquet]'"
        in done.stdout + done.stderr
    ), (done.stdout, done.stderr)
