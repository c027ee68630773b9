"""The `conform` command: each subcommand parses, calls one library function, renders, returns.

How it ends, error by error, is `harness.cli_group` (the one place that prints `Error:` lines);
the exit codes are the README's one table (README.md#exit-codes).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import click

from harness import cli_options as opt
from harness.capture.command import record as record_command
from harness.check.options import RunOptions
from harness.cli_group import ConformGroup
from harness.drive.pipes import keep_freed_memory
from harness.errors import ConformError
from harness.files import check_outputs as check_written
from harness.files import interruptible, write_report
from harness.fuzz import fuzz_command
from harness.matrix import column_of, columns_from_reports, targets_of
from harness.pipeline import (
    Interruption,
    Outputs,
    Selection,
    check_outputs,
    parse_shard,
    prepare,
    run_target,
    run_targets,
    write_outputs,
)
from harness.pipeline.selection import select_cases, suite_path
from harness.reports.matrix import column_line, load_matrix, markdown, matrix, matrix_text
from harness.reports.page import matrix_page
from harness.reports.progress import ProgressBar
from harness.reports.summary import problems_text, run_summary
from harness.safetext import printable
from harness.suite import golden as golden_files
from harness.suite.cases import Case, Suite, open_suites, writable_root


@click.group(cls=ConformGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="conform", prog_name="conform")
def main() -> None:
    """Golden-file conformance harness for assemblers of llama-server chat streams."""
    keep_freed_memory()  # this process's requests to workers are as large as their payloads


@main.command("run")
@click.argument("target", type=opt.TargetType(), required=False)
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
    "--validate-protocol",
    is_flag=True,
    help="Check every reply against the protocol's JSON Schemas (needs jsonschema).",
)
@opt.workers
@opt.selection
@opt.modes
@opt.gating
@click.option(
    "--shard",
    metavar="K/N",
    help="Run only the K-th of N shards of the cases (each case's shard comes from a hash of its "
    "id), for a CI job per shard; 'conform matrix --from' merges their --json reports.",
)
@opt.verbosity
@click.option(
    "--problems",
    "problems_only",
    is_flag=True,
    help="Print only the distinct problems, each as a bug report to paste upstream (what "
    "happens, what the spec says, the minimal stream, the command that reproduces it).",
)
@opt.reports
def run_command(
    target: str | None,
    exec_command: str | None,
    in_process: bool,
    validate_protocol: bool,
    suite_dirs: tuple[Path, ...],
    patterns: tuple[str, ...],
    rules: tuple[str, ...],
    exclude: tuple[str, ...],
    modes: tuple[str, ...],
    shard: str | None,
    verbose: bool,
    quiet: bool,
    problems_only: bool,
    junit: Path | None,
    json_path: Path | None,
    xfail_file: Path | None,
    write_xfail: Path | None,
    badge: Path | None,
    **given: Any,
) -> None:
    """Run TARGET (module:Class, module:factory or file.py:Class) over the suite's cases.

    TARGET runs in a worker process (python -m harness.adapter TARGET), so a hang or crash fails
    only its case; --exec runs a program in any language that speaks the same protocol.

    Exits 0 when every case passes in every mode (or fails as --xfail expects), 1 on any
    mismatch, crash, timeout or unexpected pass, 2 on a usage or setup error, 3 on an error
    inside conform itself (a bug to report; the reports asked for still hold the cases run),
    128+N when stopped by signal N (the reports hold the cases finished, marked partial).
    """
    options = RunOptions(
        target=target,
        exec_command=exec_command,
        in_process=in_process,
        validate_protocol=validate_protocol,
        modes=modes,
        xfail_file=None if xfail_file is None else xfail_file.absolute(),
        **given,
    )
    selection = Selection(
        tuple(suite_path(d) for d in suite_dirs),
        patterns,
        rules,
        exclude,
        None if shard is None else parse_shard(shard),
    )
    outputs = Outputs(json_path, junit, write_xfail, badge).absolute()
    plan = prepare(selection, options.modes)
    inputs = {} if options.xfail_file is None else {"--xfail": options.xfail_file}
    check_outputs(outputs, inputs=inputs, plan=plan)
    expected = plan.expected_failures(options.xfail_file)
    bar = ProgressBar.for_terminal(plan.runs, quiet=quiet)
    with Interruption(in_process=in_process) as stop:
        with bar:
            record = run_target(options, plan, expected=expected, stop=stop, progress=bar.advance)
        if problems_only:
            shown = problems_text(record.report)
        else:
            shown = run_summary(record.report, verbose=verbose, quiet=quiet, colour=bar.colour)
        for line in shown:
            click.echo(line)
        if record.signum is not None:
            click.echo(
                f"interrupted ({stop.name}): {len(record.results)} of {plan.runs} runs finished; "
                "the reports hold those, marked partial"
            )
        write_outputs(
            record,
            outputs,
            plan=plan,
            note=click.echo,
            warn=lambda text: click.echo(f"warning: {text}", err=True),
        )
    if record.failure is not None:
        raise record.failure
    if record.exit_code == 1 and write_xfail is not None:
        return
    if record.exit_code:
        sys.exit(record.exit_code)


@main.command("list")
@opt.selection
@click.option("--ids", "ids_only", is_flag=True, help="Print the case ids alone.")
def list_command(
    suite_dirs: tuple[Path, ...],
    patterns: tuple[str, ...],
    rules: tuple[str, ...],
    exclude: tuple[str, ...],
    ids_only: bool,
) -> None:
    """List the suites' cases, one a line: its id and what it pins (R1..R9, I1..I6, SSE).

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
        _warn_orphans(suite, patterns)


