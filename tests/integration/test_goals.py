"""benchmarks/goals.py: its options, its verdicts, and the benchmark functions it reuses exist.

The figures themselves are measured by running the script (timed unit tests would be flaky);
these checks keep it runnable when the benchmarks it borrows from change.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import goals  # noqa: E402


def test_an_unknown_goal_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        goals.main(["--only", "suite,nope"])
    assert caught.value.code == 2 and "unknown goal(s) nope" in capsys.readouterr().err


def test_a_figure_meets_its_goal_at_the_limit_and_not_above() -> None:
    assert goals.Figure("x", "what", 1.0, 1.0, "x").met
    missed = goals.Figure("x", "what", 1.01, 1.0, "x", "detail")
    assert not missed.met and "MISSED" in missed.line() and "detail" in missed.line()


def test_check_exits_1_only_when_a_goal_is_missed(monkeypatch: pytest.MonkeyPatch) -> None:
    figures = {"met": [goals.Figure("m", "a", 0.5, 1.0, "x")]}
    monkeypatch.setattr(goals, "GOALS", ("met", "missed"))
    figures["missed"] = [goals.Figure("m", "b", 2.0, 1.0, "x")]
    monkeypatch.setattr(
        goals, "MEASURES", {k: (lambda o, f=v: iter(f)) for k, v in figures.items()}
    )
    assert goals.main(["--only", "met", "--check"]) == 0
    assert goals.main(["--only", "met,missed", "--check"]) == 1
    assert goals.main(["--only", "met,missed"]) == 0


def test_every_goal_of_the_issue_is_measured() -> None:
    assert set(goals.MEASURES) == set(goals.GOALS)
    assert goals.GOALS == ("reference", "suite", "pipes", "long", "matrix")


def test_the_benchmark_functions_it_reuses_exist() -> None:
    import bench_assembler
    import bench_pipes

    from tests.tools import matrix_docs as matrix
    from tests.tools import synth

    for module, names in [
        (bench_assembler, ["build_stream", "run_json_loads", "run_msgspec_typed"]),
        (bench_pipes, ["_payloads", "_once"]),
        (matrix, ["build"]),
        (synth, ["write_suite"]),
    ]:
        for name in names:
            assert hasattr(module, name), f"{module.__name__}.{name}"
    from harness.drive.spec import python_target_driver  # noqa: F401


def test_the_clients_floor_is_the_cost_of_more_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The matrix's floor figure: openai-python's CPU a chunk and a case, both measured (a
    script that fails, or a slope of zero, would show as None or 0)."""
    pytest.importorskip("openai")
    found = goals._client_floor("openai", goals.Options(quick=True), env=None)
    assert found is not None
    chunk, case = found
    assert 1e-6 < chunk < 0.05 and 0.0 <= case < 0.5, found
    assert goals._client_floor("no_such", goals.Options(quick=True), env=None) is None
