"""Input modes: how each payload is changed before it is pushed, without changing what it means.

- `plain` pushes payloads as recorded.
- `unknown-fields` adds keys at every object level the chunk shape knows (top, each choice,
  `delta`, each tool call, `function`, `timings`, `prompt_progress`, `usage`, `error`), with values
  of every JSON type, named only with names no OpenAI-compatible server sends
  (`harness.check.known_fields` lists the names that are not unknown, and where each comes from).
- `hostile-keys` adds keys the same way, named like JavaScript's `Object.prototype` members and
  Python's dunders (`__proto__`, `constructor`, `toString`, `__class__`): unknown fields too, that
  break clients which copy members onto plain objects or attributes. A client may refuse a member
  named `__proto__` (I6): it may then fail with `protocol` at the first payload the mode gave one
  (`proto_cut`), after the golden steps before it.
- `key-order` shuffles the members of every object, at every depth.
- `whitespace` puts random insignificant white space (space, tab, LF, CR) between all tokens.
- `escapes` writes random characters of every string, keys included, as `\\uXXXX` escapes
  (surrogate pairs outside the BMP).
- `truncated` pushes plain payloads but ends the recording after each payload in turn
  (`truncation_points`), expecting what the reference returns on that prefix
  (`harness.check.truncation`).

The expected result is always the golden file (for `truncated`, its steps up to the cut). The
adding modes parse the chunk, add their members and write it back (`json`'s layout); the last three
rewrite the original text token by token (`harness.check.jsontext`), so numbers keep their exact
lexeme. A payload that cannot be changed without changing its meaning (invalid JSON, `NaN`, an
unpaired surrogate escape, nesting beyond the limit, and for the adding modes duplicate keys and a
number whose exact value would not survive being written back) is pushed unchanged. Every change
is a pure function of (seed, case id, step), so a failure is reproduced by the same command, and
the exact payload is shown in its report; the same seed gives the same payload across versions
(`tests/check/test_mode_outputs.py`).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

import msgspec

from harness.check import jsontext
from harness.check.known_fields import HOSTILE_KEYS, KNOWN_NAMES
from harness.drive.normalize import TIMINGS_FIELDS

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

#: The values the adding modes give their members: every JSON type, and edges of each.
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

_dumps = json.JSONEncoder(ensure_ascii=False).encode
#: 16 digits in a row, a point maybe among them: the only numbers a re-serialization may change.
_LONG_DIGITS = re.compile(r"[0-9.]{17}|[0-9]{16}")
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


# unknown-fields and hostile-keys: parse, add members, write back ------------------------------


def _parse(data: str) -> dict[str, Any] | None:
    """The payload's JSON object, or None where writing it back could change its meaning.

    msgspec refuses `NaN`, numbers beyond a double's range and unpaired surrogate escapes, and
    parsing would keep only the last of duplicate keys, so those are refused too: each member of
    the text has one colon outside strings, and the parsed objects must hold as many. A payload
    nested beyond the limit stays as it is, as in the other rewriting modes, and so does one with
    a fraction or exponent whose exact value would not survive (`_numbers_survive`).
    """
    if not jsontext.rewritable(data) or not _numbers_survive(data):
        return None
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(value, dict) or jsontext.colons(data) != _members(value):
        return None
    return value


def _members(value: Any) -> int:
    """How many members the objects in `value` hold, all depths together."""
    if isinstance(value, dict):
        return len(value) + sum(_members(v) for v in value.values())
    if isinstance(value, list):
        return sum(_members(v) for v in value)
    return 0


def _numbers_survive(data: str) -> bool:
    """False when a number would be written back with another exact value.

    Writing back writes a fraction or exponent as the shortest text of its double, which is the
    same number for up to 15 significant digits; beyond that the value may move. Where it moves
    to or from an integral value (`9007199254740993.0` comes back `9007199254740992.0`), a target
    that reads integers exactly (I2 `exact`) would be given another number than the golden
    file's; a fraction that stays a fraction has the same double, which is all any reading takes.
    """
    if _LONG_DIGITS.search(data) is None:  # no number long enough to move
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


def _with_members(data: str, names: tuple[str, ...], rng: random.Random) -> str:
    chunk = _parse(data)
    if chunk is None:
        return data
    try:
        return _dumps(_Injector(names, rng).chunk(chunk))
    except RecursionError:
        return data


def unknown_fields(data: str, rng: random.Random) -> str:
    """The payload with unknown fields added at every level; unparseable payloads unchanged."""
    return _with_members(data, UNKNOWN_NAMES, rng)


def hostile_keys(data: str, rng: random.Random) -> str:
    """The payload with members named `__proto__`, `constructor` and the like added at every
    level; unparseable payloads unchanged."""
    return _with_members(data, HOSTILE_KEYS, rng)


# the rewriting modes ---------------------------------------------------------------------------

_REWRITE: dict[str, Callable[[str, random.Random], str]] = {
    KEY_ORDER: jsontext.with_keys_shuffled,
    WHITESPACE: jsontext.with_whitespace,
    ESCAPES: jsontext.with_escapes,
}


def rewrite(mode: str, data: str, rng: random.Random) -> str:
    """The payload rewritten as `mode` says; unchanged where that could change its meaning."""
    return _REWRITE[mode](data, rng) if jsontext.rewritable(data) else data


# a mode, for one case --------------------------------------------------------------------------

Mutator = Callable[[int, str], str]

#: The member name secure JSON parsers refuse (I6).
PROTO = "__proto__"


class _HasProto(Exception):
    pass


def has_proto_member(data: str) -> bool:
    """True when some object of the JSON text `data` has a member named `__proto__`."""
    if f'"{PROTO}"' not in data and "\\u" not in data:  # the name, as written or escaped
        return False

    def pairs(items: list[tuple[str, Any]]) -> None:
        if any(key == PROTO for key, _ in items):
            raise _HasProto

    try:
        json.loads(data, object_pairs_hook=pairs)
    except _HasProto:
        return True
    except (ValueError, RecursionError):
        pass
    return False


def proto_cut(mode: str, *, seed: int, case_id: str, payloads: Iterable[str]) -> int | None:
    """The index of the first payload `mode` pushes with a member named `__proto__`, or None.

    Only `hostile-keys` adds such members. A target that refuses them (I6 `protocol`) fails
    there with `protocol`: an allowed outcome, after the golden steps before it
    (`harness.check.runner.proto_outcomes`).
    """
    if mode != HOSTILE_KEYS_MODE:
        return None
    change = mutator(mode, seed=seed, case_id=case_id)
    assert change is not None
    for step, data in enumerate(payloads):
        if has_proto_member(change(step, data)):
            return step
    return None


def _rng(seed: int, case_id: str, step: int) -> random.Random:
    return random.Random(f"{seed}:{case_id}:{step}")


def mutate(mode: str, data: str, *, seed: int, case_id: str, step: int) -> str:
    """Payload `step` of case `case_id` as `mode` pushes it (the same text on every call)."""
    change = mutator(mode, seed=seed, case_id=case_id)
    return data if change is None else change(step, data)


def mutator(mode: str, *, seed: int, case_id: str) -> Mutator | None:
    """The function that changes payload `step` of case `case_id` in `mode` (None: unchanged)."""
    if mode in (PLAIN, TRUNCATED):
        return None
    if mode == UNKNOWN_FIELDS:
        return lambda step, data: unknown_fields(data, _rng(seed, case_id, step))
    if mode == HOSTILE_KEYS_MODE:
        return lambda step, data: hostile_keys(data, _rng(seed, case_id, step))
    if mode in _REWRITE:
        return lambda step, data: rewrite(mode, data, _rng(seed, case_id, step))
    raise ValueError(f"unknown mode {mode!r}")


#: Recordings whose golden file has at most this many steps are cut after every payload.
TRUNCATE_EVERY_UP_TO = 128
_TRUNCATE_HEAD = 4
_TRUNCATE_SAMPLED = 3


def truncation_points(steps: int, *, seed: int, case_id: str) -> list[int]:
    """After which payloads the `truncated` mode cuts a recording whose golden has `steps` steps.

    Cutting after the last step is the plain run, so the cuts are 1 to `steps - 1` (a recording of
    one payload or none is cut before its first, 0: the empty stream): all of them up
    to `TRUNCATE_EVERY_UP_TO` steps (at most 8,128 pushes). A longer recording would cost O(n²)
    that way, so it is cut after payloads 1 to 4, after its last but one, and after three more
    drawn from (seed, case id): 8 passes, 2.5 times a plain run's pushes on average (4 at most).
    """
    last = steps - 1
    if last < 1:  # one payload or none: cut before the first (`new`, then `finish`), so the
        return [0]  # mode still asks the target something (a run that asks nothing never passes)
    if last <= TRUNCATE_EVERY_UP_TO:
        return list(range(1, last + 1))
    rng = random.Random(f"{seed}:{case_id}:truncated")
    drawn = rng.sample(range(_TRUNCATE_HEAD + 1, last), _TRUNCATE_SAMPLED)
    return sorted({*range(1, _TRUNCATE_HEAD + 1), *drawn, last})
