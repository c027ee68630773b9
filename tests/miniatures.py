"""Deliberately broken assemblers: each gets exactly one rule wrong.

Like bowtie's miniatures, they prove the suite catches what it claims to:
`tests/integration/test_miniatures.py` runs `conform run` on each and checks that it fails, at the
field the broken rule governs. Each is the reference with one behaviour changed, so a failure can
only come from that change.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import reference
from reference import (
    Completion,
    Content,
    ErrorKind,
    FinishReason,
    InferError,
    Progress,
    Reasoning,
    Timings,
    ToolCall,
    ToolCallDelta,
)


class _Base:
    """Delegates everything to the reference; subclasses change one thing."""

    def __init__(self) -> None:
        self.inner = reference.Assembler()

    def push(self, data: str) -> list[Any]:
        return self.inner.push(data)

    @property
    def id(self) -> str | None:
        return self.inner.id

    @property
    def reasoning_tokens(self) -> int:
        return self.inner.reasoning_tokens

    @property
    def in_reasoning(self) -> bool:
        return self.inner.in_reasoning

    @property
    def is_finished(self) -> bool:
        return self.inner.is_finished

    def finish(self, thinking_capped: bool) -> Completion:
        return self.inner.finish(thinking_capped)


def _json(data: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _with_completion(completion: Completion, **changes: Any) -> Completion:
    fields = {name: getattr(completion, name) for name in completion.__struct_fields__}
    fields.update(changes)
    return Completion(**fields)


class ContentBeforeReasoning(_Base):
    """R1: emits a chunk's content before its reasoning."""

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        order = {Progress: 0, Content: 1, Reasoning: 2, ToolCallDelta: 3}
        return sorted(events, key=lambda e: order[type(e)])


class EmitsEmptyContent(_Base):
    """R1: an empty `content` string still produces a content event."""

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        chunk = _json(data)
        for choice in chunk.get("choices") or [] if isinstance(chunk, dict) else []:
            if (choice.get("delta") or {}).get("content") == "":
                events.append(Content(""))
        return events


class DropsProgress(_Base):
    """R1: ignores `prompt_progress`."""

    def push(self, data: str) -> list[Any]:
        return [e for e in super().push(data) if not isinstance(e, Progress)]


class RepeatsToolCallId(_Base):
    """R1: fills the id and name of later tool-call pieces with the call's first ones."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[int, tuple[str | None, str | None]] = {}

    def push(self, data: str) -> list[Any]:
        events = []
        for e in super().push(data):
            if isinstance(e, ToolCallDelta):
                first_id, first_name = self.seen.setdefault(e.index, (e.id, e.name))
                e = ToolCallDelta(e.index, e.id or first_id, e.name or first_name, e.arguments)
            events.append(e)
        return events


class NullArguments(_Base):
    """R1: a tool-call piece without arguments carries null instead of ""."""

    def push(self, data: str) -> list[Any]:
        return [
            ToolCallDelta(e.index, e.id, e.name, e.arguments or None)  # type: ignore[arg-type]
            if isinstance(e, ToolCallDelta)
            else e
            for e in super().push(data)
        ]


class LastToolCallIdWins(_Base):
    """R2: a tool call takes the id and name of its last piece that has them."""

    def __init__(self) -> None:
        super().__init__()
        self.last: dict[int, tuple[str | None, str | None]] = {}

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        for e in events:
            if isinstance(e, ToolCallDelta):
                old_id, old_name = self.last.get(e.index, (None, None))
                self.last[e.index] = (e.id or old_id, e.name or old_name)
        return events

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        calls = tuple(
            ToolCall(self.last[i][0] or c.id, self.last[i][1] or c.name, c.arguments)
            for i, c in enumerate(completion.tool_calls)
        )
        return _with_completion(completion, tool_calls=calls)


class EmptyContentNotNull(_Base):
    """R2: a completion without answer text has content "" instead of null."""

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        return _with_completion(completion, content=completion.content or "")


class MergesTimings(_Base):
    """R3: merges each timings object into the last instead of replacing it."""

    def __init__(self) -> None:
        super().__init__()
        self.merged: dict[str, Any] = {}

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        chunk = _json(data)
        if isinstance(chunk, dict) and isinstance(chunk.get("timings"), dict):
            known = Timings.__struct_fields__
            self.merged.update({k: v for k, v in chunk["timings"].items() if k in known})
        return events

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        if completion.timings is None:
            return completion
        return _with_completion(completion, timings=Timings(**self.merged))


class CountsReasoningEvents(_Base):
    """R4: counts reasoning events instead of taking `predicted_n`."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        self.count += sum(isinstance(e, Reasoning) for e in events)
        return events

    @property
    def reasoning_tokens(self) -> int:
        return self.count

    def finish(self, thinking_capped: bool) -> Completion:
        return _with_completion(super().finish(thinking_capped), reasoning_tokens=self.count)


