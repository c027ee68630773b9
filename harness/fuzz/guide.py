"""Where a fuzz run steers: a coverage map over the model's catalogue and the reference's lines.

The map counts, for this run, the streams that held each feature of the catalogue
(`harness.fuzz.model.features`), each pair of features, each breaker, each mode, and the lines of
the reference that the expected results ran. Each stream's plan (`Guide.plan`) asks for what has
been exercised least: half the streams want a feature no stream has held yet, or a pair of
features never seen together (the stream model makes a wanted feature for sure where it can:
`harness.fuzz.model.draw`), and a broken stream takes the breaker drawn least so far, so every
breaker is drawn early (within the first thousand streams: tests/fuzz/test_guide.py) however
long the catalogue grows. A stream that ran reference lines no stream had run before keeps its
features as a plan worth drawing again: two of them, and one more feature.

The reference's lines are read with `sys.settrace` around the expected result of one stream in
`TRACE_EVERY` (a traced pass costs about 3.5 times an untraced one, 220 against 60 µs a stream:
one in 32 adds about 5 µs a stream; benchmarks/bench_fuzz.py prints both). Only the reference's
own work is traced, so the streams of a seed are the same whatever the target. Everything the
guide decides comes from its own generator, seeded by the run's seed, and from what the streams
before held: the same seed gives the same plans.
"""

from __future__ import annotations

import inspect
import itertools
import random
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import reference
from harness.fuzz.model.breakers import BREAKERS, CONFUSED_PREFIX
from harness.fuzz.model.features import FEATURES
from harness.fuzz.model.streams import MADE_BY_BREAKERS

T = TypeVar("T")

#: One stream in this many has the reference's lines traced while its expected result is made.
TRACE_EVERY = 32
#: A wanted feature or pair that a stream did not hold after this many tries is left alone.
_TRIES = 4
#: The features the guide asks for: those a valid stream can hold (a breaker makes the others).
_DRAWABLE = tuple(f.name for f in FEATURES if f.name not in MADE_BY_BREAKERS and f.drawn)
_BREAKER_FEATURES = frozenset(b.feature for b in BREAKERS.values())
#: The breakers by family: the shape errors of R6 and their neighbours, the type-confusion matrix.
_BREAKER_FAMILIES: tuple[tuple[str, ...], ...] = (
    tuple(name for name in BREAKERS if not name.startswith(CONFUSED_PREFIX)),
    tuple(name for name in BREAKERS if name.startswith(CONFUSED_PREFIX)),
)
#: Features that make a stream costly to run (a payload above 64 KiB, a text of several KiB):
#: wanted alone until a stream holds them, never in pairs.
_COSTLY = frozenset(("huge_payload", "long_text"))
_DRAWABLE_SET = frozenset(_DRAWABLE)
#: The features paired with each other, and each one's number (a bit of `Guide._with`).
_PAIRED = tuple(sorted(n for n in _DRAWABLE if n not in _COSTLY))
_PAIR_NUMBER = {name: number for number, name in enumerate(_PAIRED)}


@dataclass(frozen=True)
class Plan:
    """What one stream is asked to be: its own seed, the features wanted, the breaker (None: a
    valid stream) and the modes it runs in."""

    number: int
    seed: int
    wanted: frozenset[str]
    breaker: str | None
    modes: tuple[str, ...]


