"""Distinct problems: a run's failing results grouped by cause, each ready to paste upstream.

A target that gets one thing wrong fails many cases in many modes; its maintainer wants the one
thing, and the things that matter first. Results group by cause (`harness.reports.causes`: a
crash by its exception and the frame it happened in, invalid input answered by what the rules
refuse in it, a mismatch by field, kind of difference and the rule of that field), the same way
at every level. Problems are listed by what they are about (`CATEGORIES`): valid input in
`plain` first (those a real capture shows first of all), then valid input only under a mutation
mode, invalid input the target crashed on, invalid input it answered instead of refusing,
implementation-defined input; within each, most cases first. A crash in an adapter's own code is
an adapter fault, listed apart and never blamed on the client.

Each problem keeps its cases and modes, the example that shows it best (a real capture when one
does, else the smallest stream, as pushed), the command that reproduces it, the reasons the
`--xfail` lines covering it give, and a Markdown bug report (`harness.reports.bug_report`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.check.modes import MODES, PLAIN
from harness.check.results import CaseResult
from harness.drive.blame import Origin
from harness.reports.bug_report import markdown_report
from harness.reports.causes import (
    ADAPTER_FAULT,
    CATEGORIES,
    INVALID_ACCEPTED,
    RULE_TEXT,
    Cause,
    category,
    cause,
)
from harness.safetext import printable
from harness.suite.classes import CLASSES

__all__ = ["RULE_TEXT", "Problem", "cause", "group", "problems_json", "summary_lines"]

#: How each category is headed in text, and said in JSON.
CATEGORY_TITLES = {
    "valid": "valid input",
    "valid-under-mutation": "valid input, only under a mutation mode",
    "invalid-crashed": "invalid input it crashed on",
    "invalid-accepted": "invalid input it did not refuse",
    "implementation-defined": "implementation-defined input",
    "adapter-fault": "adapter faults (the adapter's own code crashed: not the client's)",
}


@dataclass(frozen=True)
class Problem:
    """One cause of failure and every result it explains."""

    title: str
    rule: str | None
    results: tuple[CaseResult, ...]
    example: CaseResult
    command: str
    report: str
    #: What it is about (`harness.reports.causes.CATEGORIES`): the first its results are about.
    category: str = "valid"
    #: Where the crashes happened (`harness.drive.blame`), for a crash problem.
    origin: Origin | None = None
    #: The `--xfail` lines that cover its results: (reason, FILE:LINE), each once.
    expected: tuple[tuple[str, str], ...] = ()
    #: Invalid input the target answered instead of refusing it (`Cause.accepted`).
    accepted: bool = False

    @property
    def cases(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.case_id for r in self.results))

    @property
    def modes(self) -> tuple[str, ...]:
        seen = {r.mode for r in self.results}
        return tuple(m for m in MODES if m in seen) + tuple(sorted(seen - set(MODES)))

    @property
    def real_cases(self) -> tuple[str, ...]:
        """Its cases that are real captures from a server."""
        return tuple(dict.fromkeys(r.case_id for r in self.results if r.real))

    @property
    def adapter_fault(self) -> bool:
        return self.category == ADAPTER_FAULT

    def classes(self) -> dict[str, int]:
        """How many of its cases are of each class of input."""
        seen: dict[str, str] = {}
        for r in self.results:
            seen.setdefault(r.case_id, str(r.input_class or "valid"))
        return {str(c): n for c in CLASSES if (n := list(seen.values()).count(str(c)))}

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "category": self.category,
            "rule": self.rule,
            "cases": list(self.cases),
            "classes": self.classes(),
            "real_captures": list(self.real_cases),
            "modes": list(self.modes),
            "runs": len(self.results),
            "adapter_fault": self.adapter_fault,
            "origin": None if self.origin is None else self.origin.to_json(),
            "example": {
                "case": self.example.case_id,
                "mode": self.example.mode,
                "seed": self.example.seed,
                "cut": self.example.cut,
            },
            "command": self.command,
            "expected": [{"reason": r, "source": s} for r, s in self.expected],
            "report": self.report,
        }


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 1 << 62


def _rule(results: Sequence[CaseResult]) -> str | None:
    """The rule most of `results`' cases pin (for a cause no one field names)."""
    counts: dict[str, int] = {}
    for result in results:
        for tag in result.pins:
            counts[tag] = counts.get(tag, 0) + 1
    if not counts:
        return None
    order = list(RULE_TEXT)
    return max(counts, key=lambda t: (counts[t], -order.index(t) if t in order else -99))


