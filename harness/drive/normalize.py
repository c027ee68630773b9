"""Turning what a target returns into the golden schema's plain JSON values (contract section 2).

A target may return the reference's own types, dataclasses, attrs classes, pydantic models, msgspec
Structs, named tuples or mappings; an event's type comes from a `type` field or its class name; an
error is any exception with a `kind` (a string, or an Enum whose value or name is a kind). What
cannot be read this way raises `NormalizeError`, which the runner reports as a crash.
"""

from __future__ import annotations

import enum
import reprlib
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

import msgspec

import reference

ERROR_KINDS = ("protocol", "stream_closed_early", "server")
#: The eleven timings fields of R9, in the golden schema's order (the reference's field order).
TIMINGS_FIELDS: tuple[str, ...] = reference.Timings.__struct_fields__
EVENT_FIELDS = {
    "progress": ("total", "cache", "processed", "time_ms"),
    "reasoning": ("text",),
    "content": ("text",),
    "tool_call_delta": ("index", "id", "name", "arguments"),
}
_CLASS_TYPES = {
    "Progress": "progress",
    "Reasoning": "reasoning",
    "Content": "content",
    "ToolCallDelta": "tool_call_delta",
}
STATE_FIELDS = ("id", "reasoning_tokens", "in_reasoning", "is_finished")
#: Scalars that need no conversion (the fast path of reading the state).
_PLAIN = frozenset({str, int, float, bool, type(None)})
#: The same but integers, which must still be checked for length (the fast path of the rest).
_PLAIN_BUT_INT = frozenset({str, float, bool, type(None)})
_MISSING = object()
#: Integers longer than this are a target's mistake conform does not compare (nor print: Python
#: refuses to turn an integer of more than 4,300 digits into text).
MAX_INT_BITS = 4096
_LOG10_2 = 0.30103


class _Repr(reprlib.Repr):
    """reprlib's, but a repr that raises is named without a memory address (reports are
    compared across runs)."""

    def repr_instance(self, x: Any, level: int) -> str:
        try:
            text = repr(x)
        except Exception as exc:  # a target's __repr__ that raises or recurses
            return f"<a {type(x).__name__} whose repr raised {type(exc).__name__}>"
        if not isinstance(text, str):
            return f"<a {type(x).__name__}>"
        return text if len(text) <= self.maxother else text[: self.maxother - 1] + "…"


_REPR = _Repr()
_REPR.maxlevel = 4
_REPR.maxstring = _REPR.maxother = 120


def described(value: Any) -> str:
    """A short repr of a target's value, whatever it is: deep lists are cut at a few levels, a
    repr that raises or recurses is named instead of shown (never raises)."""
    try:
        return _REPR.repr(value)
    except Exception as exc:
        return f"<a {type(value).__name__} whose repr raised {type(exc).__name__}>"


def text_of(exc: BaseException) -> str:
    """`str(exc)`, or a note when the target's `__str__` raises or recurses (never raises)."""
    try:
        text = str(exc)
    except Exception as inner:
        return f"<{type(exc).__name__}.__str__ raised {type(inner).__name__}>"
    return text if isinstance(text, str) else described(text)


def _too_long(value: int, where: str) -> NormalizeError:
    digits = int(value.bit_length() * _LOG10_2) + 1
    return NormalizeError(
        f"{where} is an integer of about {digits:,} digits, beyond what any field can hold"
    )


class NormalizeError(Exception):
    """A target returned something the golden schema cannot hold."""


#: Whether a type is a Mapping, by type: the abstract-class check is slow, and a completion
#: reads a dozen fields of the same few types.
_IS_MAPPING: dict[type, bool] = {}


def _is_mapping(obj: Any) -> bool:
    kind = type(obj)
    mapping = _IS_MAPPING.get(kind)
    if mapping is None:
        mapping = _IS_MAPPING[kind] = isinstance(obj, Mapping)
    return mapping


def _get(obj: Any, name: str) -> Any:
    if _is_mapping(obj):
        return obj.get(name, _MISSING)
    return getattr(obj, name, _MISSING)


def _scalar(value: Any, where: str) -> Any:
    if type(value) in _PLAIN_BUT_INT:
        return value
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise _too_long(value, where)
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise NormalizeError(
        f"{where} is a {type(value).__name__}, not a JSON scalar: {described(value)}"
    )


def _field(obj: Any, name: str, where: str) -> Any:
    value = _get(obj, name)
    if value is _MISSING:
        raise NormalizeError(f"{where} has no field '{name}': {described(obj)}")
    return _scalar(value, f"{where}.{name}")


def _event_type(event: Any) -> str:
    declared: Any = _get(event, "type")
    if declared is not _MISSING and not callable(declared):
        if isinstance(declared, enum.Enum):
            declared = declared.value if isinstance(declared.value, str) else declared.name
        if isinstance(declared, str):
            name = _CLASS_TYPES.get(declared, declared.lower())
            if name in EVENT_FIELDS:
                return name
        raise NormalizeError(f"event has an unknown type {described(declared)}: {described(event)}")
    by_class = _CLASS_TYPES.get(type(event).__name__)
    if by_class is None:
        raise NormalizeError(
            f"cannot tell the type of event {described(event)}: give it a 'type' field or name "
            "its class Progress, Reasoning, Content or ToolCallDelta"
        )
    return by_class


