"""The status of one case in one mode, and the questions the harness asks of it.

A wrong answer, a crash and a timeout are different statuses, never one "failed"; expected
failures (`--xfail`) turn them into `xfailed`, and a pass that a line expected to fail into
`xpassed`. `Status` is a `StrEnum`, so JSON, JUnit and the schemas keep the plain strings
(`"timed-out"`), while the code asks the members (`status.fails_run`) instead of keeping tuples of
strings.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Status(StrEnum):
    """How one case in one mode ended."""

    PASSED = "passed"
    FAILED = "failed"
    CRASHED = "crashed"
    TIMED_OUT = "timed-out"
    XFAILED = "xfailed"  # failed, crashed or timed out, as an --xfail line expected
    XPASSED = "xpassed"  # passed although an --xfail line expected it to fail

    @property
    def is_failure(self) -> bool:
        """The target did not do what the golden file says (before expected failures apply)."""
        return self in _FAILURES

    @property
    def not_passing(self) -> bool:
        """The target does not pass, expected or not: what a baseline (`--write-xfail`) lists."""
        return self in _FAILURES or self is Status.XFAILED

    @property
    def fails_run(self) -> bool:
        """The result fails the run (exit 1): a failure not expected, or an expected one that
        passed."""
        return self in _FAILURES or self is Status.XPASSED

    @property
    def conforms(self) -> bool:
        """The target did what the golden file says (whether a line expected that or not)."""
        return self is Status.PASSED or self is Status.XPASSED

    @property
    def severity(self) -> int:
        """How bad the status is (higher is worse): a matrix cell shows its modes' worst."""
        return _SEVERITY[self]

    @property
    def label(self) -> str:
        """The word text reports show (`FAIL`, `XPASS`)."""
        return _LABELS[self]


_FAILURES = frozenset({Status.FAILED, Status.CRASHED, Status.TIMED_OUT})
_SEVERITY = {
    Status.PASSED: 0,
    Status.XFAILED: 1,
    Status.XPASSED: 2,
    Status.FAILED: 3,
    Status.TIMED_OUT: 4,
    Status.CRASHED: 5,
}
_LABELS = {
    Status.PASSED: "PASS",
    Status.FAILED: "FAIL",
    Status.CRASHED: "CRASH",
    Status.TIMED_OUT: "TIMEOUT",
    Status.XFAILED: "XFAIL",
    Status.XPASSED: "XPASS",
}

#: Every status, in the order reports count them.
STATUS_ORDER: tuple[Status, ...] = tuple(Status)


def count_statuses(statuses: Iterable[str]) -> dict[str, int]:
    """How many of `statuses` are each status, every status named in `STATUS_ORDER` (zeros
    too); keys are the plain strings reports use."""
    found = {str(status): 0 for status in STATUS_ORDER}
    for status in statuses:
        found[str(status)] += 1
    return found
