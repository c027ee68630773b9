"""One pass of a target over a recording: each payload pushed as the mode changes it, each step
compared with the golden step of the same index as soon as it is made, then `finish` compared.

A `Pass` collects the mismatches of every pass of an attempt (`found`) and says where the call
under way was (`step`, `line`, `pushed`, `at`), for a crash's report. The comparison is
`harness.check.compare`'s: an exact check first, deepdiff only on a difference.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.check.compare import differences, same_step
from harness.check.modes import Mutator
from harness.check.results import COMPLETION, FINISH, FULL, NEW, PUSH, Mismatch, completion_step
from harness.drive.base import Driver
from harness.drive.normalize import SAID
from harness.errors import GoldenError
from harness.safetext import ABSENT
from harness.suite.cases import Case


def stale(case: Case, why: str) -> GoldenError:
    """The golden file of `case` does not belong to its recording as it is now."""
    return GoldenError(
        case.golden,
        f"out of date with {case.recording}: {why}",
        hint=f"run 'conform golden update -k {case.case_id}' and review the diff",
    )


#: The mismatches a run (one case in one mode) keeps; each step (or finish) that differs beyond
#: them is only counted (`CaseResult.unlisted`): a target wrong at every step of a recording of
#: 20,000 payloads once kept every mismatch (18 times slower than a pass, a 5 MB report).
MAX_MISMATCHES = 100


class Pass:
    """A target's passes over a recording (or its first payloads) in one mode, against one golden
    outcome: `start`, `push_all`, `finish`, each compared as it comes.

    `cut` is set by the truncated mode: the payloads pushed before its `finish`, which names the
    paths of its mismatches (`prefix[3].finish`).
    """

    def __init__(
        self, case: Case, driver: Driver, mutate: Mutator | None, *, level: str = FULL
    ) -> None:
        self.case = case
        self.driver = driver
        self.mutate = mutate
        self.level = level
        self.found: list[Mismatch] = []
        self.unlisted = 0  # steps (and finishes) that differ beyond `MAX_MISMATCHES`
        self.cut: int | None = None
        # Where the call under way is, for a crash's report.
        self.step: int | None = None
        self.line: int | None = None
        self.pushed: str | None = None
        self.at = NEW

    def _where(self, at: str, step: int | None = None, line: int | None = None) -> None:
        self.at, self.step, self.line, self.pushed = at, step, line, None

    def send_ahead(
        self,
        expected_steps: Iterable[dict[str, Any]],
        *,
        limit: int | None,
        finish: dict[str, Any] | None,
        capped: bool,
    ) -> None:
        """A hint that `play` will be given these arguments next, after the pass under way: a
        driver that runs passes is sent it now (`harness.check.batched`); here, nothing."""
        return None

    def play(
        self,
        expected_steps: Iterable[dict[str, Any]],
        *,
        limit: int | None,
        finish: dict[str, Any] | None,
        capped: bool,
    ) -> None:
        """One pass: a fresh assembler, the payloads (the first `limit`), then, when `finish`
        (the expected finish object) is given, `finish` with `capped`."""
        self.start()
        ended_early = self.push_all(expected_steps, limit=limit)
        if finish is not None:
            self.finish(finish, capped=capped, ended_early=ended_early)

    def start(self) -> None:
        """A fresh assembler in the target (a crash here is reported at `new`)."""
        self.at_new()
        self.driver.start_case()

    def at_new(self) -> None:
        """The call under way is `new`."""
        self._where(NEW)

    def push_all(self, expected_steps: Iterable[dict[str, Any]], *, limit: int | None) -> bool:
        """Push the recording's payloads (the first `limit`; all: None), each as the mode changes
        it, comparing each step with the golden one; stop after the first error step of either
        side. True when the target erred where the golden file did not."""
        expected_iter = iter(expected_steps)
        count = 0
        for index, payload in enumerate(self.case.payloads()):
            if index == limit:
                return False
            expected = self.expected_step(next(expected_iter, None), index, payload.line)
            count = index + 1
            changed = payload.data if self.mutate is None else self.mutate(index, payload.data)
            self.at_push(index, payload.line, payload.data, changed)
            actual = self.driver.push(changed, payload.line)
            if self.compare_step(expected, actual):
                return "error" in actual and "error" not in expected
        if limit is None and next(expected_iter, None) is not None:
            raise stale(self.case, f"the golden file has more steps than the {count} payload(s)")
        return False

    def expected_step(
        self, expected: dict[str, Any] | None, index: int, line: int
    ) -> dict[str, Any]:
        """The golden step of payload `index` (at `line`); GoldenError when there is none, or it
        is for another line (a golden file out of date with its recording)."""
        if expected is None:
            raise stale(self.case, f"the recording has more than {index} payloads")
        if expected["line"] != line:
            raise stale(self.case, f"step {index} is at line {line}, not {expected['line']}")
        return expected

    def at_push(self, index: int, line: int, data: str, changed: str) -> None:
        """The call under way is the push of payload `index` as `changed` (quoted in a report
        only when the mode changed it)."""
        self._where(PUSH, index, line)
        self.pushed = None if changed == data else changed

    def compare_step(self, expected: dict[str, Any], actual: dict[str, Any]) -> bool:
        """Compare the step the push under way made; True when it ends the pass (an error step
        on either side)."""
        said = actual.pop(SAID, None)
        if self.level == COMPLETION:
            expected, actual = completion_step(expected), completion_step(actual)
        if not same_step(expected, actual):
            prefix = "" if self.cut is None else f"prefix[{self.cut}]."
            path = f"{prefix}steps[{self.step}]"
            self._keep(expected, actual, path, step=self.step, line=self.line, said=said)
        return "error" in expected or "error" in actual

    def finish(self, expected: dict[str, Any], *, capped: bool, ended_early: bool) -> None:
        """Call `finish` (unless the target already ended in an error) and compare."""
        self.at_finish()
        if ended_early:
            self.finish_absent(expected)
            return
        self.compare_finish(expected, self.driver.finish(capped))

    def at_finish(self) -> None:
        """The call under way is `finish`."""
        self._where(FINISH)

    def finish_absent(self, expected: dict[str, Any]) -> None:
        """The target ended in an error where the golden file goes on to its finish."""
        self.found.append(Mismatch(self._finish_path, expected, ABSENT))

    @property
    def _finish_path(self) -> str:
        return "finish" if self.cut is None else f"prefix[{self.cut}].finish"

    def compare_finish(self, expected: dict[str, Any], actual: dict[str, Any]) -> None:
        """Compare what `finish` returned."""
        said = actual.pop(SAID, None)
        if not same_step(expected, actual):
            self._keep(expected, actual, self._finish_path, step=None, line=None, said=said)

    def _keep(
        self,
        expected: Any,
        actual: Any,
        path: str,
        *,
        step: int | None,
        line: int | None,
        said: str | None,
    ) -> None:
        """Keep the mismatches of a step (or the finish) that differs, up to `MAX_MISMATCHES` in
        the run; beyond them, count it (its fields are not compared one by one)."""
        room = MAX_MISMATCHES - len(self.found)
        if room <= 0:
            self.unlisted += 1
            return
        found = differences(expected, actual, prefix=path)
        if len(found) > room:
            self.unlisted += 1  # listed in part
            found = found[:room]
        payload = None if step is None else self.pushed
        self.found += [
            Mismatch(d.path, d.expected, d.actual, step, line, payload, said) for d in found
        ]