#: The reference's own event types, each with its reader: read without the generic machinery
#: (they are most of every run).
REFERENCE_EVENTS: dict[type, Any] = {
    reference.Content: lambda e: {"type": "content", "text": e.text},
    reference.Reasoning: lambda e: {"type": "reasoning", "text": e.text},
    reference.ToolCallDelta: lambda e: {
        "type": "tool_call_delta",
        "index": e.index,
        "id": e.id,
        "name": e.name,
        "arguments": e.arguments,
    },
    reference.Progress: lambda e: {
        "type": "progress",
        "total": e.total,
        "cache": e.cache,
        "processed": e.processed,
        "time_ms": e.time_ms,
    },
}


def normalize_event(event: Any) -> dict[str, Any]:
    """One event as the golden schema's object."""
    fast = REFERENCE_EVENTS.get(type(event))
    if fast is not None:
        result: dict[str, Any] = fast(event)
        # The reference's types made by other code may hold anything (a Struct's constructor
        # checks no types): one that holds more than JSON scalars is read as any event is.
        if all(type(value) in _PLAIN for value in result.values()):
            return result
    kind = _event_type(event)
    normalized: dict[str, Any] = {"type": kind}
    for name in EVENT_FIELDS[kind]:
        normalized[name] = _field(event, name, kind)
    return normalized


def _items(value: Any, what: str) -> Any:
    """`value` when it is a sequence of items (not text or a mapping); NormalizeError otherwise."""
    if type(value) is list:  # the usual answer, spared the abstract-class checks below
        return value
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise NormalizeError(f"{what} must be a list, not {type(value).__name__}")
    return value


def normalize_events(events: Any) -> list[dict[str, Any]]:
    """What `push` returned, as a list of event objects."""
    return [normalize_event(event) for event in _items(events, "what push returns")]


def _state_value(value: Any, name: str) -> Any:
    """A state reader's value that is not plainly a scalar: a method to call, or one to check."""
    if value is _MISSING:
        raise NormalizeError(f"the assembler has no '{name}' reader")
    if callable(value):
        value = value()
    plain = type(value) in _PLAIN and not (type(value) is int and value.bit_length() > MAX_INT_BITS)
    return value if plain else _scalar(value, f"state.{name}")


def read_state(assembler: Any) -> dict[str, Any]:
    """The four state readers, as properties or zero-argument methods."""
    # Written out, one reader after another (each read, and called, in STATE_FIELDS order): this
    # runs on every push, and a property's plain value (never callable) needs no further check.
    plain = _PLAIN_BUT_INT
    read_id = getattr(assembler, "id", _MISSING)
    if type(read_id) not in plain:
        read_id = _state_value(read_id, "id")
    tokens = getattr(assembler, "reasoning_tokens", _MISSING)
    if type(tokens) is not int or tokens.bit_length() > MAX_INT_BITS:
        tokens = _state_value(tokens, "reasoning_tokens")
    in_reasoning = getattr(assembler, "in_reasoning", _MISSING)
    if type(in_reasoning) not in plain:
        in_reasoning = _state_value(in_reasoning, "in_reasoning")
    finished = getattr(assembler, "is_finished", _MISSING)
    if type(finished) not in plain:
        finished = _state_value(finished, "is_finished")
    return {
        "id": read_id,
        "reasoning_tokens": tokens,
        "in_reasoning": in_reasoning,
        "is_finished": finished,
    }


def _scalars(obj: Any, names: tuple[str, ...], where: str, *, optional: bool = False) -> list[Any]:
    """The fields `names` of `obj`, read in order, as JSON scalars (as `_field` reads one).

    With `optional`, a field the object lacks is null instead of an error: timings, as
    llama-server leaves out the draft fields unless speculative decoding is on (a value that
    should be there still shows as a mismatch: expected 5, got null).
    """
    get = obj.get if _is_mapping(obj) else partial(getattr, obj)
    values = []
    for name in names:
        value = get(name, _MISSING)
        if type(value) not in _PLAIN_BUT_INT:  # the usual answer needs no further check
            if value is _MISSING:
                if not optional:
                    raise NormalizeError(f"{where} has no field '{name}': {described(obj)}")
                value = None
            else:
                value = _scalar(value, f"{where}.{name}")
        values.append(value)
    return values


_TEXTS = ("id", "content", "reasoning_content")
_CALL_FIELDS = ("id", "name", "arguments")
_COUNTS = ("reasoning_tokens", "thinking_capped")


def normalize_completion(completion: Any) -> dict[str, Any]:
    """What `finish` returned, as the golden schema's completion object."""
    if type(completion) is reference.Completion:
        found = _reference_completion(completion)
        if found is not None:
            return found
    return _read_completion(completion)


