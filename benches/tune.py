"""How the default rules were chosen: the strongest repetition in benign text against the
weakest loop in real model output, for every kind of block.

    python benches/tune.py            # the wide benign corpus and ../shared/corpus (loops)
    python benches/tune.py --rules conservative

The benign corpus is every text file of the standard library, the running environment's
site-packages and /usr/share (tests/support/benign.py). The default rules are judged on its
hand-written part (prose, docs, hand-written code: no finding, every load below 1); their findings
in machine-generated files are listed and counted by the signal that marks each file. The
conservative preset is judged on every file. For each kind of block it is scanned
with rules that let only that kind fire, at a low threshold, and every region found is measured
whole (``scan`` reports each region's end and copies). A region's *load* is its span divided by
the span the default rules require of it (for lines: lines over lines required), with the
block's kind read in its context as the detector reads it: the defaults are safe while the
largest benign load stays below 1, and the margin is 1 / that load. The loop corpora are then
scanned with the defaults: which are found, and how far into the loop.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import loopbreak

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support import benign  # noqa: E402
from support.oracle import (  # noqa: E402
    PACKED_CONTEXT,
    line_class_of,
    required_counter_lines_at,
    required_lines,
    run_class_of,
    run_span,
)

CORPUS = REPO.parent / "shared" / "corpus"
if not CORPUS.is_dir():  # a worktree beside the repository
    CORPUS = REPO.parent.parent / "shared" / "corpus"
PRESETS = {"default": loopbreak.Rules(), "conservative": loopbreak.Rules.conservative()}
HIGH = 1 << 24


# Probe rules: only one kind can fire, at a low threshold.
PROBES: dict[str, loopbreak.Rules] = {
    "text blocks": loopbreak.Rules(
        min_repeats=3,
        text_span=32,
        long_min_repeats=3,
        code_min_repeats=HIGH,
        code_span=HIGH,
        single_char_min_span=HIGH,
        whitespace_min_span=HIGH,
        table_span=HIGH,
        min_lines=HIGH,
        code_min_lines=HIGH,
    ),
    "code blocks": loopbreak.Rules(
        code_min_repeats=3,
        code_span=32,
        code_min_span=32,
        long_min_repeats=3,
        min_repeats=HIGH,
        text_span=HIGH,
        single_char_min_span=HIGH,
        whitespace_min_span=HIGH,
        table_span=HIGH,
        min_lines=HIGH,
        code_min_lines=HIGH,
    ),
    "table rows": loopbreak.Rules(
        code_min_repeats=3,
        table_span=32,
        whitespace_min_span=48,
        code_span=HIGH,
        code_min_span=HIGH,
        long_min_repeats=3,
        min_repeats=HIGH,
        text_span=HIGH,
        single_char_min_span=HIGH,
        min_lines=HIGH,
        code_min_lines=HIGH,
    ),
    "one-char blocks": loopbreak.Rules(
        single_char_min_span=48,
        min_repeats=HIGH,
        text_span=HIGH,
        code_min_repeats=3,
        code_span=32,
        code_min_span=HIGH,
        long_min_repeats=3,
        whitespace_min_span=HIGH,
        table_span=HIGH,
        min_lines=HIGH,
        code_min_lines=HIGH,
    ),
    "whitespace blocks": loopbreak.Rules(
        whitespace_min_span=48,
        min_repeats=HIGH,
        text_span=HIGH,
        code_min_repeats=3,
        code_span=32,
        code_min_span=HIGH,
        long_min_repeats=3,
        single_char_min_span=HIGH,
        table_span=HIGH,
        min_lines=HIGH,
        code_min_lines=HIGH,
    ),
    "lines": loopbreak.Rules(
        min_lines=3,
        code_min_lines=3,
        code_span=3,
        # Lines of table rows need table_span; blocks of table rows also need
        # whitespace_min_span, which keeps them from firing here.
        table_span=3,
        min_repeats=HIGH,
        text_span=HIGH,
        code_min_repeats=HIGH,
        single_char_min_span=HIGH,
        whitespace_min_span=HIGH,
    ),
    "counter lines": loopbreak.Rules(
        counter_min_lines=2,
        counter_span=0,
        code_counter_min_lines=2,
        code_counter_span=0,
        data_counter_min_lines=2,
        min_repeats=HIGH,
        text_span=HIGH,
        code_min_repeats=HIGH,
        single_char_min_span=HIGH,
        whitespace_min_span=HIGH,
        table_span=HIGH,
        min_lines=HIGH,
        code_min_lines=HIGH,
        template_min_lines=HIGH,
    ),
    "template lines": loopbreak.Rules(
        template_min_lines=2,
        counter_min_lines=HIGH,
        code_counter_min_lines=HIGH,
        data_counter_min_lines=HIGH,
        min_repeats=HIGH,
        text_span=HIGH,
        code_min_repeats=HIGH,
        single_char_min_span=HIGH,
        whitespace_min_span=HIGH,
        table_span=HIGH,
        min_lines=HIGH,
        code_min_lines=HIGH,
    ),
    # Counts inside a line of four numbers or more (data counter lines fire with them, and are
    # measured with the counter lines).
    "counts": loopbreak.Rules(
        data_counter_min_lines=4,
        counter_min_lines=HIGH,
        code_counter_min_lines=HIGH,
        template_min_lines=HIGH,
        min_repeats=HIGH,
        text_span=HIGH,
        code_min_repeats=HIGH,
        single_char_min_span=HIGH,
        whitespace_min_span=HIGH,
        table_span=HIGH,
        min_lines=HIGH,
        code_min_lines=HIGH,
    ),
}


# The kind of region each probe measures (a probe lets other kinds fire too, at their defaults).
KINDS = {
    "text blocks": "text",
    "code blocks": "code",
    "table rows": "table",
    "one-char blocks": "single_char",
    "whitespace blocks": "whitespace",
    "lines": "lines",
    "counter lines": "counters",
    "template lines": "templates",
    "counts": "counts",
}


@dataclass
class Region:
    source: str
    kind: str
    rule: str
    period: int
    copies: int
    span: int
    load: float
    block: str


def block_load(rules: loopbreak.Rules, text: str, f: loopbreak.Finding) -> tuple[str, float]:
    """A block repeated back to back: its kind, read in its context, and its span over the span
    required of it."""
    kind = run_class_of(f.block, text[max(0, f.start - PACKED_CONTEXT) : f.start])
    return kind, (f.end - f.start) / run_span(rules, f.block, kind)


def lines_load(rules: loopbreak.Rules, text: str, f: loopbreak.Finding) -> tuple[str, float]:
    """Identical lines: the lines over the lines required."""
    return "lines", f.repeats / required_lines(rules, line_class_of(f.block), len(f.block))


def counters_load(rules: loopbreak.Rules, text: str, f: loopbreak.Finding) -> tuple[str, float]:
    """Counter lines: the lines over the lines required."""
    return "counters", f.repeats / required_counter_lines_at(rules, text, f.start, f.block)


def templates_load(rules: loopbreak.Rules, text: str, f: loopbreak.Finding) -> tuple[str, float]:
    """Template lines: the streak's lines over the lines required."""
    return "templates", f.repeats / rules.template_min_lines


