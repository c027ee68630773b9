"""Gating is fair: an implementation that takes another allowed outcome at an implementation-
defined point passes by default, and fails --strict (or --choose of the reference's outcome) on
exactly the cases that pin that point, with the point named in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.suite.cases import Suite
from reference.choices import REFERENCE
from tests.check.fair_targets import OTHERS
from tests.conftest import invoke

ROOT = Path(__file__).resolve().parents[2]
TARGETS = Path(__file__).resolve().parent / "fair_targets.py"


def run(tmp_path: Path, *args: str) -> tuple[int, str, list[dict[str, object]]]:
    report = tmp_path / "r.json"
    result = invoke("run", *args, "--in-process", "--mode", "plain", "--json", str(report))
    data = json.loads(report.read_text(encoding="utf-8"))
    return result.exit_code, result.output, data["results"]


@pytest.mark.parametrize(("point", "outcome"), OTHERS, ids=[f"{p}={v}" for p, v in OTHERS])
def test_another_allowed_outcome_passes_by_default_and_fails_strict(
    tmp_path: Path, point: str, outcome: str
) -> None:
    target = f"{TARGETS}:{point}_{outcome}"
    pinned = {c.case_id for c in Suite(ROOT).cases() if point in c.pins}
    assert pinned, f"no case pins {point}"
    code, output, results = run(tmp_path, target)
    assert code == 0, output
    took = {r["case"]: r["choice"] for r in results if r["case"] in pinned}
    assert any(outcome in (c.get(point) for c in choices) for choices in took.values()), took

    code, output, results = run(tmp_path, target, "--strict")
    failing = {r["case"] for r in results if r["status"] != "passed"}
    assert code == 1 and failing and failing <= pinned, output
    assert f"implementation-defined {point}: only {point}={getattr(REFERENCE, point)}" in output

    code, output, _ = run(tmp_path, target, "--choose", f"{point}={outcome}", "--rule", point)
    assert code == 0, output


def test_the_reference_passes_strict(tmp_path: Path) -> None:
    code, output, results = run(tmp_path, "reference:Assembler", "--strict")
    assert code == 0, output
    assert all(r["status"] == "passed" for r in results)
