"""The golden schema as msgspec types: a golden file validated at C speed while it is decoded.

`harness/schemas/golden.schema.json` stays the one statement of what a golden file may hold: this
module compiles it, once, into msgspec Structs (an object with `additionalProperties: false` is a
Struct that forbids unknown fields; `const` and `enum` are `Literal`s; `minimum` is a `Meta`
bound; a `oneOf` of objects that share a constant member is a tagged union). msgspec cannot hold
a union of objects told apart only by their keys (a step is `events` + `state` or `error`), so
such a `oneOf` becomes one Struct of every branch's members, all optional; once the document is
decoded, the members present in each such object are checked to be one branch's, in a few C calls
per list of them (`check(part)`; a schema where such an object stands where this walk cannot reach
it gets a `__post_init__` that checks each object as it is made instead). `decoder(part)` decodes
a whole golden file or one of the schema's definitions (a streamed file's `step`).

A document these types accept is one the schema allows (`tests/suite/golden/test_types.py`
checks both ways on every shipped golden file and on broken ones); what they refuse is then
explained by
`harness.suite.golden.schema`, whose messages name the JSON path in the schema's own terms.
"""

from __future__ import annotations

import keyword
import operator
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec
from msgspec.structs import astuple

from harness.suite.golden.schema import golden_schema

_SCALARS: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": Union[int, float],  # noqa: UP007 (a runtime union of types, built from names)
    "boolean": bool,
    "null": type(None),
}
_UNSET = msgspec.UNSET


