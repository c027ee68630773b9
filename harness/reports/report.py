"""The typed record of a run, and its JSON report: written by `conform run --json`, read back by
`conform matrix --from`, merged from shards.

A `Report` is what every view reads (text, JUnit, GitHub, the matrix), whether the run happened a
moment ago or its JSON report was written by another CI job: the JSON is turned back into the same
`CaseResult` records (`Report.from_json`), and shards of one run merge on records
(`Report.combine`). The JSON report's schema is `harness/schemas/report.schema.json`, described in
docs/json-report.md.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.check.results import CaseResult, Crash, Expectation, Mismatch
from harness.check.status import Status, count_statuses
from harness.drive.blame import Origin
from harness.errors import ConformError
from harness.files import write_report
from harness.reports.problems import Problem, accepted_kinds, group, problems_json
from harness.reports.run_info import RunInfo as RunInfo
from harness.reports.run_info import conform_version as conform_version
from harness.reports.run_info import pasted_command as pasted_command
from harness.reports.run_info import reproduce as reproduce
from harness.reports.run_info import shown_recording as shown_recording
from harness.reports.text import recording_path, rule_totals
from harness.reports.verdict import ClassTotals, class_totals, verdict_words
from harness.safetext import (
    ABSENT,
    ONE_LINE_CHARS,
    capped,
    dumps,
    expected_got,
    shorten_with_size,
    shown,
)
from harness.suite.classes import CLASSES, InputClass
from harness.suite.refusals import refusal

#: The version of the JSON report's layout (`report_schema` in the document).
REPORT_SCHEMA = 1
#: Characters kept of a payload, message or said in the JSON report; of a crash's details.
FILE_TEXT_CHARS = 2_000
FILE_DETAILS_CHARS = 20_000


@dataclass(frozen=True)
class Report:
    """A run's facts and its results, in report order (by case, then mode)."""

    info: RunInfo
    results: tuple[CaseResult, ...]

    @property
    def failed(self) -> bool:
        """True when a result fails the run (exit code 1)."""
        return failed(self.results)

    @property
    def ok(self) -> bool:
        """True when the whole run passed: nothing failed and nothing is missing."""
        return not self.failed and not self.info.interrupted and self.info.stopped is None

    def to_json(self) -> dict[str, Any]:
        """The JSON report (docs/json-report.md)."""
        return json_report(self.results, self.info, problems=self.problems())

    def problems(self) -> list[Problem]:
        """The distinct problems of the run (`harness.reports.problems`), made once."""
        return list(self._problems)

    @functools.cached_property
    def _problems(self) -> tuple[Problem, ...]:
        return tuple(problems_of(self.results, self.info))

    def classes(self) -> dict[str, ClassTotals]:
        """Each class of input's totals (`harness.reports.verdict`)."""
        return class_totals(self.results)

    def verdict(self, problems: Sequence[Problem] | None = None) -> str:
        """The verdict in words, class by class (`harness.reports.verdict`)."""
        found = self.problems() if problems is None else problems
        return verdict_words(self.classes(), kinds=accepted_kinds(found))

    def of_classes(self, classes: Sequence[str]) -> Report:
        """This report with only the results of cases of `classes` (all when none given)."""
        if not classes:
            return self
        kept = tuple(r for r in self.results if str(r.input_class or "valid") in classes)
        cases = len({r.case_id for r in kept})
        return Report(replace(self.info, cases=cases), kept)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], *, source: str = "the report") -> Report:
        """The report a `conform run --json` document holds; ConformError when it is not one."""
        if not isinstance(doc, Mapping) or doc.get("report_schema") != REPORT_SCHEMA:
            raise ConformError(
                f"{source} is not a conform JSON report (report_schema {REPORT_SCHEMA})",
                hint="'conform run TARGET --json FILE' writes one",
            )
        for key in ("target", "modes", "seed", "results", "suite"):
            if key not in doc:
                raise ConformError(f"{source}: the report has no {key!r}")
        try:
            return cls(_info_from_json(doc), tuple(result_from_json(r) for r in doc["results"]))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConformError(f"{source}: not a conform JSON report: {exc!r}") from None

    @classmethod
    def load(cls, path: Path) -> Report:
        """The report in a file written by `conform run --json`."""
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConformError(f"no report {path}") from None
        except (OSError, UnicodeError, ValueError) as exc:
            raise ConformError(f"cannot read the report {path}: {exc}") from None
        return cls.from_json(doc, source=str(path))

    @classmethod
    def combine(cls, label: str, reports: Sequence[Report]) -> Report:
        """One report of a target from its shards' reports (or the one report given).

        The shards must agree on target, modes, seed and level, hold no case twice, and, when
        they say they are shards, be all N of them.
        """
        first = reports[0]
        if len(reports) == 1 and first.info.shard is None:
            return first
        for other in reports[1:]:
            for key in ("target", "modes", "seed", "level"):
                mine, theirs = getattr(first.info, key), getattr(other.info, key)
                if mine != theirs:
                    raise ConformError(
                        f"the reports of {label!r} differ in {key}: "
                        f"{shown(list(mine) if key == 'modes' else mine, 80)} and "
                        f"{shown(list(theirs) if key == 'modes' else theirs, 80)}",
                        hint="a column merges the shards of one run; give other runs another label",
                    )
        shards = [r.info.shard for r in reports]
        if any(s is not None for s in shards):
            counts = {s[1] for s in shards if s is not None}
            have = sorted(s[0] for s in shards if s is not None)
            if None in shards or len(counts) != 1 or have != list(range(1, counts.pop() + 1)):
                named = ", ".join("whole" if s is None else f"{s[0]}/{s[1]}" for s in shards)
                raise ConformError(
                    f"the shards of {label!r} are not one complete set: {named}",
                    hint="give every shard K/N of one N, once each",
                )
        rank = {mode: n for n, mode in enumerate(first.info.modes)}
        results: dict[tuple[str, str], CaseResult] = {}
        for report in reports:
            for result in report.results:
                run = (result.case_id, result.mode)
                if run in results:
                    raise ConformError(f"{label!r}: {run[0]} [{run[1]}] is in two reports")
                results[run] = result
        ordered = sorted(results.values(), key=lambda r: (r.case_id, rank.get(r.mode, 0)))
        paths: list[Path] = []
        for report in reports:
            for path in report.info.suites or (report.info.suite,):
                if path not in paths:
                    paths.append(path)
        info = replace(
            first.info,
            shard=None,
            suite=paths[0],
            suites=tuple(paths),
            cases=sum(r.info.cases for r in reports),
            duration=max(r.info.duration for r in reports),
            interrupted=any(r.info.interrupted for r in reports),
            stopped=next((r.info.stopped for r in reports if r.info.stopped), None),
        )
        return cls(info, tuple(ordered))


