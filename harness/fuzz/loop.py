"""Fuzzing a target: generated streams through the target and the reference, shrunk on a difference.

`run_fuzz(request)` draws streams from the model (`harness.fuzz.model.streams`), writes each as a
recording in a scratch suite, builds its expected result with the reference under every allowed
outcome of the implementation-defined points (`harness.fuzz.model.expect`), and runs it through the
target as `conform run` runs a case (`harness.pipeline.case_runner.CaseRunner`), in each mode
asked for. On the first difference hypothesis shrinks the stream to a small one that still
differs; the result is a `FuzzRecord` holding that stream, its expected result and the failing
results in every mode, which `conform fuzz` renders like a run failure and can save as a case
(`save_finding`).

Reproducible: the same seed gives the same streams (hypothesis is seeded, its example database is
off, and every mutating mode is seeded). With `jobs` > 1 each worker searches with its own seed
(seed + worker number) and its own driver; the first finding stops the others.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisWarning

from harness.check.modes import PLAIN
from harness.check.options import RunOptions
from harness.check.results import PASSED, CaseResult
from harness.drive.forked import forked_workers
from harness.drive.inprocess import Driver
from harness.errors import ConformError
from harness.fuzz.model.expect import expected, write_case
from harness.fuzz.model.streams import Stream, drawing, streams
from harness.pipeline.case_runner import CaseRunner
from harness.suite import golden as golden_files
from harness.suite.cases import Case, writable_root

#: The case id a generated stream runs under (the seeded modes depend on it, so it is fixed).
CASE_ID = "fuzz/stream"
#: Streams tried while shrinking a finding: a count, not a time, so that the same seed gives the
#: same shrunk stream on any machine.
SHRINK_STEPS = 150
#: A slow target's shrinking also stops after this long (and is then machine-dependent).
SHRINK_SECONDS = 120.0


@dataclass(frozen=True)
class FuzzRequest:
    """What to fuzz and for how long: the run's options (target, modes, seed, gating, `-j`) as
    `conform run` takes them, and `examples` streams or `seconds` of them (one of the two)."""

    options: RunOptions
    examples: int | None = None
    seconds: float | None = None
    broken: bool | None = None  # None: valid and broken streams alike
    shrink_steps: int = SHRINK_STEPS

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
    def jobs(self) -> int:
        return self.options.jobs

    def make_driver(self) -> Driver:
        """A driver for the target, started (ConformError when it cannot start)."""
        return self.options.start_driver()


@dataclass(frozen=True)
class Finding:
    """A stream the target and the reference disagree on, shrunk: the failing results (one per
    mode that fails), the recording's text, and its expected result."""

    stream: Stream
    results: tuple[CaseResult, ...]
    recording: str
    golden: dict[str, Any]

    @property
    def size(self) -> tuple[int, int]:
        """How big the stream is: payloads, then characters (smaller is a better report)."""
        return (len(self.stream.payloads), len(self.recording))


@dataclass(frozen=True)
class FuzzRecord:
    """What a fuzz run did: how many streams it ran, for how long, and what it found."""

    streams: int
    seconds: float
    seed: int
    finding: Finding | None = None
    features: dict[str, int] = field(default_factory=dict)  # streams using each feature
    #: Streams whose expected result pins each implementation-defined point (has alternatives).
    points: dict[str, int] = field(default_factory=dict)
    #: How big the finding was when first found, before shrinking (payloads, characters).
    found_size: tuple[int, int] | None = None


def modes_of(modes: Sequence[str]) -> st.SearchStrategy[tuple[str, ...]]:
    """The modes one stream runs in: `plain` (when asked for) and one other mode drawn with the
    stream, so that every mode asked for is used across the streams at twice the cost of one,
    not seven times."""
    first = tuple(mode for mode in modes if mode == PLAIN)
    others = [mode for mode in modes if mode != PLAIN]
    if not others:
        return st.just(first)
    return st.sampled_from(others).map(lambda mode: (*first, mode))


