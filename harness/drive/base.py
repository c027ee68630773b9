"""What every driver is: the `Driver` protocol the runner talks to (and `PassDriver`, one that also
runs a whole pass in one call), and the default time limit."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

#: Seconds one call into a target (`new`, one `push`, `finish`) may take before it is a timeout.
DEFAULT_TIMEOUT = 10.0


class Driver(Protocol):
    """How the runner talks to a target, wherever it runs: one case at a time, one call a step.

    `push` and `finish` return golden-schema objects; anything outside the contract raises
    `TargetCrash` (or `TargetTimeout`), after which the runner calls `start_case` again before
    the next case (a driver that runs the target elsewhere restarts it there).
    """

    def start_case(self) -> None: ...

    def push(self, data: str, line: int) -> dict[str, Any]: ...

    def finish(self, thinking_capped: bool) -> dict[str, Any]: ...

    def case_stderr(self) -> str:
        """What the target wrote to stderr in the current case, shortened ("" when nothing)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class PassDriver(Driver, Protocol):
    """A driver that also runs a whole pass in one call (conform's own worker:
    `harness.drive.batched`): the fast form of `start_case`, each `push` and `finish`, which the
    runner uses for a pass small enough (`harness.check.batched`)."""

    def run_pass(
        self,
        pushes: Sequence[str],
        lines: Sequence[int],
        thinking_capped: bool | None,
        *,
        ahead: object | None = None,
    ) -> Iterator[dict[str, Any] | None]:
        """None for `new`, then each step up to the first error step, then the finish object
        unless `thinking_capped` is None; each as it comes. `ahead`: what `send_ahead` gave for
        this pass."""
        ...

    def send_ahead(
        self, pushes: Sequence[str], lines: Sequence[int], thinking_capped: bool | None
    ) -> object | None:
        """Send a pass (as `run_pass` takes it) to run before the one under way is read; what to
        give `run_pass` for it, or None when it was not sent."""
        ...


_RUNS_PASSES: dict[type, bool] = {}


def runs_passes(driver: Driver) -> bool:
    """`isinstance(driver, PassDriver)`, looked up once per type of driver (a protocol's
    isinstance reads the type's members on each call: a tenth of a millisecond a case)."""
    kind = type(driver)
    found = _RUNS_PASSES.get(kind)
    if found is None:
        found = _RUNS_PASSES[kind] = isinstance(driver, PassDriver)
    return found