def _reference_completion(completion: Any) -> dict[str, Any] | None:
    """The reference's own completion, in one C call: its fields are the golden object's, in
    its order (the tuple of tool calls made a list, the finish reason its value); None when a
    field is not of its plain type (a Completion made by other code may hold anything, a Struct's
    constructor checking no types, and msgspec would write a Decimal or bytes as text), a number
    is one `_read_completion` refuses (an integer too long), or msgspec cannot convert it."""
    if not _plain_completion(completion):
        return None
    try:
        found: dict[str, Any] = msgspec.to_builtins(completion)
    except (TypeError, ValueError, OverflowError):
        return None
    found["tool_calls"] = list(found["tool_calls"])  # to_builtins keeps the tuple
    timings = found["timings"]
    for value in (found["reasoning_tokens"], *(timings.values() if timings else ())):
        if type(value) is int and value.bit_length() > MAX_INT_BITS:
            return None
    return found


_TEXT_OR_NONE = frozenset({str, type(None)})
_NUMBER_OR_NONE = frozenset({int, float, type(None)})


def _plain_completion(completion: Any) -> bool:
    """True when each field of a `reference.Completion` is of the type the reference gives it."""
    c = completion
    if not (
        type(c.id) is str
        and type(c.content) in _TEXT_OR_NONE
        and type(c.reasoning_content) in _TEXT_OR_NONE
        and isinstance(c.finish_reason, reference.FinishReason)
        and type(c.reasoning_tokens) is int
        and type(c.thinking_capped) is bool
        and type(c.tool_calls) is tuple
    ):
        return False
    for call in c.tool_calls:
        if type(call) is not reference.ToolCall or not (
            type(call.id) is str and type(call.name) is str and type(call.arguments) is str
        ):
            return False
    timings = c.timings
    if timings is None:
        return True
    # Its fields are TIMINGS_FIELDS: their types in C calls (a generator cost more than the rest).
    return (
        type(timings) is reference.Timings
        and set(map(type, msgspec.structs.astuple(timings))) <= _NUMBER_OR_NONE
    )


def _read_completion(completion: Any) -> dict[str, Any]:
    """`normalize_completion` of any completion, field by field."""
    where = "completion"
    tool_calls = _get(completion, "tool_calls")
    if tool_calls is _MISSING or tool_calls is None:
        raise NormalizeError(f"{where} has no field 'tool_calls': {described(completion)}")
    timings = _get(completion, "timings")
    if timings is _MISSING:
        raise NormalizeError(f"{where} has no field 'timings': {described(completion)}")
    # Read in the order of the object's members, so the first problem is the one reported.
    identity, content, reasoning = _scalars(completion, _TEXTS, where)
    calls = []
    for i, call in enumerate(_items(tool_calls, f"{where}.tool_calls")):
        call_id, name, arguments = _scalars(call, _CALL_FIELDS, f"{where}.tool_calls[{i}]")
        calls.append({"id": call_id, "name": name, "arguments": arguments})
    (finish_reason,) = _scalars(completion, ("finish_reason",), where)
    read = None
    if timings is not None:
        values = _scalars(timings, TIMINGS_FIELDS, f"{where}.timings", optional=True)
        read = dict(zip(TIMINGS_FIELDS, values, strict=True))
    reasoning_tokens, capped = _scalars(completion, _COUNTS, where)
    return {
        "id": identity,
        "content": content,
        "reasoning_content": reasoning,
        "tool_calls": calls,
        "finish_reason": finish_reason,
        "timings": read,
        "reasoning_tokens": reasoning_tokens,
        "thinking_capped": capped,
    }


def error_kind(exc: BaseException) -> str | None:
    """The contract kind of an exception, or None when it is not a contract error."""
    kind = getattr(exc, "kind", None)
    if isinstance(kind, enum.Enum):
        if isinstance(kind.value, str) and kind.value in ERROR_KINDS:
            return kind.value
        kind = kind.name.lower()
    if isinstance(kind, str) and kind in ERROR_KINDS:
        return kind
    return None


#: The key of a step that carries the target's own words for its error (`protocol: nesting too
#: deep`): shown in reports, never compared (only `server` messages are part of the contract) and
#: never written to golden files.
SAID = "said"


def error_said(exc: BaseException, kind: str) -> str:
    """`kind: message` for a contract error, the message as the exception gives it."""
    message = getattr(exc, "message", None)
    return f"{kind}: {message if isinstance(message, str) else text_of(exc)}"


def normalize_error(exc: BaseException) -> dict[str, Any] | None:
    """A contract error as the golden schema's error object, or None for any other exception."""
    kind = error_kind(exc)
    if kind is None:
        return None
    if kind != "server":
        return {"kind": kind}
    message = getattr(exc, "message", None)
    return {"kind": kind, "message": message if isinstance(message, str) else text_of(exc)}
