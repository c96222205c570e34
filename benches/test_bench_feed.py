"""pytest-benchmark benches of the Python API, loopbreak and the pure-Python baseline side by side
(each group holds both, so one run compares them).

    python -m pytest -q benches --benchmark-enable --benchmark-only   # what `make bench` runs

In the normal test run benchmarks are disabled (pyproject's addopts): each bench then runs once on
a small slice of the corpus, as a smoke test, and so does ``compare.py --quick``.
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import baseline
import compare
import corpus
import loopbreak

# Enabled: the whole clean corpus for chunks and scan; a 256K-char slice for 4-char deltas, which
# measure a per-call cost and need no more. Disabled (smoke): a few files.
SMOKE_BUDGET = 32_000
DELTA_CHARS = 256_000
CHUNK_CHARS = 2048
DELTA_LEN = 4


class Feeder(Protocol):
    @property
    def units_seen(self) -> int: ...

    def feed(self, delta: str) -> object: ...


Factory = Callable[[], Feeder]
FACTORIES: dict[str, Factory] = {"loopbreak": loopbreak.Detector, "baseline": baseline.BaselineDetector}
SCANS: dict[str, Callable[[str], Sequence[object]]] = {"loopbreak": loopbreak.scan, "baseline": baseline.scan}


@pytest.fixture(scope="module")
def clean(request: pytest.FixtureRequest) -> str:
    # The same test as pytest-benchmark's own: --benchmark-enable overrides --benchmark-disable.
    disabled = request.config.getoption("benchmark_disable") and not request.config.getoption("benchmark_enable")
    return corpus.clean_text(SMOKE_BUDGET if disabled else corpus.CLEAN_BUDGET)


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def feed_all(factory: Factory, deltas: list[str]) -> int:
    detector = factory()
    for delta in deltas:
        detector.feed(delta)
    return detector.units_seen


@pytest.mark.parametrize("impl", FACTORIES)
@pytest.mark.benchmark(group="feed 2 KB chunks, clean")
def test_feed_2k_chunks(benchmark: BenchmarkFixture, impl: str, clean: str) -> None:
    chunks = pieces(clean, CHUNK_CHARS)
    benchmark.extra_info["bytes"] = len(clean.encode("utf-8"))
    assert benchmark(feed_all, FACTORIES[impl], chunks) == len(clean)


@pytest.mark.parametrize("impl", FACTORIES)
@pytest.mark.benchmark(group="feed 4-char deltas, clean")
def test_feed_4char_deltas(benchmark: BenchmarkFixture, impl: str, clean: str) -> None:
    deltas = pieces(clean[:DELTA_CHARS], DELTA_LEN)
    # Divide the time by this for the cost of one call.
    benchmark.extra_info["calls"] = len(deltas)
    assert benchmark(feed_all, FACTORIES[impl], deltas) == sum(map(len, deltas))


@pytest.mark.parametrize("impl", SCANS)
@pytest.mark.benchmark(group="scan, clean")
def test_scan(benchmark: BenchmarkFixture, impl: str, clean: str) -> None:
    benchmark.extra_info["bytes"] = len(clean.encode("utf-8"))
    assert isinstance(benchmark(SCANS[impl], clean), list)


def test_compare_quick_runs(capsys: pytest.CaptureFixture[str]) -> None:
    compare.main(["--quick"])
    table = capsys.readouterr().out
    assert "feed 2 KB chunks" in table and "loopbreak/baseline" in table
