"""The Python example (`examples/python/`) is gated as the README says: it passes by default, and
under --strict its expected-failures file lists exactly what it fails (an implementation-defined
point where it takes the other allowed outcome), so that run passes too.

The gate runs as the README writes it, on every case in plain mode; --strict without the file runs
in every mode on the cases that pin a point, the only ones where --strict can change a verdict
(tests/check/test_fairness.py)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.check.results import FAILED, PASSED
from harness.check.xfail import XfailList
from reference.choices import OUTCOMES
from tests.conftest import invoke

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python"
TARGET = f"{EXAMPLE / 'simple_assembler.py'}:Assembler"
XFAIL = EXAMPLE / "conform.xfail"
#: `--rule` for every implementation-defined point: the cases where --strict can change a verdict.
POINTED = tuple(arg for point in OUTCOMES for arg in ("--rule", point))


def run_json(tmp_path: Path, *args: str) -> tuple[int, dict[str, object]]:
    report = tmp_path / "report.json"
    result = invoke("run", TARGET, "--json", str(report), *args)
    return result.exit_code, json.loads(report.read_text(encoding="utf-8"))


def test_the_example_passes_its_gate_with_its_expected_failures(tmp_path: Path) -> None:
    code, report = run_json(
        tmp_path, "--strict", "--xfail", str(XFAIL), "-j", "2", "--mode", "plain"
    )
    assert code == 0, report["totals"]
    totals = report["totals"]
    assert isinstance(totals, dict)
    assert totals["xfailed"] > 0 and totals["xpassed"] == 0
    assert totals["passed"] + totals["xfailed"] == totals["runs"]


def test_without_them_it_fails_exactly_the_listed_cases(tmp_path: Path) -> None:
    code, report = run_json(tmp_path, "--in-process", "--strict", *POINTED)
    assert code == 1
    results = report["results"]
    assert isinstance(results, list)
    failing = {(r["case"], r["mode"]) for r in results if r["status"] != PASSED}
    assert all(r["status"] in (PASSED, FAILED) for r in results)
    # The runs its file lists are exactly those (the test above runs the gate with the file).
    listed = XfailList.load(XFAIL)
    assert {(r["case"], r["mode"]) for r in results if listed.find(r["case"], r["mode"])} == failing


def test_by_default_it_passes_taking_the_other_outcome(tmp_path: Path) -> None:
    code, report = run_json(tmp_path, "--in-process", "--rule", "I3")
    assert code == 0, report["totals"]
    results = report["results"]
    assert isinstance(results, list)
    took = {r["case"]: r["choice"] for r in results if r["mode"] == "plain"}
    assert took["synthetic/r6_nesting_129"] == [{"I3": "ignore"}]
