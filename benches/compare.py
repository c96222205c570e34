"""loopbreak and the pure-Python baseline (benches/baseline.py) side by side, in one process, on
the same corpus: the running Python's standard library as clean text, the real loop excerpts plus
a synthetic copy of the `loadTools.` loop the README opens with as degenerate text. Prints one
table.

    python benches/compare.py            # the full run (well under a minute on 2 cores)
    python benches/compare.py --quick    # a smoke run of a few seconds

Times are medians over repeats, the two implementations taking turns so that noise on a shared
machine hits both alike; read the ratios rather than the absolute numbers.

The last table is what users run, each next to its floor measured in the same run, with the
target of issue 16: the stream guard per delta against a bare ``Detector.feed`` loop, the
OpenAI adapter per chunk against the SDK's own parsing of that chunk, ``loopbreak scan`` of JSON
lines against the stdlib ``json`` parse (fresh processes), audit writes batched against one
commit per decision, and the memory ``trim`` takes.
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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

import audit_writes
import baseline
import corpus
import json_lines

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
    json_lines_mb: float
    audit_seconds: float


FULL = Setup(
    clean_bytes=corpus.CLEAN_BUDGET,
    delta_chars=512_000,
    repeats=5,
    streams=500,
    batch_streams=1024,
    batch_steps=2000,
    idle_detectors=10_000,
    json_lines_mb=98.0,
    audit_seconds=3.0,
)
QUICK = Setup(
    clean_bytes=64_000,
    delta_chars=16_000,
    repeats=3,
    streams=100,
    batch_streams=64,
    batch_steps=50,
    idle_detectors=100,
    json_lines_mb=5.0,
    audit_seconds=0.5,
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


def stepped_streams(
    streams: int, steps: int, text: str
) -> tuple[loopbreak.TokenStreams, Any, list[Any]]:
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


def guard_seconds(deltas: list[str]) -> float:
    start = time.perf_counter()
    for _ in loopbreak.guard(iter(deltas)):
        pass
    return time.perf_counter() - start


def guard_vs_feed(repeats: int, deltas: list[str]) -> tuple[float, float]:
    """Seconds per delta of ``for d in guard(iter(deltas))`` and of the bare feed loop, medians
    of runs taking turns."""
    guarded, bare = [], []
    for _ in range(repeats):
        guarded.append(guard_seconds(deltas) / len(deltas))
        bare.append(feed_seconds(IMPLS[0], deltas) / len(deltas))
    return statistics.median(guarded), statistics.median(bare)


def openai_chunk_costs(repeats: int, deltas: list[str]) -> Optional[tuple[float, float]]:
    """Seconds per chunk of ``guard_chat`` over parsed chunks (one 4-char content delta each),
    and of the SDK making that chunk from its JSON (``json.loads`` and the model construction
    the SDK's stream does for each event); None without the openai package."""
    try:
        from openai._models import construct_type
        from openai.types.chat import ChatCompletionChunk

        from loopbreak.integrations.openai import guard_chat
    except ImportError:
        return None
    import json

    def event(delta: str) -> str:
        choice = {"index": 0, "delta": {"content": delta}, "logprobs": None, "finish_reason": None}
        chunk = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [choice],
        }
        return json.dumps(chunk)

    events = [event(delta) for delta in deltas]

    def parse() -> list[Any]:
        return [construct_type(type_=ChatCompletionChunk, value=json.loads(e)) for e in events]

    chunks = parse()
    guarded, parsed = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in guard_chat(iter(chunks)):
            pass
        guarded.append((time.perf_counter() - start) / len(chunks))
        start = time.perf_counter()
        parse()
        parsed.append((time.perf_counter() - start) / len(chunks))
    return statistics.median(guarded), statistics.median(parsed)


