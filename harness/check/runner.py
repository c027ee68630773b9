"""Running a target over a suite's cases: one plain result record per case and mode.

The runner only produces records (`CaseResult`); `harness.reports.text` turns them into text. Each
step is compared as soon as it is made, against the golden step of the same index, with the cheap
exact check first and deepdiff only on a difference (`harness.check.compare`). In-process, the
usual passing case is judged whole first (`rendered_pass`): its pass renders the golden file byte
for byte, which is never parsed then; any other pass is judged from its replayed calls.
"""

from __future__ import annotations

import itertools
import operator
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import reference
from harness.check.compare import Difference, differences, encode_step, same_step
from harness.check.modes import SEEDED, TRUNCATED, Mutator, mutator, truncation_points
from harness.check.outcomes import Outcome, outcomes, proto_outcomes, reach
from harness.check.results import (
    COMPLETION,
    CRASHED,
    FAILED,
    FINISH,
    FULL,
    NEW,
    PASSED,
    PUSH,
    TIMED_OUT,
    CaseResult,
    Crash,
    Mismatch,
    completion_step,
)
from harness.check.results import (
    LEVELS as LEVELS,
)
from harness.check.results import (
    XFAILED as XFAILED,
)
from harness.check.results import (
    XPASSED as XPASSED,
)
from harness.check.results import (
    Expectation as Expectation,
)
from harness.drive.base import plan_case, plan_next_case
from harness.drive.blame import split_origin
from harness.drive.inprocess import (
    Driver,
    TargetCrash,
    TargetTimeout,
    finish_step,
    plain_steps,
    push_step,
)
from harness.drive.normalize import SAID
from harness.errors import GoldenError
from harness.safetext import ABSENT
from harness.suite.cases import Case
from harness.suite.classes import InputClass, class_of
from harness.suite.golden import Golden
from harness.suite.recording import RecordingInfo, iter_payloads, read_info
from harness.suite.sse import Payload
from reference.choices import OUTCOMES, REFERENCE, Choices

_LINE_OF_PAYLOAD = operator.attrgetter("line")
_DATA_OF_PAYLOAD = operator.attrgetter("data")
_LINE_OF_STEP = operator.itemgetter("line")


def _stale(case: Case, why: str) -> GoldenError:
    return GoldenError(
        case.golden,
        f"out of date with {case.recording}: {why}",
        hint=f"run 'conform golden update -k {case.case_id}' and review the diff",
    )


#: The mismatches a run (one case in one mode) keeps; each step (or finish) that differs beyond
#: them is only counted (`CaseResult.unlisted`): a target wrong at every step of a recording of
#: 20,000 payloads once kept every mismatch (18 times slower than a pass, a 5 MB report).
MAX_MISMATCHES = 100


def _mismatches(
    found: list[Difference],
    *,
    step: int | None,
    line: int | None,
    payload: str | None,
    said: str | None = None,
) -> list[Mismatch]:
    return [Mismatch(d.path, d.expected, d.actual, step, line, payload, said) for d in found]


#: What one pass over a recording sends: its pushes, and the `thinking_capped` of its `finish`
#: (None: no finish, the golden file ends in an error). A driver takes it as a plan.
CasePlan = tuple[list[str], bool | None]
#: The plan of the pass expected after the current one (None: none, or not known).
Upcoming = Callable[[], CasePlan | None]


class Pushes:
    """What a (case, mode) pushes for each payload of a recording read beforehand: the mode's
    change of each payload is made once, when first asked for, and shared by every pass and
    outcome of the case in that mode, and by the plan of a pass sent ahead (`Upcoming`)."""

    __slots__ = ("_changed", "_stop", "mutate", "payloads")

    def __init__(self, payloads: Sequence[Payload], mutate: Mutator | None) -> None:
        self.payloads = payloads
        self.mutate = mutate
        self._changed: list[str] | None = None
        self._stop: tuple[list[dict[str, Any]], int | None] | None = None

    def first(self, count: int) -> list[str]:
        """What is pushed for the first `count` payloads."""
        mutate, payloads, changed = self.mutate, self.payloads, self._changed
        if changed is None:
            # In one C call (`map`): the usual mode changes nothing, and this runs per case.
            changed = self._changed = (
                list(map(_DATA_OF_PAYLOAD, payloads)) if mutate is None else []
            )
        if mutate is not None:
            for index in range(len(changed), min(count, len(payloads))):
                changed.append(mutate(index, payloads[index].data))
        return changed[:count]

    def error_step(self, steps: list[dict[str, Any]]) -> int | None:
        """The index of the first error step of `steps` (a golden outcome's), found once."""
        found = self._stop
        if found is None or found[0] is not steps:
            stop = next((i for i, step in enumerate(steps) if "error" in step), None)
            found = self._stop = (steps, stop)
        return found[1]


