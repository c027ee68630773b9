"""The shape of a payload: docs/spec.md section 3, its table checked level by level.

`read_chunk` turns one payload's text into a `Chunk` holding the fields the rules read, each of
its type, or raises `InferError(protocol)` (R6). The table, in the spec's order:

| where | field | type |
|---|---|---|
| top | `id` | string |
| top | `choices` | array of objects |
| top | `timings` | object, see R9 (numbers) |
| top | `prompt_progress` | object: `total`, `cache`, `processed`, `time_ms` (integers) |
| top | `error` | object: `message` (string) |
| choice | `delta` | object |
| choice | `finish_reason` | `"stop"`, `"tool_calls"` or `"length"` |
| choice | `index` | not read, but whether it is 0 (I7) |
| delta | `content`, `reasoning_content` | string |
| delta | `tool_calls` | array of objects |
| tool call | `index` | integer, required, not negative |
| tool call | `id` | string |
| tool call | `function` | object: `name`, `arguments` (strings) |

Every other member, at every level, is ignored whatever its value (R7), except that an OpenAI
member of a type OpenAI's schema does not allow, or one it requires left out, may be refused
(I5). `null` means the same as an absent member, and never stands for an array element. One
function per level of the table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from reference.choices import Choices
from reference.json_text import Number, protocol, read_json
from reference.openai import is_openai_integer, missing_member, wrong_type
from reference.types import MAX_SAFE_INTEGER, FinishReason, Progress, Timings


@dataclass(frozen=True, slots=True)
class Function:
    """A tool call's `function`."""

    name: str | None
    arguments: str | None


@dataclass(frozen=True, slots=True)
class ToolCallPiece:
    """One entry of a delta's `tool_calls`."""

    index: int
    id: str | None
    function: Function | None


@dataclass(frozen=True, slots=True)
class Delta:
    """A choice's `delta`."""

    content: str | None
    reasoning_content: str | None
    tool_calls: list[ToolCallPiece]


@dataclass(frozen=True, slots=True)
class Choice:
    """One entry of `choices`."""

    delta: Delta | None
    finish_reason: FinishReason | None
    index_is_zero: bool  # I7


@dataclass(frozen=True, slots=True)
class ServerError:
    """The top level's `error` object (R8)."""

    message: str | None


@dataclass(frozen=True, slots=True)
class Chunk:
    """One payload, as the rules read it."""

    id: str | None
    choices: list[Choice]
    timings: Timings | None
    prompt_progress: Progress | None
    error: ServerError | None


def read_chunk(data: object, choices: Choices) -> Chunk:
    """One payload's text as a `Chunk`: a JSON object of the shape of the table, or protocol."""
    value = read_json(data, choices)
    if not isinstance(value, dict):
        raise protocol(f"a payload must be a JSON object, not {_json_type(value)}")
    if choices.I5 == "protocol" and (wrong := wrong_type(value)) is not None:
        raise protocol(f"{wrong} has a type OpenAI's chunk schema does not allow (I5)")
    if choices.I5 == "protocol" and (missing := missing_member(value)) is not None:
        raise protocol(f"{missing} is required by OpenAI's chunk schema (I5)")
    return top_of(value, choices)


# --- one function per level of the table ----------------------------------------------------------


def top_of(top: dict[str, Any], choices: Choices) -> Chunk:
    """The top level: `id`, `choices`, `timings`, `prompt_progress`, `error`."""
    return Chunk(
        id=optional(top, "id", str),
        choices=[
            choice_of(choice, f"choices[{number}]", choices)
            for number, choice in enumerate(objects(top, "choices"))
        ],
        timings=timings_of(optional(top, "timings", dict), choices),
        prompt_progress=progress_of(optional(top, "prompt_progress", dict), choices),
        error=error_of(optional(top, "error", dict)),
    )


def choice_of(choice: dict[str, Any], where: str, choices: Choices) -> Choice:
    """A choice: `delta`, `finish_reason` (one of the three), and whether its `index` is 0 (I7):
    an integer equal to 0, or no index at all (absent, null, or of a type OpenAI's schema does
    not allow, which I5 `ignore` ignores): a chunk's one choice is the completion's."""
    delta = optional(choice, "delta", dict, where)
    reason = optional(choice, "finish_reason", str, where)
    if reason is not None and reason not in _FINISH_REASONS:
        raise protocol(f"{where}.finish_reason {reason!r} is not stop, tool_calls or length")
    index = choice.get("index")
    return Choice(
        delta=None if delta is None else delta_of(delta, f"{where}.delta", choices),
        finish_reason=None if reason is None else FinishReason(reason),
        index_is_zero=not is_openai_integer(index) or Decimal(index.text) == 0,
    )


def delta_of(delta: dict[str, Any], where: str, choices: Choices) -> Delta:
    """A delta: `content` and `reasoning_content` (strings), `tool_calls`."""
    return Delta(
        content=optional(delta, "content", str, where),
        reasoning_content=optional(delta, "reasoning_content", str, where),
        tool_calls=[
            tool_call_of(call, f"{where}.tool_calls[{number}]", choices)
            for number, call in enumerate(objects(delta, "tool_calls", where))
        ],
    )


