"""``loopbreak scan --html``: the page as a person gets it, opened in a real headless Chromium
(Debian's package): the screenshot shows the findings, the DOM holds no element a transcript
tried to inject, the markup is valid HTML (html5lib, strict), and a large scan stays small."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import html5lib
import pytest
from PIL import Image

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Chromium from Debian's packages")

LOOPBREAK = [sys.executable, "-m", "loopbreak.cli"]
XHTML = "{http://www.w3.org/1999/xhtml}"

# Transcripts that try to get markup into the page, each with a loop.
HOSTILE = [
    "Here is the plan.\n<script>document.title='pwned'</script> Then: " + "loadTools." * 500,
    "<img src=x onerror=\"document.title='pwned'\">\n"
    + "- <b>same</b> line that keeps coming back\n" * 80
    + "</pre></details><h1>injected</h1>",
    "Steps\x00\x1b[31m:\n"
    + "".join(f"{n}. run the test suite in tests/test_api.py\n" for n in range(1, 80)),
    "A clean answer: <em>nothing</em> to see.",
]


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("chromium")
    assert executable is not None, "chromium is not installed: make install installs it"
    return subprocess.run(
        [
            executable,
            "--headless",
            "--no-sandbox",  # the tests run as root on CI
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def scan_to_html(tmp_path: Path, rows: list[str]) -> tuple[Path, subprocess.CompletedProcess[str]]:
    data = tmp_path / "chats.jsonl"
    data.write_text("".join(json.dumps({"text": row}) + "\n" for row in rows), encoding="utf-8")
    page = tmp_path / "report.html"
    done = subprocess.run(
        [*LOOPBREAK, "scan", str(data), "--field", "text", "--html", str(page)],
        capture_output=True,
        text=True,
    )
    return page, done


def strictly_parsed(page: Path) -> ElementTree.Element:
    """The page parsed by html5lib in strict mode: any parse error raises."""
    parser = html5lib.HTMLParser(strict=True)
    with page.open("rb") as markup:
        document: ElementTree.Element = parser.parse(markup)
    return document


def one(document: ElementTree.Element, tag: str) -> ElementTree.Element:
    element = document.find(f".//{XHTML}{tag}")
    assert element is not None, tag
    return element


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("html")
    page, done = scan_to_html(tmp_path, HOSTILE)
    assert done.returncode == 1, done.stderr  # loops found
    assert f"report written to {page}" in done.stdout
    return page


def test_the_page_is_valid_html_with_every_finding(hostile_page: Path) -> None:
    document = strictly_parsed(hostile_page)
    findings = document.findall(f".//{XHTML}div[@class='finding']")
    assert len(findings) == 3
    assert document.findall(f".//{XHTML}script") == []
    assert document.find(f".//{XHTML}svg") is None  # html5lib puts SVG in its own namespace
    assert len(document.findall(".//{http://www.w3.org/2000/svg}rect")) == 7  # one bar a size
    text = "".join(findings[0].itertext())
    assert "<script>document.title='pwned'</script>" in text
    assert '[loopbreak: removed 4970 units: "loadTools." repeated 497 more times' in text


def test_chromium_renders_the_transcripts_markup_as_text(
    hostile_page: Path, tmp_path: Path
) -> None:
    dom = chromium("--dump-dom", hostile_page.as_uri(), profile=tmp_path / "profile").stdout
    document: ElementTree.Element = html5lib.parse(dom)
    # Nothing a transcript held became an element, nor ran.
    for tag in ("script", "img", "b", "em"):
        assert document.findall(f".//{XHTML}{tag}") == [], tag
    assert [h1.text for h1 in document.findall(f".//{XHTML}h1")] == ["loopbreak scan report"]
    assert "".join(one(document, "title").itertext()) == "loopbreak scan report"
    body = "".join(one(document, "body").itertext())
    assert "<img src=x onerror=\"document.title='pwned'\">" in body
    assert "</pre></details><h1>injected</h1>" in body
    assert "Steps\u2400\u241b[31m:" in body  # control characters as their pictures
    assert len(document.findall(f".//{XHTML}div[@class='finding']")) == 3


def test_the_screenshot_shows_the_chart_and_the_highlighted_loops(
    hostile_page: Path, tmp_path: Path
) -> None:
    shot = tmp_path / "report.png"
    chromium(
        f"--screenshot={shot}",
        "--window-size=1280,1800",
        hostile_page.as_uri(),
        profile=tmp_path / "p",
    )
    with Image.open(shot) as image:
        assert image.size == (1280, 1800)
        colors = {color for _, color in image.convert("RGB").getcolors(maxcolors=1 << 20) or []}
    # Each of the page's own colors is on screen: the chart's bars, the kept copies, the cut
    # copies and the markers.
    bars, kept, cut, marker = (217, 130, 43), (255, 224, 138), (251, 211, 211), (205, 236, 205)
    for color in (bars, kept, cut, marker):
        assert color in colors, color


def test_a_scan_of_100_000_rows_gives_a_small_page(tmp_path: Path) -> None:
    # 100 files of 1,000 rows; every tenth row loops, each on its own sentence.
    folder = tmp_path / "data"
    folder.mkdir()
    for file in range(100):
        lines = []
        for row in range(1_000):
            text = f"answer {file}-{row}"
            if row % 10 == 0:
                text += f": Step {row} of file {file} is the same again. " * 40
            lines.append(json.dumps({"text": text}) + "\n")
        (folder / f"part-{file:03}.jsonl").write_text("".join(lines), encoding="utf-8")
    page = tmp_path / "report.html"
    done = subprocess.run(
        [*LOOPBREAK, "scan", str(folder), "--field", "text", "--html", str(page)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    assert "scanned 100 files, 100,000 rows: 10,000 rows with findings" in done.stdout
    assert page.stat().st_size < 2_000_000
    document = strictly_parsed(page)
    body = "".join(one(document, "body").itertext())
    assert "Scanned 100 files, 100,000 rows: 10,000 rows with loops" in body
    assert "9,700 more are counted above" in body
    assert len(document.findall(f".//{XHTML}div[@class='finding']")) == 300
    assert len(document.findall(f".//{XHTML}details")) == 100


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--html", "no/such/folder/report.html"], "--html no/such/folder/report.html: no folder"),
        (["--html", "report.html", "--ray", "auto"], "--html shows each loop in its text"),
    ],
)
def test_html_misuse_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    data = tmp_path / "a.txt"
    data.write_text("clean", encoding="utf-8")
    done = subprocess.run(
        [*LOOPBREAK, "scan", str(data), *args], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"loopbreak scan: {message}") and done.stderr.count("\n") == 1
    assert not (tmp_path / "report.html").exists()