def counts_load(rules: loopbreak.Rules, text: str, f: loopbreak.Finding) -> tuple[str, float]:
    """A count inside a line: its numbers over the numbers required."""
    return "counts", f.repeats / rules.data_counter_min_lines


# How a region of each rule is measured: its kind and its load. Every rule needs an entry (a
# rule without one stops the tool here; an unknown name is a KeyError, never a guess).
LOAD: dict[str, Callable[[loopbreak.Rules, str, loopbreak.Finding], tuple[str, float]]] = {
    "periodic_run": block_load,
    "long_block": block_load,
    "identical_lines": lines_load,
    "counter_lines": counters_load,
    "template_lines": templates_load,
    "counter_run": counts_load,
}
if LOAD.keys() != set(loopbreak.RULE_NAMES):
    raise SystemExit(
        f"benches/tune.py: LOAD measures {sorted(LOAD)}, the rules are {loopbreak.RULE_NAMES}"
    )


def regions(
    rules: loopbreak.Rules, source: str, text: str, findings: list[loopbreak.Finding]
) -> Iterator[Region]:
    """The regions a probe found in ``text``, each whole, with its load under ``rules``."""
    for f in findings:
        kind, load = LOAD[f.rule](rules, text, f)
        yield Region(source, kind, f.rule, f.period, f.repeats, f.end - f.start, load, f.block)


