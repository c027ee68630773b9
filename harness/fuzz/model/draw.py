"""The choices one stream is built from: a seeded generator, and the features it is asked for.

Every decision the stream model makes goes through one `Draw`: a `random.Random` seeded for that
stream alone, read through its C `random()` only (`randrange`, `choice` and `sample` are Python
code, several times its cost), and the set of catalogue features the guide wants this stream to
hold (`wanted`). A decision that makes a feature asks `draw.rarely(odds, feature)`: true when the
feature is wanted, else once in `odds + 1` draws. So the same seed and wants give the same
stream, a stream costs what building its text costs, and the guide (`harness.fuzz.guide`) can
steer toward any feature of the catalogue without knowing how it is made.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, TypeVar

T = TypeVar("T")


class Draw:
    """One stream's choices: `seed` fixes them, `wanted` names the features to make for sure."""

    __slots__ = ("_random", "_spent", "wanted")

    def __init__(self, seed: int | str, wanted: frozenset[str] = frozenset()) -> None:
        self._random = random.Random(seed).random
        self.wanted = wanted
        self._spent: set[str] = set()

    def below(self, count: int) -> int:
        """An integer in [0, count)."""
        return int(self._random() * count)

    def between(self, low: int, high: int) -> int:
        """An integer in [low, high]."""
        return low + int(self._random() * (high - low + 1))

    def pick(self, values: Sequence[T]) -> T:
        """One of `values`, each equally likely."""
        return values[int(self._random() * len(values))]

    def coin(self) -> bool:
        """True one time in two."""
        return self._random() < 0.5

    def chance(self, probability: float) -> bool:
        """True with `probability`."""
        return self._random() < probability

    def rarely(self, odds: int, feature: str | None = None) -> bool:
        """True when `feature` is wanted, else once in `odds + 1` draws."""
        if feature is not None and feature in self.wanted:
            return True
        return self._random() * (odds + 1) >= odds

    def once(self, odds: int, feature: str) -> bool:
        """As `rarely`, but a wanted `feature` is made once in the stream (a costly one: a huge
        payload, a long text), then as rarely as any."""
        if feature in self.wanted and feature not in self._spent:
            self._spent.add(feature)
            return True
        return self._random() * (odds + 1) >= odds

    def wants(self, feature: str) -> bool:
        """Whether the guide asked for `feature` in this stream."""
        return feature in self.wanted

    def subset(self, values: Sequence[T], *, most: int | None = None) -> list[T]:
        """Some of `values` (each in about half the draws), in their order, at most `most`."""
        chosen = [value for value in values if self._random() < 0.5]
        return chosen if most is None else chosen[:most]

    def cuts(self, length: int, count: int) -> list[int]:
        """`count` cut points in [0, length], sorted (equal ones allowed: empty parts)."""
        return sorted(int(self._random() * (length + 1)) for _ in range(count))

    def weighted(self, pairs: Sequence[tuple[T, float]]) -> T:
        """One of the values of `pairs`, each as likely as its weight."""
        total = sum(weight for _, weight in pairs)
        point = self._random() * total
        for value, weight in pairs:
            point -= weight
            if point < 0:
                return value
        return pairs[-1][0]


def any_of(draw: Draw, *values: Any) -> Any:
    """One of `values` (a shorthand for `draw.pick`)."""
    return values[draw.below(len(values))]
