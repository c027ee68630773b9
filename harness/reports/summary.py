"""What `conform run` prints when a run ends: the cases that did not pass, with where their
recording is and the command that reruns each, the per-rule line, and the totals."""

from __future__ import annotations

from harness.reports.problems import CATEGORY_TITLES, summary_lines
from harness.reports.progress import paint_line
from harness.reports.report import Report, reproduce, shown_recording
from harness.reports.text import render, rules_line, totals_line
from harness.reports.verdict import class_line


def run_summary(report: Report, *, verbose: bool, quiet: bool, colour: bool) -> list[str]:
    """Each case that did not pass (every case with `verbose`), the per-rule line, then the
    totals (the totals alone when `quiet`)."""
    info = report.info
    results = list(report.results)
    lines: list[str] = []
    if not quiet:
        shown = render(
            results,
            verbose=verbose,
            where=lambda r: shown_recording(info, r),
            rerun=lambda r: reproduce(info, case=r.case_id, mode=r.mode),
        )
        lines += [paint_line(line, colour=colour) for line in shown]
        if any(r.pins for r in results):
            lines.append(rules_line(results))
    if not quiet:
        problems = report.problems()
        if results:
            lines.append(class_line(report.classes()))
            lines.append(f"verdict: {report.verdict(problems)}")
        lines += summary_lines(problems)
    lines.append(totals_line(results, info.duration))
    return lines


def problems_text(report: Report) -> list[str]:
    """`conform run --problems`: each distinct problem's bug-report text, then the totals."""
    problems = report.problems()
    own = [p for p in problems if not p.adapter_fault]
    faults = [p for p in problems if p.adapter_fault]
    lines: list[str] = []
    if report.results:
        lines += [f"verdict: {report.verdict(problems)}", ""]
    heading = None
    for n, problem in enumerate(own, start=1):
        if problem.category != heading:
            heading = problem.category
            lines += [f"# Problems on {CATEGORY_TITLES[heading]}", ""]
        lines += [f"## Problem {n} of {len(own)}", "", problem.report]
    if faults:
        lines += [
            f"# {CATEGORY_TITLES['adapter-fault'].capitalize()}",
            "",
            "These crashed in the adapter's own code, not in the client: fix the adapter first "
            "(docs/clients.md).",
            "",
        ]
        for n, problem in enumerate(faults, start=1):
            lines += [f"## Adapter fault {n} of {len(faults)}", "", problem.report]
    if not problems:
        lines.append("no problems: every run passed")
    lines.append(totals_line(list(report.results), report.info.duration))
    return lines
