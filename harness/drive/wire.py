"""The protocol's JSON lines, encoded and decoded at memory speed (docs/protocol.md).

The standard library's `json` walks a string character by character when it must escape to ASCII,
some 100 MB/s; a 50 MB payload crossed the pipe three times (request, push reply, finish reply)
at that speed. msgspec does the same work about ten times faster, so it is used whenever its text
means exactly what `json` would write: plain JSON values (string keys, finite floats), and, where
the protocol wants ASCII (requests), an ASCII result. Anything else (a lone surrogate, a non-finite
number, non-ASCII text in a request, an integer beyond 64 bits) takes the `json` path, as before.
"""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec

# The versions of the protocol (docs/protocol.md), here so that the worker (`harness.adapter`)
# needs nothing of the harness's side (`harness.drive.process`, which names them too).
PROTOCOL_VERSION = 1  # what every program speaks
FAST_PROTOCOL = 2  # offered in `hello`: framed payloads and text references (docs/protocol.md)
SHARED_PROTOCOL = 3  # protocol 2, and large payloads read from a file both sides map
REPLIES_PROTOCOL = 4  # protocol 3, and the long texts of replies in a file the program writes

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


_LEAVES = frozenset({str, int, bool, type(None)})  # written alike by both (exact types only)


def _plain(value: Any) -> bool:
    """True when msgspec and `json` write `value` alike (strings are not looked into).

    Exact types are tested first, with no call for a leaf: replies are mostly small objects of
    strings and integers, walked on every line. Subclasses take `_plain_subclassed`.
    """
    kind = type(value)
    if kind in _LEAVES:
        return True
    if kind is float:
        return math.isfinite(value)
    leaves = _LEAVES
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return False
            if type(item) not in leaves and not _plain(item):
                return False
        return True
    if kind is list:
        for item in value:  # noqa: SIM110 (a loop: no generator frame per list)
            if type(item) not in leaves and not _plain(item):
                return False
        return True
    return _plain_subclassed(value)


def _plain_subclassed(value: Any) -> bool:
    """`_plain` for a value whose type is a subclass (of str, int, float, dict or list)."""
    if isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    return False


def encode_line(message: Any, *, ascii_only: bool) -> bytes:
    """`message` as one compact JSON line, with its LF; all ASCII when `ascii_only`."""
    if _plain(message):
        try:
            data = _encode(message)
        except (TypeError, ValueError, OverflowError):  # a lone surrogate, a huge integer
            pass
        else:
            if not ascii_only or data.isascii():
                return data + b"\n"
    # ASCII here either way: `json` escapes a lone surrogate only then. NaN and the infinities
    # are not JSON: ValueError, as for an integer too long to write.
    return json.dumps(message, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def _plain_reply(reply: dict[str, Any]) -> bool:
    """`_plain(reply)` for a reply conform's worker built, whose keys and whose objects' keys
    two levels down (an event's, the state's, the completion's) are its own strings: only the
    values are looked at, without a call for the usual leaf. Anything deeper, or unusual, is
    `_plain`'s (the target's own values may be anything)."""
    leaves = _LEAVES
    for value in reply.values():
        kind = type(value)
        if kind in leaves:
            continue
        if kind is list:
            for item in value:
                if type(item) is dict:
                    for leaf in item.values():
                        if type(leaf) not in leaves and not _plain(leaf):
                            return False
                elif type(item) not in leaves and not _plain(item):
                    return False
        elif kind is dict:
            for leaf in value.values():
                if type(leaf) not in leaves and not _plain(leaf):
                    return False
        elif not _plain(value):
            return False
    return True


def encode_reply(reply: dict[str, Any]) -> bytes:
    """`encode_line(reply, ascii_only=False)` for a reply conform's worker built (its objects'
    keys its own strings, two levels down: `_plain_reply`)."""
    if _plain_reply(reply):
        try:
            return _encode(reply) + b"\n"
        except (TypeError, ValueError, OverflowError):  # a lone surrogate, a huge integer
            pass
    return json.dumps(reply, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (docs/protocol.md: numbers are finite)")


def decode_line(line: bytes) -> Any:
    """One JSON line as `json.loads` reads it; ValueError (or UnicodeDecodeError) when it is not
    JSON, bare `NaN` and `Infinity` included. msgspec first; what it refuses (a lone surrogate
    escape, a huge integer, `NaN`) is asked again of `json`, which also names what is wrong."""
    try:
        return _decode(line)
    except (msgspec.DecodeError, RecursionError):
        return json.loads(line.decode("utf-8"), parse_constant=_not_json)