def pass_plan(
    steps: list[dict[str, Any]], pushes: Pushes, *, limit: int | None, then_finish: bool | None
) -> CasePlan:
    """The plan of one pass over the first `limit` payloads (all: None): up to the golden file's
    error step (after which nothing is pushed), or all of them and the finish `then_finish`."""
    read = len(pushes.payloads) if limit is None else min(limit, len(pushes.payloads))
    stop = pushes.error_step(steps)
    if stop is not None and stop < read:
        return pushes.first(stop + 1), None
    return pushes.first(read), then_finish


def first_pass(
    case: Case,
    golden: dict[str, Any],
    pushes: Pushes,
    *,
    mode: str,
    seed: int,
    require: dict[str, str] | None = None,
) -> CasePlan | None:
    """The plan of the first pass `run_case` makes of `case` in `mode` (with the golden file's
    first outcome); None when that mode makes no pass (a one-payload recording, truncated)."""
    candidates = outcomes(golden, require=require)
    if not candidates or not isinstance(candidates[0][1].get("steps"), list):
        return None
    expected = candidates[0][1]
    steps, capped = expected["steps"], expected["thinking_capped"]
    if mode == TRUNCATED:
        points = truncation_points(len(steps), seed=seed, case_id=case.case_id)
        if not points:
            return None
        return pass_plan(steps, pushes, limit=points[0], then_finish=capped)
    then = capped if "finish" in expected else None
    return pass_plan(steps, pushes, limit=None, then_finish=then)