class Guide:
    """One search's coverage map and the plans it makes from it."""

    def __init__(
        self, seed: int, *, modes: Sequence[str], broken: bool | None, plain: str = "plain"
    ) -> None:
        self._random = random.Random(f"conform fuzz {seed}")
        self._first = tuple(mode for mode in modes if mode == plain)
        self._others = tuple(mode for mode in modes if mode != plain)
        self._broken = broken
        self.features: dict[str, int] = dict.fromkeys(_DRAWABLE, 0)
        self.features.update(dict.fromkeys(_BREAKER_FEATURES, 0))
        self.breakers: dict[str, int] = dict.fromkeys(BREAKERS, 0)
        self.modes: dict[str, int] = dict.fromkeys(modes, 0)
        #: For each paired feature's number, the bits of the features seen with it.
        self._with = [0] * len(_PAIRED)
        self._pairs_left = list(itertools.combinations(range(len(_PAIRED)), 2))
        self._tries: dict[Any, int] = {}
        #: The features no stream held yet (the next one asked for last).
        self._unseen = list(reversed(_DRAWABLE))
        #: Each family's breakers still to draw in its round (popped from the end), and the
        #: families whose first round is not over.
        self._queues: list[list[str]] = []
        for family in _BREAKER_FAMILIES:
            queue = list(family)
            self._random.shuffle(queue)
            self._queues.append(queue)
        self._first_rounds = set(range(len(_BREAKER_FAMILIES)))
        self._interesting: list[frozenset[str]] = []
        self.lines = LineCoverage()
        self.streams = 0

    # --- plans ------------------------------------------------------------------------------

    def plan(self, number: int) -> Plan:
        """The plan of stream `number` of this search."""
        rng = self._random
        breaker = None
        broken = self._broken
        if broken is None:  # more broken streams until every breaker was drawn once
            broken = rng.random() < (0.75 if self._first_rounds else 0.5)
        if broken:
            breaker = self._next_breaker(rng)
        wanted: frozenset[str] = frozenset()
        roll = rng.random()
        if roll < 0.5:
            wanted = self._wanted(rng)
        elif roll < 0.65 and self._interesting:
            # two of the features of a stream that ran new reference lines, and one more (all of
            # them would make a stream as large as that one, at every try)
            found = sorted(_pick(rng, self._interesting))
            wanted = frozenset((_pick(rng, found), _pick(rng, found), _pick(rng, _DRAWABLE)))
        modes = self._first
        if self._others:
            least = min(self.modes[m] for m in self._others)
            pool = [m for m in self._others if self.modes[m] == least]
            modes = (*modes, _pick(rng, pool))
        seed = int(rng.random() * 2**62)
        return Plan(number, seed, wanted, breaker, modes)

    def _next_breaker(self, rng: random.Random) -> str:
        """The breaker drawn least so far in a family taken at random (the shape errors of R6
        and their neighbours, or the type-confusion matrix, each half the broken streams: the
        matrix's hundreds of cells would crowd out the few dozen other breakers)."""
        family = int(rng.random() * len(_BREAKER_FAMILIES))
        queue = self._queues[family]
        if not queue:
            if family in self._first_rounds:
                self._first_rounds.discard(family)
            queue.extend(_BREAKER_FAMILIES[family])
            rng.shuffle(queue)
            queue.reverse()  # popped from the end: in the shuffled order
        return queue.pop()

    def _wanted(self, rng: random.Random) -> frozenset[str]:
        """A feature no stream held yet, else a pair of features never seen together."""
        unseen = self._unseen
        while unseen:
            name = unseen[-1]
            if self.features[name] or self._tries.get(name, 0) >= _TRIES:
                unseen.pop()
                continue
            self._tries[name] = self._tries.get(name, 0) + 1
            return frozenset((name,))
        left = self._pairs_left
        while left:
            at = int(rng.random() * len(left))
            pair = left[at]
            if self._with[pair[0]] >> pair[1] & 1 or self._tries.get(pair, 0) >= _TRIES:
                left[at] = left[-1]
                left.pop()
                continue
            self._tries[pair] = self._tries.get(pair, 0) + 1
            return frozenset((_PAIRED[pair[0]], _PAIRED[pair[1]]))
        return frozenset()

    # --- what a stream held -----------------------------------------------------------------

    def note(self, plan: Plan, features: Iterable[str], *, new_lines: int = 0) -> None:
        """Count what the stream of `plan` held (and how many reference lines it ran first)."""
        self.streams += 1
        held = sorted(set(features))
        counts = self.features
        for name in held:
            counts[name] = counts.get(name, 0) + 1
        numbers = [_PAIR_NUMBER[name] for name in held if name in _PAIR_NUMBER]
        bits = 0
        for number in numbers:
            bits |= 1 << number
        seen_with = self._with
        for number in numbers:
            seen_with[number] |= bits
        if plan.breaker is not None:
            self.breakers[plan.breaker] += 1
        for mode in plan.modes:
            self.modes[mode] += 1
        if new_lines:
            self._interesting.append(frozenset(n for n in held if n in _DRAWABLE_SET))

    @property
    def pairs(self) -> frozenset[tuple[str, str]]:
        """The pairs of features some stream held together."""
        return frozenset(
            (_PAIRED[i], _PAIRED[j])
            for i, j in itertools.combinations(range(len(_PAIRED)), 2)
            if self._with[i] >> j & 1
        )

    def coverage(self) -> Coverage:
        """What this search exercised, as a value that can be sent and added up."""
        return Coverage(
            frozenset(name for name, count in self.features.items() if count),
            frozenset(name for name, count in self.breakers.items() if count),
            self.pairs,
            frozenset(self.lines.seen),
            self.lines.total,
        )

    def summary(self) -> str:
        """How much of the catalogue this search exercised, in one line."""
        return self.coverage().summary()

    def traced(self, number: int) -> bool:
        """Whether stream `number` has its expected result traced."""
        return number % TRACE_EVERY == 0


