"""A frozen copy of the input modes as they were before they were made faster (the oracle).

`tests/check/test_mutation_oracle.py` checks that `harness.check.modes` gives byte for byte the
text these functions give, for every (mode, seed, case id, step, payload): a failure's report names
a seed, and the same seed must give the same payload across versions. This is
`harness/check/jsontext.py` and the changing half of `harness/check/modes.py` at commit 66e7dca,
joined into one module (the lists of names it reads, `harness.check.known_fields` and
`TIMINGS_FIELDS`, are the harness's own: the algorithm is what is frozen), with one bug fixed in
both (`_EscapeTable`, below). Never edit it to follow the harness; change the harness back.

Issue 34 added near-names to `unknown-fields` (CHANGELOG, "Suite power"): after the invented
members, from the same generator, up to two members per level named like a read field or like
another API's name for its meaning. Their pass is frozen below as it was written
(`_NearNames`, `_near_value`), reading the harness's list of names (`NEAR_NAMES`).
"""

# ruff: noqa
# mypy: ignore-errors
from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from decimal import Decimal
from json.encoder import encode_basestring
from typing import Any

import msgspec

from harness.check.known_fields import HOSTILE_KEYS, KNOWN_NAMES
from harness.drive.normalize import TIMINGS_FIELDS
from harness.suite.near_names import NEAR_NAMES

# --- harness/check/jsontext.py ---------------------------------------------------------------

#: Nesting beyond this is a protocol error (docs/spec.md); such payloads are never rewritten.
MAX_DEPTH = 128

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
#: The tokens of a valid JSON text, white space skipped (strings first would be slower: most
#: tokens are punctuation).
_SOLID = re.compile(r"[{}\[\],:]|" + _STRING + r'|[^ \t\n\r"{}\[\],:]+')
#: The same with the runs of white space as tokens of their own.
_TOKEN = re.compile(r"[{}\[\],:]|" + _STRING + r'|[^ \t\n\r"{}\[\],:]+|[ \t\n\r]+')
_STRINGS = re.compile(_STRING)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_BRACKETS = re.compile(r"[\[\]{}]")
_WHITE = frozenset(" \t\n\r")
_OPEN = frozenset("{[")
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
        return _rewritable_slowly(data)
    return True


def _reject(name: str) -> None:
    raise ValueError(name)


def _rewritable_slowly(data: str) -> bool:
    """The check again with the stdlib, which unlike msgspec takes numbers like `1e400`."""
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
        if match.group() in _OPEN:
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
    text: str = json.loads(token) if "\\" in token else token[1:-1]
    return text


def with_whitespace(data: str, rng: random.Random) -> str:
    """The text with random white space (space, tab, LF, CR) between all tokens and around."""
    solid = _SOLID.findall(data)
    gaps = rng.choices(_GAPS, k=len(solid) + 1)
    if len(solid) > 1 and not any("\n" in gap for gap in gaps):
        gaps[rng.randrange(1, len(solid))] = "\n"  # every payload of two tokens or more gets one
    return "".join([gap + token for gap, token in zip(gaps, solid, strict=False)]) + gaps[-1]


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
            # The one change from 66e7dca, which kept this pair under `code - 0x10000`: a later
            # U+F600 was then written as U+1F600's pair (a change of meaning, and one that depended
            # on what the process had escaped before).
            low = code - 0x10000
            value = form % (0xD800 + (low >> 10)) + form % (0xDC00 + (low & 0x3FF))
        else:
            value = form % code
        self[code] = value
        return value


_ESCAPES = (_EscapeTable("\\u%04x"), _EscapeTable("\\u%04X"))


