"""`conform matrix`'s library side: run several targets over the same cases, at the same time.

Each target runs exactly as `conform run` runs one (`harness.check.targets.run_target`: worker
processes, its own expected failures), on a thread of its own, and ends as a JSON report
document; `harness.reports.matrix` puts the reports side by side, the same way whether they were
made here or read from the files of separate jobs (`--from`).
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from harness.check.runner import CaseResult, in_order
from harness.check.targets import run_target
from harness.check.xfail import XfailList
from harness.drive.base import DEFAULT_TIMEOUT
from harness.drive.spec import start_driver
from harness.errors import ConformError
from harness.reports.machine import RunInfo, json_report
from harness.reports.matrix import Column, default_label, load_report, merge_reports
from harness.suite.cases import Case

_LABEL = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.+-]*)=(.+)", re.DOTALL)


@dataclass(frozen=True)
class Target:
    """One implementation of the matrix: a Python TARGET or an --exec command, with its label
    and its expected-failures file."""

    label: str
    spec: str
    kind: str  # "python" or "exec"
    xfail: Path | None = None


def split_label(text: str) -> tuple[str | None, str]:
    """`LABEL=REST` as (LABEL, REST); (None, text) without a label (a label is a word of letters,
    digits and `_.+-` before the first `=`)."""
    found = _LABEL.fullmatch(text)
    return (found.group(1), found.group(2)) if found else (None, text)


def targets_of(
    specs: Sequence[str], commands: Sequence[str], xfails: Sequence[str]
) -> list[Target]:
    """The targets named on the command line, labelled, each with its --xfail LABEL=FILE."""
    made = []
    for kind, given in [("python", s) for s in specs] + [("exec", c) for c in commands]:
        label, spec = split_label(given)
        made.append(Target(label or default_label(spec, kind), spec, kind))
    by_label = {t.label: t for t in made}
    if len(by_label) != len(made):
        raise ConformError("two targets have the same label", hint="give each one LABEL=...")
    for given in xfails:
        label, file = split_label(given)
        if label is None or label not in by_label:
            raise ConformError(
                f"--xfail {given!r} names no target",
                hint=f"give LABEL=FILE, LABEL one of: {', '.join(by_label)}",
            )
        by_label[label] = Target(label, by_label[label].spec, by_label[label].kind, Path(file))
    return [by_label[t.label] for t in made]


def columns_from_reports(given: Sequence[str]) -> list[Column]:
    """Columns from `[LABEL=]REPORT.json` files: reports with the same label (by default, the
    same target) are the shards of one run, merged."""
    grouped: dict[str, list[dict[str, object]]] = {}
    for text in given:
        label, file = split_label(text)
        if label is not None and not Path(text).is_file():
            report = load_report(Path(file))
        else:
            label, report = None, load_report(Path(text))
        kind = str(report.get("target_kind", "python"))
        grouped.setdefault(label or default_label(str(report["target"]), kind), []).append(report)
    return [Column(label, merge_reports(label, reports)) for label, reports in grouped.items()]


def run_matrix(
    targets: Sequence[Target],
    cases: Sequence[Case],
    *,
    roots: Sequence[Path],
    modes: Sequence[str],
    seed: int,
    jobs: int = 1,
    timeout: float = DEFAULT_TIMEOUT,
    require: dict[str, str] | None = None,
    cancel: threading.Event | None = None,
    done: Callable[[Column], None] | None = None,
    all_ids: Sequence[str] | None = None,
) -> list[Column]:
    """Every target over `cases` in `modes`, all at once (each with `jobs` workers), as columns.

    A target that cannot start (or whose --xfail file is wrong) becomes a column with its error
    and no results; an error inside conform is raised once every target has stopped. A line of
    an --xfail file must match one of `all_ids` (the whole suite's; default: `cases`).
    """
    columns: dict[str, Column] = {}
    failures: list[BaseException] = []
    known = list(all_ids) if all_ids is not None else [case.case_id for case in cases]

    def one(target: Target) -> None:
        began, started = datetime.now(UTC), time.perf_counter()
        results: list[CaseResult] = []
        error = None
        try:
            expected = None if target.xfail is None else XfailList.load(target.xfail)
            if expected is not None:
                expected.check(known, modes)
            make = functools.partial(
                start_driver,
                target.spec if target.kind == "python" else None,
                target.spec if target.kind == "exec" else None,
                timeout=timeout,
            )
            for result in run_target(
                make,
                cases,
                modes=modes,
                seed=seed,
                jobs=jobs,
                cancel=cancel,
                require=require,
                expected=expected,
            ):
                results.append(result)
        except ConformError as exc:
            error = str(exc)
        except BaseException as exc:
            failures.append(exc)
            error = f"{type(exc).__name__}: {exc}"
        info = RunInfo(
            target.spec,
            roots[0],
            len(cases),
            tuple(modes),
            seed,
            time.perf_counter() - started,
            began,
            interrupted=cancel is not None and cancel.is_set(),
            suites=tuple(roots),
            kind=target.kind,
        )
        report = json_report(in_order(results, cases, modes), info)
        xfail = None if target.xfail is None else str(target.xfail)
        column = Column(target.label, report, xfail, error, target.spec, target.kind)
        columns[target.label] = column
        if done is not None:
            done(column)

    threads = [threading.Thread(target=one, args=(t,), name=f"conform-{t.label}") for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return [columns[t.label] for t in targets]