#: How many features, breakers and pairs the catalogue holds (what `Coverage.summary` counts of).
FEATURE_COUNT = len(_DRAWABLE) + len(_BREAKER_FEATURES - set(_DRAWABLE))
BREAKER_COUNT = len(BREAKERS)
PAIR_COUNT = len(_PAIRED) * (len(_PAIRED) - 1) // 2


@dataclass(frozen=True)
class Coverage:
    """What searches exercised: features, breakers, pairs of features, reference lines."""

    features: frozenset[str] = frozenset()
    breakers: frozenset[str] = frozenset()
    pairs: frozenset[tuple[str, str]] = frozenset()
    lines: frozenset[tuple[str, int]] = frozenset()
    line_total: int = 0

    def __or__(self, other: Coverage) -> Coverage:
        return Coverage(
            self.features | other.features,
            self.breakers | other.breakers,
            self.pairs | other.pairs,
            self.lines | other.lines,
            max(self.line_total, other.line_total),
        )

    def summary(self) -> str:
        """`features 95/95, breakers 64/64, pairs 2011/3655, reference lines 402/470`."""
        text = (
            f"features {len(self.features)}/{FEATURE_COUNT}, "
            f"breakers {len(self.breakers)}/{BREAKER_COUNT}, "
            f"pairs {len(self.pairs)}/{PAIR_COUNT}"
        )
        if self.line_total:
            text += f", reference lines {len(self.lines)}/{self.line_total}"
        return text


def _pick(rng: random.Random, values: Sequence[T]) -> T:
    return values[int(rng.random() * len(values))]


class LineCoverage:
    """The lines of the reference's modules that traced passes ran."""

    def __init__(self) -> None:
        self.files = frozenset(str(path) for path in Path(reference.__file__).parent.glob("*.py"))
        self.seen: set[tuple[str, int]] = set()
        self.total = _count_lines(self.files)

    def run(self, action: Callable[[], T]) -> tuple[T, int]:
        """`action()` with the reference's lines traced; its result and the lines new to the map."""
        seen = self.seen
        before = len(seen)
        files = self.files
        add = seen.add

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                add((frame.f_code.co_filename, frame.f_lineno))
            return local

        def calls(frame: FrameType, event: str, arg: Any) -> Any:
            return local if frame.f_code.co_filename in files else None

        previous = sys.gettrace()
        sys.settrace(calls)
        try:
            result = action()
        finally:
            sys.settrace(previous)
        return result, len(seen) - before


def _count_lines(files: Iterable[str]) -> int:
    """The lines of `files` that hold code (what the tracer can report), counted once."""
    total = 0
    for name in files:
        try:
            code = compile(Path(name).read_text(encoding="utf-8"), name, "exec")
        except (OSError, SyntaxError):
            continue
        total += len(_code_lines(code))
    return total


def _code_lines(code: Any) -> set[int]:
    """The lines of the functions in `code` a line event can name (not their `def` lines, and
    nothing of a module's or class's own body, which runs at import)."""
    lines: set[int] = set()
    if code.co_flags & inspect.CO_OPTIMIZED:
        lines = {line for _, _, line in code.co_lines() if line is not None}
        lines.discard(code.co_firstlineno)
    for const in code.co_consts:
        if hasattr(const, "co_lines"):
            lines |= _code_lines(const)
    return lines
