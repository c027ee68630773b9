"""Fuzzing a target: generated streams through the target and the reference, shrunk on a difference.

`run_fuzz(request)` runs one search (`Search`) per `-j` job: each draws streams from the model
(`harness.fuzz.model.streams`) on its own seed (the run's seed + its number), steered by its
coverage map (`harness.fuzz.guide`), works out each stream's expected result in memory with the
reference (`harness.fuzz.model.expect`), and runs it through the target with the runner `conform
run` uses (`harness.check.runner.run_case`), in `plain` and one other mode. The alternatives of
implementation-defined points are worked out only for a stream the target does not pass as the
reference assembles it. On the first difference the search checks that it reproduces (a
difference that does not, every time, is reported as flaky and never shrunk or saved), shrinks it
(`harness.fuzz.shrink`) and checks the shrunk stream once more, as it would be saved, in every
mode. The result is a `FuzzRecord`, which `conform fuzz` renders like a run failure and can save
as a case (`harness.fuzz.save`).

Reproducible: a search's streams come from its seed alone (its guide's generator, and what the
streams before held), whatever the target, the budget or `-j`; a finding names the seed and the
stream number that reproduce it (`conform fuzz --seed S` with `-j 1` stops at that stream).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.check.options import RunOptions
from harness.check.results import FAILED, PASSED, CaseResult
from harness.check.runner import run_case
from harness.drive.inprocess import Driver
from harness.errors import ConformError
from harness.fuzz.guide import Coverage, Guide
from harness.fuzz.model.breakers import BREAKERS
from harness.fuzz.model.draw import Draw
from harness.fuzz.model.expect import (
    candidates_of,
    expected,
    kept,
    touched_points,
    with_alternatives,
)
from harness.fuzz.model.stream import Stream
from harness.fuzz.model.streams import build
from harness.fuzz.shrink import Shrinker, Spent, size
from harness.suite.cases import Case
from harness.suite.sse import Payload
from reference.choices import REFERENCE

#: The case id a stream runs under while searching (the seeded modes depend on it).
CASE_ID = "fuzz/stream"
#: Streams tried while shrinking a finding, by default: a count, so that the same seed gives the
#: same shrunk stream on any machine.
SHRINK_STEPS = 2000
#: Shrinking also stops after this long (and is then machine-dependent).
SHRINK_SECONDS = 60.0
#: How many more times a finding is checked before it counts as reproducible.
RERUNS = 4


@dataclass(frozen=True)
class FuzzRequest:
    """What to fuzz and for how long: the run's options (target, modes, seed, gating) as `conform
    run` takes them, `examples` streams or `seconds` of them (one of the two), `jobs` searches."""

    options: RunOptions
    examples: int | None = None
    seconds: float | None = None
    broken: bool | None = None  # None: valid and broken streams alike
    shrink_steps: int = SHRINK_STEPS
    shrink_seconds: float = SHRINK_SECONDS
    jobs: int | None = None  # None: the options' own
    reruns: int = RERUNS

    def __post_init__(self) -> None:
        if (self.examples is None) == (self.seconds is None):
            raise ConformError("give either --examples N or --time SECONDS (one of them)")
        if self.examples is not None and self.examples < 1:
            raise ConformError(f"--examples must be at least 1, not {self.examples}")
        if self.seconds is not None and not self.seconds > 0:
            raise ConformError(f"--time must be more than 0 seconds, not {self.seconds}")

    @property
    def modes(self) -> tuple[str, ...]:
        return self.options.chosen_modes

    @property
    def seed(self) -> int:
        return self.options.seed

    @property
    def searches(self) -> int:
        return max(self.jobs if self.jobs is not None else self.options.jobs, 1)

    def quota(self, number: int) -> int | None:
        """The streams search `number` runs (its share of `examples`; None: until the time)."""
        if self.examples is None:
            return None
        share, extra = divmod(self.examples, self.searches)
        return share + (1 if number < extra else 0)


@dataclass(frozen=True)
class Finding:
    """A stream the target and the reference disagree on: the failing results (one per mode
    that fails), the recording's text as it is kept, its expected result, and where it came from
    (the search's seed and the stream's number in it)."""

    stream: Stream
    results: tuple[CaseResult, ...]
    recording: str
    golden: dict[str, Any]
    case_id: str
    seed: int
    number: int
    #: How many of `runs` checks of the stream (as found) failed: fewer than all is flaky.
    reproduced: int = 1
    runs: int = 1
    #: Shrinking was cut short by Ctrl-C (the stream is the smallest found so far, not re-checked).
    interrupted: bool = False

    @property
    def size(self) -> tuple[int, int]:
        """How big the stream is: payloads, then characters (smaller is a better report)."""
        return size(self.stream)

    @property
    def flaky(self) -> bool:
        """The target differed on this stream only some of the times it was run."""
        return self.reproduced < self.runs


@dataclass(frozen=True)
class FuzzRecord:
    """What a fuzz run did: how many streams it ran, for how long, and what it found."""

    streams: int
    seconds: float
    seed: int
    finding: Finding | None = None
    features: dict[str, int] = field(default_factory=dict)  # streams using each feature
    #: Streams whose alternatives were worked out, by implementation-defined point.
    points: dict[str, int] = field(default_factory=dict)
    #: How big the finding was when first found, before shrinking (payloads, characters).
    found_size: tuple[int, int] | None = None
    #: CPU seconds of conform and every process it waited for (workers, searches).
    cpu_seconds: float = 0.0
    #: How much of the catalogue the run exercised (`Guide.summary`).
    coverage: str = ""
    #: "Ctrl-C" (or the signal's name) when the run was interrupted.
    interrupted: str | None = None


# --- checking one stream ------------------------------------------------------------------------


def _case(case_id: str) -> Case:
    # The files are never read: the payloads and the expected result are in memory.
    return Case(case_id, Path(f"{case_id}.sse"), Path(f"{case_id}.json"))


@dataclass
class Checked:
    """What checking a stream gave: the results that did not pass, and the points whose
    alternatives were worked out (empty when none were needed)."""

    failed: list[CaseResult]
    points: tuple[str, ...] = ()


class Checker:
    """Runs streams through one driver in memory and says where they depart from the reference."""

    def __init__(self, options: RunOptions, driver: Driver, *, seed: int) -> None:
        self.options = options
        self.driver = driver
        self.seed = seed  # of the mutating modes: the search's own
        self.require = options.required_choices()
        # Gating on another outcome than the reference's: the alternatives are always needed.
        self.eager = any(getattr(REFERENCE, p) != v for p, v in (self.require or {}).items())

    def check(
        self,
        stream: Stream,
        modes: Sequence[str],
        *,
        case_id: str = CASE_ID,
        every: bool = False,
        payloads: Sequence[Payload] | None = None,
        golden: dict[str, Any] | None = None,
    ) -> Checked:
        """Run `stream` in `modes` (stopping at the first that fails unless `every`)."""
        if payloads is None:
            payloads = stream.payload_records()
        case = _case(case_id)
        capped = stream.thinking_capped
        points: tuple[str, ...] = ()
        full: dict[str, Any] | None = None
        if golden is None:
            golden = expected(payloads, capped, case.recording_name)
        if self.eager:
            points = touched_points(payloads, capped, candidates=candidates_of(stream))
            golden = full = with_alternatives(payloads, capped, case.recording_name, points)
        failed = []
        for mode in modes:
            result = self._run(case, golden, mode, payloads)
            if result.status == FAILED and full is None:
                points = touched_points(payloads, capped, candidates=candidates_of(stream))
                if points:  # another allowed outcome may be the target's
                    full = with_alternatives(payloads, capped, case.recording_name, points)
                else:
                    full = golden
            if result.status == FAILED and full is not golden:
                golden = full
                result = self._run(case, golden, mode, payloads)
            if result.status != PASSED:
                failed.append(result)
                if not every:
                    break
        return Checked(failed, points)

    def _run(
        self, case: Case, golden: dict[str, Any], mode: str, payloads: Sequence[Payload]
    ) -> CaseResult:
        return run_case(
            case,
            golden,
            self.driver,
            mode=mode,
            seed=self.seed,
            require=self.require,
            level=self.options.level,
            payloads=payloads,
        )


def signature(result: CaseResult) -> tuple[str, str]:
    """How a result went wrong, whatever the stream's size: its status and first field (indices
    left out) or the crash's first words. Shrinking keeps a stream only when this stays."""
    if result.mismatches:
        return (str(result.status), re.sub(r"\[\d+\]", "[]", result.mismatches[0].path))
    if result.crash is not None:
        return (str(result.status), result.crash.message.split(":")[0])
    return (str(result.status), "")


def case_id_of(result: CaseResult, stream: Stream) -> str:
    """`fuzz/<what differs>_<hash>`: the case a finding is kept as (and checked under)."""
    words = signature(result)[1] if result.mismatches else str(result.status)
    words = re.sub(r"\[\]", "", words).replace(".", "_").lower()
    digest = hashlib.sha256("\n".join(stream.payloads).encode("utf-8", "surrogatepass"))
    return f"fuzz/{re.sub(r'[^a-z0-9_]+', '', words)[:40]}_{digest.hexdigest()[:8]}"


# --- one search ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchOutcome:
    """What one search did (sent back whole from a `-j` search process)."""

    streams: int
    features: dict[str, int]
    points: dict[str, int]
    finding: Finding | None
    found_size: tuple[int, int] | None
    interrupted: bool
    coverage: Coverage


class Search:
    """One search: its seed, its guide, its driver, and what it has found."""

    def __init__(
        self,
        request: FuzzRequest,
        number: int,
        *,
        stopped: Callable[[], bool] = lambda: False,
        on_stream: Callable[[Search], None] | None = None,
    ) -> None:
        self.request = request
        self.seed = request.seed + number
        self.quota = request.quota(number)
        self.guide = Guide(self.seed, modes=request.modes, broken=request.broken)
        self.stopped = stopped
        self.on_stream = on_stream
        self.streams = 0
        self.points: dict[str, int] = {}
        self.finding: Finding | None = None
        self.found_size: tuple[int, int] | None = None
        self.interrupted = False
        self.started: float | None = None

    def outcome(self) -> SearchOutcome:
        """What this search did."""
        return SearchOutcome(
            self.streams,
            {name: count for name, count in self.guide.features.items() if count},
            dict(self.points),
            self.finding,
            self.found_size,
            self.interrupted,
            self.guide.coverage(),
        )

    def run(self) -> None:
        """Search until a finding, the budget, `stopped()` or Ctrl-C (`interrupted`)."""
        request = self.request
        driver = request.options.start_driver()
        checker = Checker(request.options, driver, seed=self.seed)
        guide = self.guide
        try:
            number = 0
            while not self.stopped() and (self.quota is None or number < self.quota):
                now = time.monotonic()
                if self.started is None:
                    self.started = now
                elif request.seconds is not None and now - self.started > request.seconds:
                    break
                plan = guide.plan(number)
                breaker = BREAKERS[plan.breaker] if plan.breaker is not None else None
                stream = build(Draw(plan.seed, plan.wanted), breaker)
                payloads = stream.payload_records()
                new = 0
                golden = None
                if guide.traced(number):
                    golden, new = guide.lines.run(
                        lambda: expected(payloads, stream.thinking_capped, f"{CASE_ID}.sse")
                    )
                checked = checker.check(stream, plan.modes, payloads=payloads, golden=golden)
                guide.note(plan, stream.features, new_lines=new)
                for point in checked.points:
                    self.points[point] = self.points.get(point, 0) + 1
                self.streams += 1
                if self.on_stream is not None:
                    self.on_stream(self)
                if checked.failed:
                    self.found_size = size(stream)
                    self.finding = self._settle(checker, stream, plan.modes, checked, number)
                    return
                number += 1
        except KeyboardInterrupt:
            self.interrupted = True
        finally:
            driver.close()

    def _settle(
        self,
        checker: Checker,
        stream: Stream,
        modes: Sequence[str],
        checked: Checked,
        number: int,
    ) -> Finding:
        """The finding of a stream that failed: checked again, shrunk, and checked as kept."""
        first = checked.failed[0]
        failing = (first.mode,)
        reproduced, runs = 1, 1
        notes = [
            f"generated by 'conform fuzz --seed {self.seed}' (stream {number + 1}), shrunk",
        ]
        case_id = case_id_of(first, stream)
        best, best_results = stream, checked.failed
        try:
            for _ in range(self.request.reruns):
                runs += 1
                again = checker.check(stream, failing).failed
                reproduced += bool(again) and signature(again[0]) == signature(first)
            if reproduced < runs:
                return self._finding(stream, checked.failed, case_id, number, reproduced, runs)
            if not checker.check(stream, failing, case_id=case_id).failed:
                case_id = CASE_ID  # a mode seeded by the case id differs only under this one
            wanted = signature(first)
            deadline = time.monotonic() + self.request.shrink_seconds
            left = [self.request.shrink_steps]
            results: dict[Stream, list[CaseResult]] = {stream: checked.failed}

            def fails(candidate: Stream) -> bool:
                if left[0] <= 0 or time.monotonic() > deadline:
                    raise Spent
                left[0] -= 1
                found = checker.check(candidate, failing, case_id=case_id).failed
                if found and signature(found[0]) == wanted:
                    results[candidate] = found
                    return True
                return False

            shrinker = Shrinker(stream, fails)
            try:
                best = shrinker.run()
            finally:
                best = shrinker.best
                best_results = results[best]
            return self._final(checker, best, best_results, case_id, number, notes, runs)
        except KeyboardInterrupt:
            self.interrupted = True
            return self._finding(
                best, best_results, case_id, number, reproduced, runs, interrupted=True
            )

    def _final(
        self,
        checker: Checker,
        stream: Stream,
        results: list[CaseResult],
        case_id: str,
        number: int,
        notes: list[str],
        runs: int,
    ) -> Finding:
        """The shrunk stream as it is kept (its comment lines, its pins), checked in every mode
        as many times as the stream was when found."""
        first = results[0]
        where = first.mismatches[0].path if first.mismatches else f"the target {first.status}"
        notes = [*notes, f"pins what the target departed on: {where}"]
        case = kept(stream, notes=notes)
        payloads = stream.payload_records(case.comments)
        golden = with_alternatives(payloads, stream.thinking_capped, f"{case_id}.sse", case.pins)
        final = checker.check(
            stream,
            self.request.modes,
            case_id=case_id,
            every=True,
            payloads=payloads,
            golden=golden,
        ).failed
        reproduced = 1 if final else 0
        for _ in range(runs - 1):
            again = checker.check(
                stream, (results[0].mode,), case_id=case_id, payloads=payloads, golden=golden
            )
            reproduced += bool(again.failed)
        finding = Finding(
            stream,
            tuple(final or results),
            case.text,
            golden,
            case_id,
            self.seed,
            number,
            reproduced,
            runs,
        )
        return finding

    def _finding(
        self,
        stream: Stream,
        results: list[CaseResult],
        case_id: str,
        number: int,
        reproduced: int,
        runs: int,
        *,
        interrupted: bool = False,
    ) -> Finding:
        text = stream.sse()
        golden = expected(stream.payload_records(), stream.thinking_capped, f"{case_id}.sse")
        return Finding(
            stream,
            tuple(results),
            text,
            golden,
            case_id,
            self.seed,
            number,
            reproduced,
            runs,
            interrupted,
        )


# --- the run ------------------------------------------------------------------------------------


def run_fuzz(request: FuzzRequest, *, on_stream: Callable[[int, str], None] | None = None) -> FuzzRecord:
    """Fuzz the target until a difference is found or the budget is spent; `on_stream(n,
    coverage)` is called after each stream (for a progress line). ConformError when the target
    cannot start."""
    if request.searches > 1:
        from harness.fuzz.jobs import run_searches

        return run_searches(request, on_stream=on_stream)
    from harness.drive.forked import forked_workers

    started = time.monotonic()
    cpu = _cpu()

    def progress(search: Search) -> None:
        if on_stream is not None:
            on_stream(search.streams, search.guide.summary())

    search = Search(request, 0, on_stream=progress)
    with forked_workers():  # a Python target imported once: each restart after a crash forks
        search.run()
    return record_of([search.outcome()], started=started, cpu=cpu, seed=request.seed)


def _cpu() -> float:
    """CPU seconds of this process and of the processes it waited for."""
    import resource

    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def record_of(
    outcomes: Sequence[SearchOutcome],
    *,
    started: float,
    cpu: float,
    seed: int,
    interrupted: bool = False,
) -> FuzzRecord:
    """The record of finished searches: the smallest finding, their counts added up."""
    found = [o for o in outcomes if o.finding is not None]
    best = min(found, key=lambda o: o.finding.size if o.finding else (0, 0)) if found else None
    features: dict[str, int] = {}
    points: dict[str, int] = {}
    coverage = Coverage()
    for outcome in outcomes:
        for name, count in outcome.features.items():
            features[name] = features.get(name, 0) + count
        for point, count in outcome.points.items():
            points[point] = points.get(point, 0) + count
        coverage |= outcome.coverage
    return FuzzRecord(
        streams=sum(o.streams for o in outcomes),
        seconds=time.monotonic() - started,
        seed=seed,
        finding=best.finding if best is not None else None,
        features=dict(sorted(features.items())),
        points=dict(sorted(points.items())),
        found_size=best.found_size if best is not None else None,
        cpu_seconds=_cpu() - cpu,
        coverage=coverage.summary(),
        interrupted="Ctrl-C" if interrupted or any(o.interrupted for o in outcomes) else None,
    )
