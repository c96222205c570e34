"""The progress bar of ``loopbreak scan``: bytes of input done, drawn on stderr when stderr is a
terminal and nowhere otherwise, so piped or redirected output never holds bar redraws."""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional, TextIO


class Progress:
    def __init__(self, total_bytes: int, enabled: bool = True) -> None:
        self._bar: Optional[Any] = None  # a tqdm bar, or None when nothing is drawn
        if enabled and sys.stderr.isatty():
            # Imported only to draw: tqdm takes longer to import than a scan of a small file.
            from tqdm import tqdm

            self._bar = tqdm(
                total=total_bytes,
                unit="B",
                unit_scale=True,
                desc="scanning",
                file=sys.stderr,
                leave=False,
            )

    def file(self, size: int) -> Callable[[float], None]:
        """A callback that moves the bar to ``fraction`` (0 to 1) of a file of ``size`` bytes;
        readers that know rows rather than bytes report the share of rows done."""
        done = 0

        def to(fraction: float) -> None:
            nonlocal done
            target = int(size * min(fraction, 1.0))
            if target > done and self._bar is not None:
                self._bar.update(target - done)
                done = target

        return to

    def print(self, line: str, file: TextIO) -> None:
        """Prints a line without tearing the bar (which is redrawn below it)."""
        if self._bar is None:
            print(line, file=file)
        else:
            self._bar.write(line, file=file)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
