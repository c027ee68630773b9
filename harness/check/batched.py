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
from typing import Any

from harness.check.passes import Pass
from harness.check.passes import stale as stale_error
from harness.drive.base import PassDriver
from harness.errors import GoldenError

#: A pass whose payloads hold more characters than this is played one call at a time.
BATCH_CHARS = 1 << 20


class BatchedPass(Pass):
    """A `Pass` whose driver runs a whole pass in one call."""

    driver: PassDriver

    def play(
        self,
        expected_steps: Iterable[dict[str, Any]],
        *,
        limit: int | None,
        finish: dict[str, Any] | None,
        capped: bool,
    ) -> None:
        planned = self._plan(expected_steps, limit)
        if planned is None:
            super().play(expected_steps, limit=limit, finish=finish, capped=capped)
            return
        items, stale = planned
        then = capped if finish is not None and stale is None else None
        self.at_new()
        pushes, lines = [item[3] for item in items], [item[1] for item in items]
        replies = self.driver.run_pass(pushes, lines, then)
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

    def _plan(
        self, expected_steps: Iterable[dict[str, Any]], limit: int | None
    ) -> tuple[list[tuple[int, int, str, str, dict[str, Any]]], GoldenError | None] | None:
        """The pass's pushes as the plain loop meets them: (index, line, payload, what is
        pushed, the golden step) each, and the GoldenError it raises after them, if any; None
        when they hold more than `BATCH_CHARS` characters."""
        items: list[tuple[int, int, str, str, dict[str, Any]]] = []
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


def _step(reply: dict[str, Any] | None) -> dict[str, Any]:
    assert reply is not None, "a step or a finish, not `new`"
    return reply