def _pins_or_nothing(case: Case) -> tuple[str, ...]:
    try:
        return case.pins
    except ConformError as exc:  # listing never fails for one broken recording: run names it
        click.echo(f"warning: {printable(str(exc))}", err=True)
        return ()


def _warn_orphans(suite: Suite, patterns: tuple[str, ...]) -> None:
    for path in suite.orphaned_golden(patterns):
        click.echo(f"warning: {printable(str(path))}: a golden file without a recording", err=True)


@main.group("golden")
def golden_group() -> None:
    """Regenerate or check the golden files (they are generated, never edited by hand)."""


_golden_pattern_option = click.option(
    "-k",
    "patterns",
    multiple=True,
    metavar="PATTERN",
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
    _warn_orphans(suite, patterns)
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


main.add_command(record_command)
main.add_command(fuzz_command)


@main.command("matrix")
@click.argument("specs", nargs=-1, metavar="[LABEL=]TARGET...")
@click.option(
    "--exec",
    "commands",
    multiple=True,
    metavar="[LABEL=]'COMMAND'",
    help="A program speaking the line protocol, as a column; repeatable.",
)
@click.option(
    "--xfail",
    "xfails",
    multiple=True,
    metavar="LABEL=FILE",
    help="The expected failures of the target LABEL; repeatable.",
)
@click.option(
    "--from",
    "reports",
    multiple=True,
    metavar="[LABEL=]REPORT.json",
    help="A column from a 'conform run --json' report; shards of one run (same "
    "label, by default the same target) merge; repeatable.",
)
@opt.selection
@opt.modes
@opt.gating
@opt.workers
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but the table.")
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Write the matrix as a self-contained HTML page.",
)
@click.option(
    "--markdown",
    "md_path",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Write the per-rule scores as a Markdown table.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Write the matrix as JSON (docs/matrix.md).",
)
@click.option(
    "--baseline",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="A matrix JSON of an earlier run: mark the cells that changed since.",
)
def matrix_command(
    specs: tuple[str, ...],
    commands: tuple[str, ...],
    xfails: tuple[str, ...],
    reports: tuple[str, ...],
    suite_dirs: tuple[Path, ...],
    patterns: tuple[str, ...],
    rules: tuple[str, ...],
    exclude: tuple[str, ...],
    modes: tuple[str, ...],
    quiet: bool,
    html_path: Path | None,
    md_path: Path | None,
    json_path: Path | None,
    baseline: Path | None,
    **given: Any,
) -> None:
    """Run several targets over the same cases and show them side by side (docs/matrix.md).

    Each target runs exactly as 'conform run' runs it, with the same selection, modes and
    expected-failure rules. While fewer workers run than there are cores, a target adds one
    beyond -j (the results are the same). Exits 0 unless a target fails outside its own --xfail,
    did not run, or the run is partial.
    """
    targets = targets_of(specs, commands, xfails, {"modes": modes, **given})
    columns = columns_from_reports(reports)
    if not targets and not columns:
        raise click.UsageError("give at least one TARGET, --exec or --from")
    old = None if baseline is None else load_matrix(baseline)
    stop = Interruption()
    written = {"--json": json_path, "--markdown": md_path, "--html": html_path}
    read = [p for p in (baseline, *(t.xfail for t in targets)) if p is not None]
    check_written(written, read)
    if targets:
        selection = Selection(tuple(suite_path(d) for d in suite_dirs), patterns, rules, exclude)
        plan = prepare(selection, modes)
        check_written(written, [f for s in plan.suites for f in (s.recordings_dir, s.golden_dir)])
        for target in targets:  # a wrong --xfail file is the user's mistake: say so now
            plan.expected_failures(target.xfail)
        echo = functools.partial(click.echo, err=True)
        with stop:
            runs = run_targets(
                targets,
                plan,
                stop=stop,
                done=None if quiet else lambda run: echo(column_line(column_of(run))),
            )
        columns += [column_of(run) for run in runs]
    data = matrix(columns, baseline=old, baseline_path=str(baseline) if baseline else None)
    for path, text in ((json_path, matrix_text), (md_path, markdown), (html_path, matrix_page)):
        if path is not None:
            write_report(path, text(data))
    click.echo(markdown(data), nl=False)
    if stop.stopped:
        sys.exit(stop.exit_code)
    if not data["ok"]:
        sys.exit(1)
