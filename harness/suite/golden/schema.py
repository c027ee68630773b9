"""Checking a golden file against its JSON Schema (`harness/schemas/golden.schema.json`).

The schema is the one statement of what a golden file may hold; `golden_problem` is the one
function that applies it, whether a file is read whole (`harness.suite.golden`) or a step at a time
(`harness.suite.golden.stream`). Anything the schema does not allow, an extra key inside a step
included, is a setup error naming the file and the JSON path, never a mismatch blamed on the
target.

conform must not need `jsonschema` at run time, so the schema is compiled here into checks for the
part of JSON Schema it uses: `type`, `const`, `enum`, `minimum`, `properties`, `required`,
`additionalProperties: false`, `items`, `oneOf` and local `$ref`. The tests check that `jsonschema`
and this agree on every shipped golden file and on broken ones. To extend the format (a new schema
version), change the schema; a keyword this module does not know stops it at load time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from harness.errors import GoldenError

#: A problem: the JSON path of the value (`$.steps[3].state`) and what is wrong with it.
Problem = tuple[str, str]
_Check = Callable[[Any, tuple[str | int, ...]], "Problem | None"]

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_IGNORED = frozenset({"$schema", "title", "description", "$defs"})


def json_path(parts: tuple[str | int, ...]) -> str:
    """`("steps", 3, "state")` as `$.steps[3].state`."""
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


class _Compiler:
    def __init__(self, root: dict[str, Any]) -> None:
        self._root = root
        self._refs: dict[str, _Check] = {}

    def compile(self, schema: dict[str, Any]) -> _Check:
        unknown = set(schema) - _IGNORED - _KEYWORDS
        if unknown:
            raise ValueError(
                f"the golden schema uses {sorted(unknown)}, which conform cannot check"
            )
        checks: list[_Check] = []
        if "$ref" in schema:
            checks.append(self._ref(schema["$ref"]))
        if "type" in schema:
            checks.append(_type_check(schema["type"]))
        if "const" in schema:
            checks.append(_enum_check([schema["const"]]))
        if "enum" in schema:
            checks.append(_enum_check(schema["enum"]))
        if "minimum" in schema:
            checks.append(_minimum_check(schema["minimum"]))
        if {"properties", "required", "additionalProperties"} & set(schema):
            checks.append(self._object(schema))
        if "items" in schema:
            checks.append(self._items(schema["items"]))
        if "oneOf" in schema:
            checks.append(self._one_of(schema["oneOf"]))
        if len(checks) == 1:
            return checks[0]

        def check_all(value: Any, at: tuple[str | int, ...]) -> Problem | None:
            for check in checks:
                problem = check(value, at)
                if problem is not None:
                    return problem
            return None

        return check_all

    def _ref(self, ref: str) -> _Check:
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"the golden schema refers to {ref!r}; only #/$defs/... is known")
        name = ref.removeprefix("#/$defs/")

        def check_ref(value: Any, at: tuple[str | int, ...]) -> Problem | None:
            found = self._refs.get(name)
            if found is None:  # compiled on first use, so definitions may refer to each other
                found = self._refs[name] = self.compile(self._root["$defs"][name])
            return found(value, at)

        return check_ref

    def _object(self, schema: dict[str, Any]) -> _Check:
        properties = {key: self.compile(sub) for key, sub in schema.get("properties", {}).items()}
        required = tuple(schema.get("required", ()))
        closed = schema.get("additionalProperties", True) is False

        def check_object(value: Any, at: tuple[str | int, ...]) -> Problem | None:
            if not isinstance(value, dict):
                return None  # `type` says so, when the schema asks
            for key in required:
                if key not in value:
                    return json_path(at), f"'{key}' is missing"
            for key, item in value.items():
                check = properties.get(key)
                if check is None:
                    if closed:
                        return json_path((*at, key)), f"unexpected key '{key}'"
                    continue
                problem = check(item, (*at, key))
                if problem is not None:
                    return problem
            return None

        return check_object

    def _items(self, schema: dict[str, Any]) -> _Check:
        check_item = self.compile(schema)

        def check_items(value: Any, at: tuple[str | int, ...]) -> Problem | None:
            if not isinstance(value, list):
                return None
            for index, item in enumerate(value):
                problem = check_item(item, (*at, index))
                if problem is not None:
                    return problem
            return None

        return check_items

    def _one_of(self, branches: list[dict[str, Any]]) -> _Check:
        """The branches of a golden file's unions are disjoint, so the first that holds decides.

        When none holds, the problem shown is the one of the branch the value most resembles:
        the one whose required keys and constants it has, else the one that failed deepest.
        """
        checks = [self.compile(branch) for branch in branches]
        shapes = [_shape(branch, self._root) for branch in branches]

        def check_one_of(value: Any, at: tuple[str | int, ...]) -> Problem | None:
            best: tuple[tuple[bool, int], Problem] | None = None
            for check, shape in zip(checks, shapes, strict=True):
                problem = check(value, at)
                if problem is None:
                    return None
                rank = (shape(value), problem[0].count(".") + problem[0].count("["))
                if best is None or rank > best[0]:
                    best = (rank, problem)
            assert best is not None
            return best[1]

        return check_one_of


_KEYWORDS = frozenset(
    {"$ref", "type", "const", "enum", "minimum", "properties", "required"}
    | {"additionalProperties", "items", "oneOf"}
)


def _shape(schema: dict[str, Any], root: dict[str, Any]) -> Callable[[Any], bool]:
    """Whether a value has a branch's required keys and constant members (its look, not its
    content)."""
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].removeprefix("#/$defs/")]
    required = tuple(schema.get("required", ()))
    consts = {
        key: sub["const"] for key, sub in schema.get("properties", {}).items() if "const" in sub
    }

    def looks_like(value: Any) -> bool:
        return (
            isinstance(value, dict)
            and all(key in value for key in required)
            and all(value.get(key) == const for key, const in consts.items())
        )

    return looks_like


def _type_check(names: str | list[str]) -> _Check:
    tests = [_TYPES[name] for name in ([names] if isinstance(names, str) else names)]
    wanted = names if isinstance(names, str) else " or ".join(names)

    def check_type(value: Any, at: tuple[str | int, ...]) -> Problem | None:
        if any(test(value) for test in tests):
            return None
        return json_path(at), f"{_shown(value)} is not of type {wanted}"

    return check_type


def _enum_check(allowed: list[Any]) -> _Check:
    # Compared with their types: `true` is not `1`, and `1.0` is not the schema's `1`.
    keys = {(type(v), v) for v in allowed}
    shown = ", ".join(json.dumps(v) for v in allowed)

    def check_enum(value: Any, at: tuple[str | int, ...]) -> Problem | None:
        try:
            if (type(value), value) in keys:
                return None
        except TypeError:  # an object or array: never a constant of this schema
            pass
        return json_path(at), f"{_shown(value)} is not {'one of ' if len(keys) > 1 else ''}{shown}"

    return check_enum


def _minimum_check(minimum: float) -> _Check:
    def check_minimum(value: Any, at: tuple[str | int, ...]) -> Problem | None:
        if isinstance(value, int | float) and not isinstance(value, bool) and value < minimum:
            return json_path(at), f"{value} is less than {minimum}"
        return None

    return check_minimum


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"


@cache
def golden_schema() -> dict[str, Any]:
    """The golden file's JSON Schema, as shipped in `harness/schemas/golden.schema.json`."""
    from importlib import resources  # here: tempfile, zipfile and all, for the schema alone

    text = resources.files("harness").joinpath("schemas/golden.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _checker(part: str | None) -> _Check:
    root = golden_schema()
    compiler = _Compiler(root)
    return compiler.compile(root if part is None else {"$ref": f"#/$defs/{part}"})


def golden_problem(
    value: Any, *, part: str | None = None, at: tuple[str | int, ...] = ()
) -> Problem | None:
    """What is wrong with a golden document, or None when the schema allows it.

    `part` names one of the schema's definitions (`step`, `finish`) to check a piece on its own,
    found at `at` in the document (a streamed file's step: `part="step", at=("steps", 7)`).
    """
    return _checker(part)(value, at)


def check_golden(
    path: Path,
    value: Any,
    *,
    part: str | None = None,
    at: tuple[str | int, ...] = (),
    line: int | None = None,
    hint: str | None = None,
) -> None:
    """GoldenError naming `path` and the JSON path when `value` breaks the golden schema.

    `line`, when known, is the file's line where the piece starts (a streamed step).
    """
    problem = golden_problem(value, part=part, at=at)
    if problem is None:
        return
    where, what = problem
    near = f" (near line {line})" if line is not None else ""
    raise GoldenError(
        path,
        f"does not follow the golden file schema at {where}{near}: {what}",
        hint=hint or "golden files are generated: run 'conform golden update' and review the diff",
    )
