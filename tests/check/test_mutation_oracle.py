"""The input modes give byte for byte the payloads they gave before they were made faster.

A failure's report names a seed, and the same seed must give the same payload across versions: so
every changing mode is compared with the frozen copy of the old code (`tests/check/oracle_modes.py`)
over every payload of the shipped suite and over drawn JSON texts, odd ones above all (duplicate
keys, `NaN`, lone surrogates, deep nesting, long numbers, escapes, white space, invalid JSON), for
several seeds. The functions that take a caller's generator must also leave it where the old ones
did, since a caller may go on drawing from it (`tests/fuzz/fuzz_reference.py` does).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harness.check import jsontext, members, modes
from harness.check.known_fields import HOSTILE_KEYS
from harness.check.modes import DEFAULT_SEED, ESCAPES, KEY_ORDER, UNKNOWN_FIELDS, mutate
from harness.suite.cases import Suite
from harness.suite.recording import iter_payloads
from tests.check import oracle_modes as oracle

#: The modes that change payloads (plain and truncated push them as recorded).
CHANGING = tuple(m for m in modes.MODES if modes.mutator(m, seed=0, case_id="c") is not None)
SEEDS = (DEFAULT_SEED, 0, 2**64 + 7)


def test_the_oracle_knows_every_changing_mode() -> None:
    assert set(CHANGING) == {"unknown-fields", "hostile-keys", "key-order", "whitespace", ESCAPES}
    assert all(oracle._mutator(m, seed=0, case_id="c") for m in CHANGING)


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_every_payload_of_the_shipped_suite_is_changed_as_before(suite: Suite, seed: int) -> None:
    compared = changed = 0
    for case in suite.cases():
        payloads = [p.data for p in iter_payloads(case.recording)]
        for mode in CHANGING:
            new = modes.mutator(mode, seed=seed, case_id=case.case_id)
            old = oracle._mutator(mode, seed=seed, case_id=case.case_id)
            assert new is not None and old is not None
            for step, data in enumerate(payloads):
                expected = old(step, data)
                assert new(step, data) == expected, (mode, seed, case.case_id, step)
                compared += 1
                changed += expected != data
    assert compared > 7000 and changed > 6000  # the suite's payloads, nearly all changed


# Drawn JSON texts -----------------------------------------------------------------------------

#: Names the modes treat apart: the levels `unknown-fields` adds members at, the names it adds
#: (so that some are already there), the member names it leaves alone, and a few more.
NAMES = (
    *("choices", "delta", "tool_calls", "function", "timings", "usage", "error"),
    *("prompt_progress", "content", "index", "id", "name", "arguments", "finish_reason"),
    *modes.UNKNOWN_NAMES,
    *HOSTILE_KEYS[:4],
    *("a", "b", "é", "😀", "\uf600", ":", ",", "{", '"', "\\"),
)
WHITE = st.sampled_from(["", "", "", " ", "\n", "\t", "\r\n", "  \t"])
NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.from_regex(r"-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,24})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.sampled_from(
        [
            *("9007199254740993.0", "9007199254740992.0", "3.0000000000000001", "1e400"),
            *("-1e400", "1e-400", "0.1000000000000000055511151231257827", "12345678901234567e3"),
            *("1.0", "-0", "-0.0", "1E+2", "NaN", "Infinity", "-Infinity", "1.5e308", "2e308"),
        ]
    ),
)
CHARACTERS = st.one_of(
    st.characters(exclude_characters='"\\', exclude_categories=["Cc", "Cs"]),
    st.sampled_from(["é", "中", "😀", "\uf600", "\U0010ffff", "\x7f", "\u2028", ":", ","]),
    st.sampled_from(["\\n", '\\"', "\\\\", "\\/", "\\t", "\\u0061", "\\u00E9", "\\ud83d\\ude00"]),
    st.sampled_from(["\\ud800", "\\udc00", "\ud800", "\x01", "\n"]),  # lone surrogates, controls
)


def _string(pieces: list[str]) -> str:
    return '"' + "".join(pieces) + '"'


STRINGS = st.one_of(
    st.sampled_from(NAMES).map(lambda n: json.dumps(n, ensure_ascii=False)),
    st.sampled_from(NAMES).map(json.dumps),  # escaped
    st.lists(CHARACTERS, max_size=12).map(_string),
    st.text(max_size=200).map(lambda t: json.dumps(t, ensure_ascii=False)),  # long runs
)
SCALARS = st.one_of(NUMBERS, STRINGS, st.sampled_from(["true", "false", "null"]))


def _containers(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    member = st.tuples(WHITE, STRINGS, WHITE, WHITE, inner, WHITE).map(
        lambda m: f"{m[0]}{m[1]}{m[2]}:{m[3]}{m[4]}{m[5]}"
    )
    objects = st.tuples(st.lists(member, max_size=6), WHITE).map(
        lambda o: "{" + ",".join(o[0]) + o[1] + "}"
    )
    element = st.tuples(WHITE, inner, WHITE).map("".join)
    arrays = st.tuples(st.lists(element, max_size=5), WHITE).map(
        lambda a: "[" + ",".join(a[0]) + a[1] + "]"
    )
    return objects | arrays


VALUES = st.recursive(SCALARS, _containers, max_leaves=30)
TOPS = st.tuples(WHITE, VALUES, WHITE).map("".join)


@st.composite
def texts(draw: st.DrawFn) -> str:
    """A JSON text, mostly valid, sometimes cut, padded, nested deep or spoilt."""
    text = draw(TOPS)
    how = draw(st.integers(min_value=0, max_value=9))
    if how == 0 and text:  # cut
        text = text[: draw(st.integers(min_value=0, max_value=len(text) - 1))]
    elif how == 1:  # deep, around the limit
        depth = draw(st.integers(min_value=120, max_value=135))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        text = opener * depth + text + closer * depth
    elif how == 2:  # something after the value, or a character spoilt
        text = draw(st.sampled_from(["", "x", ",", " 1", "}", '"'])) + text
        text += draw(st.sampled_from(["", "x", ",", " 1", "]", "\x00"]))
    return text


CHUNKS = st.fixed_dictionaries(
    {"choices": st.lists(st.fixed_dictionaries({"delta": st.dictionaries(
        st.sampled_from(NAMES), st.none() | st.text(max_size=5), max_size=3)}), max_size=2)},
    optional={"timings": st.dictionaries(st.sampled_from(NAMES), st.integers(), max_size=4),
              "usage": st.just({}), "error": st.just({"message": "x"})},
).map(lambda c: json.dumps(c, ensure_ascii=False))  # fmt: skip

BUDGET = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _outcome(change: Callable[[], str]) -> tuple[str, Any]:
    try:
        return "text", change()
    except Exception as error:  # the same failure counts as the same outcome
        return "raised", type(error)


@BUDGET
@given(
    data=texts() | CHUNKS,
    seed=st.sampled_from(SEEDS) | st.integers(min_value=0),
    case_id=st.sampled_from(["c", "llama-server/content_stop"]) | st.text(max_size=8),
    step=st.integers(min_value=0, max_value=10**6),
)
@example(data='{"a":1,"a":2,"\\u0061":3,"b":{"x":1,"y":2}}', seed=1, case_id="c", step=0)
@example(data='{"choices":[],"t":9007199254740993.0}', seed=1, case_id="c", step=0)
@example(data='{"k":"\U0001f600\uf600\uf600 ' + "x" * 200 + '"}', seed=1, case_id="c", step=3)
@example(data='{"a":NaN,"b":1}', seed=1, case_id="c", step=0)
@example(data='{"a":1e400}', seed=1, case_id="c", step=0)
def test_drawn_texts_are_changed_as_before(data: str, seed: int, case_id: str, step: int) -> None:
    for mode in CHANGING:
        at = {"seed": seed, "case_id": case_id, "step": step}
        expected = _outcome(partial(oracle.mutate, mode, data, **at))
        assert _outcome(partial(mutate, mode, data, **at)) == expected, mode


SHORT = ("[1,2]", "{}", '{"a":1}', '""', "[[]]", ' {"a" : "b"} ', '{"k":"\U0001f600x"}')


@pytest.mark.parametrize("data", SHORT)
def test_short_texts_are_changed_as_before_for_many_seeds(data: str) -> None:
    # A short text's changes take the rare paths: whitespace's added line break when no gap drew
    # one (about one seed in ten for `[1,2]`), a one-member object, a string of one character.
    for seed in range(300):
        for mode in CHANGING:
            at = {"seed": seed, "case_id": "c", "step": 0}
            assert mutate(mode, data, **at) == oracle.mutate(mode, data, **at), (mode, seed)


ESCAPED = json.dumps(
    {"choices": [{"delta": {"tool_calls": [{"function": {"arguments": json.dumps(
        {"path": "a.txt", "text": 'row "1"\\ é\n' * 2000})}}]}}], "id": "x", "t": 1.5}
)  # fmt: skip
MANY_ESCAPES = {
    "valid": ESCAPED,
    "spaced": " " + ESCAPED.replace(":", " : "),
    "cut": ESCAPED[:-1],
    "keyless": ESCAPED[:-1] + ',"a"}',
    "backslash outside": ESCAPED + ' \\"b""',  # the copy's tokens would be other ones
}


@pytest.mark.parametrize("data", MANY_ESCAPES.values(), ids=MANY_ESCAPES.keys())
def test_a_text_of_many_escapes_is_changed_as_before(data: str) -> None:
    # Past 4,096 backslashes the tokens are found in a copy with the escapes blanked out.
    assert data.count("\\") > 4096
    for step in range(3):
        for mode in CHANGING:
            at = {"seed": DEFAULT_SEED, "case_id": "c", "step": step}
            assert mutate(mode, data, **at) == oracle.mutate(mode, data, **at), mode
        for name, (new, old, needs_rewritable) in WITH_RNG.items():
            if needs_rewritable and not oracle.rewritable(data):
                continue
            got = _outcome(partial(new, data, random.Random(step)))
            assert got == _outcome(partial(old, data, random.Random(step))), name


#: The functions that take the caller's generator, new and old.
WITH_RNG: dict[str, tuple[Callable[[str, random.Random], str], Callable[..., str], bool]] = {
    # name: (new, old, only for texts `rewritable` passes)
    "unknown_fields": (modes.unknown_fields, oracle.unknown_fields, False),
    "hostile_keys": (modes.hostile_keys, oracle.hostile_keys, False),
    "with_whitespace": (jsontext.with_whitespace, oracle.with_whitespace, False),
    "with_escapes": (jsontext.with_escapes, oracle.with_escapes, False),
    "with_keys_shuffled": (jsontext.with_keys_shuffled, oracle.with_keys_shuffled, True),
}


class CountingRandom(random.Random):
    """A generator of a subclass: the new code takes its own methods' draws, not a shortcut."""

    def random(self) -> float:
        return super().random() / 2


