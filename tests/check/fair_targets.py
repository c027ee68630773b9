"""The reference under another allowed outcome at one implementation-defined point: conforming
implementations that differ from the reference only where docs/spec.md section 5 allows it.

`conform run tests/check/fair_targets.py:I3_ignore` runs the reference with I3 `ignore`, and so
on for every point and outcome (names `<point>_<outcome>`). The careful clients (`CAREFUL`) are
written apart from the reference, each around it as a client library is around its JSON reader:
`TypeChecksOpenAI` (I5 `protocol`), `RefusesProto` (I6 `protocol`), `KeepsChoiceZero` (I7
`index0`), `OneChoiceOnly` (I7 `protocol`), `DefaultErrorMessage` (I8 `default`) and `LatestId`
(I9 `latest`).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import msgspec

import reference
from reference.choices import OUTCOMES, REFERENCE
from reference.openai import MEMBERS


def _make(point: str, outcome: str) -> reference.Assembler:
    return reference.Assembler(REFERENCE.replace({point: outcome}))


#: (point, outcome) for every outcome the reference does not take.
OTHERS = [(p, v) for p, values in OUTCOMES.items() for v in values if v != getattr(REFERENCE, p)]

for _point, _outcome in OTHERS:
    globals()[f"{_point}_{_outcome}"] = functools.partial(_make, _point, _outcome)


def _wrong_openai_type(value: Any, level: str) -> bool:
    """True when a member of `value` (an object at `level` of reference.openai.MEMBERS), or of
    an object it holds, has a type OpenAI's schema does not allow. Written apart from the
    reference's own check, as a client would write it from the table."""
    kinds = {
        "string": str,
        "object": dict,
        "array": list,
        "integer": int,
        "number": (int, float),
    }
    for name, member in MEMBERS[level].items():
        found = value.get(name)
        if found is None:
            continue
        if isinstance(found, bool) or not isinstance(found, kinds[member.type]):
            return True
        if member.values and found not in member.values:
            return True
        if member.type == "object" and member.level and _wrong_openai_type(found, member.level):
            return True
        if member.type == "array":
            for item in found:
                if isinstance(item, bool) or not isinstance(item, kinds[member.items]):
                    return True
                if member.level and _wrong_openai_type(item, member.level):
                    return True
    return False


def _objects(value: Any, key: str) -> list[dict[str, Any]]:
    found = value.get(key) if isinstance(value, dict) else None
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def _chunk_of(data: str) -> dict[str, Any] | None:
    """The payload as a chunk, the way a client reads one: a JSON object without an error object
    (a payload with one is no chunk, R8); None for anything else."""
    try:
        chunk = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(chunk, dict) or isinstance(chunk.get("error"), dict):
        return None
    return chunk


def _required_missing(chunk: dict[str, Any]) -> bool:
    """True when `chunk` leaves out (or sets to null) a member OpenAI's schema requires:
    `choices`, or a choice's `delta` or `index`."""
    choices = chunk.get("choices")
    if choices is None:
        return True
    items = choices if isinstance(choices, list) else []
    return any(
        isinstance(choice, dict) and (choice.get("delta") is None or choice.get("index") is None)
        for choice in items
    )


