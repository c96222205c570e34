"""The examples of README.md and docs/ run as written: every ```python block is executed, one
test per block (its id is the file and the line of its fence), and each shell command of the
README's scanning section is run on files of the names it uses.

The rule for a ```python block: it runs as is, in a fresh namespace and an empty folder, offline,
in a few seconds, with only what it imports and defines. The one thing the tests provide is the
SDKs' own environment: ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` and ``ANTHROPIC_BASE_URL`` /
``ANTHROPIC_API_KEY`` name a local server that streams real recorded model outputs over HTTP
(a real loop for any model name, tests/support/recorded_server.py and anthropic_server.py), and
``LITELLM_LOCAL_MODEL_COST_MAP`` keeps LiteLLM from fetching its price list. Code
that needs anything else (an API key for real, a model file, a cluster, the reader's own model
or tools it does not define) is not a ```python block: show the ```sh command that runs its
offline version in examples/, or define what it needs in the block.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from starlette.applications import Starlette

from support import anthropic_server, recorded_server
from support.recorded import CLEAN, LOOPS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")
DOCS = [README, *sorted((ROOT / "docs").rglob("*.md"))]


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    """The line of the opening fence (1-based)."""
    code: str

    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def compiled(self) -> Any:
        # Blank lines in front, so a traceback names the block's own lines in the file.
        return compile("\n" * self.line + self.code, str(self.path), "exec")


def python_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(path, text.count("\n", 0, match.start()) + 1, match.group(1))
        for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    ]


BLOCKS = [block for path in DOCS for block in python_blocks(path)]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", TEXT, flags=re.S)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """One local server with the OpenAI chat and Responses routes and the Anthropic Messages
    route, streaming recorded outputs."""
    recordings = recorded_server.Recordings()
    app = Starlette(routes=recorded_server.routes(recordings) + anthropic_server.routes(recordings))
    yield from recorded_server.serve(app)


@pytest.fixture
def sdk_environment(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "local")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def test_the_docs_have_python_blocks() -> None:
    assert len(python_blocks(README)) >= 4
    assert {block.path.name for block in BLOCKS} >= {"README.md", "streaming.md"}


@pytest.mark.parametrize("block", BLOCKS, ids=Block.id)
def test_python_block_runs(block: Block, in_tmp: Path, sdk_environment: None) -> None:
    exec(block.compiled(), {"__name__": "__main__"})


def test_the_readme_examples_print_what_they_say(
    in_tmp: Path, sdk_environment: None, capsys: pytest.CaptureFixture[str]
) -> None:
    for block in python_blocks(README):
        exec(block.compiled(), {"__name__": "__main__"})
    printed = capsys.readouterr().out
    assert "Finding(rule='periodic_run', period=11, block='loadTools. '" in printed
    assert "[loopbreak: removed 4970 units" in printed
    assert "degenerate Output degeneration detected in content" in printed
    assert "STUCK loop_detected" in printed  # the scripted agent repeated its call
    with sqlite3.connect(in_tmp / "runs.db") as store:
        assert store.execute("SELECT status FROM turns").fetchall() == [("degenerate",)]


def test_the_whole_agent_loop_of_the_docs_prints_its_receipt(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [block] = [
        b for b in python_blocks(ROOT / "docs" / "agent-loops.md") if "RunEvidence" in b.code
    ]
    exec(block.compiled(), {"__name__": "__main__"})
    assert "STUCK loop_detected" in capsys.readouterr().out  # the scripted agent repeated its call


def scan_fixtures(directory: Path) -> None:
    """The files the scanning section's commands name, each with one loop among clean text."""
    loop, clean = LOOPS[0].text, CLEAN[0].text
    (directory / "transcripts").mkdir()
    (directory / "transcripts" / "a.txt").write_text(loop)
    (directory / "transcripts" / "b.txt").write_text(clean)
    chats = [
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": t}]}
        for t in (clean, loop)
    ]
    (directory / "chats.jsonl").write_text("".join(json.dumps(chat) + "\n" for chat in chats))
    pq.write_table(pa.table({"text": [clean, loop]}), directory / "chats.parquet")
    with sqlite3.connect(directory / "runs.db") as db:
        db.execute("CREATE TABLE messages (body TEXT)")
        db.executemany("INSERT INTO messages VALUES (?)", [(clean,), (loop,)])


def test_every_scan_command_runs(in_tmp: Path) -> None:
    scan_fixtures(in_tmp)
    section = TEXT[TEXT.index("## Scanning stored transcripts") :]
    commands = [line for line in blocks("sh") if "loopbreak scan" in line][0].splitlines()
    ran = 0
    for line in commands:
        command = line.split("#")[0].strip()
        if "--ray" in command:
            continue  # needs a Ray cluster at `auto`: tests/scanning/test_ray_scan.py starts one
        assert command in section
        argv = shlex.split(command.replace(">", " > "))
        out = None
        if ">" in argv:
            argv, out = argv[: argv.index(">")], argv[argv.index(">") + 1]
        loopbreak = [sys.executable, "-m", "loopbreak.cli"]
        done = subprocess.run(loopbreak + argv[1:], capture_output=True, text=True, env=os.environ)
        assert done.returncode == 1, (command, done.stdout, done.stderr)  # 1: loops found
        if out is not None:
            Path(out).write_text(done.stdout)
        ran += 1
    assert ran >= 5
    assert json.loads(Path("loops.jsonl").read_text().splitlines()[0])["row"] == 1
    assert (in_tmp / "cleaned" / "chats.jsonl").is_file()


def test_no_file_holds_a_merge_conflict() -> None:
    """A merge left unresolved reads as text, so nothing else fails on it: every tracked file is
    free of conflict markers."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    marker = re.compile(rb"^(<{7}|>{7}) ", re.M)
    conflicted = [
        name.decode()
        for name in tracked
        if name
        and (ROOT / name.decode()).is_file()
        and marker.search((ROOT / name.decode()).read_bytes())
    ]
    assert conflicted == []