@settings(BUDGET, max_examples=100)
@given(data=texts() | CHUNKS, seed=st.integers(min_value=0), subclass=st.booleans())
# raw control characters at both ends of a string: a run (a third at most) leaves one outside
@example(data='{"k":"\x01abcdefghijkl\x02","\x1fk":"\u2028\x02"}', seed=3, subclass=False)
@example(data='{"k":"\x01abcdefghijkl\x02"}', seed=3, subclass=True)
def test_a_callers_generator_gives_the_same_text_and_is_left_as_before(
    data: str, seed: int, subclass: bool
) -> None:
    kind = CountingRandom if subclass else random.Random
    rewritable = oracle.rewritable(data)
    assert jsontext.rewritable(data) == rewritable
    for name, (new, old, needs_rewritable) in WITH_RNG.items():
        if needs_rewritable and not rewritable:
            continue
        new_rng, old_rng = kind(seed), kind(seed)
        assert _outcome(partial(new, data, new_rng)) == _outcome(partial(old, data, old_rng)), name
        assert new_rng.getstate() == old_rng.getstate(), name


def test_a_character_outside_the_bmp_does_not_change_the_escape_of_another() -> None:
    # The old table kept U+1F600's surrogate pair under U+F600: after one, U+F600 was written as
    # U+1F600 (and what a payload became depended on what the process had escaped before).
    data = '{"k":"\U0001f600\uf600\uf600\uf600"}'
    for step in range(40):
        out = mutate(ESCAPES, data, seed=DEFAULT_SEED, case_id="c", step=step)
        assert json.loads(out) == json.loads(data), out


