"""The JSON-lines reader that runs ahead (``loopbreak._core.JsonLinesScan``): chunks of whole
lines in order, whatever their size; a file descriptor read on its own (the caller's closed);
a stream without one read through ``read``; a read error raised as Python raises it, after
every line read before it, and reported by ``loopbreak scan`` after their findings."""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

import loopbreak
from loopbreak._core import JsonLinesScan
from loopbreak.cli import main

LOOP = "I will check the file again. " * 30
FIELD: list[Optional[tuple[str, Optional[int]]]] = [("t", None)]


def lines(count: int) -> bytes:
    """``count`` lines: every third a loop, every fifth not JSON; the last without a newline."""
    out = []
    for i in range(count):
        if i % 5 == 4:
            out.append(b"not json")
        else:
            out.append(json.dumps({"t": f"{LOOP}{i}" if i % 3 == 0 else f"clean {i}"}).encode())
    return b"\n".join(out)


def chunks_of(source: Any, chunk_bytes: int) -> list[tuple[int, list[int], list[int], bytes]]:
    """(lines, lines found, lines unread, bytes) of each chunk, line numbers made file-wide."""
    got = []
    first_line = 0
    for chunk in JsonLinesScan(source, FIELD, chunk_bytes):
        found = [first_line + row[0] for row in chunk.found]
        unread = [first_line + line for line, _, _ in chunk.unread]
        assert chunk.size == len(chunk.data)
        got.append((chunk.lines, found, unread, chunk.data))
        first_line += chunk.lines
    return got


@pytest.mark.parametrize("chunk_bytes", [1, 37, 500, 1 << 20])
def test_chunks_hold_whole_lines_in_order(tmp_path: Path, chunk_bytes: int) -> None:
    data = lines(60)
    path = tmp_path / "lines.jsonl"
    path.write_bytes(data)
    with path.open("rb") as stream:
        got = chunks_of(stream.fileno(), chunk_bytes)
    assert b"".join(chunk for *_, chunk in got) == data
    assert all(chunk.endswith(b"\n") for *_, chunk in got[:-1])
    assert not got[-1][3].endswith(b"\n")  # the last line has no newline, and is read
    assert sum(count for count, *_ in got) == 60
    assert [line for _, found, _, _ in got for line in found] == [
        i for i in range(60) if i % 3 == 0 and i % 5 != 4
    ]
    assert [line for _, _, unread, _ in got for line in unread] == list(range(4, 60, 5))
    if chunk_bytes < len(data) // 4:
        assert len(got) > 4  # a chunk boundary falls inside lines


def test_the_descriptor_is_its_own(tmp_path: Path) -> None:
    """The reader reads a duplicate: the caller may close its descriptor at once."""
    path = tmp_path / "lines.jsonl"
    path.write_bytes(lines(30))
    fd = os.open(path, os.O_RDONLY)
    scan = JsonLinesScan(fd, FIELD, 64)
    os.close(fd)
    assert b"".join(chunk.data for chunk in scan) == lines(30)


def test_a_stream_without_a_descriptor_is_read_through_read() -> None:
    assert [chunk for *_, chunk in chunks_of(io.BytesIO(lines(20)), 100)] != []
    assert b"".join(chunk for *_, chunk in chunks_of(io.BytesIO(lines(20)), 100)) == lines(20)


class FailsAfter(io.RawIOBase):
    """Gives ``data`` in reads of at most 16 bytes, then fails as a disk would."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self.data:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        n = min(16, len(buffer), len(self.data))
        buffer[:n], self.data = self.data[:n], self.data[n:]
        return n


def test_a_read_error_comes_after_the_lines_read_before_it() -> None:
    data = lines(10) + b"\n" + b'{"t": "cut off'
    got: list[bytes] = []
    with pytest.raises(OSError) as raised:
        for chunk in JsonLinesScan(FailsAfter(data), FIELD, 50):
            got.append(chunk.data)
    assert raised.value.errno == errno.EIO and raised.value.strerror == os.strerror(errno.EIO)
    assert b"".join(got) == lines(10) + b"\n"


def test_a_read_error_of_a_descriptor_is_the_one_python_raises(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)  # a folder: reading it fails with EISDIR
    try:
        with pytest.raises(OSError) as python:
            os.read(fd, 10)
        with pytest.raises(OSError) as ours:
            list(JsonLinesScan(fd, FIELD, 64))
    finally:
        os.close(fd)
    assert type(ours.value) is type(python.value) is IsADirectoryError
    assert (ours.value.errno, ours.value.strerror) == (python.value.errno, python.value.strerror)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="chunk_bytes"):
        JsonLinesScan(io.BytesIO(b""), FIELD, 0)
    with pytest.raises(ValueError, match="file descriptor"):
        JsonLinesScan(-1, FIELD, 10)
    with pytest.raises(OSError) as raised:
        JsonLinesScan(2**30, FIELD, 10)  # not open
    assert raised.value.errno == errno.EBADF


def test_scan_reports_a_read_error_after_the_findings_before_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = lines(10) + b"\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(FailsAfter(data)))  # type: ignore[type-var]
    status = main(["scan", "--json", "--format", "jsonl", "--field", "t", "-"])
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines()]
    assert [record["line"] for record in records] == [
        number
        for number in range(1, 11)
        for _ in loopbreak.scan(f"{LOOP}{number - 1}")
        if (number - 1) % 3 == 0 and (number - 1) % 5 != 4
    ]
    assert status == 2 and f"loopbreak scan: -: {os.strerror(errno.EIO)}" in err


@pytest.mark.parametrize(
    "consumer",
    [
        "next(iter(scan))",  # the scan left alive at exit, mid-stream
        "for chunk in scan:\n    break\ndel scan",  # broken out of and dropped
    ],
)
def test_a_python_stream_never_aborts_the_interpreter_at_exit(consumer: str) -> None:
    # A read that releases the GIL (a socket's, a pipe's; here a sleep): a thread of the scan
    # inside one at exit was unwound through Rust frames as the interpreter finalized (SIGABRT).
    # The stream is read on the consumer's thread instead, so no thread of the scan calls Python.
    script = f"""
import io, json, time
from loopbreak._core import JsonLinesScan

class Network(io.RawIOBase):
    def __init__(self, data):
        self.data = memoryview(data)
    def readable(self):
        return True
    def readinto(self, buffer):
        time.sleep(0.001)
        n = min(4096, len(buffer), len(self.data))
        buffer[:n], self.data = self.data[:n], self.data[n:]
        return n

data = b"".join(json.dumps({{"t": f"line {{i}} " * 50}}).encode() + b"\\n" for i in range(5000))
scan = JsonLinesScan(Network(data), [("t", None)], 100_000)
{consumer}
"""
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
        assert (done.returncode, done.stderr) == (0, b"")
