"""Running a target over many cases: in order on one driver, or on `jobs` drivers at once.

Each case's golden file is read once for all its modes (`goldens`, by default parsed from disk;
the pipeline passes its plan's cache), and `cancel` stops a run between calls. The unit of work
is `harness.check.runner.run_case`.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any

from harness.check.modes import mutator
from harness.check.results import FULL, CaseResult
from harness.check.runner import CasePlan, Pushes, Upcoming, first_pass, rendered_pass, run_case
from harness.drive.base import Driver
from harness.suite.cases import Case
from harness.suite.golden import Golden, made_for, open_golden
from harness.suite.recording import RecordingInfo, read_recording
from harness.suite.sse import Payload


def _cancelled(cancel: threading.Event | None) -> bool:
    return cancel is not None and cancel.is_set()


class _Case:
    """One case of a run, read when first needed: its recording and golden file, the golden
    document when a pass needs it, and what each mode pushes (`Pushes`, shared by the mode's
    passes and by the plan sent ahead of them)."""

    __slots__ = ("_document", "_goldens", "_pushes", "case", "golden", "info", "payloads")

    def __init__(self, case: Case, goldens: Callable[[Case], Golden]) -> None:
        self.case = case
        self._goldens = goldens
        self.golden: Golden | None = None
        self.info: RecordingInfo | None = None
        self.payloads: list[Payload] | None = None
        self._pushes: dict[str, Pushes] = {}
        self._document: dict[str, Any] | None = None

    def load(self) -> Golden:
        """The golden file (raising when the case is broken: a missing golden file)."""
        if self.golden is None:
            # The recording's payloads are read once for every mode and outcome of the case
            # (None for one too large to hold: each pass then reads it as it goes).
            self.info, self.payloads = read_recording(self.case.recording)
            self.golden = self._goldens(self.case)
        return self.golden

    def document(self) -> dict[str, Any]:
        """The golden document, parsed once (raising when it is malformed or stale)."""
        if self._document is None:
            golden, info = self.load(), self.info
            assert info is not None
            self._document = made_for(self.case, info.thinking_capped, golden.document)
        return self._document

    def pushes(self, mode: str, seed: int) -> Pushes | None:
        if self.payloads is None:
            return None
        found = self._pushes.get(mode)
        if found is None:
            mutate = mutator(mode, seed=seed, case_id=self.case.case_id)
            found = self._pushes[mode] = Pushes(self.payloads, mutate)
        return found


class _Runs:
    """The cases and modes one driver runs, in order, each with the plan of the pass expected
    after it (`Upcoming`): the next mode's first pass, or the next case's, which `take` gives
    (and which is read then, ahead of its turn).

    Planning ahead never changes a result: a case that cannot be read ahead is read again in
    its turn (and raises then), and a driver drops a plan sent ahead that does not come.
    """

    def __init__(
        self,
        take: Callable[[], Case | None],
        *,
        modes: Sequence[str],
        seed: int,
        require: dict[str, str] | None,
        goldens: Callable[[Case], Golden],
    ) -> None:
        self._take = take
        self._modes = modes
        self._seed = seed
        self._require = require
        self._goldens = goldens
        self._cases: deque[_Case] = deque()  # the current case first, then the next if taken

    def _case(self, index: int) -> _Case | None:
        while len(self._cases) <= index:
            case = self._take()
            if case is None:
                return None
            self._cases.append(_Case(case, self._goldens))
        return self._cases[index]

    def __iter__(self) -> Iterator[tuple[_Case, str, Upcoming]]:
        while (current := self._case(0)) is not None:
            current.load()
            for position in range(len(self._modes)):
                yield current, self._modes[position], partial(self._after, current, position)
            self._cases.popleft()

    def _first(self, item: _Case, mode: str) -> CasePlan | None:
        pushes = item.pushes(mode, self._seed)
        if item.golden is None or pushes is None:
            return None
        try:
            golden = item.document()
        except Exception:  # raised again in its turn, where it belongs
            return None
        return first_pass(
            item.case, golden, pushes, mode=mode, seed=self._seed, require=self._require
        )

    def _after(self, current: _Case, position: int) -> CasePlan | None:
        """The first pass after mode `position` of the current case."""
        for mode in self._modes[position + 1 :]:
            found = self._first(current, mode)
            if found is not None:
                return found
        following = self._case(1)
        if following is None:
            return None
        try:
            following.load()
        except Exception:  # raised again in its turn, where it belongs
            return None
        for mode in self._modes:
            found = self._first(following, mode)
            if found is not None:
                return found
        return None


def _run_all(
    runs: _Runs,
    driver: Driver,
    *,
    seed: int,
    cancel: threading.Event | None,
    require: dict[str, str] | None,
    level: str,
) -> Iterator[CaseResult]:
    """Every case and mode of `runs`, stopping when `cancel` is set: a result made while the run
    was being stopped (its program killed under it) is not the target's, and is dropped."""
    for item, mode, after in runs:
        if _cancelled(cancel):
            return
        assert item.golden is not None and item.info is not None
        try:
            result = rendered_pass(
                item.case,
                item.golden,
                item.document,
                item.info,
                driver,
                mode=mode,
                seed=seed,
                level=level,
                require=require,
                pushes=item.pushes(mode, seed),
                after=after,
            ) or run_case(
                item.case,
                item.document(),
                driver,
                mode=mode,
                seed=seed,
                require=require,
                level=level,
                payloads=item.payloads,
                pushes=item.pushes(mode, seed),
                after=after,
                real=item.info.real,
            )
        except Exception:
            if _cancelled(cancel):  # a program that cannot restart because the run is stopping
                return
            raise
        if _cancelled(cancel):
            return
        yield result


def run(
    cases: Sequence[Case],
    driver: Driver,
    *,
    modes: Sequence[str],
    seed: int,
    cancel: threading.Event | None = None,
    require: dict[str, str] | None = None,
    level: str = FULL,
    goldens: Callable[[Case], Golden] = open_golden,
) -> Iterator[CaseResult]:
    """Results for every case in every mode, in order; each golden file is read once.

    Setting `cancel` (from a signal handler or another thread) ends the run after the call under
    way returns: no further case or mode starts. While one case and mode is checked, the driver
    is told the plan of the next (`harness.drive.base.plan_next_case`).
    """
    remaining = iter(cases)
    runs = _Runs(
        lambda: None if _cancelled(cancel) else next(remaining, None),
        modes=modes,
        seed=seed,
        require=require,
        goldens=goldens,
    )
    yield from _run_all(runs, driver, seed=seed, cancel=cancel, require=require, level=level)


DriverFactory = Callable[[], Driver]
_WORKER_DONE = object()


def run_parallel(
    cases: Sequence[Case],
    make_driver: DriverFactory,
    *,
    modes: Sequence[str],
    seed: int,
    jobs: int,
    cancel: threading.Event | None = None,
    require: dict[str, str] | None = None,
    level: str = FULL,
    goldens: Callable[[Case], Golden] = open_golden,
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
                cases,
                driver,
                modes=modes,
                seed=seed,
                cancel=cancel,
                require=require,
                level=level,
                goldens=goldens,
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
            runs = _Runs(take, modes=modes, seed=seed, require=require, goldens=goldens)
            for result in _run_all(
                runs, driver, seed=seed, cancel=cancel, require=require, level=level
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
