"""The msgspec types compiled from the golden schema accept exactly what the schema allows.

Checked both ways against `golden_schema.golden_problem` (itself checked against jsonschema in
tests/hostile/test_hostile.py): on every shipped golden file, and on every single-point break of a
few files that between them hold every kind of step, event, error, finish and choice: each value
replaced by values of other types, each member removed, an unknown member added to each object.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from harness.suite.golden.schema import golden_problem
from harness.suite.golden.types import decode_typed, golden_type
from tests.folds import each

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "golden"
#: Between them: progress, reasoning, content and tool-call events, error steps of each kind,
#: a server error at finish, choices and alternatives.
SAMPLES = [
    "llama-server/progress_cached_prompt",
    "synthetic/r7_unknown_fields_everywhere",
    "synthetic/r8_server_error_mid_stream",
    "synthetic/r9_pitfall_big_integer_rounded",
    "synthetic/r5_tool_call_never_id",
]
#: Replacements that between them break (or keep) every type the schema uses.
OTHERS: list[Any] = ["x", "", 0, 1, -1, 1.5, 2.0, True, False, None, [], {}, ["R1"], {"a": 1}]


def _encode(document: Any) -> bytes:
    # Compact (json's C encoder): how the text is spaced means nothing to the typed decode.
    return json.dumps(document, ensure_ascii=False).encode()


def _typed_accepts(document: Any) -> bool:
    return decode_typed(_encode(document)) is not None


def _decodes_to_what_json_reads(path: Path) -> None:
    data = path.read_bytes()
    typed = decode_typed(data)
    assert typed == json.loads(data)
    assert list(typed) == list(json.loads(data))  # the file's key order


def test_every_shipped_golden_file_decodes_to_what_json_reads() -> None:
    paths = sorted(GOLDEN.rglob("*.json"))
    each(
        [(path.relative_to(GOLDEN).as_posix(), path) for path in paths], _decodes_to_what_json_reads
    )


def _places(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _places(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):  # the first few items stand for the rest
            yield from _places(item, (*at, index))


def _at(document: Any, at: tuple[Any, ...]) -> Any:
    for part in at:
        document = document[part]
    return document


def _breaks(document: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for at in _places(document):
        if not at:
            continue
        parent, key = _at(document, at[:-1]), at[-1]
        for other in OTHERS:
            changed, copied = _copied_down_to(document, at[:-1])
            copied[key] = copy.deepcopy(other)
            yield f"{at} = {other!r}", changed
        changed, copied = _copied_down_to(document, at[:-1])
        del copied[key]
        yield f"{at} removed", changed
        if isinstance(parent, dict):
            changed, copied = _copied_down_to(document, at[:-1])
            copied["unknown"] = 1
            yield f"{at[:-1]} + unknown", changed


def _copied_down_to(document: Any, at: tuple[Any, ...]) -> tuple[Any, Any]:
    """A copy of `document` that shares everything with it but the containers on the way to
    `at`, copied (so a change to the last of them leaves `document` as it is); and that one."""
    changed = node = copy.copy(document)
    for part in at:
        node[part] = copy.copy(node[part])
        node = node[part]
    return changed, node


@pytest.mark.parametrize("case_id", SAMPLES)
def test_the_types_and_the_schema_agree_on_every_break(case_id: str) -> None:
    document = json.loads((GOLDEN / f"{case_id}.json").read_text())
    checked = refused = 0
    for what, broken in _breaks(document):
        allowed = golden_problem(broken) is None
        assert _typed_accepts(broken) == allowed, what
        checked += 1
        refused += not allowed
    assert refused > 50 and checked > refused  # both sides of the line were tried


def test_a_step_that_mixes_two_shapes_is_refused() -> None:
    step = {"line": 3, "error": {"kind": "protocol"}, "events": []}
    assert golden_problem(step, part="step") is not None
    assert decode_typed(json.dumps(step).encode(), "step") is None
    del step["events"]
    assert decode_typed(json.dumps(step).encode(), "step") == step


def test_types_follow_the_schema_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """The types are built from the schema, not written beside it: a new enum value is taken."""
    from harness.suite.golden import schema as golden_schema
    from harness.suite.golden import types as golden_types

    schema = copy.deepcopy(golden_schema.golden_schema())
    schema["$defs"]["error"]["oneOf"][0]["properties"]["kind"]["enum"].append("new_kind")
    for cached in (golden_types._compiler, golden_types.golden_type, golden_types.decoder):
        cached.cache_clear()
    monkeypatch.setattr(golden_types, "golden_schema", lambda: schema)
    try:
        step = b'{"line": 1, "error": {"kind": "new_kind"}}'
        assert decode_typed(step, "step") == {"line": 1, "error": {"kind": "new_kind"}}
        assert issubclass(golden_type(), msgspec.Struct)
    finally:
        monkeypatch.undo()
        for cached in (golden_types._compiler, golden_types.golden_type, golden_types.decoder):
            cached.cache_clear()
    assert decode_typed(step, "step") is None


def test_merged_objects_the_walk_cannot_reach_are_checked_as_they_are_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step inside a union (here: a step or null) is checked by its Struct's `__post_init__`
    instead of the walk after decoding: the same documents are refused."""
    from harness.suite.golden import schema as golden_schema
    from harness.suite.golden import types as golden_types

    schema = copy.deepcopy(golden_schema.golden_schema())
    schema["properties"]["steps"]["items"] = {"oneOf": [{"$ref": "#/$defs/step"}, {"type": "null"}]}
    caches = (golden_types._compiler, golden_types._checking_compiler, golden_types.golden_type,
              golden_types.decoder)  # fmt: skip
    for cached in caches:
        cached.cache_clear()
    monkeypatch.setattr(golden_types, "golden_schema", lambda: schema)
    try:
        document = json.loads((GOLDEN / f"{SAMPLES[0]}.json").read_text())
        assert decode_typed(_encode(document)) == document
        assert golden_types.check() is None  # the walk cannot reach them: no walk
        document["steps"][0]["error"] = {"kind": "protocol"}  # both shapes at once
        assert decode_typed(_encode(document)) is None
        del document["steps"][0]["error"]
        document["steps"].append(None)
        assert decode_typed(_encode(document)) == document
    finally:
        monkeypatch.undo()
        for cached in caches:
            cached.cache_clear()
    assert golden_types.check() is not None
