"""Every mode gives the same payloads for the same seed, byte for byte, across versions (README).

A failure's report names a seed, and rerunning it must push what the failing run pushed. So what
each changing mode makes of every payload of the shipped suite, where `truncated` cuts each case
and where `hostile-keys` first adds a `__proto__` member, for two seeds, are held here to what
they were (`mode_outputs.tsv`: one line a case, with a digest of its payloads, so that a recording
changed or added since is named as such rather than as a mode that changed), and so are the
modes' outputs over a fixed set of odd JSON texts (`ODD_TEXTS_DIGEST`), the generator a caller
passes left where it was.

A change of any of these is a change users see: name it in CHANGELOG, then write the file again
(`python -m tests.check.test_mode_outputs`) and set the digest the failure prints.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from harness.check import jsontext, modes
from harness.check.modes import DEFAULT_SEED, MODES, mutator, proto_cut, truncation_points
from harness.suite.cases import Case, Suite
from harness.suite.recording import iter_payloads

HERE = Path(__file__).resolve().parent
TABLE = HERE / "mode_outputs.tsv"
SEEDS = (DEFAULT_SEED, 0)
#: The modes that change payloads (plain and truncated push them as recorded).
CHANGING = ("unknown-fields", "hostile-keys", "key-order", "whitespace", "escapes")


def _sha(parts: Iterator[str]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()[:32]


def _payloads(case: Case) -> list[str]:
    return [payload.data for payload in iter_payloads(case.recording)]


def _outputs(case_id: str, payloads: list[str]) -> Iterator[str]:
    """Everything a mode decides for one case, in one stream of texts."""
    for seed in SEEDS:
        for mode in CHANGING:
            change = mutator(mode, seed=seed, case_id=case_id)
            assert change is not None
            for step, data in enumerate(payloads):
                yield change(step, data)
        yield repr(truncation_points(len(payloads), seed=seed, case_id=case_id))
        cut = proto_cut("hostile-keys", seed=seed, case_id=case_id, payloads=payloads)
        yield repr(cut)


def _line(case: Case) -> tuple[str, str]:
    payloads = _payloads(case)
    return _sha(iter(payloads)), _sha(_outputs(case.case_id, payloads))


def _table() -> dict[str, tuple[str, str]]:
    found = {}
    for line in TABLE.read_text("utf-8").splitlines():
        if line and not line.startswith("#"):
            case_id, payloads, outputs = line.split("\t")
            found[case_id] = (payloads, outputs)
    return found


def test_the_modes_listed_are_every_changing_mode() -> None:
    assert set(MODES) - set(CHANGING) == {"plain", "truncated"}
    assert all(mutator(mode, seed=0, case_id="c") is not None for mode in CHANGING)


def test_every_case_of_the_shipped_suite_is_changed_as_before(suite: Suite) -> None:
    table = _table()
    held = moved = 0
    for case in suite.cases():
        if case.case_id not in table:
            continue  # a case added since: nothing to hold it to
        payloads, outputs = _line(case)
        if payloads != table[case.case_id][0]:
            moved += 1  # its recording changed since: its line is written again with it
            continue
        assert outputs == table[case.case_id][1], case.case_id
        held += 1
    assert held > 300 and moved < 10, (held, moved)


# Odd texts: a fixed set, drawn by a seeded generator -------------------------------------------

NAMES = (
    *("choices", "delta", "tool_calls", "function", "timings", "usage", "error"),
    *("prompt_progress", "content", "index", "id", "name", "arguments", "finish_reason"),
    *modes.UNKNOWN_NAMES,
    *("__proto__", "constructor", "toString", "__class__"),
    *("a", "b", "é", "😀", "\uf600", ":", ",", "{", '"', "\\"),
)
WHITE = ("", "", "", " ", "\n", "\t", "\r\n", "  \t")
NUMBERS = (
    *("0", "-1", "12", "1.5", "-0.0", "1E+2", "1e-7", "123456789012345678901234567890"),
    *("9007199254740993.0", "9007199254740992.0", "3.0000000000000001", "1e400", "-1e400"),
    *("1e-400", "0.1000000000000000055511151231257827", "12345678901234567e3", "1.0", "-0"),
    *("NaN", "Infinity", "-Infinity", "1.5e308", "2e308", "1e16", "1e22", "0.0001"),
)
PIECES = (
    *("é", "中", "😀", "\uf600", "\U0010ffff", "\x7f", "\u2028", ":", ",", "a", "b", " "),
    *("\\n", '\\"', "\\\\", "\\/", "\\t", "\\u0061", "\\u00E9", "\\ud83d\\ude00"),
    *("\\ud800", "\\udc00", "\ud800", "\x01", "\n"),
)


def _string(rng: random.Random) -> str:
    how = rng.randrange(4)
    if how == 0:
        return json.dumps(rng.choice(NAMES), ensure_ascii=False)
    if how == 1:
        return json.dumps(rng.choice(NAMES))
    if how == 2:
        return '"' + "".join(rng.choice(PIECES) for _ in range(rng.randrange(13))) + '"'
    text = "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(200)))
    return json.dumps(text.replace("\\", "/"), ensure_ascii=False)


def _value(rng: random.Random, depth: int) -> str:
    kind = rng.randrange(6) if depth < 4 else rng.randrange(3)
    if kind == 0:
        return rng.choice(NUMBERS)
    if kind == 1:
        return _string(rng)
    if kind == 2:
        return rng.choice(("true", "false", "null"))
    if kind in (3, 4):
        members = [
            f"{rng.choice(WHITE)}{_string(rng)}{rng.choice(WHITE)}:{rng.choice(WHITE)}"
            f"{_value(rng, depth + 1)}{rng.choice(WHITE)}"
            for _ in range(rng.randrange(7))
        ]
        return "{" + ",".join(members) + rng.choice(WHITE) + "}"
    elements = [
        rng.choice(WHITE) + _value(rng, depth + 1) + rng.choice(WHITE)
        for _ in range(rng.randrange(6))
    ]
    return "[" + ",".join(elements) + rng.choice(WHITE) + "]"


def _chunk(rng: random.Random) -> str:
    delta = {rng.choice(NAMES): rng.choice((None, "x", "é😀", "")) for _ in range(rng.randrange(4))}
    chunk: dict[str, object] = {"choices": [{"delta": delta} for _ in range(rng.randrange(3))]}
    if rng.randrange(2):
        chunk["timings"] = {rng.choice(NAMES): rng.randrange(100) for _ in range(3)}
    if rng.randrange(3) == 0:
        chunk["usage"] = {}
    if rng.randrange(4) == 0:
        chunk["error"] = {"message": "x"}
    return json.dumps(chunk, ensure_ascii=False)


def _escaped_chunk() -> str:
    """A tool call's arguments of many escapes (past 4,096 backslashes)."""
    arguments = json.dumps({"path": "a.txt", "text": 'row "1"\\ é\n' * 2000})
    call = {"function": {"arguments": arguments}}
    return json.dumps({"choices": [{"delta": {"tool_calls": [call]}}], "id": "x", "t": 1.5})


