"""The reference under another allowed outcome at one implementation-defined point: conforming
implementations that differ from the reference only where docs/spec.md section 5 allows it.

`conform run tests/check/fair_targets.py:I3_ignore` runs the reference with I3 `ignore`, and so
on for every point and outcome (names `<point>_<outcome>`). `TypeChecksOpenAI` and
`RefusesProto` are careful clients written apart from the reference (I5 and I6 `protocol`).
"""

from __future__ import annotations

import functools
import json
from typing import Any

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


class TypeChecksOpenAI:
    """The reference behind a client that validates the members OpenAI's chunk schema defines
    and the rules do not read (I5 `protocol`), as a pydantic or zod model of that schema does."""

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


#: Careful clients written apart from the reference, each taking the other outcome of one point.
CAREFUL = {"I5": "TypeChecksOpenAI", "I6": "RefusesProto"}
