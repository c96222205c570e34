"""A Google ADK agent governed by loopbreak, offline: a scripted ``BaseLlm`` (ADK's base for
custom models) plays the model and streams its answers as Gemini would (``StreamingMode.SSE``).

Five runs of one agent on one ``Runner``, each with a fresh policy, show the ways a run ends:

1. ``finishes``: reads the notes, writes ``answer.txt`` and answers; the verifier finds the
   file: VERIFIED_COMPLETE.
2. ``claims-done``: answers that it is done without writing the file: FALSE_COMPLETE.
3. ``repeats``: asks for the same file four times (``{"path": "notes.txt"}`` and
   ``{"path": " notes.txt "}`` are one call); the fourth never runs: STUCK, loop_detected.
4. ``explores``: reads a new file every step; warnings, then the final-step nudge, then the
   step limit ends the run: BOUNDED_STOP.
5. ``degenerates``: its answer turns into a loop; the stream is cut and the session keeps the
   trimmed text: STUCK, degeneration.

Run: ``python examples/google_adk_agent.py`` (needs ``pip install 'loopbreak[google-adk]'``).
"""

import asyncio
import os
from collections.abc import AsyncGenerator
from typing import Any, Union

os.environ.setdefault("OTEL_SDK_DISABLED", "true")  # no OpenTelemetry SDK work for ADK's spans

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from loopbreak.agent import PolicyConfig
from loopbreak.integrations.google_adk import LoopbreakPlugin

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


class Scripted(BaseLlm):  # type: ignore[misc]
    """A model answering ``turns`` in order, the last one again if asked for more."""

    model: str = "scripted"
    turns: list[Any]
    calls: int = 0

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        turn = self.turns[min(self.calls, len(self.turns) - 1)]
        self.calls += 1
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=20, candidates_token_count=10
        )
        if isinstance(turn, tuple):
            call = types.Part.from_function_call(name=turn[0], args=turn[1])
            yield LlmResponse(
                content=types.Content(role="model", parts=[call]), usage_metadata=usage
            )
            return
        if stream:  # 16 characters a partial, then the whole answer, as ADK expects
            for start in range(0, len(turn), 16):
                chunk = types.Part.from_text(text=turn[start : start + 16])
                yield LlmResponse(content=types.Content(role="model", parts=[chunk]), partial=True)
        text = types.Part.from_text(text=turn)
        yield LlmResponse(content=types.Content(role="model", parts=[text]), usage_metadata=usage)


async def run_all() -> None:
    workspace: dict[str, str] = {}

    def read_file(path: str) -> str:
        """Reads a file of the workspace."""
        return f"contents of {path.strip()}"

    def write_file(path: str, text: str) -> str:
        """Writes a file of the workspace."""
        workspace[path] = text
        return f"wrote {path}"

    # The verifier checks the destination, never the answer's text.
    governor = LoopbreakPlugin(
        PolicyConfig(max_steps=6), verifier=lambda run: "answer.txt" in workspace
    )
    streamed = RunConfig(streaming_mode=StreamingMode.SSE)
    for name, turns in RUNS.items():
        workspace.clear()
        agent = LlmAgent(name="house", model=Scripted(turns=turns), tools=[read_file, write_file])
        runner = InMemoryRunner(app=App(name="house", root_agent=agent, plugins=[governor]))
        session = await runner.session_service.create_session(app_name="house", user_id="me")
        ask = types.Content(role="user", parts=[types.Part.from_text(text="Get the house ready.")])
        answer = ""
        async for event in runner.run_async(
            user_id="me", session_id=session.id, new_message=ask, run_config=streamed
        ):
            if event.is_final_response() and event.content and event.content.parts:
                answer = "".join(part.text or "" for part in event.content.parts)
        run = governor.last_run
        assert run is not None and run.receipt is not None
        print(
            f"{name:12} {run.receipt.state.value:18} {run.receipt.reason:15} "
            f"steps={run.policy.usage().steps} kept {len(answer)} chars: {answer[:60]!r}"
        )


def main() -> int:
    asyncio.run(run_all())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
