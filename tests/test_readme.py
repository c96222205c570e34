"""The README's examples run as written: each Python block is executed, and each shell command
of the scanning section is run on files of the names it uses.

Blocks that call a service get it for real on localhost: the OpenAI example talks to the recorded
OpenAI-compatible server over HTTP (``OPENAI_BASE_URL``), which streams a real loop for its
``gpt-4o-mini``. The agent example's own functions (``SYSTEM_PROMPT``, ``call_model``,
``run_tool``, ``new_facts``: "your model call") are given a scripted model that repeats a tool
call, as looping agents do.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from starlette.applications import Starlette

from support.recorded import CLEAN, LOOPS
from support.recorded_server import Recordings, routes, serve

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT = README.read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", TEXT, flags=re.S)


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str


@dataclass
class Reply:
    text_deltas: list[str]
    tool_calls: list[Call] = field(default_factory=list)


def agent_namespace() -> dict[str, Any]:
    """What the agent example calls its own: a model that keeps listing one directory."""

    def call_model(system_prompt: str, tool_choice: Any = None) -> Reply:
        assert system_prompt.startswith("You are")
        return Reply(["Let me look ", "again."], [Call("list_dir", '{"path": "."}')])

    return {
        "SYSTEM_PROMPT": "You are a file agent.",
        "call_model": call_model,
        "run_tool": lambda call: f"listed {call.arguments}",
        "new_facts": lambda reply: ["the same listing"],
    }


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def openai_server() -> Iterator[str]:
    yield from serve(Starlette(routes=routes(Recordings())))


def test_every_python_block_runs(
    in_tmp: Path,
    openai_server: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{openai_server}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    code = blocks("python")
    assert len(code) >= 4
    for block in code:
        namespace: dict[str, Any] = {"__name__": "readme", **agent_namespace()}
        exec(compile(block, str(README), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "Finding(rule='periodic_run', period=11, block='loadTools. '" in printed
    assert "[loopbreak: removed 4970 units" in printed
    assert "degenerate Output degeneration detected in content" in printed
    assert "STUCK loop_detected" in printed  # the scripted agent repeated its call
    with sqlite3.connect(in_tmp / "runs.db") as runs:
        assert runs.execute("SELECT status FROM runs").fetchall() == [("degenerate",)]


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
