"""Reports: JUnit XML (checked against the common JUnit schema), the JSON report (against its own
schema), GitHub Actions annotations and step summary, and how `conform run` writes them.

`tests/data/junit-10.xsd` is the Jenkins xUnit plugin's JUnit schema (MIT), as pytest ships it
for its own tests; `tests/data/junit-10.xsd.md` says where it comes from.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from harness.check.compare import ABSENT
from harness.check.results import (
    CRASHED,
    FAILED,
    PASSED,
    TIMED_OUT,
    XFAILED,
    XPASSED,
    CaseResult,
    Crash,
    Expectation,
    Mismatch,
)
from harness.reports.github import github_annotations, github_summary
from harness.reports.junit import junit_names, junit_xml
from harness.reports.report import RunInfo, json_report
from tests.conftest import conform, invoke

if TYPE_CHECKING:
    import xmlschema

TESTS = Path(__file__).resolve().parents[1]
MINIATURES = str(TESTS / "miniatures.py")
JUNIT_XSD = TESTS / "data" / "junit-10.xsd"
#: A broken target's failures on a few cases, one crash among them.
FEW_CASES = ("-k", "synthetic/r1_*", "-k", "synthetic/r8_*", "--mode", "plain")


@pytest.fixture(scope="module")
def junit_schema() -> xmlschema.XMLSchema:
    # Imported here: 0.4 s of CPU for each xdist worker that collects this file and runs none of
    # the four tests that read JUnit XML.
    import xmlschema

    return xmlschema.XMLSchema(JUNIT_XSD)


@pytest.fixture(scope="module")
def report_schema() -> Any:
    text = resources.files("harness").joinpath("schemas/report.schema.json").read_text("utf-8")
    schema = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def info(**changes: Any) -> RunInfo:
    fields: dict[str, Any] = {
        "target": "mypkg:Assembler",
        "suite": Path("suite"),
        "cases": 3,
        "modes": ("plain", "escapes"),
        "seed": 7,
        "duration": 1.25,
    }
    fields.update(changes)
    return RunInfo(**fields)


def one_of_each() -> list[CaseResult]:
    """A result of every status, with the awkward values reports must survive."""
    mismatches = (
        Mismatch("steps[1].events[0].text", "Hi", "H\x1bi\ud800", 1, 5, '{"x": "\x00"}'),
        Mismatch("finish.completion.timings.cache_n", ABSENT, float("nan")),
    )
    crash = Crash("push raised KeyError: 'id'", "Traceback:\n  \x1b[31mKeyError\x00", 2, 9, None)
    hang = Crash("no reply to push within 1 s", "stderr:\n  working...", 0, 3, None)
    expectation = Expectation("not yet", "conform.xfail:4", FAILED)
    return [
        CaseResult(
            "llama-server/tool_call", "plain", "llama-server/tool_call.http", PASSED, 0.0012
        ),
        CaseResult("synthetic/r1_a|b", "plain", "synthetic/r1_a|b.sse", FAILED, 0.5, mismatches),
        CaseResult("synthetic/r5_c", "plain", "synthetic/r5_c.sse", CRASHED, 0.01, crash=crash),
        CaseResult("synthetic/r5_c", "escapes", "synthetic/r5_c.sse", TIMED_OUT, 1.0, crash=hang),
        CaseResult(
            "top", "plain", "top.sse", XFAILED, 0.1, mismatches[:1], expectation=expectation
        ),
        CaseResult("top", "escapes", "top.sse", XPASSED, 0.1, expectation=expectation),
    ]


# -- JUnit --------------------------------------------------------------------------------------


def test_junit_names_put_the_folder_in_the_classname_and_the_mode_in_the_name() -> None:
    assert junit_names("llama-server/tool_call", "plain") == (
        "conform.llama-server",
        "tool_call[plain]",
    )
    assert junit_names("a/b/c", "escapes") == ("conform.a.b", "c[escapes]")
    assert junit_names("top", "plain") == ("conform", "top[plain]")


def test_junit_of_every_status_validates_and_counts_each_kind(junit_schema: Any) -> None:
    text = junit_xml(one_of_each(), info())
    junit_schema.validate(text)
    root = ET.fromstring(text)
    suite = root.find("testsuite")
    assert suite is not None
    counts = {key: suite.get(key) for key in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": "6", "failures": "2", "errors": "2", "skipped": "1"}
    cases = suite.findall("testcase")
    assert [len(case) for case in cases] == [0, 1, 1, 1, 1, 1]
    kinds = [(case[0].tag, case[0].get("type")) for case in cases[1:]]
    assert kinds == [
        ("failure", FAILED),
        ("error", CRASHED),
        ("error", TIMED_OUT),
        ("skipped", XFAILED),
        ("failure", XPASSED),
    ]
    failure = cases[1][0]
    assert failure.get("message", "").startswith('steps[1].events[0].text (line 5): expected "Hi"')
    assert "finish.completion.timings.cache_n" in (failure.text or "")  # every mismatch listed
    assert "KeyError" in (cases[2][0].text or "")
    assert "\\x1b[31mKeyError\\x00" in (cases[2][0].text or "")  # XML cannot hold ESC, NUL
    assert "\x1b" not in text and "\x00" not in text
    assert cases[4][0].get("message", "").startswith("expected failure (not yet)")
    assert "conform.xfail:4" in cases[5][0].get("message", "")


def test_junit_of_no_results_validates(junit_schema: Any) -> None:
    junit_schema.validate(junit_xml([], info(cases=0)))


# -- JSON ---------------------------------------------------------------------------------------


def test_json_report_of_every_status_follows_its_schema(report_schema: Any) -> None:
    document = json_report(one_of_each(), info())
    report_schema.validate(document)
    json.dumps(document, allow_nan=False)  # strict JSON: NaN became a string
    assert document["ok"] is False
    assert document["totals"] == {
        "runs": 6,
        "passed": 1,
        "failed": 1,
        "crashed": 1,
        "timed-out": 1,
        "xfailed": 1,
        "xpassed": 1,
    }
    failed = document["results"][1]
    assert failed["recording"] == "recordings/synthetic/r1_a|b.sse"
    first, second = failed["mismatches"]
    assert first == {
        "path": "steps[1].events[0].text",
        "expected": "Hi",
        "actual": "H\x1bi\ud800",
        "step": 1,
        "line": 5,
        "payload": '{"x": "\x00"}',
        "said": None,
    }
    assert "expected" not in second and second["actual"] == "NaN"  # absent: no key; NaN as NaN
    assert document["results"][2]["crash"]["line"] == 9
    assert document["results"][5]["expectation"] == {
        "reason": "not yet",
        "source": "conform.xfail:4",
        "was": FAILED,
    }


def test_a_report_that_is_all_passes_and_xfails_is_ok(report_schema: Any) -> None:
    results = [r for r in one_of_each() if r.status in (PASSED, XFAILED)]
    document = json_report(results, info())
    report_schema.validate(document)
    assert document["ok"] is True


# -- GitHub Actions -----------------------------------------------------------------------------


def test_annotations_point_at_the_recording_line_or_the_xfail_line(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    commands = github_annotations(one_of_each(), info(suite=suite), workspace=tmp_path)
    assert len(commands) == 4  # failed, crashed, timed-out, xpassed: the run's failures
    failed, crashed, timed_out, xpassed = commands
    assert failed.startswith(
        "::error file=suite/recordings/synthetic/r1_a|b.sse,line=5,title=conform%3A FAIL "
    )
    assert "%0A" in failed and "\n" not in failed  # multi-line message, one command line
    assert crashed.startswith("::error file=suite/recordings/synthetic/r5_c.sse,line=9,")
    assert timed_out.startswith("::error file=suite/recordings/synthetic/r5_c.sse,line=3,")
    assert xpassed.startswith(
        "::error file=conform.xfail,line=4,title=conform%3A XPASS top [escapes]"
    )


def test_summary_has_totals_and_a_row_per_result_not_passing() -> None:
    summary = github_summary(one_of_each(), info())
    assert "does not conform" in summary
    assert "1 passed, 1 failed, 1 crashed, 1 timed-out, 1 xfailed, 1 xpassed" in summary
    rows = [line for line in summary.splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == 5
    assert "`synthetic/r1_a\\|b`" in rows[0]  # a pipe in a cell is escaped


# -- through conform run ------------------------------------------------------------------------


def test_conform_run_writes_reports_that_validate_and_agree(
    tmp_path: Path, junit_schema: Any, report_schema: Any
) -> None:
    junit, report = tmp_path / "out" / "conform.xml", tmp_path / "conform.json"
    code, output = conform(
        "run",
        f"{MINIATURES}:ServerErrorAsProtocol",
        *FEW_CASES,
        "--junit-xml",
        str(junit),
        "--json",
        str(report),
    )
    assert code == 1, output
    junit_schema.validate(str(junit))
    document = json.loads(report.read_text(encoding="utf-8"))
    report_schema.validate(document)
    failing = {(r["case"], r["mode"]) for r in document["results"] if r["status"] != PASSED}
    assert failing and all(case.startswith("synthetic/r8_") for case, _ in failing)
    root = ET.parse(junit).getroot()
    in_junit = {
        (case.get("classname"), case.get("name"))
        for case in root.iter("testcase")
        if len(case) and case[0].tag in ("failure", "error")
    }
    assert in_junit == {junit_names(case, mode) for case, mode in failing}
    assert document["suite"]["cases"] == len(document["results"])
    assert not [p for p in tmp_path.rglob(".*.tmp")]  # atomic writes leave no temporary file


def test_on_github_actions_conform_run_annotates_and_appends_a_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(TESTS.parent))
    code, output = conform("run", f"{MINIATURES}:ServerErrorAsProtocol", *FEW_CASES)
    assert code == 1
    annotations = [line for line in output.splitlines() if line.startswith("::error ")]
    assert annotations and all("file=recordings/synthetic/r8_" in a for a in annotations)
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n") and "does not conform" in text


def test_off_github_actions_there_are_no_annotations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    code, output = conform("run", f"{MINIATURES}:ServerErrorAsProtocol", *FEW_CASES)
    assert code == 1 and "::error" not in output


def test_the_example_in_the_json_report_docs_follows_the_schema(report_schema: Any) -> None:
    text = (TESTS.parent / "docs" / "json-report.md").read_text(encoding="utf-8")
    example = text.split("```json\n", 1)[1].split("```", 1)[0]
    report_schema.validate(json.loads(example))


@pytest.mark.parametrize("option", ["--junit-xml", "--json", "--write-xfail"])
def test_a_report_that_cannot_be_written_is_exit_2(tmp_path: Path, option: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    target = str(blocker / "report")  # its folder is a file
    result = invoke(
        "run", "reference:Assembler", "--in-process", "-k", "synthetic/r1_*", option, target
    )
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].startswith(f"Error: cannot write {target}: ")
    assert "Traceback" not in result.output


HANGS_OR_DIES = """
import os
import sys
import time