class ToolCallKeepsReasoning(_Base):
    """R4: a tool-call piece does not end `in_reasoning`."""

    def __init__(self) -> None:
        super().__init__()
        self.reasoning = False

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        for e in events:
            if isinstance(e, Reasoning):
                self.reasoning = True
            elif isinstance(e, Content):
                self.reasoning = False
        return events

    @property
    def in_reasoning(self) -> bool:
        return self.reasoning


class FinishesWithoutReason(_Base):
    """R5: a stream that never sent a finish reason finishes as if it had said `stop`."""

    def finish(self, thinking_capped: bool) -> Completion:
        try:
            return super().finish(thinking_capped)
        except InferError as error:
            if error.kind is not ErrorKind.STREAM_CLOSED_EARLY:
                raise
            self.inner.push('{"id": "made-up", "choices": [{"finish_reason": "stop"}]}')
            return super().finish(thinking_capped)


class AcceptsNamelessToolCall(_Base):
    """R5: finishes although a tool call never got a name."""

    def finish(self, thinking_capped: bool) -> Completion:
        try:
            return super().finish(thinking_capped)
        except InferError as error:
            if "never got a name" not in error.message:
                raise
            calls = []
            for call in self.inner._calls:
                if call.id is None:
                    raise
                calls.append(ToolCall(call.id, call.name or "", "".join(call.parts)))
            inner = self.inner
            assert inner._finish_reason is not None and inner._id is not None
            return Completion(
                inner._id,
                "".join(inner._content) or None,
                "".join(inner._reasoning) or None,
                tuple(calls),
                inner._finish_reason,
                inner._timings,
                inner._reasoning_tokens,
                thinking_capped,
            )


class SkipsAheadSilently(_Base):
    """R6: a tool-call index that skips ahead creates the missing calls instead of failing."""

    def push(self, data: str) -> list[Any]:
        try:
            return super().push(data)
        except InferError as error:
            if "out of order" not in error.message or "index -" in error.message:
                raise
            chunk = _json(data)
            return [
                ToolCallDelta(
                    call["index"],
                    call.get("id"),
                    (call.get("function") or {}).get("name"),
                    (call.get("function") or {}).get("arguments") or "",
                )
                for choice in chunk["choices"]
                for call in (choice.get("delta") or {}).get("tool_calls") or []
            ]


class AcceptsAnyFinishReason(_Base):
    """R6: an unknown finish reason is read as `stop`."""

    def push(self, data: str) -> list[Any]:
        chunk = _json(data)
        if isinstance(chunk, dict) and isinstance(chunk.get("choices"), list):
            for choice in chunk["choices"]:
                reason = choice.get("finish_reason") if isinstance(choice, dict) else None
                if isinstance(reason, str) and reason not in FinishReason.__members__.values():
                    choice["finish_reason"] = "stop"
                    return super().push(json.dumps(chunk))
        return super().push(data)


