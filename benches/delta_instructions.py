"""Instructions of feeding clean text in 4-char deltas, against the floor of appending them to a
list, counted by valgrind (what a loaded machine cannot distort):

    valgrind --tool=cachegrind --cache-sim=no python benches/delta_instructions.py feed
    valgrind --tool=cachegrind --cache-sim=no python benches/delta_instructions.py append

Both make the same 96,119 deltas of ``corpus.clean_text``, then one ``Detector.feed`` or one
``list.append`` per delta; the count is the whole process's, so compare builds (the extension on
``PYTHONPATH``) by the ``feed`` count, and read it beside ``append``'s: the Python side moves by
a few million instructions from run to run.
"""

from __future__ import annotations

import argparse

import corpus

import loopbreak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("loop", choices=["feed", "append"])
    loop = parser.parse_args().loop
    text = corpus.clean_text(420_000)
    deltas = [text[i : i + 4] for i in range(0, len(text), 4)]
    if loop == "feed":
        detector = loopbreak.Detector()
        for delta in deltas:
            detector.feed(delta)
    else:
        appended: list[str] = []
        for delta in deltas:
            appended.append(delta)
    print(f"{len(deltas):,} deltas, {loop}")


if __name__ == "__main__":
    main()