import reference


class Target(reference.Assembler):
    def push(self, data):
        if "prompt_progress" in data:
            print("\\x1b[31mabout to hang\\x00", file=sys.stderr, flush=True)
            time.sleep(60)
        if "tool_calls" in data:
            print("about to die", file=sys.stderr, flush=True)
            os._exit(3)
        return super().push(data)
"""


def test_reports_of_a_target_that_hangs_and_dies_in_a_worker_stay_valid(
    tmp_path: Path, junit_schema: Any, report_schema: Any
) -> None:
    path = tmp_path / "hangs_or_dies.py"
    path.write_text(HANGS_OR_DIES, encoding="utf-8")
    junit, report = tmp_path / "conform.xml", tmp_path / "conform.json"
    args = ["-k", "llama-server/progress_cached_prompt", "-k", "llama-server/tool_cal[l]"]
    code, output = conform(
        "run", f"{path}:Target", *args, "--mode", "plain", "--timeout", "1",
        "--junit-xml", str(junit), "--json", str(report), "-j", "2",
    )  # fmt: skip
    assert code == 1, output
    junit_schema.validate(str(junit))
    document = json.loads(report.read_text(encoding="utf-8"))
    report_schema.validate(document)
    statuses = {r["case"]: r["status"] for r in document["results"]}
    assert statuses == {
        "llama-server/progress_cached_prompt": "timed-out",
        "llama-server/tool_call": "crashed",
    }
    details = {r["case"]: r["crash"]["details"] for r in document["results"]}
    assert "about to hang" in details["llama-server/progress_cached_prompt"]
    assert "about to die" in details["llama-server/tool_call"]
    errors = [e.text or "" for e in ET.parse(junit).getroot().iter("error")]
    assert len(errors) == 2 and any("about to die" in text for text in errors)
