"""Running one target over a suite's cases, as `conform run` and `conform matrix` both do.

The target's drivers are made by a factory (`harness.drive.process.start_driver`, bound to the
target): the first one up front, so a target that cannot start stops before any case runs, more
on demand for `-j`. Each result is yielded as it completes, with the target's expected failures
applied; `in_order` gives the order reports use.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence

from harness.check.runner import CaseResult, run_parallel
from harness.check.xfail import XfailList
from harness.drive.inprocess import Driver
from harness.errors import ConformError
from harness.suite.cases import Case


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


def run_target(
    make_driver: Callable[[], Driver],
    cases: Sequence[Case],
    *,
    modes: Sequence[str],
    seed: int,
    jobs: int = 1,
    cancel: threading.Event | None = None,
    require: dict[str, str] | None = None,
    expected: XfailList | None = None,
) -> Iterator[CaseResult]:
    """Every case in every mode, as results complete, `expected` failures applied.

    The first driver is made when iteration starts; ConformError there (a target that cannot be
    imported or started) comes out of the first `next`.
    """
    drivers = Drivers(make_driver)
    try:
        for result in run_parallel(
            cases, drivers, modes=modes, seed=seed, jobs=jobs, cancel=cancel, require=require
        ):
            yield result if expected is None else expected.apply(result)
    finally:
        drivers.close_unused()


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` as (K, N), 1 <= K <= N; ConformError otherwise."""
    index, _, count = text.partition("/")
    try:
        k, n = int(index), int(count)
    except ValueError:
        k = n = 0
    if not 1 <= k <= n:
        raise ConformError(f"--shard {text!r}: give K/N with 1 <= K <= N, e.g. 2/4")
    return k, n


def shard_of(case_id: str, count: int) -> int:
    """The shard (1..count) a case belongs to: from the SHA-256 of its id, so it never depends
    on which other cases the suite holds, the machine, or Python's hash seed."""
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(cases: Sequence[Case], shard: tuple[int, int] | None) -> list[Case]:
    """The cases of shard K of N (all of them when `shard` is None)."""
    if shard is None:
        return list(cases)
    index, count = shard
    return [case for case in cases if shard_of(case.case_id, count) == index]
