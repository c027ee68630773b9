"""Input modes: how each payload is changed before it is pushed, without changing what it means.

- `plain` pushes payloads as recorded.
- `unknown-fields` adds keys at every object level the chunk shape knows (top, each choice,
  `delta`, each tool call, `function`, `timings`, `prompt_progress`, `usage`, `error`), with values
  of every JSON type, named with names no OpenAI-compatible server sends
  (`harness.check.known_fields` lists the names that are not unknown, and where each comes from),
  and near-names: a read field's name in another case, spelling or level, or a name another API
  uses for its meaning, with a value a client reading it would take (`harness.check.members`).
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
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from typing import Any

from harness.check import jsontext
from harness.check.known_fields import HOSTILE_KEYS
from harness.check.members import UNKNOWN_NAMES, hostile_keys, injected, parse, unknown_fields

__all__ = [
    "DEFAULT_SEED",
    "ESCAPES",
    "HOSTILE_KEYS_MODE",
    "KEY_ORDER",
    "MODES",
    "PLAIN",
    "SEEDED",
    "TRUNCATED",
    "UNKNOWN_FIELDS",
    "UNKNOWN_NAMES",
    "WHITESPACE",
    "Mutator",
    "SharedMutations",
    "has_proto_member",
    "hostile_keys",
    "mutate",
    "mutator",
    "proto_cut",
    "rewrite",
    "share_mutations",
    "truncation_points",
    "unknown_fields",
]

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
            parsed = parse(data)
            if parsed is None:
                return data
            return injected(parsed, names, _rng(seed, case_id, step), data)

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