def problems_of(results: Sequence[CaseResult], info: RunInfo) -> list[Problem]:
    """The distinct problems among `results`, each with the command that reproduces it."""
    return group(
        results,
        recording=info.recording_file,
        command=lambda r: pasted_command(info, case=r.case_id, mode=r.mode),
        refusal=lambda r: refusal(info.recording_file(r)),
    )


def failed(results: Sequence[CaseResult]) -> bool:
    """True when any result fails the run (exit code 1)."""
    return any(r.status.fails_run for r in results)


def counts(results: Sequence[CaseResult]) -> dict[str, int]:
    """How many results have each status, every status named (zeros included)."""
    return count_statuses(r.status for r in results)


def first_line(result: CaseResult) -> int | None:
    """The recording line where the first difference or the crash happened, when known."""
    for mismatch in result.mismatches:
        if mismatch.line is not None:
            return mismatch.line
    return result.crash.line if result.crash is not None else None


def headline(result: CaseResult, limit: int = ONE_LINE_CHARS) -> str:
    """One line saying what went wrong: the first mismatch, the crash, or the expectation."""
    if result.status == Status.XPASSED and result.expectation is not None:
        reason = f": {result.expectation.reason}" if result.expectation.reason else ""
        return f"passes, but {result.expectation.source} expects it to fail{reason}"
    prefix = ""
    if result.status == Status.XFAILED and result.expectation is not None:
        reason = f" ({result.expectation.reason})" if result.expectation.reason else ""
        prefix = f"expected failure{reason}: "
    if result.mismatches:
        m = result.mismatches[0]
        where = f" (line {m.line})" if m.line is not None else ""
        more = len(result.mismatches) - 1
        tail = f" (+{more} more)" if more else ""
        text = f"{m.path}{where}: {expected_got(m.expected, m.actual, limit)}"
        return prefix + text + tail
    if result.crash is not None:
        return prefix + result.crash.message
    return prefix + str(result.status)


# -- JSON ---------------------------------------------------------------------------------------


def _text(text: str | None, limit: int = FILE_TEXT_CHARS) -> str | None:
    return None if text is None else shorten_with_size(text, limit)


def _mismatch_json(m: Mismatch) -> dict[str, Any]:
    found: dict[str, Any] = {"path": m.path}
    # A side that lacks the field has no key: null is a value, absence is not.
    if m.expected is not ABSENT:
        found["expected"] = capped(m.expected)
    if m.actual is not ABSENT:
        found["actual"] = capped(m.actual)
    found.update(step=m.step, line=m.line, payload=_text(m.payload), said=_text(m.said))
    return found


def _crash_json(crash: Crash | None) -> dict[str, Any] | None:
    if crash is None:
        return None
    return {
        "message": _text(crash.message),
        "details": _text(crash.details, FILE_DETAILS_CHARS),
        "at": crash.stage,
        "step": crash.step,
        "line": crash.line,
        "payload": _text(crash.payload),
        "origin": None if crash.origin is None else crash.origin.to_json(),
    }


