"""Rewriting a JSON text without changing what it means, working on the original text's tokens.

A mode rewrites only what it means to change and copies every other character, so numbers keep
their exact lexeme and strings their exact escapes. A payload is rewritten only when changing its
text cannot change its meaning under any reading docs/spec.md allows (`rewritable`): one RFC 8259
text (no `NaN` or `Infinity`, no unpaired surrogate escape, nothing after the value) nested at most
`MAX_DEPTH` levels. Anything else, invalid JSON included, is pushed as it was, since its only
meaning is the error it must cause.

Each rewrite takes the generator's draws in a fixed order and number, so a payload is the same
text for the same seed across versions (`tests/check/test_mode_outputs.py` holds them).
"""

from __future__ import annotations

import json
import random
import re
from json.encoder import encode_basestring

import msgspec

#: Nesting beyond this is a protocol error (docs/spec.md); such payloads are never rewritten.
MAX_DEPTH = 128

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
#: The tokens of a JSON text: punctuation, strings, literals and numbers, and runs of white space.
_TOKEN = re.compile(r"[{}\[\],:]|" + _STRING + r'|[^ \t\n\r"{}\[\],:]+|[ \t\n\r]+')
#: The same without the white space.
_SOLID = re.compile(r"[{}\[\],:]|" + _STRING + r'|[^ \t\n\r"{}\[\],:]+')
_STRINGS = re.compile(_STRING)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_BRACKETS = re.compile(r"[\[\]{}]")
_WHITE = frozenset(" \t\n\r")
#: What the `whitespace` mode puts between tokens: nothing, or runs of all four JSON white spaces.
_GAPS = ("", "", "", " ", "  ", "\t", "\n", "\r", "\r\n", " \n\t", "\n\n  ", "\t\r ", "\n ")


def rewritable(data: str) -> bool:
    """True when `data` is one JSON text whose text may be rewritten without changing meaning."""
    if data.count("{") + data.count("[") > MAX_DEPTH and _depth(data) > MAX_DEPTH:
        return False
    try:
        msgspec.json.decode(data)
    except (RecursionError, UnicodeEncodeError):  # a raw lone surrogate: not UTF-8, not JSON text
        return False
    except msgspec.DecodeError:
        return _rewritable_by_the_json_module(data)
    return True


def _reject(name: str) -> None:
    raise ValueError(name)


def _rewritable_by_the_json_module(data: str) -> bool:
    """The check again with the json module, which unlike msgspec takes numbers like `1e400`
    (valid JSON, and fine in ignored fields)."""
    try:
        json.loads(data, parse_constant=_reject)
    except (ValueError, RecursionError):
        return False
    return not any(_unpaired(match.group()) for match in _STRINGS.finditer(data))


def _unpaired(token: str) -> bool:
    """True when a string token holds an escaped surrogate that is not half of a pair."""
    if not _SURROGATE_ESCAPE.search(token):
        return False
    try:
        json.loads(token).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _depth(data: str) -> int:
    """How deep `data` nests at the end, or at the first point deeper than `MAX_DEPTH`."""
    depth = 0
    for match in _BRACKETS.finditer(_STRINGS.sub("", data)):
        if match.group() in "{[":
            depth += 1
            if depth > MAX_DEPTH:
                break
        else:
            depth -= 1
    return depth


def colons(data: str) -> int:
    """The colons outside strings: in a valid JSON text, the number of object members."""
    return _STRINGS.sub("", data).count(":")


def _decoded(token: str) -> str:
    """The text of a string token."""
    text: str = json.loads(token) if "\\" in token else token[1:-1]
    return text


# whitespace ------------------------------------------------------------------------------------


def with_whitespace(data: str, rng: random.Random) -> str:
    """The text with random white space (space, tab, LF, CR) between all tokens and around."""
    solid = _SOLID.findall(data)
    gaps = rng.choices(_GAPS, k=len(solid) + 1)
    if len(solid) > 1 and not any("\n" in gap for gap in gaps):
        gaps[rng.randrange(1, len(solid))] = "\n"  # every payload of two tokens or more gets one
    return "".join([gap + token for gap, token in zip(gaps, solid, strict=False)]) + gaps[-1]


# escapes ---------------------------------------------------------------------------------------


def with_escapes(data: str, rng: random.Random) -> str:
    """The text with a random run of every string's characters (keys too) `\\u` escaped.

    The run is one to a third of the string's characters, at a random place; one run per string
    (rather than scattered characters) keeps this mode's cost near the others'.
    """
    return _STRINGS.sub(lambda match: _escape(match.group(), rng), data)


