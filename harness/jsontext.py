"""Rewriting a JSON text without changing what it means, working on the original text's tokens.

`tokens` splits a payload into its lexemes (white space included) with one strict regular
expression, so numbers keep their exact text and strings their exact escapes; a mode rewrites only
what it means to change. A payload is rewritten only when changing its text cannot change its
meaning under any reading docs/spec.md allows: one RFC 8259 text, no `NaN` or `Infinity`, no
unpaired surrogate escape, at most `MAX_DEPTH` levels of nesting. Anything else (invalid JSON
included) is pushed as it was, since its only meaning is the error it must cause.
"""

from __future__ import annotations

import json
import random
import re

#: Nesting beyond this is a protocol error (docs/spec.md); such payloads are never rewritten.
MAX_DEPTH = 128

_TOKEN = re.compile(
    r"[ \t\n\r]+"
    r'|"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"'
    r"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
    r"|true|false|null|[{}\[\],:]"
)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_WHITE = frozenset(" \t\n\r")
_OPEN = frozenset("{[")
#: What the `whitespace` mode puts between tokens: nothing, or runs of all four JSON white spaces.
_GAPS = ("", "", "", " ", "  ", "\t", "\n", "\r", "\r\n", " \n\t", "\n\n  ", "\t\r ", "\n ")
_HEX_FORMATS = ("\\u%04x", "\\u%04X")


def tokens(data: str) -> list[str] | None:
    """The lexemes of `data` (white space runs included), or None when it must not be rewritten."""
    found: list[str] = _TOKEN.findall(data)
    if sum(map(len, found)) != len(data):
        return None  # a character no JSON token holds: invalid JSON, NaN, a raw control character
    if found.count("{") + found.count("[") > MAX_DEPTH and _depth(found) > MAX_DEPTH:
        return None
    if "\\u" in data and any(_SURROGATE_ESCAPE.search(t) and _unpaired(t) for t in found):
        return None
    try:
        json.loads(data)  # the grammar (tokens in a valid order, nothing after the value)
    except (ValueError, RecursionError):
        return None
    return found


def _depth(found: list[str]) -> int:
    depth = deepest = 0
    for token in found:
        if token in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif token == "}" or token == "]":
            depth -= 1
    return deepest


def _unpaired(token: str) -> bool:
    """True when a string token holds an escaped surrogate that is not half of a pair."""
    if token[0] != '"':
        return False
    try:
        json.loads(token).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _decoded(token: str) -> str:
    text: str = json.loads(token) if "\\" in token else token[1:-1]
    return text


def with_whitespace(found: list[str], rng: random.Random) -> str:
    """The tokens with random white space (space, tab, LF, CR) between all of them and around."""
    solid = [t for t in found if t[0] not in _WHITE]
    gaps = rng.choices(_GAPS, k=len(solid) + 1)
    if len(solid) > 1 and not any("\n" in gap for gap in gaps):
        gaps[rng.randrange(1, len(solid))] = "\n"  # every payload of two tokens or more gets one
    return "".join([gap + token for gap, token in zip(gaps, solid, strict=False)]) + gaps[-1]


def with_escapes(found: list[str], rng: random.Random) -> str:
    """The tokens with about a quarter of every string's characters (keys too) `\\u` escaped."""
    return "".join([_escape(t, rng) if t[0] == '"' else t for t in found])


def _escape(token: str, rng: random.Random) -> str:
    text = _decoded(token)
    if not text:
        return token
    picked = sorted(rng.sample(range(len(text)), k=1 + len(text) // 4))
    form = rng.choice(_HEX_FORMATS)
    parts = ['"']
    start = 0
    for at in picked:
        if at > start:
            parts.append(json.dumps(text[start:at], ensure_ascii=False)[1:-1])
        code = ord(text[at])
        if code > 0xFFFF:  # outside the BMP: a surrogate pair
            code -= 0x10000
            parts.append(form % (0xD800 + (code >> 10)) + form % (0xDC00 + (code & 0x3FF)))
        else:
            parts.append(form % code)
        start = at + 1
    if start < len(text):
        parts.append(json.dumps(text[start:], ensure_ascii=False)[1:-1])
    parts.append('"')
    return "".join(parts)


def with_keys_shuffled(found: list[str], rng: random.Random) -> str:
    """The text with every object's members in a random order, at every depth.

    A member keeps its own white space; members with the same key (compared decoded, so `"a"` and
    `"\\u0061"` are one key) keep their order among themselves, so whichever reading of duplicate
    keys a target has, last wins or all validated, means the same.
    """
    text, _ = _value(found, 0, rng)
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
    if len(members) > 1:
        order = members[:]
        rng.shuffle(order)
        if len({k for k, _ in members}) < len(members):
            same_key: dict[str, list[tuple[str, str]]] = {}
            for member in members:
                same_key.setdefault(member[0], []).append(member)
            for pending in same_key.values():
                pending.reverse()
            order = [same_key[k].pop() for k, _ in order]
        members = order
    return "{" + ",".join([text for _, text in members]) + "}", at
