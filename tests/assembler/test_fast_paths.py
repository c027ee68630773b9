"""The strict shape's learned members (`reference._wire.learn`): a speed-up that changes nothing.

A stream whose chunks carry members nobody reads is folded exactly as the lenient way folds it
(learning switched off), event by event, state by state, to the same completion or error; what a
learned member cannot hold (a deeper value, 129 levels) still goes the lenient way, and decides as
it did; the number of learned members is bounded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from reference import Assembler, InferError, Timings, _wire


@pytest.fixture(autouse=True)
def nothing_learned(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with a strict shape that has learned nothing, and leaves none behind."""
    monkeypatch.setattr(_wire, "_learned", frozenset())
    monkeypatch.setattr(_wire, "_decode_learned", _wire.decode_strict_chunk)
    yield


def fold(payloads: list[str]) -> list[Any]:
    """Every push's events and state, then the completion, or the error that ended it."""
    asm = Assembler()
    seen: list[Any] = []
    try:
        for data in payloads:
            seen.append((asm.push(data), asm.state()))
        seen.append(asm.finish(False))
    except InferError as exc:
        seen.append(("error", exc.kind, exc.message if exc.kind == "server" else None))
    return seen


def fold_unlearned(payloads: list[str], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    with monkeypatch.context() as patch:
        patch.setattr(_wire, "MAX_LEARNED", 0)
        return fold(payloads)


def chunk(delta: dict[str, Any], **more: Any) -> str:
    choice = {"index": 0, "delta": delta, "stop_reason": None, "x_choice": {"seq": [1, 2]}}
    if "finish" in more:
        choice["finish_reason"] = more.pop("finish")
    delta = {**delta, "reasoning": None, "annotations": []}
    for piece in delta.get("tool_calls") or ():
        piece["x_call"] = {"partial": True}
        piece.get("function", {})["x_fn"] = 1
    choice["delta"] = delta
    timings = {"predicted_n": 3, "n_ctx": 4096, "n_past": 7}
    body = {"id": "c", "choices": [choice], "timings": timings, "x_top": {"a": {"b": [None]}}}
    return json.dumps(body | more)


STREAM = [
    chunk({"role": "assistant", "content": None}, prompt_progress={"total": 3, "x_p": 1}),
    chunk({"reasoning_content": "think"}),
    chunk({"content": "Hi"}),
    chunk({"tool_calls": [{"index": 0, "id": "t", "function": {"name": "f", "arguments": "{"}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}),
    chunk({}, finish="tool_calls"),
    json.dumps({"id": "c", "choices": [], "usage": {"total_tokens": 9, "x_u": "n"}}),
]


def test_a_stream_of_unknown_members_is_folded_as_the_lenient_way_folds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    learned = fold(STREAM)
    assert _wire._learned >= {
        ("$", "x_top"),
        ("$.choices[]", "x_choice"),
        ("$.choices[].delta", "annotations"),
        ("$.choices[].delta.tool_calls[]", "x_call"),
        ("$.choices[].delta.tool_calls[].function", "x_fn"),
        ("$.timings", "n_ctx"),
        ("$.prompt_progress", "x_p"),
        ("$.usage", "x_u"),
    }
    assert learned == fold_unlearned(STREAM, monkeypatch)
    completion = learned[-1]
    assert type(completion.timings) is Timings and completion.timings.predicted_n == 3
    assert completion.content == "Hi" and completion.tool_calls[0].arguments == "{}"


def test_the_stream_stays_on_the_strict_shape_and_a_new_one_takes_the_learned_shape() -> None:
    asm = Assembler()
    for data in STREAM:
        asm.push(data)
    assert asm._strict and asm._decode_strict is _wire._decode_learned
    again = Assembler()
    assert again._decode_strict is _wire.decode_strict_chunk  # starts without learned members
    again.push(STREAM[0])
    assert again._strict and again._decode_strict is _wire._decode_learned  # and adopts them


@pytest.mark.parametrize(
    "value",
    [
        {"a": {"b": {"c": {"d": {"e": 1}}}}},  # deeper than a learned member holds
        [[[[[[]]]]]],
        9007199254740993 * 10**30,  # an integer msgspec's int does not hold
        "\ud83d\ude00 and a lone \ud800",  # an unpaired surrogate: protocol, whatever the member
        json.loads("[" * 81 + "]" * 81),  # deep, but not past 128
    ],
    ids=["deep-object", "deep-array", "huge-integer", "lone-surrogate", "depth-81"],
)
def test_what_a_learned_member_cannot_hold_is_decided_the_lenient_way(
    value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = [*STREAM[:3], chunk({"content": "!"}, x_top=value), *STREAM[3:]]
    assert fold(stream) == fold_unlearned(stream, monkeypatch)


def test_a_learned_member_nesting_past_128_levels_still_fails_with_protocol(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deep = json.loads("[" * 130 + "]" * 130)
    stream = [*STREAM[:3], chunk({"content": "!"}, x_top=deep), *STREAM[3:]]
    folded = fold(stream)
    assert folded[-1] == ("error", "protocol", None) and len(folded) == 4
    assert folded == fold_unlearned(stream, monkeypatch)


def test_learning_is_bounded_and_what_it_does_not_learn_is_read_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_wire, "MAX_LEARNED", 3)
    many = [json.dumps({"id": "c", "choices": [], f"m{i}": i}) for i in range(6)]
    stream = [STREAM[2], *many, STREAM[5]]
    assert fold(stream) == fold_unlearned(stream, monkeypatch)
    assert len(_wire._learned) == 3


@pytest.mark.parametrize(
    "name", ["a`b", "a` - at `$.choices[0]", "", "__proto__", "learned_0", 'a"b', "a\\b", "\x01"]
)
def test_a_member_of_any_name_is_read_the_same(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = [*STREAM[:3], json.dumps({"id": "c", name: {"x": 1}, "choices": []}), *STREAM[3:]]
    stream.append(json.dumps({"id": "c", "choices": [{"delta": {name: 2, "content": "."}}]}))
    assert fold(stream) == fold_unlearned(stream, monkeypatch)
