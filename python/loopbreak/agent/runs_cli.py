"""``loopbreak runs --db FILE``: the runs of a store and how each ended, newest first; ``loopbreak
runs show RUN --db FILE``: one run's audit decisions in order and its receipt.

On a terminal the tables are drawn by ``rich`` at the terminal's width (long cells wrap, none
is cut); elsewhere (a pipe, a file) the output is plain text, one line per row, columns separated
by two spaces, so ``grep`` and ``awk`` see whole rows. ``--json`` writes JSON for scripts.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Optional

from loopbreak.agent.receipt import ReceiptState
from loopbreak.agent.runs import RunFilter, RunSummary, list_runs, run_detail
from loopbreak.errors import RunNotFound, StoreError
from loopbreak.store import open_read_only

EPILOG = """\
--since takes an age (30m, 1h, 2d, 1w: runs that ended since then) or a UTC date or time
  (2026-12-01, 2026-12-01T09:00).

exit status: 0 (also when no run matches the filters), 2 bad usage, an unreadable database
  or an unknown run."""

_AGE = re.compile(r"(\d+)([smhdw])")
_AGE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}

_LIST_COLUMNS = ("run", "ended (UTC)", "state", "reason", "steps", "tools", "cost", "next action")
_DECISION_COLUMNS = ("seq", "step", "decision", "reason", "check", "value / limit", "action")


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "runs",
        help="list the runs of a store: state, reason, usage and the next action",
        description="The runs recorded in a loopbreak database, newest first: how each ended "
        "(its receipt's state and reason), what it used, and what to do next.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_common(parser, argparse.SUPPRESS)
    states = ", ".join(state.value for state in ReceiptState)
    parser.add_argument("--state", type=_state, help=f"only runs in this state ({states})")
    parser.add_argument("--reason", help="only runs stopped for this reason (loop_detected, ...)")
    parser.add_argument("--since", type=_since, metavar="AGE|TIME", help="only runs ended since")
    parser.set_defaults(handler=run_list)
    show = parser.add_subparsers(title="one run", dest="command").add_parser(
        "show",
        help="one run's decisions in order, and its receipt",
        description="One run: every decision of its policy from the audit log, in order, then "
        "its receipt (state, reason, next action, evidence, usage).",
    )
    show.add_argument("run_id", metavar="RUN", help="the run id")
    # SUPPRESS: options given before `show` are kept, not reset by the subcommand's defaults.
    _add_common(show, argparse.SUPPRESS)
    show.set_defaults(handler=run_show)


def _add_common(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("--db", type=Path, metavar="FILE", default=default, help="the database")
    parser.add_argument("--json", action="store_true", default=default, help="JSON for scripts")


def run_list(args: argparse.Namespace) -> int:
    connection = _connect(args)
    if connection is None:
        return 2
    try:
        runs = list_runs(connection, RunFilter(args.state, args.reason, args.since))
    finally:
        connection.close()
    if getattr(args, "json", False):
        for summary in runs:
            print(json.dumps(summary.to_dict(), ensure_ascii=False))
        return 0
    if not runs:
        print("no runs match" if _filtered(args) else "no runs in the database")
        return 0
    _print_runs(runs)
    return 0


def run_show(args: argparse.Namespace) -> int:
    connection = _connect(args)
    if connection is None:
        return 2
    try:
        detail = run_detail(connection, args.run_id)
    except RunNotFound as error:
        print(f"loopbreak runs show: {error}", file=sys.stderr)
        return 2
    finally:
        connection.close()
    if getattr(args, "json", False):
        print(json.dumps(detail, ensure_ascii=False, indent=2))
        return 0
    receipt = detail["receipt"]
    usage = receipt.get("usage") or {}
    print(f"run {receipt['run_id']}: {receipt['state']} ({receipt['reason']})")
    print(f"ended {_when(receipt['ended_at'])} UTC; verified: {_verified(receipt)}")
    if usage:
        print(
            f"used {usage['steps']} steps, {usage['tool_calls']} tool calls, "
            f"{usage['total_tokens']:,} tokens, cost {_cost(usage['cost'])}, "
            f"{usage['elapsed_seconds']:.1f} s"
        )
    print(f"next action: {receipt['next_action']}")
    print()
    decisions = detail["decisions"]
    if decisions:
        print(f"decisions ({len(decisions)}, in order):")
        _print_table(
            _DECISION_COLUMNS, [_decision_row(item) for item in decisions], right={0, 1}, text=None
        )
        for item in decisions:
            if item["message"]:
                print(f"step {item['step']} {item['decision']}: {item['message']}")
    else:
        print("no decisions in the audit log for this run")
    print()
    print("evidence:")
    for item in receipt["evidence"]:
        details = {key: value for key, value in item["details"].items() if value is not None}
        shown = json.dumps(details, ensure_ascii=False)
        print(f"  step {item['step']}: {item['kind']} {item['name']} {_shortened(shown, 200)}")
    print("conditions (in priority order; the first that held decides):")
    for condition in receipt["conditions"]:
        held = "held" if condition["held"] else "-"
        print(f"  {condition['state']:<18} {held:<5} {json.dumps(condition['inputs'])}")
    return 0


def _connect(args: argparse.Namespace) -> Optional[Any]:
    """The database read-only, or None after printing why it cannot be read."""
    command = "loopbreak runs show" if getattr(args, "command", None) else "loopbreak runs"
    if getattr(args, "db", None) is None:
        print(f"{command}: --db FILE is required", file=sys.stderr)
        return None
    try:
        return open_read_only(args.db)
    except StoreError as error:
        print(f"{command}: {error}", file=sys.stderr)
        return None


def _filtered(args: argparse.Namespace) -> bool:
    return any(value is not None for value in (args.state, args.reason, args.since))


def _list_row(summary: RunSummary) -> list[str]:
    return [
        summary.run_id,
        _when(summary.ended_at),
        summary.state,
        summary.reason,
        _number(summary.steps),
        _number(summary.tool_calls),
        _cost(summary.cost),
        summary.next_action,
    ]


def _decision_row(item: dict[str, Any]) -> list[str]:
    value = "" if item["value"] is None else f"{_amount(item['value'])} / {_amount(item['limit'])}"
    return [
        str(item["seq"]),
        str(item["step"]),
        item["decision"],
        item["reason"],
        item["check"],
        value,
        item["action_key"] or "",
    ]


def _print_table(
    columns: Sequence[str], rows: list[list[str]], right: set[int], text: Optional[int]
) -> None:
    """A table on a terminal (``rich``, see ``_rich_table``), else plain lines."""
    if sys.stdout.isatty():
        _console().print(_rich_table(columns, rows, right, text))
    else:
        _print_plain(columns, rows)


def _print_runs(runs: list[RunSummary]) -> None:
    """The runs table. On a terminal too narrow for the next action beside the other columns,
    each state's next action is said once under the table instead of being squeezed."""
    rows = [_list_row(summary) for summary in runs]
    right = {4, 5, 6}
    if not sys.stdout.isatty():
        _print_plain(_LIST_COLUMNS, rows)
        return
    console = _console()
    without_action = _rich_table(_LIST_COLUMNS[:-1], [row[:-1] for row in rows], right, None)
    width = console.measure(without_action).maximum
    if width + _GAP + _MIN_TEXT_WIDTH <= console.width:
        console.print(_rich_table(_LIST_COLUMNS, rows, right, text=7))
        return
    from rich.table import Table

    console.print(without_action)
    legend = Table.grid(padding=(0, 1))
    legend.add_column(no_wrap=True)
    legend.add_column()
    for state in dict.fromkeys(summary.state for summary in runs):
        legend.add_row(f" {_styled(state)}", ReceiptState(state).next_action)
    console.print("next action:")
    console.print(legend)


