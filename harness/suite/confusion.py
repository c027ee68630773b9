"""The type-confusion matrix: every field the rules read, and every JSON value of another type that
a lax decoder is known to coerce into it.

A typed decoder rarely refuses a value of the wrong type outright: Jackson coerces scalars to text
and numbers, reads a one-element array as its element and an empty string as a null object; serde
reads a struct from an array of its fields and an enum from a one-key map; Go's `json.Unmarshal`
skips a mismatched field, keeps its zero value and reports the error after decoding the rest;
Python's `bool` is an `int` and `x or {}` reads every falsy value as absent; JavaScript's `x || {}`,
`String([x])` and `Number([x])` unwrap and coerce; PHP decodes `{}` and `[]` alike. The rules read
each of these values as a protocol error (R6; R8 for the error object), so a client that coerces
one reads a payload the suite expects it to refuse.

`READ_FIELDS` is every field the rules read, by where it stands, with its JSON kind and two valid
values; `COERCIONS` is every coerced value, each with the decoder idioms it stands for; and
`confused(field)` gives the field's wrong values as JSON text, leaving out those that are valid
there (`0` in an integer field) or implementation-defined (`1.0` in one: I1). The shipped corpus
has one case per field and value (`recordings/synthetic/type_confusion/`, written by
`tests/tools/grow_confusion.py`); the stream model can draw from the same matrix.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.suite.read_fields import KINDS, READ_FIELDS, SCALARS, ReadField, field

__all__ = [
    "COERCIONS",
    "KINDS",
    "READ_FIELDS",
    "SAMPLE",
    "Coercion",
    "ReadField",
    "confused",
    "field",
]


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Coercion:
    """One wrong value a lax decoder coerces: its name in case names, what it is, the idioms that
    read it (by the field's kind, `*` for any), and how it is made for a field (its JSON text, or
    None where it is valid or implementation-defined there)."""

    name: str
    about: str | dict[str, str]
    idioms: dict[str, str]
    make: Callable[[ReadField], str | None]

    def idiom(self, kind: str) -> str:
        """The decoder idioms that coerce this value into a field of `kind`."""
        return self.idioms.get(kind) or self.idioms["*"]

    def what(self, read: ReadField) -> str:
        """What the value is, for `read` (in a few words)."""
        if isinstance(self.about, str):
            return self.about
        return self.about.get(read.path) or self.about.get(read.kind) or self.about["*"]


def _unless(*kinds: str, text: str) -> Callable[[ReadField], str | None]:
    """The same JSON text for every field but those of `kinds`, where it is valid."""
    return lambda f: None if f.kind in kinds else text


def _only(*kinds: str, text: str) -> Callable[[ReadField], str | None]:
    return lambda f: text if f.kind in kinds else None


def _one_key_map(f: ReadField) -> str | None:
    if f.kind not in SCALARS:
        return None
    return _text({str(f.valid): None})


def _wrapped(f: ReadField) -> str | None:
    """The right value inside an object: a content part for the texts, `{name: value}` for the
    other scalars, the element itself for an array."""
    if f.kind == "array":
        return _text(f.valid[0])
    if f.kind == "object":
        return None
    if f.path in ("delta.content", "delta.reasoning_content"):
        return _text({"type": "text", "text": f.valid})
    return _text({f.name: f.valid})


def _struct_as_array(f: ReadField) -> str | None:
    if f.kind != "object":
        return None
    return _text(list(f.valid.values()))


def _json_text(f: ReadField) -> str | None:
    if f.kind not in ("object", "array"):
        return None
    return _text(_text(f.valid))


def _index_keyed(f: ReadField) -> str | None:
    if f.kind != "array":
        return None
    return _text({"0": f.valid[0]})


_FALSY_CONTAINER = (
    "JavaScript's `x || {}` and Python's `x or {}` read a falsy value as absent (no delta, no "
    "tool calls, no error), and Go's json.Unmarshal skips a mismatched field, keeps its zero "
    "value and reports the mismatch only after decoding the rest"
)
_NUMBER_FROM_SCALAR = (
    "Python's bool is an int (`isinstance(True, int)`, pydantic's lax mode), and JavaScript's "
    "`Number(x)` and `+x` and PHP's (int) cast convert a boolean"
)
_TEXT_FROM_SCALAR = (
    "Jackson's scalar coercion and pydantic v1 read a number or a boolean into a String field as "
    "its text, and JavaScript's `String(x)` and template strings write it out"
)

#: Every coerced value, in the order cases are named and listed.
COERCIONS: tuple[Coercion, ...] = (
    Coercion(
        "false",
        "false",
        {
            "string": _TEXT_FROM_SCALAR + '; `x || ""` and `x or ""` read it as absent',
            "enum": "`x || null` and `x or None` read it as no finish reason, and a lenient enum "
            "(Jackson's READ_UNKNOWN_ENUM_VALUES_AS_NULL) reads its text, an unknown constant, "
            "as null",
            "integer": _NUMBER_FROM_SCALAR + ": false is 0",
            "number": _NUMBER_FROM_SCALAR + ": false is 0",
            "*": _FALSY_CONTAINER,
        },
        _unless(text="false"),
    ),
    Coercion(
        "true",
        "true",
        {
            "string": _TEXT_FROM_SCALAR,
            "enum": "a decoder coercing scalars to text gets the unknown constant `true`, which a "
            "lenient enum reads as null or its default",
            "integer": _NUMBER_FROM_SCALAR + ": true is 1",
            "number": _NUMBER_FROM_SCALAR + ": true is 1",
            "*": "`if (x)` and `if x:` pass for true, and a struct decoder that skips a mismatched "
            "field (Go's json.Unmarshal, serde's `#[serde(default)]` with a lenient "
            "deserialize_with) leaves the field empty",
        },
        _unless(text="true"),
    ),
    Coercion(
        "zero",
        "0",
        {
            "string": _TEXT_FROM_SCALAR + ": 0 becomes the text 0",
            "enum": "Jackson reads a number into an enum as its ordinal (FAIL_ON_NUMBERS_FOR_ENUMS "
            "is off by default): 0 is the first constant, stop",
            "*": _FALSY_CONTAINER + ": 0 is falsy",
        },
        _unless("integer", "number", text="0"),
    ),
    Coercion(
        "one",
        "1",
        {
            "string": _TEXT_FROM_SCALAR + ": 1 becomes the text 1",
            "enum": "Jackson reads a number into an enum as its ordinal: 1 is the second constant",
            "*": "1 is truthy (`if (x)`), and a decoder that skips a mismatched field keeps the "
            "field's zero value",
        },
        _unless("integer", "number", text="1"),
    ),
    Coercion(
        "minus_zero",
        "-0",
        {
            "string": "JavaScript's String(-0) is 0, Jackson's coercion writes -0 and Python's "
            "str(-0.0) -0.0: a number read into a text field as any of them",
            "*": "Jackson reads a number into an enum as its ordinal: -0 is 0, the first constant",
        },
        _only("string", "enum", text="-0"),
    ),
    Coercion(
        "one_point_zero",
        "1.0",
        {
            "string": "JavaScript's String(1.0) is 1, Jackson's coercion writes 1.0: a number read "
            "into a text field",
            "*": "Jackson's ACCEPT_FLOAT_AS_INT and ordinal enums read 1.0 as the constant at 1",
        },
        _only("string", "enum", text="1.0"),
    ),
    Coercion(
        "empty_string",
        '""',
        {
            "enum": 'Jackson\'s ACCEPT_EMPTY_STRING_AS_NULL_OBJECT and `x || null` read "" as no '
            "finish reason",
            "integer": 'Jackson reads "" as null or 0 (ACCEPT_EMPTY_STRING_AS_NULL_OBJECT, '
            'coercion of empty strings), JavaScript\'s Number("") is 0, PHP\'s (int)"" is 0',
            "number": 'Jackson reads "" as null or 0, JavaScript\'s Number("") is 0',
            "*": 'Jackson\'s ACCEPT_EMPTY_STRING_AS_NULL_OBJECT reads "" as a null object; '
            + _FALSY_CONTAINER,
        },
        _unless("string", text='""'),
    ),
    Coercion(
        "blank_string",
        '" "',
        {
            "enum": "a lenient enum trims the text and reads what is left (nothing) as null",
            "integer": "JavaScript's Number(\" \") is 0, and Jackson's coercion config "
            "(setAcceptBlankAsEmpty) reads a blank string as empty, then null or 0",
            "number": "JavaScript's Number(\" \") is 0, and Jackson's setAcceptBlankAsEmpty reads "
            "it as empty, then null or 0",
            "*": "Jackson's coercion config (setAcceptBlankAsEmpty, then empty as null) reads a "
            "blank string as a null object",
        },
        _unless("string", text='" "'),
    ),
    Coercion(
        "string_zero",
        '"0"',
        {
            "enum": 'Jackson reads a string of digits into an enum as an ordinal: "0" is stop',
            "integer": "numbers written as strings: Jackson's coercion, pydantic's lax mode, Go's "
            '`,string` tag option, serde_with\'s DisplayFromStr and PHP read "0" as 0',
            "number": "numbers written as strings: Jackson, pydantic's lax mode, Go's `,string` "
            'option and PHP read "0" as 0',
            "*": 'PHP reads "0" as false (an absent object), and a decoder that skips a '
            "mismatched field keeps its zero value",
        },
        _unless("string", text='"0"'),
    ),
    Coercion(
        "string_one",
        '"1"',
        {
            "enum": 'Jackson reads a string of digits into an enum as an ordinal: "1" is the '
            "second constant",
            "integer": "numbers written as strings: Jackson's coercion, pydantic's lax mode, Go's "
            '`,string` option, serde_with\'s DisplayFromStr and PHP read "1" as 1',
            "number": "numbers written as strings: Jackson, pydantic's lax mode, Go's `,string` "
            'option and PHP read "1" as 1',
            "*": '"1" is truthy, and a decoder that skips a mismatched field keeps its zero value',
        },
        _unless("string", text='"1"'),
    ),
    Coercion(
        "padded_enum",
        "a valid finish reason padded with white space",
        {
            "*": "a decoder that trims before matching (Python's `.strip()`, Go's "
            "strings.TrimSpace, a lenient enum converter) reads it as the valid value",
        },
        _only("enum", text='" stop"'),
    ),
    Coercion(
        "nan_text",
        "NaN written as a string",
        {
            "*": "number fields read from strings take the names of the non-finite values too: "
            "Swift's nonConformingFloatDecodingStrategy .convertFromString, pydantic's "
            "allow_inf_nan, C#'s AllowNamedFloatingPointLiterals, Python's float(x)",
        },
        _only("number", text='"NaN"'),
    ),
    Coercion(
        "enum_text",
        "a valid enum text where it does not belong",
        {
            "enum": 'the tool call\'s own enum value "function" (tool_calls[].type): a decoder '
            "that shares one string enum between fields, or maps unknown values to a default "
            "(Jackson @JsonEnumDefaultValue, Swift's `init(rawValue:) ?? .stop`), reads it",
            "integer": 'PHP\'s (int)"stop" is 0, JavaScript\'s parseInt("stop") || 0 is 0, and Go '
            "code that ignores strconv.Atoi's error keeps 0",
            "*": 'PHP\'s (float)"stop" is 0, and `parseFloat(x) || 0` is 0',
        },
        lambda f: {"enum": '"function"', "integer": '"stop"', "number": '"stop"'}.get(f.kind),
    ),
    Coercion(
        "empty_array",
        "[]",
        {
            "string": 'JavaScript\'s String([]) is "" and `[] + ""` too: a text field read as '
            "nothing",
            "enum": "an empty array read as no value (JavaScript's `x[0]`, Jackson's "
            "UNWRAP_SINGLE_VALUE_ARRAYS on an empty array): no finish reason",
            "integer": "JavaScript's Number([]) and `+[]` are 0",
            "number": "JavaScript's Number([]) and `+[]` are 0",
            "*": "PHP's json_decode(..., true) makes [] and {} the same empty array, so an empty "
            "array reads as an empty object",
        },
        _unless("array", text="[]"),
    ),
    Coercion(
        "one_element_array",
        "a one-element array of a valid value",
        {
            "string": 'Jackson\'s UNWRAP_SINGLE_VALUE_ARRAYS reads ["Hi"] as "Hi", and so do '
            "JavaScript's String([x]) and template strings",
            "integer": "Jackson's UNWRAP_SINGLE_VALUE_ARRAYS reads [0] as 0, and JavaScript's "
            "Number([0]) is 0",
            "number": "Jackson's UNWRAP_SINGLE_VALUE_ARRAYS reads [x] as x, and JavaScript's "
            "Number([x]) is x",
            "array": "a decoder that flattens nested lists (PHP's array_merge, lodash's flatten) "
            "reads [[x]] as [x]",
            "*": "Jackson's UNWRAP_SINGLE_VALUE_ARRAYS reads [x] as x",
        },
        lambda f: _text([f.valid]),
    ),
    Coercion(
        "two_element_array",
        "a two-element array of valid values",
        {
            "string": 'JavaScript\'s String(["a", "b"]) is "a,b", Python\'s "".join(x) joins '
            "them, and an unwrapping decoder takes the first or the last",
            "array": "a decoder that flattens nested lists reads [[x], [y]] as [x, y]",
            "*": "an unwrapping decoder takes the first or the last element (Jackson's "
            "UNWRAP_SINGLE_VALUE_ARRAYS takes only one, a hand-written `x[0]` the first)",
        },
        lambda f: _text([f.valid, f.other]),
    ),
    Coercion(
        "empty_object",
        "{}",
        {
            "array": "PHP's json_decode(..., true) makes {} and [] the same empty array: no "
            "elements",
            "*": "JavaScript's String({}) is [object Object] and Number({}) NaN; a decoder that "
            "skips a mismatched field keeps the zero value",
        },
        _unless("object", text="{}"),
    ),
    Coercion(
        "one_key_map",
        "a one-key map {VALUE: null}",
        {
            "enum": 'serde reads an externally tagged enum from a one-key map: {"stop": null} is '
            "the unit variant stop",
            "*": "a map read as its first key (serde's externally tagged enums, PHP's key($x), "
            "Python's next(iter(x)))",
        },
        _one_key_map,
    ),
    Coercion(
        "wrapped",
        {
            "delta.content": "a content part holding the text",
            "delta.reasoning_content": "a content part holding the text",
            "array": "its one element, not in an array",
            "*": "an object holding a valid value under the field's own name",
        },
        {
            "string": "a text read out of an object holding it: content parts "
            '({"type": "text", "text": ...}, joined by clients that accept OpenAI\'s message '
            "parts), or `{name: value}` unwrapped (Jackson's UNWRAP_ROOT_VALUE, a Swift "
            "nestedContainer)",
            "array": "Jackson's ACCEPT_SINGLE_VALUE_AS_ARRAY (and `Array.isArray(x) ? x : [x]`) "
            "reads one element where an array belongs as a one-element array",
            "*": "a value read out of an object named like its field (Jackson's "
            "UNWRAP_ROOT_VALUE, `x.value ?? x`)",
        },
        _wrapped,
    ),
    Coercion(
        "struct_as_array",
        "the object's member values as an array, in order",
        {
            "*": "serde's derived Deserialize reads a struct from an array of its fields in "
            "order (visit_seq), and Jackson's @JsonFormat(shape = ARRAY) does too",
        },
        _struct_as_array,
    ),
    Coercion(
        "json_text",
        "the right value written as a JSON string",
        {
            "*": "a decoder that parses a string holding JSON (pydantic's Json[...], "
            "`typeof x === 'string' ? JSON.parse(x) : x`, as clients do for tool arguments) "
            "reads the object out of its text",
        },
        _json_text,
    ),
    Coercion(
        "index_keyed_object",
        'an object keyed "0" holding the element',
        {
            "*": 'PHP decodes {"0": x} and [x] to the same array, and JavaScript\'s '
            "Object.values(x) and `for...in` walk an object like an array",
        },
        _index_keyed,
    ),
    Coercion(
        "null",
        "null where the field is required",
        {
            "integer": "Go's non-pointer int and Java's primitive int read null as 0, and "
            "serde's `#[serde(default)]` takes the default: a required index read as 0",
            "*": "Go decodes a null element of a slice of structs as a zero struct (an empty "
            "choice or call), and a list of nullable elements skipped by `filter(Boolean)` "
            "loses it silently",
        },
        lambda f: "null" if f.required else None,
    ),
)


#: The values a sampled field takes: one of each wrong JSON type (a boolean, a string, an array,
#: an object).
SAMPLE = ("false", "string_one", "one_element_array", "empty_object")


def confused(read: ReadField) -> list[tuple[Coercion, str]]:
    """The wrong values of `read`, as (coercion, JSON text), in `COERCIONS`' order.

    A decoder's coercions are its configuration (Jackson's mapper, serde's derive, pydantic's
    mode), the same for every field of one type in one object; so where an object has many
    fields of one kind (the eleven timings, the four progress counts), one or two take every
    value and the others are `sampled`: one wrong value of each JSON type, which still catches a
    field typed apart from its siblings.
    """
    found = []
    for coercion in COERCIONS:
        if read.sampled and coercion.name not in SAMPLE:
            continue
        text = coercion.make(read)
        if text is not None:
            found.append((coercion, text))
    return found
