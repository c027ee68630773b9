"""Golden equality and the field paths of differences."""

from __future__ import annotations

import copy

import pytest

from harness.check.compare import ABSENT, Difference, differences, same, same_step
from harness.check.options import RunOptions
from harness.check.results import FAILED
from harness.check.runner import run_case
from harness.drive.inprocess import InProcessDriver
from harness.suite.cases import Suite
from harness.suite.golden import read_golden


def test_numbers_by_value_but_booleans_are_not_numbers() -> None:
    assert same(0, 0.0) and same({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not same(True, 1) and not same(0, False) and not same(None, 0)
    assert not same("1", 1) and not same([1], [1, 1]) and not same({"a": 1}, {"a": 1, "b": 2})


def test_paths_in_the_golden_schema() -> None:
    expected = {"events": [{"type": "content", "text": "a"}], "state": {"in_reasoning": False}}
    actual = {"events": [{"type": "content", "text": "b"}], "state": {"in_reasoning": 0}}
    assert differences(expected, actual, prefix="steps[3]") == [
        Difference("steps[3].events[0].text", "a", "b"),
        Difference("steps[3].state.in_reasoning", False, 0),
    ]


def test_an_int_against_an_equal_float_is_no_difference() -> None:
    assert differences({"a": 1, "b": 2}, {"a": 1.0, "b": 3}, prefix="x") == [
        Difference("x.b", 2, 3)
    ]


def test_missing_and_extra_fields_and_items() -> None:
    found = differences({"error": {"kind": "protocol"}}, {"events": []}, prefix="steps[0]")
    assert Difference("steps[0].error", {"kind": "protocol"}, ABSENT) in found
    assert Difference("steps[0].events", ABSENT, []) in found
    found = differences({"tool_calls": [1]}, {"tool_calls": [1, 2]}, prefix="finish")
    assert found == [Difference("finish.tool_calls[1]", ABSENT, 2)]


# -- the safety net: a value `same` rejects is never reported as no difference --------------------


def test_a_difference_deepdiff_cannot_see_is_the_whole_value() -> None:
    nan = float("nan")  # deepdiff sees no change in one object; golden equality: NaN != NaN
    assert not same(nan, nan)
    found = differences(nan, nan, prefix="steps[2].state.x")
    assert len(found) == 1 and found[0].path == "steps[2].state.x" and found[0].actual is nan


def test_the_safety_net_holds_whatever_deepdiff_says(monkeypatch: pytest.MonkeyPatch) -> None:
    import deepdiff

    monkeypatch.setattr(deepdiff, "DeepDiff", lambda *args, **kwargs: {})
    assert differences({"x": 1}, {"x": 2}, prefix="finish") == [
        Difference("finish", {"x": 1}, {"x": 2})
    ]
    assert differences({"x": 1}, {"x": 1.0}, prefix="finish") == []  # equal: never asked


def test_a_differing_step_with_no_listed_difference_fails_the_case(
    monkeypatch: pytest.MonkeyPatch, suite: Suite
) -> None:
    import deepdiff

    from tests.miniatures import DropsProgress

    monkeypatch.setattr(deepdiff, "DeepDiff", lambda *args, **kwargs: {})
    (case,) = suite.cases(("llama-server/progress_long_prompt",))
    result = run_case(
        case,
        read_golden(case),
        InProcessDriver(DropsProgress),
        mode="plain",
        options=RunOptions(seed=1),
    )
    assert result.status == FAILED
    assert result.mismatches and all(m.path.startswith("steps[") for m in result.mismatches)


def test_values_too_deep_to_walk_differ_as_a_whole() -> None:
    def nested(leaf: object) -> list[object]:
        value: list[object] = [leaf]
        for _ in range(100_000):
            value = [value]
        return value

    one, two = nested(1), nested(2)
    assert not same(one, two) and not same([1], one)
    found = differences(one, two, prefix="p")
    assert len(found) == 1 and found[0].path == "p"
    assert found[0].expected is one and found[0].actual is two


def test_subclasses_of_str_and_int_are_judged_by_value_and_kind() -> None:
    class Text(str):
        pass

    class Number(int):
        pass

    assert not same("a", Text("a"))  # a target's str subclass is not the golden str
    assert same(1, Number(1)) and same(1.0, Number(1)) and not same(True, Number(1))
    assert same({"a": [Number(2)]}, {"a": [2.0]})


def test_structure_must_match_exactly() -> None:
    assert not same({"a": 1}, {"b": 1}) and not same([1, 2], [2, 1]) and not same([1], (1,))
    assert not same({"a": [1]}, {"a": [1.5]}) and not same(None, {}) and not same([], {})
    assert not same({}, []) and not same({"a": 1}, ["a"]) and not same({"a": 1}, "a")
    assert same({"a": None, "b": [True, "x"]}, {"b": [True, "x"], "a": None})


def test_differences_are_sorted_by_path() -> None:
    found = differences({"b": 1, "a": 1, "c": [1, 2]}, {"b": 2, "a": 2, "c": [1, 3]}, prefix="s")
    assert [d.path for d in found] == ["s.a", "s.b", "s.c[1]"]


# -- the fast path: whatever `same` decides quickly, the plain walk decides the same ---------------


def _variants(value: object) -> list[object]:
    if isinstance(value, dict):
        found: list[object] = []
        for key, item in value.items():
            found += [{**value, key: other} for other in _variants(item)]
        return [*found, dict(reversed(value.items())), {**value, "extra": 1}]
    if isinstance(value, list):
        return [
            [*value[:i], other, *value[i + 1 :]]
            for i, v in enumerate(value)
            for other in _variants(v)
        ]
    swaps = [True, False, 1, 0, 1.0, 0.0, -0.0, "1", None, 2**70, float("nan")]
    return [other for other in swaps if other is not value]


def test_the_fast_path_agrees_with_the_plain_walk(suite: Suite) -> None:
    from harness.check.compare import _same

    (case,) = suite.cases(("synthetic/r5_tool_call_never_id",))
    golden = read_golden(case)
    checked = 0
    for expected in [*golden["steps"], golden["finish"]]:
        assert same(expected, expected) and same(expected, copy.deepcopy(expected))
        for actual in _variants(expected):
            assert same(expected, actual) == _same(expected, actual), (expected, actual)
            # The runner's check, for the JSON values a target's answer is normalized to.
            assert same_step(expected, actual) == _same(expected, actual), (expected, actual)
            checked += 1
    assert checked > 100


def test_a_double_written_as_its_shortest_decimal_integer_is_that_double() -> None:
    # Go's encoding/json writes the double 2^63 as 9223372036854776000 (found by conform fuzz on
    # the Go example): read as a double, it is the golden double; any other integer is not.
    assert same(9223372036854775808.0, 9223372036854776000)
    assert same(9223372036854775808.0, 9223372036854775808)
    assert not same(9223372036854775808.0, 9223372036854776001)
    assert not same(9007199254740992.0, 9007199254740993)
    assert not same(1.5, 2)