class _Compiler:
    """Builds one msgspec type per schema node; each `$defs` entry is built once."""

    def __init__(self, root: dict[str, Any], *, post_init: bool = False) -> None:
        self._root = root
        self._defs: dict[str, Any] = {}
        self._names: set[str] = set()
        self._post_init = post_init  # check each merged Struct as it is made (else: `check`)
        #: Each merged Struct: the member names (in order) of each shape it may take.
        self.shapes: dict[Any, frozenset[tuple[str, ...]]] = {}
        self.checks: dict[str | None, Any] = {}  # `_compiled`'s, by part

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = self._root["$defs"][schema["$ref"].removeprefix("#/$defs/")]
        return schema

    def type_of(self, schema: dict[str, Any], name: str) -> Any:
        if "$ref" in schema:
            ref = schema["$ref"].removeprefix("#/$defs/")
            if ref not in self._defs:
                self._defs[ref] = self.type_of(self._root["$defs"][ref], ref)
            return self._defs[ref]
        if "oneOf" in schema:
            return self._one_of(schema["oneOf"], name)
        if "const" in schema:
            return Literal[schema["const"]]
        if "enum" in schema:
            return Literal[tuple(schema["enum"])]
        names = schema.get("type")
        if isinstance(names, list):
            return Union[tuple(self._single(schema, n, name) for n in names)]  # noqa: UP007
        if isinstance(names, str):
            return self._single(schema, names, name)
        return Any

    def _single(self, schema: dict[str, Any], type_name: str, name: str) -> Any:
        if type_name == "object":
            return self._struct(schema, name)
        if type_name == "array":
            items = schema.get("items")
            return list[self.type_of(items, name) if items is not None else Any]  # type: ignore[misc]
        found = _SCALARS[type_name]
        if "minimum" in schema and type_name in ("integer", "number"):
            return Annotated[found, msgspec.Meta(ge=schema["minimum"])]
        return found

    def _unique(self, name: str) -> str:
        base = "".join(part.title() for part in name.replace("-", "_").split("_")) or "Node"
        found, count = base, 1
        while found in self._names:
            count += 1
            found = f"{base}{count}"
        self._names.add(found)
        return found

    def _fields(self, schema: dict[str, Any], name: str, *, skip: str = "") -> list[Any]:
        required = set(schema.get("required", ()))
        fields: list[Any] = []
        for key, sub in schema.get("properties", {}).items():
            if key == skip:
                continue
            kind = self.type_of(sub, key)
            fields.append((key, kind) if key in required else (key, kind, _UNSET))
        return fields

    def _struct(
        self, schema: dict[str, Any], name: str, *, tag: tuple[str, Any] | None = None
    ) -> Any:
        closed = schema.get("additionalProperties", True) is False
        # Keyword-only: members keep the schema's order, required or not (it is the file's).
        options: dict[str, Any] = {"forbid_unknown_fields": closed, "gc": False, "kw_only": True}
        if tag is not None:
            options |= {"tag_field": tag[0], "tag": tag[1]}
        fields = self._fields(schema, name, skip=tag[0] if tag else "")
        return msgspec.defstruct(
            self._unique(name),
            fields,
            rename={_py(key): key for key, *_ in fields if _py(key) != key} or None,
            **options,
        )

    def _one_of(self, branches: list[dict[str, Any]], name: str) -> Any:
        resolved = [self.resolve(branch) for branch in branches]
        if not all(branch.get("type") == "object" for branch in resolved):
            return Union[tuple(self.type_of(b, name) for b in branches)]  # noqa: UP007
        tag = _tag_of(resolved)
        if tag is not None:
            kinds = []
            for branch in resolved:
                values = _constants(branch["properties"][tag])
                for value in values:
                    kinds.append(self._struct(branch, f"{name}_{value}", tag=(tag, value)))
            return Union[tuple(kinds)]  # noqa: UP007
        return self._merged(resolved, name)

    def _merged(self, branches: list[dict[str, Any]], name: str) -> Any:
        """One Struct of every branch's members, each optional; `__post_init__` picks a branch."""
        members: dict[str, list[Any]] = {}
        for branch in branches:
            for key, sub in branch.get("properties", {}).items():
                kind = self.type_of(sub, key)
                if kind not in members.setdefault(key, []):
                    members[key].append(kind)
        keys = tuple(members)
        fields = [(key, Union[tuple(kinds)], _UNSET) for key, kinds in members.items()]  # noqa: UP007
        allowed = [
            (frozenset(branch.get("required", ())), frozenset(branch.get("properties", {})))
            for branch in branches
        ]
        # The members present, as a tuple of flags, and whether some branch takes that set.
        patterns = {
            flags
            for flags in _flag_sets(len(keys))
            if any(
                required <= present <= known
                for required, known in allowed
                for present in [frozenset(k for k, f in zip(keys, flags, strict=True) if f)]
            )
        }
        attributes = tuple(_py(key) for key in keys)
        check = _post_init(attributes, frozenset(patterns), name)
        struct = msgspec.defstruct(
            self._unique(name),
            fields,
            rename={_py(k): k for k in keys if _py(k) != k} or None,
            forbid_unknown_fields=all(
                branch.get("additionalProperties", True) is False for branch in branches
            ),
            gc=False,
            kw_only=True,
            namespace={"__post_init__": check} if self._post_init else None,
        )
        # As `to_builtins` writes the object: its members in order, the unset ones left out.
        self.shapes[struct] = frozenset(
            tuple(k for k, f in zip(keys, flags, strict=True) if f) for flags in patterns
        )
        return struct


def _py(key: str) -> str:
    """A member name as a Python attribute (msgspec renames it back)."""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in key)
    if not name.isidentifier() or keyword.iskeyword(name):
        name = "m_" + name
    return name


def _flag_sets(count: int) -> list[tuple[bool, ...]]:
    found: list[tuple[bool, ...]] = [()]
    for _ in range(count):
        found = [(*flags, flag) for flags in found for flag in (False, True)]
    return found


def _post_init(
    attributes: tuple[str, ...], patterns: frozenset[tuple[bool, ...]], name: str
) -> Any:
    # The Struct's fields are `attributes`, in order: which are set, in C calls only.
    unset = (_UNSET,) * len(attributes)

    def __post_init__(self: Any) -> None:
        flags = tuple(map(operator.is_not, astuple(self), unset))
        if flags not in patterns:
            raise ValueError(f"not one of the shapes of a {name}")

    return __post_init__


def _constants(schema: dict[str, Any]) -> list[Any]:
    if "const" in schema:
        return [schema["const"]]
    return list(schema.get("enum", ()))