def group(
    results: Iterable[CaseResult],
    *,
    recording: Callable[[CaseResult], Path],
    command: Callable[[CaseResult], str],
    refusal: Callable[[CaseResult], str | None] | None = None,
) -> list[Problem]:
    """The distinct problems among `results` that are not passes (expected failures included:
    a baseline lists problems too), in the order they matter (module docstring). `recording`
    says where a result's recording lies; `command` gives the command that reproduces a result
    alone; `refusal` the reference's reason for refusing a result's input (invalid input)."""
    groups: dict[tuple[str, ...], tuple[Cause, list[tuple[CaseResult, str]]]] = {}
    for result in results:
        if result.status.not_passing:
            found = cause(result, refusal=refusal)
            entry = groups.setdefault(found.key, (found, []))
            entry[1].append((result, category(result, found)))
    problems = []
    for found, members in groups.values():
        first = min(CATEGORIES.index(c) for _, c in members)
        kind = CATEGORIES[first]
        shown = [r for r, c in members if c == kind]
        example = min(
            shown,
            key=lambda r: (
                not r.real,
                r.mode != PLAIN,
                _size(recording(r)),
                r.case_id,
                MODES.index(r.mode) if r.mode in MODES else 99,
            ),
        )
        every = tuple(r for r, _ in members)
        rule = found.rule or _rule(every)
        expected = tuple(
            dict.fromkeys(
                (r.expectation.reason, r.expectation.source)
                for r in every
                if r.expectation is not None and r.expectation.reason
            )
        )
        crash = example.crash
        problem = Problem(
            found.title,
            rule,
            every,
            example,
            command(example),
            "",
            kind,
            None if crash is None or example.mismatches else crash.origin,
            _distinct_reasons(expected),
            found.accepted,
        )
        text = markdown_report(
            problem,
            recording=recording(example),
            refusal=refusal(example) if refusal is not None and found.accepted else None,
        )
        problems.append(replace(problem, report=text))
    return sorted(problems, key=_order)


def _distinct_reasons(expected: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """One (reason, source) per distinct reason: a baseline repeats a reason on many lines."""
    seen: dict[str, str] = {}
    for reason, source in expected:
        seen.setdefault(reason, source)
    return tuple(seen.items())


def _order(problem: Problem) -> tuple[Any, ...]:
    """Category first; in `valid`, those a real capture shows in plain first; then most cases."""
    real_plain = any(r.real and r.mode == PLAIN for r in problem.results)
    return (
        CATEGORIES.index(problem.category),
        not real_plain,
        -len(problem.cases),
        -len(problem.results),
        problem.title,
    )


def summary_lines(problems: Sequence[Problem], *, limit: int = 20) -> list[str]:
    """The short list `conform run` ends with: the problems by category, one line each with its
    command; adapter faults apart."""
    if not problems:
        return []
    own = [p for p in problems if not p.adapter_fault]
    faults = [p for p in problems if p.adapter_fault]
    lines = [
        f"distinct problems: {len(own)}"
        + (f" (and {len(faults)} adapter faults)" if faults else "")
    ]
    heading = None
    for n, problem in enumerate(own[:limit], start=1):
        if problem.category != heading:
            heading = problem.category
            lines.append(f" on {CATEGORY_TITLES[heading]}:")
        lines += _problem_lines(f"{n}.", problem)
    if len(own) > limit:
        lines.append(f"  … and {len(own) - limit} more (the JSON report lists them all)")
    if faults:
        lines.append(f"{CATEGORY_TITLES[ADAPTER_FAULT]}: {len(faults)}")
        for n, problem in enumerate(faults[:limit], start=1):
            lines += _problem_lines(f"A{n}.", problem)
    return lines


def _problem_lines(number: str, problem: Problem) -> list[str]:
    rule = f" [{problem.rule}]" if problem.rule else ""
    real = f", {len(problem.real_cases)} real capture(s)" if problem.real_cases else ""
    lines = [
        printable(
            f"  {number} {problem.title}{rule}: {len(problem.cases)} case(s){real}, "
            f"{len(problem.results)} run(s) in {', '.join(problem.modes)}"
        )
    ]
    for reason, source in problem.expected[:3]:
        lines.append(printable(f"     baseline: {reason} ({source})"))
    lines.append(printable(f"     rerun: {problem.command}"))
    return lines


def problems_json(problems: Sequence[Problem]) -> list[Mapping[str, Any]]:
    """The problems as the JSON report holds them."""
    return [p.to_json() for p in problems]


def accepted_kinds(problems: Sequence[Problem]) -> int:
    """How many kinds of invalid input the problems say the target did not refuse."""
    return sum(p.accepted and p.category == INVALID_ACCEPTED for p in problems)
