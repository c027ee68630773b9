"""Modes that mean what they say: `unknown-fields` adds only names no OpenAI-compatible server
sends, `hostile-keys` adds the hostile ones, and each catches what it is for; the typed list of
OpenAI's unread members (I5) and the `__proto__` test (I6) find what they say and nothing else."""

from __future__ import annotations

import json
from typing import Any

import pytest

import reference
from harness.check.known_fields import HOSTILE_KEYS, KNOWN_NAMES, OPENAI_MEMBERS
from harness.check.modes import (
    HOSTILE_KEYS_MODE,
    MODES,
    UNKNOWN_FIELDS,
    UNKNOWN_NAMES,
    has_proto_member,
    mutate,
)
from harness.check.options import RunOptions
from harness.check.parallel import run
from harness.check.results import FAILED, PASSED
from harness.drive.inprocess import InProcessDriver
from harness.suite.cases import Suite
from harness.suite.recording import iter_payloads
from reference.choices import REFERENCE
from reference.json_text import read_json
from reference.openai import wrong_type
from tests.miniatures import _Base

TYPES = ("string", "integer", "number", "object", "array")


def _new_members(before: Any, after: Any) -> set[str]:
    """The names of members `after` has beside `before`'s, in the objects they share (what an
    added member holds is its own business)."""
    found: set[str] = set()
    stack = [(before, after)]
    while stack:
        old, new = stack.pop()
        if isinstance(old, dict) and isinstance(new, dict):
            found |= new.keys() - old.keys()
            stack += [(old[k], new[k]) for k in old if k in new]
        elif isinstance(old, list) and isinstance(new, list):
            stack += list(zip(old, new, strict=False))
    return found


def _added(suite: Suite, mode: str) -> set[str]:
    added: set[str] = set()
    for case in suite.cases():
        for step, payload in enumerate(iter_payloads(case.recording)):
            changed = mutate(mode, payload.data, seed=1, case_id=case.case_id, step=step)
            if changed != payload.data:
                added |= _new_members(json.loads(payload.data), json.loads(changed))
    return added


def test_unknown_fields_adds_only_names_no_server_sends(suite: Suite) -> None:
    added = _added(suite, UNKNOWN_FIELDS)
    assert added and added <= set(UNKNOWN_NAMES)
    assert not added & set(KNOWN_NAMES)
    assert not added & set(HOSTILE_KEYS)


def test_hostile_keys_adds_the_hostile_names(suite: Suite) -> None:
    added = _added(suite, HOSTILE_KEYS_MODE)
    assert added <= set(HOSTILE_KEYS) and {"__proto__", "constructor"} <= added


def test_every_known_name_says_where_it_comes_from() -> None:
    assert all(source.strip() for source in KNOWN_NAMES.values())
    for name in ("logprobs", "type", "model", "object", "created", "system_fingerprint",
                 "service_tier", "usage", "refusal", "role", "audio", "function_call", "timings",
                 "prompt_progress"):  # fmt: skip
        assert name in KNOWN_NAMES, name


class ValidatesKnownFields(_Base):
    """Rejects a chunk whose known fields have the wrong type: a strict, correct client."""

    def push(self, data: str) -> list[Any]:
        chunk = json.loads(data) if data.startswith("{") else None
        if isinstance(chunk, dict):
            for choice in chunk.get("choices") or []:
                if isinstance(choice, dict) and not isinstance(choice.get("logprobs"), dict | None):
                    raise ValueError("logprobs must be an object")
            if not isinstance(chunk.get("model", ""), str):
                raise ValueError("model must be a string")
        return super().push(data)


class CopiesMembersOntoObjects(_Base):
    """Copies every top-level member onto a Python object, as `setattr` does: hostile keys win."""

    def push(self, data: str) -> list[Any]:
        chunk = json.loads(data) if data.startswith("{") else None
        if isinstance(chunk, dict):
            holder = type("Chunk", (), {})()
            for key, value in chunk.items():
                if key in ("__class__", "__dict__", "__init__", "__getattr__", "__proto__",
                           "constructor", "prototype", "toString", "valueOf"):  # fmt: skip
                    raise TypeError(f"cannot set {key}")
                setattr(holder, key, value)
        return super().push(data)


def _statuses(suite: Suite, factory: type, mode: str) -> set[str]:
    cases = suite.cases(("llama-server/*",))
    return {
        r.status
        for r in run(cases, InProcessDriver(factory), modes=[mode], options=RunOptions(seed=3))
    }