class AcceptsNaN(_Base):
    """R6: reads `NaN` (which is not JSON) as null, as Python's json module would let it."""

    def push(self, data: str) -> list[Any]:
        return super().push(data.replace("NaN", "null"))


class RaisesValueError(_Base):
    """Contract section 2: reports a protocol error with a plain ValueError (a crash)."""

    def push(self, data: str) -> list[Any]:
        try:
            return super().push(data)
        except InferError as error:
            if error.kind is ErrorKind.PROTOCOL:
                raise ValueError(error.message) from None
            raise


def _recorded_names() -> dict[str, set[str]]:
    """Every field name that the shipped recordings use, by level."""
    from harness.suite.recording import iter_payloads

    names: dict[str, set[str]] = {level: set() for level in ("top", "choice", "delta", "call")}
    root = Path(__file__).resolve().parent.parent / "recordings"
    for path in root.rglob("*"):
        if path.suffix not in (".http", ".sse"):
            continue
        for payload in iter_payloads(path):
            chunk = _json(payload.data)
            if not isinstance(chunk, dict):
                continue
            names["top"] |= set(chunk)
            for choice in chunk.get("choices") or []:
                if isinstance(choice, dict):
                    names["choice"] |= set(choice)
                    delta = choice.get("delta")
                    if isinstance(delta, dict):
                        names["delta"] |= set(delta)
                        for call in delta.get("tool_calls") or []:
                            if isinstance(call, dict):
                                names["call"] |= set(call)
    return names


class RejectsUnknownFields(_Base):
    """R7: rejects any field it has not seen in the shipped recordings (`deny_unknown_fields`).

    It passes `--mode plain` by construction and must fail `--mode unknown-fields`.
    """

    known: dict[str, set[str]] | None = None

    def push(self, data: str) -> list[Any]:
        if RejectsUnknownFields.known is None:
            RejectsUnknownFields.known = _recorded_names()
        known = RejectsUnknownFields.known
        chunk = _json(data)
        if isinstance(chunk, dict):
            unknown = set(chunk) - known["top"]
            for choice in (
                chunk.get("choices") or [] if isinstance(chunk.get("choices"), list) else []
            ):
                if isinstance(choice, dict):
                    unknown |= set(choice) - known["choice"]
                    if isinstance(choice.get("delta"), dict):
                        unknown |= set(choice["delta"]) - known["delta"]
            if unknown:
                raise InferError(ErrorKind.PROTOCOL, f"unknown fields {sorted(unknown)}")
        return super().push(data)


class ServerErrorAsProtocol(_Base):
    """R8: reports the server's error as a protocol error."""

    def push(self, data: str) -> list[Any]:
        try:
            return super().push(data)
        except InferError as error:
            if error.kind is ErrorKind.SERVER:
                raise InferError(ErrorKind.PROTOCOL, error.message) from None
            raise


class DropsServerMessage(_Base):
    """R8: loses the server's message."""

    def push(self, data: str) -> list[Any]:
        try:
            return super().push(data)
        except InferError as error:
            if error.kind is ErrorKind.SERVER:
                raise InferError(ErrorKind.SERVER, "server error") from None
            raise


class LastIdWins(_Base):
    """R9: the completion id is the last id seen, not the first."""

    def __init__(self) -> None:
        super().__init__()
        self.last: str | None = None

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        chunk = _json(data)
        if isinstance(chunk, dict) and isinstance(chunk.get("id"), str) and chunk["id"]:
            self.last = chunk["id"]
        return events

    @property
    def id(self) -> str | None:
        return self.last

    def finish(self, thinking_capped: bool) -> Completion:
        return _with_completion(super().finish(thinking_capped), id=self.last)


class ForgetsThinkingCapped(_Base):
    """Contract section 4: ignores the `thinking_capped` argument of `finish`."""

    def finish(self, thinking_capped: bool) -> Completion:
        return super().finish(False)


# --- Language pitfalls: each reads payloads as one language's usual JSON code would ---