class _Play:
    """A target's pass over a recording (or its first payloads), each step compared as it comes.

    `found` collects mismatches across passes; `step`, `line` and `pushed` say where the latest
    call was, for a crash's report.
    """

    def __init__(
        self,
        case: Case,
        driver: Driver,
        mutate: Mutator | None,
        *,
        level: str = FULL,
        pushes: Pushes | None = None,
        upcoming: Upcoming | None = None,
    ) -> None:
        self.case = case
        self.level = level
        self.driver = driver
        self.mutate = mutate
        self.pushes = pushes  # the mode's changes of the recording's payloads, made once
        self.upcoming = upcoming  # the plan of the pass after this one, told to the driver
        self.found: list[Mismatch] = []
        self.unlisted = 0  # steps (and finishes) that differ beyond `MAX_MISMATCHES`
        self.step: int | None = None
        self.line: int | None = None
        self.pushed: str | None = None
        self.at = NEW  # the call under way, for a crash's report
        self.cut: int | None = None  # truncated mode: the payloads pushed before `finish`

    def push_all(
        self,
        expected_steps: Iterable[dict[str, Any]],
        *,
        limit: int | None,
        payloads: Iterable[Payload] | None = None,
        then_finish: bool | None = None,
    ) -> bool:
        """Push the payloads (the first `limit`); True if the target erred where golden did not.

        `payloads` are the recording's, read beforehand (by default they are read as they go).
        `then_finish` is the `thinking_capped` of the `finish` that follows, if one does: a driver
        that can (a protocol-2 worker) is told the whole case first and sends it ahead.
        """
        case, driver, mutate = self.case, self.driver, self.mutate
        prefix = "" if self.cut is None else f"prefix[{self.cut}]."
        completion = self.level == COMPLETION
        push = driver.push
        expected_iter = iter(expected_steps)
        count = 0
        if payloads is None:
            payloads = iter_payloads(case.recording)
        planned = self._plan(expected_steps, payloads, limit, then_finish)
        ahead: list[str] = []  # what a plan sent ahead for each payload
        if planned is not None:
            payloads, ahead = planned
        if (
            not completion
            and isinstance(payloads, list)
            and isinstance(expected_steps, list)
            and hasattr(driver, "push_steps")
            and (mutate is None or (limit is not None and len(ahead) >= limit))
        ):
            return self._push_batch(expected_steps, payloads, ahead, limit=limit, prefix=prefix)
        # The loop runs once per payload: where it is (for a crash's report) is kept in locals
        # and handed to `self` only when the target fails.
        index, line, pushed = 0, 0, None
        try:
            for index, payload in enumerate(payloads):
                if index == limit:
                    return False
                expected = next(expected_iter, None)
                if expected is None:
                    raise _stale(case, f"the recording has more than {index} payloads")
                line = payload.line
                if expected["line"] != line:
                    raise _stale(case, f"step {index} is at line {line}, not {expected['line']}")
                count = index + 1
                data = payload.data
                if index < len(ahead):
                    changed = ahead[index]
                elif mutate is None:
                    changed = data
                else:
                    changed = mutate(index, data)
                # Quoted in a report only when changed.
                pushed = None if changed is data or changed == data else changed
                actual = push(changed, line)
                said = actual.pop(SAID, None)
                if completion:
                    expected, actual = completion_step(expected), completion_step(actual)
                if not same_step(expected, actual):
                    self._keep(
                        expected,
                        actual,
                        f"{prefix}steps[{index}]",
                        step=index,
                        line=line,
                        payload=pushed,
                        said=said,
                    )
                if "error" in expected or "error" in actual:
                    return "error" in actual and "error" not in expected
        except TargetCrash:
            self.step, self.line, self.pushed, self.at = index, line, pushed, PUSH
            raise
        if limit is None and next(expected_iter, None) is not None:
            raise _stale(case, f"the golden file has more steps than the {count} payload(s)")
        return False

    def _push_batch(
        self,
        expected_steps: list[dict[str, Any]],
        payloads: list[Payload],
        ahead: list[str],
        *,
        limit: int | None,
        prefix: str,
    ) -> bool:
        """`push_all` for a driver that takes many pushes in one call (`push_steps`): the same
        pushes, checks, stale errors and mismatches, but the usual equal pass is compared whole,
        in one encoding of each side.

        The pass pushes up to the first payload where the golden file is out of date with the
        recording (raised once the payloads before it are pushed and compared, as `push_all`
        does), the golden file's error step, or the target's first error (the driver stops there).
        """
        case, mutate = self.case, self.mutate
        assert mutate is None or (limit is not None and len(ahead) >= limit)
        read = payloads if limit is None else payloads[:limit]
        count = len(read)
        expected = expected_steps[:count]
        stale: GoldenError | None = None
        # In C calls (`map`), not comprehensions: these run over every step of every pass.
        lines = list(map(_LINE_OF_PAYLOAD, read))
        if len(expected) < count or lines != list(map(_LINE_OF_STEP, expected)):
            for index, line in enumerate(lines):
                if index == len(expected):
                    stale = _stale(case, f"the recording has more than {index} payloads")
                    break
                if expected[index]["line"] != line:
                    stale = _stale(
                        case, f"step {index} is at line {line}, not {expected[index]['line']}"
                    )
                    break
            count = len(lines) if stale is None else index
            del lines[count:]
        erring = list(map(operator.contains, expected[:count], itertools.repeat("error")))
        if True in erring:
            count = erring.index(True) + 1
            del lines[count:]
        datas = list(map(_DATA_OF_PAYLOAD, read[:count]))
        # Unchanged, or changed beforehand (a plan): changing each payload costs far more than
        # a push, so a mode that changes them as they go takes `push_all`'s loop.
        pushes = datas if mutate is None else ahead[:count]
        actual: list[dict[str, Any]] = []
        try:
            self.driver.push_steps(pushes, lines, actual)  # type: ignore[attr-defined]
        except TargetCrash:
            index = len(actual)
            self._compare_steps(expected, actual, datas, pushes, prefix=prefix)
            self.step, self.line, self.at = index, lines[index], PUSH
            self.pushed = None if pushes[index] == datas[index] else pushes[index]
            raise
        erred = self._compare_steps(expected, actual, datas, pushes, prefix=prefix)
        if erred is not None:
            return erred
        if stale is not None:
            raise stale
        if limit is None and len(expected_steps) > len(read):
            raise _stale(case, f"the golden file has more steps than the {len(read)} payload(s)")
        return False

    def _compare_steps(
        self,
        expected: list[dict[str, Any]],
        actual: list[dict[str, Any]],
        datas: list[str],
        pushes: list[str],
        *,
        prefix: str,
    ) -> bool | None:
        """Compare the steps a batch made with the golden ones; True or False when the pass ended
        at an error step (True: the target erred where the golden file did not), else None."""
        said = actual[-1].pop(SAID, None) if actual else None
        if not actual:
            return None
        try:
            equal = encode_step(expected[: len(actual)]) == encode_step(actual)
        except (TypeError, ValueError, OverflowError, RecursionError):
            equal = False
        if not equal:
            plain_steps(actual)
            for index, (want, got) in enumerate(zip(expected, actual, strict=False)):
                if same_step(want, got):
                    continue
                self._keep(
                    want,
                    got,
                    f"{prefix}steps[{index}]",
                    step=index,
                    line=expected[index]["line"],
                    payload=None if pushes[index] == datas[index] else pushes[index],
                    said=said if index == len(actual) - 1 else None,
                )
        want, got = expected[len(actual) - 1], actual[-1]
        if "error" in want or "error" in got:
            return "error" in got and "error" not in want
        return None

    def _plan(
        self,
        expected_steps: Iterable[dict[str, Any]],
        payloads: Iterable[Payload],
        limit: int | None,
        then_finish: bool | None,
    ) -> tuple[list[Payload], list[str]] | None:
        """The payloads and what is pushed for each, when the driver takes them as a plan: up to
        the golden file's error step (after which nothing is pushed), or all and the finish."""
        if not hasattr(self.driver, "plan") or not isinstance(expected_steps, list):
            return None
        pushes = self.pushes
        if pushes is not None and payloads is pushes.payloads and isinstance(payloads, list):
            read = payloads[:limit]
        else:
            read = list(itertools.islice(payloads, limit))
            pushes = Pushes(read, self.mutate)
        pushed, finish = pass_plan(expected_steps, pushes, limit=limit, then_finish=then_finish)
        if plan_case(self.driver, pushed, finish=finish) and self.upcoming is not None:
            # The pass after this one, sent while this one is read and checked: the driver
            # takes it when that pass comes and names the same requests.
            upcoming = self.upcoming()
            if upcoming is not None:
                plan_next_case(self.driver, upcoming[0], finish=upcoming[1])
        return read, pushed

    def start_case(self) -> None:
        """A fresh assembler in the target (a crash here is reported at `new`)."""
        self.step, self.line, self.pushed, self.at = None, None, None, NEW
        self.driver.start_case()

    def finish(self, expected: dict[str, Any], *, capped: bool, ended_early: bool) -> None:
        """Call `finish` (unless the target already ended in an error) and compare."""
        self.step, self.line, self.pushed, self.at = None, None, None, FINISH
        path = "finish" if self.cut is None else f"prefix[{self.cut}].finish"
        if ended_early:
            self.found.append(Mismatch(path, expected, ABSENT))
            return
        actual = self.driver.finish(capped)
        said = actual.pop(SAID, None)
        if not same_step(expected, actual):
            self._keep(expected, actual, path, step=None, line=None, payload=None, said=said)

    def _keep(
        self,
        expected: Any,
        actual: Any,
        path: str,
        *,
        step: int | None,
        line: int | None,
        payload: str | None,
        said: str | None,
    ) -> None:
        """Keep the mismatches of a step (or finish) that differs, up to `MAX_MISMATCHES` in
        the run; beyond them, count it (its fields are not compared one by one)."""
        room = MAX_MISMATCHES - len(self.found)
        if room <= 0:
            self.unlisted += 1
            return
        found = differences(expected, actual, prefix=path)
        if len(found) > room:
            self.unlisted += 1  # listed in part
            found = found[:room]
        self.found += _mismatches(found, step=step, line=line, payload=payload, said=said)


