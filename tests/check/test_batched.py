"""The batched form of a pass (`harness.check.batched`, `harness.drive.batched`: a whole pass in one
request to conform's own worker) gives what the plain form gives, one call at a time: the same
results, mismatches, crashes and where they happened, stale golden files, for targets that pass,
fail, err early, crash mid-pass, crash at `new` and at `finish`, and die; in every kind of pass
(the whole recording, the cuts of `truncated`, a mode that changes payloads, outcomes tried in
turn, a pass too large to batch)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.check.batched import BATCH_CHARS
from harness.check.options import RunOptions
from harness.check.runner import run_case
from harness.drive.batched import BatchedDriver
from harness.drive.forked import worker_command
from harness.drive.process import ProcessDriver
from harness.drive.spec import python_target_driver
from harness.errors import GoldenError
from harness.suite.cases import Case, Suite
from harness.suite.golden import read_golden
from harness.suite.recording import iter_payloads

TARGETS = '''
import os
import reference
from tests.miniatures import RepeatsToolCallId as Fails  # a mismatch on every tool call


class ErrsAtSecondPush(reference.Assembler):
    def __init__(self):
        super().__init__()
        self.pushes = 0

    def push(self, data):
        self.pushes += 1
        if self.pushes == 2:
            raise reference.InferError(reference.ErrorKind.PROTOCOL, "no second chunk")
        return super().push(data)


class CrashesAtThirdPush(ErrsAtSecondPush):
    """Drops the second push's events (a mismatch), then raises outside the contract."""

    def push(self, data):
        self.pushes += 1
        if self.pushes == 3:
            raise RuntimeError("boom")
        events = reference.Assembler.push(self, data)
        return [] if self.pushes == 2 else events


def crashes_at_new():
    raise ValueError("no assembler today")


class CrashesAtFinish(reference.Assembler):
    def finish(self, thinking_capped):
        raise RuntimeError("no finish")


class DiesAtFourthPush(ErrsAtSecondPush):
    def push(self, data):
        self.pushes += 1
        if self.pushes == 4:
            os._exit(3)
        return reference.Assembler.push(self, data)
'''
NAMES = (
    "reference:Assembler",
    "Fails",
    "ErrsAtSecondPush",
    "CrashesAtThirdPush",
    "crashes_at_new",
    "CrashesAtFinish",
    "DiesAtFourthPush",
)
CASES = (
    "llama-server/tool_call",  # passes, or fails on each tool call
    "llama-server/server_error",  # ends in an error step
    "synthetic/i2_timings_beyond_safe_integer",  # outcomes tried in turn
    "synthetic/r2_payload_above_1_mib",  # too large to batch
)
MODES = ("plain", "key-order", "truncated")


def _drivers(spec: str) -> tuple[ProcessDriver, BatchedDriver]:
    """The plain driver and the batched one of the same worker."""
    command, env = worker_command(spec)
    plain = ProcessDriver(command, env=env, label=spec, own_worker=True, timeout=60)
    batched = python_target_driver(spec, timeout=60)
    assert isinstance(batched, BatchedDriver) and not isinstance(plain, BatchedDriver)
    return plain, batched


def _outcome(case: Case, golden: dict[str, Any], driver: ProcessDriver, mode: str) -> object:
    try:
        result = run_case(case, golden, driver, mode=mode, options=RunOptions(seed=5))
    except GoldenError as exc:
        return f"GoldenError: {exc}"
    return replace(result, duration=0.0)


def _goldens(case: Case) -> Iterator[dict[str, Any]]:
    """The case's golden document, and versions of it out of date with its recording."""
    golden = read_golden(case)
    steps = golden["steps"]
    yield golden
    yield {**golden, "steps": steps[:-1]}  # fewer steps than payloads
    yield {**golden, "steps": [*steps, steps[-1]]}  # more
    yield {**golden, "steps": [steps[0], {**steps[1], "line": 99}, *steps[2:]]}  # another line


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("batched")
    (folder / "targets.py").write_text(TARGETS, encoding="utf-8")
    return folder / "targets.py"


@pytest.mark.parametrize("name", NAMES)
def test_a_batched_pass_gives_what_one_call_at_a_time_gives(
    suite: Suite, targets: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = name if ":" in name else f"{targets}:{name}"
    plain, batched = _drivers(spec)
    passes: list[int] = []
    run_pass = BatchedDriver.run_pass

    def counted(self: BatchedDriver, *args: Any, **kwargs: Any) -> Any:
        passes.append(1)
        return run_pass(self, *args, **kwargs)

    monkeypatch.setattr(BatchedDriver, "run_pass", counted)
    statuses: set[object] = set()
    try:
        for case in suite.cases(CASES):
            # A target that dies meets the case's own golden file only: each death costs a new
            # worker (0.3 s of CPU, most of this test's), and the stale ones are the other targets'
            # (CrashesAtThirdPush ends a pass early too).
            goldens = [read_golden(case)] if name == "DiesAtFourthPush" else _goldens(case)
            for golden in goldens:
                for mode in MODES:
                    one_by_one = _outcome(case, golden, plain, mode)
                    assert _outcome(case, golden, batched, mode) == one_by_one, (case, mode)
                    statuses.add(getattr(one_by_one, "status", "stale"))
    finally:
        plain.close()
        batched.close()
    # The stale golden files, and the target's own (one that crashes at `new` meets neither).
    assert len(statuses) >= (1 if name == "crashes_at_new" else 2), statuses
    # (each batched pass compared with its plain form: 3 batched cases x 3 modes a golden file)
    assert len(passes) > (10 if name == "DiesAtFourthPush" else 20)


def test_the_cases_take_both_ways(suite: Suite) -> None:
    """The large case is too large to batch; the others are batched."""
    sizes = {
        case.case_id: sum(len(p.data) for p in iter_payloads(case.recording))
        for case in suite.cases(CASES)
    }
    assert sizes.pop("synthetic/r2_payload_above_1_mib") > BATCH_CHARS
    assert max(sizes.values()) < BATCH_CHARS
