"""Distinct problems: failing runs grouped by cause, each with its cases and modes, the smallest
case that shows it, the command that reproduces it and a bug report to paste upstream."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from harness.check.results import FAILED, CaseResult, Crash, Mismatch
from harness.reports.problems import cause, group
from tests.conftest import invoke
from tests.schemas import validate

ROOT = Path(__file__).resolve().parents[2]
MINIATURES = ROOT / "tests" / "miniatures.py"
SCHEMA = json.loads((ROOT / "harness/schemas/report.schema.json").read_text(encoding="utf-8"))


def run_json(tmp_path: Path, target: str, *args: str) -> dict[str, Any]:
    out = tmp_path / "r.json"
    result = invoke("run", target, "--in-process", *args, "--json", str(out))
    assert result.exit_code == 1, result.output
    document: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    validate(document, SCHEMA)
    return document


@pytest.mark.parametrize(
    ("miniature", "rule"),
    [("LastToolCallIdWins", "R2"), ("DropsServerMessage", "R8"), ("MergesTimings", "R3")],
)
def test_one_bug_is_one_problem_however_many_runs_it_fails(
    tmp_path: Path, miniature: str, rule: str
) -> None:
    report = run_json(tmp_path, f"{MINIATURES}:{miniature}")
    failing = [r for r in report["results"] if r["status"] != "passed"]
    problems = report["problems"]
    assert len(failing) > 5 * len(problems), (len(failing), [p["title"] for p in problems])
    assert sum(p["runs"] for p in problems) == len(failing)
    top = problems[0]
    assert top["rule"] == rule
    assert top["example"]["case"] in top["cases"]
    # The example is the smallest recording among the problem's cases, in plain mode.
    sizes = {case: _size(case) for case in top["cases"]}
    assert sizes[top["example"]["case"]] == min(sizes.values())
    assert top["example"]["mode"] == "plain"
    words = shlex.split(top["command"])
    assert words[:3] == ["conform", "run", f"{MINIATURES}:{miniature}"]
    assert words[words.index("-k") + 1] == top["example"]["case"]
    for heading in ("**What happens**", "**What the spec says**", "**Minimal stream**"):
        assert heading in top["report"]
    assert top["command"] in top["report"]


def _size(case: str) -> int:
    return next((ROOT / "recordings").glob(f"{case}.*")).stat().st_size


def test_the_text_report_ends_with_the_problems_and_problems_prints_only_them() -> None:
    target = f"{MINIATURES}:LastToolCallIdWins"
    some = ("-k", "synthetic/r2_*", "--mode", "plain", "--mode", "whitespace")  # R2: it fails
    out = invoke("run", target, "--in-process", *some)
    assert out.exit_code == 1
    lines = out.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("distinct problems: "))
    assert lines[at + 1].startswith("  1. ") and "rerun: conform run" in lines[at + 2]
    only = invoke("run", target, "--in-process", *some, "--problems")
    assert only.exit_code == 1
    assert only.output.startswith("## Problem 1 of ")
    assert "FAIL " not in only.output  # no per-case blocks
    assert only.output.splitlines()[-1].startswith("totals: ")


def _result(case: str, mode: str, path: str, expected: Any, actual: Any) -> CaseResult:
    return CaseResult(case, mode, f"{case}.sse", FAILED, 0.0, (Mismatch(path, expected, actual),))


def test_a_cause_ignores_indexes_cuts_and_the_values_themselves() -> None:
    a = _result("a", "plain", "steps[3].events[0].name", "x", "xx")
    b = _result("b", "truncated", "prefix[2].steps[1].events[4].name", "y", "yy")
    c = _result("c", "plain", "steps[3].events[0].name", "x", None)
    assert cause(a) == cause(b) != cause(c)
    crash = CaseResult("d", "plain", "d.sse", "crashed", 0.0,
                       crash=Crash("push raised KeyError: 'function'", "", 1, 2, None))  # fmt: skip
    other = CaseResult("e", "plain", "e.sse", "crashed", 0.0,
                       crash=Crash("push raised KeyError: 'index'", "", 4, 9, None))  # fmt: skip
    assert cause(crash) == cause(other)
    problems = group(
        [a, b, c, crash, other],
        recording=lambda r: ROOT / "no-such" / r.recording,
        command=lambda r: f"conform run x -k {r.case_id}",
    )
    assert sorted(len(p.results) for p in problems) == [1, 2, 2]