def with_keys_shuffled(data: str, rng: random.Random) -> str:
    """The text with every object's members in a random order, at every depth.

    A member keeps its own white space; members with the same key (compared decoded, so `"a"` and
    `"\\u0061"` are one key) keep their order among themselves, so whichever reading of duplicate
    keys a target has, last wins or all validated, means the same.
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


# --- harness/check/modes.py (the changing half) ---------------------------------------------

_dumps = json.JSONEncoder(ensure_ascii=False).encode
#: 16 digits in a row, a point maybe among them: the only numbers a re-serialization may change.
_LONG_DIGITS = re.compile(r"[0-9.]{17}|[0-9]{16}")
#: Each byte of UTF-8 text as "0" for a digit or a dot, " " for any other; `_RUN` of them is a hint.
_DIGITS_AS_ZEROS = bytes(ord("0") if chr(i) in "0123456789." else ord(" ") for i in range(256))
_RUN = b"0" * 16
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")

PLAIN = "plain"
UNKNOWN_FIELDS = "unknown-fields"
HOSTILE_KEYS_MODE = "hostile-keys"
KEY_ORDER = "key-order"
WHITESPACE = "whitespace"
ESCAPES = "escapes"
TRUNCATED = "truncated"
#: Every mode, in the order runs and reports use; all run by default (`hostile-keys` too: R7 says
#: a client ignores unknown members whatever their names, and these names are how JavaScript and
#: Python clients most often fail to).
MODES = (PLAIN, UNKNOWN_FIELDS, HOSTILE_KEYS_MODE, KEY_ORDER, WHITESPACE, ESCAPES, TRUNCATED)
#: Modes whose outcome depends on `--seed` (failures name the seed to reproduce them).
SEEDED = (UNKNOWN_FIELDS, HOSTILE_KEYS_MODE, KEY_ORDER, WHITESPACE, ESCAPES, TRUNCATED)

DEFAULT_SEED = 20261129

#: The names each level reads (docs/spec.md section 2); injection never uses these there.
_READ_AT = {
    "top": {"id", "choices", "timings", "prompt_progress", "error"},
    "choice": {"delta", "finish_reason"},
    "delta": {"content", "reasoning_content", "tool_calls"},
    "tool_call": {"index", "id", "function"},
    "function": {"name", "arguments"},
    "timings": set(TIMINGS_FIELDS),
    "prompt_progress": {"total", "cache", "processed", "time_ms"},
    "usage": set(),
    "error": {"message"},
}
#: The names `unknown-fields` adds: invented, so that no OpenAI-compatible server sends them
#: (tests/check/test_modes.py checks them against `harness.check.known_fields.KNOWN_NAMES`).
UNKNOWN_NAMES: tuple[str, ...] = (
    "x_future",
    "x_conform_unknown",
    "zz_future_field_2",
    "ünïcode_ключ",
    "",
    "with space",
)
assert not set(UNKNOWN_NAMES) & (set(KNOWN_NAMES) | set(HOSTILE_KEYS))
assert not set(HOSTILE_KEYS) & set(KNOWN_NAMES)

_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**64,
    1.5,
    -0.0,
    1e300,
    "",
    "text",
    "\u00e9\u4e2d\U0001f600",
    '"quoted" \\ back\nslash',
    [],
    {},
    [1, "two", None, True, {"index": 3}],
    {"content": "not this", "index": 7, "tool_calls": [{"index": 9}]},
    {"nested": {"deeper": [{"id": "x", "error": {"message": "no"}}]}},
]


def _members(value: Any) -> int:
    """How many members the objects in `value` hold, all depths together."""
    if isinstance(value, dict):
        return len(value) + sum(_members(v) for v in value.values())
    if isinstance(value, list):
        return sum(_members(v) for v in value)
    return 0


def _numbers_survive(data: str) -> bool:
    """False when a number would be written back with another exact value.

    Re-serializing writes a fraction or exponent as the shortest text of its double, which is
    the same number for up to 15 significant digits; beyond that the value may move. Where it
    moves to or from an integral value (`9007199254740993.0` comes back `9007199254740992.0`), a
    target that reads integers exactly (I2 `exact`) would be given another number than the golden
    file's; a fraction that stays a fraction has the same double, which is all any reading takes.
    """
    # The cheap tests, strings included, for most payloads: a run of 16 digits or dots found at C
    # speed (the pattern alone costs 60 ms on a 1 MiB payload), then the pattern.
    if (
        _RUN not in data.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZEROS)
        or _LONG_DIGITS.search(data) is None
    ):
        return True
    for token in _NUMBER.findall(_STRINGS.sub('""', data)):
        mantissa = token.lstrip("-").replace("E", "e").split("e")[0]
        if mantissa == token.lstrip("-") and "." not in mantissa:
            continue  # an integer: decoded and written back exactly
        if len(mantissa.replace(".", "").lstrip("0")) <= 15:
            continue
        exact, written = Decimal(token), Decimal(repr(float(token)))
        if exact != written and (exact == exact.to_integral_value() or written == int(written)):
            return False  # a fraction moved to another of the same double is read the same
    return True


def _parse(data: str) -> Any:
    """The payload's JSON value, or None where re-serializing could change its meaning.

    msgspec refuses `NaN`, numbers beyond a double's range and unpaired surrogate escapes, and
    parsing would keep only the last of duplicate keys, so those are refused too: each member of
    the text has one colon outside strings, and the parsed objects must hold as many. A payload
    nested beyond the limit stays as it is, as in the other rewriting modes, and so does one with
    a fraction or exponent whose exact value would not survive (`_numbers_survive`).
    """
    if not rewritable(data) or not _numbers_survive(data):
        return None
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    if colons(data) != _members(value):
        return None
    return value


class _Injector:
    """Adds up to three members named from `names` to every object level of a chunk."""

    def __init__(self, names: tuple[str, ...], rng: random.Random) -> None:
        self.names = names
        self.rng = rng

    def add(self, obj: dict[str, Any], level: str) -> dict[str, Any]:
        rng, read = self.rng, _READ_AT[level]
        names = [n for n in self.names if n not in obj and n not in read]
        items = list(obj.items())
        for name in rng.sample(names, k=min(3, len(names))):
            items.insert(rng.randrange(len(items) + 1), (name, rng.choice(_VALUES)))
        return dict(items)

    def chunk(self, chunk: dict[str, Any]) -> dict[str, Any]:
        chunk = self.add(chunk, "top")
        for key in ("timings", "prompt_progress", "usage", "error"):
            if isinstance(chunk.get(key), dict):
                chunk[key] = self.add(chunk[key], key)
        choices = chunk.get("choices")
        if isinstance(choices, list):
            chunk["choices"] = [self.choice(c) if isinstance(c, dict) else c for c in choices]
        return chunk

    def choice(self, choice: dict[str, Any]) -> dict[str, Any]:
        choice = self.add(choice, "choice")
        delta = choice.get("delta")
        if isinstance(delta, dict):
            delta = self.add(delta, "delta")
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                delta["tool_calls"] = [self.call(c) if isinstance(c, dict) else c for c in calls]
            choice["delta"] = delta
        return choice

    def call(self, call: dict[str, Any]) -> dict[str, Any]:
        call = self.add(call, "tool_call")
        if isinstance(call.get("function"), dict):
            call["function"] = self.add(call["function"], "function")
        return call


def _near_value(near: Any, obj: dict[str, Any]) -> Any:
    if (near.level, near.name) == ("top", "message"):
        return "(message)" if "error" in obj else {"role": "assistant", "content": "(message)"}
    if near.value is not None:
        return near.value
    level, name = near.stands_for.split(".")
    current = obj.get(name) if level == near.level else None
    text = f"({near.name})"
    kind = near.kind
    if kind == "string":
        return text
    if kind == "enum":
        return "length" if current == "stop" else "stop"
    if kind in ("integer", "number"):
        if (
            isinstance(current, bool)
            or not isinstance(current, int | float)
            or abs(current) >= 2**52
        ):
            return 7 if kind == "integer" else 1234.5
        return current + 1
    if near.stands_for == "choice.delta":
        return {"content": text}
    if near.stands_for == "tool_call.function":
        return {"name": text, "arguments": "{}"}
    if near.stands_for == "top.timings":
        return {"predicted_n": 4321, "prompt_ms": 1.5}
    if near.stands_for == "top.prompt_progress":
        return {"total": 99, "processed": 99}
    if near.stands_for == "top.error":
        return {"message": text}
    if near.stands_for == "top.choices":
        return [{"index": 0, "delta": {"content": text}, "finish_reason": None}]
    return [
        {"index": 0, "id": text, "type": "function", "function": {"name": text, "arguments": "{}"}}
    ]


class _NearNames(_Injector):
    """Adds up to two near-names to every level of a chunk that reads fields (not `usage`)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def add(self, obj: dict[str, Any], level: str) -> dict[str, Any]:
        if level == "usage":
            return obj
        rng = self.rng
        candidates = [near for near in NEAR_NAMES[level] if near.name not in obj]
        items = list(obj.items())
        for near in rng.sample(candidates, k=min(2, len(candidates))):
            items.insert(rng.randrange(len(items) + 1), (near.name, _near_value(near, obj)))
        return dict(items)


