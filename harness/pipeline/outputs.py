"""The files and CI output a run writes: JSON and JUnit reports, the expected-failures
baseline, the badge, GitHub Actions annotations and job summary.

Every front door that runs a target writes them here, the same way: each output asked for is
written even when another fails (the first error is raised at the end), and a baseline is never
written from a partial run. Nothing here prints: what a person should read comes back as notes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import files
from harness.check.xfail import write_baseline
from harness.errors import ConformError
from harness.files import write_report
from harness.pipeline.run import RunRecord
from harness.pipeline.selection import Plan
from harness.reports.badge import badge_json
from harness.reports.github import github_annotations, on_github_actions, write_github_summary
from harness.reports.report import write_json


@dataclass(frozen=True)
class Outputs:
    """Where a run's reports go (None: not asked for)."""

    json: Path | None = None
    junit: Path | None = None
    write_xfail: Path | None = None
    badge: Path | None = None
    #: The badge's label (the text on its left).
    badge_label: str = "conform"

    def absolute(self) -> Outputs:
        """The same outputs with absolute paths: an in-process target may change directory."""
        return self._with([None if p is None else Path(os.path.abspath(p)) for p in self._paths()])

    def _paths(self) -> tuple[Path | None, ...]:
        return (self.json, self.junit, self.write_xfail, self.badge)

    def _with(self, paths: list[Path | None]) -> Outputs:
        json, junit, write_xfail, badge = paths
        return Outputs(json, junit, write_xfail, badge, badge_label=self.badge_label)

    def split(self, later: Callable[[Path], bool]) -> tuple[Outputs, Outputs]:
        """(the outputs for which `later` is false, those for which it is true)."""
        paths = self._paths()
        now = [None if p is None or later(p) else p for p in paths]
        rest = [None if n is not None else p for n, p in zip(now, paths, strict=True)]
        return self._with(now), self._with(rest)

    def named(self) -> dict[str, Path]:
        """The outputs asked for, by option name."""
        names = ("--json", "--junit-xml", "--write-xfail", "--badge")
        return {n: p for n, p in zip(names, self._paths(), strict=True) if p is not None}


def check_outputs(outputs: Outputs, *, inputs: dict[str, Path], plan: Plan | None = None) -> None:
    """ConformError (a usage error) when two outputs name one file, or an output names an input
    of the run (its --xfail file; with `plan`, anything in its suites' recordings/ and golden/):
    one of them would be lost (`harness.files.check_outputs`)."""
    suites = () if plan is None else plan.suites
    folders = [folder for s in suites for folder in (s.recordings_dir, s.golden_dir)]
    rebaseline = outputs.write_xfail
    read = [
        path
        for option, path in inputs.items()
        # `--xfail F --write-xfail F` re-baselines in place: F is read first, then merged into.
        if not (option == "--xfail" and rebaseline and files.same_file(path, rebaseline))
    ]
    files.check_outputs(outputs.named(), [*read, *folders])


def write_outputs(
    record: RunRecord,
    outputs: Outputs,
    *,
    plan: Plan,
    note: Callable[[str], None],
    warn: Callable[[str], None],
    ci: bool = True,
) -> None:
    """Write every output asked for, and with `ci` what GitHub Actions shows (annotations as
    notes, the job summary); one that fails does not keep the others from being written (the
    first such error is raised at the end)."""
    report, info = record.report, record.info
    results = list(report.results)
    writers: list[Callable[[], None]] = []
    if outputs.write_xfail is not None and info.partial and info.shard is None:
        note(f"not written: {outputs.write_xfail} (a partial run's baseline would be partial)")
    elif outputs.write_xfail is not None:
        path = outputs.write_xfail

        def baseline() -> None:
            written = write_baseline(
                path, results, target=info.target, when=info.started, suite_cases=plan.all_ids
            )
            note(f"wrote {written} expected failure(s), one line a case, to {path}")

        writers.append(baseline)
    if outputs.junit is not None:
        from harness.reports.junit import write_junit  # here: xml.etree for --junit-xml alone

        junit = outputs.junit
        writers.append(lambda: write_junit(junit, results, info, problems=report.problems()))
    if outputs.json is not None:
        json_path = outputs.json
        writers.append(lambda: write_json(json_path, results, info, problems=report.problems()))
    if outputs.badge is not None:
        badge = outputs.badge
        writers.append(lambda: _write_badge(badge, record, outputs.badge_label))
    if ci and on_github_actions():

        def github() -> None:
            workspace = Path(os.path.abspath(os.environ.get("GITHUB_WORKSPACE") or os.curdir))
            for command in github_annotations(results, info, workspace=workspace):
                note(command)
            summary = os.environ.get("GITHUB_STEP_SUMMARY")
            if summary:
                try:
                    write_github_summary(results, info, path=Path(os.path.abspath(summary)))
                except ConformError as exc:  # the job's page, not the run's outcome
                    warn(f"no job summary: {exc}")

        writers.append(github)
    first: Exception | None = None
    for write in writers:
        try:
            write()
        except Exception as exc:
            first = first or exc
    if first is not None:
        raise first


def _write_badge(path: Path, record: RunRecord, label: str) -> None:
    info = record.info
    text = badge_json(record.results, label=label, level=info.level, partial=info.why_partial())
    write_report(path, text)
