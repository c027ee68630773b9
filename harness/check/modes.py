"""Input modes: how each payload is changed before it is pushed, without changing what it means.

- `plain` pushes payloads as recorded.
- `unknown-fields` adds keys at every object level the chunk shape knows (top, each choice,
  `delta`, each tool call, `function`, `timings`, `prompt_progress`, `usage`, `error`), with values
  of every JSON type, named only with names no OpenAI-compatible server sends
  (`harness.check.known_fields` lists the names that are not unknown, and where each comes from),
  and near-names beside the fields the rules read: another case, spelling or level of a read
  field's name, or another API's name for its meaning (`harness.check.members`).
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
adding modes parse the chunk, add their members and write it back in `json`'s layout
(`harness.check.members`); the last three
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
from collections.abc import Callable, Iterable
from typing import Any

from harness.check import jsontext
from harness.check.members import UNKNOWN_NAMES as UNKNOWN_NAMES  # (re-exported)
from harness.check.members import hostile_keys, unknown_fields

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
