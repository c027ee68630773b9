"""The model of llama-server streams (harness/fuzz/model/): its catalogue, streams and verdicts.

The model is checked from outside: every stream's event stream reads back as the payloads (and
lines) it was built from, every feature of the catalogue is made when the guide wants it (so the
feature table of docs/spec.md lists nothing the model cannot make), every breaker breaks a stream
in the place it names, the same seed gives the same streams, and the expected result worked out in
memory is the golden file `conform golden update` would write for the same recording.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.fuzz.model import fields
from harness.fuzz.model.breakers import BREAKERS
from harness.fuzz.model.draw import Draw
from harness.fuzz.model.expect import expected, kept, touched_points, with_alternatives
from harness.fuzz.model.features import BY_NAME, FEATURES, GROUPS
from harness.fuzz.model.jsonwrite import Dup, Raw, Style, dump
from harness.fuzz.model.stream import Stream
from harness.fuzz.model.streams import MADE_BY_BREAKERS, build
from harness.suite.cases import Case
from harness.suite.golden import build_golden
from harness.suite.recording import PIN_TAGS, iter_payloads, read_info
from reference.choices import OUTCOMES
from tests.folds import each

#: Every rule tag a feature may name: the pin tags, and the points of contract version 3.
_TAGS = {*PIN_TAGS, *OUTCOMES, "I5", "I6"}
#: Features with drawn=False are the shipped corpus's only, until the model learns them.
_DRAWABLE = [f.name for f in FEATURES if f.name not in MADE_BY_BREAKERS and f.drawn]


def streams(count: int, *, seed: int = 0, broken: bool = True) -> list[Stream]:
    """`count` streams, every other one broken by each breaker in turn."""
    names = sorted(BREAKERS)
    found = []
    for number in range(count):
        breaker = BREAKERS[names[number % len(names)]] if broken and number % 2 else None
        found.append(build(Draw(seed * 100_000 + number), breaker))
    return found


def test_the_catalogue_is_well_formed() -> None:
    assert len(BY_NAME) == len(FEATURES)
    for feature in FEATURES:
        assert feature.group in GROUPS, feature
        assert feature.rules and set(feature.rules) <= _TAGS, feature
        assert feature.description and feature.name.isidentifier(), feature
    for field in (*fields.NEIGHBOUR_FIELDS, *fields.WRONG_TYPED_KNOWN):
        assert field.feature in BY_NAME, field
        assert field.level in fields.LEVELS and field.source and field.values, field
    for breaker in BREAKERS.values():
        assert breaker.feature in BY_NAME, breaker
        assert (breaker.shape is None) != (breaker.text is None), breaker


def test_the_writer_keeps_raw_spellings_and_duplicate_keys() -> None:
    chunk = {Dup("id"): "a", Dup("id"): "b", "n": Raw("1.0"), "t": "é\x00", "l": [Raw("-0")]}
    assert dump(chunk) == '{"id":"a","id":"b","n":1.0,"t":"é\\u0000","l":[-0]}'
    spaced = Style(ascii=True, item=", ", key=": ")
    assert dump({"t": "é", "n": Raw("1e0")}, spaced) == '{"t": "\\u00e9", "n": 1e0}'


def test_the_writer_writes_what_the_json_module_writes() -> None:
    for stream in streams(60):
        for payload in stream.payloads:
            try:
                value = json.loads(payload, parse_constant=_refuse)
            except (ValueError, RecursionError):  # not JSON, NaN, the infinities, too deep
                continue
            if isinstance(value, dict) and "__proto__" not in payload and ".0" not in payload:
                assert json.loads(dump(value)) == value


def _refuse(constant: str) -> None:
    raise ValueError(constant)


def test_each_stream_reads_back_as_its_payloads_and_lines(tmp_path: Path) -> None:
    for number, stream in enumerate(streams(200)):
        path = tmp_path / f"s{number}.sse"
        comments = ("a comment", "thinking_capped: true")
        path.write_text(stream.sse(comments), encoding="utf-8", newline="")
        assert list(iter_payloads(path)) == stream.payload_records(len(comments)), stream
        assert read_info(path).thinking_capped


def _made_when_wanted(name: str) -> None:
    made = [name in build(Draw(seed, frozenset((name,)))).features for seed in range(12)]
    assert any(made), "no stream wanting it holds it"
    assert sum(made) >= 3, f"only {sum(made)} of 12 streams wanting it hold it"


def test_every_feature_is_made_when_wanted() -> None:
    # The guide asks for a feature no stream held yet (harness.fuzz.guide): within a few tries
    # a stream wanting it holds it, so the catalogue lists nothing the model cannot make.
    each([(name, name) for name in _DRAWABLE], _made_when_wanted)


def test_every_feature_only_a_breaker_makes_is_made_by_one() -> None:
    assert {b.feature for b in BREAKERS.values()} >= MADE_BY_BREAKERS
    assert {f.name for f in FEATURES if f.group == "broken" and f.drawn} <= MADE_BY_BREAKERS


def _breaks_the_stream_it_names(name: str) -> None:
    stream = build(Draw(7), BREAKERS[name])
    assert stream.broken == name
    assert BREAKERS[name].feature in stream.features


def test_each_breaker_breaks_the_stream_it_names() -> None:
    each([(name, name) for name in sorted(BREAKERS)], _breaks_the_stream_it_names)


def test_the_same_seed_gives_the_same_streams() -> None:
    first = streams(20, seed=4)
    assert first == streams(20, seed=4)
    assert first != streams(20, seed=5)
    wanted = frozenset(("tool_calls_many", "sse_line_ends"))
    assert build(Draw(3, wanted)) == build(Draw(3, wanted))


def test_the_expected_result_is_the_golden_file_of_the_kept_case(tmp_path: Path) -> None:
    # In memory (the fuzz run's check) and from the written recording (conform golden update)
    # alike, alternatives and pins included.
    for number, stream in enumerate(streams(80, seed=2)):
        case = kept(stream, notes=("a note",))
        recording = tmp_path / "recordings" / "fuzz" / f"s{number}.sse"
        recording.parent.mkdir(parents=True, exist_ok=True)
        recording.write_text(case.text, encoding="utf-8", newline="")
        written = Case(f"fuzz/s{number}", recording, tmp_path / "golden" / f"s{number}.json")
        payloads = stream.payload_records(case.comments)
        name = written.recording_name
        memory = with_alternatives(payloads, stream.thinking_capped, name, case.pins)
        assert memory == build_golden(written), stream


def test_a_stream_touching_a_point_has_each_outcome() -> None:
    # `1.0` where an integer is read: I1 `integer` reads it, I1 `protocol` fails the payload.
    stream = Stream(
        payloads=(
            '{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}],"prompt_progress":{"total":1.0}}',
            '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
        ),
        features=("integral_fraction",),
    )
    payloads = stream.payload_records()
    assert touched_points(payloads, False) == ("I1",)
    golden = with_alternatives(payloads, False, "x.sse", ["I1"])
    assert golden["pins"] == ["I1"]
    assert [alt["choices"] for alt in golden["alternatives"]] == [[{"I1": "protocol"}]]
    assert golden["alternatives"][0]["steps"][0]["error"] == {"kind": "protocol"}


def test_a_plain_stream_touches_no_point() -> None:
    stream = Stream(
        payloads=(
            '{"id":"c","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}',
        ),
        features=("content_run",),
    )
    payloads = stream.payload_records()
    assert touched_points(payloads, False) == ()
    assert "alternatives" not in expected(payloads, False, "x.sse")


_DEEP = "[" * 130 + "]" * 130


def test_a_point_that_matters_only_beside_another_is_pinned_too() -> None:
    # Payload 0 holds an integer beyond 2^53: I2 `protocol` fails there. Only when it is read
    # (I2 `exact`) does payload 1, nested too deep in an ignored member, meet I3. A target taking
    # I2=exact and I3=ignore (Go's encoding/json does) must find its outcome among the golden's.
    stream = Stream(
        payloads=(
            '{"id":"c","prompt_progress":{"total":9007199254740993}}',
            '{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}],"x":'
            + _DEEP
            + "}",
        ),
        features=("big_integer", "deep_ignored_value"),
    )
    payloads = stream.payload_records()
    assert touched_points(payloads, False) == ("I2",)  # each point alone
    assert touched_points(payloads, False, candidates=("I2", "I3")) == ("I2", "I3")
    golden = with_alternatives(payloads, False, "x.sse", ["I2", "I3"])
    taken = [c for alt in golden["alternatives"] for c in alt["choices"]]
    assert {"I2": "exact", "I3": "ignore"} in taken
