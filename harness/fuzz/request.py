"""What `conform fuzz` is asked to do (`FuzzRequest`) and what it did (`FuzzRecord`, with the
`Finding` of a stream the target differs on): plain data, shared by the search, its `-j`
processes and the command."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.check.options import RunOptions
from harness.check.results import CaseResult
from harness.errors import ConformError
from harness.fuzz.model.stream import Stream
from harness.fuzz.shrink import size

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
    #: The text the results' lines name, when it is not `recording` ("": it is): the stream as
    #: checked, without the kept case's comment lines.
    checked: str = ""

    @property
    def listing(self) -> str:
        """The recording the results' line numbers refer to."""
        return self.checked or self.recording

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
    #: Seconds from the first stream to the end of the search (the longest search's, with -j).
    searched: float = 0.0
    #: How much of the catalogue the run exercised (`Guide.summary`).
    coverage: str = ""
    #: "Ctrl-C" (or the signal's name) when the run was interrupted.
    interrupted: str | None = None
