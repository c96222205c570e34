"""Guard an Anthropic Messages stream with loopbreak, offline.

A local server stands in for the Anthropic API: it streams, as Messages API events, a short
thinking block and then a real model output that falls into a loop (the one ``loopbreak demo``
replays: SmolLM2-135M-Instruct repeating one sentence until its token limit). The real
``anthropic`` client reads it through ``client.messages.stream()``; ``guard_messages`` stops the
stream where the loop starts, which closes the HTTP response, and the trimmed answer is saved.

Run: ``python examples/anthropic_guard.py [--db PATH]`` (needs ``loopbreak[anthropic]``,
``starlette`` and ``uvicorn``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any, Optional

import uvicorn
from anthropic import Anthropic
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from loopbreak.integrations.anthropic import guard_messages
from loopbreak.store import Database
from loopbreak.streaming import persist
from loopbreak.streaming.demo import load_recording, token_deltas

THINKING = "The user wants the house ready for the night. I will go through each device in turn."


def _event(data: dict[str, Any]) -> str:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


def _reply(model: str) -> list[str]:
    """A Messages API event stream: a thinking block, then the recorded answer."""
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
    }
    message.update(content=[], stop_reason=None, usage={"input_tokens": 40, "output_tokens": 1})
    events = [_event({"type": "message_start", "message": message})]
    blocks = [
        (
            {"type": "thinking", "thinking": "", "signature": ""},
            "thinking_delta",
            "thinking",
            THINKING,
        ),
        ({"type": "text", "text": ""}, "text_delta", "text", load_recording().text),
    ]
    for index, (start, delta_type, field, text) in enumerate(blocks):
        events.append(
            _event({"type": "content_block_start", "index": index, "content_block": start})
        )
        for delta in token_deltas(text):
            delta_event = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": delta_type, field: delta},
            }
            events.append(_event(delta_event))
        events.append(_event({"type": "content_block_stop", "index": index}))
    events.append(
        _event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 1500},
            }
        )
    )
    events.append(_event({"type": "message_stop"}))
    return events


class FakeAnthropicApi:
    """``POST /v1/messages`` streaming ``_reply``, about 500 events a second; it counts what it
    sent, so the example can show that the stream was cut short."""

    def __init__(self) -> None:
        self.sent = 0
        self.total = 0
        self.app = Starlette(routes=[Route("/v1/messages", self.messages, methods=["POST"])])

    async def messages(self, request: Request) -> StreamingResponse:
        events = _reply((await request.json())["model"])
        self.total = len(events)

        async def stream() -> AsyncIterator[str]:
            for event in events:
                yield event
                self.sent += 1
                await asyncio.sleep(0.002)

        return StreamingResponse(stream(), media_type="text/event-stream")


def serve_in_thread(app: Starlette) -> tuple[str, uvicorn.Server]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=":memory:", help="SQLite file for the saved turn")
    args = parser.parse_args(argv)

    api = FakeAnthropicApi()
    url, server = serve_in_thread(api.app)
    client = Anthropic(base_url=url, api_key="not-needed-offline", max_retries=0)
    with client.messages.stream(
        model="claude-offline-replay",
        max_tokens=2000,
        messages=[{"role": "user", "content": load_recording().prompt}],
    ) as stream:
        guarded = guard_messages(stream, on_degeneration="stop")
        for event in guarded:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                sys.stdout.write(event.delta.text)
                sys.stdout.flush()
    client.close()

    print(f"\n\nstatus: {guarded.status}\nreason: {guarded.reason}")
    print(f"the server sent {api.sent} of {api.total} events before the client closed the stream")
    connection = Database(args.db)
    turn = persist.load_turn(connection, persist.save_result(connection, guarded))
    print(f"saved, {len(turn.text)} chars for the {len(guarded.text)} read:\n{turn.text}")
    connection.close()
    server.should_exit = True
    return 0 if guarded.status == "degenerate" else 1


if __name__ == "__main__":
    sys.exit(main())
