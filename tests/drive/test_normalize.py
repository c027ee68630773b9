"""Reading a target's events, state, completion and errors into the golden schema."""

from __future__ import annotations

import decimal
import enum
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, NamedTuple

import msgspec
import pytest

import reference
from harness.drive.normalize import (
    NormalizeError,
    normalize_completion,
    normalize_error,
    normalize_events,
    read_state,
)
from harness.suite.cases import Suite


@dataclass(frozen=True)
class Content:
    text: str


class ToolCallDelta(NamedTuple):
    index: int
    id: str | None
    name: str | None
    arguments: str


class Progress(msgspec.Struct):
    total: int | None
    cache: int | None
    processed: int | None
    time_ms: int | None


class Kind(enum.Enum):
    PROTOCOL = 1
    SERVER = 2


class EventType(enum.Enum):
    REASONING = "reasoning"


def test_events_of_every_kind_of_class() -> None:
    events: list[Any] = [
        Content("a"),
        ToolCallDelta(0, "x", None, ""),
        Progress(1, 2, 3, None),
        {"type": "reasoning", "text": "r"},
        {"type": EventType.REASONING, "text": "e"},
        reference.Content("ref"),
    ]
    assert normalize_events(events) == [
        {"type": "content", "text": "a"},
        {"type": "tool_call_delta", "index": 0, "id": "x", "name": None, "arguments": ""},
        {"type": "progress", "total": 1, "cache": 2, "processed": 3, "time_ms": None},
        {"type": "reasoning", "text": "r"},
        {"type": "reasoning", "text": "e"},
        {"type": "content", "text": "ref"},
    ]


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ("text", "push returns must be a list"),
        ([{"text": "no type"}], "cannot tell the type"),
        ([{"type": "poem", "text": "x"}], "unknown type"),
        ([{"type": "content"}], "no field 'text'"),
        ([Content(["not", "scalar"])], "not a JSON scalar"),  # type: ignore[arg-type]
    ],
)
def test_unreadable_events(events: Any, message: str) -> None:
    with pytest.raises(NormalizeError, match=message):
        normalize_events(events)


def test_state_from_properties_or_methods() -> None:
    class Methods:
        def id(self) -> str:
            return "c"

        def reasoning_tokens(self) -> int:
            return 3

        def in_reasoning(self) -> bool:
            return True

        def is_finished(self) -> bool:
            return False

    expected = {"id": "c", "reasoning_tokens": 3, "in_reasoning": True, "is_finished": False}
    assert read_state(Methods()) == expected
    with pytest.raises(NormalizeError, match="no 'id' reader"):
        read_state(object())


def test_state_readers_are_each_read_once_in_order() -> None:
    from harness.drive.normalize import STATE_FIELDS

    calls: list[str] = []

    class Mixed:
        @property
        def id(self) -> str:
            calls.append("id")
            return "x"

        def reasoning_tokens(self) -> int:
            calls.append("reasoning_tokens")
            return 3

        @property
        def in_reasoning(self) -> Any:
            calls.append("in_reasoning")
            return lambda: calls.append("in_reasoning()") is None

        def is_finished(self) -> bool:
            calls.append("is_finished")
            return False

    state = read_state(Mixed())
    assert list(state) == list(STATE_FIELDS)
    assert state == {"id": "x", "reasoning_tokens": 3, "in_reasoning": True, "is_finished": False}
    assert calls == ["id", "reasoning_tokens", "in_reasoning", "in_reasoning()", "is_finished"]


def test_completion_with_enum_finish_reason_and_mapping_timings() -> None:
    completion = {
        "id": "c",
        "content": None,
        "reasoning_content": "r",
        "tool_calls": [{"id": "t", "name": "n", "arguments": "{}"}],
        "finish_reason": reference.FinishReason.TOOL_CALLS,
        "timings": {name: 1 for name in reference.Timings.__struct_fields__},
        "reasoning_tokens": 2,
        "thinking_capped": True,
    }
    normalized = normalize_completion(completion)
    assert normalized["finish_reason"] == "tool_calls"
    assert normalized["tool_calls"] == [{"id": "t", "name": "n", "arguments": "{}"}]
    assert list(normalized["timings"]) == list(reference.Timings.__struct_fields__)
    with pytest.raises(NormalizeError, match=r"completion\.tool_calls must be a list, not int"):
        normalize_completion({**completion, "tool_calls": 5})
    # A timings field the target's object lacks reads as null (llama-server leaves some out).
    partial = normalize_completion({**completion, "timings": {"cache_n": 1}})
    assert partial["timings"] == {name: (1 if name == "cache_n" else None) for name in
                                  reference.Timings.__struct_fields__}  # fmt: skip
    with pytest.raises(NormalizeError, match="no field 'timings'"):
        normalize_completion({k: v for k, v in completion.items() if k != "timings"})


