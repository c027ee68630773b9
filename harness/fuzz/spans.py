"""Where the parts of a JSON text stand: the spans the shrinker cuts payloads at.

`parse(text)` reads a JSON text into `Node`s that say where each value, object member and array
element starts and ends in the text, without changing a character: numbers keep their spelling,
duplicate keys stay. A text that is not JSON gives None (the shrinker then cuts its characters).
Values nested deeper than `OPAQUE_DEPTH` are one opaque node (their brackets are skipped, not
read), so a payload nested 100,000 levels deep costs one scan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Below this depth values are read as one opaque span.
OPAQUE_DEPTH = 64

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_SPACE = re.compile(r"[ \t\n\r]*")
_LITERALS = ("true", "false", "null")


@dataclass
class Node:
    """A value's span (`start`, `end`), its kind (`object`, `array`, `string`, `number`,
    `literal`, `opaque`), and for a container its parts: each `(start, end, key, value)`, the span
    of a member (key through value) or an element, with the member's key text (None in an
    array)."""

    kind: str
    start: int
    end: int
    parts: list[tuple[int, int, str | None, Node]] = field(default_factory=list)


class _NotJson(Exception):
    pass


def parse(text: str) -> Node | None:
    """The tree of spans of `text`, or None when it is not one JSON value."""
    try:
        node, end = _value(text, _skip(text, 0), 0)
    except _NotJson:
        return None
    if _skip(text, end) != len(text):
        return None
    return node


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _value(text: str, at: int, depth: int) -> tuple[Node, int]:
    if at >= len(text):
        raise _NotJson
    char = text[at]
    if char in "{[" and depth >= OPAQUE_DEPTH:
        end = _opaque_end(text, at)
        return Node("opaque", at, end), end
    if char == "{":
        return _container(text, at, depth, "}", keyed=True)
    if char == "[":
        return _container(text, at, depth, "]", keyed=False)
    if char == '"':
        match = _STRING.match(text, at)
        if match is None:
            raise _NotJson
        return Node("string", at, match.end()), match.end()
    match = _NUMBER.match(text, at)
    if match is not None and match.end() > at:
        return Node("number", at, match.end()), match.end()
    for literal in _LITERALS:
        if text.startswith(literal, at):
            return Node("literal", at, at + len(literal)), at + len(literal)
    raise _NotJson


def _container(text: str, at: int, depth: int, close: str, *, keyed: bool) -> tuple[Node, int]:
    node = Node("object" if keyed else "array", at, at)
    at = _skip(text, at + 1)
    if at < len(text) and text[at] == close:
        node.end = at + 1
        return node, at + 1
    while True:
        start = at
        key = None
        if keyed:
            match = _STRING.match(text, at)
            if match is None:
                raise _NotJson
            key = text[match.start() : match.end()]
            at = _skip(text, match.end())
            if at >= len(text) or text[at] != ":":
                raise _NotJson
            at = _skip(text, at + 1)
        value, at = _value(text, at, depth + 1)
        node.parts.append((start, at, key, value))
        at = _skip(text, at)
        if at < len(text) and text[at] == ",":
            at = _skip(text, at + 1)
            continue
        if at < len(text) and text[at] == close:
            node.end = at + 1
            return node, at + 1
        raise _NotJson


def _opaque_end(text: str, at: int) -> int:
    """The end of the bracketed value at `at`, its strings skipped."""
    depth = 0
    index = at
    while index < len(text):
        char = text[index]
        if char == '"':
            match = _STRING.match(text, index)
            if match is None:
                raise _NotJson
            index = match.end()
            continue
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    raise _NotJson


def without_part(text: str, container: Node, index: int) -> str:
    """`text` without part `index` of `container` (and the comma that went with it)."""
    parts = container.parts
    start, end = parts[index][0], parts[index][1]
    if index + 1 < len(parts):
        end = parts[index + 1][0]
    elif index > 0:
        start = parts[index - 1][1]
    return text[:start] + text[end:]


def walk(node: Node) -> list[Node]:
    """Every container of the tree, outer ones first."""
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.kind in ("object", "array"):
            found.append(current)
            stack.extend(part[3] for part in reversed(current.parts))
    return found


def strings(node: Node) -> list[Node]:
    """Every string value of the tree (not keys), in text order."""
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.kind == "string":
            found.append(current)
        stack.extend(part[3] for part in reversed(current.parts))
    return found


def member(node: Node, key: str) -> Node | None:
    """The value of the last member `key` (a JSON string's text, quotes included) of an object."""
    found = None
    for _, _, name, value in node.parts:
        if name == key:
            found = value
    return found
