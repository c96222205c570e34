"""pytest-benchmark benches of the Python API, loopbreak and the pure-Python baseline side by side
(each group holds both, so one run compares them).

    python -m pytest -q benches --benchmark-enable --benchmark-only   # what `make bench` runs

In the normal test run benchmarks are disabled (pyproject's addopts): each bench then runs once on
a few files of the corpus, as a smoke test, and so does ``compare.py --quick``.
"""

from __future__ import annotations

import compare
import corpus
import pytest
from compare import IMPLS, Impl
from pytest_benchmark.fixture import BenchmarkFixture

# Enabled: the whole clean corpus for chunks and scan; a 256K-char slice for 4-char deltas, which
# measure a per-call cost and need no more. Disabled (smoke): a few files.
SMOKE_BYTES = 32_000
DELTA_CHARS = 256_000

impls = pytest.mark.parametrize("impl", IMPLS, ids=[impl.name for impl in IMPLS])


@pytest.fixture(scope="module")
def clean(request: pytest.FixtureRequest) -> str:
    # pytest-benchmark's own test: --benchmark-enable overrides --benchmark-disable.
    disabled = request.config.getoption("benchmark_disable") and not request.config.getoption(
        "benchmark_enable"
    )
    return corpus.clean_text(SMOKE_BYTES if disabled else corpus.CLEAN_BUDGET)


@impls
@pytest.mark.benchmark(group="feed 2 KB chunks, clean")
def test_feed_2k_chunks(benchmark: BenchmarkFixture, impl: Impl, clean: str) -> None:
    chunks = compare.pieces(clean, compare.CHUNK_CHARS)
    benchmark.extra_info["bytes"] = len(clean.encode("utf-8"))
    benchmark(compare.feed_seconds, impl, chunks)


@impls
@pytest.mark.benchmark(group="feed 4-char deltas, clean")
def test_feed_4char_deltas(benchmark: BenchmarkFixture, impl: Impl, clean: str) -> None:
    deltas = compare.pieces(clean[:DELTA_CHARS], compare.DELTA_LEN)
    # Divide the time by this for the cost of one call.
    benchmark.extra_info["calls"] = len(deltas)
    benchmark(compare.feed_seconds, impl, deltas)


@impls
@pytest.mark.benchmark(group="scan, clean")
def test_scan(benchmark: BenchmarkFixture, impl: Impl, clean: str) -> None:
    benchmark.extra_info["bytes"] = len(clean.encode("utf-8"))
    benchmark(impl.scan, clean)


@pytest.mark.benchmark(group="TokenStreams.step, 1,024 streams")
def test_token_streams_step(benchmark: BenchmarkFixture, clean: str) -> None:
    batch, slots, columns = compare.stepped_streams(1024, 20, clean)
    # Divide the time by this for the cost of one stream's step.
    benchmark.extra_info["stream_steps"] = 1024 * len(columns)
    benchmark(compare.step_all, batch, slots, columns)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.benchmark(group="scan_many, clean files")
def test_scan_many(benchmark: BenchmarkFixture, clean: str, threads: int) -> None:
    texts = compare.pieces(clean, 16_000)
    benchmark.extra_info["bytes"] = len(clean.encode("utf-8"))
    benchmark(compare.scan_many_seconds, texts, threads)


def test_compare_quick_runs(capsys: pytest.CaptureFixture[str]) -> None:
    compare.main(["--quick"])
    table = capsys.readouterr().out
    assert "feed 2 KB chunks, clean" in table and "clean files flagged" in table
    assert "TokenStreams.step" in table and "scan_many, 2 threads / 1 thread" in table
