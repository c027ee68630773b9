"""The model of llama-server streams (harness/fuzz/model/): its catalogue, streams and verdicts.

The strategies are checked from outside: every stream's event stream reads back as the payloads
it was built from, every feature of the catalogue is really generated (so the feature table of
docs/spec.md lists nothing the model cannot make), the same seed gives the same streams, and the
expected result of a stream that touches an implementation-defined point has an alternative.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from harness.errors import RecordingError
from harness.fuzz.model import fields
from harness.fuzz.model import streams as streams_module
from harness.fuzz.model.breakers import BREAKERS
from harness.fuzz.model.expect import expected, touched_points, write_case
from harness.fuzz.model.features import BY_NAME, FEATURES, GROUPS
from harness.fuzz.model.jsonwrite import Dup, Raw, dump
from harness.fuzz.model.streams import Stream, drawing, streams
from harness.suite.cases import Case
from harness.suite.golden import build_golden
from harness.suite.recording import PIN_TAGS, iter_payloads, read_info
from reference.choices import OUTCOMES

#: Every rule tag a feature may name: the pin tags, and the points of contract version 3.
_TAGS = {*PIN_TAGS, *OUTCOMES, "I5", "I6"}


class _Enough(BaseException):
    """Raised to stop drawing (not an Exception, so hypothesis does not shrink it)."""


def _draw(
    count: int,
    *,
    seed: int,
    broken: bool | None = None,
    enough: Callable[[list[Stream]], bool] | None = None,
) -> list[Stream]:
    """The first `count` streams of `seed`, as `conform fuzz` draws them; fewer when `enough`
    says the streams drawn so far suffice."""
    drawn: list[Stream] = []

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.generate,),
    )
    @hypothesis_seed(seed)
    @given(streams(broken=broken))
    def collect(stream: Stream) -> None:
        drawn.append(stream)
        if enough is not None and enough(drawn):
            raise _Enough

    with drawing(), contextlib.suppress(_Enough):
        collect()
    return drawn


def test_the_catalogue_is_well_formed() -> None:
    assert len(BY_NAME) == len(FEATURES)
    for feature in FEATURES:
        assert feature.group in GROUPS, feature
        assert feature.rules and set(feature.rules) <= _TAGS, feature
        assert feature.description and feature.name.isidentifier(), feature
    for field in (*fields.NEIGHBOUR_FIELDS, *fields.WRONG_TYPED_KNOWN):
        assert field.feature in BY_NAME, field
        assert field.level in fields.LEVELS and field.source and field.values, field


def test_the_writer_keeps_raw_spellings_and_duplicate_keys() -> None:
    chunk = {Dup("id"): "a", Dup("id"): "b", "n": Raw("1.0"), "t": "é\x00"}
    assert dump(chunk) == '{"id":"a","id":"b","n":1.0,"t":"é\\u0000"}'


def test_each_stream_reads_back_as_its_payloads(tmp_path: Path) -> None:
    for number, stream in enumerate(_draw(40, seed=1, broken=None)):
        path = tmp_path / f"s{number}.sse"
        path.write_text(stream.sse(("a comment", "thinking_capped: true")), newline="")
        assert [p.data for p in iter_payloads(path)] == list(stream.payloads), stream
        assert read_info(path).thinking_capped


def test_every_feature_of_the_catalogue_is_generated() -> None:
    # Valid streams make every feature but the breakers' own; each breaker names its feature.
    # Drawing stops once every feature has been seen (at most 300 streams).
    made_by_breakers = {*streams_module.WRONG_FEATURES.values(), "not_json"}
    made_by_breakers |= set(streams_module.NOT_JSON_FEATURES.values())
    assert made_by_breakers <= set(BY_NAME)
    # Features with drawn=False are the corpus's only, until the model learns them (issue 35).
    broken_group = {f.name for f in FEATURES if f.group == "broken" and f.drawn}
    assert broken_group <= made_by_breakers
    wanted = {f.name for f in FEATURES if f.drawn} - made_by_breakers
    seen: set[str] = set()

    def all_seen(drawn: list[Stream]) -> bool:
        seen.update(drawn[-1].features)
        return wanted <= seen

    drawn = _draw(300, seed=2, broken=False, enough=all_seen)
    assert sorted(wanted - seen) == [], f"not generated in {len(drawn)} streams"


def test_broken_streams_name_their_breaker() -> None:
    # Drawing stops once more than 10 breakers have been seen (23 streams, at most 40).
    def varied(drawn: list[Stream]) -> bool:
        return len({stream.broken for stream in drawn}) > 10

    drawn = _draw(40, seed=6, broken=True, enough=varied)
    assert all(stream.broken in BREAKERS for stream in drawn)
    assert varied(drawn), f"{len({stream.broken for stream in drawn})} breakers in 40 streams"
    assert not any(stream.broken for stream in _draw(10, seed=3, broken=False))


def test_the_same_seed_gives_the_same_streams() -> None:
    first = _draw(10, seed=4)
    assert first == _draw(10, seed=4)
    assert first != _draw(10, seed=5)


def test_a_stream_touching_a_point_has_each_outcome(tmp_path: Path) -> None:
    # `1.0` where an integer is read: I1 `integer` reads it, I1 `protocol` fails the payload.
    stream = Stream(
        payloads=(
            '{"id":"c","choices":[{"delta":{"content":"a"}}],"prompt_progress":{"total":1.0}}',
            '{"choices":[{"delta":{},"finish_reason":"stop"}]}',
        ),
        features=("integral_fraction",),
    )
    case = write_case(stream, tmp_path / "recordings", tmp_path / "golden", "fuzz/x")
    assert touched_points(case.recording, capped=False) == ("I1",)
    golden = expected(case)
    assert golden["pins"] == ["I1"]
    assert [alt["choices"] for alt in golden["alternatives"]] == [[{"I1": "protocol"}]]
    assert golden["alternatives"][0]["steps"][0]["error"] == {"kind": "protocol"}


def test_a_plain_stream_touches_no_point(tmp_path: Path) -> None:
    stream = Stream(
        payloads=('{"id":"c","choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}',),
        features=("content_run",),
    )
    case = write_case(stream, tmp_path / "recordings", tmp_path / "golden", "fuzz/x")
    assert touched_points(case.recording, capped=False) == ()
    assert "alternatives" not in expected(case)


_DEEP = "[" * 130 + "]" * 130


def test_a_point_that_matters_only_beside_another_is_pinned_too(tmp_path: Path) -> None:
    # Payload 0 holds an integer beyond 2^53: I2 `protocol` fails there. Only when it is read
    # (I2 `exact`) does payload 1, nested too deep in an ignored member, meet I3. A target taking
    # I2=exact and I3=ignore (Go's encoding/json does) must find its outcome among the golden's.
    stream = Stream(
        payloads=(
            '{"id":"c","prompt_progress":{"total":9007199254740993}}',
            '{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}],"x":' + _DEEP + "}",
        ),
        features=("big_integer", "deep_ignored_value"),
    )
    case = write_case(stream, tmp_path / "recordings", tmp_path / "golden", "fuzz/x")
    assert touched_points(case.recording, capped=False) == ("I2",)  # each point alone
    assert touched_points(case.recording, capped=False, candidates=("I2", "I3")) == ("I2", "I3")
    golden = expected(case)
    assert golden["pins"] == ["I2", "I3"]
    taken = [c for alt in golden["alternatives"] for c in alt["choices"]]
    assert {"I2": "exact", "I3": "ignore"} in taken


def test_a_pin_that_never_matters_is_still_refused(tmp_path: Path) -> None:
    recording = tmp_path / "recordings" / "x.sse"
    recording.parent.mkdir()
    recording.write_text(
        ': pins: I3\ndata: {"id":"c","choices":[{"delta":{},"finish_reason":"stop"}]}\n\n'
    )
    case = Case("x", recording, tmp_path / "golden" / "x.json")
    with pytest.raises(RecordingError, match="pins I3, but every outcome of I3"):
        build_golden(case)


def test_the_streams_of_a_seed_do_not_depend_on_the_modules_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Hypothesis would draw literals of the modules loaded from outside site-packages (a target's
    # own): the same seed must give the same streams whatever target is loaded, and from where.
    before = _draw(6, seed=8)
    literals = "\n".join(
        f"N{i} = {i * 7919 + 3}\nS{i} = 'literal {i} of a target'" for i in range(300)
    )
    (tmp_path / "target_with_literals.py").write_text(literals + "\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("target_with_literals")
    assert _draw(6, seed=8) == before
    assert not (tmp_path / ".hypothesis").exists()


def test_drawing_keeps_hypothesis_storage_out_of_the_current_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from hypothesis.configuration import storage_directory

    monkeypatch.delenv("HYPOTHESIS_STORAGE_DIRECTORY", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    outside = storage_directory("x").path
    with drawing():
        assert storage_directory("x").path == tmp_path / "conform" / "hypothesis" / "x"
    assert storage_directory("x").path == outside
