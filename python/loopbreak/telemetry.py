"""OpenTelemetry for loopbreak's stops (``pip install 'loopbreak[otel]'``).

Every span attribute and event name loopbreak writes is a constant here: the GenAI semantic
conventions are still marked "development" and their names move, so a rename is one line.
Without ``opentelemetry-api`` installed every function here does nothing, and nothing here is
imported until the first stop: ``import loopbreak`` stays free of OpenTelemetry.

- The stream guard calls ``record_degeneration`` when it stops a stream: the current span (the
  application's model call, or the proxy's request span) gets
  ``gen_ai.response.finish_reasons = ["repetition"]`` and one ``gen_ai.evaluation.result``
  event named ``loopbreak`` whose label is the rule, with the period, copies and position.
- ``loopbreak proxy`` opens one span per guarded request (``RequestSpan``).
- A governed agent run calls ``record_run`` once it has its receipt: the stop reason and the
  receipt state go on the current span.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from loopbreak.agent.receipt import Receipt
    from loopbreak.streaming.guard import Degeneration

# GenAI semantic conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/).
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_EVALUATION_RESULT = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
ERROR_TYPE = "error.type"

# loopbreak's own names, where the conventions have none.
EVALUATION_NAME = "loopbreak"
REPETITION = "repetition"
"""The finish reason of a stopped generation, as vLLM reports its own repetition stop."""
LOOP_PERIOD = "loopbreak.period"
LOOP_COPIES = "loopbreak.copies"
LOOP_POSITION = "loopbreak.position"
LOOP_SOURCE = "loopbreak.source"
RUN_STOP_REASON = "loopbreak.run.stop_reason"
RUN_RECEIPT_STATE = "loopbreak.run.receipt_state"
PROXY_UPSTREAM = "loopbreak.proxy.upstream"
TRACER_NAME = "loopbreak"

_available: Optional[bool] = None


def enabled() -> bool:
    """Whether ``opentelemetry-api`` is installed (checked once)."""
    global _available
    if _available is None:
        _available = importlib.util.find_spec("opentelemetry") is not None
    return _available


def _current_span() -> Any:
    from opentelemetry import trace

    return trace.get_current_span()


def record_degeneration(degeneration: Degeneration) -> None:
    """Marks the current span as a generation stopped for repetition (see the module
    docstring); a no-op without OpenTelemetry or without a recording span."""
    if not enabled():
        return
    span = _current_span()
    if not span.is_recording():
        return
    finding = degeneration.finding
    span.set_attribute(GEN_AI_RESPONSE_FINISH_REASONS, [REPETITION])
    span.add_event(
        GEN_AI_EVALUATION_RESULT,
        {
            GEN_AI_EVALUATION_NAME: EVALUATION_NAME,
            GEN_AI_EVALUATION_SCORE_LABEL: finding.rule,
            GEN_AI_EVALUATION_EXPLANATION: degeneration.reason,
            LOOP_PERIOD: finding.period,
            LOOP_COPIES: finding.repeats,
            LOOP_POSITION: finding.start,
            LOOP_SOURCE: degeneration.source,
        },
    )


def record_run(receipt: Receipt, stop_reason: Optional[str]) -> None:
    """Puts a governed run's stop reason (None: the policy never stopped it) and its receipt
    state on the current span."""
    if not enabled():
        return
    span = _current_span()
    if not span.is_recording():
        return
    if stop_reason is not None:
        span.set_attribute(RUN_STOP_REASON, stop_reason)
    span.set_attribute(RUN_RECEIPT_STATE, receipt.state.value)


class RequestSpan:
    """The span of one request through ``loopbreak proxy``: ``{operation} {model}``, as the
    GenAI conventions name a model call. Made current with ``current()`` while the guard reads
    the stream, so the guard's stop lands on it; ``end()`` closes it once."""

    def __init__(self, operation: str, model: str, upstream: str) -> None:
        self._span: Any = None
        if not enabled():
            return
        from opentelemetry import trace

        self._span = trace.get_tracer(TRACER_NAME).start_span(
            f"{operation} {model}".strip(),
            kind=trace.SpanKind.SERVER,
            attributes={
                GEN_AI_OPERATION_NAME: operation,
                GEN_AI_REQUEST_MODEL: model,
                PROXY_UPSTREAM: upstream,
            },
        )

    @contextmanager
    def current(self) -> Iterator[None]:
        if self._span is None:
            yield
            return
        from opentelemetry import trace

        with trace.use_span(self._span, end_on_exit=False):
            yield

    def end(self, finish_reasons: Sequence[str] = (), error: Optional[str] = None) -> None:
        if self._span is None:
            return
        span, self._span = self._span, None
        if finish_reasons:
            span.set_attribute(GEN_AI_RESPONSE_FINISH_REASONS, list(finish_reasons))
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            span.set_attribute(ERROR_TYPE, error)
            span.set_status(Status(StatusCode.ERROR, error))
        span.end()
