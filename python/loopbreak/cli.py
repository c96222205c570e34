"""The ``loopbreak`` command. Each subcommand's module registers its parser and sets
``handler``, a function of the parsed arguments that returns the exit code."""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Optional

from loopbreak import __version__
from loopbreak.agent import runs_cli
from loopbreak.proxy import cli as proxy_cli
from loopbreak.scanning import cli as scan_cli
from loopbreak.streaming import demo


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="loopbreak", description="Stop language-model repetition loops."
    )
    parser.add_argument("--version", action="version", version=f"loopbreak {__version__}")
    commands = parser.add_subparsers(title="commands", required=True)
    demo.register(commands)
    scan_cli.register(commands)
    runs_cli.register(commands)
    proxy_cli.register(commands)
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
