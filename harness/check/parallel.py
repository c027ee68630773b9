"""Running a target over many cases: in order on one driver, or on `jobs` drivers at once.

Each case's golden document is read once for all its modes (`goldens`, by default parsed from
disk; the pipeline passes its plan's cache), and `cancel` stops a run between calls. The unit of
work is `harness.check.runner.run_case`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from harness.check.batched import BatchedPass, sent_ahead
from harness.check.options import DEFAULT_OPTIONS, RunOptions
from harness.check.results import CaseResult
from harness.check.runner import run_case
from harness.drive.base import Driver
from harness.suite.cases import Case
from harness.suite.golden import made_for, read_golden

#: The golden document of a case (raising GoldenError when it is missing or malformed).
Goldens = Callable[[Case], dict[str, Any]]


def _cancelled(cancel: threading.Event | None) -> bool:
    return cancel is not None and cancel.is_set()


def golden_for(case: Case, goldens: Goldens = read_golden) -> dict[str, Any]:
    """The golden document of `case`, when it was made for its recording as it is: a broken
    recording is named first, then a missing, malformed or stale golden file (GoldenError)."""
    capped = case.info.thinking_capped
    return made_for(case, capped, goldens(case))


def _run_all(
    take: Callable[[], Case | None],
    driver: Driver,
    *,
    modes: Sequence[str],
    options: RunOptions,
    cancel: threading.Event | None,
    goldens: Goldens,
) -> Iterator[CaseResult]:
    """Every case `take` gives, in every mode, stopping when `cancel` is set: a result made while
    the run was being stopped (its program killed under it) is not the target's, and is dropped.

    A driver that runs passes (conform's own worker) is sent each case's first pass in a mode
    before the case before it is read (`harness.check.batched.sent_ahead`), to run meanwhile."""

    def ahead(unit: tuple[Case, dict[str, Any], str] | None) -> BatchedPass | None:
        if unit is None:
            return None
        case, golden, mode = unit
        return sent_ahead(case, golden, driver, mode=mode, options=options)

    units = _units(take, modes, goldens)
    unit = next(units, None)
    first = ahead(unit)
    while unit is not None:
        if _cancelled(cancel):
            return
        case, golden, mode = unit
        try:  # the next one, sent ahead now; its golden file's error is raised in its turn
            unit, error = next(units, None), None
        except Exception as exc:  # raised after this case's result
            unit, error = None, exc
        following = ahead(unit)
        try:
            result = run_case(case, golden, driver, mode=mode, options=options, first=first)
        except Exception:
            if _cancelled(cancel):  # a program that cannot restart as the run is stopping
                return
            raise
        if _cancelled(cancel):
            return
        yield result
        if error is not None:
            raise error
        first = following


def _units(
    take: Callable[[], Case | None], modes: Sequence[str], goldens: Goldens
) -> Iterator[tuple[Case, dict[str, Any], str]]:
    """Each case `take` gives, with its golden document, in each mode."""
    while (case := take()) is not None:
        golden = golden_for(case, goldens)
        for mode in modes:
            yield case, golden, mode


def run(
    cases: Sequence[Case],
    driver: Driver,
    *,
    modes: Sequence[str],
    options: RunOptions = DEFAULT_OPTIONS,
    cancel: threading.Event | None = None,
    goldens: Goldens = read_golden,
) -> Iterator[CaseResult]:
    """Results for every case in every mode, in order, as `options` judge them; each golden file
    is read once.

    Setting `cancel` (from a signal handler or another thread) ends the run after the call under
    way returns: no further case or mode starts.
    """
    remaining = iter(cases)

    def take() -> Case | None:
        return None if _cancelled(cancel) else next(remaining, None)

    yield from _run_all(take, driver, modes=modes, options=options, cancel=cancel, goldens=goldens)


DriverFactory = Callable[[], Driver]
_WORKER_DONE = object()


def run_parallel(
    cases: Sequence[Case],
    make_driver: DriverFactory,
    *,
    modes: Sequence[str],
    options: RunOptions = DEFAULT_OPTIONS,
    jobs: int,
    cancel: threading.Event | None = None,
    goldens: Goldens = read_golden,
) -> Iterator[CaseResult]:
    """Results for every case in every mode from `jobs` drivers, as they complete.

    Each worker thread makes and owns one driver and takes whole cases from a shared queue (so a
    golden file is still read once). Threads suffice because a driver that runs its target in
    another process waits on it there. Completion order depends on timing: `in_order` gives the
    order reports use. A harness error in any worker (a stale golden file) stops the run and is
    raised here, once every worker has stopped and closed its driver. Setting `cancel` stops
    every worker after its call under way (as `run` does); errors after that are not raised.
    """
    if jobs <= 1:
        driver = make_driver()
        try:
            yield from run(
                cases, driver, modes=modes, options=options, cancel=cancel, goldens=goldens
            )
        finally:
            driver.close()
        return
    pending: queue.SimpleQueue[Case] = queue.SimpleQueue()
    for case in cases:
        pending.put(case)
    done: queue.SimpleQueue[object] = queue.SimpleQueue()
    stop = threading.Event()

    def take() -> Case | None:
        """A whole case for this worker (so a golden file is still read once), or None."""
        if stop.is_set() or _cancelled(cancel):
            return None
        try:
            return pending.get_nowait()
        except queue.Empty:
            return None

    def work() -> None:
        try:
            driver = make_driver()
        except BaseException as exc:
            done.put(exc)
            done.put(_WORKER_DONE)
            return
        try:
            for result in _run_all(
                take, driver, modes=modes, options=options, cancel=cancel, goldens=goldens
            ):
                done.put(result)
                if stop.is_set():
                    break
        except BaseException as exc:
            done.put(exc)
        finally:
            driver.close()
            done.put(_WORKER_DONE)

    workers = [
        threading.Thread(target=work, name=f"conform-worker-{n}", daemon=True)
        for n in range(min(jobs, max(len(cases), 1)))
    ]
    for worker in workers:
        worker.start()
    running = len(workers)
    try:
        while running:
            item = done.get()
            if item is _WORKER_DONE:
                running -= 1
            elif isinstance(item, BaseException):
                if not _cancelled(cancel):
                    raise item
            else:
                assert isinstance(item, CaseResult)
                yield item
    finally:
        stop.set()
        for worker in workers:
            worker.join()


def in_order(
    results: Iterable[CaseResult], cases: Sequence[Case], modes: Sequence[str]
) -> list[CaseResult]:
    """`results` sorted by case (in the order of `cases`), then mode (in the order of `modes`)."""
    case_rank = {case.case_id: index for index, case in enumerate(cases)}
    mode_rank = {mode: index for index, mode in enumerate(modes)}
    return sorted(results, key=lambda r: (case_rank[r.case_id], mode_rank[r.mode]))
