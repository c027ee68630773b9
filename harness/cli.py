"""The `conform` command: each subcommand parses, calls one library function, renders, returns.

Exit codes: 0 everything passed, 1 a conformance failure or crash (or golden drift for `golden
check`), 2 a usage or setup error, printed as one `Error:` line with a hint (here, and only here),
3 an error inside conform itself (a bug in conform, not in the target): its traceback and what to
report; `conform run` still writes the reports of the cases run before it.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import click

from harness.capture.command import record as record_command
from harness.check.modes import DEFAULT_SEED, MODES
from harness.check.options import RunOptions
from harness.check.runner import CaseResult, in_order
from harness.check.targets import in_shard, parse_shard, run_target
from harness.check.xfail import XfailList, write_baseline
from harness.drive.inprocess import split_spec
from harness.drive.process import (
    DEFAULT_TIMEOUT,
    allow_programs,
    stop_all_programs,
)
from harness.errors import ConformError
from harness.files import write_report
from harness.fuzz import fuzz_command
from harness.matrix import columns_from_reports, run_matrix, targets_of
from harness.reports.machine import (
    RunInfo,
    conform_version,
    failed,
    github_annotations,
    on_github_actions,
    write_github_summary,
    write_json,
    write_junit,
)
from harness.reports.matrix import column_line, load_matrix, markdown, matrix, matrix_text
from harness.reports.page import matrix_page
from harness.reports.progress import ProgressBar, paint_line, wants_colour
from harness.reports.text import render, rules_line, totals_line
from harness.safetext import printable, shorten
from harness.suite import golden as golden_files
from harness.suite.cases import SHIPPED, Case, Suite, cases_of, open_suites, writable_root
from harness.suite.recording import PIN_TAGS
from reference.choices import OUTCOMES

#: The exit status of an error inside conform itself.
INTERNAL_ERROR = 3


class _SetupFailure(click.ClickException):
    exit_code = 2


class _InternalError(click.ClickException):
    """An exception conform did not expect: a bug in conform, reported as such (exit 3)."""

    exit_code = INTERNAL_ERROR

    def __init__(self, exc: BaseException) -> None:
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.exc = exc

    def show(self, file: Any = None) -> None:
        trace = "".join(traceback.format_exception(self.exc))
        click.echo(printable(trace.rstrip(), keep_lines=True), err=True)
        click.echo(
            f"Internal error: conform {conform_version()} failed: "
            f"{printable(shorten(self.message, 500))}\n"
            "This is a bug in conform, not a verdict on the target. Please report it to conform's "
            "maintainers with the command line, the traceback above and, if you can, the "
            "target's reply that caused it. Reports already asked for hold the cases run so far.",
            err=True,
        )


class _ConformGroup(click.Group):
    """Turns the harness's own errors into one `Error:` line and exit code 2, and anything
    unexpected into the internal-error report and exit code 3."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConformError as exc:
            raise _SetupFailure(str(exc)) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            raise _InternalError(exc) from None


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
    help="A folder with recordings/ and golden/. Default: the suite shipped with conform "
    "(written only in a source checkout, never inside an installed package).",
)
_suites_option = click.option(
    "--suite",
    "suite_dirs",
    type=click.Path(path_type=Path, file_okay=False),
    multiple=True,
    metavar="DIR",
    help="A folder with recordings/ and golden/; repeatable, to run several suites together "
    "(':shipped' names the suite shipped with conform; case ids must not clash). "
    "Default: the shipped suite.",
)
_pattern_option = click.option(
    "-k",
    "patterns",
    multiple=True,
    metavar="PATTERN",
    help="Only cases whose whole id matches this glob, or that lie in this folder "
    "('llama-server/tool_call' is that case alone; 'llama-server/tool_*', 'synthetic'); "
    "repeatable. --xfail lines match case ids the same way.",
)


class PinTag(click.ParamType[str]):
    """A rule or implementation-defined point a case may pin: R1..R9, I1..I4, SSE."""

    name = "rule"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        tag = str(value).strip().upper()
        if tag not in PIN_TAGS:
            self.fail(f"{value!r} is not one of {' '.join(PIN_TAGS)}", param, ctx)
        return tag


