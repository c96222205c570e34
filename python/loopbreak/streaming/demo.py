"""``loopbreak demo``: replay a real model loop through the stream guard and save the result.

The shipped output (``data/demo_output.json``) is what SmolLM2-135M-Instruct wrote, greedy
decoding, for a home-automation agent prompt: a few sentences, then one sentence over and over
until the 1500-token limit. The demo streams it like a live model (token-sized deltas, about
40 a second; ``--fast`` skips the waiting), lets ``loopbreak.guard`` stop it, and saves the
trimmed text and the stop reason to an SQLite ``turns`` table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources

from loopbreak.streaming.guard import guard

DEFAULT_DB = "loopbreak-demo.db"

TOKENS_PER_SECOND = 40.0
"""About what a hosted chat model streams; slow enough to watch the loop build up."""

# Roughly how byte-pair tokenizers pre-split text (GPT-2's pattern with \w for letters):
# a word with its leading space, a run of punctuation, or whitespace.
_TOKEN = re.compile(r"'(?:s|t|re|ve|m|ll|d)\b| ?\w+| ?[^\s\w]+|\s+(?!\S)|\s+")


@dataclass(frozen=True)
class Recording:
    """A real model output shipped with the package."""

    model: str
    prompt: str
    text: str
    completion_tokens: int


def load_recording() -> Recording:
    raw = (
        resources.files("loopbreak.streaming")
        .joinpath("data")
        .joinpath("demo_output.json")
        .read_text("utf-8")
    )
    data = json.loads(raw)
    return Recording(data["model"], data["prompt"], data["text"], data["completion_tokens"])


def token_deltas(text: str) -> list[str]:
    """``text`` split into token-sized deltas that join back to exactly ``text``."""
    return _TOKEN.findall(text)


def replay(text: str, tokens_per_second: float) -> Iterator[str]:
    """Yields ``text`` as token-sized deltas, waiting between them like a live model (no
    waiting if ``tokens_per_second`` is 0)."""
    for delta in token_deltas(text):
        if tokens_per_second:
            time.sleep(1 / tokens_per_second)
        yield delta


def run(db: str, fast: bool) -> int:
    # Imported here: the `loopbreak` command registers this subcommand on every run (a scan
    # too), and the store brings sqlite3.
    import sqlite3

    from loopbreak.errors import StoreError
    from loopbreak.store import Database
    from loopbreak.streaming import persist

    # Opened before the stream, so a database that cannot be used stops the demo before it runs.
    try:
        database = Database(db)
    except (sqlite3.Error, StoreError) as error:
        print(
            f"loopbreak demo: --db {db}: {error}; give a new file in an existing folder, or a"
            " loopbreak database",
            file=sys.stderr,
        )
        return 2
    recording = load_recording()
    out = sys.stdout
    out.write(f"Replaying a real {recording.model} output as a live stream.\n")
    out.write(f"Prompt: {recording.prompt}\n\n")
    out.flush()

    guarded = guard(
        replay(recording.text, 0 if fast else TOKENS_PER_SECOND), on_degeneration="stop"
    )
    streamed = 0
    with guarded:
        for delta in guarded:
            out.write(delta)
            out.flush()
            streamed += len(delta)

    total = len(recording.text)
    out.write(f"\n\n--- {guarded.reason}\n")
    out.write(
        f"Streamed {streamed} of {total} chars ({100 * streamed / total:.0f}%): unguarded, the "
        f"model went on to its {recording.completion_tokens}-token limit.\n"
    )

    with database:
        turn_id = persist.save_result(database, guarded)
        stored = persist.load_turn(database, turn_id)
    out.write(f"\nStored turn {stored.id} in {os.path.abspath(db)} (table turns):\n")
    out.write(f"  status:     {stored.status}\n")
    out.write(f"  error:      {stored.error}\n")
    out.write(f"  finding:    {json.dumps(stored.finding, ensure_ascii=False)}\n")
    out.write(f"  created_at: {stored.created_at}\n")
    out.write(f"  text ({len(stored.text)} chars, was {len(guarded.text)} when stopped):\n")
    for line in stored.text.splitlines():
        out.write(f"    {line}\n")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds the ``demo`` subcommand to the ``loopbreak`` command."""
    parser = commands.add_parser(
        "demo",
        help="replay a real model loop through the stream guard",
        description=(
            "Replays a real model output that loops (SmolLM2-135M, greedy decoding) as a live "
            "stream, lets the stream guard stop it, and saves the trimmed text and the stop "
            "reason to an SQLite turns table."
        ),
    )
    parser.add_argument("--fast", action="store_true", help="stream without waiting between tokens")
    parser.add_argument(
        "--db",
        default=DEFAULT_DB,
        help=f"SQLite database to store the turn in (default: {DEFAULT_DB})",
    )
    parser.set_defaults(handler=lambda args: run(args.db, args.fast))
