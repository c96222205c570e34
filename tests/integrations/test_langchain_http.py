"""``LoopbreakMiddleware`` over real HTTP: a LangChain agent on ``langchain-openai``'s
``ChatOpenAI`` (``streaming=True``) talks to the server streaming recorded model outputs
(tests/recorded_server.py), as answer text and as a tool call's arguments. The loop must be cut
mid-stream (the server sees the client go before it has sent the whole recording), the tool
must not run, and the agent's history must hold only the trimmed text."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from starlette.applications import Starlette

from loopbreak import scan
from loopbreak.agent.receipt import EvidenceKind, Receipt, ReceiptState
from loopbreak.integrations.langchain import LoopbreakMiddleware
from support.recorded import RECORDED
from support.recorded_server import Recordings, StreamLog, routes, serve

LOOP = RECORDED["d10-greedy"]


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Recordings]]:
    recordings = Recordings()
    for url in serve(Starlette(routes=routes(recordings))):
        yield url, recordings


def finished(recordings: Recordings, model: str) -> StreamLog:
    log = recordings.last(model)
    assert log.ended.wait(timeout=30), "the server's stream never ended"
    return log


def agent_on(url: str, model: str, receipts: list[Receipt], tools: list[Any], *others: Any) -> Any:
    chat = ChatOpenAI(
        model=model,
        base_url=f"{url}/v1",
        api_key="test",  # type: ignore[arg-type]
        streaming=True,
        max_retries=0,
    )
    middleware = [LoopbreakMiddleware(on_receipt=receipts.append), *others]
    return create_agent(chat, tools=tools, middleware=middleware)


def test_a_looping_answer_over_http_is_cut_mid_stream(server: tuple[str, Recordings]) -> None:
    url, recordings = server
    receipts: list[Receipt] = []
    model = "content:d10-greedy"
    result = agent_on(url, model, receipts, []).invoke({"messages": [("user", LOOP.prompt)]})

    log = finished(recordings, model)
    assert log.disconnected_early and log.sent < log.total // 2
    kept = str(result["messages"][-1].content)
    assert kept.startswith(LOOP.text[: scan(LOOP.text)[0].start])
    assert "[loopbreak: removed" in kept and len(kept) < len(LOOP.text) // 2
    [receipt] = receipts
    assert receipt.state is ReceiptState.STUCK and receipt.reason == "degeneration"


def test_an_async_run_is_cut_the_same_way(server: tuple[str, Recordings]) -> None:
    url, recordings = server
    receipts: list[Receipt] = []
    model = "content:d10-greedy"
    agent = agent_on(url, model, receipts, [])
    result = asyncio.run(agent.ainvoke({"messages": [("user", LOOP.prompt)]}))
    assert finished(recordings, model).disconnected_early
    assert "[loopbreak: removed" in str(result["messages"][-1].content)
    assert [r.state for r in receipts] == [ReceiptState.STUCK]


def test_looping_tool_call_arguments_are_cut_and_the_tool_never_runs(
    server: tuple[str, Recordings],
) -> None:
    url, recordings = server
    written: list[str] = []

    @tool
    def write_file(path: str, content: str) -> str:
        """Writes a file."""
        written.append(path)
        return "ok"

    receipts: list[Receipt] = []
    model = "tool:d10-greedy"
    result = agent_on(url, model, receipts, [write_file]).invoke({"messages": [("user", "go")]})

    assert finished(recordings, model).disconnected_early
    assert written == []
    assert not result["messages"][-1].tool_calls
    [receipt] = receipts
    assert receipt.state is ReceiptState.STUCK
    [evidence] = [e for e in receipt.evidence if e.kind is EvidenceKind.DEGENERATION]
    assert evidence.details["finding"]["source"] == "tool_calls[0].arguments"
    assert evidence.details["finding"]["tool_name"] == "write_file"


def test_a_retry_middleware_inside_does_not_generate_the_loop_again(
    server: tuple[str, Recordings],
) -> None:
    url, recordings = server
    receipts: list[Receipt] = []
    model = "content:d14-greedy"
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)
    agent = agent_on(url, model, receipts, [], retry)
    before = len(recordings.streams)
    result = agent.invoke({"messages": [("user", "go")]})

    # The cut is no failed call (StreamCut is not an Exception): the retry middleware lets it
    # through, and the model is asked once.
    [stream] = recordings.streams[before:]
    assert stream.ended.wait(timeout=30) and stream.disconnected_early
    assert "[loopbreak: removed" in str(result["messages"][-1].content)
    assert [r.state for r in receipts] == [ReceiptState.STUCK]