class _Reads(_Base):
    """Reads each payload with `read`, adjusts what it read with `adjust`, and gives the reference
    plain JSON of the result: the reference then stands for everything after the reading.

    Unchanged, it passes the suite in plain mode (tests/integration/test_miniatures.py checks it),
    so each subclass fails only through its pitfall. A payload that `read` or `adjust` refuses goes
    to the reference as it was (and is refused there too).
    """

    def read(self, data: str) -> Any:
        return json.loads(data)

    def adjust(self, chunk: Any) -> Any:
        return chunk

    def push(self, data: str) -> list[Any]:
        try:
            text = json.dumps(self.adjust(self.read(data)), allow_nan=False)
        except (ValueError, TypeError, AttributeError, KeyError, RecursionError):
            return super().push(data)
        return super().push(text)


def _choices(chunk: Any) -> list[dict[str, Any]]:
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    return [c for c in choices if isinstance(c, dict)] if isinstance(choices, list) else []


def _calls(chunk: Any) -> list[dict[str, Any]]:
    calls = []
    for choice in _choices(chunk):
        delta = choice.get("delta")
        pieces = delta.get("tool_calls") if isinstance(delta, dict) else None
        calls += [p for p in pieces if isinstance(p, dict)] if isinstance(pieces, list) else []
    return calls


def _numbers(chunk: Any) -> list[tuple[dict[str, Any], str]]:
    """Every read number field of a chunk, as (object, key)."""
    found = [(call, "index") for call in _calls(chunk)]
    for name in ("prompt_progress", "timings"):
        obj = chunk.get(name) if isinstance(chunk, dict) else None
        if isinstance(obj, dict):
            known = Timings.__struct_fields__ if name == "timings" else Progress.__struct_fields__
            found += [(obj, key) for key in obj if key in known]
    return found


class _Lenient(_Reads):
    """A lenient reader: `pattern` (text that is not JSON) is rewritten to JSON before parsing."""

    pattern = ""
    replacement = ""

    def read(self, data: str) -> Any:
        return json.loads(re.sub(self.pattern, self.replacement, data))


class JacksonTrailingComma(_Lenient):
    """Java (Jackson ALLOW_TRAILING_COMMA), JSON5: a comma before `}` or `]` is skipped."""

    pattern, replacement = r",(\s*[}\]])", r"\1"


class JacksonComments(_Lenient):
    """Java (Jackson ALLOW_JAVA_COMMENTS, Gson lenient), JSON5: `/* ... */` comments are skipped."""

    pattern = r"/\*.*?\*/"


class JacksonSingleQuotes(_Lenient):
    """Java (Jackson ALLOW_SINGLE_QUOTES, Gson lenient), JSON5: 'text' is a string."""

    pattern, replacement = r"'([^'\\]*)'", r'"\1"'


class JacksonUnquotedKeys(_Lenient):
    """Java (Jackson ALLOW_UNQUOTED_FIELD_NAMES, Gson lenient), JSON5: `key:` is `"key":`."""

    pattern, replacement = r"([{,])\s*([A-Za-z_]\w*)\s*:", r'\1"\2":'


class JacksonLeadingZeros(_Lenient):
    """Java (Jackson ALLOW_LEADING_ZEROS_FOR_NUMBERS): `024` is 24."""

    pattern, replacement = r":0+(\d)", r":\1"


class JacksonPlusSign(_Lenient):
    """Java (Jackson ALLOW_LEADING_PLUS_SIGN_FOR_NUMBERS), JSON5: `+24` is 24."""

    pattern, replacement = r":\+(\d)", r":\1"


class JacksonLeadingDecimalPoint(_Lenient):
    """Java (Jackson ALLOW_LEADING_DECIMAL_POINT_FOR_NUMBERS), JSON5: `.5` is 0.5."""

    pattern, replacement = r":\.(\d)", r":0.\1"


class JacksonAnyEscape(_Lenient):
    """Java (Jackson ALLOW_BACKSLASH_ESCAPING_ANY_CHARACTER): `\\'` is `'`."""

    pattern, replacement = r"\\'", "'"


