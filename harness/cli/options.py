"""The `conform` command's options, declared once and shared by the commands that take them.

Each value is checked by a `click.ParamType` (a bad one is a usage error, exit 2, one line), and
each group of options is one decorator, so `run`, `matrix` and `fuzz` spell `--mode`, `--seed`,
`-j`, `--timeout`, the suite options and the report options the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from harness.check.modes import DEFAULT_SEED, MODES
from harness.check.results import LEVELS
from harness.drive.inprocess import split_spec
from harness.drive.process import DEFAULT_TIMEOUT
from harness.seconds import Seconds
from harness.suite.classes import CLASSES
from harness.suite.recording import PIN_TAGS, id_of_name
from reference.choices import OUTCOMES

F = TypeVar("F", bound=Callable[..., Any])


class TargetType(click.ParamType[str]):
    """`module:attribute` or `path/to/file.py:attribute` (imported when the run starts)."""

    name = "TARGET"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            split_spec(str(value))
        except ValueError as exc:
            self.fail(f"{value!r}: {exc}", param, ctx)
        return str(value)


class PinTag(click.ParamType[str]):
    """A rule or implementation-defined point a case may pin: R1..R9, I1..I9, SSE."""

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


def _stack(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(function: F) -> F:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply


class FileName(click.Path):
    """A file's name, given once: not empty, not a folder (`dir/`, or one that exists), so that
    a report is never written under another name than the one given (`dir/` was once written as
    `dir`, and `''` as the current folder after the whole run)."""

    def __init__(self) -> None:
        super().__init__(path_type=Path, dir_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            if not value:
                self.fail("an empty name: give a file name", param, ctx)
            if value.endswith(("/", "/.", "/..")) or value in (".", ".."):
                self.fail(f"{value!r} names a folder: give a file name", param, ctx)
        return super().convert(value, param, ctx)


def given_once(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """The value of an option that holds one file, declared `multiple` so that naming it twice
    is refused (click would keep the last and drop the first without a word)."""
    if not isinstance(value, tuple):
        return value
    if len(value) > 1:
        shown = " and ".join(repr(str(v)) for v in value)
        raise click.BadParameter(f"given {len(value)} times ({shown}): give it once", ctx, param)
    return value[0] if value else None


def file_option(flag: str, dest: str, text: str) -> Callable[[F], F]:
    """An option that names one file (`FileName`), refused when given twice."""
    return click.option(
        flag, dest, type=FileName(), multiple=True, callback=given_once, metavar="FILE", help=text
    )


_file = file_option


def case_patterns(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    """`-k` and `--exclude` patterns read as case ids are: their bytes as UTF-8, whatever the
    locale decoded the command line as (`id_of_name`)."""
    return tuple(id_of_name(pattern) for pattern in value)


#: `--suite DIR` once (commands that write into one suite).
one_suite = click.option(
    "--suite",
    "suite_dir",
    type=click.Path(path_type=Path, file_okay=False),
    multiple=True,
    callback=given_once,  # a second --suite would be written into instead, without a word
    help="A folder with recordings/ and golden/. Default: the suite shipped with conform "
    "(written only in a source checkout, never inside an installed package).",
)

#: `--suite` (repeatable), `-k`, `--rule`, `--exclude`: which cases.
selection = _stack(
    click.option(
        "--suite",
        "suite_dirs",
        type=click.Path(path_type=Path, file_okay=False),
        multiple=True,
        metavar="DIR",
        help="A folder with recordings/ and golden/; repeatable, to run several suites together "
        "(':shipped' names the suite shipped with conform; case ids must not clash). "
        "Default: the shipped suite.",
    ),
    click.option(
        "-k",
        "patterns",
        multiple=True,
        metavar="PATTERN",
        callback=case_patterns,
        help="Only cases whose whole id matches this glob, or that lie in this folder "
        "('llama-server/tool_call' is that case alone; 'llama-server/tool_*', 'synthetic'); "
        "repeatable. --xfail lines match case ids the same way.",
    ),
    click.option(
        "--rule",
        "rules",
        type=PinTag(),
        multiple=True,
        metavar="TAG",
        help=f"Only cases that pin this rule or point ({', '.join(PIN_TAGS)}); repeatable.",
    ),
    click.option(
        "--exclude",
        "exclude",
        multiple=True,
        metavar="PATTERN",
        callback=case_patterns,
        help="Leave out cases whose id matches this pattern (as -k matches); repeatable.",
    ),
    click.option(
        "--class",
        "classes",
        type=click.Choice([str(c) for c in CLASSES]),
        multiple=True,
        help="Only cases of this class of input, computed from their golden files: 'valid' "
        "(streams a server may send), 'invalid' (input the rules refuse) or "
        "'implementation-defined'; repeatable.",
    ),
)

#: `--mode` (repeatable) and `--seed`: how each case's input is pushed.
modes = _stack(
    click.option(
        "--mode",
        "modes",
        type=click.Choice(MODES),
        multiple=True,
        help="Input mode; repeatable (a mode named twice runs once). Default: every mode.",
    ),
    click.option(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        show_default=True,
        help="Seed of the mutating modes: the same seed pushes the same bytes.",
    ),
)

#: `--strict`, `--choose`, `--level`: what the run gates on.
gating = _stack(
    click.option(
        "--strict",
        is_flag=True,
        help="Gate on the reference's own outcome at every implementation-defined point "
        f"({', '.join(OUTCOMES)}) instead of accepting any allowed outcome.",
    ),
    click.option(
        "--choose",
        "chosen_points",
        type=PointChoice(),
        multiple=True,
        metavar="POINT=OUTCOME",
        help="Require this outcome at one implementation-defined point (e.g. I3=ignore); "
        "repeatable.",
    ),
    click.option(
        "--level",
        type=click.Choice(LEVELS),
        default=LEVELS[0],
        show_default=True,
        help="The level of conformance judged: 'full' compares every event and state reader; "
        "'completion' only whether each push failed (and how) and the finish, which every "
        "client has whatever its event model.",
    ),
)

#: `-j` and `--timeout`: the worker processes.
workers = _stack(
    click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        metavar="N",
        help="Worker processes per target; results are the same whatever N is.",
    ),
    click.option(
        "--timeout",
        type=Seconds(),
        default=DEFAULT_TIMEOUT,
        show_default=True,
        metavar="SECONDS",
        help="Time allowed for each call into the target (one push, one finish) before its "
        "case is timed-out; a long recording is not a timeout (not with --in-process).",
    ),
)

#: `-q` and `-v`: how much a command prints.
verbosity = _stack(
    click.option("-v", "--verbose", is_flag=True, help="List passing cases too."),
    click.option(
        "-q", "--quiet", is_flag=True, help="Print the totals only (no progress, no cases)."
    ),
)

#: The report files of a run.
reports = _stack(
    _file(
        "--junit-xml",
        "junit",
        "Write a JUnit XML report (one testcase per case and mode) for CI test reporters.",
    ),
    _file(
        "--json",
        "json_path",
        "Write the JSON report: each case's status, time and mismatches (docs/json-report.md).",
    ),
    _file(
        "--xfail",
        "xfail_file",
        "Expected failures, lines 'CASE_GLOB [MODE_GLOBS]  # reason'; a pass among them fails "
        "(docs/expected-failures.md).",
    ),
    _file(
        "--write-xfail",
        "write_xfail",
        "Write this run's failures to FILE as the expected-failures baseline (merged with the "
        "entries there for cases not run), and exit 0.",
    ),
    _file(
        "--badge",
        "badge",
        "Write a status badge: a shields.io endpoint JSON file (docs/ci.md).",
    ),
    click.option(
        "--badge-label",
        "badge_label",
        default="conform",
        show_default=True,
        metavar="TEXT",
        help="The text on the left of the --badge (your implementation's name, say).",
    ),
)
