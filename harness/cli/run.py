"""`conform run`: one target over the suite's cases, in every mode asked for.

The command builds `RunOptions`, a `Selection` and the `Outputs` from its options, calls
`harness.pipeline.run_target` once, prints the summary (or the distinct problems) and writes the
reports asked for; how it ends on an error is `harness.cli.exits`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from harness.check.options import RunOptions
from harness.cli import options as opt
from harness.files import through_stdout
from harness.pipeline import (
    Interruption,
    Outputs,
    Selection,
    check_outputs,
    parse_shard,
    prepare,
    run_target,
    write_outputs,
)
from harness.pipeline.selection import suite_path
from harness.reports.progress import ProgressBar
from harness.reports.summary import problems_text, run_summary


@click.command("run")
@click.argument("target", type=opt.TargetType(), required=False)
@click.option(
    "--exec",
    "exec_command",
    multiple=True,
    callback=opt.given_once,  # a second --exec would run instead of the first, without a word
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
    classes: tuple[str, ...],
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
    badge_label: str,
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
        classes,
    )
    if not badge_label.strip():
        raise click.BadParameter("an empty label: give some text", param_hint="'--badge-label'")
    outputs = Outputs(json_path, junit, write_xfail, badge, badge_label=badge_label).absolute()
    plan = prepare(selection, options.modes)
    inputs = {} if options.xfail_file is None else {"--xfail": options.xfail_file}
    check_outputs(outputs, inputs=inputs, plan=plan)
    expected = plan.expected_failures(options.xfail_file)
    bar = ProgressBar.for_terminal(plan.runs, quiet=quiet)
    with Interruption(in_process=in_process) as stop:
        with bar:
            record = run_target(options, plan, expected=expected, stop=stop, progress=bar.advance)
        # The reports first, then what is printed: stdout may fail (a full device, a closed
        # pipe), and a report once written is not lost to that. A report that goes to stdout
        # itself (`--json /dev/stdout`) comes after the summary, as it always did.
        now, after = outputs.split(through_stdout)
        notes: list[str] = []
        failed: Exception | None = None
        try:
            write_outputs(record, now, plan=plan, note=notes.append, warn=_warn)
        except Exception as exc:
            failed = exc
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
        if record.limit is not None:
            click.echo(
                f"stopped: {record.limit}; {len(record.results)} of {plan.runs} runs finished, "
                "the reports hold those, marked partial"
            )
        for note in notes:
            click.echo(note)
        if failed is not None:
            raise failed
        write_outputs(record, after, plan=plan, note=click.echo, warn=_warn, ci=False)
    if record.failure is not None:
        raise record.failure
    if record.exit_code == 1 and write_xfail is not None:
        return
    if record.exit_code:
        sys.exit(record.exit_code)


def _warn(text: str) -> None:
    click.echo(f"warning: {text}", err=True)