def benign_report(rules: loopbreak.Rules, judge_all: bool, top: int) -> bool:
    names, texts, signals = [], [], []
    for name, text in benign.everything():
        names.append(name)
        texts.append(text)
        signals.append(benign.machine_generated(name, text))
    judged = [i for i, signal in enumerate(signals) if judge_all or signal is None]
    print(
        f"benign corpus: {len(texts)} text files, {sum(map(len, texts)) / 1e6:.0f} M chars;"
        f" judged: {len(judged)} files ({'all' if judge_all else 'hand-written'})"
    )
    judged_names, judged_texts = [names[i] for i in judged], [texts[i] for i in judged]
    safe = True
    for name, probe in PROBES.items():
        found = sorted(
            (
                r
                for s, t, fs in zip(
                    judged_names, judged_texts, loopbreak.scan_many(judged_texts, probe)
                )
                for r in regions(rules, s, t, fs)
                if r.kind == KINDS[name]
            ),
            key=lambda r: -r.load,
        )
        worst = found[0].load if found else 0.0
        safe &= worst < 1
        margin = f"{1 / worst:.2f}x" if worst else "inf"
        print(f"\n{name}: {len(found)} benign regions, largest load {worst:.2f} (margin {margin})")
        for r in found[:top]:
            print(
                f"  {r.load:5.2f}  {r.rule:15} p={r.period:<5} x{r.copies:<5} span={r.span:<6} {r.block[:50]!r}  {r.source}"
            )
    hits = [(i, f) for i, fs in enumerate(loopbreak.scan_many(texts, rules)) for f in fs]
    judged_set = set(judged)
    failing = [(i, f) for i, f in hits if i in judged_set]
    print(f"\nfindings in the judged files: {len(failing)}")
    for i, f in failing:
        print(f"  {names[i]}: {f!r}")
    generated = [(i, f) for i, f in hits if i not in judged_set]
    by_signal: dict[str, int] = {}
    for i, _ in generated:
        signal = signals[i] or "hand-written"
        by_signal[signal] = by_signal.get(signal, 0) + 1
    files = len({i for i, _ in generated})
    print(f"findings in machine-generated files: {len(generated)} in {files} files {by_signal}")
    for i, f in generated:
        kind, _ = LOAD[f.rule](rules, texts[i], f)
        print(
            f"  [{signals[i]}] {kind:11} {f.rule} p={f.period} x{f.repeats} {f.block[:40]!r}  {names[i]}"
        )
    return safe and not failing


def loops_report(rules: loopbreak.Rules) -> None:
    print("\nreal loop excerpts (../shared/corpus/loops):")
    for path in sorted((CORPUS / "loops").glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        found = loopbreak.scan(text, rules=rules)
        what = ", ".join(
            f"{f.rule} p={f.period} x{f.repeats} at {f.detected_at} {f.block[:30]!r}" for f in found
        )
        print(f"  {path.name} ({len(text)} chars): {what or '-'}")
    print("\nSmolLM2 outputs (../shared/corpus/model), by label:")
    rows = [
        json.loads(line) for line in (CORPUS / "model" / "outputs.jsonl").read_text().splitlines()
    ]
    for label in ("loop", "near-loop", "clean"):
        subset = [r for r in rows if r["label"] == label]
        hits = [(r, loopbreak.scan(r["text"], rules=rules)) for r in subset]
        print(f"  {label}: {sum(1 for _, fs in hits if fs)}/{len(subset)} flagged")
        for r, fs in hits:
            first = fs[0] if fs else None
            shown = (
                f"{first.rule} p={first.period} at {first.detected_at} (loop starts {r['start']})"
                if first
                else "-"
            )
            print(
                f"    {r['id']:13} p={r['period']} x{r['repeats']} streak={r['identical_line_streak']}: {shown}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--top", type=int, default=8, help="benign regions to show per kind")
    parser.add_argument("--rules", choices=PRESETS, default="default", help="the preset measured")
    parser.add_argument("--loops-only", action="store_true")
    args = parser.parse_args()
    rules = PRESETS[args.rules]
    if not args.loops_only:
        safe = benign_report(rules, args.rules == "conservative", args.top)
        print(f"\n{args.rules} rules are", "SAFE" if safe else "NOT SAFE", "on the benign corpus")
    loops_report(rules)


if __name__ == "__main__":
    main()