def search(
    probe: Callable[[Stream, tuple[str, ...]], None],
    *,
    seed: int,
    broken: bool | None,
    modes: Sequence[str],
    shrink: bool = True,
) -> Callable[[], None]:
    """The search of a fuzz run: calling it draws streams (and the modes of each) on `seed`, as
    `conform fuzz --seed` does, and calls `probe` with each, shrinking what fails (with `shrink`)
    until `probe` raises a BaseException that ends it."""

    @settings(
        # Never the limit: the budget is counted by `probe`, so that the first N streams of a
        # seed are the same whatever the budget (hypothesis plans by max_examples).
        max_examples=10**9,
        database=None,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.generate, Phase.shrink) if shrink else (Phase.generate,),
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        print_blob=False,
    )
    @hypothesis_seed(seed)
    @given(streams(broken=broken), modes_of(modes))
    def property_holds(stream: Stream, modes: tuple[str, ...]) -> None:
        probe(stream, modes)

    return property_holds


class _Stop(BaseException):
    """The search is over: its budget or time is spent, or shrinking has used its steps.

    A BaseException that is not a failure to hypothesis (not an Exception), so it leaves the
    engine at once: hypothesis neither shrinks it as a failure nor tries more streams.
    """


class _Found(Exception):
    """The target departed from the reference on this stream."""


