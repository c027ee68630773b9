"""Golden equality and the field paths of differences."""

from __future__ import annotations

from harness.check.compare import ABSENT, Difference, differences, same


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
