"""Threads: detectors used from many threads give exactly the single-threaded results, one shared
detector is neither corrupted nor deadlocked, and scans of large texts run side by side.

Deltas above 64 KiB are fed with the GIL released, so those cases really run in parallel.
Cases that can deadlock run in a subprocess with a generous timeout (a deadlock never ends; the
work itself takes well under a second): the test fails instead of hanging the suite.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any, Callable

import numpy as np

from loopbreak import Detector, TokenDetector, TokenStreams, scan, scan_many, trim
from support.oracle import first_held

THREADS = 8
BIG = 70_000  # units: above the 64 KiB at which a feed releases the GIL


def random_text(n: int, seed: int) -> str:
    table = bytes(b"abcdefghijklmnopqrstuvwxyz  \n"[i % 29] for i in range(256))
    return random.Random(seed).randbytes(n).translate(table).decode("ascii")


def looping_text(i: int, size: int) -> str:
    """Clean text, a loop of its own, clean text again: every text finds something different."""
    block = f"step {i} failed, retrying. "
    return random_text(size, seed=i) + block * (40 + i) + random_text(size, seed=1000 + i)


def feed_all(detector: Detector, text: str, size: int) -> list[dict[str, Any]]:
    for at in range(0, len(text), size):
        detector.feed(text[at : at + size])
    return [f.to_dict() for f in detector.findings]


def run_threads(count: int, work: Callable[[int], None]) -> None:
    """Runs `work(i)` for i in range(count) in threads started together; re-raises the first
    exception any of them raised."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            work(i)
        except BaseException as error:  # a PanicException is a BaseException
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def test_threads_feeding_their_own_detectors_match_single_threaded() -> None:
    cases = [
        (looping_text(i, BIG if i % 2 else 3000), [1, 17, 4096, BIG, 10**7][i % 5])
        for i in range(THREADS * 2)
    ]
    expected = [feed_all(Detector(), text, size) for text, size in cases]
    assert all(expected) and len({str(e) for e in expected}) == len(cases)
    results: list[Any] = [None] * len(cases)

    def work(i: int) -> None:
        for k in (i, i + THREADS):
            text, size = cases[k]
            detector = Detector()
            results[k] = (feed_all(detector, text, size), detector.units_seen)

    run_threads(THREADS, work)
    assert results == [(e, len(text)) for e, (text, _) in zip(expected, cases)]


def test_threads_feeding_their_own_token_detectors_match_single_threaded() -> None:
    arrays = [
        np.frombuffer(looping_text(i, BIG).encode("ascii"), dtype=np.uint8).astype(np.uint32)
        for i in range(THREADS)
    ]
    expected = [[f.to_dict() for f in scan_tokens(a)] for a in arrays]
    results: list[Any] = [None] * THREADS

    def work(i: int) -> None:
        detector = TokenDetector()
        for at in range(0, len(arrays[i]), 50_000):
            detector.feed(arrays[i][at : at + 50_000])
        results[i] = [f.to_dict() for f in detector.findings]

    run_threads(THREADS, work)
    assert results == expected


def scan_tokens(tokens: Any) -> list[Any]:
    detector = TokenDetector()
    detector.feed(tokens)
    return detector.findings


def test_threads_hammering_one_detector_with_small_deltas() -> None:
    """Feeds are atomic: with every thread feeding the same delta the text is the same whatever
    the interleaving, so the findings are exactly the single-threaded ones; meanwhile readers
    poll the detector. Nothing raises, nothing is lost."""
    detector = Detector()
    delta, per_thread = "loadTools.", 2000
    polled: list[int] = []

    def work(i: int) -> None:
        if i % 4 == 3:  # a reader
            for _ in range(per_thread):
                polled.append(detector.units_seen)
                assert len(detector.findings) <= 1
                repr(detector)
        else:
            for _ in range(per_thread):
                detector.feed(delta)

    run_threads(THREADS, work)
    feeders = THREADS - THREADS // 4
    total = feeders * per_thread
    assert detector.units_seen == total * len(delta)
    assert [first_held(f) for f in detector.findings] == [
        first_held(f) for f in scan(delta * total)
    ]
    assert all(0 <= seen <= total * len(delta) and seen % len(delta) == 0 for seen in polled)