class StripsPayload(_Reads):
    """Python (`str.strip()`), Java (`String.trim()`), JavaScript (`trim()`) before parsing."""

    def read(self, data: str) -> Any:
        return json.loads(data.strip())


class SerdeMinusZero(_Reads):
    """Rust (serde_json): `-0` is read as the float -0.0, which an integer index refuses."""

    def read(self, data: str) -> Any:
        chunk = json.loads(data, parse_int=lambda s: -0.0 if s == "-0" else int(s))
        indexes = [call.get("index") for call in _calls(chunk)]
        if any(isinstance(i, float) and math.copysign(1.0, i) < 0 for i in indexes):
            raise InferError(ErrorKind.PROTOCOL, "invalid type: floating point, expected u32")
        return chunk


class DoublesOnly(_Reads):
    """JavaScript (JSON.parse), Go (into interface{}): every number is a double, so an integer
    beyond 2^53 is silently rounded (here in prompt_progress, whose event it builds itself, since
    the reference refuses such integers)."""

    def adjust(self, chunk: Any) -> Any:
        self.rounded: Progress | None = None
        progress = chunk.get("prompt_progress") if isinstance(chunk, dict) else None
        if isinstance(progress, dict) and any(
            type(v) is int and abs(v) > reference.MAX_SAFE_INTEGER for v in progress.values()
        ):
            fields = Progress.__struct_fields__
            self.rounded = Progress(
                **{
                    k: int(float(v)) if type(v) is int else v
                    for k, v in progress.items()
                    if k in fields
                }
            )
            del chunk["prompt_progress"]
        return chunk

    def push(self, data: str) -> list[Any]:
        self.rounded = None
        events = super().push(data)
        return events if self.rounded is None else [self.rounded, *events]


class ProtoKeyCopied(_Reads):
    """JavaScript (Object.assign, for-in loops): `__proto__`'s members become defaults."""

    def read(self, data: str) -> Any:
        def hook(obj: dict[str, Any]) -> dict[str, Any]:
            proto = obj.pop("__proto__", None)
            if isinstance(proto, dict):
                for key, value in proto.items():
                    obj.setdefault(key, value)
            return obj

        return json.loads(data, object_hook=hook)


class PrototypeNameTable(_Reads):
    """JavaScript: a reason is looked up in a plain object (`REASONS[reason]`), so the names of
    Object.prototype pass; the code then falls back to `stop`."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            if choice.get("finish_reason") in ("constructor", "toString", "__proto__", "valueOf"):
                choice["finish_reason"] = "stop"
        return chunk


class CaseInsensitiveEnum(_Reads):
    """Java (Jackson ACCEPT_CASE_INSENSITIVE_ENUMS), Go (strings.EqualFold), Python (`.lower()`)."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            if isinstance(choice.get("finish_reason"), str):
                choice["finish_reason"] = choice["finish_reason"].lower()
        return chunk


class TypeofErrorObject(_Reads):
    """JavaScript: `typeof [] === "object"`, so an `error` array is taken for an error object."""

    def adjust(self, chunk: Any) -> Any:
        if isinstance(chunk, dict) and isinstance(chunk.get("error"), list):
            raise InferError(ErrorKind.SERVER, "")
        return chunk


class _Truthy(_Reads):
    """Python: `if chunk.get(name):` is false for an empty dict, which is then dropped."""

    name = ""

    def adjust(self, chunk: Any) -> Any:
        if isinstance(chunk, dict) and chunk.get(self.name) == {}:
            del chunk[self.name]
        return chunk


class TruthyError(_Truthy):
    """Python: `"error": {}` is skipped (R8: a server error with message "")."""

    name = "error"


class TruthyProgress(_Truthy):
    """Python: `"prompt_progress": {}` makes no progress event (R1)."""

    name = "prompt_progress"


class TruthyTimings(_Truthy):
    """Python: `"timings": {}` does not replace the earlier timings (R3)."""

    name = "timings"


