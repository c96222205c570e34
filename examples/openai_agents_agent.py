"""An OpenAI Agents SDK agent governed by loopbreak, offline: the SDK's own ``ScriptedModel``
plays a scripted model.

Five runs, each with a fresh policy, show the ways a run ends:

1. ``finishes``: reads the notes, writes ``answer.txt`` and answers; the verifier finds the
   file: VERIFIED_COMPLETE.
2. ``claims-done``: answers that it is done without writing the file: FALSE_COMPLETE.
3. ``repeats``: asks for the same file four times (``{"path": "notes.txt"}`` and
   ``{"path": " notes.txt "}`` are one call); the guardrail halts the fourth before it runs:
   STUCK, loop_detected.
4. ``explores``: reads a new file every turn; warnings, then the final-step nudge, then the
   max-turns handler gives the final answer: BOUNDED_STOP.
5. ``degenerates`` (streamed): its answer turns into a loop; the run is cancelled mid-stream
   and the history it leaves ends with the trimmed text: STUCK, degeneration.

Run: ``python examples/openai_agents_agent.py`` (needs ``pip install 'loopbreak[openai-agents]'``).
"""

from __future__ import annotations

import asyncio
from typing import Any, Union

from agents import Agent, AgentsException, RunConfig, function_tool
from agents.testing import ModelStep, ScriptedModel, function_call
from openai.types.responses import ResponseOutputMessage, ResponseOutputRefusal, ResponseOutputText

from loopbreak.agent import PolicyConfig
from loopbreak.integrations.openai_agents import LoopbreakRunner

LOOP = "I'm also getting the heating and the front door lock to work. " * 60
NOTES = ("read_file", {"path": "notes.txt"})
WRITE = ("write_file", {"path": "answer.txt", "text": "Door locked at 22:00."})
OFFLINE = RunConfig(tracing_disabled=True)


def streamed_text(text: str, chunk: int = 16) -> ResponseOutputMessage:
    """An answer the scripted model streams one ``chunk`` of text per delta."""
    parts: list[Union[ResponseOutputText, ResponseOutputRefusal]] = [
        ResponseOutputText(type="output_text", text=text[start : start + chunk], annotations=[])
        for start in range(0, len(text), chunk)
    ]
    return ResponseOutputMessage(
        id="msg", type="message", role="assistant", status="completed", content=parts
    )


def scripted(*turns: Any) -> ScriptedModel:
    """Each turn is a tool call (name, arguments) or the final answer (text)."""
    steps: list[Any] = []
    for index, turn in enumerate(turns):
        if isinstance(turn, tuple):
            steps.append([function_call(turn[0], turn[1], call_id=f"call-{index}")])
        else:
            steps.append(ModelStep(output=[streamed_text(turn)]))
    return ScriptedModel(steps)


RUNS = {
    "finishes": scripted(NOTES, WRITE, "Done: the door is locked at 22:00 (answer.txt)."),
    "claims-done": scripted(NOTES, "Done: the door is locked at 22:00."),
    "repeats": scripted(*[NOTES, ("read_file", {"path": " notes.txt "})] * 2),
    "explores": scripted(*[("read_file", {"path": f"file{n}.txt"}) for n in range(8)]),
    "degenerates": scripted(LOOP),
}


async def main_async() -> int:
    workspace: dict[str, str] = {}

    @function_tool
    def read_file(path: str) -> str:
        """Reads a file of the workspace."""
        return f"contents of {path.strip()}"

    @function_tool
    def write_file(path: str, text: str) -> str:
        """Writes a file of the workspace."""
        workspace[path] = text
        return f"wrote {path}"

    # The verifier checks the destination, never the answer's text.
    runner = LoopbreakRunner(
        PolicyConfig(max_steps=6), verifier=lambda run: "answer.txt" in workspace
    )
    for name, model in RUNS.items():
        workspace.clear()
        agent = Agent(name="house", model=model, tools=[read_file, write_file])
        prompt = "Get the house ready for the night."
        try:
            if name == "degenerates":
                streamed = runner.run_streamed(agent, prompt, run_config=OFFLINE)
                async for _ in streamed.stream_events():
                    pass  # a server would relay each event to its client here
                answer = ""
            else:
                answer = str((await runner.run(agent, prompt, run_config=OFFLINE)).final_output)
        except AgentsException as error:  # a stop the SDK raises; the run's items are kept
            answer = type(error).__name__
        run = runner.last_run
        assert run is not None and run.receipt is not None
        answer = answer or str(run.messages[-1]["content"])  # the trimmed, streamed answer
        print(
            f"{name:12} {run.receipt.state.value:18} {run.receipt.reason:15} "
            f"steps={run.policy.usage().steps} history={len(run.messages)} items, "
            f"answer ({len(answer)} chars): {answer[:48]!r}"
        )
    return 0


def main() -> int:
    return asyncio.run(main_async())


if __name__ == "__main__":
    raise SystemExit(main())
