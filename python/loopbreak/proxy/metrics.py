"""The proxy's Prometheus metrics, served on ``/metrics``. Each app has its own registry, so
several proxies in one process (tests, an embedding app) count apart."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest

from loopbreak.streaming.guard import Degeneration


class ProxyMetrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._requests = Counter(
            "loopbreak_proxy_requests",
            "Requests through the proxy, by endpoint (a guarded path, or passthrough) and "
            "outcome (ok, degenerate, cancelled, error, or the upstream's HTTP status)",
            ["endpoint", "outcome"],
            registry=self.registry,
        )
        self._loops = Counter(
            "loopbreak_proxy_loops_stopped",
            "Answers stopped (streamed) or trimmed (whole) for a loop, by rule",
            ["rule"],
            registry=self.registry,
        )
        self._chars_trimmed = Counter(
            "loopbreak_proxy_loop_chars_trimmed",
            "Code points of loop cut from the looping text (copies past --keep): what a stop "
            "keeps out of the client's history. What the model would have generated after a "
            "stop is not knowable, so it is not counted.",
            registry=self.registry,
        )
        self._upstream_errors = Counter(
            "loopbreak_proxy_upstream_errors",
            "Upstream failures: connect, timeout, malformed (an SSE event that is not JSON), "
            "transport (a lost connection), status (an HTTP 5xx)",
            ["kind"],
            registry=self.registry,
        )

    def request(self, endpoint: str, outcome: str) -> None:
        self._requests.labels(endpoint, outcome).inc()

    def loop(self, degeneration: Degeneration) -> None:
        self._loops.labels(degeneration.finding.rule).inc()
        self._chars_trimmed.inc(degeneration.units_removed)

    def upstream_error(self, kind: str) -> None:
        self._upstream_errors.labels(kind).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