def odd_texts() -> Iterator[str]:
    """JSON texts, mostly valid, sometimes cut, padded, nested deep or spoilt; chunks; a few
    fixed ones each mode treats apart."""
    yield from (
        '{"a":1,"a":2,"\\u0061":3,"b":{"x":1,"y":2}}',
        '{"choices":[],"t":9007199254740993.0}',
        '{"k":"\U0001f600\uf600\uf600 ' + "x" * 200 + '"}',
        '{"a":NaN,"b":1}',
        '{"a":1e400}',
        '{"k":"\x01abcdefghijkl\x02","\x1fk":"\u2028\x02"}',
        *("[1,2]", "{}", '{"a":1}', '""', "[[]]", ' {"a" : "b"} ', '{"k":"\U0001f600x"}'),
        _escaped_chunk(),
    )
    rng = random.Random(20261206)
    for _ in range(1500):
        if rng.randrange(5) == 0:
            yield _chunk(rng)
            continue
        text = rng.choice(WHITE) + _value(rng, 0) + rng.choice(WHITE)
        how = rng.randrange(10)
        if how == 0 and text:  # cut
            text = text[: rng.randrange(len(text))]
        elif how == 1:  # deep, around the limit
            depth = rng.randrange(120, 136)
            opener, closer = rng.choice((("[", "]"), ('{"a":', "}")))
            text = opener * depth + text + closer * depth
        elif how == 2:  # something after the value, or a character spoilt
            text = rng.choice(("", "x", ",", " 1", "}", '"')) + text
            text += rng.choice(("", "x", ",", " 1", "]", "\x00"))
        yield text


#: The functions that take the caller's generator, and whether they take only `rewritable` texts.
WITH_RNG: dict[str, tuple[Callable[[str, random.Random], str], bool]] = {
    "unknown_fields": (modes.unknown_fields, False),
    "hostile_keys": (modes.hostile_keys, False),
    "with_whitespace": (jsontext.with_whitespace, False),
    "with_escapes": (jsontext.with_escapes, False),
    "with_keys_shuffled": (jsontext.with_keys_shuffled, True),
}


def _outcome(change: Callable[[], str]) -> str:
    try:
        return change()
    except Exception as error:  # the same failure counts as the same outcome
        return f"raised {type(error).__name__}"


def _odd_outputs() -> Iterator[str]:
    for number, data in enumerate(odd_texts()):
        for mode in CHANGING:
            for seed in SEEDS:
                at = partial(modes.mutate, seed=seed, case_id="c", step=number)
                yield _outcome(partial(at, mode, data))
        rewritable = jsontext.rewritable(data)
        yield repr(rewritable)
        for name, (change, needs_rewritable) in WITH_RNG.items():
            if needs_rewritable and not rewritable:
                continue
            rng = random.Random(number)
            yield name + _outcome(partial(change, data, rng))
            yield repr(rng.random())  # where the caller's generator was left


ODD_TEXTS_DIGEST = "0ee44577a57123579094c813688f0611"


def test_odd_texts_are_changed_as_before() -> None:
    assert _sha(_odd_outputs()) == ODD_TEXTS_DIGEST


def write_table(suite: Suite) -> None:
    """Write `mode_outputs.tsv` from the modes as they are now."""
    lines = ["# case id, digest of its payloads, digest of every mode's outputs (see the test)"]
    for case in suite.cases():
        lines.append("\t".join((case.case_id, *_line(case))))
    TABLE.write_text("\n".join(lines) + "\n", "utf-8")


if __name__ == "__main__":
    write_table(Suite.open(HERE.parent.parent))
    print(f"wrote {TABLE}; odd texts: {_sha(_odd_outputs())}", file=sys.stderr)