class ZeroIsFalsy(_Reads):
    """JavaScript (`p.cache || null`), Python (`p.get("cache") or None`): a progress count of 0
    is falsy, so it becomes null."""

    def adjust(self, chunk: Any) -> Any:
        progress = chunk.get("prompt_progress") if isinstance(chunk, dict) else None
        for key, value in progress.items() if isinstance(progress, dict) else ():
            if value == 0:
                progress[key] = None
        return chunk


class BoolIsInt(_Reads):
    """Python: `isinstance(True, int)` is true, so `true` passes as a number (1)."""

    def adjust(self, chunk: Any) -> Any:
        for obj, key in _numbers(chunk):
            if isinstance(obj[key], bool):
                obj[key] = int(obj[key])
        return chunk


class OverflowIsInfinity(_Reads):
    """Python (json), JavaScript (JSON.parse): `1e400` is read as infinity, and kept (as the
    largest double, since plain JSON cannot carry infinity to the reference)."""

    def adjust(self, chunk: Any) -> Any:
        for obj, key in _numbers(chunk):
            if obj[key] in (float("inf"), float("-inf")):
                obj[key] = math.copysign(sys.float_info.max, obj[key])
        return chunk


class LoneSurrogateReplaced(_Reads):
    """Go (encoding/json): an unpaired surrogate escape becomes U+FFFD instead of an error."""

    def adjust(self, chunk: Any) -> Any:
        def fix(value: Any) -> Any:
            if isinstance(value, str):
                return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            if isinstance(value, list):
                return [fix(v) for v in value]
            if isinstance(value, dict):
                return {fix(k): fix(v) for k, v in value.items()}
            return value

        return fix(chunk)


class NumericStringsCoerced(_Reads):
    """Python (pydantic's lax mode), Java (Jackson's scalar coercion): `"1"` is read as 1."""

    def adjust(self, chunk: Any) -> Any:
        for obj, key in _numbers(chunk):
            if isinstance(obj[key], str):
                try:
                    obj[key] = int(obj[key])
                except ValueError:
                    obj[key] = float(obj[key])
        return chunk


class ScalarsToString(_Reads):
    """Java (Jackson's scalar coercion), pydantic v1: a number in a string field is its text."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = choice.get("delta")
            for key in ("content", "reasoning_content"):
                if isinstance(delta, dict) and isinstance(delta.get(key), int | float):
                    delta[key] = json.dumps(delta[key])
        return chunk


class FloatTruncatedToInt(_Reads):
    """Java (Jackson ACCEPT_FLOAT_AS_INT, on by default): an `int` field reads 1.5 as 1."""

    def adjust(self, chunk: Any) -> Any:
        for obj, key in _numbers(chunk):
            if (obj is not chunk.get("timings")) and isinstance(obj[key], float):
                obj[key] = int(obj[key])
        return chunk


class EnumOrdinals(_Reads):
    """Java (Jackson, FAIL_ON_NUMBERS_FOR_ENUMS off): a number is the enum constant's ordinal."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            reason = choice.get("finish_reason")
            if isinstance(reason, int) and 0 <= reason < 3:
                choice["finish_reason"] = list(FinishReason)[reason].value
        return chunk


class FirstValueOnly(_Reads):
    """Go (`json.NewDecoder(r).Decode`), Java (Jackson, FAIL_ON_TRAILING_TOKENS off), Python
    (`raw_decode`): reads the first JSON value and ignores what follows it."""

    def read(self, data: str) -> Any:
        return json.JSONDecoder().raw_decode(data.lstrip(" \t\r\n"))[0]


class NullIsZero(_Reads):
    """Go (a non-pointer int), Java (a primitive int): a null or absent index is 0."""

    def adjust(self, chunk: Any) -> Any:
        for call in _calls(chunk):
            if call.get("index") is None:
                call["index"] = 0
        return chunk