class PointChoice(click.ParamType[tuple[str, str]]):
    """`POINT=OUTCOME`, an implementation-defined point and the outcome to require there."""

    name = "choice"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, str]:
        point, _, outcome = str(value).partition("=")
        point = point.strip().upper()
        allowed = OUTCOMES.get(point)
        if allowed is None or outcome.strip() not in allowed:
            options = "; ".join(f"{p}={'|'.join(v)}" for p, v in OUTCOMES.items())
            self.fail(f"{value!r}: give POINT=OUTCOME, one of {options}", param, ctx)
        return point, outcome.strip()


_rule_option = click.option(
    "--rule",
    "rules",
    type=PinTag(),
    multiple=True,
    metavar="TAG",
    help="Only cases that pin this rule or point (R1..R9, I1..I4, SSE); repeatable.",
)
_exclude_option = click.option(
    "--exclude",
    "exclude",
    multiple=True,
    metavar="PATTERN",
    help="Leave out cases whose id matches this pattern (as -k matches); repeatable.",
)


def _cases(
    suite: Suite | list[Suite],
    patterns: tuple[str, ...],
    rules: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
) -> list[Case]:
    suites = suite if isinstance(suite, list) else [suite]
    cases = cases_of(suites, patterns, rules=rules, exclude=exclude)
    if not cases:
        what = " ".join([*(f"matching {p}" for p in patterns), *(f"pinning {r}" for r in rules)])
        what = f" {what}" if what else ""
        where = ", ".join(str(s.root) for s in suites)
        raise ConformError(f"no cases{what} in {where}", hint="'conform list' shows the cases")
    return cases


class _Interruption:
    """Ctrl-C and SIGTERM during a run: stop it cleanly, whatever the target is doing.

    A signal sets `cancel` (no further case or mode starts) and kills every program the run
    started, so the calls under way return at once; the run then writes the reports of the runs
    that finished and exits 128 + the signal's number. A second signal changes nothing: there is
    nothing left to wait for. In-process, where nothing can be killed, the first signal raises
    KeyboardInterrupt in the target, which the run takes the same way.
    """

    def __init__(self, *, in_process: bool) -> None:
        self.cancel = threading.Event()
        self.signum: int | None = None
        self._in_process = in_process
        self._raising = True
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Interruption:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for signum, handler in self._previous.items():
            # Exiting 130 now: a further Ctrl-C must not turn that into death by SIGINT (Python
            # puts back the default handler while it shuts down, but keeps "ignore").
            signal.signal(signum, signal.SIG_IGN if self.cancel.is_set() else handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.interrupted(signum)
        if self._raising and self._in_process:
            self._raising = False  # once: a second signal must not land in the clean-up
            raise KeyboardInterrupt

    def interrupted(self, signum: int) -> None:
        """Stop the run: no new case, no program left running."""
        if self.signum is None:
            self.signum = signum
        self.cancel.set()
        stop_all_programs()

    def stop_raising(self) -> None:
        """From here on (writing reports) a signal only kills programs, as a first one did."""
        self._raising = False

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)

    @property
    def name(self) -> str:
        return "SIGTERM" if self.signum == signal.SIGTERM else "Ctrl-C"


def _write_reports(
    results: list[CaseResult],
    info: RunInfo,
    *,
    junit: Path | None,
    json_path: Path | None,
    write_xfail: Path | None,
    workspace: Path,
    summary: Path | None,
) -> None:
    """Write every report asked for; one that fails does not keep the others from being written
    (the first such error is raised at the end)."""
    writers: list[Callable[[], None]] = []
    if write_xfail is not None and info.interrupted:
        click.echo(f"not written: {write_xfail} (an interrupted run's baseline would be partial)")
    elif write_xfail is not None and info.stopped is None:  # a partial run is no baseline

        def baseline() -> None:
            written = write_baseline(write_xfail, results, target=info.target, when=info.started)
            click.echo(f"wrote {written} expected failure(s), one line a case, to {write_xfail}")

        writers.append(baseline)
    if junit is not None:
        writers.append(lambda: write_junit(junit, results, info))
    if json_path is not None:
        writers.append(lambda: write_json(json_path, results, info))
    if on_github_actions():

        def github() -> None:
            for command in github_annotations(results, info, workspace=workspace):
                click.echo(command)
            if summary is not None:
                try:
                    write_github_summary(results, info, path=summary)
                except ConformError as exc:  # the job's page, not the run's outcome
                    click.echo(f"warning: no job summary: {exc}", err=True)

        writers.append(github)
    first: Exception | None = None
    for write in writers:
        try:
            write()
        except Exception as exc:
            first = first or exc
    if first is not None:
        raise first


