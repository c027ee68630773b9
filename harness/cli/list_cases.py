"""`conform list`: the suites' cases, one a line, each with what it pins."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli import options as opt
from harness.errors import ConformError
from harness.pipeline import Selection
from harness.pipeline.selection import select_cases, suite_path
from harness.safetext import printable
from harness.suite.cases import Case, Suite, open_suites


@click.command("list")
@opt.selection
@click.option("--ids", "ids_only", is_flag=True, help="Print the case ids alone.")
def list_command(
    suite_dirs: tuple[Path, ...],
    patterns: tuple[str, ...],
    rules: tuple[str, ...],
    exclude: tuple[str, ...],
    ids_only: bool,
) -> None:
    """List the suites' cases, one a line: its id and what it pins (R1..R9, I1..I9, SSE).

    Golden files without a recording are named on stderr.
    """
    suites = open_suites(tuple(suite_path(d) for d in suite_dirs))
    cases = select_cases(suites, Selection(patterns=patterns, rules=rules, exclude=exclude))
    width = max(len(printable(case.case_id)) for case in cases)
    for case in cases:
        pins = () if ids_only else _pins_or_nothing(case)
        shown = printable(case.case_id)
        click.echo(f"{shown:<{width}}  {' '.join(pins)}" if pins else shown)
    for suite in suites:
        warn_orphans(suite, patterns)


def _pins_or_nothing(case: Case) -> tuple[str, ...]:
    try:
        return case.pins
    except ConformError as exc:  # listing never fails for one broken recording: run names it
        click.echo(f"warning: {printable(str(exc))}", err=True)
        return ()


def warn_orphans(suite: Suite, patterns: tuple[str, ...]) -> None:
    """Name on stderr each golden file of `suite` (among `patterns`) without a recording."""
    for path in suite.orphaned_golden(patterns):
        click.echo(f"warning: {printable(str(path))}: a golden file without a recording", err=True)
