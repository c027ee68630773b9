"""Running targets over a plan: the one way every front door runs a target.

`run_target` runs one target over a `Plan` (its drivers, its expected failures, interruption,
progress) and returns a `RunRecord`: the typed report, the error inside conform that stopped it
if any, and its exit code. `run_targets` runs several at once over the same plan (the matrix),
each on its own thread with its own workers, sharing the suite and the parsed golden files.
Nothing here prints: the front doors render the record.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.check.options import RunOptions
from harness.check.parallel import Goldens, in_order, run_parallel
from harness.check.results import CaseResult
from harness.check.xfail import XfailList
from harness.drive.forked import forked_workers
from harness.drive.inprocess import Driver
from harness.drive.limits import DescriptorGuard
from harness.drive.process import allow_programs, stop_all_programs
from harness.errors import INTERNAL_ERROR, ConformError
from harness.files import environment_error
from harness.pipeline.selection import Plan
from harness.pipeline.signals import Interruption
from harness.reports.report import Report, RunInfo
from harness.suite.cases import Case


@dataclass(frozen=True)
class RunRecord:
    """One target's run: its report, the error inside conform that stopped it (the report then
    holds the runs before it), and the signal that interrupted it."""

    report: Report
    failure: BaseException | None = None
    signum: int | None = None
    #: Set when the target used up something conform needs (the descriptors of an in-process
    #: run): what, with the limit named. A failure of the target (exit 1), the report partial.
    limit: str | None = None

    @property
    def results(self) -> tuple[CaseResult, ...]:
        return self.report.results

    @property
    def info(self) -> RunInfo:
        return self.report.info

    @property
    def exit_code(self) -> int:
        """128 + the signal when interrupted, 3 after an error inside conform, 1 when a result
        fails the run, else 0 (README.md#exit-codes)."""
        if self.signum is not None:
            return 128 + self.signum
        if self.limit is not None:
            return 1
        if self.failure is not None:
            return INTERNAL_ERROR
        return 1 if self.report.failed else 0


class Drivers:
    """Makes the drivers of a run: the first one up front (so a target that cannot start stops
    the run before it begins), more on demand for `-j`, each on the thread that uses it."""

    def __init__(self, make: Callable[[], Driver]) -> None:
        self._make = make
        self._spare: list[Driver] = [make()]
        self._lock = threading.Lock()

    def __call__(self) -> Driver:
        with self._lock:
            if self._spare:
                return self._spare.pop()
        return self._make()

    def close_unused(self) -> None:
        with self._lock:
            spare, self._spare = self._spare, []
        for driver in spare:
            driver.close()


class IdleCores:
    """The cores of a matrix run, shared by its targets: a target adds a worker beyond its `-j`
    while fewer workers run than there are cores (the last long targets then use the cores the
    short ones left), the target with the most time left first; and a **straggler**, a target
    whose time left is more than all the others' together (it would end the run alone on one
    worker), adds one at once, when that time pays back a worker's start (one worker beyond the
    cores at most). Results do not depend
    on the number of workers (`run_parallel`)."""

    def __init__(self, cores: int) -> None:
        self.cores = cores
        self._busy = 0
        self._changed = threading.Condition()
        self._targets: list[_IdleCoreDrivers] = []  # the targets running
        self._waiting: list[_IdleCoreDrivers] = []  # those with a worker waiting for a core

    def add(self, workers: int) -> None:
        """`workers` more (or fewer) workers running."""
        with self._changed:
            self._busy += workers
            self._changed.notify_all()

    def wake(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def join(self, target: _IdleCoreDrivers) -> None:
        with self._changed:
            self._targets.append(target)

    def leave(self, target: _IdleCoreDrivers) -> None:
        with self._changed:
            self._targets.remove(target)
            self._changed.notify_all()

    def take(self, unneeded: Callable[[], bool], target: _IdleCoreDrivers | None = None) -> bool:
        """Waits for an idle core (True: it now counts as busy) or until `unneeded()` (False);
        `target`'s worker first when its target has the most time left, or at once when it is
        the straggler."""
        with self._changed:
            if target is not None:
                self._waiting.append(target)
            try:
                while not unneeded():
                    if self._busy < self.cores and self._first(target):
                        self._busy += 1
                        return True
                    if (  # one worker beyond the cores at most, however many wait
                        target is not None and self._busy <= self.cores and self._straggler(target)
                    ):
                        self._busy += 1
                        return True
                    self._changed.wait(0.25)  # `unneeded` also follows an interruption
                return False
            finally:
                if target is not None:
                    self._waiting.remove(target)

    def _first(self, target: _IdleCoreDrivers | None) -> bool:
        if target is None:
            return True
        left = target.time_left() or 0.0
        return all((other.time_left() or 0.0) <= left for other in self._waiting)

    def _straggler(self, target: _IdleCoreDrivers) -> bool:
        left = target.time_left()
        if left is None or left < _PAYBACK + 2 * target.start_seconds:
            return False
        others = 0.0
        for other in self._targets:
            their = other.time_left() if other is not target else 0.0
            if their is None:  # a target whose pace is not known yet may take longer still
                return False
            others += their
        return left > others


#: Seconds a target must have left, beyond twice its last worker's start, to add a worker at once.
_PAYBACK = 2.0


class _Unneeded:
    """The driver of a worker that found no idle core before its target's cases ran out: it
    closes at once and runs nothing (its thread takes no case)."""

    def start_case(self) -> None:
        raise AssertionError("an unneeded worker runs no case")

    def push(self, data: str, line: int) -> dict[str, Any]:
        raise AssertionError("an unneeded worker runs no case")

    def finish(self, thinking_capped: bool) -> dict[str, Any]:
        raise AssertionError("an unneeded worker runs no case")

    def case_stderr(self) -> str:
        return ""

    def close(self) -> None:
        return None


class _IdleCoreDrivers:
    """A target's drivers in a matrix run: its `-j` ones, then one more each time a core is idle,
    while some case is not yet taken and some other worker of the target still runs."""

    def __init__(self, options: RunOptions, cores: IdleCores, cases: int, stop: Interruption):
        self._options, self._cores, self._cases, self._stop = options, cores, cases, stop
        self._lock = threading.Lock()
        self._taken = 0  # cases a worker has taken (each reads its golden file once, first)
        self._live = 0  # drivers made and not closed
        self._made = 0
        self.extra = 0  # workers beyond -j
        self.jobs = max(options.jobs, cores.cores)  # its -j workers count from the start
        self._first_taken: float | None = None  # when its first case was taken
        self.start_seconds = 0.0  # how long its last worker took to start
        cores.join(self)

    def time_left(self) -> float | None:
        """The seconds its cases not yet taken will take, at the pace its cases were taken since
        the first (its workers' start left out); None before that pace is known, 0 once all are
        taken. An estimate only `IdleCores` reads."""
        taken, cases, first = self._taken, self._cases, self._first_taken
        if taken >= cases:
            return 0.0
        if first is None or taken < 3:
            return None
        return (time.monotonic() - first) / (taken - 1) * (cases - taken)

    def taken(self, golden: Goldens) -> Goldens:
        """`golden`, counting the cases taken."""

        def read(case: Case) -> dict[str, Any]:
            with self._lock:
                self._taken += 1
                if self._first_taken is None:
                    self._first_taken = time.monotonic()
            self._cores.wake()
            return golden(case)

        return read

    def _unneeded(self) -> bool:
        with self._lock:
            return self._taken >= self._cases or self._live == 0 or self._stop.cancel.is_set()

    def __call__(self) -> Driver:
        with self._lock:
            beyond = self._made >= self._options.jobs
            self._made += 1
        if beyond:
            if not self._cores.take(self._unneeded, self):
                return _Unneeded()
            with self._lock:
                self.extra += 1
        began = time.monotonic()
        driver = self._options.start_driver()
        self.start_seconds = time.monotonic() - began
        with self._lock:
            self._live += 1
        close = driver.close

        def closed() -> None:
            try:
                close()
            finally:
                with self._lock:
                    self._live -= 1
                self._cores.wake()

        driver.close = closed  # type: ignore[method-assign]
        return driver

    def done(self) -> None:
        """The target's run is over: its workers no longer count."""
        self._cores.leave(self)
        self._cores.add(-(self._options.jobs + self.extra))


def run_target(
    options: RunOptions,
    plan: Plan,
    *,
    expected: XfailList | None = None,
    stop: Interruption | None = None,
    progress: Callable[[CaseResult], None] | None = None,
    label: str | None = None,
    cores: IdleCores | None = None,
) -> RunRecord:
    """Run `options`' target over every case of `plan` in every mode, `expected` failures
    applied (by default those of `options.xfail_file`, checked against the whole suite).

    ConformError when the target cannot start or the suite is broken mid-run (a stale golden
    file), unless the run was being stopped; any other exception is kept as the record's
    `failure`, with the results before it.
    """
    if expected is None and options.xfail_file is not None:
        expected = plan.expected_failures(options.xfail_file)
    with forked_workers():  # a Python target is imported once, its workers forked (drive/forked.py)
        return _run_target(options, plan, expected, stop, progress, label, cores)


def _run_target(
    options: RunOptions,
    plan: Plan,
    expected: XfailList | None,
    stop: Interruption | None,
    progress: Callable[[CaseResult], None] | None,
    label: str | None,
    cores: IdleCores | None,
) -> RunRecord:
    stop = stop if stop is not None else Interruption(in_process=options.in_process)
    began, started = datetime.now(UTC), time.perf_counter()
    results: list[CaseResult] = []
    failure: BaseException | None = None
    allow_programs()  # a run earlier in this process (tests) may have been stopped
    drivers = None
    idle = (
        None
        if cores is None or options.in_process
        else _IdleCoreDrivers(options, cores, len(plan.cases), stop)
    )
    guard = DescriptorGuard() if options.in_process else nullcontext(None)
    limit: str | None = None
    guarded = guard.__enter__()
    try:
        try:
            drivers = Drivers(options.start_driver if idle is None else idle)
        except OSError as exc:  # the machine's limits (too many open files): a setup error
            error = environment_error(exc)
            if error is None:
                raise
            raise error from None
        for result in run_parallel(
            plan.cases,
            drivers,
            modes=plan.modes,
            options=options,
            jobs=options.jobs if idle is None else idle.jobs,
            cancel=stop.cancel,
            goldens=plan.golden if idle is None else idle.taken(plan.golden),
        ):
            result = result if expected is None else expected.apply(result)
            results.append(result)
            if progress is not None:
                progress(result)
    except KeyboardInterrupt:  # in-process: the signal landed in the target
        stop.interrupted(stop.signum or signal.SIGINT)
    except ConformError:
        if guarded is not None and guarded.exhausted():  # a file of conform's own, not opened
            guarded.release()  # conform's own files need it now: the target used them up
            limit = guarded.tripped or guarded.message()
        elif not stop.stopped:
            raise
    except OSError as exc:
        if guarded is not None and exc.errno in (errno.EMFILE, errno.ENFILE):
            guarded.release()  # conform's own files need it now: the target used them up
            limit = guarded.tripped or guarded.message()
        else:
            failure = exc
    except Exception as exc:
        failure = exc
    finally:
        guard.__exit__(None, None, None)
        stop.stop_raising()
        if drivers is not None:
            drivers.close_unused()
        if idle is not None:
            idle.done()
        if stop.stopped:
            stop_all_programs()
    info = RunInfo(
        label or options.label,
        plan.roots[0],
        len(plan.cases),
        plan.modes,
        options.seed,
        time.perf_counter() - started,
        began,
        interrupted=stop.stopped,
        stopped=limit if failure is None else f"{type(failure).__name__}: {failure}",
        suites=plan.roots,
        kind=options.kind,
        shard=plan.selection.shard,
        level=options.level,
        rerun=options.rerun_args(),
        cwd=_cwd(),
        pythonpath=os.environ.get("PYTHONPATH", ""),
    )
    report = Report(info, tuple(in_order(results, plan.cases, plan.modes)))
    return RunRecord(report, failure, stop.signum if stop.stopped else None, limit)


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # the folder was deleted under the run
        return ""


@dataclass(frozen=True)
class Target:
    """One implementation of a matrix: its label, how it runs, and its expected failures."""

    label: str
    options: RunOptions

    @property
    def xfail(self) -> Path | None:
        return self.options.xfail_file


@dataclass(frozen=True)
class TargetRun:
    """What became of one target of `run_targets`: its record, or why it did not run."""

    target: Target
    record: RunRecord | None
    error: str | None = None


def run_targets(
    targets: Sequence[Target],
    plan: Plan,
    *,
    stop: Interruption | None = None,
    done: Callable[[TargetRun], None] | None = None,
    idle_cores: bool = True,
) -> list[TargetRun]:
    """Every target over `plan`, all at once (each with its own `-j` workers), in order.

    With `idle_cores`, a
    target also adds a worker whenever fewer workers run than this machine has cores
    (`IdleCores`): the long targets that run last then use the cores the short ones left. The
    results are the same with any number of workers.

    A target that cannot start, or whose expected-failures file is wrong, is a `TargetRun` with
    its error and no record; an error inside conform is raised once every target has stopped.
    """
    stop = stop if stop is not None else Interruption()
    runs: dict[str, TargetRun] = {}
    failures: list[BaseException] = []

    cores = IdleCores(os.cpu_count() or 1) if idle_cores else None
    if cores is not None:  # every target's -j workers, before any target looks for an idle core
        cores.add(sum(t.options.jobs for t in targets if not t.options.in_process))

    def one(target: Target) -> None:
        try:
            record = run_target(
                target.options, plan, stop=stop, label=target.options.label, cores=cores
            )
            outcome = TargetRun(target, record)
            if record.failure is not None:
                failures.append(record.failure)
        except ConformError as exc:
            outcome = TargetRun(target, None, str(exc))
        except BaseException as exc:
            failures.append(exc)
            outcome = TargetRun(target, None, f"{type(exc).__name__}: {exc}")
        runs[target.label] = outcome
        if done is not None:
            done(outcome)

    threads = [threading.Thread(target=one, args=(t,), name=f"conform-{t.label}") for t in targets]
    with forked_workers():  # each Python target's server lives until every target ends
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if failures:
        raise failures[0]
    return [runs[t.label] for t in targets]
