"""The Python example (`examples/python/`) is gated as the README says: its expected-failures file
lists exactly what it fails, so the run passes, and each listed failure really is one."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from harness.check.runner import FAILED, PASSED, XFAILED
from harness.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "python"
TARGET = f"{EXAMPLE / 'simple_assembler.py'}:Assembler"
XFAIL = EXAMPLE / "conform.xfail"


def run_json(tmp_path: Path, *args: str) -> tuple[int, dict[str, object]]:
    report = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["run", TARGET, "--json", str(report), *args])
    return result.exit_code, json.loads(report.read_text(encoding="utf-8"))


def test_the_example_passes_its_gate_with_its_expected_failures(tmp_path: Path) -> None:
    code, report = run_json(tmp_path, "--xfail", str(XFAIL), "-j", "2")
    assert code == 0, report["totals"]
    totals = report["totals"]
    assert isinstance(totals, dict)
    assert totals["xfailed"] > 0 and totals["xpassed"] == 0
    assert totals["passed"] + totals["xfailed"] == totals["runs"]


def test_without_them_it_fails_exactly_the_listed_cases(tmp_path: Path) -> None:
    code, report = run_json(tmp_path, "--in-process")
    assert code == 1
    results = report["results"]
    assert isinstance(results, list)
    failing = {(r["case"], r["mode"]) for r in results if r["status"] != PASSED}
    assert all(r["status"] in (PASSED, FAILED) for r in results)
    code, judged = run_json(tmp_path, "--in-process", "--xfail", str(XFAIL))
    assert code == 0
    results = judged["results"]
    assert isinstance(results, list)
    assert {(r["case"], r["mode"]) for r in results if r["status"] == XFAILED} == failing
