"""The members `unknown-fields` and `hostile-keys` add to every object level of a chunk.

`unknown-fields` adds, at every object level the chunk shape knows (top, each choice, `delta`,
each tool call, `function`, `timings`, `prompt_progress`, `usage`, `error`), up to three members
with invented names (`UNKNOWN_NAMES`: no OpenAI-compatible server sends them) and values of every
JSON type; then, at each level that reads fields, two *near-names*
(`harness.suite.near_names`): a read field's name in another case, spelling or level, or a name
another API uses for its meaning, with a value of that field's type unlike the one the object
holds, so that a client that reads it gets another result. `hostile-keys` adds names like
JavaScript's `Object.prototype` members and Python's dunders (`harness.check.known_fields`).

What a changed payload costs: its generator (`random.Random` seeded from a string, about 5 µs,
made only for a payload the mode changes), two msgspec decodes (`jsontext.rewritable`'s check,
then the value it changes), and the mode's own work: one walk of the decoded chunk counts its
members (duplicate keys) and finds its floats (only an integral one can be a number that moves,
so the text is scanned for them only then); the generator's `sample`, `randrange` and `choice`
are drawn inline with the bits they take; the chunk is written by msgspec in the json module's
layout, unless a float would be written with an exponent, which the json module writes otherwise
(then by the json module's C encoder). The near-names are drawn after the invented members, from
the same generator: the invented members of a payload are those an older version added (in the
same order), and the near-names come in between them.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from decimal import Decimal
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

import msgspec

from harness.check import jsontext
from harness.check.known_fields import HOSTILE_KEYS, KNOWN_NAMES
from harness.drive.normalize import TIMINGS_FIELDS
from harness.suite.near_names import NEAR_NAMES, NearName, near_value

#: 16 digits in a row, a point maybe among them: the only numbers a re-serialization may change.
_LONG_DIGITS = re.compile(r"[0-9.]{17}|[0-9]{16}")
#: Each byte of UTF-8 text as "0" for a digit or a dot, " " for any other; `_RUN` of them is a hint.
_DIGITS_AS_ZEROS = bytes(ord("0") if chr(i) in "0123456789." else ord(" ") for i in range(256))
_RUN = b"0" * 16
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")

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


_VALUE_COUNT = len(_VALUES)
_VALUE_BITS = _VALUE_COUNT.bit_length()


def _json_dumps() -> Callable[[Any], str]:
    """`json.JSONEncoder(ensure_ascii=False).encode`, the same text, without its Python layer.

    The C encoder is made once, without the check for circular values (a decoded payload and
    `_VALUES` have none); where the stdlib has no C encoder, or it writes another text, the
    encoder's own `encode`.
    """
    encoder = json.JSONEncoder(ensure_ascii=False)
    if c_make_encoder is None:  # pragma: no cover (CPython has it)
        return encoder.encode
    try:
        make = c_make_encoder(
            None,  # markers: no check for circular values
            encoder.default,
            encode_basestring,
            None,  # indent
            encoder.key_separator,
            encoder.item_separator,
            False,  # sort_keys
            False,  # skipkeys
            True,  # allow_nan
        )
    except TypeError:  # pragma: no cover (another signature)
        return encoder.encode

    def dumps(value: Any) -> str:
        return "".join(make(value, 0))

    sample = {"k": _VALUES, "\u00e9": [_VALUES[-1], {}], "x": 1e16}
    return dumps if dumps(sample) == encoder.encode(sample) else encoder.encode


def _census(chunk: dict[str, Any]) -> tuple[int, list[float]]:
    """How many members the objects of a decoded `chunk` hold (all depths), and its floats."""
    members = 0
    floats: list[float] = []
    pending: list[Any] = [chunk]
    while pending:
        node = pending.pop()
        if type(node) is dict:
            members += len(node)
            node = node.values()
        for value in node:
            kind = type(value)
            if kind is dict or kind is list:
                pending.append(value)
            elif kind is float:
                floats.append(value)
    return members, floats


def _members_written_once(data: str, chunk: dict[str, Any], members: int) -> bool:
    """True when the text `data` of `chunk` writes as many members as `chunk` holds (no key twice
    in an object): as many colons outside its strings.

    The colons outside strings are all the colons but those inside strings, which are those of the
    decoded strings unless one is written `\\u003a` (strings of dropped members are missing from
    `chunk`, but then the colons outside count them and are more than `members` anyway). Only
    where both ways fail is the text scanned for its strings.
    """
    colons = data.count(":")
    if colons == members:
        return True
    if "\\u003" not in data:
        return colons - _colons_in_strings(chunk) == members
    return jsontext.colons(data) == members


def _colons_in_strings(chunk: dict[str, Any]) -> int:
    found = 0
    pending: list[Any] = [chunk]
    while pending:
        node = pending.pop()
        if type(node) is dict:
            found += ":".join(node).count(":") - len(node) + 1 if node else 0
            node = node.values()
        for value in node:
            kind = type(value)
            if kind is str:
                found += value.count(":")
            elif kind is dict or kind is list:
                pending.append(value)
    return found


def _written_alike(floats: list[float]) -> bool:
    """True when msgspec writes each of `floats` as `repr` does (no exponent: 1e-4 <= |f| < 1e16,
    or zero): `_fast_dumps` then writes what `_dumps` does."""
    if not floats:
        return True
    sizes = list(map(abs, floats))
    if max(sizes) >= 1e16:
        return False
    return min(sizes) >= 1e-4 or all(size == 0 or size >= 1e-4 for size in sizes)


_dumps = _json_dumps()


def _fast_dumps(value: Any) -> str:
    """The text `_dumps` writes, by msgspec (twice as fast), for a value whose floats are
    `_written_alike` (`_VALUES_RAW`'s are, as raw text)."""
    return msgspec.json.format(msgspec.json.encode(value), indent=0).decode()


def _raw_floats(value: Any) -> Any:
    """`value` with each float that msgspec would write another way than `repr` as its raw text."""
    if type(value) is float and not _written_alike([value]):
        return msgspec.Raw(repr(value).encode())
    if type(value) is dict:
        return {k: _raw_floats(v) for k, v in value.items()}
    if type(value) is list:
        return [_raw_floats(v) for v in value]
    return value


#: `_VALUES` as `_fast_dumps` writes them alike (`1e300` as `1e+300`), or None where it cannot.
_VALUES_RAW: list[Any] | None = [_raw_floats(v) for v in _VALUES]
if _fast_dumps({"k": _VALUES_RAW, "é\n": 1.5}) != _dumps({"k": _VALUES, "é\n": 1.5}):
    _VALUES_RAW = None  # pragma: no cover (another msgspec)


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


def parse(data: str) -> tuple[dict[str, Any], bool] | None:
    """The payload's JSON object and whether msgspec writes its numbers as the json module does,
    or None where re-serializing could change its meaning.

    msgspec refuses `NaN`, numbers beyond a double's range and unpaired surrogate escapes, and
    parsing would keep only the last of duplicate keys, so those are refused too: each member of
    the text has one colon outside strings, and the parsed objects must hold as many. A payload
    nested beyond the limit stays as it is, as in the other rewriting modes, and so does one with
    a fraction or exponent whose exact value would not survive (`_numbers_survive`).
    """
    if not jsontext.rewritable(data):
        return None
    try:  # (`1e400`: the json module takes it, msgspec does not; it cannot be written back)
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    if type(value) is not dict:  # a JSON text that is not an object
        return None  # (below: duplicate keys)
    members, floats = _census(value)
    if not _members_written_once(data, value, members):
        return None
    # A number that would move decodes to an integral float (its exact value or its double is an
    # integer, and an integer's double is one): without one, nothing to look at in the text.
    if any(map(float.is_integer, floats)) and not _numbers_survive(data):
        return None
    return value, _written_alike(floats)


#: Up to this many names, `random.sample` draws from a copy of the population (its `setsize`
#: for three draws): `_Injector.add` draws as it does.
_SAMPLE_POOL = 21


class _Walker:
    """Walks a chunk's object levels (top, its `TOP_LEVELS`, each choice, `delta`, each tool call,
    `function`) in one order, calling `add` on each; the walks of both adders."""

    TOP_LEVELS: tuple[str, ...] = ("timings", "prompt_progress", "usage", "error")

    def add(self, obj: dict[str, Any], level: str) -> dict[str, Any]:
        raise NotImplementedError

    def chunk(self, chunk: dict[str, Any]) -> dict[str, Any]:
        chunk = self.add(chunk, "top")
        for key in self.TOP_LEVELS:
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


class _Injector(_Walker):
    """Adds up to three members named from `names` to every object level of a chunk."""

    def __init__(self, names: tuple[str, ...], rng: random.Random, values: list[Any]) -> None:
        self.rng = rng
        self.names = _candidates(names)
        self.values = values
        # A plain generator's draws are made here as its methods make them (`_randbelow`): the
        # same bits, in the same order, without three Python frames per draw.
        self.getrandbits = rng.getrandbits if type(rng) is random.Random else None

    def add(self, obj: dict[str, Any], level: str) -> dict[str, Any]:
        getrandbits = self.getrandbits
        known = self.names[level]
        names = list(known) if obj.keys().isdisjoint(known) else [n for n in known if n not in obj]
        count = len(names)
        k = min(3, count)
        items = list(obj.items())
        if getrandbits is None or count > _SAMPLE_POOL:
            rng = self.rng
            for name in rng.sample(names, k=k):
                items.insert(rng.randrange(len(items) + 1), (name, rng.choice(self.values)))
            return dict(items)
        values = self.values
        picked = []
        for i in range(k):  # rng.sample(names, k): a pool, each pick replaced by the last
            n = count - i
            bits = n.bit_length()
            j = getrandbits(bits)
            while j >= n:
                j = getrandbits(bits)
            picked.append(names[j])
            names[j] = names[n - 1]
        for name in picked:  # rng.randrange(len(items) + 1), then rng.choice(_VALUES)
            n = len(items) + 1
            bits = n.bit_length()
            at = getrandbits(bits)
            while at >= n:
                at = getrandbits(bits)
            value = getrandbits(_VALUE_BITS)
            while value >= _VALUE_COUNT:
                value = getrandbits(_VALUE_BITS)
            items.insert(at, (name, values[value]))
        return dict(items)


_NAMES_AT: dict[tuple[str, ...], dict[str, tuple[str, ...]]] = {}


def _candidates(names: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """For each level, the names of `names` it does not read, in their order."""
    found = _NAMES_AT.get(names)
    if found is None:
        found = {
            level: tuple(n for n in names if n not in read) for level, read in _READ_AT.items()
        }
        _NAMES_AT[names] = found
    return found


#: How many near-names each object level gets (fewer where fewer are left).
NEAR_PER_OBJECT = 2


#: The names of each level's near-names, to see at once whether an object holds one already.
_NEAR_SETS = {level: frozenset(near.name for near in names) for level, names in NEAR_NAMES.items()}


class _NearNames(_Walker):
    """Adds up to `NEAR_PER_OBJECT` near-names to every object level of a chunk that reads
    fields, walked as `_Injector` walks it; `alike` stays True while each float added is written
    alike by both writers (`_written_alike`)."""

    TOP_LEVELS = ("timings", "prompt_progress", "error")  # (`usage` reads no field)

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.alike = True
        # As `_Injector` does: a plain generator's draws made inline, the same bits in the same
        # order as `sample` and `randrange` take them.
        self.getrandbits = rng.getrandbits if type(rng) is random.Random else None

    def add(self, obj: dict[str, Any], level: str) -> dict[str, Any]:
        names = NEAR_NAMES[level]
        if not obj.keys().isdisjoint(_NEAR_SETS[level]):
            names = tuple(near for near in names if near.name not in obj)
        items = list(obj.items())
        for near in self._sample(names):
            value = near_value(near, obj)
            if type(value) is float:
                self.alike = self.alike and _written_alike([value])
            items.insert(self._below(len(items) + 1), (near.name, value))
        return dict(items)

    def _below(self, n: int) -> int:
        """`rng.randrange(n)`, as `random.Random._randbelow` draws it."""
        getrandbits = self.getrandbits
        if getrandbits is None:
            return self.rng.randrange(n)
        bits = n.bit_length()
        at = getrandbits(bits)
        while at >= n:
            at = getrandbits(bits)
        return at

    def _sample(self, names: tuple[NearName, ...]) -> list[NearName]:
        """`rng.sample(names, k)` for k = `NEAR_PER_OBJECT` or fewer, as `random.sample` draws
        it: from a pool for up to 21 names, by picks until unseen beyond."""
        count = len(names)
        k = min(NEAR_PER_OBJECT, count)
        if self.getrandbits is None:
            return self.rng.sample(names, k=k)
        if count <= _SAMPLE_POOL:
            pool = list(names)
            picked = []
            for i in range(k):
                j = self._below(count - i)
                picked.append(pool[j])
                pool[j] = pool[count - i - 1]
            return picked
        seen: list[int] = []
        for _ in range(k):
            j = self._below(count)
            while j in seen:
                j = self._below(count)
            seen.append(j)
        return [names[j] for j in seen]


def with_members(data: str, names: tuple[str, ...], rng: random.Random) -> str:
    """`data` with members named from `names` added (and near-names, for `UNKNOWN_NAMES`), or
    unchanged where re-serializing could change its meaning."""
    parsed = parse(data)
    return data if parsed is None else injected(parsed, names, rng, data)


def injected(
    parsed: tuple[dict[str, Any], bool], names: tuple[str, ...], rng: random.Random, data: str
) -> str:
    """The text of a `parse`d payload with members named from `names` added."""
    chunk, alike = parsed
    try:
        if alike and _VALUES_RAW is not None:
            chunk = _Injector(names, rng, _VALUES_RAW).chunk(chunk)
        else:
            chunk = _Injector(names, rng, _VALUES).chunk(chunk)
        if names is UNKNOWN_NAMES:
            near = _NearNames(rng)
            chunk = near.chunk(chunk)
            alike = alike and near.alike
        if alike and _VALUES_RAW is not None:
            return _fast_dumps(chunk)
        return _dumps(chunk)
    except RecursionError:
        return data


def unknown_fields(data: str, rng: random.Random) -> str:
    """The payload with unknown fields added at every level; unparseable payloads unchanged."""
    return with_members(data, UNKNOWN_NAMES, rng)


def hostile_keys(data: str, rng: random.Random) -> str:
    """The payload with members named `__proto__`, `constructor` and the like added at every
    level; unparseable payloads unchanged."""
    return with_members(data, HOSTILE_KEYS, rng)
