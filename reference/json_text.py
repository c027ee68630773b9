"""A payload's JSON text, read as docs/spec.md section 3 says: the value, or a protocol error.

A payload is one JSON text (RFC 8259): no `NaN` or `Infinity`, no trailing garbage, no comments,
white space around it allowed. Three implementation-defined points are decided here, as the
`Choices` say: nesting deeper than 128 levels (I3), a key twice in one object (I4) and a member
named `__proto__` (I6). Numbers are kept as written (`Number`), since what a number means depends
on the field that holds it (section 3: integers, I1, I2), and a number in a field no rule reads is
never looked at (a huge integer or `1e400` there is fine). A surrogate code point anywhere in the
text is a protocol error (it is not Unicode text), and so is a string holding an unpaired
surrogate escape (`"\\ud800"`) wherever it is read, that is anywhere but in an earlier copy of a
duplicate key, which I4 `last` drops unchecked.

The standard library's `json.loads` does the reading, with a hook for each of these decisions.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from reference.choices import Choices
from reference.types import ErrorKind, InferError

#: Arrays and objects may nest this deep and no deeper (I3).
MAX_DEPTH = 128

#: Under I3 `ignore`, values nested deeper than this are replaced by null before reading. No field
#: the rules read lies this deep (top, choices, choice, delta, tool_calls, tool call, function: 7),
#: so only ignored values, or read ones already of the wrong type, are cut.
KEPT_DEPTH = 9

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
#: One token of JSON text, with the white space before it: a string, a number, a literal, or one
#: of the six structural characters.
_TOKEN = re.compile(
    r'[ \t\n\r]*(?:("(?:[^"\\\x00-\x1f]|\\.)*")'
    r"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)|(true|false|null)|([\[\]{}:,]))"
)


def protocol(message: str) -> InferError:
    """The error of a payload the rules refuse (R6)."""
    return InferError(ErrorKind.PROTOCOL, message)


@dataclass(frozen=True, slots=True)
class Number:
    """A JSON number as the payload wrote it (`-0`, `1.0`, `1e400`, `9007199254740993`)."""

    text: str

    @property
    def is_written_as_integer(self) -> bool:
        """True for a number written without a fraction or an exponent (`1`, not `1.0`)."""
        return not any(mark in self.text for mark in ".eE")


def read_json(data: object, choices: Choices) -> Any:
    """A payload's JSON value (section 3), I3, I4 and I6 decided; protocol if it is not JSON."""
    if not isinstance(data, str):
        raise protocol(f"a payload must be text, not {type(data).__name__}")
    if not encodable(data):
        raise protocol("a payload must be Unicode text: it holds a surrogate code point")
    # Only a text with more than MAX_DEPTH brackets can nest deeper: each level opens one.
    if data.count("[") + data.count("{") > MAX_DEPTH and nesting_depth(data) > MAX_DEPTH:
        if choices.I3 == "protocol":
            raise protocol(f"the payload nests deeper than {MAX_DEPTH} levels (I3)")
        data = without_deep_values(data)
    try:
        value = json.loads(
            data,
            object_pairs_hook=lambda members: object_of(members, choices),
            parse_int=Number,
            parse_float=Number,
            parse_constant=refuse_constant,
        )
    except (ValueError, RecursionError) as exc:
        raise protocol(f"not JSON: {exc}") from None
    check_strings(value)
    return value


def object_of(members: list[tuple[str, Any]], choices: Choices) -> dict[str, Any]:
    """One JSON object from its members in order: I6 for `__proto__`, I4 for a key twice."""
    names = [name for name, _ in members]
    if choices.I6 == "protocol" and "__proto__" in names:
        raise protocol("a member is named __proto__ (I6)")
    if choices.I4 == "protocol" and len(set(names)) < len(names):
        raise protocol("a key stands twice in one object (I4)")
    return dict(members)  # I4 `last`: a later copy replaces an earlier one, unchecked


def refuse_constant(name: str) -> Any:
    """`NaN`, `Infinity` and `-Infinity` are not JSON."""
    raise ValueError(f"{name} is not JSON")


def encodable(text: str) -> bool:
    """True when `text` is Unicode text, which UTF-8 can write: no surrogate code point."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def check_strings(value: Any) -> None:
    """Protocol when a string of `value` (a key or a value, at any depth) holds an unpaired
    surrogate: only an escape such as `"\\ud800"` can put one there."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if not encodable(item):
                raise protocol("a string holds an unpaired surrogate escape")
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def nesting_depth(data: str) -> int:
    """The deepest nesting of arrays and objects in `data`, brackets inside strings not counted."""
    depth = deepest = 0
    for bracket in _NOT_BRACKET.sub("", _STRING.sub("", data)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def without_deep_values(data: str) -> str:
    """`data` with every value nested deeper than `KEPT_DEPTH` replaced by null (I3 `ignore`).

    One token at a time, so any depth is fine. The parts cut are checked here (JSON syntax,
    string escapes, unpaired surrogates), since nothing reads them afterwards.
    """
    out: list[str] = []
    stack: list[str] = []  # the open brackets
    expect = "value"  # value, first (after '['), key_first (after '{'), key, colon, after, done
    cut_at = 0  # the depth where cutting began, 0 when not cutting
    pos = 0
    while True:
        match = _TOKEN.match(data, pos)
        if match is None:
            if expect == "done" and not data[pos:].strip(" \t\n\r"):
                return "".join(out)
            raise protocol("not JSON")
        pos = match.end()
        string, _number, _literal, punct = match.groups()
        token = match.group(0)
        if expect == "done":
            raise protocol("not JSON: text after the value")
        closing = punct in ("]", "}")
        if expect == "colon":
            if punct != ":":
                raise protocol("not JSON: ':' expected")
            expect = "value"
        elif expect in ("key", "key_first") and string is not None:
            expect = "colon"
        elif (expect == "key_first" and punct == "}") or (expect == "first" and punct == "]"):
            stack.pop()
            expect = "after"
        elif expect in ("value", "first") and not closing and punct not in (":", ","):
            if punct is not None:  # '[' or '{'
                stack.append(punct)
                expect = "first" if punct == "[" else "key_first"
                if not cut_at and len(stack) > KEPT_DEPTH:
                    cut_at = len(stack)
                    out.append(token[:-1] + "null")
            else:
                expect = "after"
        elif expect == "after" and stack and punct == ",":
            expect = "value" if stack[-1] == "[" else "key"
        elif expect == "after" and stack and closing and {"[": "]", "{": "}"}[stack[-1]] == punct:
            stack.pop()
        else:
            raise protocol("not JSON")
        if string is not None and cut_at:
            _check_cut_string(string)
        if cut_at:
            if len(stack) < cut_at:
                cut_at = 0
        else:
            out.append(token)
        if expect == "after" and not stack:
            expect = "done"


def _check_cut_string(token: str) -> None:
    """A string of a cut value: protocol for a bad escape or an unpaired surrogate."""
    try:
        text = json.loads(token)
    except ValueError:
        raise protocol("not JSON: a bad string escape") from None
    if not encodable(text):
        raise protocol("a string holds an unpaired surrogate escape")
