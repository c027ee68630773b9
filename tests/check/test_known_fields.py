"""Modes that mean what they say: `unknown-fields` adds only names no OpenAI-compatible server
sends, `hostile-keys` adds the hostile ones, and each catches what it is for; the typed list of
OpenAI's unread members (I5) and the `__proto__` test (I6) find what they say and nothing else."""

from __future__ import annotations

import functools
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
from harness.suite.near_names import NEAR_NAMES
from harness.suite.recording import iter_payloads
from reference.choices import REFERENCE
from reference.json_text import read_json
from reference.openai import wrong_type
from tests.miniatures import _Base

TYPES = ("string", "integer", "number", "object", "array")


def _added(suite: Suite, mode: str) -> set[str]:
    return {name for _, name in _added_at(suite, mode)}


def _levels(chunk: Any) -> list[tuple[str, dict[str, Any]]]:
    """The objects of a decoded chunk at the levels members are added at, with their level."""
    if not isinstance(chunk, dict):
        return []
    found = [("top", chunk)]
    found += [(key, chunk[key]) for key in ("timings", "prompt_progress", "usage", "error")
              if isinstance(chunk.get(key), dict)]  # fmt: skip
    for choice in chunk.get("choices") or [] if isinstance(chunk.get("choices"), list) else []:
        if not isinstance(choice, dict):
            continue
        found.append(("choice", choice))
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            continue
        found.append(("delta", delta))
        calls = delta.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                found.append(("tool_call", call))
                if isinstance(call.get("function"), dict):
                    found.append(("function", call["function"]))
    return found


@functools.cache
def _added_at(suite: Suite, mode: str) -> frozenset[tuple[str, str]]:
    """(level, name) of every member `mode` adds to the shipped suite's payloads (seed 1)."""
    added: set[tuple[str, str]] = set()
    for case in suite.cases():
        for step, payload in enumerate(iter_payloads(case.recording)):
            changed = mutate(mode, payload.data, seed=1, case_id=case.case_id, step=step)
            if changed == payload.data:
                continue
            old, new = _levels(json.loads(payload.data)), _levels(json.loads(changed))
            for (level, before), (_, after) in zip(old, new, strict=True):
                added |= {(level, name) for name in after.keys() - before.keys()}
    return frozenset(added)


def test_unknown_fields_adds_invented_names_and_near_names(suite: Suite) -> None:
    added = _added_at(suite, UNKNOWN_FIELDS)
    invented = {name for _, name in added if name in UNKNOWN_NAMES}
    near = added - {(level, name) for level, name in added if name in UNKNOWN_NAMES}
    assert invented == set(UNKNOWN_NAMES)
    assert not invented & set(KNOWN_NAMES) and not invented & set(HOSTILE_KEYS)
    every_near = {(n.level, n.name) for names in NEAR_NAMES.values() for n in names}
    assert near <= every_near
    assert len(near) > 0.9 * len(every_near)  # nearly every one, in one seed's pass


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


def test_unknown_fields_never_adds_an_openai_member_where_it_stands(suite: Suite) -> None:
    # Where OpenAI's schema defines a member, a client may type-check it (I5) and choices[].index
    # means something (I7): a name defined at another level is an unknown member here.
    typed = {(level, name) for level, members in OPENAI_MEMBERS.items() for name in members}
    assert not _added_at(suite, UNKNOWN_FIELDS) & typed
    assert not {name for _, name in typed} & set(UNKNOWN_NAMES)


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
        '{"model": null, "created": 12345678901234567890, "usage": {}, "choices": []}',
        '{"choices": [{"index": 0, "logprobs": null, "delta": {"role": "tool", "refusal": "no"}}]}',
        '{"choices": [{"index": 0, "delta": {"function_call": {"name": "f", "arguments": "{}"}}}]}',
        '{"service_tier": "flex", "x_model": 7, "choices": [{"index": 0, "delta": {"x_role": 7}}]}',
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
