"""``loopbreak proxy`` on the Anthropic Messages API over real HTTP: the real ``anthropic``
client (``messages.stream()``, ``create(stream=True)`` and whole answers) against the proxy in
front of the recorded upstream, which replies with real model outputs as Messages API events
(tests/support/anthropic_server.py, served by tests/support/proxy_upstream.py)."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types import MessageParam

from loopbreak import DEFAULT_KEEP, scan, trim
from loopbreak.store import Database
from loopbreak.streaming.persist import load_turn
from loopbreak.telemetry import REPETITION
from support import proxy_upstream
from support.anthropic_server import message_answer, message_events
from support.recorded import RECORDED
from support.recorded_server import Recordings, StreamLog, tool_arguments

from .conftest import ProxyFactory, proxy_in_front_of

LOOP = "d10-greedy"  # a real loop of SmolLM2 (periodic run)
CLEAN = "d08-greedy"  # a real clean answer
MESSAGES: list[MessageParam] = [{"role": "user", "content": "hi"}]
MAX_TOKENS = 2000


def client(base_url: str, api_key: str = proxy_upstream.API_KEY) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base_url, api_key=api_key, max_retries=0, timeout=60)


def _ended(recordings: Recordings, model: str) -> StreamLog:
    log = recordings.last(model)
    assert log.ended.wait(10), "the upstream stream never ended"
    return log


def _text(events: list[Any], delta_type: str = "text_delta", field: str = "text") -> str:
    return "".join(
        getattr(event.delta, field)
        for event in events
        if event.type == "content_block_delta" and event.delta.type == delta_type
    )


def _check_loop(loop: dict[str, Any], text: str, source: str) -> None:
    expected = scan(text)[0]
    assert (loop["rule"], loop["period"], loop["block"], loop["position"]) == (
        expected.rule,
        expected.period,
        expected.block,
        expected.start,
    )
    assert loop["copies"] >= 1 and loop["source"] == source and loop["units_removed"] > 0


def test_a_looping_message_stream_ends_as_a_complete_message(
    proxy: str, recordings: Recordings
) -> None:
    model = f"text:{LOOP}"
    with client(proxy).messages.stream(
        model=model, max_tokens=MAX_TOKENS, messages=MESSAGES
    ) as stream:
        events = list(stream)
        message = stream.get_final_message()
    raw = [event for event in events if event.type not in ("text",)]
    assert [event.type for event in raw[-3:]] == [
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert message.stop_reason == REPETITION
    (block,) = message.content
    assert block.type == "text" and block.text == _text(events)
    assert RECORDED[LOOP].text.startswith(block.text)
    assert len(block.text) < len(RECORDED[LOOP].text) / 2
    delta = raw[-2]
    assert delta.type == "message_delta"
    _check_loop((delta.model_extra or {})["loopbreak"], RECORDED[LOOP].text, "content")
    # The usage seen so far: the message_start's, as the SDK reads it into the message.
    assert delta.usage.output_tokens == message.usage.output_tokens == 1
    assert message.usage.input_tokens == 25
    assert _ended(recordings, model).disconnected_early  # the model server stopped sending


def test_looping_thinking_stops_a_raw_stream(proxy: str, recordings: Recordings) -> None:
    model = f"thinking:{LOOP}+text:{CLEAN}"
    events = list(
        client(proxy).messages.create(
            model=model, max_tokens=MAX_TOKENS, messages=MESSAGES, stream=True
        )
    )
    assert [event.type for event in events[-3:]] == [
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    stop, delta = events[-3], events[-2]
    assert stop.type == "content_block_stop" and stop.index == 0
    assert delta.type == "message_delta" and delta.delta.stop_reason == REPETITION
    _check_loop((delta.model_extra or {})["loopbreak"], RECORDED[LOOP].text, "reasoning")
    thinking = _text(events, "thinking_delta", "thinking")
    assert RECORDED[LOOP].text.startswith(thinking) and _text(events) == ""
    assert _ended(recordings, model).disconnected_early


def test_a_looping_tool_input_stops_with_the_input_read_so_far(
    proxy: str, recordings: Recordings
) -> None:
    model = f"tool:{LOOP}"
    with client(proxy).messages.stream(
        model=model, max_tokens=MAX_TOKENS, messages=MESSAGES
    ) as stream:
        events = list(stream)
        message = stream.get_final_message()
    assert message.stop_reason == REPETITION
    (block,) = message.content
    assert block.type == "tool_use" and block.name == "write_file"
    sent = _text(events, "input_json_delta", "partial_json")
    assert tool_arguments(LOOP).startswith(sent)
    # The SDK parses the cut JSON text as partial JSON, leaving out the unfinished string.
    assert len(sent) < len(tool_arguments(LOOP)) / 2 and block.input == {"path": "notes.md"}
    loop = (events[-2].model_extra or {})["loopbreak"]
    assert (loop["source"], loop["tool_name"]) == ("content[0].input", "write_file")
    assert _ended(recordings, model).disconnected_early


def test_an_async_client_stream_is_stopped(proxy: str, recordings: Recordings) -> None:
    model = f"thinking:{CLEAN}+text:{LOOP}"

    async def consume() -> Any:
        async with (
            anthropic.AsyncAnthropic(
                base_url=proxy, api_key=proxy_upstream.API_KEY, max_retries=0
            ) as async_client,
            async_client.messages.stream(
                model=model, max_tokens=MAX_TOKENS, messages=MESSAGES
            ) as stream,
        ):
            async for _ in stream:
                pass
            return await stream.get_final_message()

    message = asyncio.run(consume())
    assert message.stop_reason == REPETITION
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert message.content[0].type == "thinking"
    assert message.content[0].thinking == RECORDED[CLEAN].text
    assert _ended(recordings, model).disconnected_early


def test_a_clean_message_stream_is_byte_identical(
    upstream: str, proxy: str, recordings: Recordings
) -> None:
    model = f"thinking:{CLEAN}+text:d37-sampled"
    request = {"model": model, "max_tokens": MAX_TOKENS, "messages": MESSAGES, "stream": True}
    direct = httpx.post(f"{upstream}/v1/messages", json=request).content
    proxied = httpx.post(f"{proxy}/v1/messages", json=request)
    assert proxied.content == direct == "".join(message_events(model)).encode()
    assert proxied.headers["content-type"].startswith("text/event-stream")
    with client(proxy).messages.stream(
        model=model, max_tokens=MAX_TOKENS, messages=MESSAGES
    ) as stream:
        message = stream.get_final_message()
    assert message.stop_reason == "end_turn" and "loopbreak" not in (message.model_extra or {})
    assert message.content[1].type == "text"
    assert message.content[1].text == RECORDED["d37-sampled"].text
    assert _ended(recordings, model).completed


def test_a_client_that_leaves_closes_the_upstream(proxy: str, recordings: Recordings) -> None:
    model = f"text:{CLEAN}"
    with client(proxy).messages.stream(
        model=model, max_tokens=MAX_TOKENS, messages=MESSAGES
    ) as stream:
        for number, _ in enumerate(stream):
            if number == 5:
                break
    log = _ended(recordings, model)
    assert log.disconnected_early and log.sent < log.total


def test_a_looping_whole_message_comes_back_trimmed(proxy: str) -> None:
    model = f"thinking:{LOOP}+text:{LOOP}"
    message = client(proxy).messages.create(model=model, max_tokens=MAX_TOKENS, messages=MESSAGES)
    assert message.stop_reason == REPETITION and message.stop_sequence is None
    thinking, text = message.content
    # The first source to loop is the one trimmed; the other is as the model wrote it.
    assert thinking.type == "thinking"
    assert thinking.thinking == trim(RECORDED[LOOP].text, DEFAULT_KEEP).text
    assert text.type == "text" and text.text == RECORDED[LOOP].text
    _check_loop((message.model_extra or {})["loopbreak"], RECORDED[LOOP].text, "reasoning")


def test_a_looping_whole_tool_input_stays_an_object(proxy: str) -> None:
    message = client(proxy).messages.create(
        model=f"text:{CLEAN}+tool:{LOOP}", max_tokens=MAX_TOKENS, messages=MESSAGES
    )
    assert message.stop_reason == REPETITION
    answer, tool = message.content
    assert answer.type == "text" and answer.text == RECORDED[CLEAN].text
    assert tool.type == "tool_use" and isinstance(tool.input, dict)
    assert tool.input["path"] == "notes.md"
    content = tool.input["content"]
    assert isinstance(content, str) and RECORDED[LOOP].text.startswith(content)
    assert len(content) < len(RECORDED[LOOP].text)
    # Everything before the loop and the first --keep copies: the trimmed JSON text up to its
    # marker.
    arguments = json.dumps(json.loads(tool_arguments(LOOP)), ensure_ascii=False)
    kept = trim(arguments, DEFAULT_KEEP).text.split("\n[loopbreak: removed ")[0]
    assert kept == '{"path": "notes.md", "content": ' + json.dumps(content, ensure_ascii=False)[:-1]
    loop = (message.model_extra or {})["loopbreak"]
    assert (loop["source"], loop["tool_name"]) == ("content[1].input", "write_file")


def test_a_clean_whole_message_is_byte_identical(upstream: str, proxy: str) -> None:
    model = f"thinking:{CLEAN}+text:d37-sampled+tool:d20-sampled"
    request = {"model": model, "max_tokens": MAX_TOKENS, "messages": MESSAGES}
    direct = httpx.post(f"{upstream}/v1/messages", json=request)
    proxied = httpx.post(f"{proxy}/v1/messages", json=request)
    assert proxied.status_code == 200 and proxied.content == direct.content
    assert proxied.json() == message_answer(model)


def test_count_tokens_models_and_headers_pass_through(upstream: str, proxy: str) -> None:
    counted = client(proxy).messages.count_tokens(
        model=f"text:{CLEAN}",
        messages=MESSAGES,
        extra_headers={"anthropic-beta": "token-counting-2024-11-01"},
    )
    assert counted.input_tokens == len(json.dumps(MESSAGES))
    headers = {
        "x-api-key": proxy_upstream.API_KEY,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "a,b",
    }
    request = {"model": "m", "messages": MESSAGES}
    direct = httpx.post(f"{upstream}/v1/messages/count_tokens", json=request, headers=headers)
    proxied = httpx.post(f"{proxy}/v1/messages/count_tokens", json=request, headers=headers)
    assert (proxied.status_code, proxied.content) == (200, direct.content)
    assert json.loads(proxied.headers["x-echo"]) == {
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "a,b",
    }
    assert [model.id for model in client(proxy).models.list()] == [f"content:{CLEAN}"]
    with pytest.raises(anthropic.AuthenticationError) as raised:
        client(proxy, api_key="wrong").messages.count_tokens(model="m", messages=MESSAGES)
    assert raised.value.body == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid API key"},
    }


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("status", [400, 429, 529])
def test_upstream_errors_reach_the_client_unchanged(proxy: str, status: int, stream: bool) -> None:
    with pytest.raises(anthropic.APIStatusError) as raised:
        client(proxy).messages.create(
            model=f"status:{status}", max_tokens=MAX_TOKENS, messages=MESSAGES, stream=stream
        )
    assert raised.value.status_code == status
    assert raised.value.body == {
        "type": "error",
        "error": {"type": "test_error", "message": f"upstream says {status}"},
    }
    assert raised.value.response.headers["x-upstream"] == "yes"


def _proxy_error(raised: pytest.ExceptionInfo[anthropic.APIStatusError], error_type: str) -> None:
    body = raised.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"]["type"] == error_type
    assert body["error"]["message"].startswith("loopbreak proxy: ")


def test_the_proxys_own_errors_are_in_the_anthropic_shape(make_proxy: ProxyFactory) -> None:
    with socket.socket() as sock:  # a port nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with proxy_in_front_of(dead) as down:
        with pytest.raises(anthropic.APIStatusError) as raised:
            client(down).messages.create(model="m", max_tokens=MAX_TOKENS, messages=MESSAGES)
        assert raised.value.status_code == 502
        _proxy_error(raised, "api_error")
        with pytest.raises(anthropic.APIStatusError) as raised:
            client(down).messages.count_tokens(model="m", messages=MESSAGES)
        assert raised.value.status_code == 502
        _proxy_error(raised, "api_error")
        with pytest.raises(anthropic.APIStatusError) as raised:
            client(down).models.list()  # a shared path: told by the anthropic-version header
        _proxy_error(raised, "api_error")
    with make_proxy(timeout=0.5) as slow:
        with pytest.raises(anthropic.APIStatusError) as raised:
            client(slow).messages.create(model="slow", max_tokens=MAX_TOKENS, messages=MESSAGES)
        assert raised.value.status_code == 504
        _proxy_error(raised, "timeout_error")
    with make_proxy(max_request_bytes=1000) as small:
        big: list[MessageParam] = [{"role": "user", "content": "x" * 2000}]
        with pytest.raises(anthropic.APIStatusError) as raised:
            client(small).messages.create(model="m", max_tokens=MAX_TOKENS, messages=big)
        assert raised.value.status_code == 413
        _proxy_error(raised, "request_too_large")


def test_a_malformed_stream_ends_with_an_error_event(proxy: str) -> None:
    seen = []
    with pytest.raises(anthropic.APIStatusError) as raised:
        for event in client(proxy).messages.create(
            model="malformed", max_tokens=MAX_TOKENS, messages=MESSAGES, stream=True
        ):
            seen.append(event.type)
    assert seen[:2] == ["message_start", "content_block_start"]
    assert "message_stop" not in seen
    _proxy_error(raised, "api_error")
    assert "not JSON" in str(raised.value.body)


def test_metrics_spans_and_db_cover_the_messages_path(
    make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    path = tmp_path / "proxy.db"
    with make_proxy(db=str(path)) as proxy_url:
        messages = client(proxy_url).messages
        list(
            messages.create(
                model=f"text:{LOOP}", max_tokens=MAX_TOKENS, messages=MESSAGES, stream=True
            )
        )
        messages.create(model=f"text:{LOOP}", max_tokens=MAX_TOKENS, messages=MESSAGES)
        messages.create(model=f"text:{CLEAN}", max_tokens=MAX_TOKENS, messages=MESSAGES)
        with pytest.raises(anthropic.InternalServerError):
            messages.create(model="status:500", max_tokens=MAX_TOKENS, messages=MESSAGES)
        text = httpx.get(f"{proxy_url}/metrics").text
    samples = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    rule = scan(RECORDED[LOOP].text)[0].rule
    assert samples[f'loopbreak_proxy_loops_stopped_total{{rule="{rule}"}}'] == 2
    endpoint = 'endpoint="/v1/messages"'
    assert samples[f'loopbreak_proxy_requests_total{{{endpoint},outcome="degenerate"}}'] == 2
    assert samples[f'loopbreak_proxy_requests_total{{{endpoint},outcome="ok"}}'] == 1
    assert samples[f'loopbreak_proxy_requests_total{{{endpoint},outcome="500"}}'] == 1
    with Database(str(path)) as db:
        streamed, whole, clean = (load_turn(db, number) for number in (1, 2, 3))
        assert db.connection.execute("SELECT count(*) FROM turns").fetchone()[0] == 3
    assert streamed.status == whole.status == "degenerate"
    assert whole.text == trim(RECORDED[LOOP].text, DEFAULT_KEEP).text
    assert (clean.status, clean.text) == ("ok", RECORDED[CLEAN].text)


def test_trim_only_relays_message_streams_and_trims_whole_messages(
    make_proxy: ProxyFactory, recordings: Recordings
) -> None:
    model = f"text:{LOOP}"
    with make_proxy(on_loop="trim-only") as proxy_url:
        messages = client(proxy_url).messages
        events = list(
            messages.create(model=model, max_tokens=MAX_TOKENS, messages=MESSAGES, stream=True)
        )
        message = messages.create(model=model, max_tokens=MAX_TOKENS, messages=MESSAGES)
    assert _text(events) == RECORDED[LOOP].text
    assert _ended(recordings, model).completed
    assert message.content[0].type == "text"
    assert message.content[0].text == trim(RECORDED[LOOP].text, DEFAULT_KEEP).text