def _with_members(data: str, names: tuple[str, ...], rng: random.Random) -> str:
    chunk = _parse(data)
    if not isinstance(chunk, dict):
        return data
    try:
        chunk = _Injector(names, rng).chunk(chunk)
        if names is UNKNOWN_NAMES:
            chunk = _NearNames(rng).chunk(chunk)
        return _dumps(chunk)
    except RecursionError:
        return data


def unknown_fields(data: str, rng: random.Random) -> str:
    """The payload with unknown fields added at every level; unparseable payloads unchanged."""
    return _with_members(data, UNKNOWN_NAMES, rng)


def hostile_keys(data: str, rng: random.Random) -> str:
    """The payload with members named `__proto__`, `constructor` and the like added at every
    level; unparseable payloads unchanged."""
    return _with_members(data, HOSTILE_KEYS, rng)


_REWRITE: dict[str, Callable[[str, random.Random], str]] = {
    KEY_ORDER: with_keys_shuffled,
    WHITESPACE: with_whitespace,
    ESCAPES: with_escapes,
}


def rewrite(mode: str, data: str, rng: random.Random) -> str:
    """The payload rewritten as `mode` says; unchanged where that could change its meaning."""
    return _REWRITE[mode](data, rng) if rewritable(data) else data


Mutator = Callable[[int, str], str]


def _rng(seed: int, case_id: str, step: int) -> random.Random:
    return random.Random(f"{seed}:{case_id}:{step}")


def mutate(mode: str, data: str, *, seed: int, case_id: str, step: int) -> str:
    """Payload `step` of case `case_id` as `mode` pushes it (the same text on every call)."""
    change = _mutator(mode, seed=seed, case_id=case_id)
    return data if change is None else change(step, data)


def _mutator(mode: str, *, seed: int, case_id: str) -> Mutator | None:
    if mode in (PLAIN, TRUNCATED):
        return None
    if mode == UNKNOWN_FIELDS:
        return lambda step, data: unknown_fields(data, _rng(seed, case_id, step))
    if mode == HOSTILE_KEYS_MODE:
        return lambda step, data: hostile_keys(data, _rng(seed, case_id, step))
    if mode in _REWRITE:
        return lambda step, data: rewrite(mode, data, _rng(seed, case_id, step))
    raise ValueError(f"unknown mode {mode!r}")
