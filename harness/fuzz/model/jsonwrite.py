"""Writing a model chunk as JSON text, with the few things `json.dumps` cannot write.

A chunk is built as plain Python values, plus three markers: `Raw` (a value written exactly as
its text: `1.0`, `1e0`, `9007199254740993`, `-0`), `Dup` (a key that may stand twice in one object:
duplicate keys, I4), and nothing else. `dump` writes the value with the spacing and escaping a
`Style` asks for, so that one chunk can be written the ways real servers write it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Raw:
    """A JSON value written exactly as `text` (a number's own spelling, deep nesting)."""

    text: str


class Dup(str):
    """A key that is equal only to itself, so that a dict can hold the same name twice."""

    __slots__ = ()

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other


@dataclass(frozen=True, slots=True)
class Style:
    """How a payload is spelled: `ascii` escapes every non-ASCII character (as Python's and
    llama-server's nlohmann::json with ensure_ascii do), `item` and `key` are the separators."""

    ascii: bool = False
    item: str = ","
    key: str = ":"


COMPACT = Style()


def _string(text: str, style: Style) -> str:
    return json.dumps(text, ensure_ascii=style.ascii)


def dump(value: Any, style: Style = COMPACT) -> str:
    """`value` as JSON text in `style`."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, str):
        return _string(str(value), style)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        members = (f"{_string(str(k), style)}{style.key}{dump(v, style)}" for k, v in value.items())
        return "{" + style.item.join(members) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + style.item.join(dump(v, style) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
