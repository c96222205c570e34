"""Stops in traces (``loopbreak[otel]``), read with the OpenTelemetry SDK's in-memory exporter:
the proxy's request spans, the stream guard's stop in the application's own span, and a
governed run's stop reason and receipt state."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loopbreak import guard, scan
from loopbreak.agent.policy import PolicyConfig
from loopbreak.integrations._governance import AgentRun, FrameworkErrors, Governance
from loopbreak.streaming.demo import token_deltas
from loopbreak.telemetry import (
    EVALUATION_NAME,
    GEN_AI_EVALUATION_NAME,
    GEN_AI_EVALUATION_RESULT,
    GEN_AI_EVALUATION_SCORE_LABEL,
    GEN_AI_OPERATION_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_FINISH_REASONS,
    LOOP_COPIES,
    LOOP_PERIOD,
    LOOP_POSITION,
    LOOP_SOURCE,
    RUN_RECEIPT_STATE,
    RUN_STOP_REASON,
)
from support import proxy_upstream
from support.recorded import RECORDED

from .conftest import client

LOOP, CLEAN = "d10-greedy", "d08-greedy"
_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    # The global provider can be set once per process: this module owns it.
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def _evaluation(span: ReadableSpan) -> Any:
    events = [event for event in span.events if event.name == GEN_AI_EVALUATION_RESULT]
    assert len(events) == 1
    return events[0].attributes


def _check_loop_event(span: ReadableSpan, text: str) -> None:
    expected = scan(text)[0]
    attributes = _evaluation(span)
    assert attributes[GEN_AI_EVALUATION_NAME] == EVALUATION_NAME
    assert attributes[GEN_AI_EVALUATION_SCORE_LABEL] == expected.rule
    assert attributes[LOOP_PERIOD] == expected.period
    assert attributes[LOOP_POSITION] == expected.start
    assert attributes[LOOP_COPIES] >= 1 and attributes[LOOP_SOURCE] == "content"
    assert span.attributes is not None
    assert span.attributes[GEN_AI_RESPONSE_FINISH_REASONS] == ("repetition",)


def test_proxy_request_spans_show_the_stop(proxy: str, spans: InMemorySpanExporter) -> None:
    openai_client = client(proxy)
    stream = openai_client.chat.completions.create(
        model=f"content:{LOOP}", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    list(stream)
    openai_client.chat.completions.create(
        model=f"content:{CLEAN}", messages=[{"role": "user", "content": "hi"}]
    )
    stopped, clean = spans.get_finished_spans()
    assert stopped.name == f"chat content:{LOOP}"
    assert stopped.attributes is not None
    assert stopped.attributes[GEN_AI_OPERATION_NAME] == "chat"
    assert stopped.attributes[GEN_AI_REQUEST_MODEL] == f"content:{LOOP}"
    _check_loop_event(stopped, RECORDED[LOOP].text)
    assert clean.attributes is not None
    assert clean.attributes[GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    assert not clean.events


def test_messages_request_spans_show_the_stop(proxy: str, spans: InMemorySpanExporter) -> None:
    messages = anthropic.Anthropic(
        base_url=proxy, api_key=proxy_upstream.API_KEY, max_retries=0
    ).messages
    ask: Any = {"max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    list(messages.create(model=f"text:{LOOP}", stream=True, **ask))
    messages.create(model=f"text:{CLEAN}", **ask)
    # The anthropic SDK makes spans of its own (which read the stop reason as sent, too).
    stopped, clean = (
        span for span in spans.get_finished_spans() if not span.name.startswith("anthropic.")
    )
    assert stopped.name == f"chat text:{LOOP}"
    _check_loop_event(stopped, RECORDED[LOOP].text)
    assert clean.attributes is not None
    assert clean.attributes[GEN_AI_RESPONSE_FINISH_REASONS] == ("end_turn",)
    assert not clean.events


def test_the_guard_marks_the_applications_span(spans: InMemorySpanExporter) -> None:
    tracer = trace.get_tracer("app")
    with tracer.start_as_current_span("chat my-model"):
        guarded = guard(token_deltas(RECORDED[LOOP].text), on_degeneration="stop")
        list(guarded)
    (span,) = spans.get_finished_spans()
    assert guarded.status == "degenerate"
    _check_loop_event(span, RECORDED[LOOP].text)


def test_a_governed_run_puts_its_stop_reason_and_receipt_state_on_the_span(
    spans: InMemorySpanExporter,
) -> None:
    governance = Governance(
        PolicyConfig(max_steps=1), verifier=None, audit=None, on_receipt=None, rules=None, keep=3
    )
    run = AgentRun(governance, FrameworkErrors(), run_id=None)
    with trace.get_tracer("app").start_as_current_span("invoke_agent"):
        run.begin_step()
        run.begin_step()  # past the step limit: the policy stops the run
        receipt = run.finish()
    (span,) = spans.get_finished_spans()
    assert span.attributes is not None
    assert span.attributes[RUN_STOP_REASON] == "max_steps"
    assert span.attributes[RUN_RECEIPT_STATE] == receipt.state.value == "BOUNDED_STOP"