def tool_call_of(call: dict[str, Any], where: str, choices: Choices) -> ToolCallPiece:
    """A tool call: `index` (required, an integer, not negative), `id`, `function`."""
    if call.get("index") is None:
        raise protocol(f"{where}.index is missing: a tool call's index is required")
    index = read_integer(call["index"], f"{where}.index", choices)
    if index < 0:
        raise protocol(f"{where}.index is negative: {index}")
    function = optional(call, "function", dict, where)
    return ToolCallPiece(
        index=index,
        id=optional(call, "id", str, where),
        function=None if function is None else function_of(function, f"{where}.function"),
    )


def function_of(function: dict[str, Any], where: str) -> Function:
    """A tool call's function: `name` and `arguments` (strings)."""
    return Function(
        name=optional(function, "name", str, where),
        arguments=optional(function, "arguments", str, where),
    )


def timings_of(timings: dict[str, Any] | None, choices: Choices) -> Timings | None:
    """`timings`: llama-server's eleven fields, numbers (R9); other members are ignored."""
    if timings is None:
        return None
    values = {}
    for name in Timings.__struct_fields__:
        value = timings.get(name)
        values[name] = None if value is None else read_number(value, f"timings.{name}", choices)
    return Timings(**values)


def progress_of(progress: dict[str, Any] | None, choices: Choices) -> Progress | None:
    """`prompt_progress`: `total`, `cache`, `processed`, `time_ms`, integers (R9)."""
    if progress is None:
        return None
    values = {}
    for name in Progress.__struct_fields__:
        value = progress.get(name)
        where = f"prompt_progress.{name}"
        values[name] = None if value is None else read_integer(value, where, choices)
    return Progress(**values)


def error_of(error: dict[str, Any] | None) -> ServerError | None:
    """`error`: an object whose `message` is a string (R8)."""
    return None if error is None else ServerError(message=optional(error, "message", str, "error"))


# --- the types of the table -----------------------------------------------------------------------


def optional(level: dict[str, Any], name: str, kind: type, where: str = "") -> Any:
    """The member `name` of `level` (at path `where`) if it is of `kind`; None when absent or
    null; else protocol."""
    value = level.get(name)
    if value is not None and not isinstance(value, kind):
        path = f"{where}.{name}" if where else name
        raise protocol(f"{path} must be {_TYPE_NAMES[kind]}, not {_json_type(value)}")
    return value


def objects(level: dict[str, Any], name: str, where: str = "") -> list[dict[str, Any]]:
    """The member `name` of `level` as an array of objects (none when absent or null)."""
    items = optional(level, name, list, where) or []
    for number, item in enumerate(items):
        if not isinstance(item, dict):
            path = f"{where}.{name}" if where else name
            raise protocol(f"{path}[{number}] must be an object, not {_json_type(item)}")
    return items


def number_value(number: Number, where: str) -> int | float:
    """A number's value: an integer as written, or the nearest double; protocol when that double
    is infinite (`1e400`) or the integer has more digits than Python reads (4300)."""
    if number.is_written_as_integer:
        try:
            return int(number.text)
        except ValueError:
            raise protocol(f"{where} has too many digits") from None
    value = float(number.text)
    if math.isinf(value):
        raise protocol(f"{where} is beyond the range of a double: {number.text}")
    return value


def read_integer(value: Any, where: str, choices: Choices) -> int:
    """An integer field (section 3): a number with an integral value; I1 for one written with a
    fraction or an exponent, I2 for one beyond ±(2^53-1)."""
    if not isinstance(value, Number):
        raise protocol(f"{where} must be an integer, not {_json_type(value)}")
    return integer_of(number_value(value, where), where, choices, written=value.text)


def integer_of(number: int | float, where: str, choices: Choices, written: str = "") -> int:
    """A number read where an integer belongs, as I1 and I2 choose. Under I2 `exact`, the text
    it was `written` as gives the exact integer a double cannot hold (9007199254740993.0)."""
    if isinstance(number, int):
        if abs(number) <= MAX_SAFE_INTEGER or choices.I2 == "exact":
            return number
        raise protocol(f"{where} is beyond ±(2^53-1) (I2): {number}")
    if not number.is_integer():
        raise protocol(f"{where} must be an integer, got {number!r}")
    if choices.I1 == "protocol":
        raise protocol(f"{where} must be written as an integer (I1), got {number!r}")
    if abs(number) <= MAX_SAFE_INTEGER:
        return int(number)
    if choices.I2 == "exact" and written:
        exact = Decimal(written)
        if exact == exact.to_integral_value():
            return int(exact)
    raise protocol(f"{where} is beyond ±(2^53-1) (I2): {number!r}")


def read_number(value: Any, where: str, choices: Choices) -> int | float:
    """A number field (timings): integers kept as integers, fractions as doubles; I2 for an
    integer beyond ±(2^53-1): refused, kept exactly, or its nearest double."""
    if not isinstance(value, Number):
        raise protocol(f"{where} must be a number, not {_json_type(value)}")
    number = number_value(value, where)
    if not isinstance(number, int) or abs(number) <= MAX_SAFE_INTEGER or choices.I2 == "exact":
        return number
    if choices.I2 == "double":
        try:
            return float(number)
        except OverflowError:
            raise protocol(f"{where} is beyond the range of a double") from None
    raise protocol(f"{where} is beyond ±(2^53-1) (I2): {number}")


_FINISH_REASONS = {reason.value for reason in FinishReason}
_TYPE_NAMES: dict[type, str] = {str: "a string", dict: "an object", list: "an array"}


def _json_type(value: Any) -> str:
    """How a JSON value's type is named in a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, Number):
        return "a number"
    return _TYPE_NAMES[type(value)]