def _absolute(path: Path | None) -> Path | None:
    """`path` made absolute now: an --in-process target may change directory during the run."""
    return None if path is None else Path(os.path.abspath(path))


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
@_suites_option
@click.option(
    "--mode",
    "modes",
    type=click.Choice(MODES),
    multiple=True,
    help="Input mode; repeatable. Default: every mode.",
)
@_pattern_option
@_rule_option
@_exclude_option
@click.option(
    "--strict",
    is_flag=True,
    help="Gate on the reference's own outcome at every implementation-defined point (I1..I4) "
    "instead of accepting any allowed outcome.",
)
@click.option(
    "--choose",
    "chosen_points",
    type=PointChoice(),
    multiple=True,
    metavar="POINT=OUTCOME",
    help="Require this outcome at one implementation-defined point (e.g. I3=ignore); repeatable.",
)
@click.option(
    "--seed", type=int, default=DEFAULT_SEED, show_default=True, help="Seed of mutating modes."
)
@click.option(
    "--shard",
    metavar="K/N",
    help="Run only the K-th of N shards of the cases (each case's shard comes from a hash of its "
    "id), for a CI job per shard; 'conform matrix --from' merges their --json reports.",
)
@click.option("-v", "--verbose", is_flag=True, help="List passing cases too.")
@click.option("-q", "--quiet", is_flag=True, help="Print the totals only (no progress, no cases).")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Run cases in N worker processes at once; results are the same whatever N is.",
)
@click.option(
    "--junit-xml",
    "junit",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Write a JUnit XML report (one testcase per case and mode) for CI test reporters.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Write the JSON report: each case's status, time and mismatches (docs/json-report.md).",
)
@click.option(
    "--xfail",
    "xfail_file",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Expected failures, lines 'CASE_GLOB [MODE_GLOBS]  # reason'; a pass among them fails.",
)
@click.option(
    "--write-xfail",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Write this run's failures to FILE as the expected-failures baseline, and exit 0.",
)
def run_command(
    target: str | None,
    exec_command: str | None,
    in_process: bool,
    timeout: float,
    validate_protocol: bool,
    suite_dirs: tuple[Path, ...],
    modes: tuple[str, ...],
    patterns: tuple[str, ...],
    rules: tuple[str, ...],
    exclude: tuple[str, ...],
    strict: bool,
    chosen_points: tuple[tuple[str, str], ...],
    seed: int,
    shard: str | None,
    verbose: bool,
    quiet: bool,
    jobs: int,
    junit: Path | None,
    json_path: Path | None,
    xfail_file: Path | None,
    write_xfail: Path | None,
) -> None:
    """Run TARGET (module:Class, module:factory or file.py:Class) over the suite's cases.

    TARGET runs in a worker process (python -m harness.adapter TARGET), so a hang or crash fails
    only its case; --exec runs a program in any language that speaks the same protocol.

    Exits 0 when every case passes in every mode (or fails as --xfail expects), 1 on any
    mismatch, crash, timeout or unexpected pass, 2 on a usage or setup error, 3 on an error
    inside conform itself (a bug to report; the reports asked for still hold the cases run).
    """
    options = RunOptions(
        target=target,
        exec_command=exec_command,
        in_process=in_process,
        timeout=timeout,
        validate_protocol=validate_protocol,
        jobs=jobs,
        suite_dirs=tuple(d if str(d) == SHIPPED else Path(os.path.abspath(d)) for d in suite_dirs),
        modes=modes,
        seed=seed,
        xfail_file=_absolute(xfail_file),
        strict=strict,
        chosen_points=chosen_points,
    )
    junit, json_path, write_xfail = _absolute(junit), _absolute(json_path), _absolute(write_xfail)
    workspace = Path(os.path.abspath(os.environ.get("GITHUB_WORKSPACE") or os.curdir))
    summary = (
        _absolute(Path(os.environ["GITHUB_STEP_SUMMARY"]))
        if os.environ.get("GITHUB_STEP_SUMMARY")
        else None
    )
    part = None if shard is None else parse_shard(shard)
    suites = open_suites(options.suite_dirs)
    cases = in_shard(_cases(suites, patterns, rules, exclude), part)
    for suite in suites:
        suite.require_recordings(patterns)
    chosen = options.chosen_modes
    require = options.required_choices()
    expected = None if options.xfail_file is None else XfailList.load(options.xfail_file)
    if expected is not None:
        expected.check([case.case_id for case in cases_of(suites)], MODES)
    make = options.start_driver
    began, started = datetime.now(UTC), time.perf_counter()
    results: list[CaseResult] = []
    bar = ProgressBar(
        len(cases) * len(chosen),
        stream=sys.stderr,
        enabled=not quiet and sys.stderr.isatty(),
        colour=wants_colour(sys.stderr),
    )
    allow_programs()  # a run earlier in this process (tests) may have been stopped
    failure: Exception | None = None  # an error inside conform: report what ran, then exit 3
    with _Interruption(in_process=in_process) as interruption:
        try:
            with bar:
                for result in run_target(
                    make,
                    cases,
                    modes=chosen,
                    seed=seed,
                    jobs=jobs,
                    cancel=interruption.cancel,
                    require=require,
                    expected=expected,
                ):
                    results.append(result)
                    bar.advance(result)
        except KeyboardInterrupt:  # in-process
            interruption.interrupted(interruption.signum or signal.SIGINT)
        except ConformError:
            if not interruption.cancel.is_set():
                raise
        except Exception as exc:
            failure = exc
        finally:
            interruption.stop_raising()
            if interruption.cancel.is_set():
                stop_all_programs()
        results = in_order(results, cases, chosen)
        label = options.label
        duration = time.perf_counter() - started
        stopped = interruption.cancel.is_set()
        why = None if failure is None else f"{type(failure).__name__}: {failure}"
        roots = tuple(s.root for s in suites)
        info = RunInfo(
            label,
            roots[0],
            len(cases),
            chosen,
            seed,
            duration,
            began,
            stopped,
            why,
            roots,
            kind="python" if target is not None else "exec",
            shard=part,
        )
        if not quiet:
            colour = wants_colour(sys.stdout)
            for line in render(results, verbose=verbose):
                click.echo(paint_line(line, colour=colour))
        if stopped:
            click.echo(
                f"interrupted ({interruption.name}): {len(results)} of "
                f"{len(cases) * len(chosen)} runs finished; the reports hold those"
            )
        if not quiet and any(r.pins for r in results):
            click.echo(rules_line(results))
        click.echo(totals_line(results, info.duration))
        _write_reports(
            results,
            info,
            junit=junit,
            json_path=json_path,
            write_xfail=write_xfail,
            workspace=workspace,
            summary=summary,
        )
    if failure is not None:
        raise failure
    if stopped:
        sys.exit(interruption.exit_code)
    if failed(results) and write_xfail is None:
        sys.exit(1)