class _Search:
    """One worker's search: its driver, its scratch suite, and what it has seen."""

    def __init__(self, request: FuzzRequest, *, number: int, shared: _Shared) -> None:
        self.request = request
        self.number = number
        self.shared = shared
        self.root = Path(tempfile.mkdtemp(prefix="conform-fuzz-"))
        self.runner: CaseRunner | None = None
        self.best: Finding | None = None
        self.found_size: tuple[int, int] | None = None
        self.shrink_deadline: float | None = None
        self.shrink_left = request.shrink_steps
        #: Streams this worker may still try (its share of `examples`).
        self.quota = (
            -(-request.examples // max(request.jobs, 1)) if request.examples is not None else 10**12
        )
        self.problem: BaseException | None = None
        #: While shrinking, only the mode that failed first is run (a stream that still fails
        #: there is a smaller example of the same difference).
        self.shrink_modes: tuple[str, ...] = ()
        #: What the last stream checked pins.
        self.pins: tuple[str, ...] = ()

    def check(self, stream: Stream, modes: Sequence[str], *, every: bool = False) -> Finding | None:
        """Run `stream` through the target in `modes` (stopping at the first failing mode unless
        `every`); the finding, or None when the target agrees."""
        assert self.runner is not None
        case = write_case(stream, self.root / "recordings", self.root / "golden", CASE_ID)
        golden = expected(case)
        self.pins = tuple(golden["pins"])
        failed: list[CaseResult] = []
        for mode in modes:
            result = self.runner.run(case, golden, mode=mode)
            if result.status != PASSED:
                failed.append(result)
                if not every:
                    break
        if not failed:
            return None
        text = case.recording.read_text(encoding="utf-8")
        return Finding(stream, tuple(failed), text, golden)

    def probe(self, stream: Stream, modes: tuple[str, ...]) -> None:
        """The property hypothesis tests: the target agrees with the reference on `stream` in
        `modes`."""
        shared = self.shared
        now = time.monotonic()
        if self.best is None:
            if shared.stop.is_set() or now > shared.deadline or self.quota <= 0:
                raise _Stop
            self.quota -= 1
        elif self.shrink_left <= 0 or (
            self.shrink_deadline is not None and now > self.shrink_deadline
        ):
            raise _Stop  # shrinking is over: the best finding so far stands
        else:
            self.shrink_left -= 1
        try:
            finding = self.check(stream, self.shrink_modes or modes)
        except Exception as exc:
            self.problem = exc  # a bug in conform, or a setup error: reported as such
            raise
        if self.best is None:
            shared.note(stream, self.pins)  # streams searched; the shrinking's are not counted
        if finding is None:
            return
        if self.best is None:
            self.found_size = finding.size
            self.shrink_deadline = time.monotonic() + SHRINK_SECONDS
            self.shrink_modes = (finding.results[0].mode,)
            shared.stop.set()
        if self.best is None or finding.size < self.best.size:
            self.best = finding
        raise _Found

    def run(self) -> None:
        request = self.request
        property_holds = search(
            self.probe, seed=request.seed + self.number, broken=request.broken, modes=request.modes
        )

        try:
            self.runner = CaseRunner(request.options)
            self.runner.driver()  # started before the search: a target that cannot start stops it
            with warnings.catch_warnings():
                # hypothesis's note on a large example's repr: the report shows it, shortened
                warnings.simplefilter("ignore", HypothesisWarning)
                property_holds()
        except (_Found, _Stop):
            pass
        except Exception as exc:  # hypothesis's own (flaky, ...) once shrinking was cut short
            if self.problem is None and self.best is None:
                self.problem = exc
        finally:
            if self.runner is not None:
                self.runner.close()

    def finish(self) -> Finding | None:
        """The best finding re-run in every mode asked for, for the report (None: none)."""
        if self.best is None:
            return None
        with CaseRunner(self.request.options) as self.runner:
            again = self.check(self.best.stream, self.request.modes, every=True)
        self.runner = None
        return again if again is not None else self.best

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class _Shared:
    """What the workers share: the deadline, the stop flag, and the count of streams run."""

    def __init__(self, deadline: float, on_stream: Callable[[int], None] | None) -> None:
        self.deadline = deadline
        self.stop = threading.Event()
        self.count = 0
        self.features: dict[str, int] = {}
        self.points: dict[str, int] = {}
        self._lock = threading.Lock()
        self._on_stream = on_stream

    def note(self, stream: Stream, pins: Sequence[str]) -> None:
        with self._lock:
            self.count += 1
            for name in stream.features:
                self.features[name] = self.features.get(name, 0) + 1
            for pin in pins:  # a scratch stream pins implementation-defined points only
                self.points[pin] = self.points.get(pin, 0) + 1
            count = self.count
        if self._on_stream is not None:
            self._on_stream(count)


def run_fuzz(request: FuzzRequest, *, on_stream: Callable[[int], None] | None = None) -> FuzzRecord:
    """Fuzz the target until a difference is found or the budget is spent; `on_stream(n)` is
    called after each stream (for a progress line). ConformError when the target cannot start."""
    started = time.monotonic()
    deadline = started + request.seconds if request.seconds is not None else float("inf")
    shared = _Shared(deadline, on_stream)
    with forked_workers():  # a Python target imported once: each restart after a crash forks
        return _fuzz(request, started, shared)


def _fuzz(request: FuzzRequest, started: float, shared: _Shared) -> FuzzRecord:
    # The first driver is made up front, so that a target that cannot start stops here.
    request.make_driver().close()
    searches = [_Search(request, number=n, shared=shared) for n in range(max(request.jobs, 1))]
    with drawing():
        try:
            if len(searches) == 1:
                searches[0].run()
            else:
                threads = [threading.Thread(target=s.run, daemon=True) for s in searches]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            for search in searches:
                if search.problem is not None and search.best is None:
                    raise search.problem
            found = [s for s in searches if s.best is not None]
            finding = None
            found_size = None
            if found:
                best = min(found, key=lambda s: s.best.size if s.best else (0, 0))
                finding = best.finish()
                found_size = best.found_size
        finally:
            for search in searches:
                search.close()
    return FuzzRecord(
        streams=shared.count,
        seconds=time.monotonic() - started,
        seed=request.seed,
        finding=finding,
        features=dict(sorted(shared.features.items())),
        points=dict(sorted(shared.points.items())),
        found_size=found_size,
    )


def _slug(finding: Finding) -> str:
    first = finding.results[0]
    path = first.mismatches[0].path if first.mismatches else first.status
    words = re.sub(r"\[\d+\]", "", path).replace(".", "_")
    digest = hashlib.sha256(finding.recording.encode("utf-8")).hexdigest()[:8]
    return f"{re.sub(r'[^a-z0-9_]+', '', words.lower())[:40]}_{digest}"


def save_finding(finding: Finding, root: Path, *, seed: int, label: str) -> Case:
    """Write `finding` as a recording and its golden file into the suite at `root` (never into
    an installed package), as `recordings/fuzz/<what differs>_<hash>.sse`; the case written."""
    suite = writable_root(root, command="fuzz --save")
    first = finding.results[0]
    where = first.mismatches[0].path if first.mismatches else f"the target {first.status}"
    notes = (
        f"generated by 'conform fuzz --seed {seed}' and shrunk; first found on {label}",
        f"pins what the target departed on: {where}",
    )
    case = write_case(
        finding.stream,
        suite / "recordings",
        suite / "golden",
        f"fuzz/{_slug(finding)}",
        notes=notes,
        keep=True,
    )
    golden_files.update([case])
    return case
