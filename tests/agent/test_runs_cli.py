"""``loopbreak runs`` over the database the example agent (examples/agent_loop.py) writes: as a
script reads it (a pipe: plain lines, --json) and as a person sees it (a real terminal, tmux, at
100 and 160 columns)."""

from __future__ import annotations

import json
import shlex
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOOPBREAK = [sys.executable, "-m", "loopbreak.cli"]
# The example's runs, newest first, as its receipts end them.
RUNS = [
    ("kill-switch", "BOUNDED_STOP", "kill_switch"),
    ("explores", "BOUNDED_STOP", "max_steps"),
    ("times-out", "BOUNDED_STOP", "timeout"),
    ("tool-fails", "FAILED", "tool_failure"),
    ("degenerates", "STUCK", "degeneration"),
    ("repeats", "STUCK", "loop_detected"),
    ("claims-done", "FALSE_COMPLETE", "done_tool"),
    ("healthy", "VERIFIED_COMPLETE", "natural_finish"),
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("agent")
    subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_loop.py"), "--dir", str(directory)],
        check=True,
        capture_output=True,
    )
    return directory / "loopbreak.db"


def loopbreak(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOOPBREAK, *args], capture_output=True, text=True)


def test_a_pipe_gets_one_plain_line_per_run_newest_first(db: Path) -> None:
    done = loopbreak("runs", "--db", str(db))
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.splitlines()
    assert header.split() == [
        "run",
        "ended",
        "(UTC)",
        "state",
        "reason",
        "steps",
        "tools",
        "cost",
        "next",
        "action",
    ]
    assert [tuple(line.split()[i] for i in (0, 3, 4)) for line in lines] == RUNS
    stuck = next(line for line in lines if line.startswith("repeats "))
    # steps, tool calls, and the whole next action on the row
    assert stuck.split()[5:7] == ["4", "3"]
    assert stuck.endswith("Check the last durable progress and pick one bounded recovery.")
    assert "\x1b[" not in done.stdout and "─" not in done.stdout


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (["--state", "stuck"], ["degenerates", "repeats"]),
        (["--state", "BOUNDED_STOP", "--reason", "timeout"], ["times-out"]),
        (["--reason", "loop_detected"], ["repeats"]),
        (["--since", "1h"], [run for run, _, _ in RUNS]),
        (["--since", "2000-01-01"], [run for run, _, _ in RUNS]),
    ],
)
def test_filters(db: Path, filters: list[str], expected: list[str]) -> None:
    done = loopbreak("runs", "--db", str(db), "--json", *filters)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row["run_id"] for row in rows] == expected
    assert set(rows[0]) == {
        "run_id",
        "ended_at",
        "state",
        "reason",
        "steps",
        "tool_calls",
        "cost",
        "next_action",
    }


def test_a_filter_matching_nothing_says_so_and_exits_0(db: Path) -> None:
    for filters in (["--state", "WAITING"], ["--since", "2999-01-01"]):
        done = loopbreak("runs", "--db", str(db), *filters)
        assert (done.returncode, done.stdout, done.stderr) == (0, "no runs match\n", "")


def test_show_gives_the_decisions_in_order_and_the_receipt(db: Path) -> None:
    for args in (
        ["runs", "show", "repeats", "--db", str(db)],
        ["runs", "--db", str(db), "show", "repeats"],
    ):
        done = loopbreak(*args)
        assert done.returncode == 0, done.stderr
        out = done.stdout
        assert out.startswith("run repeats: STUCK (loop_detected)\n")
        assert "next action: Check the last durable progress and pick one bounded recovery." in out
        assert "decisions (11, in order):" in out
        rows = [line.split() for line in out.split("decisions (11, in order):\n")[1].splitlines()]
        assert [row[0] for row in rows[1:12]] == [str(seq) for seq in range(11)]
        assert rows[11][2:4] == ["stop", "loop_detected"]
        assert "step 3 stop: The run stopped because it kept repeating the same action" in out
        assert "STUCK              held" in out
    scripted = json.loads(loopbreak("runs", "show", "repeats", "--db", str(db), "--json").stdout)
    assert scripted["receipt"]["state"] == "STUCK"
    assert [event["seq"] for event in scripted["decisions"]] == list(range(11))
    assert scripted["decisions"][-1]["decision"] == "stop"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["runs", "show", "nope"], "loopbreak runs show: no run 'nope' in the database\n"),
        (["runs", "--state", "DONE"], "unknown state 'DONE'"),
        (["runs", "--since", "yesterday"], "'yesterday' is neither an age"),
    ],
)
def test_misuse_is_one_line_and_exit_2(db: Path, args: list[str], message: str) -> None:
    done = loopbreak(*args, "--db", str(db))
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_the_database_must_be_named() -> None:
    for args in (["runs"], ["runs", "show", "repeats"]):
        done = loopbreak(*args)
        command = "loopbreak runs show" if "show" in args else "loopbreak runs"
        assert (done.returncode, done.stderr) == (2, f"{command}: --db FILE is required\n")


