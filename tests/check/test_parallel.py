"""`-j N`: cases run on N drivers at once, one per thread; the reports are the same as with -j 1."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from harness.check.options import RunOptions
from harness.check.parallel import in_order, run, run_parallel
from harness.check.results import PASSED
from harness.drive.inprocess import InProcessDriver
from harness.errors import GoldenError
from harness.suite.cases import Suite
from tests.conftest import invoke

TESTS = Path(__file__).resolve().parents[1]
#: Wrong in one rule, raises outside the contract on tool-call streams and dies outright (the
#: worker is replaced) on prompt progress: passes, failures and both kinds of crash.
UNEVEN = """
import os

from tests.miniatures import EmptyIdWins


class Uneven(EmptyIdWins):
    def push(self, data):
        if '"tool_calls":[{' in data.replace(" ", ""):
            raise RuntimeError("tool calls are not done yet")
        if "prompt_progress" in data:
            os._exit(3)
        return super().push(data)
"""
#: Passes, failures (R9 ids) and both kinds of crash, a few worker deaths each run: the property is
#: the same report whatever finishes first, which more cases or every mode would only repeat.
CASES = (
    "-k", "llama-server/*", "-k", "synthetic/r9_empty_id_before_real",
    "-k", "synthetic/r9_id_changes_midstream",
)  # fmt: skip
#: Two modes: the reports' order by case then mode is in play.
MODES = ("--mode", "plain", "--mode", "whitespace")


def json_report(tmp_path: Path, target: str, *args: str) -> dict[str, Any]:
    out = tmp_path / f"report{len(list(tmp_path.glob('report*')))}.json"
    result = invoke("run", target, *CASES, "--json", str(out), *args)
    assert result.exit_code == 1, result.output
    document: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return document


def without_durations(document: dict[str, Any]) -> dict[str, Any]:
    for result in document["results"]:
        result.pop("duration")
    document.pop("duration")
    document.pop("started")
    return document


def test_two_jobs_give_the_same_json_report_as_one(tmp_path: Path) -> None:
    path = tmp_path / "uneven.py"
    path.write_text(UNEVEN, encoding="utf-8")
    one = without_durations(json_report(tmp_path, f"{path}:Uneven", *MODES, "-j", "1"))
    two = without_durations(json_report(tmp_path, f"{path}:Uneven", *MODES, "-j", "2"))
    statuses = {result["status"] for result in one["results"]}
    assert statuses == {"passed", "failed", "crashed"}, statuses  # the comparison means something
    messages = {r["crash"]["message"] for r in one["results"] if r["crash"] is not None}
    assert any("exited with status 3" in m for m in messages), messages
    assert any("RuntimeError" in m for m in messages), messages
    assert one == two


class SlowFirstDriver(InProcessDriver):
    """The reference, but the first case of the run waits until every other driver is closed.

    So that case's results arrive last, by construction rather than by thread scheduling: the
    run has three drivers and more cases than that, so the case held back is not the last one.
    """

    made: ClassVar[list[SlowFirstDriver]] = []
    lock = threading.Lock()
    first_taken = False
    hold_first = False  # set by the test of arrival order

    def __init__(self) -> None:
        import reference

        super().__init__(reference.Assembler)
        self.thread = threading.get_ident()
        self.cases = 0
        self.closed = False
        with self.lock:
            self.made.append(self)

    def start_case(self) -> None:
        assert threading.get_ident() == self.thread  # a driver stays on the thread that made it
        self.cases += 1
        with self.lock:
            hold = self.hold_first and not SlowFirstDriver.first_taken
            SlowFirstDriver.first_taken = True
        if hold:
            deadline = time.monotonic() + 30
            while not self.others_closed() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert self.others_closed(), "the other drivers never finished"
        super().start_case()

    def others_closed(self) -> bool:
        with self.lock:
            others = [d for d in self.made if d is not self]
        return len(others) == 2 and all(d.closed for d in others)

    def close(self) -> None:
        self.closed = True
        super().close()


@pytest.fixture
def slow_first() -> type[SlowFirstDriver]:
    SlowFirstDriver.made = []
    SlowFirstDriver.first_taken = SlowFirstDriver.hold_first = False
    return SlowFirstDriver


def test_results_arrive_as_they_complete_and_in_order_sorts_them(
    suite: Suite, slow_first: type[SlowFirstDriver]
) -> None:
    cases = suite.cases(("synthetic/r1_*",))
    assert len(cases) > 3
    modes = ("plain", "escapes")
    slow_first.hold_first = True
    arrived = list(run_parallel(cases, slow_first, modes=modes, options=RunOptions(seed=1), jobs=3))
    expected = list(
        run(
            cases,
            InProcessDriver(__import__("reference").Assembler),
            modes=modes,
            options=RunOptions(seed=1),
        )
    )
    assert len(slow_first.made) == 3 and all(d.closed for d in slow_first.made)
    assert sum(d.cases for d in slow_first.made) == len(cases) * len(modes)
    key = [(r.case_id, r.mode) for r in expected]
    assert [(r.case_id, r.mode) for r in arrived] != key  # the case held back finished last
    assert [(r.case_id, r.mode) for r in in_order(arrived, cases, modes)] == key
    assert all(r.status == PASSED for r in arrived)


class CountingSlowDriver(InProcessDriver):
    """The reference, taking a while over each case, counting the cases it starts."""

    started: ClassVar[list[int]] = []  # one count per driver
    closed: ClassVar[int] = 0

    def __init__(self) -> None:
        import reference

        super().__init__(reference.Assembler)
        self.index = len(self.started)
        self.started.append(0)

    def start_case(self) -> None:
        self.started[self.index] += 1
        time.sleep(0.05)
        super().start_case()

    def close(self) -> None:
        CountingSlowDriver.closed += 1
        super().close()


def test_a_harness_error_in_a_worker_stops_the_run_and_closes_every_driver(
    suite_copy: Suite,
) -> None:
    # The first case is broken and many follow it: the other worker must stop after the case it
    # is on, not run the rest before the error is raised.
    CountingSlowDriver.started, CountingSlowDriver.closed = [], 0
    cases = suite_copy.cases(("synthetic/r1_*", "synthetic/r2_*"))
    assert len(cases) > 10
    cases[0].golden.unlink()
    with pytest.raises(GoldenError):
        list(
            run_parallel(
                cases, CountingSlowDriver, modes=("plain",), options=RunOptions(seed=1), jobs=2
            )
        )
    assert CountingSlowDriver.closed == 2
    assert sum(CountingSlowDriver.started) <= 3, CountingSlowDriver.started


def test_one_job_uses_one_driver_and_closes_it(
    suite: Suite, slow_first: type[SlowFirstDriver]
) -> None:
    cases = suite.cases(("synthetic/r1_*",))
    results = list(
        run_parallel(cases, slow_first, modes=("plain",), options=RunOptions(seed=1), jobs=1)
    )
    assert len(results) == len(cases)
    assert len(slow_first.made) == 1 and slow_first.made[0].closed


def test_jobs_with_in_process_is_a_usage_error() -> None:
    result = invoke("run", "reference:Assembler", "--in-process", "-j", "2")
    assert result.exit_code == 2
    assert "-j runs worker processes" in result.output


class CancelsAfter(InProcessDriver):
    """The reference; sets `cancel` as its n-th case starts (the stop a signal handler makes)."""

    def __init__(self, cancel: threading.Event, after: int) -> None:
        import reference

        super().__init__(reference.Assembler)
        self.cancel, self.after, self.cases = cancel, after, 0

    def start_case(self) -> None:
        self.cases += 1
        if self.cases == self.after:
            self.cancel.set()
        super().start_case()


@pytest.mark.parametrize("after", [1, 2, 3, 5])
def test_cancel_ends_the_run_after_the_call_under_way(suite: Suite, after: int) -> None:
    # Two modes per case: a stop in the first mode of a case leaves its second mode, and every
    # later case, to stop. A result made while the run was stopping is dropped.
    cases = suite.cases(("synthetic/r1_*",))
    cancel = threading.Event()
    driver = CancelsAfter(cancel, after)
    results = list(
        run(cases, driver, modes=("plain", "key-order"), options=RunOptions(seed=1), cancel=cancel)
    )
    assert driver.cases == after
    assert len(results) == after - 1


@pytest.mark.parametrize("jobs", [1, 2])
def test_cancel_stops_every_worker_and_hides_later_errors(suite_copy: Suite, jobs: int) -> None:
    cases = suite_copy.cases(("synthetic/r1_*", "synthetic/r2_*"))
    cases[-1].golden.unlink()  # an error no worker reaches, or one raised after the stop
    cancel = threading.Event()
    made: list[CancelsAfter] = []

    def make() -> CancelsAfter:
        made.append(CancelsAfter(cancel, 3))
        return made[-1]

    results = list(
        run_parallel(
            cases, make, modes=("plain",), options=RunOptions(seed=1), jobs=jobs, cancel=cancel
        )
    )
    assert len(made) == jobs
    started = sum(d.cases for d in made)
    assert started <= 3 * jobs < len(cases), started
    assert len(results) < started
