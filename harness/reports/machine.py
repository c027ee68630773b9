"""Reports in files and for CI: JUnit XML, the JSON report, GitHub Actions annotations and summary.

Like `harness.reports.text` (text for people), each reporter only turns result records into output;
it never runs anything. The JSON report's schema is `harness/schemas/report.schema.json`, described
in docs/json-report.md. Files are written atomically; the step summary is appended to, as GitHub
asks.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

from harness.check.runner import (
    CRASHED,
    FAILED,
    FAILS_THE_RUN,
    PASSED,
    STATUS_ORDER,
    TIMED_OUT,
    XFAILED,
    XPASSED,
    CaseResult,
    Crash,
    Mismatch,
    count_statuses,
)
from harness.files import cannot_write, write_report
from harness.reports.text import (
    describe_case,
    describe_fold,
    fold,
    fold_header,
    label,
    recording_path,
    rule_totals,
)
from harness.safetext import (
    ABSENT,
    ONE_LINE_CHARS,
    capped,
    dumps,
    expected_got,
    printable,
    shorten,
    shorten_with_size,
)

#: The version of the JSON report's layout (`report_schema` in the document).
REPORT_SCHEMA = 1
#: Statuses that fail a run (exit code 1).
FAILING = FAILS_THE_RUN
_SUMMARY_ROWS = 100
_JUNIT_MESSAGE_CHARS = 500
#: Characters kept of a payload, message or said in the JSON report; of a crash's details.
FILE_TEXT_CHARS = 2_000
FILE_DETAILS_CHARS = 20_000


def conform_version() -> str:
    """The installed conform's version."""
    try:
        return metadata.version("conform")
    except metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class RunInfo:
    """What was run: the facts every report states besides the results."""

    target: str
    suite: Path
    cases: int
    modes: tuple[str, ...]
    seed: int
    duration: float = 0.0
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    interrupted: bool = False  # stopped by Ctrl-C or SIGTERM: results are the finished cases only
    #: Set when conform itself failed mid-run: the error; the results are those run before it.
    stopped: str | None = None
    #: Every suite run, when --suite named several (`suite` is the first).
    suites: tuple[Path, ...] = ()
    #: `python` for a TARGET (module:Class), `exec` for an --exec program.
    kind: str = "python"
    #: `--shard K/N` as (K, N): the run covers that shard of the cases only.
    shard: tuple[int, int] | None = None

    def recording_file(self, result: CaseResult) -> Path:
        """The recording's file: in the suite that holds it."""
        for root in self.suites or (self.suite,):
            if (root / recording_path(result)).is_file():
                return root / recording_path(result)
        return self.suite / recording_path(result)


def failed(results: Sequence[CaseResult]) -> bool:
    """True when any result fails the run (exit code 1)."""
    return any(r.status in FAILING for r in results)


def counts(results: Sequence[CaseResult]) -> dict[str, int]:
    """How many results have each status, every status named (zeros included)."""
    return count_statuses(results)


def first_line(result: CaseResult) -> int | None:
    """The recording line where the first difference or the crash happened, when known."""
    for mismatch in result.mismatches:
        if mismatch.line is not None:
            return mismatch.line
    return result.crash.line if result.crash is not None else None


def headline(result: CaseResult) -> str:
    """One line saying what went wrong: the first mismatch, the crash, or the expectation."""
    if result.status == XPASSED and result.expectation is not None:
        reason = f": {result.expectation.reason}" if result.expectation.reason else ""
        return f"passes, but {result.expectation.source} expects it to fail{reason}"
    prefix = ""
    if result.status == XFAILED and result.expectation is not None:
        reason = f" ({result.expectation.reason})" if result.expectation.reason else ""
        prefix = f"expected failure{reason}: "
    if result.mismatches:
        m = result.mismatches[0]
        where = f" (line {m.line})" if m.line is not None else ""
        more = len(result.mismatches) - 1
        tail = f" (+{more} more)" if more else ""
        text = f"{m.path}{where}: {expected_got(m.expected, m.actual, ONE_LINE_CHARS)}"
        return prefix + text + tail
    if result.crash is not None:
        return prefix + result.crash.message
    return prefix + result.status


# -- JUnit XML ----------------------------------------------------------------------------------

_XML_INVALID = frozenset(range(0x20)) - {0x09, 0x0A, 0x0D}


def _xml_text(text: str) -> str:
    """`text` with the characters XML 1.0 cannot hold written as escapes (`\\x1b`)."""
    if not any(ord(ch) in _XML_INVALID or 0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        return text.replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")
    out = []
    for ch in text:
        code = ord(ch)
        if code in _XML_INVALID:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF):
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def junit_names(case_id: str, mode: str) -> tuple[str, str]:
    """The (classname, name) of a case in JUnit: `conform.llama-server`, `tool_call[plain]`."""
    folder, _, name = case_id.rpartition("/")
    classname = "conform" + ("." + folder.replace("/", ".") if folder else "")
    return classname, f"{name}[{mode}]"


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def _junit_case(result: CaseResult) -> ET.Element:
    classname, name = junit_names(result.case_id, result.mode)
    case = ET.Element(
        "testcase", {"classname": classname, "name": name, "time": _seconds(result.duration)}
    )
    if result.status == PASSED:
        return case
    tag = {
        FAILED: "failure",
        XPASSED: "failure",
        CRASHED: "error",
        TIMED_OUT: "error",
        XFAILED: "skipped",
    }.get(result.status, "failure")
    message = shorten(headline(result), _JUNIT_MESSAGE_CHARS)
    element = ET.SubElement(case, tag, {"type": result.status, "message": _xml_text(message)})
    element.text = _xml_text("\n".join(describe_case(result, limit=None)))
    return case