def test_completion_problems_are_named_in_member_order() -> None:
    """The first field that cannot be read is the one named, objects and mappings alike."""
    call = SimpleNamespace(id="t", name="n", arguments="{}")
    fields = {
        "id": "c",
        "content": "a",
        "reasoning_content": None,
        "tool_calls": [call],
        "finish_reason": "stop",
        "timings": None,
        "reasoning_tokens": 0,
        "thinking_capped": False,
    }
    normalized = normalize_completion(SimpleNamespace(**fields))
    assert list(normalized) == list(fields) and normalized["timings"] is None
    assert normalized == normalize_completion(fields) | {"tool_calls": normalized["tool_calls"]}
    broken = [
        ({"content": [1]}, r"completion\.content is a list, not a JSON scalar"),
        ({"id": None, "content": object()}, r"completion\.content is a object"),
        ({"tool_calls": [call, SimpleNamespace(id="u", name="m")]},
         r"completion\.tool_calls\[1\] has no field 'arguments'"),
        ({"tool_calls": [{"id": 1.5, "name": (), "arguments": ""}], "finish_reason": []},
         r"completion\.tool_calls\[0\]\.name is a tuple"),
        ({"finish_reason": {}, "reasoning_tokens": []}, r"completion\.finish_reason is a dict"),
        ({"timings": {"cache_n": "x", "prompt_n": []}}, r"completion\.timings\.prompt_n is a list"),
        ({"thinking_capped": b"no"}, r"completion\.thinking_capped is a bytes"),
    ]  # fmt: skip
    for change, message in broken:
        with pytest.raises(NormalizeError, match=message):
            normalize_completion(fields | change)
    missing = {k: v for k, v in fields.items() if k not in ("content", "reasoning_tokens")}
    with pytest.raises(NormalizeError, match="completion has no field 'content'"):
        normalize_completion(SimpleNamespace(**missing))


def test_errors_by_kind() -> None:
    class Failure(Exception):
        def __init__(self, kind: Any, message: str = "m") -> None:
            super().__init__(message)
            self.kind = kind

    assert normalize_error(Failure("protocol")) == {"kind": "protocol"}
    assert normalize_error(Failure(Kind.PROTOCOL)) == {"kind": "protocol"}
    assert normalize_error(Failure(Kind.SERVER, "boom")) == {"kind": "server", "message": "boom"}
    assert normalize_error(reference.InferError(reference.ErrorKind.SERVER, "x")) == {
        "kind": "server",
        "message": "x",
    }
    assert normalize_error(Failure("oops")) is None
    assert normalize_error(ValueError("no kind")) is None

    class ByName(enum.Enum):  # values that are not kinds: the member's name is read instead
        PROTOCOL = "p"
        SERVER = 2
        OTHER = "protocol-ish"

    assert normalize_error(Failure(ByName.PROTOCOL)) == {"kind": "protocol"}
    assert normalize_error(Failure(ByName.SERVER, "x")) == {"kind": "server", "message": "x"}
    assert normalize_error(Failure(ByName.OTHER)) is None


def test_the_reference_completion_in_one_call_is_what_its_fields_give(suite: Suite) -> None:
    """The reference's own completion (read by `to_builtins`) is the object the field-by-field
    reader makes of it, value, type and order, for every shipped recording and choice."""
    from harness.drive import normalize
    from harness.suite.recording import iter_payloads, read_info
    from reference import choices

    read = 0
    for case in suite.cases():
        points = [pin for pin in read_info(case.recording).pins if pin in choices.OUTCOMES]
        for combination in choices.combinations(points) if points else [{}]:
            assembler = reference.Assembler(choices.REFERENCE.replace(combination))
            try:
                for payload in iter_payloads(case.recording):
                    assembler.push(payload.data)
                completion = assembler.finish(True)
            except reference.InferError:
                continue
            fast = normalize_completion(completion)
            slow = normalize._read_completion(completion)
            # repr: the same keys in the same order, lists as lists, 1 apart from 1.0 and True
            assert repr(fast) == repr(slow), case.case_id
            read += 1
    assert read > 100


def test_a_reference_completion_with_an_integer_too_long_is_refused() -> None:
    """The one-call reader leaves a number the field reader refuses to it (which says why)."""
    timings = reference.Timings(predicted_n=2**5000)
    completion = reference.Completion(
        "x", None, None, (), reference.FinishReason.STOP, timings, 0, False
    )
    with pytest.raises(NormalizeError, match="digits"):
        normalize_completion(completion)


@pytest.mark.parametrize("odd", [decimal.Decimal("1.5"), b"x", "1.5", True])
def test_a_reference_completion_with_timings_off_their_types_is_read_field_by_field(
    odd: Any,
) -> None:
    """A timings field the one-call reader would write otherwise (a Decimal or bytes as text) or
    could not tell apart is left to the field reader: the same object, or the same refusal."""
    from harness.drive import normalize

    completion = reference.Completion(
        "x", None, None, (), reference.FinishReason.STOP, reference.Timings(prompt_ms=odd), 0, False
    )

    def read(reader: Any) -> str:
        try:
            return repr(reader(completion))
        except NormalizeError as exc:
            return f"refused: {exc}"

    assert read(normalize_completion) == read(normalize._read_completion)
    assert not normalize._plain_completion(completion)  # not one of its number types
