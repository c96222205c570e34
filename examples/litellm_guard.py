"""Guard a LiteLLM stream with loopbreak, offline.

LiteLLM's own mock provider (``mock_response``) streams a real model output that falls into a
loop (the one ``loopbreak demo`` replays: SmolLM2-135M-Instruct repeating one sentence until its
token limit), as any provider's stream would come out of ``litellm.completion(...,
stream=True)``. ``guard_completion`` stops it where the loop starts, closes LiteLLM's stream,
and the trimmed answer is saved.

Run: ``python examples/litellm_guard.py [--db PATH]`` (needs ``loopbreak[litellm]``).
"""

# ruff: noqa: E402
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Optional

# Offline: LiteLLM would otherwise fetch its model-price list from the network on import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

from loopbreak.integrations.litellm import guard_completion
from loopbreak.store import Database
from loopbreak.streaming import persist
from loopbreak.streaming.demo import load_recording


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=":memory:", help="SQLite file for the saved turn")
    args = parser.parse_args(argv)

    recording = load_recording()
    stream = litellm.completion(
        model="openai/offline-replay",
        messages=[{"role": "user", "content": recording.prompt}],
        stream=True,
        mock_response=recording.text,
    )
    with guard_completion(stream, on_degeneration="stop") as guarded:
        for chunk in guarded:
            sys.stdout.write(chunk.choices[0].delta.content or "")
            sys.stdout.flush()

    print(f"\n\nstatus: {guarded.status}\nreason: {guarded.reason}")
    connection = Database(args.db)
    turn = persist.load_turn(connection, persist.save_result(connection, guarded))
    print(f"saved, {len(turn.text)} chars for the {len(guarded.text)} read:\n{turn.text}")
    connection.close()
    return 0 if guarded.status == "degenerate" else 1


if __name__ == "__main__":
    sys.exit(main())
