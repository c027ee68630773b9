"""`conform golden update` and `conform golden check`: the golden files, regenerated from the
reference or checked against it (`harness.suite.golden`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harness.cli import options as opt
from harness.cli.list_cases import warn_orphans
from harness.files import interruptible
from harness.pipeline import Selection
from harness.pipeline.selection import select_cases
from harness.safetext import printable
from harness.suite import golden as golden_files
from harness.suite.cases import Suite, writable_root


@click.group("golden")
def golden_group() -> None:
    """Regenerate or check the golden files (they are generated, never edited by hand)."""


_golden_pattern_option = click.option(
    "-k",
    "patterns",
    multiple=True,
    metavar="PATTERN",
    callback=opt.case_patterns,
    help="Only cases whose whole id matches this glob, or that lie in this folder "
    "('llama-server/tool_call' is that case alone; 'llama-server/tool_*', 'synthetic'); "
    "repeatable.",
)


@golden_group.command("update")
@opt.one_suite
@_golden_pattern_option
def golden_update(suite_dir: Path | None, patterns: tuple[str, ...]) -> None:
    """Regenerate golden files from the reference, atomically, listing what changed.

    Writes into --suite DIR, or into the shipped suite of a source checkout; never into an
    installed package. Temporary files a killed run left in the suite are removed and named.
    Ctrl-C, SIGTERM or SIGHUP stop it with no temporary file left (exit 128 + the signal).
    """
    suite = Suite.open(writable_root(suite_dir, command="golden update"))
    cases = select_cases([suite], Selection(patterns=patterns))
    with interruptible():
        for path in golden_files.remove_leftovers(suite):
            click.echo(f"removed: {printable(str(path))} (a temporary file of a killed run)")
        changes = golden_files.update(cases)
    for change in changes:
        if change.status != "unchanged":
            click.echo(f"{change.status}: {printable(str(change.path))}")
    warn_orphans(suite, patterns)
    changed = sum(c.status != "unchanged" for c in changes)
    click.echo(f"{changed} of {len(changes)} golden files written")


@golden_group.command("check")
@opt.one_suite
@_golden_pattern_option
def golden_check(suite_dir: Path | None, patterns: tuple[str, ...]) -> None:
    """Exit 1 when a golden file is missing, drifted from the reference, or orphaned, or a
    killed run left a temporary file in the suite."""
    suite = Suite.open(suite_dir)
    cases = select_cases([suite], Selection(patterns=patterns))
    problems = golden_files.check(suite, cases, patterns)
    for problem in problems:
        note = " (a temporary file of a killed run)" if problem.status == "leftover" else ""
        click.echo(f"{problem.status}: {printable(str(problem.path))}{note}")
    if problems:
        click.echo(f"{len(problems)} problem(s); 'conform golden update' regenerates, then review")
        sys.exit(1)
    click.echo(f"{len(cases)} golden files match the reference")
