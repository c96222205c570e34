"""CrewAI offline for tests: its telemetry, tracing and version check turned off and its files
kept out of ``~`` (``OFFLINE``, applied when this module is imported, before crewai is: the
tests' conftest.py imports it first wherever crewai is installed), and a
scripted model on CrewAI's documented base for custom models (``crewai.llms.base_llm.BaseLLM``)
that answers as CrewAI's own providers do: native tool calls while tools are offered, text
otherwise, streamed chunks when CrewAI asks for a stream, token usage, the LLM-layer hooks."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from typing import Any, Optional, Union

# Set before crewai is imported: CrewAI reads some of these at import time.
OFFLINE = {
    "CREWAI_DISABLE_TELEMETRY": "true",  # no spans to telemetry.crewai.com
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_TRACING_ENABLED": "false",  # no execution traces
    "CREWAI_TESTING": "true",  # no first-run trace prompt
    "CREWAI_DISABLE_VERSION_CHECK": "true",  # no PyPI lookup
}
_HOME = tempfile.mkdtemp(prefix="crewai-home-")
os.environ.update(OFFLINE)
# CrewAI's kickoff database, user id and keys go under appdirs' folders of the home directory.
os.environ.update(
    HOME=_HOME,
    XDG_DATA_HOME=os.path.join(_HOME, "data"),
    XDG_CONFIG_HOME=os.path.join(_HOME, "config"),
    CREWAI_STORAGE_DIR="loopbreak-tests",
)

from crewai.events.types.llm_events import LLMCallType  # noqa: E402
from crewai.llms.base_llm import BaseLLM, llm_call_context  # noqa: E402

# A call of the tool ``add`` with these arguments, several calls in one answer, or text.
Step = Union[dict[str, Any], list[dict[str, Any]], str]
CHUNK = 8  # characters per streamed chunk


class ScriptedLLM(BaseLLM):
    """Answers ``script`` in order, one step per call; a tool-call step is asked of the tool
    ``tool``. ``seen`` keeps a copy of the messages of every call."""

    script: list[Any]
    tool: str = "add"
    answered: int = 0
    seen: list[list[dict[str, Any]]] = []

    def supports_function_calling(self) -> bool:
        return True  # CrewAI's native tool-call loop, as for its providers

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
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        with llm_call_context():
            self._emit_call_started_event(
                messages=messages,
                tools=tools,
                callbacks=callbacks,
                available_functions=available_functions,
                from_task=from_task,
                from_agent=from_agent,
            )
            self._invoke_before_llm_call_hooks(messages, from_agent)
            self.seen.append([dict(message) for message in messages])
            if self.answered >= len(self.script):
                raise AssertionError(f"the script has {len(self.script)} answers, asked again")
            step = self.script[self.answered]
            self.answered += 1
            prompt = sum(len(str(message.get("content") or "")) for message in messages)
            if not isinstance(step, str):
                asked = [json.dumps(call) for call in ([step] if isinstance(step, dict) else step)]
                self._used(prompt, sum(len(arguments) for arguments in asked))
                calls = [
                    _tool_call(f"call-{self.answered}-{index}", self.tool, arguments)
                    for index, arguments in enumerate(asked)
                ]
                self._emit_call_completed_event(
                    calls, LLMCallType.TOOL_CALL, from_task, from_agent, messages
                )
                return calls
            if self.stream:
                for start in range(0, len(step), CHUNK):
                    self._emit_stream_chunk_event(
                        step[start : start + CHUNK],
                        from_task=from_task,
                        from_agent=from_agent,
                        call_type=LLMCallType.LLM_CALL,
                        response_id=f"response-{self.answered}",
                    )
            self._used(prompt, len(step))
            answer: str = self._invoke_after_llm_call_hooks(messages, step, from_agent)
            self._emit_call_completed_event(
                answer, LLMCallType.LLM_CALL, from_task, from_agent, messages
            )
            return answer

    def _used(self, prompt: int, completion: int) -> None:
        self._track_token_usage_internal(
            {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        )


def scripted(script: Sequence[Step], **fields: Any) -> ScriptedLLM:
    return ScriptedLLM(model="scripted", script=list(script), **fields)


def _tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