class StructFromArray(_Reads):
    """Rust (serde's derived Deserialize): a struct is also read from an array of its fields."""

    def adjust(self, chunk: Any) -> Any:
        progress = chunk.get("prompt_progress") if isinstance(chunk, dict) else None
        if isinstance(progress, list):
            chunk["prompt_progress"] = dict(zip(Progress.__struct_fields__, progress, strict=False))
        return chunk


class NarrowIntegers(_Reads):
    """Java (`int`), Rust (`u32`): an integer field is 32 bits, so a larger value is refused."""

    def adjust(self, chunk: Any) -> Any:
        progress = chunk.get("prompt_progress") if isinstance(chunk, dict) else None
        for value in progress.values() if isinstance(progress, dict) else ():
            if type(value) is int and not -(2**31) <= value < 2**31:
                raise InferError(ErrorKind.PROTOCOL, "out of range of int")
        return chunk


class ControlCharsAllowed(_Reads):
    """Python (`json.loads(strict=False)`), Java (Jackson ALLOW_UNESCAPED_CONTROL_CHARS): a raw
    control character inside a string is kept."""

    def read(self, data: str) -> Any:
        return json.loads(data, strict=False)


#: Each miniature, the mode that catches it, and a pattern the mismatch report must contain.
BATTERY: dict[str, tuple[str, str]] = {
    "ContentBeforeReasoning": ("plain", r"events\[0\]\.type"),
    "EmitsEmptyContent": ("plain", r"steps\[\d+\]\.events\[\d+\]"),
    "DropsProgress": ("plain", r"steps\[\d+\]\.events\[0\]"),
    "RepeatsToolCallId": ("plain", r"events\[\d+\]\.(id|name)"),
    "NullArguments": ("plain", r"events\[\d+\]\.arguments"),
    "LastToolCallIdWins": ("plain", r"finish\.completion\.tool_calls\[\d+\]\.(id|name)"),
    "EmptyContentNotNull": ("plain", r"finish\.completion\.content"),
    "MergesTimings": ("plain", r"finish\.completion\.timings\.\w+"),
    "CountsReasoningEvents": ("plain", r"state\.reasoning_tokens"),
    "ToolCallKeepsReasoning": ("plain", r"state\.in_reasoning"),
    "FinishesWithoutReason": ("plain", r"finish\.(error|completion)"),
    "AcceptsNamelessToolCall": ("plain", r"finish\.(error|completion)"),
    "SkipsAheadSilently": ("plain", r"steps\[\d+\]\.(error|events)"),
    "AcceptsAnyFinishReason": ("plain", r"steps\[\d+\]\.(error|events)"),
    "AcceptsNaN": ("plain", r"steps\[\d+\]\.(error|events)"),
    "RaisesValueError": ("plain", r"push raised ValueError"),
    "RejectsUnknownFields": ("unknown-fields", r"steps\[\d+\]\.(error|events)"),
    "ServerErrorAsProtocol": ("plain", r"steps\[\d+\]\.error\.kind"),
    "DropsServerMessage": ("plain", r"steps\[\d+\]\.error\.message"),
    "LastIdWins": ("plain", r"state\.id"),
    "ForgetsThinkingCapped": ("plain", r"finish\.completion\.thinking_capped"),
}

_ACCEPTED = r'steps\[\d+\]\.error \(line \d+\): expected \{"kind": "protocol"\}, got \(absent\)'

