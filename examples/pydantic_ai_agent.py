"""A pydantic-ai agent governed by loopbreak, offline: pydantic-ai's own ``FunctionModel`` plays
a scripted model, streaming its answers as a real one would.

Five runs of one agent, each with a fresh policy, show the ways a run ends:

1. ``finishes``: reads the notes, writes ``answer.txt`` and answers; the verifier finds the
   file: VERIFIED_COMPLETE.
2. ``claims-done``: answers that it is done without writing the file: FALSE_COMPLETE.
3. ``repeats``: asks for the same file four times (``{"path": "notes.txt"}`` and
   ``{"path": " notes.txt "}`` are one call); the fourth never runs: STUCK, loop_detected.
4. ``explores``: reads a new file every step; warnings, then the final-step nudge, then the
   step limit ends the run: BOUNDED_STOP.
5. ``degenerates``: its answer turns into a loop; the stream is cut and the history keeps the
   trimmed text: STUCK, degeneration.

Run: ``python examples/pydantic_ai_agent.py`` (needs ``pip install 'loopbreak[pydantic-ai]'``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Union

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from loopbreak.agent import PolicyConfig
from loopbreak.integrations.pydantic_ai import LoopbreakCapability

LOOP = "I'm also getting the heating and the front door lock to work. " * 60

NOTES = ("read_file", '{"path": "notes.txt"}')
WRITE = ("write_file", '{"path": "answer.txt", "text": "Door locked at 22:00."}')
RUNS: dict[str, list[Union[str, tuple[str, str]]]] = {
    # Each turn is a tool call (name, JSON arguments) or text.
    "finishes": [NOTES, WRITE, "Done: the door is locked at 22:00 (answer.txt)."],
    "claims-done": [NOTES, "Done: the door is locked at 22:00."],
    "repeats": [NOTES, ("read_file", '{"path": " notes.txt "}')] * 3,
    "explores": [("read_file", json.dumps({"path": f"file{n}.txt"})) for n in range(20)],
    "degenerates": [LOOP],
}


def scripted(turns: list[Union[str, tuple[str, str]]]) -> FunctionModel:
    """A model answering ``turns`` in order, the last one again if asked for more."""

    async def stream(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[Union[str, DeltaToolCalls]]:
        answered = sum(isinstance(message, ModelResponse) for message in messages)
        turn = turns[min(answered, len(turns) - 1)]
        if isinstance(turn, tuple):
            yield {0: DeltaToolCall(name=turn[0], json_args=turn[1])}
        else:
            for start in range(0, len(turn), 16):  # streamed, 16 chars a delta
                yield turn[start : start + 16]

    return FunctionModel(stream_function=stream)


def main() -> int:
    workspace: dict[str, str] = {}
    # The verifier checks the destination, never the answer's text.
    governor = LoopbreakCapability(
        PolicyConfig(max_steps=6), verifier=lambda run: "answer.txt" in workspace
    )
    for name, turns in RUNS.items():
        workspace.clear()
        agent = Agent(scripted(turns), capabilities=[governor])

        @agent.tool_plain
        def read_file(path: str) -> str:
            """Reads a file of the workspace."""
            return f"contents of {path.strip()}"

        @agent.tool_plain
        def write_file(path: str, text: str) -> str:
            """Writes a file of the workspace."""
            workspace[path] = text
            return f"wrote {path}"

        result = agent.run_sync("Get the house ready for the night.")
        run = governor.last_run
        assert run is not None and run.receipt is not None
        kept = [p.content for p in result.all_messages()[-1].parts if isinstance(p, TextPart)]
        print(
            f"{name:12} {run.receipt.state.value:18} {run.receipt.reason:15} "
            f"steps={run.policy.usage().steps} kept {len(''.join(kept))} chars: "
            f"{result.output[:60]!r}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
