"""The fast form of `Pass.play` (`harness.check.passes`), for a driver that runs a whole pass in one
call (`harness.drive.base.PassDriver`: conform's own worker, `harness.drive.batched`).

`BatchedPass.play` reads the pass's payloads first, as the plain loop would meet them (the same
golden file checks, up to the same point: the cut, the golden file's first error step, or where
the golden file is out of date, which is raised once the payloads before it are compared), sends
them in one call, and compares each step as its reply comes, with the plain form's own
comparisons; the target's first error ends the pass on both sides. A pass whose payloads are
large (more than `BATCH_CHARS` characters in all) gains nothing from it and takes the plain loop.
`tests/check/test_batched.py` holds the two forms to the same results.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.check.modes import TRUNCATED, mutator, truncation_points
from harness.check.options import RunOptions
from harness.check.outcomes import outcomes
from harness.check.passes import Pass
from harness.check.passes import stale as stale_error
from harness.drive.base import Driver, PassDriver, runs_passes
from harness.errors import GoldenError
from harness.suite.cases import Case

#: A pass whose payloads hold more characters than this is played one call at a time.
BATCH_CHARS = 1 << 20

#: A push of a pass: its index, its recording line, the payload, what is pushed, the golden step.
_Item = tuple[int, int, str, str, dict[str, Any]]


@dataclass(frozen=True, eq=False)
class _Ahead:
    """A pass `send_ahead` made: what `play` is given for it, its plan, what the driver gave."""

    steps: Iterable[dict[str, Any]]
    key: tuple[int | None, bool, bool]  # the limit, whether it finishes, thinking_capped
    planned: tuple[list[_Item], GoldenError | None] | None
    sent: object | None


class BatchedPass(Pass):
    """A `Pass` whose driver runs a whole pass in one call."""

    driver: PassDriver

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ahead: list[_Ahead] = []  # passes made (and sent, if the driver took them) ahead

    def send_ahead(
        self,
        expected_steps: Iterable[dict[str, Any]],
        *,
        limit: int | None,
        finish: dict[str, Any] | None,
        capped: bool,
    ) -> None:
        """Make the pass `play` with these arguments plays, and send it to the worker now, to
        run while the pass before it is read (when the driver takes it: `send_ahead`)."""
        planned = self._plan(expected_steps, limit)
        sent = None
        if planned is not None:
            items, stale = planned
            then = capped if finish is not None and stale is None else None
            pushes, lines = [item[3] for item in items], [item[1] for item in items]
            sent = self.driver.send_ahead(pushes, lines, then)
        key = (limit, finish is not None, capped)
        self._ahead.append(_Ahead(expected_steps, key, planned, sent))

    def play(
        self,
        expected_steps: Iterable[dict[str, Any]],
        *,
        limit: int | None,
        finish: dict[str, Any] | None,
        capped: bool,
    ) -> None:
        planned, sent = self._planned(expected_steps, limit, finish is not None, capped)
        if planned is None:
            super().play(expected_steps, limit=limit, finish=finish, capped=capped)
            return
        items, stale = planned
        then = capped if finish is not None and stale is None else None
        self.at_new()
        pushes, lines = [item[3] for item in items], [item[1] for item in items]
        replies = self.driver.run_pass(pushes, lines, then, ahead=sent)
        next(replies)  # the reply to `new`
        ended_early = False
        for index, line, data, changed, expected in items:
            self.at_push(index, line, data, changed)
            actual = _step(next(replies))
            if self.compare_step(expected, actual):
                ended_early = "error" in actual and "error" not in expected
                break
        else:  # the plain loop reached the point where the golden file is out of date
            if stale is not None:
                raise stale
        if finish is not None:
            self.at_finish()
            if ended_early:
                self.finish_absent(finish)
            else:
                self.compare_finish(finish, _step(next(replies)))

    def _planned(
        self,
        expected_steps: Iterable[dict[str, Any]],
        limit: int | None,
        finish: bool,
        capped: bool,
    ) -> tuple[tuple[list[_Item], GoldenError | None] | None, object]:
        """The pass's plan (`_plan`), made by `send_ahead` when it was given these arguments, and
        what the driver gave for the pass it sent ahead (None: not sent)."""
        key = (limit, finish, capped)
        for ahead in self._ahead:
            if ahead.steps is expected_steps and ahead.key == key:
                self._ahead.remove(ahead)
                return ahead.planned, ahead.sent
        return self._plan(expected_steps, limit), None

    def _plan(
        self, expected_steps: Iterable[dict[str, Any]], limit: int | None
    ) -> tuple[list[_Item], GoldenError | None] | None:
        """The pass's pushes as the plain loop meets them: (index, line, payload, what is
        pushed, the golden step) each, and the GoldenError it raises after them, if any; None
        when they hold more than `BATCH_CHARS` characters."""
        items: list[_Item] = []
        expected_iter = iter(expected_steps)
        size = 0
        count = 0
        for index, payload in enumerate(self.case.payloads()):
            if index == limit:
                return items, None
            try:
                expected = self.expected_step(next(expected_iter, None), index, payload.line)
            except GoldenError as stale:
                return items, stale
            count = index + 1
            data = payload.data
            changed = data if self.mutate is None else self.mutate(index, data)
            size += len(changed)
            if size > BATCH_CHARS:
                return None
            items.append((index, payload.line, data, changed, expected))
            if "error" in expected:  # the plain loop stops here, whatever the target does
                return items, None
        if limit is None and next(expected_iter, None) is not None:
            why = f"the golden file has more steps than the {count} payload(s)"
            return items, stale_error(self.case, why)
        return items, None


def sent_ahead(
    case: Case, golden: dict[str, Any], driver: Driver, *, mode: str, options: RunOptions
) -> BatchedPass | None:
    """The check of the first pass `run_case` will play (its first outcome's, or its first
    cut's), that pass sent to the worker already, to run while the case before it is read: for
    `run_case`'s `first`. None for a driver that does not run passes. A head start only: what
    goes wrong making it (a golden file out of date) happens again when the case runs."""
    if not runs_passes(driver):
        return None
    mutate = mutator(mode, seed=options.seed, case_id=case.case_id)
    check = BatchedPass(case, driver, mutate, level=options.level)
    try:
        expected = outcomes(golden, require=options.required)[0][1]
        steps, capped = expected["steps"], expected["thinking_capped"]
        if mode != TRUNCATED:
            check.send_ahead(steps, limit=None, finish=expected.get("finish"), capped=capped)
        elif cuts := truncation_points(len(steps), seed=options.seed, case_id=case.case_id):
            # (the finish the cut expects is the reference's, worked out when the case runs)
            check.send_ahead(steps, limit=cuts[0], finish={}, capped=capped)
    except Exception:  # raised again when the case runs
        return None
    return check


def _step(reply: dict[str, Any] | None) -> dict[str, Any]:
    assert reply is not None, "a step or a finish, not `new`"
    return reply