def _prefix_finishes(
    case: Case,
    points: Sequence[int],
    capped: bool,
    payloads: Iterable[Payload] | None = None,
    *,
    choices: Choices = REFERENCE,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """For each cut in `points` (ascending), what the reference's `finish` returns there.

    One reference pass serves every cut: the reference's `finish` only reads its state, so it is
    called mid-stream and the pass goes on (tests/check/test_modes.py checks this against fresh
    runs).
    """
    assembler = reference.Assembler(choices)
    wanted = iter(points)
    cut = next(wanted, None)
    if cut == 0:  # before the first payload: the empty stream
        yield cut, finish_step(assembler, capped)
        cut = next(wanted, None)
    if payloads is None:
        payloads = iter_payloads(case.recording)
    for index, payload in enumerate(payloads):
        if cut is None:
            return
        if "error" in push_step(assembler, payload.data, payload.line):
            raise _stale(case, f"the reference fails at step {index}, before the golden file does")
        if index + 1 == cut:
            yield cut, finish_step(assembler, capped)
            cut = next(wanted, None)
    if cut is not None:
        raise _stale(case, f"the recording has fewer than {cut} payloads")


def _play_truncated(
    play: _Play,
    golden: dict[str, Any],
    *,
    seed: int,
    choices: Choices,
    payloads: Sequence[Payload] | None = None,
) -> None:
    """The truncated mode: cut the recording after payload k, for each k that mode picks.

    Stops at the first cut that fails, so the report names one prefix to reproduce.
    `payloads` are the recording's, when read beforehand.
    """
    steps = golden["steps"]
    capped: bool = golden["thinking_capped"]
    count = len(steps)
    points = truncation_points(count, seed=seed, case_id=play.case.case_id)
    if payloads is None and len(points) == count - 1:  # every cut, of a short one: read it once
        payloads = list(itertools.islice(iter_payloads(play.case.recording), count))
    pushes = play.pushes
    if payloads is not None and (pushes is None or pushes.payloads is not payloads):
        pushes = play.pushes = Pushes(payloads, play.mutate)
    after = play.upcoming  # the pass after the last cut
    cuts = iter(points[1:])
    for cut, expected in _prefix_finishes(play.case, points, capped, payloads, choices=choices):
        following = next(cuts, None)
        if following is None or pushes is None or not isinstance(steps, list):
            play.upcoming = after
        else:  # the next cut, should this one pass
            play.upcoming = lambda p=pushes, c=following: pass_plan(
                steps, p, limit=c, then_finish=capped
            )
        play.cut = cut
        play.start_case()
        ended_early = play.push_all(steps, limit=cut, payloads=payloads, then_finish=capped)
        play.finish(expected, capped=capped, ended_early=ended_early)
        if play.found:
            return


def rendered_pass(
    case: Case,
    golden: Golden,
    document: Callable[[], dict[str, Any]],
    info: RecordingInfo,
    driver: Driver,
    *,
    mode: str,
    seed: int,
    level: str,
    require: dict[str, str] | None = None,
    pushes: Pushes | None,
    after: Upcoming | None = None,
) -> CaseResult | None:
    """`run_case` for the usual case, judged whole: PASSED when the target's pass over the
    recording renders its golden file byte for byte (`Golden.renders`), without comparing a
    step; otherwise `run_case` judges that same pass, replayed from what the target answered
    (`_Replay`), with the golden `document`. None when the case is not run so.

    A driver that takes a whole pass in one call (`push_steps`: in-process) is run so, in a mode
    that pushes the whole recording once (not `truncated`), at the full level, for a case that
    pins no implementation-defined point (whose file holds other outcomes too). The pass makes
    the calls `run_case`'s first pass makes, as the file's layout gives them without parsing it
    (`Golden.plan`): every payload then `finish`, or, for a file that ends in an error step, the
    payloads up to it; a target that errs or crashes earlier is not called again. The verdict
    is always of one pass of the target: when `run_case` asks for more than the pass made (a
    file in another layout), the replay goes on with the same assembler.

    The golden file is parsed (once per case, and checked against its schema) unless the pass is
    all the reference's own work (`own_steps`), which the schema holds by construction; so a file
    edited by hand is refused as a worker run refuses it.
    """
    if (
        level != FULL
        or mode == TRUNCATED
        or pushes is None
        or golden.data is None
        or not hasattr(driver, "push_steps")
        or not _POINTS.isdisjoint(info.pins)
    ):
        return None
    started = time.perf_counter()
    payloads = pushes.payloads
    count, then_finish = golden.plan(len(payloads))
    sent = pushes.first(count)
    lines = list(map(_LINE_OF_PAYLOAD, payloads[:count]))
    steps: list[dict[str, Any]] = []
    finish: dict[str, Any] | None = None
    crash: TargetCrash | None = None
    at = NEW  # the call under way, should the target crash
    try:
        driver.start_case()
        at = PUSH
        driver.push_steps(sent, lines, steps)
        if then_finish and (not steps or "error" not in steps[-1]):
            at = FINISH
            finish = driver.finish(info.thinking_capped)
    except TargetCrash as exc:
        crash = exc
    own = getattr(driver, "own_steps", False)
    if crash is None and golden.renders(
        info,
        [*steps[:-1], _unsaid(steps[-1])] if steps and SAID in steps[-1] else steps,
        None if finish is None else _unsaid(finish),
        steps_finite=own,
    ):
        if not own:
            document()  # a file edited by hand: GoldenError, as the usual way raises it
        return CaseResult(
            case.case_id,
            mode,
            case.recording_name,
            PASSED,
            time.perf_counter() - started,
            seed=seed if mode in SEEDED else None,
            pins=info.pins,
            input_class=golden.input_class,
            real=info.real,
        )
    replay = _Replay(driver, sent, lines, steps, finish, crash, at if crash else None)
    result = run_case(
        case,
        document(),
        replay,
        mode=mode,
        seed=seed,
        require=require,
        level=level,
        payloads=payloads,
        pushes=pushes,
        after=after,
        real=info.real,
    )
    return replace(result, duration=time.perf_counter() - started)


def _unsaid(step: dict[str, Any]) -> dict[str, Any]:
    """`step` (or a finish) as a golden file holds it: without what the target said (`SAID`)."""
    return step if SAID not in step else {k: v for k, v in step.items() if k != SAID}


class _Replay:
    """The in-process driver of a pass already made, for `run_case` to judge as it was made: its
    first case is answered from the record (`steps`, then `finish`, or the `crash` that ended it
    at the call `crashed_at` names), and what the record does not hold by the target itself, its
    pass going on with the same assembler; each later case (another allowed outcome) is the
    target's, as always. A push other than the one recorded is a bug in conform (an
    AssertionError), never a verdict."""

    def __init__(
        self,
        driver: Driver,
        pushed: list[str],
        lines: list[int],
        steps: list[dict[str, Any]],
        finish: dict[str, Any] | None,
        crash: TargetCrash | None,
        crashed_at: str | None,
    ) -> None:
        self._driver = driver
        self._pushed, self._lines, self._steps = pushed, lines, steps
        self._finish, self._crash, self._crashed_at = finish, crash, crashed_at
        self._cases = 0
        self._next = 0  # the recorded step the next push gets

    def _raise_if_crashed(self, at: str) -> None:
        if self._crash is not None and self._crashed_at == at:
            raise self._crash

    def start_case(self) -> None:
        self._cases += 1
        if self._cases > 1:
            self._driver.start_case()
        else:
            self._raise_if_crashed(NEW)

    def _recorded(self, data: str, line: int) -> dict[str, Any] | None:
        """The recorded step of this push; None past the record, where the pass goes on."""
        index = self._next
        if index == len(self._steps):
            self._raise_if_crashed(PUSH)
            assert not self._steps or "error" not in self._steps[-1], "a push after an error"
            if index == len(self._pushed):
                return None
        assert self._pushed[index] == data and self._lines[index] == line, "not the push made"
        self._next = index + 1
        return self._steps[index]

    def push(self, data: str, line: int) -> dict[str, Any]:
        if self._cases > 1:
            return self._driver.push(data, line)
        step = self._recorded(data, line)
        if step is None:
            return self._driver.push(data, line)
        plain_steps([step])  # one step at a time is compared field by field
        return step

    def push_steps(self, pushes: Sequence[str], lines: Sequence[int], out: list[Any]) -> None:
        if self._cases > 1:
            self._driver.push_steps(pushes, lines, out)  # type: ignore[attr-defined]
            return
        for index, (data, line) in enumerate(zip(pushes, lines, strict=True)):
            step = self._recorded(data, line)
            if step is None:  # the rest, from the same assembler
                self._driver.push_steps(pushes[index:], lines[index:], out)  # type: ignore[attr-defined]
                return
            out.append(step)
            if "error" in step:
                return

    def finish(self, thinking_capped: bool) -> dict[str, Any]:
        if self._cases > 1 or (self._finish is None and self._crash is None):
            return self._driver.finish(thinking_capped)
        self._raise_if_crashed(FINISH)
        assert self._finish is not None, "a finish after a crash"
        return self._finish

    def case_stderr(self) -> str:
        return self._driver.case_stderr()

    def close(self) -> None:
        self._driver.close()


#: The implementation-defined points a case may pin (its golden file then holds every outcome).
_POINTS = frozenset(OUTCOMES)


def run_case(
    case: Case,
    golden: dict[str, Any],
    driver: Driver,
    *,
    mode: str,
    seed: int,
    require: dict[str, str] | None = None,
    level: str = FULL,
    payloads: Sequence[Payload] | None = None,
    pushes: Pushes | None = None,
    after: Upcoming | None = None,
    real: bool | None = None,
) -> CaseResult:
    """Run one case in one mode and compare every step with `golden` as it is made.

    A case that pins implementation-defined points passes when the target matches any allowed
    outcome: the target is run against each in turn until one matches (a crash or a timeout ends
    the case at once: it is never an allowed outcome). A failure reports the closest outcome.
    `payloads` are the recording's, when the caller has read them (else they are read as they go);
    `pushes`, what the mode pushes for them, made once (built here when not given). `after` is
    the plan of the pass that follows this case and mode (`first_pass` of the next one), which a
    driver may send ahead while this one is checked. `real`: whether the recording is a real
    capture (read from it when not given). The result carries the class of the case's input.
    """
    if pushes is None and payloads is not None:
        pushes = Pushes(payloads, mutator(mode, seed=seed, case_id=case.case_id))
    pins = tuple(golden.get("pins", ()))
    candidates = outcomes(golden, require=require)
    narrowed = len(candidates) < len(outcomes(golden)) if require else False
    closest: CaseResult | None = None
    tried = 0
    input_class = class_of(golden)
    if real is None:
        real = read_info(case.recording).real

    def lazily() -> Iterator[Outcome]:
        yield from candidates
        # Only once the golden outcomes failed: the cut is worked out for refusing targets alone.
        kept = require if "I6" in pins else None
        yield from proto_outcomes(case, candidates, mode=mode, seed=seed, require=kept)

    for combos, expected in lazily():
        tried += 1
        result = _attempt(
            case,
            expected,
            driver,
            mode=mode,
            seed=seed,
            combos=combos,
            level=level,
            payloads=payloads,
            pins=pins,
            narrowed=narrowed,
            pushes=pushes,
            after=after,
            input_class=input_class,
            real=real,
        )
        if result.status != FAILED:
            return result
        if closest is None or reach(result) > reach(closest):
            closest = result
    assert closest is not None, "a golden file has at least its own outcome"
    return replace(closest, outcomes=tried)


def _attempt(
    case: Case,
    golden: dict[str, Any],
    driver: Driver,
    *,
    mode: str,
    seed: int,
    combos: tuple[dict[str, str], ...],
    level: str,
    payloads: Sequence[Payload] | None,
    pins: tuple[str, ...],
    narrowed: bool,
    pushes: Pushes | None = None,
    after: Upcoming | None = None,
    input_class: InputClass | None = None,
    real: bool = False,
) -> CaseResult:
    started = time.perf_counter()
    mutate = mutator(mode, seed=seed, case_id=case.case_id) if pushes is None else pushes.mutate
    play = _Play(case, driver, mutate, level=level, pushes=pushes, upcoming=after)
    crash: Crash | None = None
    try:
        if mode == TRUNCATED:
            choices = REFERENCE.replace(combos[0]) if combos else REFERENCE
            _play_truncated(play, golden, seed=seed, choices=choices, payloads=payloads)
        else:
            play.start_case()
            capped: bool = golden["thinking_capped"]
            then = capped if "finish" in golden else None
            ended_early = play.push_all(
                golden["steps"], limit=None, payloads=payloads, then_finish=then
            )
            if "finish" in golden:
                play.finish(golden["finish"], capped=capped, ended_early=ended_early)
    except TargetCrash as exc:
        status = TIMED_OUT if isinstance(exc, TargetTimeout) else CRASHED
        message = exc.message
        if play.cut is not None:
            message += f" (the recording cut after {play.cut} payload(s))"
        origin, details = split_origin(exc.details)
        crash = Crash(message, details, play.step, play.line, play.pushed, play.at, origin)
    else:
        status = FAILED if play.found else PASSED
    logged = driver.case_stderr() if status == FAILED else None  # crashes carry theirs
    return CaseResult(
        case.case_id,
        mode,
        case.recording_name,
        status,
        time.perf_counter() - started,
        tuple(play.found),
        crash,
        unlisted=play.unlisted,
        seed=seed if mode in SEEDED else None,
        cut=play.cut if status != PASSED else None,
        stderr=logged or None,
        pins=pins,
        choice=combos,
        narrowed=narrowed,
        input_class=input_class,
        real=real,
    )
