"""Reading a target's events, state, completion and errors into the golden schema."""

from __future__ import annotations

import decimal
import enum
import itertools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, NamedTuple

import msgspec
import pytest

import reference
from harness.drive.inprocess import InProcessDriver
from harness.drive.normalize import (
    REFERENCE_STATE,
    NormalizeError,
    normalize_completion,
    normalize_error,
    normalize_events,
    plain_state,
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


def test_the_reference_state_in_one_call_is_its_four_readers(suite: Suite) -> None:
    """`Assembler.state()` (the in-process driver's one-call reader) gives what the documented
    readers give, value and type, after every push of every shipped recording."""
    from harness.suite.recording import iter_payloads

    pushes = 0
    for case in suite.cases():
        assembler = reference.Assembler()
        for payload in iter_payloads(case.recording):
            try:
                assembler.push(payload.data)
            except reference.InferError:
                break
            state = plain_state(assembler.state())
            assert msgspec.msgpack.encode(state) == msgspec.msgpack.encode(read_state(assembler))
            pushes += 1
    assert pushes > 1000


class _IdKind(enum.Enum):
    A = "chatcmpl-a"


def test_values_off_their_plain_types_are_read_by_the_readers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A value of the one-call reader that is not of its plain type is not trusted: the state
    is then read through the documented readers (which say what is wrong)."""
    assert plain_state((_IdKind.A, 0, False, False)) is None
    assert plain_state((None, True, False, False)) is None
    assert plain_state((None, 2**5000, False, False)) is None
    assert plain_state(("x", 0, False, False)) == {
        "id": "x",
        "reasoning_tokens": 0,
        "in_reasoning": False,
        "is_finished": False,
    }
    real = reference.Assembler.state
    # Each value off its type in turn, as `push_steps` (which checks them itself) meets it.
    for index, odd in [(0, _IdKind.A), (1, True), (1, 2**5000), (1, 1.0), (2, 1), (3, 0)]:

        def state(a: Any, index: int = index, odd: Any = odd) -> tuple[Any, ...]:
            values = list(real(a))
            values[index] = odd
            return tuple(values)

        monkeypatch.setitem(REFERENCE_STATE, reference.Assembler, state)
        driver = InProcessDriver(reference.Assembler)
        driver.start_case()
        steps: list[Any] = []
        driver.push_steps(['{"id":"x","choices":[{"delta":{"content":"a"}}]}'], [1], steps)
        # The readers', not the odd value.
        assert steps[0]["state"] == {
            "id": "x",
            "reasoning_tokens": 0,
            "in_reasoning": False,
            "is_finished": False,
        }, (index, odd)
        assert type(steps[0]["state"]["reasoning_tokens"]) is int
        assert not driver.own_steps


def test_pushed_in_one_call_the_steps_are_those_of_one_push_a_call(suite: Suite) -> None:
    """`InProcessDriver.push_steps` (the reference's state read in one call, an unchanged state
    shared with the step before) makes the steps `push_step` makes, payload by payload."""
    from harness.drive.inprocess import InProcessDriver, push_step
    from harness.suite.recording import iter_payloads

    shared = 0
    for case in suite.cases():
        payloads = list(iter_payloads(case.recording))
        driver = InProcessDriver(reference.Assembler)
        driver.start_case()
        batch: list[Any] = []
        driver.push_steps([p.data for p in payloads], [p.line for p in payloads], batch)
        batch[-1].pop("said", None)
        assembler = reference.Assembler()
        single = []
        for payload in payloads[: len(batch)]:
            single.append(push_step(assembler, payload.data, payload.line))
        assert msgspec.msgpack.encode(batch) == msgspec.msgpack.encode(single), case.case_id
        states = [step["state"] for step in batch if "state" in step]
        shared += sum(a is b for a, b in itertools.pairwise(states))
    assert shared > 100


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