def _tag_of(branches: list[dict[str, Any]]) -> str | None:
    """A member every branch requires and holds to string constants, all different: the tag."""
    first = branches[0]
    for key in first.get("required", ()):
        seen: list[Any] = []
        for branch in branches:
            sub = branch.get("properties", {}).get(key, {})
            values = _constants(sub)
            if key not in branch.get("required", ()) or not values:
                break
            if not all(isinstance(v, str) for v in values) or set(values) & set(seen):
                break
            seen += values
        else:
            return str(key)
    return None


class _Unreachable(Exception):
    """A merged Struct stands where `_checker` cannot reach it (inside a union)."""


Check = Callable[[Any], bool]


def _checker(compiler: _Compiler, kind: Any, within: tuple[Any, ...] = ()) -> Check | None:
    """A check that every merged Struct within a value of type `kind` (in `to_builtins` form)
    has one of its shapes; None when no merged Struct can be within one. `_Unreachable` when
    one may stand where this walk does not go."""
    if kind in within:
        raise _Unreachable(kind)  # a recursive schema: each object is checked as it is made
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        inner = [
            (field.encode_name, found)
            for field in msgspec.structs.fields(kind)
            if (found := _checker(compiler, field.type, (*within, kind))) is not None
        ]
        shapes = compiler.shapes.get(kind)
        if shapes is None and not inner:
            return None

        def check_struct(value: Any) -> bool:
            if shapes is not None and tuple(value) not in shapes:
                return False
            return all(check(value[name]) for name, check in inner if name in value)

        return check_struct
    origin, args = get_origin(kind), get_args(kind)
    if origin is list:
        (item,) = args
        check = _checker(compiler, item, within)
        if check is None:
            return None
        shapes = compiler.shapes.get(item)
        flat = shapes is not None and all(
            _checker(compiler, field.type, (*within, item)) is None
            for field in msgspec.structs.fields(item)
        )
        if flat:
            # The usual list (a golden file's steps): each item's members, as a tuple, in C.
            assert shapes is not None
            return lambda value: set(map(tuple, value)) <= shapes
        return lambda value: all(map(check, value))
    if origin is Annotated:
        return _checker(compiler, args[0], within)
    if any(_checker(compiler, arg, within) is not None for arg in args):
        raise _Unreachable(kind)  # which member a value is would have to be worked out
    return None


@cache
def _compiler() -> _Compiler:
    return _Compiler(golden_schema())


@cache
def _checking_compiler() -> _Compiler:
    """The compiler for a schema whose merged objects `_checker` cannot all reach."""
    return _Compiler(golden_schema(), post_init=True)


def _compiled(part: str | None) -> tuple[_Compiler, Check | None]:
    """The compiler whose types decode `part`, and the check its documents then need."""
    compiler = _compiler()
    found = compiler.checks.get(part, _UNSET)
    if found is _UNSET:
        kind = compiler.type_of(
            golden_schema() if part is None else {"$ref": f"#/$defs/{part}"}, part or "golden"
        )
        try:
            found = compiler.checks[part] = (compiler, _checker(compiler, kind))
        except _Unreachable:
            found = compiler.checks[part] = (_checking_compiler(), None)
    return found  # type: ignore[no-any-return]


@cache
def golden_type(part: str | None = None) -> Any:
    """The msgspec type of a golden document, or of one `$defs` entry of its schema (`step`)."""
    compiler, _ = _compiled(part)
    if part is None:
        return compiler.type_of(golden_schema(), "golden")
    return compiler.type_of({"$ref": f"#/$defs/{part}"}, part)


@cache
def decoder(part: str | None = None) -> msgspec.json.Decoder[Any]:
    """A JSON decoder that validates against `golden_type(part)` as it decodes (but for the
    shapes of merged objects: `check(part)`)."""
    return msgspec.json.Decoder(golden_type(part))


def check(part: str | None = None) -> Check | None:
    """What a document `decoder(part)` accepted must pass too: its merged objects' shapes."""
    return _compiled(part)[1]


_to_builtins = msgspec.to_builtins


def decode_typed(data: bytes, part: str | None = None) -> Any:
    """A golden document (or `part` of one) as plain JSON values, or None when the types refuse
    it (not JSON, not UTF-8, or off the schema: `harness.suite.golden.schema` then says why)."""
    try:
        document = _to_builtins(decoder(part).decode(data))
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None
    shaped = check(part)
    return document if shaped is None or shaped(document) else None
