"""Running a target over a suite's cases: one plain result record per case and mode.

The runner only produces records (`CaseResult`); `harness.report` turns them into text. Each step is
compared as soon as it is made, against the golden step of the same index, with the cheap exact
check first and deepdiff only on a difference (`harness.compare`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.compare import ABSENT, Difference, differences
from harness.errors import GoldenError
from harness.golden import read_golden
from harness.inject import mutator
from harness.recording import iter_payloads
from harness.suite import Case
from harness.target import Driver, TargetCrash, TargetTimeout

PASSED = "passed"
FAILED = "failed"
CRASHED = "crashed"
TIMED_OUT = "timed-out"


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One field where the target departs from the golden file, and where it happened."""

    path: str
    expected: Any
    actual: Any
    step: int | None = None  # None: at finish
    line: int | None = None
    payload: str | None = None  # the payload pushed, in modes that change it


@dataclass(frozen=True, slots=True)
class Crash:
    """The target raised outside the contract or returned something unreadable."""

    message: str
    details: str
    step: int | None
    line: int | None
    payload: str | None


@dataclass(frozen=True)
class CaseResult:
    """The outcome of one case in one mode."""

    case_id: str
    mode: str
    recording: str
    status: str
    duration: float
    mismatches: tuple[Mismatch, ...] = ()
    crash: Crash | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _stale(case: Case, why: str) -> GoldenError:
    return GoldenError(
        case.golden,
        f"out of date with {case.recording}: {why}",
        hint=f"run 'conform golden update -k {case.case_id}' and review the diff",
    )


def _mismatches(
    found: list[Difference], *, step: int | None, line: int | None, payload: str | None
) -> list[Mismatch]:
    return [Mismatch(d.path, d.expected, d.actual, step, line, payload) for d in found]


def run_case(
    case: Case, golden: dict[str, Any], driver: Driver, *, mode: str, seed: int
) -> CaseResult:
    """Run one case in one mode and compare every step with `golden` as it is made."""
    started = time.perf_counter()
    mutate = mutator(mode, seed=seed, case_id=case.case_id)
    expected_steps: list[dict[str, Any]] = golden["steps"]
    capped: bool = golden["thinking_capped"]
    found: list[Mismatch] = []
    step_index: int | None = None
    line: int | None = None
    pushed: str | None = None

    def result(status: str, crash: Crash | None = None) -> CaseResult:
        return CaseResult(
            case.case_id,
            mode,
            case.recording_name,
            status,
            time.perf_counter() - started,
            tuple(found),
            crash,
        )

    try:
        driver.start_case()
        ended_early = False
        consumed = 0
        for step_index, payload in enumerate(iter_payloads(case.recording)):
            consumed = step_index + 1
            if step_index >= len(expected_steps):
                raise _stale(case, f"the recording has more than {len(expected_steps)} payloads")
            expected = expected_steps[step_index]
            line = payload.line
            if expected["line"] != line:
                raise _stale(case, f"step {step_index} is at line {line}, not {expected['line']}")
            pushed = payload.data if mutate is None else mutate(step_index, payload.data)
            actual = driver.push(pushed, line)
            shown = None if mutate is None else pushed
            found += _mismatches(
                differences(expected, actual, prefix=f"steps[{step_index}]"),
                step=step_index,
                line=line,
                payload=shown,
            )
            if "error" in expected or "error" in actual:
                ended_early = "error" in actual and "error" not in expected
                break
        else:
            if consumed != len(expected_steps):
                raise _stale(case, f"the recording has fewer than {len(expected_steps)} payloads")
        if "finish" in golden:
            step_index, line, pushed = None, None, None
            if ended_early:
                found.append(Mismatch("finish", golden["finish"], ABSENT))
            else:
                actual_finish = driver.finish(capped)
                found += _mismatches(
                    differences(golden["finish"], actual_finish, prefix="finish"),
                    step=None,
                    line=None,
                    payload=None,
                )
    except TargetCrash as crash:
        shown = None if mutate is None else pushed
        status = TIMED_OUT if isinstance(crash, TargetTimeout) else CRASHED
        return result(status, Crash(crash.message, crash.details, step_index, line, shown))
    return result(FAILED if found else PASSED)


def run(
    cases: Sequence[Case], driver: Driver, *, modes: Sequence[str], seed: int
) -> Iterator[CaseResult]:
    """Results for every case in every mode, in order; each golden file is read once."""
    for case in cases:
        golden = read_golden(case)
        for mode in modes:
            yield run_case(case, golden, driver, mode=mode, seed=seed)