def _escape(token: str, rng: random.Random) -> str:
    text = _decoded(token)
    size = len(text)
    if not size:
        return token
    bits = rng.getrandbits(48)  # one draw for the run's length, place and hex case
    length = 1 + bits % (size // 3 + 1) if size > 2 else size
    start = (bits >> 16) % (size - length + 1)
    escaped = text[start : start + length].translate(_ESCAPES[bits >> 47])
    head = encode_basestring(text[:start])[:-1]
    tail = encode_basestring(text[start + length :])[1:]
    return head + escaped + tail


class _EscapeTable(dict[int, str]):
    """A `str.translate` table from each character to its `\\u` escape, filled as met."""

    def __init__(self, form: str) -> None:
        super().__init__()
        self.form = form

    def __missing__(self, code: int) -> str:
        form = self.form
        if code > 0xFFFF:  # outside the BMP: a surrogate pair
            low = code - 0x10000
            value = form % (0xD800 + (low >> 10)) + form % (0xDC00 + (low & 0x3FF))
        else:
            value = form % code
        self[code] = value
        return value


#: Escapes in lower and in upper case hex digits (the draw's top bit picks one).
_ESCAPES = (_EscapeTable("\\u%04x"), _EscapeTable("\\u%04X"))


# key order -------------------------------------------------------------------------------------


def with_keys_shuffled(data: str, rng: random.Random) -> str:
    """The text with every object's members in a random order, at every depth.

    A member keeps its own white space; members with the same key (compared decoded, so `"a"` and
    `"\\u0061"` are one key) keep their order among themselves, so whichever reading of duplicate
    keys a target has, last wins or all validated, means the same. Objects are shuffled in the
    order they close. `data` must be one JSON text (`rewritable`).
    """
    if "{" not in data:
        return data
    text, _ = _value(_TOKEN.findall(data), 0, rng)
    return text


def _value(found: list[str], at: int, rng: random.Random) -> tuple[str, int]:
    """The text of the value at `at` with the white space around it, and where it ends."""
    parts: list[str] = []
    while found[at][0] in _WHITE:
        parts.append(found[at])
        at += 1
    token = found[at]
    if token == "{":
        text, at = _object(found, at + 1, rng)
    elif token == "[":
        text, at = _array(found, at + 1, rng)
    else:
        text, at = token, at + 1
    parts.append(text)
    while at < len(found) and found[at][0] in _WHITE:
        parts.append(found[at])
        at += 1
    return "".join(parts), at


def _array(found: list[str], at: int, rng: random.Random) -> tuple[str, int]:
    parts = ["["]
    while True:
        token = found[at]
        if token == "]":
            parts.append("]")
            return "".join(parts), at + 1
        if token == ",":
            parts.append(",")
            at += 1
        elif token[0] in _WHITE:
            parts.append(token)
            at += 1
        else:
            text, at = _value(found, at, rng)
            parts.append(text)


def _object(found: list[str], at: int, rng: random.Random) -> tuple[str, int]:
    members: list[tuple[str, str]] = []  # (decoded key, the member's text)
    parts: list[str] = []
    key: str | None = None
    while True:
        token = found[at]
        if token == "}" or token == ",":
            if key is not None:
                members.append((key, "".join(parts)))
            elif parts:  # white space alone: an empty object
                members.append(("", "".join(parts)))
            parts, key = [], None
            at += 1
            if token == "}":
                break
        elif key is None and token[0] == '"':
            key = _decoded(token)
            parts.append(token)
            at += 1
        elif token == ":" or token[0] in _WHITE:
            parts.append(token)
            at += 1
        else:
            text, at = _value(found, at, rng)
            parts.append(text)
    return "{" + ",".join(_shuffled(members, rng)) + "}", at


def _shuffled(members: list[tuple[str, str]], rng: random.Random) -> list[str]:
    """The members' texts in a random order, those with the same key in their own order."""
    if len(members) < 2:
        return [text for _, text in members]
    order = members[:]
    rng.shuffle(order)
    if len({key for key, _ in members}) < len(members):
        same_key: dict[str, list[tuple[str, str]]] = {}
        for member in members:
            same_key.setdefault(member[0], []).append(member)
        for pending in same_key.values():
            pending.reverse()
        order = [same_key[key].pop() for key, _ in order]
    return [text for _, text in order]