# The narrowest the free-text column of a table gets before it goes under the table instead,
# and the space between two columns.
_MIN_TEXT_WIDTH = 28
_GAP = 3


def _print_plain(columns: Sequence[str], rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in [list(columns), *rows]) for i in range(len(columns))]
    for row in [list(columns), *rows]:
        cells = [cell.replace("\n", " ") for cell in row]
        print("  ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip())


def _console() -> Any:
    # Imported here: a script reading --json or a pipe does not pay for rich.
    from rich.console import Console

    return Console(highlight=False)


def _rich_table(
    columns: Sequence[str], rows: list[list[str]], right: set[int], text: Optional[int]
) -> Any:
    """``columns`` in ``right`` are numbers; column ``text`` is free text, wrapped at spaces.
    Names, times and numbers are never wrapped or cut."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for index, column in enumerate(columns):
        table.add_column(
            column,
            no_wrap=index != text,
            justify="right" if index in right else "left",
            min_width=_MIN_TEXT_WIDTH if index == text else None,
        )
    for row in rows:
        # Cells are data, not rich markup: a run id like "[red]x" prints as written.
        table.add_row(*(_styled(escape(cell)) for cell in row))
    return table


_STATE_STYLES = {
    ReceiptState.VERIFIED_COMPLETE.value: "green",
    ReceiptState.STUCK.value: "bold red",
    ReceiptState.FAILED.value: "bold red",
    ReceiptState.FALSE_COMPLETE.value: "yellow",
    ReceiptState.WAITING_UNROUTED.value: "yellow",
    ReceiptState.UNCERTAIN.value: "yellow",
    "stop": "bold red",
    "warn": "yellow",
}


def _styled(cell: str) -> str:
    style = _STATE_STYLES.get(cell)
    return f"[{style}]{cell}[/]" if style else cell


def _when(stored: str) -> str:
    """A stored UTC time to the second, as people read it: ``2026-12-01 09:03:40``."""
    return stored[:19].replace("T", " ")


def _number(value: Optional[int]) -> str:
    return "-" if value is None else f"{value:,}"


def _cost(value: Optional[float]) -> str:
    """Six decimals: a step of a small model costs millionths."""
    return "-" if value is None else f"{value:.6f}".rstrip("0").rstrip(".")


def _amount(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _verified(receipt: dict[str, Any]) -> str:
    if receipt["verification_error"]:
        return f"the check failed ({receipt['verification_error']})"
    return {True: "yes", False: "no", None: "no verifier"}[receipt["verified"]]


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _state(text: str) -> str:
    names = {state.value for state in ReceiptState}
    state = text.upper()
    if state not in names:
        raise argparse.ArgumentTypeError(
            f"unknown state {text!r}; one of {', '.join(sorted(names))}"
        )
    return state


def _since(text: str) -> datetime:
    now = datetime.now(timezone.utc)
    age = _AGE.fullmatch(text)
    if age:
        return now - timedelta(**{_AGE_UNITS[age[2]]: int(age[1])})
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither an age (30m, 1h, 2d, 1w) nor a date or time (2026-12-01T09:00)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
