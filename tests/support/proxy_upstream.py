"""The upstream model server of the proxy tests: real recorded model outputs over HTTP, streamed
(``recorded_server``'s streams) or whole, on the three guarded OpenAI paths and on the Anthropic
Messages API's ``/v1/messages`` (``anthropic_server``'s replies, picked by the same ``model``
names as there), plus the failures a proxy must carry through.

The request's ``model`` picks the answer as in ``recorded_server`` (``content:<id>``,
``tool:<id>``, ``reasoning_content:<id>``, ``reasoning:<id>``), and a few names pick a failure:
``repetition:<id>`` answers with the recording and ``finish_reason: "repetition"`` (as vLLM
reports its own repetition stop); ``status:<code>`` answers that HTTP status with an OpenAI error
body (an Anthropic one on ``/v1/messages``); ``slow`` answers after ``SLOW_SECONDS``;
``malformed`` streams one chunk, then an event that is not JSON. ``GET /v1/models`` needs
``Authorization: Bearer API_KEY`` (or Anthropic's ``x-api-key: API_KEY``), as a hosted API does,
and echoes the request's ``x-test-*`` headers back; ``POST /v1/messages/count_tokens`` needs the
key too and echoes the ``anthropic-*`` headers.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from loopbreak.streaming.demo import token_deltas
from support import anthropic_server
from support.recorded import RECORDED
from support.recorded_server import (
    ANSWER_AFTER_REASONING,
    Recordings,
    routes,
    streaming_endpoint,
    tool_arguments,
)

API_KEY = "sk-test-upstream"
SLOW_SECONDS = 5.0


def _recording(model: str) -> tuple[str, str]:
    kind, _, recording_id = model.partition(":")
    return kind, RECORDED[recording_id].text


def chat_answer(model: str) -> dict[str, Any]:
    kind, text = _recording(model)
    message: dict[str, Any] = {"role": "assistant", "content": text}
    finish_reason = "repetition" if kind == "repetition" else "stop"
    if kind == "tool":
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "write_file", "arguments": tool_arguments(model.split(":")[1])},
        }
        message, finish_reason = (
            {"role": "assistant", "content": None, "tool_calls": [call]},
            "tool_calls",
        )
    elif kind in ("reasoning_content", "reasoning"):
        message = {"role": "assistant", "content": ANSWER_AFTER_REASONING, kind: text}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def completion_answer(model: str) -> dict[str, Any]:
    kind, text = _recording(model)
    return {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": "repetition" if kind == "repetition" else "stop",
            }
        ],
    }


def response_answer(model: str) -> dict[str, Any]:
    _, text = _recording(model)
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": [message],
    }


def _completion_events(model: str) -> list[str]:
    kind, text = _recording(model)
    events = [
        "data: "
        + json.dumps(
            {
                "id": "cmpl-1",
                "object": "text_completion",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "text": delta, "logprobs": None, "finish_reason": None}],
            }
        )
        + "\n\n"
        for delta in token_deltas(text)
    ]
    last = {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": "stop"}],
    }
    return [*events, f"data: {json.dumps(last)}\n\n", "data: [DONE]\n\n"]


def _chat_chunk(model: str, delta: dict[str, Any], finish_reason: Any = None) -> str:
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return f"data: {json.dumps(chunk)}\n\n"


def _repetition_events(model: str) -> list[str]:
    """A stream the upstream itself stopped for repetition, as vLLM ends one."""
    _, text = _recording(model)
    deltas = [_chat_chunk(model, {"content": delta}) for delta in token_deltas(text)]
    return [*deltas, _chat_chunk(model, {}, "repetition"), "data: [DONE]\n\n"]


def _malformed_events(model: str) -> list[str]:
    return [_chat_chunk(model, {"content": "Hello"}), "data: {not json\n\n", "data: [DONE]\n\n"]


def _authorized(request: Request) -> bool:
    """The key in ``Authorization: Bearer`` (the OpenAI SDKs, and the Anthropic SDK since 2.x)
    or in ``x-api-key`` (the Anthropic API's own header), not both."""
    keys = (request.headers.get("authorization"), request.headers.get("x-api-key"))
    return keys in ((f"Bearer {API_KEY}", None), (None, API_KEY))


def _anthropic_error(status: int, error_type: str, message: str) -> Response:
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return JSONResponse(body, status, headers={"x-upstream": "yes"})


def _malformed_message_events(model: str) -> list[str]:
    events = anthropic_server.message_events("text:d08-greedy")
    return [*events[:5], "event: content_block_delta\ndata: {not json\n\n", *events[5:]]


def anthropic_routes(recordings: Recordings) -> list[Route]:
    streamed = streaming_endpoint(recordings, anthropic_server.message_events)
    malformed = streaming_endpoint(recordings, _malformed_message_events)

    async def messages(request: Request) -> Response:
        payload = await request.json()
        model = payload["model"]
        if model.startswith("status:"):
            status = int(model.split(":")[1])
            return _anthropic_error(status, "test_error", f"upstream says {status}")
        if model == "slow":
            await asyncio.sleep(SLOW_SECONDS)
        if model == "malformed":
            endpoint = malformed
        elif payload.get("stream"):
            endpoint = streamed
        else:
            return JSONResponse(anthropic_server.message_answer(model))
        answer: Response = await endpoint(request)
        return answer

    async def count_tokens(request: Request) -> Response:
        if not _authorized(request):
            return _anthropic_error(401, "authentication_error", "invalid API key")
        payload = await request.json()
        echoed = {k: v for k, v in request.headers.items() if k.startswith("anthropic-")}
        return JSONResponse(
            {"input_tokens": len(json.dumps(payload["messages"]))},
            headers={"x-echo": json.dumps(echoed)},
        )

    return [
        Route("/v1/messages", messages, methods=["POST"]),
        Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
    ]


def app(recordings: Recordings) -> Starlette:
    stream_routes = {route.path: route.endpoint for route in routes(recordings)}  # type: ignore[attr-defined]
    stream_routes["/v1/completions"] = streaming_endpoint(recordings, _completion_events)
    malformed = streaming_endpoint(recordings, _malformed_events)
    repetition = streaming_endpoint(recordings, _repetition_events)
    whole = {
        "/v1/chat/completions": chat_answer,
        "/v1/completions": completion_answer,
        "/v1/responses": response_answer,
    }

    async def guarded_path(request: Request) -> Response:
        payload = await request.json()
        model = payload["model"]
        if model.startswith("status:"):
            status = int(model.split(":")[1])
            error = {"error": {"message": f"upstream says {status}", "type": "test", "code": None}}
            return JSONResponse(error, status, headers={"x-upstream": "yes"})
        if model == "slow":
            await asyncio.sleep(SLOW_SECONDS)
        if model == "malformed":
            endpoint = malformed
        elif payload.get("stream"):
            endpoint = (
                repetition if model.startswith("repetition:") else stream_routes[request.url.path]
            )
        else:
            return JSONResponse(whole[request.url.path](model))
        streamed: Response = await endpoint(request)
        return streamed

    async def models(request: Request) -> Response:
        if not _authorized(request):
            error = {
                "error": {
                    "message": "bad key",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            }
            return JSONResponse(error, 401)
        echoed = {k: v for k, v in request.headers.items() if k.startswith("x-test-")}
        body = {
            "object": "list",
            "data": [
                {"id": "content:d08-greedy", "object": "model", "created": 0, "owned_by": "test"}
            ],
        }
        return JSONResponse(
            body, headers={"x-echo": json.dumps(echoed), "x-query": request.url.query}
        )

    return Starlette(
        routes=[
            *(Route(path, guarded_path, methods=["POST"]) for path in whole),
            Route("/v1/models", models, methods=["GET"]),
            *anthropic_routes(recordings),
        ]
    )
