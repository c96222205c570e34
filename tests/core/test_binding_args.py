"""The native module's arguments and constants, as Python sees them."""

import array
import struct
import threading
from typing import Callable

import pytest

from loopbreak import _core

LOOP = "loadTools. " * 40


def test_rule_names_are_the_codes_of_the_columns() -> None:
    texts = ["clean text", LOOP, "x" * 5 + "\n".join(["same line"] * 30)]
    encoded = [t.encode() for t in texts]
    offsets = [0]
    for e in encoded:
        offsets.append(offsets[-1] + len(e))
    data = b"".join(encoded)
    columns = _core.scan_utf8_columns(data, array.array("q", offsets))
    rows, codes = (struct.unpack(f"<{len(c) // 8}q", c) for c in columns[:2])
    expected = [(row, f.rule) for row, fs in enumerate(_core.scan_many(texts)) for f in fs]
    assert len(expected) >= 2
    assert [(row, _core.RULE_NAMES[code]) for row, code in zip(rows, codes)] == expected
    assert _core.RULE_NAMES == (
        "periodic_run",
        "long_block",
        "identical_lines",
        "counter_lines",
        "template_lines",
        "counter_run",
    )


RULE_FIELDS = list(_core.Rules().to_dict())
STREAMS = _core.TokenStreams()
STREAMS.add()
TEXT = LOOP.encode()
OFFSETS = array.array("q", [0, len(TEXT)])

# Every integer argument of the native module, called with one value; `name` is what its errors
# must name.
INT_ARGUMENTS: dict[str, tuple[str, Callable[[object], object]]] = {
    **{
        f"Rules({field})": (field, lambda value, field=field: _core.Rules(**{field: value}))  # type: ignore[misc]
        for field in RULE_FIELDS
    },
    "trim(keep)": ("keep", lambda value: _core.trim(LOOP, keep=value)),  # type: ignore[arg-type]
    "scan_many(threads)": ("threads", lambda value: _core.scan_many([LOOP], threads=value)),  # type: ignore[arg-type]
    "scan_utf8_columns(threads)": (
        "threads",
        lambda value: _core.scan_utf8_columns(TEXT, OFFSETS, threads=value),  # type: ignore[arg-type]
    ),
    "TokenStreams.remove(slot)": ("slot", lambda value: STREAMS.remove(value)),  # type: ignore[arg-type]
    "TokenStreams.finding(slot)": ("slot", lambda value: STREAMS.finding(value)),  # type: ignore[arg-type]
    "TokenStreams.units_seen(slot)": ("slot", lambda value: STREAMS.units_seen(value)),  # type: ignore[arg-type]
    "TokenStreams.step(slots)": ("slot", lambda value: STREAMS.step([value], [1])),
    "TokenStreams.step(tokens)": ("token id", lambda value: STREAMS.step([0], [value])),
    "TokenDetector.feed(tokens)": ("token id", lambda value: _core.TokenDetector().feed([value])),
}


@pytest.mark.parametrize(
    "value", [-1, 2**64, 2**200, -(2**200)], ids=["-1", "2**64", "2**200", "-2**200"]
)
@pytest.mark.parametrize("argument", list(INT_ARGUMENTS))
def test_ints_of_any_size_out_of_range_are_value_errors_naming_the_argument(
    argument: str, value: int
) -> None:
    name, call = INT_ARGUMENTS[argument]
    with pytest.raises(ValueError, match=name) as caught:
        call(value)
    assert not isinstance(caught.value, OverflowError)


@pytest.mark.parametrize("argument", list(INT_ARGUMENTS))
def test_integer_arguments_reject_other_types_with_a_type_error(argument: str) -> None:
    _, call = INT_ARGUMENTS[argument]
    with pytest.raises(TypeError):
        call("3")


def test_the_largest_values_in_range_are_accepted() -> None:
    assert _core.trim(LOOP, keep=2**64 - 1).text == LOOP
    assert _core.scan_many([LOOP], threads=2**64 - 1)[0][0].rule == "periodic_run"
    assert _core.Rules(code_span=2**24).code_span == 2**24
    assert _core.TokenDetector().feed([2**32 - 1]) is None
    assert STREAMS.units_seen(0) >= 0


# --- threads: the module runs without the GIL on a free-threaded Python (`gil_used = false`);
# these stress the parts that state shares across threads (the pools of `scan_many`, one
# detector's lock) and hold under the GIL as they must without it.


def test_threads_calling_scan_many_with_their_own_thread_counts_get_the_serial_results() -> None:
    texts = [f"row {i}: " + f"step {i} failed. " * (i % 7 * 10) for i in range(60)]
    expected = [[f.to_dict() for f in found] for found in _core.scan_many(texts)]
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for call in range(20):
                threads = 1 + (seed + call) % 3
                got = [
                    [f.to_dict() for f in found]
                    for found in _core.scan_many(texts, threads=threads)
                ]
                assert got == expected
        except BaseException as error:  # noqa: BLE001 - reported by the main thread
            errors.append(error)

    workers = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []


def test_readers_of_one_detector_see_a_growing_prefix_of_its_findings() -> None:
    deltas = [f"clean text {i}, " + "loadTools. " * 30 + "\n" for i in range(200)]
    detector = _core.Detector()
    done = threading.Event()
    seen: list[list[dict[str, object]]] = []

    def read() -> None:
        while not done.is_set():
            seen.append([f.to_dict() for f in detector.findings])
            assert detector.units_seen >= 0

    readers = [threading.Thread(target=read) for _ in range(4)]
    for reader in readers:
        reader.start()
    for delta in deltas:
        detector.feed(delta)
    done.set()
    for reader in readers:
        reader.join()
    final = [f.to_dict() for f in detector.findings]
    alone = _core.Detector()  # streaming counts: what the rule saw when it first held
    alone.feed("".join(deltas))
    assert final == [f.to_dict() for f in alone.findings]
    assert len(final) >= 100
    assert seen and all(snapshot == final[: len(snapshot)] for snapshot in seen)