@main.command("list")
@_suites_option
@_pattern_option
@_rule_option
@_exclude_option
@click.option("--ids", "ids_only", is_flag=True, help="Print the case ids alone.")
def list_command(
    suite_dirs: tuple[Path, ...],
    patterns: tuple[str, ...],
    rules: tuple[str, ...],
    exclude: tuple[str, ...],
    ids_only: bool,
) -> None:
    """List the suites' cases, one a line: its id and what it pins (R1..R9, I1..I4, SSE).

    Golden files without a recording are named on stderr.
    """
    suites = open_suites(suite_dirs)
    cases = _cases(suites, patterns, rules, exclude)
    width = max(len(case.case_id) for case in cases)
    for case in cases:
        pins = () if ids_only else _pins_or_nothing(case)
        click.echo(f"{case.case_id:<{width}}  {' '.join(pins)}" if pins else case.case_id)
    for suite in suites:
        _warn_orphans(suite, patterns)


def _pins_or_nothing(case: Case) -> tuple[str, ...]:
    try:
        return case.pins
    except ConformError as exc:  # listing never fails for one broken recording: run names it
        click.echo(f"warning: {exc}", err=True)
        return ()


def _warn_orphans(suite: Suite, patterns: tuple[str, ...]) -> None:
    for path in suite.orphaned_golden(patterns):
        click.echo(f"warning: {path}: a golden file without a recording", err=True)


