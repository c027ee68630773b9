"""Writing a model chunk as JSON text, with the few things `json.dumps` cannot write.

A chunk is built as plain Python values, plus three markers: `Raw` (a value written exactly as
its text: `1.0`, `1e0`, `9007199254740993`, `-0`), `Dup` (a key that may stand twice in one object:
duplicate keys, I4), and nothing else. `dump` writes the value with the spacing and escaping a
`Style` asks for, so that one chunk can be written the ways real servers write it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from json.encoder import (  # type: ignore[attr-defined]
    c_make_encoder,
    encode_basestring,
    encode_basestring_ascii,
)
from typing import Any

import msgspec


class Raw:
    """A JSON value written exactly as `text` (a number's own spelling, deep nesting). A plain
    class, not a dataclass: msgspec would write a dataclass as an object of its fields."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Raw) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"Raw({self.text!r})"


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


def dump(value: Any, style: Style = COMPACT) -> str:
    """`value` as JSON text in `style`. The compact style, the usual one, is written by msgspec
    (about six times faster than the json module; it spells a float's exponent `1e20`, the json
    module `1e+20`: both JSON); the others by the json module's C encoder, each `Raw` standing in
    as a marked string that its own text then replaces."""
    if style is COMPACT:
        return _compact(value).decode("utf-8")
    raws = _RAWS
    raws.clear()
    text = _encoder(style)(value)
    for number, raw in enumerate(raws):
        text = text.replace(f'"{_MARK_WRITTEN}{number}"', raw, 1)
    return text


#: The texts of the `Raw` values of the chunk being written, in the order the encoder met them.
_RAWS: list[str] = []
#: What a `Raw` is written as, before its text replaces it: a NUL is escaped in every style.
_MARK = "\x00conform raw\x00"
_MARK_WRITTEN = "\\u0000conform raw\\u0000"


def _raw_bytes(value: Any) -> msgspec.Raw:
    if isinstance(value, Raw):
        return msgspec.Raw(value.text.encode("utf-8"))
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


_compact = msgspec.json.Encoder(enc_hook=_raw_bytes).encode


def _raw(value: Any) -> str:
    if isinstance(value, Raw):
        _RAWS.append(value.text)
        return f"{_MARK}{len(_RAWS) - 1}"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


@functools.cache
def _encoder(style: Style) -> Callable[[Any], str]:
    """The json module's C encoder for `style`, made once (its `encode` makes one a call)."""
    encoder = json.JSONEncoder(
        ensure_ascii=style.ascii,
        separators=(style.item, style.key),
        allow_nan=False,
        default=_raw,
    )
    if c_make_encoder is None:  # pragma: no cover (CPython has it)
        return encoder.encode
    make = c_make_encoder(
        None,  # markers: a chunk is a tree
        _raw,
        encode_basestring_ascii if style.ascii else encode_basestring,
        None,  # indent
        style.key,
        style.item,
        False,  # sort_keys
        False,  # skipkeys
        False,  # allow_nan
    )

    def encode(value: Any) -> str:
        return "".join(make(value, 0))

    return encode