def test_unknown_fields_still_leaves_alone_a_number_whose_exact_value_would_move() -> None:
    # The cheap test (no integral float, no colon inside a string) must not hide these.
    for data in (
        '{"choices":[],"t":9007199254740993.0}',
        '{"choices":[],"t":3.0000000000000001}',
        '{"choices":[],"t":1234567890123456789e0,"u":"a:b"}',
        '{"id":"a:b","id":"c"}',
        '{"a:":"x:y","a\\u003a":1}',  # the same key twice, one colon escaped
        '{"a":{"k":"::"},"a":"::"}',
    ):
        assert mutate(UNKNOWN_FIELDS, data, seed=1, case_id="c", step=0) == data
    kept = '{"choices":[],"t":1.5,"u":"a:b","v":1.0000000000000002}'
    assert mutate(UNKNOWN_FIELDS, kept, seed=1, case_id="c", step=0) != kept


def test_key_order_of_a_drawn_text_keeps_each_objects_members() -> None:
    data = '{"a":{"x":1,"y":[{"p":1,"q":2}]},"b":2,"c":{ }}'
    outs = {mutate(KEY_ORDER, data, seed=s, case_id="c", step=0) for s in range(30)}
    assert len(outs) > 5
    assert all(json.loads(out) == json.loads(data) for out in outs)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@BUDGET
@given(value=JSON_VALUES)
def test_msgspec_writes_what_the_json_module_writes_where_the_modes_use_it(value: Any) -> None:
    # unknown-fields writes a chunk with msgspec where its floats are written alike (no exponent),
    # with the json module's encoder elsewhere: the two must never give two texts.
    assert members._VALUES_RAW is not None  # the fast writer is in use
    expected = json.dumps(value, ensure_ascii=False)
    assert members._dumps(value) == expected
    floats = members._census({"v": value})[1]
    if members._written_alike(floats):
        assert members._fast_dumps(value) == expected
    assert members._fast_dumps(members._raw_floats(value)) == expected