def result_json(result: CaseResult) -> dict[str, Any]:
    """One result as the JSON report holds it."""
    expectation = result.expectation
    found = {
        "case": result.case_id,
        "mode": result.mode,
        "recording": recording_path(result),
        "status": str(result.status),
        "duration": round(result.duration, 6),
        "mismatches": [_mismatch_json(m) for m in result.mismatches],
        "crash": _crash_json(result.crash),
        "expectation": None
        if expectation is None
        else {
            "reason": expectation.reason,
            "source": expectation.source,
            "was": str(expectation.was),
        },
        "pins": list(result.pins),
        "choice": [dict(c) for c in result.choice],
        "class": None if result.input_class is None else str(result.input_class),
        "real": result.real,
    }
    if result.unlisted:
        found["unlisted"] = result.unlisted
    return found


def result_from_json(doc: Mapping[str, Any]) -> CaseResult:
    """The record a JSON report's result holds (values as the report kept them)."""
    recording = str(doc["recording"])
    crash = doc.get("crash")
    expectation = doc.get("expectation")
    return CaseResult(
        str(doc["case"]),
        str(doc["mode"]),
        recording.removeprefix("recordings/"),
        Status(doc["status"]),
        float(doc.get("duration", 0.0)),
        tuple(
            Mismatch(
                str(m["path"]),
                m.get("expected", ABSENT),
                m.get("actual", ABSENT),
                m.get("step"),
                m.get("line"),
                m.get("payload"),
                m.get("said"),
            )
            for m in doc.get("mismatches") or ()
        ),
        None
        if not crash
        else Crash(
            str(crash.get("message") or ""),
            str(crash.get("details") or ""),
            crash.get("step"),
            crash.get("line"),
            crash.get("payload"),
            str(crash.get("at") or ""),
            Origin.from_json(crash.get("origin")),
        ),
        expectation=None
        if not expectation
        else Expectation(
            str(expectation.get("reason") or ""),
            str(expectation["source"]),
            Status(expectation["was"]),
        ),
        pins=tuple(doc.get("pins") or ()),
        choice=tuple(dict(c) for c in doc.get("choice") or ()),
        unlisted=int(doc.get("unlisted") or 0),
        input_class=InputClass(doc["class"]) if doc.get("class") in CLASSES else None,
        real=bool(doc.get("real", False)),
    )


def _info_from_json(doc: Mapping[str, Any]) -> RunInfo:
    suite = doc["suite"]
    paths = tuple(Path(p) for p in suite.get("paths") or [suite["path"]])
    shard = doc.get("shard")
    started = doc.get("started")
    return RunInfo(
        str(doc["target"]),
        Path(suite["path"]),
        int(suite.get("cases", 0)),
        tuple(doc["modes"]),
        int(doc["seed"]),
        float(doc.get("duration", 0.0)),
        datetime.fromisoformat(started) if started else datetime.now(UTC),
        interrupted=bool(doc.get("interrupted", False)),
        stopped=doc.get("stopped"),
        suites=paths,
        kind=str(doc.get("target_kind", "python")),
        shard=None if shard is None else (int(shard["index"]), int(shard["count"])),
        level=str(doc.get("level", "full")),
        rerun=tuple(str(w) for w in doc.get("rerun") or ()),
        cwd=str(doc.get("cwd") or ""),
        pythonpath=str(doc.get("pythonpath") or ""),
    )


def json_report(
    results: Sequence[CaseResult], info: RunInfo, *, problems: Sequence[Problem] | None = None
) -> dict[str, Any]:
    """The JSON report of a run (docs/json-report.md); `problems`: its distinct problems, when
    the caller has them."""
    problems = problems_of(results, info) if problems is None else problems
    totals = class_totals(results)
    return {
        "report_schema": REPORT_SCHEMA,
        "conform_version": conform_version(),
        "target": info.target,
        "target_kind": info.kind,
        "level": info.level,
        "rerun": list(info.rerun),
        "cwd": info.cwd,
        "pythonpath": info.pythonpath,
        "started": info.started.isoformat(timespec="seconds"),
        "shard": None if info.shard is None else {"index": info.shard[0], "count": info.shard[1]},
        "suite": {
            "path": str(info.suite),
            "paths": [str(p) for p in info.suites or (info.suite,)],
            "cases": info.cases,
        },
        "modes": list(info.modes),
        "seed": info.seed,
        "ok": not failed(results) and not info.interrupted and info.stopped is None,
        "partial": info.why_partial(),
        "totals": {"runs": len(results), **counts(results)},
        "rules": rule_totals(results),
        "classes": {name: t.to_json() for name, t in totals.items()},
        "verdict": verdict_words(totals, kinds=accepted_kinds(problems)),
        "problems": problems_json(problems),
        "duration": round(info.duration, 6),
        "interrupted": info.interrupted,
        "stopped": info.stopped,
        "results": [result_json(r) for r in results],
    }


def json_text(
    results: Sequence[CaseResult], info: RunInfo, *, problems: Sequence[Problem] | None = None
) -> str:
    """The JSON report as text: two-space indent, UTF-8, trailing newline."""
    return dumps(json_report(results, info, problems=problems), indent=2) + "\n"


def write_json(
    path: Path,
    results: Sequence[CaseResult],
    info: RunInfo,
    *,
    problems: Sequence[Problem] | None = None,
) -> None:
    """Write the JSON report to `path`, atomically (`problems`: the run's, when made already)."""
    write_report(path, json_text(results, info, problems=problems))