#: Each language pitfall's miniature, the case that must catch it, and a pattern its mismatch must
#: contain. `conform run --mode plain` fails the miniature on that case
#: (tests/integration/test_miniatures.py).
PITFALLS: dict[str, tuple[str, str]] = {
    "JacksonTrailingComma": ("synthetic/r6_pitfall_trailing_comma", _ACCEPTED),
    "JacksonComments": ("synthetic/r6_pitfall_comment", _ACCEPTED),
    "JacksonSingleQuotes": ("synthetic/r6_pitfall_single_quotes", _ACCEPTED),
    "JacksonUnquotedKeys": ("synthetic/r6_pitfall_unquoted_key", _ACCEPTED),
    "JacksonLeadingZeros": ("synthetic/r6_pitfall_leading_zero", _ACCEPTED),
    "JacksonPlusSign": ("synthetic/r6_pitfall_plus_sign", _ACCEPTED),
    "JacksonLeadingDecimalPoint": ("synthetic/r6_pitfall_leading_decimal_point", _ACCEPTED),
    "JacksonAnyEscape": ("synthetic/r6_pitfall_invalid_escape", _ACCEPTED),
    "StripsPayload": ("synthetic/r6_pitfall_non_json_whitespace", _ACCEPTED),
    "SerdeMinusZero": (
        "synthetic/r6_pitfall_minus_zero_index",
        r'steps\[1\]\.error \(line \d+\): expected \(absent\), got \{"kind": "protocol"\}',
    ),
    "DoublesOnly": (
        "synthetic/r9_pitfall_big_integer_rounded",
        r'steps\[2\]\.events \(line \d+\): expected \(absent\), got \[\{"type": "progress", '
        r'"total": 9007199254740992,',
    ),
    "ProtoKeyCopied": (
        "synthetic/r7_pitfall_proto_key",
        r"steps\[2\]\.state\.reasoning_tokens \(line \d+\): expected 0, got 7",
    ),
    "PrototypeNameTable": ("synthetic/r6_pitfall_finish_reason_prototype_name", _ACCEPTED),
    "CaseInsensitiveEnum": ("synthetic/r6_pitfall_finish_reason_case", _ACCEPTED),
    "TypeofErrorObject": (
        "synthetic/r8_pitfall_error_empty_array",
        r'steps\[2\]\.error\.kind \(line \d+\): expected "protocol", got "server"',
    ),
    "TruthyError": (
        "synthetic/r8_pitfall_error_empty_object",
        r'steps\[2\]\.error \(line \d+\): expected \{"kind": "server", "message": ""\}, '
        r"got \(absent\)",
    ),
    "TruthyProgress": (
        "synthetic/r1_pitfall_progress_empty_object",
        r"steps\[2\]\.events\[0\]\.\w+ \(line \d+\): expected null, got \(absent\)",
    ),
    "TruthyTimings": (
        "synthetic/r3_pitfall_timings_empty_object",
        r"finish\.completion\.timings\.predicted_n \(finish\): expected null, got 1",
    ),
    "ZeroIsFalsy": (
        "synthetic/r1_progress_with_text",
        r"steps\[\d+\]\.events\[0\]\.\w+ \(line \d+\): expected 0, got null",
    ),
    "BoolIsInt": ("synthetic/r6_timings_field_true", _ACCEPTED),
    "OverflowIsInfinity": ("synthetic/r6_float_overflow", _ACCEPTED),
    "LoneSurrogateReplaced": ("synthetic/r6_surrogate_high_unpaired", _ACCEPTED),
    "NumericStringsCoerced": ("synthetic/r6_tool_index_string", _ACCEPTED),
    "ScalarsToString": ("synthetic/r6_content_number", _ACCEPTED),
    "FloatTruncatedToInt": ("synthetic/r6_progress_field_fraction", _ACCEPTED),
    "EnumOrdinals": ("synthetic/r6_finish_reason_number", _ACCEPTED),
    "FirstValueOnly": ("synthetic/r6_trailing_garbage", _ACCEPTED),
    "NullIsZero": ("synthetic/r6_tool_index_null", _ACCEPTED),
    "StructFromArray": ("synthetic/r6_progress_list", _ACCEPTED),
    "NarrowIntegers": (
        "synthetic/r9_progress_max_safe_integer",
        r'steps\[0\]\.error \(line \d+\): expected \(absent\), got \{"kind": "protocol"\}',
    ),
    "ControlCharsAllowed": ("synthetic/r6_raw_control_char", _ACCEPTED),
}
