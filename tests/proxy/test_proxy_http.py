"""``loopbreak proxy`` over real HTTP: the real ``openai`` client against the proxy (uvicorn on
127.0.0.1) in front of a real local upstream that serves recorded model outputs
(tests/support/proxy_upstream.py)."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from typing import Any

import httpx
import openai
import pytest

from loopbreak import DEFAULT_KEEP, scan, trim
from loopbreak.store import Database
from loopbreak.streaming.persist import load_turn
from loopbreak.telemetry import REPETITION
from support import proxy_upstream
from support.recorded import RECORDED
from support.recorded_server import ANSWER_AFTER_REASONING, Recordings, tool_arguments

from .conftest import ProxyFactory, client, proxy_in_front_of

LOOP = "d10-greedy"  # a real loop of SmolLM2 (periodic run)
CLEAN = "d08-greedy"  # a real clean answer
MESSAGES: Any = [{"role": "user", "content": "hi"}]


def _ended(recordings: Recordings, model: str) -> Any:
    log = recordings.last(model)
    assert log.ended.wait(10), "the upstream stream never ended"
    return log


def test_a_looping_chat_stream_stops_with_finish_reason_repetition(
    proxy: str, recordings: Recordings
) -> None:
    model = f"content:{LOOP}"
    chunks = list(
        client(proxy).chat.completions.create(model=model, messages=MESSAGES, stream=True)
    )
    last = chunks[-1]
    assert last.choices[0].finish_reason == REPETITION
    loop = (last.model_extra or {})["loopbreak"]
    expected = scan(RECORDED[LOOP].text)[0]
    assert (loop["rule"], loop["period"], loop["block"]) == (
        expected.rule,
        expected.period,
        expected.block,
    )
    assert (
        loop["position"] == expected.start and loop["copies"] >= 1 and loop["source"] == "content"
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    assert RECORDED[LOOP].text.startswith(text) and len(text) < len(RECORDED[LOOP].text) / 2
    log = _ended(recordings, model)
    assert log.disconnected_early  # the proxy closed the upstream: the server stopped sending


def test_a_clean_chat_stream_passes_unchanged(proxy: str, recordings: Recordings) -> None:
    model = f"content:{CLEAN}"
    chunks = list(
        client(proxy).chat.completions.create(model=model, messages=MESSAGES, stream=True)
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == RECORDED[CLEAN].text
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert "loopbreak" not in (chunks[-1].model_extra or {})
    assert _ended(recordings, model).completed


def test_clean_streams_are_byte_identical_through_the_proxy(upstream: str, proxy: str) -> None:
    request = {"model": f"content:{CLEAN}", "messages": MESSAGES, "stream": True}
    direct = httpx.post(f"{upstream}/v1/chat/completions", json=request).content
    proxied = httpx.post(f"{proxy}/v1/chat/completions", json=request)
    assert proxied.content == direct
    assert proxied.headers["content-type"].startswith("text/event-stream")


@pytest.mark.parametrize(
    ("model", "source"),
    [
        (f"tool:{LOOP}", "tool_calls[0].arguments"),
        (f"reasoning_content:{LOOP}", "reasoning"),
        (f"reasoning:{LOOP}", "reasoning"),
    ],
)
def test_loops_in_tool_arguments_and_reasoning_stop_the_stream(
    proxy: str, recordings: Recordings, model: str, source: str
) -> None:
    chunks = list(
        client(proxy).chat.completions.create(model=model, messages=MESSAGES, stream=True)
    )
    assert chunks[-1].choices[0].finish_reason == REPETITION
    loop = (chunks[-1].model_extra or {})["loopbreak"]
    assert loop["source"] == source
    assert loop["tool_name"] == ("write_file" if model.startswith("tool") else None)
    assert _ended(recordings, model).disconnected_early


def test_a_looping_responses_stream_ends_incomplete_for_repetition(
    proxy: str, recordings: Recordings
) -> None:
    model = f"content:{LOOP}"
    events = list(client(proxy).responses.create(model=model, input="hi", stream=True))
    last = events[-1]
    assert last.type == "response.incomplete"
    assert last.response.status == "incomplete"
    assert last.response.incomplete_details is not None
    assert last.response.incomplete_details.reason == REPETITION
    assert (last.model_extra or {})["loopbreak"]["rule"] == scan(RECORDED[LOOP].text)[0].rule
    assert all(event.sequence_number < last.sequence_number for event in events[:-1])
    assert _ended(recordings, model).disconnected_early


def test_a_looping_completions_stream_stops(proxy: str, recordings: Recordings) -> None:
    model = f"content:{LOOP}"
    chunks = list(client(proxy).completions.create(model=model, prompt="hi", stream=True))
    assert chunks[-1].choices[0].finish_reason == REPETITION
    assert _ended(recordings, model).disconnected_early


def test_a_client_that_disconnects_closes_the_upstream(proxy: str, recordings: Recordings) -> None:
    model = f"content:{CLEAN}"
    with client(proxy).chat.completions.create(
        model=model, messages=MESSAGES, stream=True
    ) as stream:
        for number, _ in enumerate(stream):
            if number == 3:
                break
    log = _ended(recordings, model)
    assert log.disconnected_early and log.sent < log.total


def test_a_looping_whole_answer_comes_back_trimmed(proxy: str) -> None:
    answer = client(proxy).chat.completions.create(model=f"content:{LOOP}", messages=MESSAGES)
    choice = answer.choices[0]
    assert choice.finish_reason == REPETITION
    assert choice.message.content == trim(RECORDED[LOOP].text, DEFAULT_KEEP).text
    assert (answer.model_extra or {})["loopbreak"]["units_removed"] > 0


def test_whole_answers_of_the_other_paths_and_sources_are_trimmed(proxy: str) -> None:
    openai_client = client(proxy)
    trimmed = trim(RECORDED[LOOP].text, DEFAULT_KEEP).text
    completion = openai_client.completions.create(model=f"content:{LOOP}", prompt="hi")
    assert completion.choices[0].text == trimmed
    assert completion.choices[0].finish_reason == REPETITION
    response = openai_client.responses.create(model=f"content:{LOOP}", input="hi")
    assert response.output_text == trimmed and response.status == "incomplete"
    tool = openai_client.chat.completions.create(model=f"tool:{LOOP}", messages=MESSAGES)
    calls = tool.choices[0].message.tool_calls or []
    assert calls[0].function.arguments == trim(tool_arguments(LOOP), DEFAULT_KEEP).text  # type: ignore[union-attr]
    thinking = openai_client.chat.completions.create(
        model=f"reasoning_content:{LOOP}", messages=MESSAGES
    )
    message = thinking.choices[0].message
    assert (message.model_extra or {})["reasoning_content"] == trimmed
    assert message.content == ANSWER_AFTER_REASONING


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions", "/v1/responses"])
def test_clean_whole_answers_are_byte_identical(upstream: str, proxy: str, path: str) -> None:
    request = {"model": f"content:{CLEAN}", "messages": MESSAGES, "prompt": "hi", "input": "hi"}
    direct = httpx.post(upstream + path, json=request)
    proxied = httpx.post(proxy + path, json=request)
    assert proxied.status_code == 200 and proxied.content == direct.content


def test_an_upstream_repetition_stop_is_kept(proxy: str) -> None:
    model = f"repetition:{CLEAN}"
    openai_client = client(proxy)
    chunks = list(
        openai_client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
    )
    assert chunks[-1].choices[0].finish_reason == REPETITION
    answer = openai_client.chat.completions.create(model=model, messages=MESSAGES)
    assert answer.choices[0].finish_reason == REPETITION
    assert "loopbreak" not in (answer.model_extra or {})


def test_other_paths_pass_through_with_auth_headers_and_query(proxy: str) -> None:
    assert [m.id for m in client(proxy).models.list()] == [f"content:{CLEAN}"]
    with pytest.raises(openai.AuthenticationError) as raised:
        client(proxy, api_key="wrong").models.list()
    assert raised.value.code == "invalid_api_key"
    response = httpx.get(
        f"{proxy}/v1/models?limit=2",
        headers={"authorization": f"Bearer {proxy_upstream.API_KEY}", "x-test-trace": "abc"},
    )
    assert json.loads(response.headers["x-echo"]) == {"x-test-trace": "abc"}
    assert response.headers["x-query"] == "limit=2"
    assert httpx.get(f"{proxy}/v2/nothing").status_code == 404


@pytest.mark.parametrize("status", [400, 429, 500])
def test_upstream_errors_reach_the_client_unchanged(proxy: str, status: int) -> None:
    with pytest.raises(openai.APIStatusError) as raised:
        client(proxy).chat.completions.create(
            model=f"status:{status}", messages=MESSAGES, stream=True
        )
    assert raised.value.status_code == status
    assert raised.value.body == {"message": f"upstream says {status}", "type": "test", "code": None}
    assert raised.value.response.headers["x-upstream"] == "yes"


def test_an_upstream_that_is_down_is_a_502() -> None:
    with socket.socket() as sock:  # a port nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with proxy_in_front_of(dead) as down:
        with pytest.raises(openai.InternalServerError) as raised:
            client(down).chat.completions.create(model=f"content:{CLEAN}", messages=MESSAGES)
        metrics = httpx.get(f"{down}/metrics").text
    assert raised.value.status_code == 502
    assert "loopbreak proxy: the upstream" in raised.value.message
    assert 'loopbreak_proxy_upstream_errors_total{kind="connect"} 1.0' in metrics


class _UpstreamClosingIdleConnections:
    """A raw HTTP/1.1 upstream that answers the first request of each connection and resets
    the connection on the next one: what a server's keep-alive timeout does to a pooled
    connection when it fires as the request is written."""

    ANSWER = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
    }

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections = 0
        self.requests = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):  # the listener is closed at the end of the test
            while True:
                connection, _ = self.listener.accept()
                self.connections += 1
                threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection, connection.makefile("rb") as incoming:
            for answered in (False, True):
                headers = [line for line in iter(incoming.readline, b"\r\n") if line]
                if not headers:
                    return
                length = next(
                    (
                        int(h.split(b":")[1])
                        for h in headers
                        if h.lower().startswith(b"content-length")
                    ),
                    0,
                )
                incoming.read(length)
                self.requests += 1
                if answered:  # the second request: reset, with no answer
                    connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    return
                body = json.dumps(self.ANSWER).encode()
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    + f"content-length: {len(body)}\r\n\r\n".encode()
                    + body
                )


def test_a_request_on_a_connection_the_upstream_closed_is_sent_again() -> None:
    upstream = _UpstreamClosingIdleConnections()
    with upstream.listener, proxy_in_front_of(upstream.url) as proxy_url:
        answers = [
            client(proxy_url).chat.completions.create(model="m", messages=MESSAGES)
            for _ in range(2)
        ]
    assert [answer.choices[0].message.content for answer in answers] == ["hi", "hi"]
    # The second request met the reset connection, then went out again on a new one.
    assert (upstream.requests, upstream.connections) == (3, 2)


def test_an_upstream_that_times_out_is_a_504(make_proxy: ProxyFactory) -> None:
    with make_proxy(timeout=0.5) as proxy_url:
        with pytest.raises(openai.APIStatusError) as raised:
            client(proxy_url).chat.completions.create(model="slow", messages=MESSAGES)
        metrics = httpx.get(f"{proxy_url}/metrics").text
    assert raised.value.status_code == 504
    assert 'loopbreak_proxy_upstream_errors_total{kind="timeout"} 1.0' in metrics


def test_malformed_sse_ends_the_stream_with_an_error(proxy: str) -> None:
    stream = client(proxy).chat.completions.create(
        model="malformed", messages=MESSAGES, stream=True
    )
    seen = []
    with pytest.raises(openai.APIError) as raised:
        for chunk in stream:
            seen.append(chunk.choices[0].delta.content)
    assert seen == ["Hello"]
    assert "not JSON" in raised.value.message


def test_a_request_over_the_size_limit_is_refused(make_proxy: ProxyFactory) -> None:
    big = [{"role": "user", "content": "x" * 2000}]
    with (
        make_proxy(max_request_bytes=1000) as proxy_url,
        pytest.raises(openai.APIStatusError) as raised,
    ):
        client(proxy_url).chat.completions.create(model=f"content:{CLEAN}", messages=big)  # type: ignore[arg-type]
    assert raised.value.status_code == 413


def test_trim_only_relays_streams_and_trims_whole_answers(
    make_proxy: ProxyFactory, recordings: Recordings
) -> None:
    model = f"content:{LOOP}"
    with make_proxy(on_loop="trim-only") as proxy_url:
        openai_client = client(proxy_url)
        chunks = list(
            openai_client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
        )
        answer = openai_client.chat.completions.create(model=model, messages=MESSAGES)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == RECORDED[LOOP].text
    assert _ended(recordings, model).completed
    assert answer.choices[0].message.content == trim(RECORDED[LOOP].text, DEFAULT_KEEP).text


def test_keep_sets_the_copies_left_in_a_trimmed_answer(make_proxy: ProxyFactory) -> None:
    with make_proxy(keep=1) as proxy_url:
        answer = client(proxy_url).chat.completions.create(
            model=f"content:{LOOP}", messages=MESSAGES
        )
    assert answer.choices[0].message.content == trim(RECORDED[LOOP].text, 1).text


def test_db_saves_each_guarded_request(make_proxy: ProxyFactory, tmp_path: Any) -> None:
    path = tmp_path / "proxy.db"
    with make_proxy(db=str(path)) as proxy_url:
        openai_client = client(proxy_url)
        list(
            openai_client.chat.completions.create(
                model=f"content:{LOOP}", messages=MESSAGES, stream=True
            )
        )
        openai_client.chat.completions.create(model=f"content:{CLEAN}", messages=MESSAGES)
        openai_client.models.list()  # not guarded: not saved
    with Database(str(path)) as db:
        stopped, clean = load_turn(db, 1), load_turn(db, 2)
        assert db.connection.execute("SELECT count(*) FROM turns").fetchone()[0] == 2
    assert stopped.status == "degenerate" and stopped.finding is not None
    assert stopped.text == trim(stopped.text).text and len(stopped.text) < len(RECORDED[LOOP].text)
    assert (clean.status, clean.text, clean.error) == ("ok", RECORDED[CLEAN].text, None)


def test_metrics_count_requests_loops_and_upstream_errors(make_proxy: ProxyFactory) -> None:
    with make_proxy() as proxy_url:
        openai_client = client(proxy_url)
        list(
            openai_client.chat.completions.create(
                model=f"content:{LOOP}", messages=MESSAGES, stream=True
            )
        )
        openai_client.chat.completions.create(model=f"content:{LOOP}", messages=MESSAGES)
        openai_client.chat.completions.create(model=f"content:{CLEAN}", messages=MESSAGES)
        with pytest.raises(openai.InternalServerError):
            openai_client.chat.completions.create(model="status:500", messages=MESSAGES)
        response = httpx.get(f"{proxy_url}/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    samples = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in response.text.splitlines()
        if line and not line.startswith("#")
    }
    rule = scan(RECORDED[LOOP].text)[0].rule
    assert samples[f'loopbreak_proxy_loops_stopped_total{{rule="{rule}"}}'] == 2
    path = 'endpoint="/v1/chat/completions"'
    assert samples[f'loopbreak_proxy_requests_total{{{path},outcome="degenerate"}}'] == 2
    assert samples[f'loopbreak_proxy_requests_total{{{path},outcome="ok"}}'] == 1
    assert samples[f'loopbreak_proxy_requests_total{{{path},outcome="500"}}'] == 1
    assert samples['loopbreak_proxy_upstream_errors_total{kind="status"}'] == 1
    assert samples["loopbreak_proxy_loop_chars_trimmed_total"] > 0
