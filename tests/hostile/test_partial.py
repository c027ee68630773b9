"""Issue 21, class 4: partial results never look complete. Every report format says when a run
is partial (interrupted, stopped by an error inside conform, shards missing), and the matrix
carries it into its verdict."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from harness.check.results import PASSED, CaseResult
from harness.reports.github import github_summary
from harness.reports.junit import junit_xml
from harness.reports.matrix_table import Column, markdown, matrix, verdict
from harness.reports.report import Report, RunInfo, json_report
from tests.conftest import invoke

RESULTS = tuple(
    CaseResult(f"synthetic/c{n}", "plain", f"synthetic/c{n}.sse", PASSED, 0.01, pins=("R1",))
    for n in range(3)
)
WHOLE = RunInfo("t:A", Path("/suite"), 10, ("plain",), 1)


@pytest.mark.parametrize(
    ("info", "why"),
    [
        (replace(WHOLE, interrupted=True), "interrupted"),
        (replace(WHOLE, stopped="RuntimeError: boom"), "stopped by an error inside conform"),
    ],
    ids=["interrupted", "stopped"],
)
def test_every_report_of_a_partial_run_says_so(info: RunInfo, why: str) -> None:
    root = ET.fromstring(junit_xml(RESULTS, info).encode())
    suite = root.find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["conform.partial"] == why
    marker = [c for c in suite.iter("testcase") if c.find("error") is not None]
    assert len(marker) == 1 and "3 of 10 runs finished" in (
        marker[0].find("error").get("message") or ""
    )
    assert int(suite.get("errors") or 0) == 1 and int(suite.get("tests") or 0) == 4
    document = json_report(RESULTS, info)
    assert document["partial"] == why and document["ok"] is False
    assert f"partial ({why})" in github_summary(RESULTS, info)
    column = Column("t", Report.from_json(document))
    assert verdict(column) == f"partial ({why})"
    data = matrix([column])
    assert data["ok"] is False and data["partial"] == ["t"]
    assert f"(partial: {why})" in markdown(data)
    assert "3/3" in markdown(data)  # the score counts only what ran, and says so beside it


def test_a_complete_run_is_not_marked() -> None:
    assert "conform.partial" not in junit_xml(RESULTS, WHOLE)
    assert json_report(RESULTS, WHOLE)["partial"] is None
    assert verdict(Column("t", Report(WHOLE, RESULTS))) == "conforms"


def test_matrix_from_an_interrupted_report_is_partial_and_fails(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_text(json.dumps(json_report(RESULTS, replace(WHOLE, interrupted=True))))
    out = invoke("matrix", "--from", str(report), "--json", str(tmp_path / "m.json"))
    assert out.exit_code == 1, out.output
    assert "(partial: interrupted)" in out.output
    assert json.loads((tmp_path / "m.json").read_text())["partial"] == ["t"]  # its label
