"""What every driver is: the `Driver` protocol the runner talks to, and the default time limit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

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


def plan_case(driver: Driver, pushes: Sequence[str], *, finish: bool | None) -> bool:
    """Tell `driver` what the case will push (and `finish` with, unless None), when it can use
    that (a worker speaking protocol 2 sends them all ahead); True when it took the plan.

    A driver takes a plan through an optional `plan(pushes, *, finish)` method: drivers without
    one (in-process, test doubles) simply get each call as it comes.
    """
    plan = getattr(driver, "plan", None)
    if plan is None:
        return False
    plan(pushes, finish=finish)
    return True


def plan_next_case(driver: Driver, pushes: Sequence[str], *, finish: bool | None) -> None:
    """Tell `driver` what the case after the current one will push (and `finish` with, unless
    None), when it can use that: a worker speaking protocol 2 sends it as soon as the program has
    answered the current case, so both sides work at once. The runner still starts that case
    and plans it as usual; a driver takes what it sent ahead only when that plan names the same
    requests, and drops it otherwise. Drivers without `plan_next` ignore this.
    """
    plan_next = getattr(driver, "plan_next", None)
    if plan_next is not None:
        plan_next(pushes, finish=finish)
