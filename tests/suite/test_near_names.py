"""The near-names `unknown-fields` adds are fair (no client may refuse them, no rule reads them)
and near (each read field has its case variants, spellings and other levels), and each comes
with a value a client reading it would take for the field's."""

from __future__ import annotations

from typing import Any

import pytest

from harness.check.known_fields import HOSTILE_KEYS, OPENAI_MEMBERS
from harness.check.members import UNKNOWN_NAMES
from harness.fuzz.model.fields import NEIGHBOUR_FIELDS
from harness.suite.confusion import READ_FIELDS
from harness.suite.near_names import LEVELS, NEAR_NAMES, READ_AT, NearName, near_value

EVERY = [near for names in NEAR_NAMES.values() for near in names]
_TYPES = {"string": str, "enum": str, "integer": int, "number": (int, float)}


def test_no_near_name_is_read_or_defined_by_openai_where_it_stands() -> None:
    for near in EVERY:
        assert near.name not in READ_AT[near.level], near
        assert near.name not in OPENAI_MEMBERS.get(near.level, {}), near  # I5, and I7's index
        assert near.name not in HOSTILE_KEYS and near.name not in UNKNOWN_NAMES, near
    assert set(NEAR_NAMES) == set(LEVELS)
    for names in NEAR_NAMES.values():
        assert len({n.name for n in names}) == len(names)


def test_every_read_field_has_its_near_names() -> None:
    for read in READ_FIELDS:
        if "[]" in read.path:
            continue
        level, name = read.level, read.name
        here = {n.name: n.how for n in NEAR_NAMES[level] if n.stands_for == f"{level}.{name}"}
        assert here.get(name.upper()) == "case" and here.get(name.capitalize()) == "case", read
        if "_" in name:
            words = name.split("_")
            camel = words[0] + "".join(w.capitalize() for w in words[1:])
            assert here.get(camel) == "spelling", read
        elsewhere = [n for n in EVERY if n.name == name and n.level != level]
        assert elsewhere, f"{read.path} is never added at another level"
    wanted = [("delta", "reasoning"), ("delta", "thinking"), ("choice", "text"), ("top", "type"),
              ("top", "message"), ("top", "detail"), ("top", "done"), ("choice", "finishReason"),
              ("delta", "rea\u017foning_content")]  # fmt: skip
    for level, name in wanted:
        assert any(n.name == name for n in NEAR_NAMES[level]), (level, name)


@pytest.mark.parametrize("near", EVERY, ids=lambda n: f"{n.level}.{n.name}")
def test_each_value_is_of_the_fields_type_and_unlike_the_objects(near: NearName) -> None:
    level, name = near.stands_for.split(".")
    samples: list[dict[str, Any]] = [{}]
    if level == near.level:  # what the object holds for the field it stands for
        valid = next(f for f in READ_FIELDS if f.path.endswith(f"{level}.{name}") or (
            level == "top" and f.path == name))  # fmt: skip
        samples += [{name: valid.valid}, {name: valid.other}]
    for obj in samples:
        value = near_value(near, obj)
        assert value is not None and value != obj.get(name), (near, obj)
        if near.value is None and near.kind in _TYPES:
            assert isinstance(value, _TYPES[near.kind]) and not isinstance(value, bool), near
            if near.kind == "enum":
                assert value in ("stop", "length")


def test_a_name_another_server_sends_there_gets_a_value_of_that_servers_type() -> None:
    # Never a value a client validating that server's member could refuse (delta.reasoning is a
    # string wherever vLLM sends it).
    for field in NEIGHBOUR_FIELDS:
        for near in NEAR_NAMES.get(field.level, ()):
            if near.name != field.name:
                continue
            sent = {type(v) for v in field.values if v is not None}
            assert type(near_value(near, {})) in sent, (field, near)