def test_threads_hammering_one_detector_with_different_deltas() -> None:
    detector = Detector()
    deltas = [f"thread {i} says {'hello ' * (i + 1)}\n" for i in range(THREADS)]

    def work(i: int) -> None:
        for _ in range(500):
            detector.feed(deltas[i])

    run_threads(THREADS, work)
    assert detector.units_seen == 500 * sum(len(d) for d in deltas)
    findings = detector.findings
    assert [f.detected_at for f in findings] == sorted({f.detected_at for f in findings})
    assert all(f.start < f.detected_at <= detector.units_seen for f in findings)


def test_threads_stepping_their_own_slots_of_one_token_streams() -> None:
    streams = TokenStreams()
    slots = [[streams.add() for _ in range(4)] for _ in range(THREADS)]
    rng = random.Random(5)
    tokens = {
        slot: [rng.randrange(50) for _ in range(300)] + [7, 8, 9] * 200
        for row in slots
        for slot in row
    }

    def work(i: int) -> None:
        for step in range(900):
            streams.step(slots[i], [tokens[slot][step] for slot in slots[i]])

    run_threads(THREADS, work)
    for row in slots:
        for slot in row:
            assert streams.units_seen(slot) == 900
            finding = streams.finding(slot)
            expected = scan_tokens(tokens[slot])[0]
            assert finding is not None and finding.to_dict() == expected.to_dict()


def test_scans_of_large_texts_from_several_threads() -> None:
    texts = [looping_text(i, 1_000_000) for i in range(4)]
    expected = [[f.to_dict() for f in scan(t)] for t in texts]
    expected_trims = [trim(t).text for t in texts]
    results: list[Any] = [None] * 8

    def work(i: int) -> None:
        if i < 4:
            results[i] = [f.to_dict() for f in scan(texts[i])]
        elif i < 6:
            results[i] = [[f.to_dict() for f in found] for found in scan_many(texts, threads=2)]
        else:
            results[i] = [trim(t).text for t in texts]

    run_threads(8, work)
    assert results[:4] == expected
    assert results[4] == results[5] == expected
    assert results[6] == results[7] == expected_trims


SHARED_BIG_FEEDS = """
import threading
from loopbreak import {cls}
d = {cls}()
big = {big}
def feeder():
    for _ in range(10):
        d.feed(big)
def poller():
    for _ in range(20_000):
        d.units_seen
ts = [threading.Thread(target=f, daemon=True) for f in (feeder, feeder, poller)]
for t in ts: t.start()
for t in ts: t.join()
print(d.units_seen)
"""

STREAMS_BIG_STEPS = """
import threading
from loopbreak import TokenStreams
s = TokenStreams()
slots = [s.add() for _ in range(2000)]  # a step of 2000 slots releases the GIL
def stepper():
    for _ in range(100):
        s.step(slots, [7] * 2000)
def poller():
    for _ in range(20_000):
        s.units_seen(0)
ts = [threading.Thread(target=f, daemon=True) for f in (stepper, stepper, poller)]
for t in ts: t.start()
for t in ts: t.join()
print(s.units_seen(0))
"""


def test_shared_detector_with_large_deltas_does_not_deadlock() -> None:
    scripts = {
        "Detector": SHARED_BIG_FEEDS.format(cls="Detector", big="'abcdefghij' * 8000"),
        "TokenDetector": SHARED_BIG_FEEDS.format(cls="TokenDetector", big="list(range(20_000))"),
        "TokenStreams": STREAMS_BIG_STEPS,
    }
    expected = {"Detector": 2 * 10 * 80_000, "TokenDetector": 2 * 10 * 20_000, "TokenStreams": 200}
    running = {
        name: subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True
        )
        for name, code in scripts.items()
    }
    outcomes: dict[str, Any] = {}
    deadline = time.monotonic() + 20  # one deadline for all: they run side by side
    for name, process in running.items():
        try:
            out, _ = process.communicate(timeout=max(0.1, deadline - time.monotonic()))
            outcomes[name] = int(out) if process.returncode == 0 else f"exit {process.returncode}"
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            outcomes[name] = "deadlock"
    assert outcomes == expected