def junit_xml(results: Sequence[CaseResult], info: RunInfo) -> str:
    """The JUnit XML document of a run: one testcase per case and mode, in one testsuite."""
    n = counts(results)
    totals = {
        "tests": str(len(results)),
        "failures": str(n[FAILED] + n[XPASSED]),
        "errors": str(n[CRASHED] + n[TIMED_OUT]),
    }
    root = ET.Element("testsuites", {"name": "conform", **totals, "time": _seconds(info.duration)})
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": "conform",
            **totals,
            "skipped": str(n[XFAILED]),
            "time": _seconds(info.duration),
            "timestamp": info.started.isoformat(timespec="seconds"),
        },
    )
    properties = ET.SubElement(suite, "properties")
    for key, value in (
        ("conform.version", conform_version()),
        ("target", info.target),
        ("suite", str(info.suite)),
        ("modes", ",".join(info.modes)),
        ("seed", str(info.seed)),
        *(
            (f"rule.{tag}", f"{n['passed']}/{n['cases']} cases conforming")
            for tag, n in rule_totals(results).items()
        ),
    ):
        ET.SubElement(properties, "property", {"name": key, "value": _xml_text(value)})
    suite.extend(_junit_case(result) for result in results)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# -- JSON ---------------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """`value` as JSON can hold it and a report should: non-finite numbers and foreign objects
    become strings, long strings and deep structures are cut, saying how much (safetext)."""
    return capped(value)


def _text(text: str | None, limit: int = FILE_TEXT_CHARS) -> str | None:
    return None if text is None else shorten_with_size(text, limit)


def _mismatch_json(m: Mismatch) -> dict[str, Any]:
    found: dict[str, Any] = {"path": m.path}
    # A side that lacks the field has no key: null is a value, absence is not.
    if m.expected is not ABSENT:
        found["expected"] = _jsonable(m.expected)
    if m.actual is not ABSENT:
        found["actual"] = _jsonable(m.actual)
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
    }


def result_json(result: CaseResult) -> dict[str, Any]:
    """One result as the JSON report holds it."""
    expectation = result.expectation
    return {
        "case": result.case_id,
        "mode": result.mode,
        "recording": recording_path(result),
        "status": result.status,
        "duration": round(result.duration, 6),
        "mismatches": [_mismatch_json(m) for m in result.mismatches],
        "crash": _crash_json(result.crash),
        "expectation": None
        if expectation is None
        else {"reason": expectation.reason, "source": expectation.source, "was": expectation.was},
        "pins": list(result.pins),
        "choice": [dict(c) for c in result.choice],
    }


def json_report(results: Sequence[CaseResult], info: RunInfo) -> dict[str, Any]:
    """The JSON report of a run (docs/json-report.md)."""
    return {
        "report_schema": REPORT_SCHEMA,
        "conform_version": conform_version(),
        "target": info.target,
        "target_kind": info.kind,
        "shard": None if info.shard is None else {"index": info.shard[0], "count": info.shard[1]},
        "suite": {
            "path": str(info.suite),
            "paths": [str(p) for p in info.suites or (info.suite,)],
            "cases": info.cases,
        },
        "modes": list(info.modes),
        "seed": info.seed,
        "ok": not failed(results) and not info.interrupted and info.stopped is None,
        "totals": {"runs": len(results), **counts(results)},
        "rules": rule_totals(results),
        "duration": round(info.duration, 6),
        "interrupted": info.interrupted,
        "stopped": info.stopped,
        "results": [result_json(r) for r in results],
    }


def json_text(results: Sequence[CaseResult], info: RunInfo) -> str:
    """The JSON report as text: two-space indent, UTF-8, trailing newline."""
    return dumps(json_report(results, info), indent=2) + "\n"


# -- GitHub Actions -----------------------------------------------------------------------------


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
        if result.status not in FAILING:
            continue
        where: dict[str, str] = {}
        if result.status == XPASSED and result.expectation is not None:
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
    if info.interrupted:
        verdict = "⚠️ interrupted"
    lines = [
        f"### conform: `{info.target}` {verdict}",
        "",
        f"{len(results)} runs ({info.cases} cases x {len(info.modes)} modes, seed {info.seed}) "
        f"in {info.duration:.2f} s: {', '.join(parts) or 'none'}",
        "",
        "| rule | cases conforming | |",
        "|---|---|---|",
        *(
            f"| {tag} | {n['passed']}/{n['cases']} | {'❌' if n['failed'] else '✅'} |"
            for tag, n in rule_totals(results).items()
        ),
        "",
    ]
    shown_folds = [f for f in fold(results) if f.first.status != PASSED]
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


# -- writing ------------------------------------------------------------------------------------


def write_junit(path: Path, results: Sequence[CaseResult], info: RunInfo) -> None:
    """Write the JUnit XML report to `path`, atomically."""
    write_report(path, junit_xml(results, info))


def write_json(path: Path, results: Sequence[CaseResult], info: RunInfo) -> None:
    """Write the JSON report to `path`, atomically."""
    write_report(path, json_text(results, info))