@main.group("golden")
def golden_group() -> None:
    """Regenerate or check the golden files (they are generated, never edited by hand)."""


@golden_group.command("update")
@_suite_option
@_pattern_option
def golden_update(suite_dir: Path | None, patterns: tuple[str, ...]) -> None:
    """Regenerate golden files from the reference, atomically, listing what changed.

    Writes into --suite DIR, or into the shipped suite of a source checkout; never into an
    installed package.
    """
    suite = Suite.open(writable_root(suite_dir, command="golden update"))
    changes = golden_files.update(_cases(suite, patterns))
    for change in changes:
        if change.status != "unchanged":
            click.echo(f"{change.status}: {change.path}")
    _warn_orphans(suite, patterns)
    changed = sum(c.status != "unchanged" for c in changes)
    click.echo(f"{changed} of {len(changes)} golden files written")


@golden_group.command("check")
@_suite_option
@_pattern_option
def golden_check(suite_dir: Path | None, patterns: tuple[str, ...]) -> None:
    """Exit 1 when a golden file is missing, drifted from the reference, or orphaned."""
    suite = Suite.open(suite_dir)
    cases = _cases(suite, patterns)
    problems = golden_files.check(suite, cases, patterns)
    for problem in problems:
        click.echo(f"{problem.status}: {problem.path}")
    if problems:
        click.echo(f"{len(problems)} problem(s); 'conform golden update' regenerates, then review")
        sys.exit(1)
    click.echo(f"{len(cases)} golden files match the reference")


main.add_command(record_command)
main.add_command(fuzz_command)


def _write_text(path: Path | None, text: str) -> None:
    if path is not None:
        write_report(path, text)


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
@_suites_option
@click.option(
    "--mode",
    "modes",
    type=click.Choice(MODES),
    multiple=True,
    help="Input mode; repeatable. Default: every mode.",
)
@_pattern_option
@_rule_option
@_exclude_option
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Worker processes per target (every target runs at once).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Time allowed for each case.",
)
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
    modes: tuple[str, ...],
    patterns: tuple[str, ...],
    rules: tuple[str, ...],
    exclude: tuple[str, ...],
    seed: int,
    jobs: int,
    timeout: float,
    html_path: Path | None,
    md_path: Path | None,
    json_path: Path | None,
    baseline: Path | None,
) -> None:
    """Run several targets over the same cases and show them side by side (docs/matrix.md).

    Exits 0 unless a target fails outside its own --xfail (or did not run).
    """
    targets = targets_of(specs, commands, xfails)
    columns = columns_from_reports(reports)
    if not targets and not columns:
        raise click.UsageError("give at least one TARGET, --exec or --from")
    old = None if baseline is None else load_matrix(baseline)
    if targets:
        suites = open_suites(tuple(_suite_path(d) for d in suite_dirs))
        cases = _cases(suites, patterns, rules, exclude)
        echo = functools.partial(click.echo, err=True)
        allow_programs()
        with _Interruption(in_process=False) as interruption:
            columns += run_matrix(
                targets,
                cases,
                roots=[s.root for s in suites],
                modes=modes or MODES,
                seed=seed,
                jobs=jobs,
                timeout=timeout,
                cancel=interruption.cancel,
                done=lambda c: echo(column_line(c)),
                all_ids=[case.case_id for case in cases_of(suites)],
            )
    data = matrix(columns, baseline=old, baseline_path=str(baseline) if baseline else None)
    _write_text(json_path, matrix_text(data))
    _write_text(md_path, markdown(data))
    _write_text(html_path, matrix_page(data))
    click.echo(markdown(data), nl=False)
    if targets and interruption.cancel.is_set():
        sys.exit(interruption.exit_code)
    if not data["ok"]:
        sys.exit(1)


def _suite_path(folder: Path) -> Path:
    return folder if str(folder) == SHIPPED else Path(os.path.abspath(folder))
