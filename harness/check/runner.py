"""Running one case in one mode against a target: one plain result record (`CaseResult`).

The contract, as `run_case` follows it: for each outcome the case allows (the golden file's own,
then its alternatives, then, in `hostile-keys`, what a target refusing `__proto__` members gives),
start a fresh assembler, push each payload as the mode changes it, compare each step as it is
made, then `finish` and compare (`harness.check.passes`); in `truncated`, do that for each cut,
against the reference's finish there (`harness.check.truncation`). The first outcome the target
matches passes the case; a crash or a timeout ends it at once (never an allowed outcome); a case
that matches none fails against the closest. Reporters turn the records into text.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from harness.check.batched import BatchedPass
from harness.check.modes import SEEDED, TRUNCATED, mutator
from harness.check.options import DEFAULT_OPTIONS, RunOptions
from harness.check.outcomes import Outcome, outcomes, proto_outcomes, reach
from harness.check.passes import Pass
from harness.check.results import (
    CRASHED,
    FAILED,
    PASSED,
    TIMED_OUT,
    CaseResult,
    Crash,
)
from harness.check.truncation import check_truncated
from harness.drive.base import Driver, runs_passes
from harness.drive.blame import split_origin
from harness.errors import TargetCrash, TargetTimeout
from harness.suite.cases import Case
from harness.suite.classes import class_of
from reference.choices import REFERENCE


def run_case(
    case: Case,
    golden: dict[str, Any],
    driver: Driver,
    *,
    mode: str,
    options: RunOptions = DEFAULT_OPTIONS,
    first: Pass | None = None,
) -> CaseResult:
    """Run one case in one mode and compare every step with `golden` (the case's golden
    document, in memory) as it is made, as `options` say: its seed, its level, the outcomes it
    requires at implementation-defined points. `first`: the check of its first pass, that pass
    sent ahead already (`harness.check.batched.sent_ahead`), if it was.

    A case that pins implementation-defined points passes when the target matches any allowed
    outcome: the target is run against each in turn until one matches (a crash or a timeout ends
    the case at once: it is never an allowed outcome). A failure reports the closest outcome.
    """
    seed, require = options.seed, options.required
    pins = tuple(golden.get("pins", ()))
    candidates = outcomes(golden, require=require)
    narrowed = len(candidates) < len(outcomes(golden)) if require else False
    # What the case is, whatever the target does: its input's class, whether it is a real capture.
    input_class, real = class_of(golden), case.real

    def allowed() -> Iterator[Outcome]:
        yield from candidates
        # Only once the golden outcomes failed: the cut is worked out for refusing targets alone.
        kept = require if "I6" in pins else None
        yield from proto_outcomes(case, candidates, mode=mode, seed=seed, require=kept)

    closest: CaseResult | None = None
    tried = 0
    for combos, expected in allowed():
        tried += 1
        check = first if tried == 1 and first is not None else _check(case, driver, mode, options)
        result = _attempt(case, expected, check, mode=mode, options=options, combos=combos)
        result = replace(result, pins=pins, narrowed=narrowed, input_class=input_class, real=real)
        if result.status != FAILED:
            return result
        if closest is None or reach(result) > reach(closest):
            closest = result
    assert closest is not None, "a golden file has at least its own outcome"
    return replace(closest, outcomes=tried)


def _check(case: Case, driver: Driver, mode: str, options: RunOptions) -> Pass:
    """A fresh check of `case` in `mode`: each pass given whole to a driver that runs passes
    (conform's own worker)."""
    mutate = mutator(mode, seed=options.seed, case_id=case.case_id)
    kind = BatchedPass if runs_passes(driver) else Pass
    return kind(case, driver, mutate, level=options.level)


def _attempt(
    case: Case,
    golden: dict[str, Any],
    check: Pass,
    *,
    mode: str,
    options: RunOptions,
    combos: tuple[dict[str, str], ...],
) -> CaseResult:
    """The target against one outcome: one pass (each cut's, in `truncated`)."""
    started = time.perf_counter()
    seed = options.seed
    driver = check.driver
    crash: Crash | None = None
    try:
        if mode == TRUNCATED:
            choices = REFERENCE.replace(combos[0]) if combos else REFERENCE
            check_truncated(check, golden, seed=seed, choices=choices)
        else:
            capped: bool = golden["thinking_capped"]
            check.play(golden["steps"], limit=None, finish=golden.get("finish"), capped=capped)
    except TargetCrash as exc:
        status = TIMED_OUT if isinstance(exc, TargetTimeout) else CRASHED
        message = exc.message
        if check.cut is not None:
            message += f" (the recording cut after {check.cut} payload(s))"
        origin, details = split_origin(exc.details)
        crash = Crash(message, details, check.step, check.line, check.pushed, check.at, origin)
    else:
        status = FAILED if check.found else PASSED
    logged = driver.case_stderr() if status == FAILED else None  # crashes carry theirs
    return CaseResult(
        case.case_id,
        mode,
        case.recording_name,
        status,
        time.perf_counter() - started,
        tuple(check.found),
        crash,
        seed=seed if mode in SEEDED else None,
        cut=check.cut if status != PASSED else None,
        stderr=logged or None,
        choice=combos,
        unlisted=check.unlisted,
    )