def test_a_client_validating_real_fields_passes_unknown_fields(suite: Suite) -> None:
    assert _statuses(suite, ValidatesKnownFields, UNKNOWN_FIELDS) == {PASSED}


@pytest.mark.parametrize(
    ("mode", "expected"), [(UNKNOWN_FIELDS, PASSED), (HOSTILE_KEYS_MODE, "crashed")]
)
def test_hostile_keys_is_its_own_mode(suite: Suite, mode: str, expected: str) -> None:
    assert expected in _statuses(suite, CopiesMembersOntoObjects, mode)
    assert HOSTILE_KEYS_MODE in MODES and expected != FAILED


def test_every_typed_openai_member_is_a_known_name_with_a_source() -> None:
    levels = set(OPENAI_MEMBERS)
    for level, members in OPENAI_MEMBERS.items():
        for name, member in members.items():
            assert name in KNOWN_NAMES, (level, name)
            assert member.source.strip() and member.type in TYPES, (level, name)
            assert not member.level or member.level in levels, (level, name)
    for name in ("role", "index", "object", "created", "model", "usage", "logprobs", "type"):
        assert any(name in members for members in OPENAI_MEMBERS.values()), name


def test_unknown_fields_never_adds_an_openai_member(suite: Suite) -> None:
    typed = {name for members in OPENAI_MEMBERS.values() for name in members}
    assert not _added(suite, UNKNOWN_FIELDS) & typed
    assert not set(UNKNOWN_NAMES) & typed


@pytest.mark.parametrize(
    ("payload", "wrong"),
    [
        ('{"model": 7}', "model"),
        ('{"created": 1.5}', "created"),
        ('{"created": true}', "created"),
        ('{"object": "chat.completion"}', "object"),
        ('{"usage": {"completion_tokens_details": {"reasoning_tokens": "1"}}}',
         "usage.completion_tokens_details.reasoning_tokens"),
        ('{"choices": [{"index": "zero"}]}', "choices[0].index"),
        ('{"choices": [{"logprobs": {"content": [{"bytes": [1, "2"]}]}}]}',
         "choices[0].logprobs.content[0].bytes[1]"),
        ('{"choices": [{"delta": {"role": 7}}]}', "choices[0].delta.role"),
        ('{"choices": [{"delta": {"tool_calls": [{"index": 0, "type": 42}]}}]}',
         "choices[0].delta.tool_calls[0].type"),
    ],
)  # fmt: skip
def test_the_reference_under_i5_protocol_finds_each_wrong_type(payload: str, wrong: str) -> None:
    assert wrong_type(read_json(payload, REFERENCE)) == wrong
    with pytest.raises(reference.InferError) as caught:
        reference.Assembler(REFERENCE.replace({"I5": "protocol"})).push(payload)
    assert caught.value.kind == reference.ErrorKind.PROTOCOL and wrong in caught.value.message
    reference.Assembler().push(payload)  # ignored by the reference's own outcome


@pytest.mark.parametrize(
    "payload",
    [
        '{"model": null, "created": 12345678901234567890123, "usage": {"total_tokens": 3}}',
        '{"choices": [{"index": 0, "logprobs": null, "delta": {"role": "tool", "refusal": "no"}}]}',
        '{"choices": [{"delta": {"function_call": {"name": "f", "arguments": "{}"}}}]}',
        '{"service_tier": "flex", "x_model": 7, "choices": [{"delta": {"x_role": 7}}]}',
    ],
)
def test_right_types_and_other_names_pass_i5_protocol(payload: str) -> None:
    assert wrong_type(read_json(payload, REFERENCE)) is None
    reference.Assembler(REFERENCE.replace({"I5": "protocol"})).push(payload)


@pytest.mark.parametrize(
    ("payload", "refused"),
    [
        ('{"__proto__": 1}', True),
        ('{"choices": [{"delta": {"x": [{"__proto__": null}]}}]}', True),
        ('{"\\u005f_proto__": {}}', True),
        ('{"id": "__proto__", "x": ["__proto__"]}', False),
        ('{"__proto": 1, "_proto__": 2}', False),
    ],
)
def test_the_reference_under_i6_protocol_refuses_proto_members_only(
    payload: str, refused: bool
) -> None:
    assert has_proto_member(payload) is refused
    strict = reference.Assembler(REFERENCE.replace({"I6": "protocol"}))
    if refused:
        with pytest.raises(reference.InferError):
            strict.push(payload)
    else:
        strict.push(payload)
    reference.Assembler().push(payload)
