"""`conform matrix`: several targets over the same cases, side by side.

The targets and `--from` columns come from the command line (`harness.cli.matrix_targets`), run
through `harness.pipeline.run_targets`, and are drawn as JSON, Markdown and HTML by
`harness.reports.matrix_table` and `harness.reports.matrix_page` (docs/matrix.md).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import click

from harness.cli import options as opt
from harness.cli.matrix_targets import column_of, columns_from_reports, comparable, targets_of
from harness.files import check_outputs as check_written
from harness.files import write_report
from harness.pipeline import Interruption, Selection, prepare, run_targets
from harness.pipeline.selection import suite_path
from harness.reports.matrix_page import matrix_page
from harness.reports.matrix_table import column_line, load_matrix, markdown, matrix, matrix_text


@click.command("matrix")
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
@opt.file_option("--html", "html_path", "Write the matrix as a self-contained HTML page.")
@opt.file_option("--markdown", "md_path", "Write the per-rule scores as a Markdown table.")
@opt.file_option("--json", "json_path", "Write the matrix as JSON (docs/matrix.md).")
@opt.file_option(
    "--baseline", "baseline", "A matrix JSON of an earlier run: mark the cells that changed since."
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
    classes: tuple[str, ...],
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
    columns = columns_from_reports(reports, classes=classes)
    if not targets and not columns:
        raise click.UsageError("give at least one TARGET, --exec or --from")
    comparable(columns, live=(given["seed"], modes) if targets else None)  # before any run
    old = None if baseline is None else load_matrix(baseline)
    stop = Interruption()
    written = {"--json": json_path, "--markdown": md_path, "--html": html_path}
    read = [p for p in (baseline, *(t.xfail for t in targets)) if p is not None]
    check_written(written, read)
    if targets:
        selection = Selection(
            tuple(suite_path(d) for d in suite_dirs), patterns, rules, exclude, classes=classes
        )
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
    for warning in comparable(columns):
        click.echo(f"warning: {warning}", err=True)
    data = matrix(columns, baseline=old, baseline_path=str(baseline) if baseline else None)
    for path, text in ((json_path, matrix_text), (md_path, markdown), (html_path, matrix_page)):
        if path is not None:
            write_report(path, text(data))
    click.echo(markdown(data), nl=False)
    if stop.stopped:
        sys.exit(stop.exit_code)
    if not data["ok"]:
        sys.exit(1)