def trim_rss_per_char() -> float:
    """Peak RSS bytes that ``trim`` adds per char of an ASCII text with a loop, in a fresh
    interpreter (the text itself is made first)."""
    command = [sys.executable, __file__, "--trim-rss"]
    return float(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def peak_rss_bytes() -> int:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def measure_trim_rss() -> float:
    text = corpus.INCIDENT_PROSE + corpus.INCIDENT_LOOP * 2_000_000 + corpus.clean_text(200_000)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # the peak RSS starts again from the current RSS
    before = peak_rss_bytes()
    trimmed = loopbreak.trim(text)
    grown = peak_rss_bytes() - before
    assert trimmed.removals
    return grown / len(text)


def loop_chars_before_stop(impl: Impl) -> Optional[int]:
    """Fed the `loadTools.` incident in 4-char deltas: chars of the loop seen when the first
    finding came."""
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
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run on a small corpus")
    parser.add_argument(
        "--rss-per-stream", nargs=2, metavar=("IMPL", "STREAMS"), help=argparse.SUPPRESS
    )
    parser.add_argument("--idle-rss", type=int, metavar="DETECTORS", help=argparse.SUPPRESS)
    parser.add_argument("--trim-rss", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.trim_rss:
        print(measure_trim_rss())
        return
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
        rows.append(
            (label + " (MB/s)", [mb_per_s(text, s) for s in medians(setup.repeats, measure)], ".1f")
        )

    timed("feed 2 KB chunks, clean", lambda impl: feed_seconds(impl, chunks), clean)
    timed(
        "feed 2 KB chunks, degenerate",
        lambda impl: feed_seconds(impl, degenerate_chunks),
        degenerate,
    )
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
        (
            "incident: loop chars before stop, 4-char deltas",
            ["never" if s is None else str(s) for s in stops],
        ),
    ]
    for label, values in counts:
        print(f"{label:50}" + "".join(f"{v:>12}" for v in values))
    print()
    print(
        "MB = 10^6 bytes of UTF-8. The Python heap peak does not see loopbreak's Rust state; RSS does."
    )
    if flags[0]:
        print("loopbreak flagged clean files: " + ", ".join(flags[0]))
    print()
    floor = statistics.median(
        feed_seconds(NO_OP, deltas) / len(deltas) for _ in range(setup.repeats)
    )
    targets = print_loopbreak_only(setup, clean_files, clean, floor)
    print()
    two_kb = rows[0][1]
    feed_us = rows[2][1]
    print_targets(
        setup,
        deltas,
        floor,
        two_kb[0] / two_kb[1],
        (feed_us[1] - floor * 1e6) / (feed_us[0] - floor * 1e6),
        *targets,
    )


def print_targets(
    setup: Setup,
    deltas: list[str],
    call_floor: float,
    two_kb_ratio: float,
    below_baseline: float,
    step_ns: float,
    threads_ratio: float,
) -> None:
    """What users run, next to its floor, and each kept target of the core."""
    rows: list[tuple[str, str, str, str, str]] = []

    def row(label: str, ours: str, floor: str, ratio: str, target: str) -> None:
        rows.append((label, ours, floor, ratio, target))

    guarded, bare = guard_vs_feed(setup.repeats, deltas)
    row(
        "guard(), 4-char deltas (us/delta) / bare feed",
        f"{guarded * 1e6:.3f}",
        f"{bare * 1e6:.3f}",
        f"{guarded / bare:.2f}x",
        "<= 3x",
    )
    costs = openai_chunk_costs(setup.repeats, deltas[:5000])
    if costs is not None:
        adapter, sdk = costs
        row(
            "guard_chat per chunk (us) / SDK parse of it",
            f"{adapter * 1e6:.2f}",
            f"{sdk * 1e6:.2f}",
            f"{adapter / sdk:.3f}x",
            "shown",
        )
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chats.jsonl"
        json_lines.write(path, setup.json_lines_mb)
        size = path.stat().st_size
        (floor, floor_cpu), (scan, scan_cpu) = json_lines.measure(path, setup.repeats)
    row(
        f"scan JSON lines {size / 1e6:.0f} MB (MB/s) / json parse",
        f"{size / scan / 1e6:.1f}",
        f"{size / floor / 1e6:.1f}",
        f"{floor / scan:.2f}x",
        ">= 2x",
    )
    row(
        "  same, CPU seconds (all threads)",
        f"{scan_cpu:.2f}",
        f"{floor_cpu:.2f}",
        f"{floor_cpu / scan_cpu:.2f}x",
        "",
    )
    for processes in (1, 8):
        batched = audit_writes.measure(processes, setup.audit_seconds, batched=True)
        each = audit_writes.measure(processes, setup.audit_seconds, batched=False)
        lost = (batched[1] - batched[2]) + (each[1] - each[2])
        row(
            f"audit decisions/s, {processes} process(es) / commit each",
            f"{batched[0]:,.0f}",
            f"{each[0]:,.0f}",
            f"{batched[0] / each[0]:.2f}x",
            f"{lost} lost",
        )
    row("feed 2 KB chunks, clean / baseline", "", "", f"{two_kb_ratio:.1f}x", ">= 25x")
    row(
        "4-char deltas above the call floor / baseline",
        "",
        f"{call_floor * 1e6:.3f}",
        f"{below_baseline:.1f}x below",
        ">= 10x",
    )
    row("TokenStreams.step (ns/stream)", f"{step_ns:.1f}", "", "", "<= 50")
    row("scan_many, 2 threads / 1 thread", "", "", f"{threads_ratio:.2f}x", ">= 1.7x")
    if sys.platform == "linux":
        row(
            "trim, peak RSS added per char of ASCII (bytes)",
            f"{trim_rss_per_char():.2f}",
            "4.00",
            "",
            "< 4",
        )
    print(f"{'what users run':50}{'loopbreak':>12}{'floor':>12}{'ratio':>14}{'target':>12}")
    for label, ours, floor_value, ratio, target in rows:
        print(f"{label:50}{ours:>12}{floor_value:>12}{ratio:>14}{target:>12}")
    print(
        "Floors: a bare Detector.feed loop; the SDK's json.loads + ChatCompletionChunk construction;"
    )
    print(
        "json.loads of each line touching every content (fresh processes, like the scan); one commit"
    )
    print("per audit decision; 4 bytes per char, a text widened to 32-bit units.")


def print_loopbreak_only(
    setup: Setup, clean_files: list[tuple[str, str]], clean: str, floor: float
) -> tuple[float, float]:
    """What the baseline has no counterpart for: batch stepping, threads, idle detectors; and
    the cost of a Python call that does nothing, for the per-delta rows. Returns the step cost
    (ns per stream) and the 2-thread speed-up of scan_many."""
    steps = [
        step_ns_per_stream(setup.batch_streams, setup.batch_steps, clean)
        for _ in range(setup.repeats)
    ]
    texts = [text for _, text in clean_files]
    loopbreak.scan_many(texts[:1])  # the first call imports the optional pyarrow support
    one, two = (
        statistics.median(scan_many_seconds(texts, threads) for _ in range(setup.repeats))
        for threads in (1, 2)
    )
    print(f"{'loopbreak alone':50}{'':>12}")
    print(
        f"{f'TokenStreams.step, {setup.batch_streams} streams (ns/stream)':50}{statistics.median(steps):>12.1f}"
    )
    print(f"{'scan_many, clean files, 1 thread (MB/s)':50}{mb_per_s(clean, one):>12.1f}")
    print(f"{'scan_many, clean files, 2 threads (MB/s)':50}{mb_per_s(clean, two):>12.1f}")
    print(f"{'scan_many, 2 threads / 1 thread':50}{one / two:>12.2f}")
    if sys.platform == "linux":
        idle = idle_detectors_rss(setup.idle_detectors)
        print(f"{f'RSS of {setup.idle_detectors:,} idle Detectors (MB)':50}{idle / 1e6:>12.1f}")
    print(f"{'4-char deltas to a no-op Python feed (us/call)':50}{floor * 1e6:>12.2f}")
    return statistics.median(steps), one / two


if __name__ == "__main__":
    main()
