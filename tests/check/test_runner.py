"""The runner's own decisions, each pinned by a test (most found by tests/tools/mutate_harness.py):
when a pass stops, how stale golden files are named, which outcomes a case may match, which one a
failure reports, and what a crash in the truncated mode says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import reference
from harness.check.options import RunOptions
from harness.check.outcomes import outcomes, reach
from harness.check.results import CRASHED, FAILED, PASSED, CaseResult, Mismatch
from harness.check.runner import run_case
from harness.drive.inprocess import InProcessDriver
from harness.errors import GoldenError
from harness.safetext import ABSENT
from harness.suite.cases import Case, Suite
from harness.suite.golden import read_golden

PLAIN = "llama-server/content_stop"  # 12 steps and a finish, no implementation-defined point
I3 = "synthetic/r6_nesting_129"  # I3: protocol (the reference) or ignore


def one(suite: Suite, case_id: str) -> Case:
    (case,) = suite.cases((case_id,))
    return case


class FailsAtSecondPush(reference.Assembler):
    """Raises a protocol error on the second payload, where the golden file has none."""

    def __init__(self) -> None:
        super().__init__()
        self.pushes = 0

    def push(self, data: str) -> list[Any]:
        self.pushes += 1
        if self.pushes == 2:
            raise reference.InferError(reference.ErrorKind.PROTOCOL, "no second chunk")
        return super().push(data)


def test_a_target_that_errs_early_is_not_pushed_again_nor_finished(suite: Suite) -> None:
    case = one(suite, PLAIN)
    golden = read_golden(case)
    result = run_case(
        case, golden, InProcessDriver(FailsAtSecondPush), mode="plain", options=RunOptions(seed=1)
    )
    assert result.status == FAILED
    assert {m.step for m in result.mismatches} == {1, None}  # step 1, then finish: nothing else
    assert result.mismatches[-1] == Mismatch("finish", golden["finish"], ABSENT)


def test_a_golden_file_with_more_steps_than_payloads_is_stale(suite_copy: Suite) -> None:
    case = one(suite_copy, PLAIN)
    golden = read_golden(case)
    golden["steps"].append(golden["steps"][-1])
    with pytest.raises(GoldenError) as caught:
        run_case(
            case,
            golden,
            InProcessDriver(reference.Assembler),
            mode="plain",
            options=RunOptions(seed=1),
        )
    assert "the golden file has more steps than the 12 payload(s)" in str(caught.value)
    assert f"conform golden update -k {PLAIN}" in str(caught.value)


def test_outcomes_kept_by_required_choices(suite: Suite) -> None:
    golden = read_golden(one(suite, I3))
    assert [c for c, _ in outcomes(golden)] == [({"I3": "protocol"},), ({"I3": "ignore"},)]
    kept = outcomes(golden, require={"I3": "ignore"})
    assert [c for c, _ in kept] == [({"I3": "ignore"},)]
    assert [c for c, _ in outcomes(golden, require={"I1": "protocol"})] == [
        ({"I3": "protocol"},),
        ({"I3": "ignore"},),
    ]  # a point the case does not pin keeps every outcome
    # A case that pins no point has one outcome, whatever is required.
    plain = read_golden(one(suite, PLAIN))
    assert [c for c, _ in outcomes(plain, require={"I3": "ignore"})] == [()]


def test_a_strict_run_of_a_case_without_points_passes(suite: Suite) -> None:
    case = one(suite, PLAIN)
    driver = InProcessDriver(reference.Assembler)
    result = run_case(
        case,
        read_golden(case),
        driver,
        mode="plain",
        options=RunOptions(seed=1, chosen_points=(("I3", "ignore"),)),
    )
    assert result.status == PASSED and result.outcomes == 1 and not result.narrowed


def test_a_failure_names_how_many_outcomes_it_missed(suite: Suite) -> None:
    class NoReasoningEvents(reference.Assembler):
        def push(self, data: str) -> list[Any]:
            return []

    case = one(suite, I3)
    result = run_case(case, read_golden(case), InProcessDriver(NoReasoningEvents), mode="plain",
                      options=RunOptions(seed=1))  # fmt: skip
    assert result.status == FAILED and result.outcomes == 2
    plain = one(suite, PLAIN)
    result = run_case(plain, read_golden(plain), InProcessDriver(NoReasoningEvents), mode="plain",
                      options=RunOptions(seed=1))  # fmt: skip
    assert result.status == FAILED and result.outcomes == 1


def _result(mismatches: tuple[Mismatch, ...], cut: int | None = None) -> CaseResult:
    return CaseResult("c", "plain", "c.sse", FAILED, 0.0, mismatches, cut=cut)


def test_the_closest_outcome_is_the_one_that_failed_latest() -> None:
    assert reach(_result(())) == (0, 0)
    at_three = _result((Mismatch("steps[3]", 1, 2, step=3), Mismatch("steps[1]", 1, 2, step=1)))
    assert reach(at_three) == (0, 3)  # the first mismatch counts
    assert reach(_result((Mismatch("finish", 1, 2),))) == (0, 2**62)  # finish: after every step
    assert reach(_result((Mismatch("prefix[2].finish", 1, 2),), cut=2)) == (2, 2**62)


def test_a_crash_in_the_truncated_mode_names_the_cut(suite: Suite, tmp_path: Path) -> None:
    class FinishRaises(reference.Assembler):
        def finish(self, thinking_capped: bool) -> Any:
            raise RuntimeError("no finish yet")

    case = one(suite, PLAIN)
    result = run_case(case, read_golden(case), InProcessDriver(FinishRaises), mode="truncated",
                      options=RunOptions(seed=1))  # fmt: skip
    assert result.status == CRASHED and result.crash is not None
    assert result.crash.message == (
        "finish raised RuntimeError: no finish yet (the recording cut after 1 payload(s))"
    )
    assert result.cut == 1
