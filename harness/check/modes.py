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
- `truncated` pushes plain payloads but ends the recording after each payload in turn, expecting
  what the reference returns on that prefix (`harness.check.runner`).

The expected result is always the golden file (for `truncated`, its steps up to the cut). The last
three rewrite the original text token by token (`harness.check.jsontext`), so numbers keep their
exact text; a payload that cannot be rewritten without changing its meaning (invalid JSON, `NaN`, an
unpaired surrogate escape, nesting beyond the limit, and for `unknown-fields`, which writes the
parsed value back, duplicate keys and an integral number its double cannot hold) is pushed
unchanged. Every change is a pure function of (seed, case id, step), so a failure is
reproduced by the same command, and the exact payload is shown in its report; and the same seed
gives the same payload across versions: `tests/check/test_mutation_oracle.py` holds every mode to
a frozen copy of the code it was made faster from, draw for draw.

What a changed payload costs: its generator (`random.Random` seeded from a string, about 5 µs, the
floor of every mode, made only for a payload the mode changes), one msgspec decode (the check of
`jsontext.rewritable`, and for `unknown-fields` the value it changes), and the mode's own work. For
`unknown-fields`, one walk of the decoded chunk counts its members (duplicate keys) and finds its
floats (only an integral one can be a number that moves, so the text is scanned for them only
then); the generator's `sample`, `randrange` and `choice` are drawn inline with the bits they take;
the chunk is written by msgspec, in the json module's layout, unless a float would be written with
an exponent, which the json module writes otherwise (then by the json module's C encoder).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable
from decimal import Decimal
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

import msgspec

from harness.check import jsontext
from harness.check.known_fields import HOSTILE_KEYS, KNOWN_NAMES
from harness.drive.normalize import TIMINGS_FIELDS

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
    """How many members the objects of a decoded `chunk` hold, all depths together, and its
    floats."""
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


def _parse(data: str) -> tuple[dict[str, Any], bool] | None:
    """The payload's JSON object and whether msgspec writes its numbers as the json module does,
    or None where re-serializing could change its meaning.

    msgspec refuses `NaN`, numbers beyond a double's range and unpaired surrogate escapes, and
    parsing would keep only the last of duplicate keys, so those are refused too: each member of
    the text has one colon outside strings, and the parsed objects must hold as many. A payload
    nested beyond the limit stays as it is, as in the other rewriting modes, and so does one with
    a fraction or exponent whose exact value would not survive (`_numbers_survive`).
    """
    value = jsontext.decoded(data)
    if type(value) is not dict:  # REFUSED, or a JSON text that is not an object
        return None
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


class _Injector:
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


def _with_members(data: str, names: tuple[str, ...], rng: random.Random) -> str:
    parsed = _parse(data)
    return data if parsed is None else _injected(parsed, names, rng, data)


def _injected(
    parsed: tuple[dict[str, Any], bool], names: tuple[str, ...], rng: random.Random, data: str
) -> str:
    chunk, alike = parsed
    try:
        if alike and _VALUES_RAW is not None:
            return _fast_dumps(_Injector(names, rng, _VALUES_RAW).chunk(chunk))
        return _dumps(_Injector(names, rng, _VALUES).chunk(chunk))
    except RecursionError:
        return data


def unknown_fields(data: str, rng: random.Random) -> str:
    """The payload with unknown fields added at every level; unparseable payloads unchanged."""
    return _with_members(data, UNKNOWN_NAMES, rng)


def hostile_keys(data: str, rng: random.Random) -> str:
    """The payload with members named `__proto__`, `constructor` and the like added at every
    level; unparseable payloads unchanged."""
    return _with_members(data, HOSTILE_KEYS, rng)


_REWRITE: dict[str, Callable[..., str]] = {
    KEY_ORDER: jsontext.with_keys_shuffled,
    WHITESPACE: jsontext.with_whitespace,
    ESCAPES: jsontext.with_escapes,
}


def rewrite(mode: str, data: str, rng: random.Random) -> str:
    """The payload rewritten as `mode` says; unchanged where that could change its meaning."""
    return _REWRITE[mode](data, rng, checked=True) if jsontext.rewritable(data) else data


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


def _mutator(mode: str, *, seed: int, case_id: str) -> Mutator | None:
    # The generator is seeded only for a payload the mode changes: seeding is about 5 µs.
    if mode in (PLAIN, TRUNCATED):
        return None
    if mode in (UNKNOWN_FIELDS, HOSTILE_KEYS_MODE):
        names = UNKNOWN_NAMES if mode == UNKNOWN_FIELDS else HOSTILE_KEYS

        def add_members(step: int, data: str) -> str:
            parsed = _parse(data)
            if parsed is None:
                return data
            return _injected(parsed, names, _rng(seed, case_id, step), data)

        return add_members
    if mode in _REWRITE:
        change = _REWRITE[mode]

        def rewritten(step: int, data: str) -> str:
            if not jsontext.rewritable(data):
                return data
            return change(data, _rng(seed, case_id, step), checked=True)

        return rewritten
    raise ValueError(f"unknown mode {mode!r}")


class SharedMutations:
    """The changed payloads of a run of several targets over the same cases (the matrix), made
    once for all of them: a change is a pure function of (mode, seed, case id, step, payload), and
    making it was about two fifths of the harness's own work for each target. Up to `budget`
    characters (payloads and their changes) are kept; beyond that each target changes its own."""

    def __init__(self, budget: int = 64 * 2**20) -> None:
        self._kept: dict[tuple[str, int, str, int, str], str] = {}
        self._left = budget

    def mutator(self, mode: str, *, seed: int, case_id: str) -> Mutator | None:
        change = _mutator(mode, seed=seed, case_id=case_id)
        if change is None:
            return None
        kept = self._kept

        def shared(step: int, data: str) -> str:
            key = (mode, seed, case_id, step, data)
            found = kept.get(key)
            if found is None:
                found = change(step, data)
                if self._left > 0:  # threads may both make one: the same text either way
                    kept[key] = found
                    self._left -= len(data) + len(found)
            return found

        return shared


_shared: list[SharedMutations] = []  # the one of the run under way, if any


def share_mutations(shared: SharedMutations | None) -> None:
    """Make `mutator` use `shared` (None: stop sharing)."""
    _shared[:] = [] if shared is None else [shared]


def mutator(mode: str, *, seed: int, case_id: str) -> Mutator | None:
    """The function that changes payload `step` of case `case_id` in `mode` (None: unchanged)."""
    if _shared:
        return _shared[0].mutator(mode, seed=seed, case_id=case_id)
    return _mutator(mode, seed=seed, case_id=case_id)


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
