"""Comparing a target's step or finish with the golden one: a cheap exact check, then deepdiff.

Numbers compare by value (`0` equals `0.0`) but `true` is not a number (contract section 4),
which neither `==` (`True == 1`) nor deepdiff's `ignore_numeric_type_changes` gets right, so the
cheap check is `same` below and deepdiff's int/float type changes of equal value are dropped. A
golden server error without a `message` (an outcome of I8 `default`) takes any message. This is
the only module that imports deepdiff, and it does so only once a check has failed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import msgspec

from harness.safetext import ABSENT

# msgpack, not JSON: it keeps int, float and bool apart as JSON text does, and skips the number
# formatting and string escaping (a fifth faster on a step).
#: The encoding `same_step` compares (equal encodings of JSON values are equal values): a whole
#: pass's steps may be encoded at once, and compared one by one only when they differ.
encode_step = msgspec.msgpack.encode


@dataclass(frozen=True, slots=True)
class Difference:
    """One field that differs: its path in the golden schema, expected against actual."""

    path: str
    expected: Any
    actual: Any


def same(expected: Any, actual: Any) -> bool:
    """Golden equality: numbers by value, booleans only equal to booleans, exact structure."""
    # The fast path, for the usual equal step: `==` in C, where `True == 1` and `1 == 1.0`, so
    # the encodings must match too (`true` is not `1`; `1` and `1.0` differ, and go the slow
    # way; so does an integer beyond 64 bits). msgspec refuses subclasses of str and int, which
    # `_same` judges.
    try:
        if expected == actual:
            try:
                if encode_step(expected) == encode_step(actual):
                    return True
            except (TypeError, ValueError, OverflowError):
                pass
        return _same(expected, actual)
    except RecursionError:  # a target's value nested deeper than any golden value
        return False


def same_step(expected: Any, actual: Any) -> bool:
    """`same`, for an `actual` made only of JSON values (dicts, lists, strings, numbers, booleans,
    None): what the normalizer and the worker protocol make of every target's answer.

    Two such values with the same msgpack encoding are the same (int, float and bool are kept
    apart, and no golden value is NaN), so one encoding each decides the usual equal step without
    `==`'s walk first; anything else takes `same`.
    """
    try:
        if encode_step(expected) == encode_step(actual):
            return True
    except (TypeError, ValueError, OverflowError, RecursionError):
        pass
    return same(expected, actual)


def _same(expected: Any, actual: Any) -> bool:
    if type(expected) is bool or type(actual) is bool:
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, dict):
        if _any_message(expected, actual):
            actual = {key: value for key, value in actual.items() if key != "message"}
        return (
            isinstance(actual, dict)
            and expected.keys() == actual.keys()
            and all(_same(value, actual[key]) for key, value in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(_same(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return expected == actual or _shortest_decimal(expected, actual)
    return type(expected) is type(actual) and expected == actual


def _any_message(expected: dict[str, Any], actual: Any) -> bool:
    """True for a golden server error without `message` (an outcome of I8 `default`, where the
    server sent none) against any server error: its message, whatever it is, passes."""
    return (
        expected.get("kind") == "server"
        and "message" not in expected
        and isinstance(actual, dict)
        and actual.get("kind") == "server"
    )


def _shortest_decimal(expected: int | float, actual: int | float) -> bool:
    """A double written as the shortest decimal that reads back as it, in integer form (Go's
    encoding/json writes the double 2^63 as 9223372036854776000): the same number to a JSON
    reader of doubles, so equal to the golden double (I2 `double`)."""
    if not isinstance(expected, float) or isinstance(actual, float) or not math.isfinite(expected):
        return False
    return bool(expected == int(expected)) and actual == int(Decimal(repr(expected)))


def _format_path(prefix: str, keys: list[Any]) -> str:
    path = prefix
    for key in keys:
        path += f"[{key}]" if isinstance(key, int) else f".{key}"
    return path


def differences(expected: Any, actual: Any, *, prefix: str) -> list[Difference]:
    """Every field where `actual` departs from `expected`, with paths under `prefix`."""
    if same(expected, actual):
        return []
    from deepdiff import DeepDiff

    found: list[Difference] = []
    try:
        tree = DeepDiff(expected, actual, view="tree", verbose_level=2, threshold_to_diff_deeper=0)
    except RecursionError:  # too deep to walk: the whole value is the difference
        return [Difference(prefix, expected, actual)]
    for levels in tree.values():
        for level in levels:
            old, new = level.t1, level.t2
            old = ABSENT if type(old).__name__ == "NotPresent" else old
            new = ABSENT if type(new).__name__ == "NotPresent" else new
            if old is not ABSENT and new is not ABSENT and same(old, new):
                continue  # an int against a float of the same value
            found.append(
                Difference(_format_path(prefix, level.path(output_format="list")), old, new)
            )
    if not found:  # deepdiff saw nothing `same` did not forgive; never report a silent failure
        found.append(Difference(prefix, expected, actual))
    found.sort(key=lambda d: d.path)
    return found
