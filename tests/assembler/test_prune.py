"""I3 `ignore`'s pruning (`reference.assembler._prune`) against a frozen oracle: the walk of one
token a step it was before runs of brackets inside a cut value were taken at once. Both give the
same text, or the same error, for every payload: deep valid values of arrays and objects, with
whitespace, strings with escapes and lone surrogates, and each of those broken by a character
put in, taken out or changed."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.suite.recording import iter_payloads
from reference.assembler import _KEPT_DEPTH, _TOKEN, InferError, _check_string, _protocol, _prune

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings" / "synthetic"


def oracle(data: str) -> str:
    """`_prune` as it was: one token a step, each checked (the frozen oracle; do not optimize)."""
    out: list[str] = []
    stack: list[str] = []
    expect = "value"
    cut_at = 0
    pos = 0
    while True:
        match = _TOKEN.match(data, pos)
        if match is None:
            if expect == "done" and not data[pos:].strip(" \t\n\r"):
                return "".join(out)
            raise _protocol("not JSON")
        pos = match.end()
        string, _number, _literal, punct = match.groups()
        token = match.group(0)
        if expect == "done":
            raise _protocol("not JSON: text after the value")
        closing = punct in ("]", "}")
        if expect == "colon":
            if punct != ":":
                raise _protocol("not JSON: ':' expected")
            expect = "value"
        elif expect in ("key", "key_first") and string is not None:
            expect = "colon"
        elif (expect == "key_first" and punct == "}") or (expect == "first" and punct == "]"):
            stack.pop()
            expect = "after"
        elif expect in ("value", "first") and not closing and punct not in (":", ","):
            if punct is not None:
                stack.append(punct)
                expect = "first" if punct == "[" else "key_first"
                if not cut_at and len(stack) > _KEPT_DEPTH:
                    cut_at = len(stack)
                    out.append(token[: len(token) - 1] + "null")
            else:
                expect = "after"
        elif expect == "after" and stack and punct == ",":
            expect = "value" if stack[-1] == "[" else "key"
        elif (
            expect == "after" and stack and closing and "[]{}"["[]{}".index(stack[-1]) + 1] == punct
        ):
            stack.pop()
        else:
            raise _protocol("not JSON")
        if string is not None and cut_at:
            _check_string(string)
        if cut_at:
            if len(stack) < cut_at:
                cut_at = 0
        else:
            out.append(token)
        if expect == "after" and not stack:
            expect = "done"


def outcome(prune: object, data: str) -> tuple[str, str]:
    try:
        return ("text", prune(data))  # type: ignore[operator]
    except InferError as exc:
        return ("error", str(exc))


_SPACE = st.sampled_from(["", "", "", " ", "\n\t "])
_LEAF = st.sampled_from(
    ["1", "-0.5e3", "null", "true", '"s"', '"a\\n"', '"\\x"', '"\\ud800"', '"\ud800"', "[]", "{}"]
)
_KEY = st.sampled_from(['"k"', '"a\\"b"', '"\\ud83d"', '"é"'])


@st.composite
def nested(draw: st.DrawFn, depth: int) -> str:
    """A value nested up to `depth` levels, mostly arrays (the runs `_prune` takes at once)."""
    if depth == 0 or draw(st.integers(0, 9)) < 3:
        return draw(_LEAF)
    count = draw(st.sampled_from([0, 1, 1, 1, 2]))
    if draw(st.integers(0, 3)):
        items = [draw(nested(depth - 1)) for _ in range(count)]
        return "[" + draw(_SPACE) + ("," + draw(_SPACE)).join(items) + draw(_SPACE) + "]"
    members = [
        draw(_KEY) + draw(_SPACE) + ":" + draw(_SPACE) + draw(nested(depth - 1))
        for _ in range(count)
    ]
    return "{" + draw(_SPACE) + ",".join(members) + draw(_SPACE) + "}"


@st.composite
def payloads(draw: st.DrawFn) -> str:
    """A chunk-like object holding a deep value, then maybe broken in one to three places."""
    data = '{"x":' + draw(nested(draw(st.integers(5, 40)))) + "}"
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        change = draw(st.sampled_from(["put", "take", "swap"]))
        char = draw(st.sampled_from(list('[]{},:" 1n\\')))
        if change == "put":
            data = data[:at] + char + data[at:]
        else:
            data = data[:at] + (char if change == "swap" else "") + data[at + 1 :]
    return data


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payloads())
def test_pruning_is_the_oracles(data: str) -> None:
    assert outcome(_prune, data) == outcome(oracle, data)


def test_the_deepest_recorded_payload_is_pruned_as_the_oracle_prunes_it() -> None:
    deep = [p.data for p in iter_payloads(RECORDINGS / "r6_nesting_100000.sse")]
    (data,) = [d for d in deep if len(d) > 100_000]
    assert outcome(_prune, data) == outcome(oracle, data)
    assert _prune(data).count("null") >= 1  # cut, not refused
