"""``loopbreak.scanning.ray`` on a real local Ray cluster of 2 CPUs: it finds exactly what the local scan
finds, through Ray's own Parquet reader and through ``loopbreak scan --ray``."""

from __future__ import annotations

import os

# Read by Ray when it is imported: keep the test cluster on the loopback interface (the machine's
# other addresses are not for tests to talk to), and send no usage statistics.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Optional

import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402
import ray  # noqa: E402

from loopbreak import Rules  # noqa: E402
from loopbreak.cli import main  # noqa: E402
from loopbreak.scanning.findings import RECORD_KEYS, scan_batch  # noqa: E402
from loopbreak.scanning.ray import scan_dataset  # noqa: E402
from support.transcripts import loop_text, texts, write_parquet  # noqa: E402

ROWS = 100_000
EVERY = 50


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """The address of a new local cluster (never one already running here), as light as Ray
    allows: 2 CPUs, no dashboard, a small object store."""
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=256 << 20,
        log_to_driver=False,
    )
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def chats(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Optional[str]]]:
    values = texts(ROWS, EVERY, nulls=True)
    path = tmp_path_factory.mktemp("ray") / "chats.parquet"
    write_parquet(path, values)
    return path, values


def local_findings(
    values: list[Optional[str]], rules: Optional[Rules] = None
) -> list[tuple[int, tuple[Any, ...]]]:
    found = scan_batch(pa.array(values, pa.string()), rules)
    return [
        (row, tuple(record[key] for key in RECORD_KEYS))
        for row, record in zip(found.rows, found.records)
    ]


def test_scan_dataset_finds_what_the_local_scan_finds(
    cluster: str, chats: tuple[Path, list[Optional[str]]]
) -> None:
    path, values = chats
    dataset = ray.data.read_parquet(str(path)).select_columns(["id", "text"])
    rows = scan_dataset(dataset, "text", keep=["id"]).take_all()
    found = sorted((row["id"], tuple(row[key] for key in RECORD_KEYS)) for row in rows)
    expected = local_findings(values)
    assert len(expected) == ROWS // EVERY
    assert found == sorted(expected)


def test_scan_dataset_applies_the_rules(cluster: str) -> None:
    values: list[Optional[str]] = [loop_text(i) for i in range(6)]
    strict = Rules(min_repeats=30, min_lines=55, code_min_lines=55, long_min_repeats=5)
    dataset = ray.data.from_items([{"n": i, "text": text} for i, text in enumerate(values)])
    rows = scan_dataset(dataset, "text", keep=["n"], rules=strict).take_all()
    found = sorted((row["n"], tuple(row[key] for key in RECORD_KEYS)) for row in rows)
    expected = local_findings(values, strict)
    assert found == sorted(expected)
    assert expected != local_findings(values)  # the rules made a difference


def test_cli_on_ray_reports_what_the_local_scan_reports(
    cluster: str, chats: tuple[Path, list[Optional[str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = chats
    assert main(["scan", "--json", "--column", "text", str(path)]) == 1
    local = capsys.readouterr()
    # A second driver, as a user's machine would connect to the cluster.
    command = [
        sys.executable,
        "-m",
        "loopbreak.cli",
        "scan",
        "--json",
        "--column",
        "text",
        str(path),
    ]
    on_ray = subprocess.run(
        [*command, "--ray", cluster], capture_output=True, text=True, check=False
    )
    assert on_ray.returncode == 1, on_ray.stderr
    assert on_ray.stdout == local.out
    assert len(on_ray.stdout.splitlines()) == ROWS // EVERY
    summary = local.err.splitlines()
    assert on_ray.stderr.splitlines()[-len(summary) :] == summary

    record = json.loads(on_ray.stdout.splitlines()[0])
    assert (record["path"], record["row"]) == (str(path), EVERY - 1)


def test_cli_on_ray_scans_parquet_only(tmp_path: Path) -> None:
    text = tmp_path / "answer.txt"
    text.write_text(loop_text(0), encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "loopbreak.cli",
        "scan",
        "--column",
        "text",
        "--ray",
        "auto",
        str(text),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert f"{text}: --ray scans Parquet files only, this is text" in result.stderr
