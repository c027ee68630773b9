"""The model's tags of issue 34's corners mean what the corpus counts: a stream the model says
holds a corner (`harness.fuzz.model.corners`) holds it as tests/corpus_features.py's detector
reads it from the kept case, so docs/spec.md's feature table and the guide's coverage speak of
the same thing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.fuzz.model.breakers import BREAKERS
from harness.fuzz.model.corners import CORNERS
from harness.fuzz.model.draw import Draw
from harness.fuzz.model.expect import expected, kept
from harness.fuzz.model.stream import Stream
from harness.fuzz.model.streams import MADE_BY_BREAKERS, build
from harness.suite.cases import Case
from tests.corpus_features import DETECTORS, View

_CORNERS = [name for name, *_ in CORNERS]


def _detected(stream: Stream, name: str, root: Path, number: int) -> bool:
    case = kept(stream)
    case_id = f"fuzz/s{number}"
    recording = root / "recordings" / f"{case_id}.sse"
    recording.parent.mkdir(parents=True, exist_ok=True)
    recording.write_text(case.text, encoding="utf-8", newline="")
    golden = root / "golden" / f"{case_id}.json"
    golden.parent.mkdir(parents=True, exist_ok=True)
    payloads = stream.payload_records(case.comments)
    document = expected(payloads, stream.thinking_capped, f"{case_id}.sse")
    golden.write_text(json.dumps(document), encoding="utf-8")
    if name in _READS_COMPLETION and not (document.get("finish") or {}).get("completion"):
        return True  # the stream fails at finish (no id, say): no completion to read it from
    return DETECTORS[name](View(Case(case_id, recording, golden), root / "golden"))


#: The corners whose detector reads the completion the golden file holds.
_READS_COMPLETION = frozenset(("length_after_named_piece",))


@pytest.mark.parametrize("name", _CORNERS)
def test_a_corner_the_model_tags_is_one_the_corpus_counts(name: str, tmp_path: Path) -> None:
    if name in MADE_BY_BREAKERS:
        breakers = sorted(b.name for b in BREAKERS.values() if b.feature == name)
        made = [build(Draw(n), BREAKERS[breakers[n * 7 % len(breakers)]]) for n in range(12)]
    else:
        made = [build(Draw(n, frozenset((name,)))) for n in range(12)]
    tagged = [stream for stream in made if name in stream.features]
    assert len(tagged) >= 3, name
    missed = [
        stream.payloads
        for number, stream in enumerate(tagged)
        # A server error ends a stream wherever it comes: the features of the chunks it cut
        # off stay tagged (as drawn), and no completion is built after it.
        if "server_error" not in stream.features and not _detected(stream, name, tmp_path, number)
    ]
    assert missed == [], f"{name}: tagged by the model, not found by its detector"
