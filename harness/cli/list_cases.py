"""`conform list`: the suites' cases, one a line, each with its class of input and what it
pins."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli import options as opt
from harness.errors import ConformError
from harness.pipeline import Selection
from harness.pipeline.selection import classes_of, select_cases, select_classes, suite_path
from harness.safetext import printable
from harness.suite.cases import Case, Suite, open_suites
from harness.suite.classes import CLASSES
from harness.suite.recording import RecordingInfo, read_info


@click.command("list")
@opt.selection
@click.option("--ids", "ids_only", is_flag=True, help="Print the case ids alone.")
def list_command(
    suite_dirs: tuple[Path, ...],
    patterns: tuple[str, ...],
    rules: tuple[str, ...],
    exclude: tuple[str, ...],
    classes: tuple[str, ...],
    ids_only: bool,
) -> None:
    """List the suites' cases, one a line: its id, its class of input (valid, invalid or
    implementation-defined, from its golden file; real captures say so) and what it pins
    (R1..R9, I1..I9, SSE).

    Golden files without a recording are named on stderr.
    """
    suites = open_suites(tuple(suite_path(d) for d in suite_dirs))
    cases = select_cases(suites, Selection(patterns=patterns, rules=rules, exclude=exclude))
    if classes:
        cases = select_classes(cases, classes)
        if not cases:
            raise ConformError(
                f"no case selected is of {' or '.join(classes)}",
                hint="'conform list' shows each case's class",
            )
    found = {} if ids_only else classes_of(cases)
    width = max(len(printable(case.case_id)) for case in cases)
    for case in cases:
        shown = printable(case.case_id)
        if ids_only:
            click.echo(shown)
            continue
        info = _info_or_nothing(case)
        kind = found.get(case.case_id)
        label = "(no golden file)" if kind is None else str(kind)
        if info is not None and info.real:
            label += ", real"
        pins = " ".join(info.pins) if info is not None else ""
        click.echo(f"{shown:<{width}}  {label:<{_CLASS_WIDTH}}  {pins}".rstrip())
    for suite in suites:
        warn_orphans(suite, patterns)


#: The width of `conform list`'s class column: `implementation-defined`.
_CLASS_WIDTH = max(len(str(c)) for c in CLASSES)


def _info_or_nothing(case: Case) -> RecordingInfo | None:
    try:
        return read_info(case.recording)
    except ConformError as exc:  # listing never fails for one broken recording: run names it
        click.echo(f"warning: {printable(str(exc))}", err=True)
        return None


def warn_orphans(suite: Suite, patterns: tuple[str, ...]) -> None:
    """Name on stderr each golden file of `suite` (among `patterns`) without a recording."""
    for path in suite.orphaned_golden(patterns):
        click.echo(f"warning: {printable(str(path))}: a golden file without a recording", err=True)
