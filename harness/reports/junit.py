"""The JUnit XML report: one testcase per case and mode, for CI test reporters.

Like every reporter it only turns a run's records into text; `tests/data/junit-10.xsd` is the
schema the tests check it against.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from harness.check.results import CaseResult
from harness.check.status import Status
from harness.files import write_report
from harness.reports.problems import Problem
from harness.reports.report import Report, RunInfo, conform_version, counts, headline
from harness.reports.text import describe_case, rule_totals
from harness.safetext import shorten

_JUNIT_MESSAGE_CHARS = 500

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
    if result.status == Status.PASSED:
        return case
    tag = {
        Status.FAILED: "failure",
        Status.XPASSED: "failure",
        Status.CRASHED: "error",
        Status.TIMED_OUT: "error",
        Status.XFAILED: "skipped",
    }[result.status]
    message = shorten(headline(result), _JUNIT_MESSAGE_CHARS)
    element = ET.SubElement(case, tag, {"type": result.status, "message": _xml_text(message)})
    element.text = _xml_text("\n".join(describe_case(result, limit=None)))
    return case


def _partial_case(results: Sequence[CaseResult], info: RunInfo) -> ET.Element:
    """A testcase in error saying the run is incomplete, so that a CI page shows a partial run
    as red, not as a short green one."""
    asked = info.cases * len(info.modes)
    why = info.why_partial() or "incomplete"
    message = f"the run is partial ({why}): {len(results)} of {asked} runs finished"
    if info.stopped is not None:
        message += f"; {info.stopped}"
    case = ET.Element("testcase", {"classname": "conform", "name": "run[complete]", "time": "0"})
    error = ET.SubElement(case, "error", {"type": "partial", "message": _xml_text(message)})
    error.text = _xml_text(message)
    return case


def _class_properties(
    results: Sequence[CaseResult], info: RunInfo, problems: Sequence[Problem] | None
) -> list[tuple[str, str]]:
    """`class.valid` = `185/185 cases conforming (real captures 9/9)`, one per class of input
    the run had, and `verdict`: the verdict in words (docs/json-report.md, `verdict`)."""
    if not results:
        return []
    report = Report(info, tuple(results))
    found = []
    for name, t in report.classes().items():
        if t.cases:
            real = f" (real captures {t.real_passed}/{t.real})" if t.real else ""
            found.append((f"class.{name}", f"{t.passed}/{t.cases} cases conforming{real}"))
    found.append(("verdict", report.verdict(problems)))
    return found


def junit_xml(
    results: Sequence[CaseResult], info: RunInfo, *, problems: Sequence[Problem] | None = None
) -> str:
    """The JUnit XML document of a run: one testcase per case and mode, in one testsuite."""
    n = counts(results)
    partial = info.why_partial()
    marker = None if partial is None or info.shard is not None else _partial_case(results, info)
    totals = {
        "tests": str(len(results) + (marker is not None)),
        "failures": str(n[Status.FAILED] + n[Status.XPASSED]),
        "errors": str(n[Status.CRASHED] + n[Status.TIMED_OUT] + (marker is not None)),
    }
    root = ET.Element("testsuites", {"name": "conform", **totals, "time": _seconds(info.duration)})
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": "conform",
            **totals,
            "skipped": str(n[Status.XFAILED]),
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
        ("level", info.level),
        *((("conform.partial", partial),) if partial is not None else ()),
        *(
            (f"rule.{tag}", f"{n['passed']}/{n['cases']} cases conforming")
            for tag, n in rule_totals(results).items()
        ),
        *_class_properties(results, info, problems),
    ):
        ET.SubElement(properties, "property", {"name": key, "value": _xml_text(value)})
    suite.extend(_junit_case(result) for result in results)
    if marker is not None:
        suite.append(marker)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(
    path: Path,
    results: Sequence[CaseResult],
    info: RunInfo,
    *,
    problems: Sequence[Problem] | None = None,
) -> None:
    """Write the JUnit XML report to `path`, atomically (`problems`: the run's, when made)."""
    write_report(path, junit_xml(results, info, problems=problems))