class TypeChecksOpenAI:
    """The reference behind a client that validates the members OpenAI's chunk schema defines
    and the rules do not read, and those it requires (I5 `protocol`), as a pydantic or zod model
    of that schema does."""

    def __init__(self) -> None:
        self._inner = reference.Assembler()

    def push(self, data: str) -> list[Any]:
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):
            chunk = None
        if isinstance(chunk, dict):
            levels = [(chunk, "top")]
            for choice in _objects(chunk, "choices"):
                levels.append((choice, "choice"))
                delta = choice.get("delta")
                if isinstance(delta, dict):
                    levels.append((delta, "delta"))
                    levels += [(call, "tool_call") for call in _objects(delta, "tool_calls")]
            if any(_wrong_openai_type(value, level) for value, level in levels):
                raise reference.InferError(reference.ErrorKind.PROTOCOL, "not OpenAI's schema")
        chunk = _chunk_of(data)
        if chunk is not None and _required_missing(chunk):
            raise reference.InferError(reference.ErrorKind.PROTOCOL, "a required member is missing")
        return self._inner.push(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Refused(Exception):
    pass


def _refuse_proto(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    if any(key == "__proto__" for key, _ in pairs):
        raise _Refused
    return dict(pairs)


class RefusesProto:
    """The reference behind a JSON parser that refuses every member named `__proto__`, as
    secure-json-parse (the Vercel AI SDK's) does by design (I6 `protocol`)."""

    def __init__(self) -> None:
        self._inner = reference.Assembler()

    def push(self, data: str) -> list[Any]:
        try:
            json.loads(data, object_pairs_hook=_refuse_proto)
        except _Refused:
            raise reference.InferError(reference.ErrorKind.PROTOCOL, "__proto__ refused") from None
        except (ValueError, RecursionError):
            pass
        return self._inner.push(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _other_index(choice: Any) -> bool:
    """True for a choice whose `index` is an integer other than 0 (absent, null or another type
    is no index: the chunk's one choice)."""
    if not isinstance(choice, dict):
        return False
    index = choice.get("index")
    return type(index) is int and index != 0


class _Around:
    """A client around the reference: what it does not change is the reference's."""

    def __init__(self) -> None:
        self._inner = reference.Assembler()

    def push(self, data: str) -> list[Any]:
        return self._inner.push(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class KeepsChoiceZero(_Around):
    """A client for one completion (OpenAI's `n` = 1) that reads only the choice with index 0 of
    each chunk and drops the others before the reference sees them (I7 `index0`)."""

    def push(self, data: str) -> list[Any]:
        chunk = _chunk_of(data)
        choices = chunk.get("choices") if chunk is not None else None
        if chunk is not None and isinstance(choices, list) and any(map(_other_index, choices)):
            chunk["choices"] = [choice for choice in choices if not _other_index(choice)]
            data = json.dumps(chunk)
        return self._inner.push(data)


class OneChoiceOnly(_Around):
    """A client that refuses a chunk with more than one choice, or a choice whose index is not 0
    (I7 `protocol`), as one asserting OpenAI's `n` = 1 does."""

    def push(self, data: str) -> list[Any]:
        chunk = _chunk_of(data)
        choices = chunk.get("choices") if chunk is not None else None
        if isinstance(choices, list) and (len(choices) > 1 or any(map(_other_index, choices))):
            raise reference.InferError(reference.ErrorKind.PROTOCOL, "one choice expected")
        return self._inner.push(data)


class DefaultErrorMessage(_Around):
    """A client that gives a server error without a message a text of its own (I8 `default`),
    as openai-python's APIError does."""

    def push(self, data: str) -> list[Any]:
        try:
            return self._inner.push(data)
        except reference.InferError as exc:
            if exc.kind is reference.ErrorKind.SERVER and not exc.message:
                raise reference.InferError(exc.kind, "An error occurred") from None
            raise


class LatestId(_Around):
    """A client whose completion id is the latest non-empty id a chunk carried (I9 `latest`), as
    one that copies each chunk's id onto its result does."""

    def __init__(self) -> None:
        super().__init__()
        self._latest: str | None = None

    def push(self, data: str) -> list[Any]:
        events = self._inner.push(data)
        chunk = _chunk_of(data)
        found = chunk.get("id") if chunk is not None else None
        if isinstance(found, str) and found:
            self._latest = found
        return events

    @property
    def id(self) -> str | None:
        return self._latest

    def finish(self, thinking_capped: bool) -> reference.Completion:
        completion = self._inner.finish(thinking_capped)
        return msgspec.structs.replace(completion, id=self._latest)


#: Careful clients written apart from the reference, each taking another outcome of one point.
CAREFUL = {
    ("I5", "protocol"): "TypeChecksOpenAI",
    ("I6", "protocol"): "RefusesProto",
    ("I7", "index0"): "KeepsChoiceZero",
    ("I7", "protocol"): "OneChoiceOnly",
    ("I8", "default"): "DefaultErrorMessage",
    ("I9", "latest"): "LatestId",
}
