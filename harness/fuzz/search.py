"""One search of a fuzz run: streams drawn on its seed, checked, and a difference settled.

A `Search` draws streams from the model (`harness.fuzz.model.streams`) on its own seed (the run's
seed + its number), steered by its coverage map (`harness.fuzz.guide`), and checks each
(`harness.fuzz.check`) in `plain` and one other mode. On the first difference it checks that it
reproduces (a difference that does not, every time, is flaky: never shrunk or saved), shrinks it
(`harness.fuzz.shrink`) and checks the shrunk stream once more, as it would be kept, in every mode.
Its streams come from its seed alone (its guide's generator, and what the streams before held),
whatever the target, the budget or `-j`: a finding names the seed and the stream number that
reproduce it.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.check.results import CaseResult
from harness.fuzz.check import Checked, Checker, case_id_of, signature
from harness.fuzz.guide import Coverage, Guide
from harness.fuzz.model.breakers import BREAKERS
from harness.fuzz.model.draw import Draw
from harness.fuzz.model.expect import expected, framing_rules, kept, rule_of, with_alternatives
from harness.fuzz.model.stream import Stream
from harness.fuzz.model.streams import build
from harness.fuzz.request import CASE_ID, Finding, FuzzRecord, FuzzRequest
from harness.fuzz.shrink import Shrinker, Spent, size


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
    searched: float


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
        #: Seconds from the first stream to the end of the search (before a finding is settled).
        self.searched = 0.0

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
            self.searched,
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
                    capped = stream.thinking_capped
                    golden, new = guide.lines.run(
                        lambda p=payloads, c=capped: expected(p, c, f"{CASE_ID}.sse")  # type: ignore[misc]
                    )
                checked = checker.check(stream, plan.modes, payloads=payloads, golden=golden)
                guide.note(plan, stream.features, new_lines=new)
                for point in checked.points:
                    self.points[point] = self.points.get(point, 0) + 1
                self.streams += 1
                self.searched = time.monotonic() - self.started
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
                again = checker.check(stream, failing).failed
                runs += 1  # (a run cut short by Ctrl-C is no run)
                reproduced += bool(again) and signature(again[0]) == signature(first)
            if reproduced < runs:
                return self._finding(
                    stream, checked.failed, case_id, number, reproduced, runs, notes=notes
                )
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
            notes.append("shrinking was interrupted: the smallest stream found so far")
            return self._finding(
                best, best_results, case_id, number, reproduced, runs, notes=notes, interrupted=True
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
        case = kept(stream, notes=notes, rules=departed(results, stream))
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
        notes: list[str],
        interrupted: bool = False,
    ) -> Finding:
        """A finding not checked again as it is kept (flaky, or shrinking interrupted): its
        results name the lines of the stream as checked, without the kept case's comments."""
        case = kept(stream, notes=notes, rules=departed(results, stream))
        payloads = stream.payload_records(case.comments)
        golden = with_alternatives(payloads, stream.thinking_capped, f"{case_id}.sse", case.pins)
        return Finding(
            stream,
            tuple(results),
            case.text,
            golden,
            case_id,
            self.seed,
            number,
            reproduced,
            runs,
            interrupted,
            checked=stream.sse(),
        )


def departed(results: Sequence[CaseResult], stream: Stream) -> tuple[str, ...]:
    """The rules a shrunk finding pins: those of the fields the target departed on (a crash's
    rule is not known: none), and `SSE` when its framing is not the plain one."""
    rules = {rule_of(m.path) for result in results for m in result.mismatches[:1]}
    return (*sorted(r for r in rules if r is not None), *framing_rules(stream))


def cpu_seconds() -> float:
    """CPU seconds of this process and of the processes it waited for."""
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
        cpu_seconds=cpu_seconds() - cpu,
        searched=max((o.searched for o in outcomes), default=0.0),
        coverage=coverage.summary(),
        interrupted="Ctrl-C" if interrupted or any(o.interrupted for o in outcomes) else None,
    )
