"""Google ADK run offline for the tests of its adapter: ``Scripted``, a ``BaseLlm`` (ADK's
documented base for custom models) answering from a script, and ``run_agent``, one run of an
agent on ADK's ``InMemoryRunner``. A custom ``BaseLlm`` reads no key and opens no socket."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Sequence
from typing import Any, Optional, Union

# ADK's OpenTelemetry spans go to no exporter unless one is configured; none is, here.
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.agents.run_config import RunConfig, StreamingMode  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402

Step = Union[dict[str, Any], str]  # a call of the tool ``add`` with these arguments, or an answer
CHUNK = 8  # characters per streamed partial


class Scripted(BaseLlm):  # type: ignore[misc]
    """Answers the n-th model call with ``script[n]``: a dict is a call of ``tool`` with those
    arguments, a str a text answer, streamed in partials when ADK asks for a stream."""

    model: str = "scripted"
    script: list[Any]
    tool: str = "add"
    requests: list[LlmRequest] = []
    partials: int = 0  # streamed partials sent

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        step: Step = self.script[len(self.requests)]
        self.requests.append(llm_request)
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=10, candidates_token_count=5
        )
        if isinstance(step, dict):
            part = types.Part.from_function_call(name=self.tool, args=step)
            yield LlmResponse(
                content=types.Content(role="model", parts=[part]), usage_metadata=usage
            )
            return
        if stream:
            for start in range(0, len(step), CHUNK):
                piece = types.Part.from_text(text=step[start : start + CHUNK])
                self.partials += 1
                yield LlmResponse(content=types.Content(role="model", parts=[piece]), partial=True)
        text = types.Part.from_text(text=step)
        yield LlmResponse(
            content=types.Content(role="model", parts=[text]),
            usage_metadata=usage,
            turn_complete=True,
        )


def run_agent(
    agent: LlmAgent,
    prompt: str,
    plugins: Sequence[Any],
    *,
    streamed: bool = False,
    run_config: Optional[RunConfig] = None,
) -> list[Event]:
    """One run of ``agent`` on ``prompt`` in a new session (streamed: ``StreamingMode.SSE``): the
    events the caller gets."""
    config = (run_config or RunConfig()).model_copy(
        update={"streaming_mode": StreamingMode.SSE if streamed else StreamingMode.NONE}
    )

    async def run() -> list[Event]:
        app = App(name="loopbreak-tests", root_agent=agent, plugins=list(plugins))
        runner = InMemoryRunner(app=app)
        session = await runner.session_service.create_session(
            app_name="loopbreak-tests", user_id="user"
        )
        message = types.Content(role="user", parts=[types.Part.from_text(text=prompt)])
        return [
            event
            async for event in runner.run_async(
                user_id="user",
                session_id=session.id,
                new_message=message,
                run_config=config,
            )
        ]

    return asyncio.run(run())


def session_texts(events: Sequence[Event]) -> list[str]:
    """The text of each event of a session that holds text, in order."""
    texts = []
    for event in events:
        parts = event.content.parts if event.content is not None else None
        text = "".join(part.text or "" for part in parts or ())
        if text:
            texts.append(text)
    return texts
