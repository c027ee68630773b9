"""The `conform` command: each subcommand parses, calls one library function, renders, returns.

Exit codes: 0 everything passed, 1 a conformance failure or crash (or golden drift for `golden
check`), 2 a usage or setup error, printed as one `Error:` line with a hint (here, and only here).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from harness import golden as golden_files
from harness.errors import ConformError
from harness.inject import DEFAULT_SEED, MODES
from harness.process import DEFAULT_TIMEOUT, ProcessDriver, python_target_driver
from harness.report import render, totals_line
from harness.runner import PASSED, CaseResult, run
from harness.suite import Case, Suite
from harness.target import Driver, InProcessDriver, load_target, split_spec


class _SetupFailure(click.ClickException):
    exit_code = 2


class _ConformGroup(click.Group):
    """Turns the harness's own errors into one `Error:` line and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConformError as exc:
            raise _SetupFailure(str(exc)) from None


class TargetType(click.ParamType[str]):
    """`module:attribute` or `path/to/file.py:attribute` (imported when the run starts)."""

    name = "TARGET"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            split_spec(str(value))
        except ValueError as exc:
            self.fail(f"{value!r}: {exc}", param, ctx)
        return str(value)


_suite_option = click.option(
    "--suite",
    "suite_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="A folder with recordings/ and golden/. Default: the suite shipped with conform.",
)
_pattern_option = click.option(
    "-k",
    "patterns",
    multiple=True,
    metavar="PATTERN",
    help="Only cases whose id matches this glob (e.g. 'llama-server/tool_*'); repeatable.",
)


def _cases(suite: Suite, patterns: tuple[str, ...]) -> list[Case]:
    cases = suite.cases(patterns)
    if not cases:
        what = f" matching {' '.join(patterns)}" if patterns else ""
        raise ConformError(f"no cases{what} in {suite.root}", hint="'conform list' shows the cases")
    return cases


def _progress(done: int, total: int, result: CaseResult) -> None:
    if sys.stderr.isatty():
        click.echo(f"\r[{done}/{total}] {result.case_id} [{result.mode}]\033[K", err=True, nl=False)
        if done == total:
            click.echo("\r\033[K", err=True, nl=False)


def _driver(
    target: str | None,
    exec_command: str | None,
    *,
    in_process: bool,
    timeout: float,
    validate_protocol: bool,
) -> Driver:
    """The driver for TARGET or --exec, started (so a program that cannot start stops here)."""
    if (target is None) == (exec_command is None):
        raise click.UsageError("give either TARGET or --exec 'COMMAND ARGS' (exactly one)")
    if exec_command is not None:
        if in_process:
            raise click.UsageError("--in-process runs a Python TARGET; it does not go with --exec")
        driver = ProcessDriver.from_command_line(
            exec_command, timeout=timeout, validate=validate_protocol
        )
    elif in_process:
        if validate_protocol:
            raise click.UsageError("--validate-protocol checks a worker, not --in-process")
        return InProcessDriver(load_target(str(target)))
    else:
        driver = python_target_driver(str(target), timeout=timeout, validate=validate_protocol)
    driver.start()
    return driver


@click.group(cls=_ConformGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="conform", prog_name="conform")
def main() -> None:
    """Golden-file conformance harness for assemblers of llama-server chat streams."""


@main.command("run")
@click.argument("target", type=TargetType(), required=False)
@click.option(
    "--exec",
    "exec_command",
    metavar="'COMMAND ARGS'",
    help="Run a program speaking conform's line protocol (docs/protocol.md) instead of TARGET.",
)
@click.option(
    "--in-process",
    is_flag=True,
    help="Run TARGET inside conform's own process: faster, but a hang or crash stops the run.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Time allowed for each case before it is timed-out (not with --in-process).",
)
@click.option(
    "--validate-protocol",
    is_flag=True,
    help="Check every reply against the protocol's JSON Schemas (needs jsonschema).",
)
@_suite_option
@click.option(
    "--mode",
    "modes",
    type=click.Choice(MODES),
    multiple=True,
    help="Input mode; repeatable. Default: every mode.",
)
@_pattern_option
@click.option(
    "--seed", type=int, default=DEFAULT_SEED, show_default=True, help="Seed of mutating modes."
)
@click.option("-v", "--verbose", is_flag=True, help="List passing cases too.")
def run_command(
    target: str | None,
    exec_command: str | None,
    in_process: bool,
    timeout: float,
    validate_protocol: bool,
    suite_dir: Path | None,
    modes: tuple[str, ...],
    patterns: tuple[str, ...],
    seed: int,
    verbose: bool,
) -> None:
    """Run TARGET (module:Class, module:factory or file.py:Class) over the suite's cases.

    TARGET runs in a worker process (python -m harness.adapter TARGET), so a hang or crash fails
    only its case; --exec runs a program in any language that speaks the same protocol.

    Exits 0 when every case passes in every mode, 1 on any mismatch or crash, 2 on a usage or
    setup error.
    """
    suite = Suite.open(suite_dir)
    cases = _cases(suite, patterns)
    driver = _driver(
        target,
        exec_command,
        in_process=in_process,
        timeout=timeout,
        validate_protocol=validate_protocol,
    )
    chosen = modes or MODES
    started = time.perf_counter()
    results: list[CaseResult] = []
    total = len(cases) * len(chosen)
    try:
        for result in run(cases, driver, modes=chosen, seed=seed):
            results.append(result)
            _progress(len(results), total, result)
    finally:
        driver.close()
    for line in render(results, verbose=verbose):
        click.echo(line)
    click.echo(totals_line(results, time.perf_counter() - started))
    if any(r.status != PASSED for r in results):
        sys.exit(1)


@main.command("list")
@_suite_option
@_pattern_option
def list_command(suite_dir: Path | None, patterns: tuple[str, ...]) -> None:
    """List the suite's cases, one id a line."""
    for case in _cases(Suite.open(suite_dir), patterns):
        click.echo(case.case_id)


@main.group("golden")
def golden_group() -> None:
    """Regenerate or check the golden files (they are generated, never edited by hand)."""


@golden_group.command("update")
@_suite_option
@_pattern_option
def golden_update(suite_dir: Path | None, patterns: tuple[str, ...]) -> None:
    """Regenerate golden files from the reference, atomically, listing what changed."""
    suite = Suite.open(suite_dir)
    changes = golden_files.update(suite, _cases(suite, patterns))
    for change in changes:
        if change.status != "unchanged":
            click.echo(f"{change.status}: {change.path}")
    changed = sum(c.status != "unchanged" for c in changes)
    click.echo(f"{changed} of {len(changes)} golden files written")


@golden_group.command("check")
@_suite_option
@_pattern_option
def golden_check(suite_dir: Path | None, patterns: tuple[str, ...]) -> None:
    """Exit 1 when a golden file is missing, drifted from the reference, or orphaned."""
    suite = Suite.open(suite_dir)
    cases = _cases(suite, patterns)
    problems = golden_files.check(suite, cases)
    for problem in problems:
        click.echo(f"{problem.status}: {problem.path}")
    if problems:
        click.echo(f"{len(problems)} problem(s); 'conform golden update' regenerates, then review")
        sys.exit(1)
    click.echo(f"{len(cases)} golden files match the reference")
