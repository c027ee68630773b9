"""One test over many cases instead of one pytest item a case, and every failing case named.

A pytest item costs about 3 ms of CPU under xdist (its worker's reporting, the controller's, and
collecting it in every worker) on top of its work: for families of ~780 cheap per-case checks that
is most of their cost. A folded test runs the check on every case, collects what fails, and fails
once with one line per failing case (its id and what went wrong), so a failure says as much as the
per-case items did. `parts` cuts the cases into a few items by folder, to keep each item short
enough for xdist to balance the workers.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import pytest

T = TypeVar("T")


def parts(
    named: Sequence[tuple[str, T]], *, most: int = 200
) -> list[Any]:  # list[pytest.param], whose type pytest does not export
    """`named` (id, case) cut by the id's folder, a folder of more than `most` into equal parts,
    as pytest params each holding a list of (id, case); the param's id is the folder (and part)."""
    folders: dict[str, list[tuple[str, T]]] = {}
    for name, case in named:
        folders.setdefault(name.rpartition("/")[0] or ".", []).append((name, case))
    params = []
    for folder, cases in folders.items():
        count = -(-len(cases) // most)
        size = -(-len(cases) // count)
        for number in range(count):
            chunk = cases[number * size : (number + 1) * size]
            label = folder if count == 1 else f"{folder}-{number + 1}of{count}"
            params.append(pytest.param(chunk, id=label))
    return params


def each(named: Iterable[tuple[str, T]], check: Callable[[T], object]) -> None:
    """Run `check` on every case; fail once, naming every case whose check raised and why."""
    failures = []
    count = 0
    for name, case in named:
        count += 1
        try:
            check(case)
        except Exception as exc:  # every case's failure is reported below, by its id
            failures.append(f"{name}: {why(exc)}")
    assert not failures, f"{len(failures)} of {count} case(s) fail:\n" + "\n".join(failures)


def why(exc: BaseException) -> str:
    """An exception in one line or a few: an assertion's message (pytest's rewritten one in test
    modules), anything else with its type and the line that raised it."""
    if isinstance(exc, AssertionError):
        return str(exc) or "assertion failed"
    where = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"
