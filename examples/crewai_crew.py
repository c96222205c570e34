"""A CrewAI crew governed by loopbreak, offline: a scripted model on CrewAI's own base class for
custom models (``BaseLLM``) plays the agent's model, calling tools the native way.

Five kickoffs of one crew shape, each with a fresh policy, show the ways a run ends:

1. ``finishes``: reads the notes, writes ``answer.txt`` and answers; the verifier finds the
   file: VERIFIED_COMPLETE.
2. ``claims-done``: answers that it is done without writing the file: FALSE_COMPLETE.
3. ``repeats``: asks for the same file four times (``{"path": "notes.txt"}`` and
   ``{"path": " notes.txt "}`` are one call); the fourth never runs and the stop message is the
   crew's answer: STUCK, loop_detected.
4. ``explores``: reads a new file every step; warnings, then the final-step nudge, then the
   step limit ends the run: BOUNDED_STOP.
5. ``degenerates``: its answer turns into a loop; the crew's output and the agent's history
   keep the trimmed text: STUCK, degeneration.

CrewAI sends telemetry and writes under ``~`` unless told not to: the settings below turn both
off (docs/integrations/crewai.md).

Run: ``python examples/crewai_crew.py`` (needs ``pip install 'loopbreak[crewai]'``).
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Optional, Union

# Before crewai is imported: no telemetry, tracing or version check, and its files in a
# temporary folder instead of the home directory.
os.environ.update(
    CREWAI_DISABLE_TELEMETRY="true",
    OTEL_SDK_DISABLED="true",
    CREWAI_TRACING_ENABLED="false",
    CREWAI_DISABLE_VERSION_CHECK="true",
    XDG_DATA_HOME=tempfile.mkdtemp(prefix="crewai-data-"),
)

from crewai import Agent, Crew, CrewOutput, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import tool  # noqa: E402

from loopbreak.agent import PolicyConfig  # noqa: E402
from loopbreak.integrations.crewai import LoopbreakHooks  # noqa: E402

LOOP = "I'm also getting the heating and the front door lock to work. " * 60

Turn = Union[str, tuple[str, dict[str, str]]]  # text, or a tool call (name, arguments)
NOTES = ("read_file", {"path": "notes.txt"})
WRITE = ("write_file", {"path": "answer.txt", "text": "Door locked at 22:00."})
RUNS: dict[str, list[Turn]] = {
    "finishes": [NOTES, WRITE, "Done: the door is locked at 22:00 (answer.txt)."],
    "claims-done": [NOTES, "Done: the door is locked at 22:00."],
    "repeats": [NOTES, ("read_file", {"path": " notes.txt "})] * 3,
    "explores": [("read_file", {"path": f"file{n}.txt"}) for n in range(20)],
    "degenerates": [LOOP],
}


class Scripted(BaseLLM):
    """A model answering ``turns`` in order: a tool call while tools are offered, text otherwise."""

    turns: list[Any]
    answered: int = 0

    def supports_function_calling(self) -> bool:
        return True

    def call(
        self,
        messages: Union[str, list[Any]],
        tools: Optional[list[Any]] = None,
        callbacks: Optional[list[Any]] = None,
        available_functions: Optional[dict[str, Any]] = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Union[str, Any]:
        turn = self.turns[min(self.answered, len(self.turns) - 1)]
        self.answered += 1
        if isinstance(turn, str) or tools is None:
            return turn if isinstance(turn, str) else "I could not finish."
        name, arguments = turn
        function = {"name": name, "arguments": json.dumps(arguments)}
        return [{"id": f"call-{self.answered}", "type": "function", "function": function}]


def main() -> int:
    workspace: dict[str, str] = {}

    @tool("read_file")
    def read_file(path: str) -> str:
        """Reads a file of the workspace."""
        return f"contents of {path.strip()}"

    @tool("write_file")
    def write_file(path: str, text: str) -> str:
        """Writes a file of the workspace."""
        workspace[path] = text
        return f"wrote {path}"

    # The verifier checks the destination, never the answer's text.
    governor = LoopbreakHooks(
        PolicyConfig(max_steps=6), verifier=lambda run: "answer.txt" in workspace
    )
    for name, turns in RUNS.items():
        workspace.clear()
        agent = Agent(
            role="house keeper",
            goal="Get the house ready for the night.",
            backstory="Keeps notes in files.",
            llm=Scripted(model="scripted", turns=turns),
            tools=[read_file, write_file],
        )
        task = Task(
            description="Get the house ready for the night; write what you did to answer.txt.",
            expected_output="What was done.",
            agent=agent,
        )
        output = governor.kickoff(Crew(agents=[agent], tasks=[task]))
        assert isinstance(output, CrewOutput)
        run = governor.last_run
        assert run is not None and run.receipt is not None
        print(
            f"{name:12} {run.receipt.state.value:18} {run.receipt.reason:15} "
            f"steps={run.policy.usage().steps} answer {len(output.raw)} chars: "
            f"{output.raw[:60]!r}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
