"""GitHub Actions output: `::error` annotations on the recordings, and the job summary.

Like every reporter it only turns a run's records into text. The step summary is appended to,
as GitHub asks.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from harness.check.results import CaseResult
from harness.check.status import STATUS_ORDER, Status
from harness.files import cannot_write
from harness.reports.report import Report, RunInfo, counts, failed, first_line, headline
from harness.reports.text import describe_fold, fold, fold_header, label, rule_totals
from harness.reports.verdict import class_totals
from harness.safetext import printable

_SUMMARY_ROWS = 100


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _shown_path(path: Path, workspace: Path) -> str:
    """`path` relative to the workspace when it lies inside (annotations need that), else as is."""
    try:
        return PurePosixPath(path.resolve().relative_to(workspace.resolve())).as_posix()
    except ValueError:
        return path.as_posix()


def github_annotations(
    results: Sequence[CaseResult], info: RunInfo, *, workspace: Path
) -> list[str]:
    """One `::error` workflow command per fold of results that fails the run (a case failing
    alike in several modes is one annotation naming them).

    It points at the recording and the line of the first difference; an unexpected pass points
    at the expected-failures line that should go.
    """
    commands: list[str] = []
    for folded in fold(results):
        result = folded.first
        if not result.status.fails_run:
            continue
        where: dict[str, str] = {}
        if result.status == Status.XPASSED and result.expectation is not None:
            file, _, line = result.expectation.source.rpartition(":")
            where = {"file": _shown_path(Path(file), workspace), "line": line}
        else:
            where["file"] = _shown_path(info.recording_file(result), workspace)
            line_number = first_line(result)
            if line_number is not None:
                where["line"] = str(line_number)
        where["title"] = printable(f"conform: {fold_header(folded)}")
        props = ",".join(f"{key}={_escape_property(value)}" for key, value in where.items())
        message = "\n".join(describe_fold(folded))
        commands.append(f"::error {props}::{_escape_data(message)}")
    return commands


def _cell(text: str) -> str:
    return printable(text).replace("\\", "\\\\").replace("|", "\\|")


def github_summary(results: Sequence[CaseResult], info: RunInfo) -> str:
    """The Markdown for `$GITHUB_STEP_SUMMARY`: totals, then a row per result not passing."""
    n = counts(results)
    parts = [f"{n[s]} {s}" for s in STATUS_ORDER if n[s]]
    verdict = "❌ does not conform" if failed(results) else "✅ conforms"
    partial = info.why_partial()
    if partial is not None:
        verdict = f"⚠️ partial ({partial})"
    lines = [
        f"### conform: `{info.target}` {verdict}",
        "",
        f"{len(results)} runs ({info.cases} cases x {len(info.modes)} modes, seed {info.seed}) "
        f"in {info.duration:.2f} s: {', '.join(parts) or 'none'}",
        "",
        f"**Verdict:** {Report(info, tuple(results)).verdict()}." if results else "",
        "",
        "| class of input | cases conforming | real captures | |",
        "|---|---|---|---|",
        *(
            f"| {name} | {t.passed}/{t.cases} | {f'{t.real_passed}/{t.real}' if t.real else ''} "
            f"| {'❌' if t.failed else '✅'} |"
            for name, t in class_totals(results).items()
            if t.cases
        ),
        "",
        "| rule | cases conforming | |",
        "|---|---|---|",
        *(
            f"| {tag} | {n['passed']}/{n['cases']} | {'❌' if n['failed'] else '✅'} |"
            for tag, n in rule_totals(results).items()
        ),
        "",
    ]
    shown_folds = [f for f in fold(results) if f.first.status != Status.PASSED]
    if shown_folds:
        lines += ["| status | case | modes | first difference |", "|---|---|---|---|"]
        for f in shown_folds[:_SUMMARY_ROWS]:
            r = f.first
            lines.append(
                f"| {label(r.status)} | `{_cell(r.case_id)}` | {', '.join(f.modes)} "
                f"| {_cell(headline(r))} |"
            )
        hidden = len(shown_folds) - _SUMMARY_ROWS
        if hidden > 0:
            lines += ["", f"… and {hidden} more; the JSON and JUnit reports list them all."]
    return printable("\n".join(lines), keep_lines=True) + "\n"


def write_github_summary(results: Sequence[CaseResult], info: RunInfo, *, path: Path) -> None:
    """Append the summary to the step summary file (other steps may have written there)."""
    try:
        with path.open("a", encoding="utf-8") as out:
            out.write(github_summary(results, info))
    except OSError as exc:
        raise cannot_write(path, exc) from None


def on_github_actions() -> bool:
    """True inside a GitHub Actions job."""
    return os.environ.get("GITHUB_ACTIONS") == "true"