def test_a_missing_or_foreign_database_is_not_created_or_changed(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    done = loopbreak("runs", "--db", str(missing))
    assert (done.returncode, done.stderr) == (2, f"loopbreak runs: no database file '{missing}'\n")
    assert not missing.exists()
    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE notes (body TEXT)")
    before = foreign.read_bytes()
    done = loopbreak("runs", "--db", str(foreign))
    assert done.returncode == 2
    assert "the database has no table 'turns': is it a loopbreak database?" in done.stderr
    assert foreign.read_bytes() == before
    done = loopbreak("runs", "--db", str(ROOT / "README.md"))
    assert done.returncode == 2 and "cannot read" in done.stderr


def test_a_store_of_the_old_schema_is_listed_and_left_as_it_is(db: Path, tmp_path: Path) -> None:
    # Before schema version 2 the table of saved turns was `runs`; looking never migrates it.
    old = tmp_path / "old.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as source, sqlite3.connect(old) as copy:
        source.backup(copy)
        copy.execute("ALTER TABLE turns RENAME TO runs")
        copy.execute("PRAGMA user_version = 1")
    source.close()
    copy.close()
    before = old.read_bytes()
    for args in (["--json"], ["show", "repeats", "--json"]):
        listed = loopbreak("runs", "--db", str(old), *args)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout == loopbreak("runs", "--db", str(db), *args).stdout
    assert old.read_bytes() == before


def terminal_screen(command: list[str], columns: int) -> list[str]:
    """What a terminal ``columns`` wide shows after ``command`` ran in it (tmux)."""
    session = f"loopbreak-runs-{columns}-{time.monotonic_ns()}"
    done_marker = "__loopbreak_done__"
    shell = f"{shlex.join(command)}; echo {done_marker}"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", str(columns), "-y", "60"],
        check=True,
        env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "HOME": "/tmp"},
    )
    try:
        subprocess.run(["tmux", "send-keys", "-t", session, f"clear; {shell}", "Enter"], check=True)
        for _ in range(200):
            screen = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True
            ).stdout
            if f"\n{done_marker}" in screen:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"the command did not finish in the terminal:\n{screen}")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    lines = screen.split(f"\n{done_marker}")[0].splitlines()
    return [line for line in lines if line.strip() and done_marker not in line]


@pytest.mark.skipif(sys.platform != "linux", reason="tmux comes from the Linux packages")
@pytest.mark.parametrize("columns", [100, 160])
def test_the_table_in_a_real_terminal(db: Path, columns: int) -> None:
    screen = terminal_screen([*LOOPBREAK, "runs", "--db", str(db)], columns)
    assert all(len(line) <= columns for line in screen)
    assert "…" not in "\n".join(screen), "a cell was cut"
    header = screen[0].split()
    assert header[:8] == ["run", "ended", "(UTC)", "state", "reason", "steps", "tools", "cost"]
    names = {run for run, _, _ in RUNS}
    rows = {line.split()[0]: line.split() for line in screen[2:] if line.split()[0] in names}
    for run, state, reason in RUNS:
        assert rows[run][3:5] == [state, reason], rows[run]
    assert rows["repeats"][5:7] == ["4", "3"]
    float(rows["repeats"][7])  # the cost, whole
    text = "\n".join(screen)
    if columns == 160:  # the next action is a column, wrapped at words
        assert header[-2:] == ["next", "action"]
        assert "Close the run." in text
    else:  # too narrow for it beside the rest: once per state under the table
        assert "next action:" in screen
        assert (
            " STUCK             Check the last durable progress and pick one bounded recovery."
            in screen
        )
