"""loopbreak and the pure-Python baseline (benches/baseline.py) side by side, in one process, on
the same corpus: the running Python's standard library as clean text, the real loop excerpts plus
a synthetic copy of the incident as degenerate text. Prints one table.

    python benches/compare.py            # the full run (well under a minute on 2 cores)
    python benches/compare.py --quick    # a smoke run of a few seconds

Times are medians over repeats, the two implementations taking turns so that noise on a shared
machine hits both alike; read the ratios rather than the absolute numbers.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, Sequence

import baseline
import corpus
import loopbreak

CHUNK_CHARS = 2048
DELTA_LEN = 4
# Long enough for loopbreak's window (15K units at the defaults) to fill: a stream's steady size.
STREAM_CHARS = 24_000


class Found(Protocol):
    @property
    def detected_at(self) -> int: ...


class Feeder(Protocol):
    def feed(self, delta: str) -> Optional[Found]: ...


@dataclass(frozen=True)
class Impl:
    name: str
    new: Callable[[], Feeder]
    scan: Callable[[str], Sequence[object]]


IMPLS = (
    Impl("loopbreak", loopbreak.Detector, loopbreak.scan),
    Impl("baseline", baseline.BaselineDetector, baseline.scan),
)


class NoOpFeeder:
    """A feed that does nothing: what the Python call alone costs, the floor of any detector
    called once per delta."""

    def feed(self, delta: str) -> None:
        return None


NO_OP = Impl("no-op", NoOpFeeder, lambda text: ())


@dataclass(frozen=True)
class Setup:
    clean_bytes: int
    delta_chars: int
    repeats: int
    streams: int
    batch_streams: int
    batch_steps: int
    idle_detectors: int


FULL = Setup(
    clean_bytes=corpus.CLEAN_BUDGET,
    delta_chars=512_000,
    repeats=5,
    streams=500,
    batch_streams=1024,
    batch_steps=2000,
    idle_detectors=10_000,
)
QUICK = Setup(
    clean_bytes=64_000, delta_chars=16_000, repeats=3, streams=100, batch_streams=64, batch_steps=50, idle_detectors=100
)


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def feed_seconds(impl: Impl, deltas: list[str]) -> float:
    detector = impl.new()  # made outside the timing: the feed is what is measured
    start = time.perf_counter()
    for delta in deltas:
        detector.feed(delta)
    return time.perf_counter() - start


def scan_seconds(impl: Impl, text: str) -> float:
    start = time.perf_counter()
    impl.scan(text)
    return time.perf_counter() - start


def medians(repeats: int, measure: Callable[[Impl], float]) -> list[float]:
    """The median of `repeats` measurements of each implementation, taking turns."""
    runs: list[list[float]] = [[] for _ in IMPLS]
    for _ in range(repeats):
        for impl, times in zip(IMPLS, runs):
            times.append(measure(impl))
    return [statistics.median(times) for times in runs]


def python_peak(impl: Impl, chunks: list[str]) -> float:
    """Peak bytes allocated by Python objects while one stream is fed (Rust's heap is not seen)."""
    gc.collect()
    tracemalloc.start()
    feed_seconds(impl, chunks)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def rss_per_stream(name: str, streams: int) -> float:
    """RSS bytes that one more fed stream costs, measured in a fresh interpreter so that neither
    implementation reuses memory that the other, or the timing runs, freed."""
    command = [sys.executable, __file__, "--rss-per-stream", name, str(streams)]
    return float(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def measure_rss_per_stream(name: str, streams: int) -> float:
    impl = next(impl for impl in IMPLS if impl.name == name)
    chunks = pieces(corpus.clean_text(STREAM_CHARS)[:STREAM_CHARS], CHUNK_CHARS)
    fed: list[Feeder] = []

    def add_streams() -> int:
        for _ in range(streams):
            fed.append(impl.new())
            for chunk in chunks:
                fed[-1].feed(chunk)
        gc.collect()
        return rss_bytes()

    # The first batch also fills what loading the corpus freed; the second one is the cost.
    first = add_streams()
    return (add_streams() - first) / streams


def stepped_streams(streams: int, steps: int, text: str) -> tuple[loopbreak.TokenStreams, Any, list[Any]]:
    """`streams` token streams, their slots, and `steps` decode steps for them (numpy arrays):
    stream i is fed the code points of `text` from offset 97 * i, so the streams differ. Each
    stream has had one step already, so its window is allocated (a cost of starting, not of
    stepping)."""
    import numpy as np

    batch = loopbreak.TokenStreams()
    slots = np.array([batch.add() for _ in range(streams)], dtype=np.int64)
    ids = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    starts = (np.arange(streams) * 97) % (len(ids) - steps - 1)
    batch.step(slots, np.ascontiguousarray(ids[starts]))
    columns = [np.ascontiguousarray(ids[starts + 1 + k]) for k in range(steps)]
    return batch, slots, columns


def step_all(batch: loopbreak.TokenStreams, slots: Any, columns: list[Any]) -> None:
    for tokens in columns:
        batch.step(slots, tokens)


def step_ns_per_stream(streams: int, steps: int, text: str) -> float:
    """One decode step for `streams` token streams in one `TokenStreams.step` call: ns per stream."""
    batch, slots, columns = stepped_streams(streams, steps, text)
    start = time.perf_counter()
    step_all(batch, slots, columns)
    return (time.perf_counter() - start) / (steps * streams) * 1e9


def scan_many_seconds(texts: list[str], threads: int) -> float:
    start = time.perf_counter()
    loopbreak.scan_many(texts, threads=threads)
    return time.perf_counter() - start


def idle_detectors_rss(count: int) -> float:
    """RSS bytes that `count` new, never fed `Detector`s add, in a fresh interpreter."""
    command = [sys.executable, __file__, "--idle-rss", str(count)]
    return float(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def measure_idle_rss(count: int) -> int:
    gc.collect()
    before = rss_bytes()
    detectors = [loopbreak.Detector() for _ in range(count)]
    gc.collect()
    grown = rss_bytes() - before
    assert len(detectors) == count
    return grown


def loop_chars_before_stop(impl: Impl) -> Optional[int]:
    """Fed the incident in 4-char deltas: chars of the loop seen when the first finding came."""
    detector = impl.new()
    for delta in pieces(corpus.incident_text(), DELTA_LEN):
        found = detector.feed(delta)
        if found is not None:
            return found.detected_at - len(corpus.INCIDENT_PROSE)
    return None


def flagged(impl: Impl, files: list[tuple[str, str]]) -> list[str]:
    return [name for name, text in files if impl.scan(text)]


def mb_per_s(text: str, seconds: float) -> float:
    return len(text.encode("utf-8")) / seconds / 1e6


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a smoke run on a small corpus")
    parser.add_argument("--rss-per-stream", nargs=2, metavar=("IMPL", "STREAMS"), help=argparse.SUPPRESS)
    parser.add_argument("--idle-rss", type=int, metavar="DETECTORS", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_per_stream:
        print(measure_rss_per_stream(args.rss_per_stream[0], int(args.rss_per_stream[1])))
        return
    if args.idle_rss:
        print(measure_idle_rss(args.idle_rss))
        return
    setup = QUICK if args.quick else FULL

    clean_files = corpus.stdlib_files(setup.clean_bytes)
    clean = "\n".join(text for _, text in clean_files)
    loop_files = corpus.loop_files()
    degenerate = "\n".join([corpus.loops_text(), corpus.incident_text()])
    chunks = pieces(clean, CHUNK_CHARS)
    degenerate_chunks = pieces(degenerate, CHUNK_CHARS)
    deltas = pieces(clean[: setup.delta_chars], DELTA_LEN)

    rows: list[tuple[str, list[float], str]] = []

    def timed(label: str, measure: Callable[[Impl], float], text: str) -> None:
        rows.append((label + " (MB/s)", [mb_per_s(text, s) for s in medians(setup.repeats, measure)], ".1f"))

    timed("feed 2 KB chunks, clean", lambda impl: feed_seconds(impl, chunks), clean)
    timed("feed 2 KB chunks, degenerate", lambda impl: feed_seconds(impl, degenerate_chunks), degenerate)
    per_call = medians(setup.repeats, lambda impl: feed_seconds(impl, deltas) / len(deltas))
    rows.append(("feed 4-char deltas, clean (us/call)", [s * 1e6 for s in per_call], ".2f"))
    timed("scan, clean", lambda impl: scan_seconds(impl, clean), clean)
    timed("scan, degenerate", lambda impl: scan_seconds(impl, degenerate), degenerate)
    peaks = [python_peak(impl, chunks) / 1024 for impl in IMPLS]
    rows.append(("Python heap peak, feed 2 KB chunks, clean (KiB)", peaks, ".1f"))
    if sys.platform == "linux":
        rss = [rss_per_stream(impl.name, setup.streams) / 1024 for impl in IMPLS]
        rows.append((f"RSS per fed stream, {setup.streams} streams (KiB)", rss, ".1f"))

    flags = [flagged(impl, clean_files) for impl in IMPLS]
    found = [len(flagged(impl, loop_files)) for impl in IMPLS]
    stops = [loop_chars_before_stop(impl) for impl in IMPLS]

    print(
        f"loopbreak {loopbreak.__version__} vs baseline (pure Python, every {baseline.CHECK_EVERY} chars "
        f"the last {baseline.WINDOW}); Python {platform.python_version()}, {os.cpu_count()} CPUs"
    )
    print(
        f"clean: {len(clean_files)} stdlib files, {len(clean.encode()) / 1e6:.2f} MB; degenerate: "
        f"{len(loop_files)} loop excerpts + incident, {len(degenerate.encode()) / 1e6:.2f} MB; "
        f"median of {setup.repeats} runs{' (--quick)' if args.quick else ''}"
    )
    print()
    print(f"{'':50}{'loopbreak':>12}{'baseline':>12}{'loopbreak/baseline':>20}")
    for label, (ours, theirs), fmt in rows:
        ratio = f"{ours / theirs:.3g}" if theirs else "n/a"
        print(f"{label:50}{ours:>12{fmt}}{theirs:>12{fmt}}{ratio:>20}")
    counts = [
        (f"clean files flagged (of {len(clean_files)})", [str(len(f)) for f in flags]),
        (f"loop excerpts found (of {len(loop_files)})", [str(n) for n in found]),
        ("incident: loop chars before stop, 4-char deltas", ["never" if s is None else str(s) for s in stops]),
    ]
    for label, values in counts:
        print(f"{label:50}" + "".join(f"{v:>12}" for v in values))
    print()
    print("MB = 10^6 bytes of UTF-8. The Python heap peak does not see loopbreak's Rust state; RSS does.")
    if flags[0]:
        print("loopbreak flagged clean files: " + ", ".join(flags[0]))
    print()
    print_loopbreak_only(setup, clean_files, clean, deltas)


def print_loopbreak_only(setup: Setup, clean_files: list[tuple[str, str]], clean: str, deltas: list[str]) -> None:
    """What the baseline has no counterpart for: batch stepping, threads, idle detectors; and
    the cost of a Python call that does nothing, for the per-delta rows."""
    floor = statistics.median(feed_seconds(NO_OP, deltas) / len(deltas) for _ in range(setup.repeats))
    steps = [step_ns_per_stream(setup.batch_streams, setup.batch_steps, clean) for _ in range(setup.repeats)]
    texts = [text for _, text in clean_files]
    loopbreak.scan_many(texts[:1])  # the first call imports the optional pyarrow support
    one, two = (
        statistics.median(scan_many_seconds(texts, threads) for _ in range(setup.repeats)) for threads in (1, 2)
    )
    print(f"{'loopbreak alone':50}{'':>12}")
    print(f"{f'TokenStreams.step, {setup.batch_streams} streams (ns/stream)':50}{statistics.median(steps):>12.1f}")
    print(f"{'scan_many, clean files, 1 thread (MB/s)':50}{mb_per_s(clean, one):>12.1f}")
    print(f"{'scan_many, clean files, 2 threads (MB/s)':50}{mb_per_s(clean, two):>12.1f}")
    print(f"{'scan_many, 2 threads / 1 thread':50}{one / two:>12.2f}")
    if sys.platform == "linux":
        idle = idle_detectors_rss(setup.idle_detectors)
        print(f"{f'RSS of {setup.idle_detectors:,} idle Detectors (MB)':50}{idle / 1e6:>12.1f}")
    print(f"{'4-char deltas to a no-op Python feed (us/call)':50}{floor * 1e6:>12.2f}")


if __name__ == "__main__":
    main()
