"""Every deliberately odd target of the tests, in one place.

The *miniatures* are here: assemblers that each get one rule wrong, like bowtie's. Each is the
reference (or a reader handing the reference what it read) with one behaviour changed, so a failure
can only come from that change, and each is registered with `@miniature`, which records the rule
it breaks, the cases and mode that must catch it and a pattern the report must hold there.
`MINIATURES` is the registry; `by_rule()` groups it by rule. The test that shows the suite catches
each is the entry's `test`: tests/integration/test_miniatures.py for the rule breakers (one
`conform run` each, on its cases), tests/check/test_modes.py for the shortcuts only a mode exposes,
tests/check/test_levels.py and tests/cli/test_fuzz.py for the few with a property of their own.

The odd targets that cannot live here are listed in `ELSEWHERE`, each with why and the test that
uses it: the correct ones that take another allowed outcome (fairness: tests/check/fair_targets.py),
the ones that attack the harness rather than get a rule wrong (hangs, forks, crashes, hostile
values), line-protocol programs and targets a test writes as source. tests/test_odd_targets.py
checks that every class of tests/ that assembles (has a `push`) is registered or listed.

This module imports only the reference: a worker running a miniature imports it alone.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import msgspec

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

_Class = TypeVar("_Class", bound=type)


# -- The registry --------------------------------------------------------------------------------

#: The kinds of miniature: where each comes from (the order of the sections below).
BATTERY = "battery"  # one per rule of the contract, caught on the cases that pin it
PITFALL = "pitfall"  # a language's JSON pitfall (docs/spec.md section 8), caught on its case
CLIENT = "client"  # a real client's bug class, its source in its docstring
POWER = "power"  # issue 34's classes: lax decoders, near-names, edge texts, tool-call pairs
SHORTCUT = "shortcut"  # right on every recording as recorded; only its mode catches it
LEVEL = "level"  # right at one level of comparison, wrong at the other
FUZZ = "fuzz"  # DropsServerMessage with one more way a fuzz run must take well

_TEST = "tests/integration/test_miniatures.py::test_each_miniature_fails_for_its_rule"


@dataclass(frozen=True)
class Catch:
    """Where the suite must catch a miniature."""

    rule: str  #: the rule it breaks (R1-R9, SSE, an I-point)
    pattern: str  #: a pattern the report must hold there (a mismatch's path, a message)
    cases: str  #: the cases (a `-k` pattern) it fails on; "" for every case pinning `rule`
    mode: str  #: the mode that catches it
    kind: str  #: BATTERY, PITFALL, ...
    test: str  #: the test that shows it is caught


MINIATURES: dict[str, Catch] = {}


def miniature(
    rule: str,
    pattern: str,
    *,
    kind: str,
    cases: str = "",
    mode: str = "plain",
    test: str = _TEST,
) -> Callable[[_Class], _Class]:
    """Registers the decorated class as a miniature breaking `rule`, caught as the arguments say."""

    def register(cls: _Class) -> _Class:
        assert cls.__name__ not in MINIATURES, cls.__name__
        MINIATURES[cls.__name__] = Catch(rule, pattern, cases, mode, kind, test)
        return cls

    return register


def named(*kinds: str) -> list[str]:
    """The names of the miniatures of `kinds`, sorted."""
    return sorted(name for name, catch in MINIATURES.items() if catch.kind in kinds)


def by_rule() -> dict[str, list[str]]:
    """The miniatures' names by the rule each breaks."""
    rules: dict[str, list[str]] = {}
    for name, catch in sorted(MINIATURES.items()):
        rules.setdefault(catch.rule, []).append(name)
    return dict(sorted(rules.items()))


# Patterns that several miniatures' reports hold.

#: Invalid input the miniature takes where the reference refuses it.
_ACCEPTED = r'steps\[\d+\]\.error \(line \d+\): expected \{"kind": "protocol"\}, got \(absent\)'

#: A refusal where the reference takes the payload.
_FAILED_EARLY = (
    r"steps\[1\]\.error \(line \d+\): expected \(absent\), got \{\"kind\": \"protocol\"\}"
)
#: The completion's tool calls.
_T = r"finish\.completion\.tool_calls"

_NEAR_VALUE = r'got [^\n]*"\([^)"]+\)"'  # a near-name's value, "(reasoningContent)", taken


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


@miniature("R1", r"events\[0\]\.type", kind=BATTERY)
class ContentBeforeReasoning(_Base):
    """R1: emits a chunk's content before its reasoning."""

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        order = {Progress: 0, Content: 1, Reasoning: 2, ToolCallDelta: 3}
        return sorted(events, key=lambda e: order[type(e)])


@miniature("R1", r"steps\[\d+\]\.events\[\d+\]", kind=BATTERY)
class EmitsEmptyContent(_Base):
    """R1: an empty `content` string still produces a content event."""

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        chunk = _json(data)
        for choice in chunk.get("choices") or [] if isinstance(chunk, dict) else []:
            if (choice.get("delta") or {}).get("content") == "":
                events.append(Content(""))
        return events


@miniature("R1", r"steps\[\d+\]\.events\[0\]", kind=BATTERY)
class DropsProgress(_Base):
    """R1: ignores `prompt_progress`."""

    def push(self, data: str) -> list[Any]:
        return [e for e in super().push(data) if not isinstance(e, Progress)]


@miniature("R1", r"events\[\d+\]\.(id|name)", kind=BATTERY)
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


@miniature("R1", r"events\[\d+\]\.arguments", kind=BATTERY)
class NullArguments(_Base):
    """R1: a tool-call piece without arguments carries null instead of ""."""

    def push(self, data: str) -> list[Any]:
        return [
            ToolCallDelta(e.index, e.id, e.name, e.arguments or None)  # type: ignore[arg-type]
            if isinstance(e, ToolCallDelta)
            else e
            for e in super().push(data)
        ]


@miniature("R2", r"finish\.completion\.tool_calls\[\d+\]\.(id|name)", kind=BATTERY)
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


@miniature("R2", r"finish\.completion\.content", kind=BATTERY)
class EmptyContentNotNull(_Base):
    """R2: a completion without answer text has content "" instead of null."""

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        return _with_completion(completion, content=completion.content or "")


@miniature("R3", r"finish\.completion\.timings\.\w+", kind=BATTERY)
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


@miniature("R4", r"state\.reasoning_tokens", kind=BATTERY)
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


@miniature("R4", r"state\.in_reasoning", kind=BATTERY)
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


@miniature("R5", r"finish\.(error|completion)", kind=BATTERY)
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


@miniature("R5", r"finish\.(error|completion)", kind=BATTERY)
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
                calls.append(ToolCall(call.id, call.name or "", "".join(call.arguments)))
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


@miniature("R6", r"steps\[\d+\]\.(error|events)", kind=BATTERY)
class SkipsAheadSilently(_Base):
    """R6: a tool-call index that skips ahead creates the missing calls instead of failing."""

    def push(self, data: str) -> list[Any]:
        try:
            return super().push(data)
        except InferError as error:
            if "skips ahead" not in error.message:
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


@miniature("R6", r"steps\[\d+\]\.(error|events)", kind=BATTERY)
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


@miniature("R6", r"steps\[\d+\]\.(error|events)", kind=BATTERY)
class AcceptsNaN(_Base):
    """R6: reads `NaN` (which is not JSON) as null, as Python's json module would let it."""

    def push(self, data: str) -> list[Any]:
        return super().push(data.replace("NaN", "null"))


@miniature("R6", r"push raised ValueError", kind=BATTERY)
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
            choices = chunk.get("choices")
            for choice in choices if isinstance(choices, list) else []:
                if isinstance(choice, dict):
                    names["choice"] |= set(choice)
                    delta = choice.get("delta")
                    if isinstance(delta, dict):
                        names["delta"] |= set(delta)
                        calls = delta.get("tool_calls")
                        for call in calls if isinstance(calls, list) else []:
                            if isinstance(call, dict):
                                names["call"] |= set(call)
    return names


@miniature("R7", r"steps\[\d+\]\.(error|events)", mode="unknown-fields", kind=BATTERY)
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


@miniature("R8", r"steps\[\d+\]\.error\.kind", kind=BATTERY)
class ServerErrorAsProtocol(_Base):
    """R8: reports the server's error as a protocol error."""

    def push(self, data: str) -> list[Any]:
        try:
            return super().push(data)
        except InferError as error:
            if error.kind is ErrorKind.SERVER:
                raise InferError(ErrorKind.PROTOCOL, error.message) from None
            raise


@miniature("R8", r"steps\[\d+\]\.error\.message", kind=BATTERY)
class DropsServerMessage(_Base):
    """R8: loses the server's message."""

    def push(self, data: str) -> list[Any]:
        try:
            return super().push(data)
        except InferError as error:
            if error.kind is ErrorKind.SERVER:
                raise InferError(ErrorKind.SERVER, "server error") from None
            raise


@miniature("R9", r"state\.id", kind=BATTERY)
class EmptyIdWins(_Base):
    """R9: the completion id is the latest id seen, an empty one included (`""` is no id; the
    latest non-empty id is I9's other outcome, allowed)."""

    def __init__(self) -> None:
        super().__init__()
        self.last: str | None = None

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        chunk = _json(data)
        if isinstance(chunk, dict) and isinstance(chunk.get("id"), str):
            self.last = chunk["id"]
        return events

    @property
    def id(self) -> str | None:
        return self.last

    def finish(self, thinking_capped: bool) -> Completion:
        return _with_completion(super().finish(thinking_capped), id=self.last)


@miniature("R5", r"finish\.completion\.thinking_capped", kind=BATTERY)
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


@miniature("R6", _ACCEPTED, cases="synthetic/r6_pitfall_trailing_comma", kind=PITFALL)
class JacksonTrailingComma(_Lenient):
    """Java (Jackson ALLOW_TRAILING_COMMA), JSON5: a comma before `}` or `]` is skipped."""

    pattern, replacement = r",(\s*[}\]])", r"\1"


@miniature("R6", _ACCEPTED, cases="synthetic/r6_pitfall_comment", kind=PITFALL)
class JacksonComments(_Lenient):
    """Java (Jackson ALLOW_JAVA_COMMENTS, Gson lenient), JSON5: `/* ... */` comments are skipped."""

    pattern = r"/\*.*?\*/"


@miniature("R6", _ACCEPTED, cases="synthetic/r6_pitfall_single_quotes", kind=PITFALL)
class JacksonSingleQuotes(_Lenient):
    """Java (Jackson ALLOW_SINGLE_QUOTES, Gson lenient), JSON5: 'text' is a string."""

    pattern, replacement = r"'([^'\\]*)'", r'"\1"'


@miniature("R6", _ACCEPTED, cases="synthetic/r6_pitfall_unquoted_key", kind=PITFALL)
class JacksonUnquotedKeys(_Lenient):
    """Java (Jackson ALLOW_UNQUOTED_FIELD_NAMES, Gson lenient), JSON5: `key:` is `"key":`."""

    pattern, replacement = r"([{,])\s*([A-Za-z_]\w*)\s*:", r'\1"\2":'


@miniature("R6", _ACCEPTED, cases="synthetic/r6_pitfall_leading_zero", kind=PITFALL)
class JacksonLeadingZeros(_Lenient):
    """Java (Jackson ALLOW_LEADING_ZEROS_FOR_NUMBERS): `024` is 24."""

    pattern, replacement = r":0+(\d)", r":\1"


@miniature("R6", _ACCEPTED, cases="synthetic/r6_pitfall_plus_sign", kind=PITFALL)
class JacksonPlusSign(_Lenient):
    """Java (Jackson ALLOW_LEADING_PLUS_SIGN_FOR_NUMBERS), JSON5: `+24` is 24."""

    pattern, replacement = r":\+(\d)", r":\1"


@miniature("R6", _ACCEPTED, cases="synthetic/r6_pitfall_leading_decimal_point", kind=PITFALL)
class JacksonLeadingDecimalPoint(_Lenient):
    """Java (Jackson ALLOW_LEADING_DECIMAL_POINT_FOR_NUMBERS), JSON5: `.5` is 0.5."""

    pattern, replacement = r":\.(\d)", r":0.\1"


@miniature("R6", _ACCEPTED, cases="synthetic/r6_pitfall_invalid_escape", kind=PITFALL)
class JacksonAnyEscape(_Lenient):
    """Java (Jackson ALLOW_BACKSLASH_ESCAPING_ANY_CHARACTER): `\\'` is `'`."""

    pattern, replacement = r"\\'", "'"


@miniature("R6", _ACCEPTED, cases="synthetic/r6_pitfall_non_json_whitespace", kind=PITFALL)
class StripsPayload(_Reads):
    """Python (`str.strip()`), Java (`String.trim()`), JavaScript (`trim()`) before parsing."""

    def read(self, data: str) -> Any:
        return json.loads(data.strip())


@miniature(
    "R6",
    r'steps\[1\]\.error \(line \d+\): expected \(absent\), got \{"kind": "protocol"\}',
    cases="synthetic/r6_pitfall_minus_zero_index",
    kind=PITFALL,
)
class SerdeMinusZero(_Reads):
    """Rust (serde_json): `-0` is read as the float -0.0, which an integer index refuses."""

    def read(self, data: str) -> Any:
        chunk = json.loads(data, parse_int=lambda s: -0.0 if s == "-0" else int(s))
        indexes = [call.get("index") for call in _calls(chunk)]
        if any(isinstance(i, float) and math.copysign(1.0, i) < 0 for i in indexes):
            raise InferError(ErrorKind.PROTOCOL, "invalid type: floating point, expected u32")
        return chunk


@miniature(
    "R9",
    r'steps\[2\]\.events \(line \d+\): expected \(absent\), got \[\{"type": "progress", '
    r'"total": 9007199254740992,',
    cases="synthetic/r9_pitfall_big_integer_rounded",
    kind=PITFALL,
)
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


@miniature(
    "R7",
    r"steps\[2\]\.state\.reasoning_tokens \(line \d+\): expected 0, got 7",
    cases="synthetic/r7_pitfall_proto_key",
    kind=PITFALL,
)
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


@miniature("R6", _ACCEPTED, cases="synthetic/r6_pitfall_finish_reason_prototype_name", kind=PITFALL)
class PrototypeNameTable(_Reads):
    """JavaScript: a reason is looked up in a plain object (`REASONS[reason]`), so the names of
    Object.prototype pass; the code then falls back to `stop`."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            if choice.get("finish_reason") in ("constructor", "toString", "__proto__", "valueOf"):
                choice["finish_reason"] = "stop"
        return chunk


@miniature("R6", _ACCEPTED, cases="synthetic/r6_pitfall_finish_reason_case", kind=PITFALL)
class CaseInsensitiveEnum(_Reads):
    """Java (Jackson ACCEPT_CASE_INSENSITIVE_ENUMS), Go (strings.EqualFold), Python (`.lower()`)."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            if isinstance(choice.get("finish_reason"), str):
                choice["finish_reason"] = choice["finish_reason"].lower()
        return chunk


@miniature(
    "R8",
    r'steps\[2\]\.error\.kind \(line \d+\): expected "protocol", got "server"',
    cases="synthetic/r8_pitfall_error_empty_array",
    kind=PITFALL,
)
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


@miniature(
    "R8",
    r'steps\[2\]\.error \(line \d+\): expected \{"kind": "server", "message": ""\}, '
    r"got \(absent\)",
    cases="synthetic/r8_pitfall_error_empty_object",
    kind=PITFALL,
)
class TruthyError(_Truthy):
    """Python: `"error": {}` is skipped (R8: a server error with message "")."""

    name = "error"


@miniature(
    "R1",
    r"steps\[2\]\.events\[0\]\.\w+ \(line \d+\): expected null, got \(absent\)",
    cases="synthetic/r1_pitfall_progress_empty_object",
    kind=PITFALL,
)
class TruthyProgress(_Truthy):
    """Python: `"prompt_progress": {}` makes no progress event (R1)."""

    name = "prompt_progress"


@miniature(
    "R3",
    r"finish\.completion\.timings\.predicted_n \(finish\): expected null, got 1",
    cases="synthetic/r3_pitfall_timings_empty_object",
    kind=PITFALL,
)
class TruthyTimings(_Truthy):
    """Python: `"timings": {}` does not replace the earlier timings (R3)."""

    name = "timings"


@miniature(
    "R1",
    r"steps\[\d+\]\.events\[0\]\.\w+ \(line \d+\): expected 0, got null",
    cases="synthetic/r1_progress_with_text",
    kind=PITFALL,
)
class ZeroIsFalsy(_Reads):
    """JavaScript (`p.cache || null`), Python (`p.get("cache") or None`): a progress count of 0
    is falsy, so it becomes null."""

    def adjust(self, chunk: Any) -> Any:
        progress = chunk.get("prompt_progress") if isinstance(chunk, dict) else None
        for key, value in progress.items() if isinstance(progress, dict) else ():
            if value == 0:
                progress[key] = None
        return chunk


@miniature("R6", _ACCEPTED, cases="synthetic/r6_timings_field_true", kind=PITFALL)
class BoolIsInt(_Reads):
    """Python: `isinstance(True, int)` is true, so `true` passes as a number (1)."""

    def adjust(self, chunk: Any) -> Any:
        for obj, key in _numbers(chunk):
            if isinstance(obj[key], bool):
                obj[key] = int(obj[key])
        return chunk


@miniature("R6", _ACCEPTED, cases="synthetic/r6_float_overflow", kind=PITFALL)
class OverflowIsInfinity(_Reads):
    """Python (json), JavaScript (JSON.parse): `1e400` is read as infinity, and kept (as the
    largest double, since plain JSON cannot carry infinity to the reference)."""

    def adjust(self, chunk: Any) -> Any:
        for obj, key in _numbers(chunk):
            if obj[key] in (float("inf"), float("-inf")):
                obj[key] = math.copysign(sys.float_info.max, obj[key])
        return chunk


@miniature("R6", _ACCEPTED, cases="synthetic/r6_surrogate_high_unpaired", kind=PITFALL)
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


@miniature("R6", _ACCEPTED, cases="synthetic/r6_tool_index_string", kind=PITFALL)
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


@miniature("R6", _ACCEPTED, cases="synthetic/r6_content_number", kind=PITFALL)
class ScalarsToString(_Reads):
    """Java (Jackson's scalar coercion), pydantic v1: a number in a string field is its text."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = choice.get("delta")
            for key in ("content", "reasoning_content"):
                if isinstance(delta, dict) and isinstance(delta.get(key), int | float):
                    delta[key] = json.dumps(delta[key])
        return chunk


@miniature("R6", _ACCEPTED, cases="synthetic/r6_progress_field_fraction", kind=PITFALL)
class FloatTruncatedToInt(_Reads):
    """Java (Jackson ACCEPT_FLOAT_AS_INT, on by default): an `int` field reads 1.5 as 1."""

    def adjust(self, chunk: Any) -> Any:
        for obj, key in _numbers(chunk):
            if (obj is not chunk.get("timings")) and isinstance(obj[key], float):
                obj[key] = int(obj[key])
        return chunk


@miniature("R6", _ACCEPTED, cases="synthetic/r6_finish_reason_number", kind=PITFALL)
class EnumOrdinals(_Reads):
    """Java (Jackson, FAIL_ON_NUMBERS_FOR_ENUMS off): a number is the enum constant's ordinal."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            reason = choice.get("finish_reason")
            if isinstance(reason, int) and 0 <= reason < 3:
                choice["finish_reason"] = list(FinishReason)[reason].value
        return chunk


@miniature("R6", _ACCEPTED, cases="synthetic/r6_trailing_garbage", kind=PITFALL)
class FirstValueOnly(_Reads):
    """Go (`json.NewDecoder(r).Decode`), Java (Jackson, FAIL_ON_TRAILING_TOKENS off), Python
    (`raw_decode`): reads the first JSON value and ignores what follows it."""

    def read(self, data: str) -> Any:
        return json.JSONDecoder().raw_decode(data.lstrip(" \t\r\n"))[0]


@miniature("R6", _ACCEPTED, cases="synthetic/r6_tool_index_null", kind=PITFALL)
class NullIsZero(_Reads):
    """Go (a non-pointer int), Java (a primitive int): a null or absent index is 0."""

    def adjust(self, chunk: Any) -> Any:
        for call in _calls(chunk):
            if call.get("index") is None:
                call["index"] = 0
        return chunk


@miniature("R6", _ACCEPTED, cases="synthetic/r6_progress_list", kind=PITFALL)
class StructFromArray(_Reads):
    """Rust (serde's derived Deserialize): a struct is also read from an array of its fields."""

    def adjust(self, chunk: Any) -> Any:
        progress = chunk.get("prompt_progress") if isinstance(chunk, dict) else None
        if isinstance(progress, list):
            chunk["prompt_progress"] = dict(zip(Progress.__struct_fields__, progress, strict=False))
        return chunk


@miniature(
    "R9",
    r'steps\[0\]\.error \(line \d+\): expected \(absent\), got \{"kind": "protocol"\}',
    cases="synthetic/r9_progress_max_safe_integer",
    kind=PITFALL,
)
class NarrowIntegers(_Reads):
    """Java (`int`), Rust (`u32`): an integer field is 32 bits, so a larger value is refused."""

    def adjust(self, chunk: Any) -> Any:
        progress = chunk.get("prompt_progress") if isinstance(chunk, dict) else None
        for value in progress.values() if isinstance(progress, dict) else ():
            if type(value) is int and not -(2**31) <= value < 2**31:
                raise InferError(ErrorKind.PROTOCOL, "out of range of int")
        return chunk


@miniature("R6", _ACCEPTED, cases="synthetic/r6_raw_control_char", kind=PITFALL)
class ControlCharsAllowed(_Reads):
    """Python (`json.loads(strict=False)`), Java (Jackson ALLOW_UNESCAPED_CONTROL_CHARS): a raw
    control character inside a string is kept."""

    def read(self, data: str) -> Any:
        return json.loads(data, strict=False)


# --- Bug classes of real clients' stream accumulators (issue 19) ---
#
# Each is the reference with one behaviour replaced by what a real client's accumulator does (its
# source in the docstring). `REAL_CLIENTS` below names the case that catches each, in plain mode.


def _delta_of(choice: dict[str, Any]) -> dict[str, Any]:
    delta = choice.get("delta")
    return delta if isinstance(delta, dict) else {}


def _new(key: Any, piece: ToolCallDelta) -> list[Any]:
    return [key, piece.index, piece.id, piece.name, piece.arguments]


def _merge(call: list[Any], piece: ToolCallDelta) -> None:
    """R2, done right: the first non-empty id and name stay; the arguments are appended."""
    call[2] = call[2] or piece.id
    call[3] = call[3] or piece.name
    call[4] += piece.arguments


class _Calls(_Base):
    """Builds the completion's tool calls itself from the reference's events, by `take`; the
    reference still decides everything else (errors included)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[Any]] = []  # [key, index, id, name, arguments]
        self.chunk: Any = None

    def take(self, piece: ToolCallDelta) -> None:
        for call in self.calls:
            if call[1] == piece.index:
                _merge(call, piece)
                return
        self.calls.append(_new(piece.index, piece))

    def seen(self, event: Any) -> None:
        """Any other event, in order."""

    def push(self, data: str) -> list[Any]:
        self.chunk = _json(data)
        events = super().push(data)
        for e in events:
            self.take(e) if isinstance(e, ToolCallDelta) else self.seen(e)
        return events

    def order(self, calls: list[list[Any]]) -> list[list[Any]]:
        return calls

    def arguments(self, text: str) -> str:
        return text

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        calls = tuple(
            ToolCall(c[2] or "", c[3] or "", self.arguments(c[4])) for c in self.order(self.calls)
        )
        return _with_completion(completion, tool_calls=calls)


@miniature(
    "R2",
    _T + r"\[2\] \(finish\): expected \(absent\)",
    cases="synthetic/r2_interleaved_tool_calls",
    kind=CLIENT,
)
class UpdatesLastCallOnly(_Calls):
    """llama_index (`update_tool_calls` in llama-index-llms-openai's utils.py): a piece is compared
    with the last call only; another index starts a new call, and a matching one has its id and
    name concatenated (`t.id += tc_delta.id or ""`)."""

    def take(self, piece: ToolCallDelta) -> None:
        last = self.calls[-1] if self.calls else None
        if last is None or last[1] != piece.index:
            self.calls.append(_new(piece.index, piece))
        else:
            last[2] = (last[2] or "") + (piece.id or "")
            last[3] = (last[3] or "") + (piece.name or "")
            last[4] += piece.arguments


@miniature(
    "R2",
    _T + r'\[0\]\.name .*got "read_fileread_file',
    cases="synthetic/r2_tool_call_id_name_repeated",
    kind=CLIENT,
)
class ConcatenatesIdAndName(_Calls):
    """LangChain (`merge_lists` of langchain-core concatenates string fields of chunks with the same
    index: `read_fileread_file`), open-webui (`middleware.py`: `name += delta_name`),
    openai-python (`_accumulate_delta` adds any repeated string)."""

    def take(self, piece: ToolCallDelta) -> None:
        for call in self.calls:
            if call[1] == piece.index:
                call[2] = (call[2] or "") + (piece.id or "")
                call[3] = (call[3] or "") + (piece.name or "")
                call[4] += piece.arguments
                return
        super().take(piece)


@miniature(
    "R2",
    _T + r'\[1\]\.arguments .*\\"a\.txt',
    cases="synthetic/r2_text_between_tool_calls",
    kind=CLIENT,
)
class IndexOffsetAfterText(_Calls):
    """llama.cpp web UI (tools/server/webui `chat.ts`, `toolCallIndexOffset`): text after a batch
    of tool calls closes the batch, and later indices are offset by the calls so far."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = 0
        self.open = False

    def seen(self, event: Any) -> None:
        if isinstance(event, Content | Reasoning) and self.open:
            self.offset, self.open = len(self.calls), False

    def take(self, piece: ToolCallDelta) -> None:
        self.open = True
        key = piece.index + self.offset
        for call in self.calls:
            if call[0] == key:
                _merge(call, piece)
                return
        self.calls.append(_new(key, piece))

    def order(self, calls: list[list[Any]]) -> list[list[Any]]:
        return sorted(calls, key=lambda c: c[0])


@miniature(
    "R5",
    _T + r'\[0\]\.arguments .*got "\{\}"',
    cases="synthetic/r5_length_cuts_tool_arguments",
    kind=CLIENT,
)
class RepairsArguments(_Calls):
    """open-webui (`middleware.py`, tool-call handling): arguments that are not JSON are repaired,
    by `ast.literal_eval` or else replaced with `{}`."""

    def arguments(self, text: str) -> str:
        import ast

        try:
            json.loads(text)
            return text
        except ValueError:
            pass
        try:
            return json.dumps(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            return "{}"


@miniature(
    "R2",
    _T + r'\[0\]\.arguments .*expected "\{\} ", got "\{\}"',
    cases="synthetic/r2_arguments_prefix_is_json",
    kind=CLIENT,
)
class FinishedOnceParsable(_Calls):
    """Vercel AI SDK (`openai-compatible-chat-language-model.ts`): once `isParsableJson(arguments)`
    holds, the call has finished and its later pieces are skipped."""

    def take(self, piece: ToolCallDelta) -> None:
        for call in self.calls:
            if call[1] == piece.index:
                if not call[0]:
                    _merge(call, piece)
                    call[0] = _parsable(call[4])
                return
        self.calls.append(_new(_parsable(piece.arguments), piece))


def _parsable(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


@miniature(
    "R2",
    _T + r'\[0\]\.arguments .*expected "", got "\{\}"',
    cases="synthetic/r2_tool_call_without_arguments",
    kind=CLIENT,
)
class EmptyArgumentsAsObject(_Calls):
    """openai-agents-python and LangChain (`args or "{}"`): a call without arguments gets `{}`."""

    def arguments(self, text: str) -> str:
        return text or "{}"


@miniature(
    "R2",
    _T + r'\[1\]\.arguments .*got "\{\\"a\\": 1\}"',
    cases="synthetic/r2_arguments_prefix_is_json",
    kind=CLIENT,
)
class ReserializesArguments(_Calls):
    """LangChain (`parse_tool_call` then `json.dumps` of `args`), LiteLLM: arguments that parse are
    written back with json.dumps, which changes their spacing and escapes."""

    def arguments(self, text: str) -> str:
        try:
            return json.dumps(json.loads(text))
        except ValueError:
            return text


@miniature(
    "R2",
    _T + r'\[10\]\.name .*expected "tool_10"',
    cases="synthetic/r2_tool_calls_twelve",
    kind=CLIENT,
)
class SortsIndexAsText(_Calls):
    """Python clients keeping calls in a dict keyed by the index as JSON text and sorting it
    (`sorted(calls)`), JavaScript `Object.keys(...).sort()`: call 10 comes after call 1."""

    def order(self, calls: list[list[Any]]) -> list[list[Any]]:
        return sorted(calls, key=lambda c: str(c[1]))


@miniature(
    "R2",
    _T + r'\[0\]\.name .*got "list_dir"',
    cases="synthetic/r2_tool_call_pieces_out_of_index_order",
    kind=CLIENT,
)
class OrdersByLatestPiece(_Calls):
    """A JavaScript `Map` updated with `delete` and `set`, a Python dict with `pop` and re-insert:
    a call moves to the end whenever it gets a piece."""

    def take(self, piece: ToolCallDelta) -> None:
        super().take(piece)
        call = next(c for c in self.calls if c[1] == piece.index)
        self.calls.remove(call)
        self.calls.append(call)


@miniature(
    "R2",
    _T + r'\[0\]\.arguments .*got ""',
    cases="synthetic/r2_tool_call_pieces_out_of_index_order",
    kind=CLIENT,
)
class AppendsToLatestCall(_Calls):
    """Hand-written loops (`if delta.id: calls.append(...) else: calls[-1].arguments += ...`, as in
    many tutorials and agents): a piece with an id opens a call, others go to the latest one."""

    def take(self, piece: ToolCallDelta) -> None:
        if piece.id or not self.calls:
            self.calls.append(_new(piece.index, piece))
        else:
            _merge(self.calls[-1], piece)


@miniature(
    "R2",
    _T + r"\[0\]\.arguments",
    cases="synthetic/r2_tool_call_pieces_out_of_index_order",
    kind=CLIENT,
)
class PositionAsIndex(_Calls):
    """Clients that enumerate `delta.tool_calls` (`for i, tc in enumerate(...)`) and use the
    position in the chunk instead of the piece's `index`."""

    def push(self, data: str) -> list[Any]:
        self.position = 0
        return super().push(data)

    def take(self, piece: ToolCallDelta) -> None:
        super().take(ToolCallDelta(self.position, piece.id, piece.name, piece.arguments))
        self.position += 1


@miniature(
    "R2",
    r'steps\[\d+\]\.events\[0\] .*"index": 10, .*got \(absent\)',
    cases="synthetic/r2_tool_calls_twelve",
    kind=CLIENT,
)
class TenToolSlots(_Reads):
    """A fixed table of ten tool calls (or a one-digit index pattern): pieces with index 10 and
    beyond are dropped."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            if isinstance(delta.get("tool_calls"), list):
                delta["tool_calls"] = [
                    p for p in delta["tool_calls"] if not (isinstance(p, dict) and _big_index(p))
                ]
        return chunk


def _big_index(piece: dict[str, Any]) -> bool:
    index = piece.get("index")
    return isinstance(index, int) and index >= 10


@miniature("SSE", _ACCEPTED, cases="synthetic/sse_done_suffix", kind=CLIENT)
class DoneByPrefix(_Base):
    """openai-python (`_streaming.py`: `if sse.data.startswith("[DONE]"): break`): `[DONE] ` or
    `[DONE]x` ends the stream."""

    ended = False

    def done(self, data: str) -> bool:
        return data.startswith("[DONE]")

    def push(self, data: str) -> list[Any]:
        if self.ended or self.done(data):
            self.ended = True
            return []
        return super().push(data)


@miniature("SSE", _ACCEPTED, cases="synthetic/sse_done_trailing_space", kind=CLIENT)
class DoneAfterTrim(DoneByPrefix):
    """go-openai (`stream_reader.go` trims each line with `bytes.TrimSpace` before comparing it
    with `[DONE]`), and clients that `strip()` the payload: `[DONE] ` ends the stream."""

    def done(self, data: str) -> bool:
        return data.strip() == "[DONE]"


@miniature("R2", _FAILED_EARLY, cases="synthetic/r2_payload_above_64_kib", kind=CLIENT)
class ScannerLimit(_Base):
    """go-openai / openai-go (`bufio.Scanner` with its default 64 KiB token limit): a longer
    payload fails with `bufio.Scanner: token too long`."""

    limit = 64 * 1024

    def push(self, data: str) -> list[Any]:
        if len(data.encode()) > self.limit:
            raise InferError(ErrorKind.PROTOCOL, "bufio.Scanner: token too long")
        return super().push(data)


@miniature(
    "R1",
    r'steps\[1\]\.events\[0\]\.text .*expected "a\\u0000b", got "a"',
    cases="synthetic/r1_nul_in_text",
    kind=CLIENT,
)
class CutsAtNul(_Reads):
    """C and C++ clients (and bindings that hand text on as C strings): text ends at the first
    NUL."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            for key in ("content", "reasoning_content"):
                if isinstance(delta.get(key), str):
                    delta[key] = delta[key].split("\0")[0]
        for call in _calls(chunk):
            function = call.get("function")
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                function["arguments"] = function["arguments"].split("\0")[0]
        return chunk


@miniature("R6", _ACCEPTED, cases="synthetic/r6_finish_reason_content_filter", kind=CLIENT)
class AcceptsOpenAIFinishReasons(_Reads):
    """openai-python, openai-node, go-openai: OpenAI's `content_filter` and `function_call` are
    accepted (read as `stop` here) instead of failing as llama-server's protocol says."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            if choice.get("finish_reason") in ("content_filter", "function_call"):
                choice["finish_reason"] = "stop"
        return chunk


@miniature(
    "R5",
    r'steps\[2\]\.events\[0\] .*" is 42\."\}, got \(absent\)',
    cases="synthetic/r5_finish_chunk_carries_text",
    kind=CLIENT,
)
class SkipsDeltaOfFinishChunk(_Reads):
    """Clients that handle `if choice.finish_reason: ...; continue` before the delta: text or a
    tool-call piece in the chunk with the finish reason is lost."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            if choice.get("finish_reason") is not None and isinstance(choice.get("delta"), dict):
                choice["delta"] = {}
        return chunk


@miniature(
    "R5",
    r"steps\[2\]\.state\.is_finished .*expected true, got false",
    cases="synthetic/r5_finish_reason_delta_null",
    kind=CLIENT,
)
class DropsChoiceWithoutDelta(_Reads):
    """LangChain (`_convert_chunk_to_generation_chunk` returns None when `delta` is None), Pydantic
    AI: a choice whose delta is null or absent is skipped, its finish reason with it."""

    def adjust(self, chunk: Any) -> Any:
        if isinstance(chunk, dict) and isinstance(chunk.get("choices"), list):
            chunk["choices"] = [
                c for c in chunk["choices"] if not (isinstance(c, dict) and c.get("delta") is None)
            ]
        return chunk


@miniature(
    "R7",
    r'steps\[1\]\.events\[0\] .*expected \(absent\), got \{"type": "reasoning"',
    cases="synthetic/r7_delta_reasoning_not_read",
    kind=CLIENT,
)
class ReadsDeltaReasoning(_Reads):
    """Vercel AI SDK (`delta.reasoning_content ?? delta.reasoning`), LiteLLM, open-webui: vLLM's and
    OpenRouter's `delta.reasoning` is read as reasoning."""

    name = "reasoning"

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            if delta.get("reasoning_content") is None and isinstance(delta.get(self.name), str):
                delta["reasoning_content"] = delta[self.name]
        return chunk


@miniature(
    "R7",
    r'steps\[1\]\.events\[0\] .*expected \(absent\), got \{"type": "reasoning"',
    cases="synthetic/r7_delta_thinking_not_read",
    kind=CLIENT,
)
class ReadsDeltaThinking(ReadsDeltaReasoning):
    """open-webui (`middleware.py`: `delta.get("reasoning_content") or delta.get("reasoning") or
    delta.get("thinking")`): `delta.thinking` is read as reasoning."""

    name = "thinking"


@miniature(
    "R7",
    r'expected \(absent\), got \{"type": "reasoning"',
    cases="synthetic/r7_delta_reasoning_not_read",
    kind=CLIENT,
)
class ConcatenatesBothReasoningFields(_Reads):
    """openai-node (`ChatCompletionStream` copies unknown delta fields) and clients that append
    `reasoning_content` and `reasoning` both: vLLM's doubled field doubles the reasoning."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            if isinstance(delta.get("reasoning"), str) and delta["reasoning"]:
                delta["reasoning_content"] = (delta.get("reasoning_content") or "") + delta[
                    "reasoning"
                ]
        return chunk


@miniature(
    "R7",
    _T + r'\[0\] \(finish\): expected \(absent\), got \{"id": "call_function"',
    cases="synthetic/r7_delta_function_call_not_read",
    kind=CLIENT,
)
class FunctionCallAsToolCall(_Reads):
    """LiteLLM (`stream_chunk_builder` maps `function_call` to a tool call), openai-python
    (`ChatCompletionStreamState` accumulates `function_call`): the deprecated field is read."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            call = delta.get("function_call")
            if isinstance(call, dict):
                piece: dict[str, Any] = {"index": 0, "function": call}
                if call.get("name"):
                    piece["id"] = "call_function"
                delta["tool_calls"] = [piece]
        return chunk


@miniature(
    "R7",
    r'finish\.completion\.content .*expected "Hi", got "HelloHi"',
    cases="synthetic/r7_choice_text_not_read",
    kind=CLIENT,
)
class ReadsChoiceText(_Reads):
    """LiteLLM (text-completion streaming reads `choice.text`), clients of TGI: `choice.text` is
    read as content when the delta has none."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = choice.get("delta")
            if isinstance(choice.get("text"), str) and isinstance(delta, dict):
                delta.setdefault("content", None)
                delta["content"] = (
                    delta["content"] if delta["content"] is not None else choice["text"]
                )
        return chunk


@miniature("R6", _ACCEPTED, cases="synthetic/r6_content_array_of_parts", kind=CLIENT)
class JoinsContentParts(_Reads):
    """LiteLLM and LangChain (content blocks): content as an array of parts is read as their text
    joined, instead of failing as a wrong type."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            if isinstance(delta.get("content"), list):
                delta["content"] = "".join(
                    p.get("text", "") for p in delta["content"] if isinstance(p, dict)
                )
        return chunk


@miniature(
    "R7",
    r"state\.reasoning_tokens .*expected 1, got 42",
    cases="synthetic/r7_usage_details_not_read",
    kind=CLIENT,
)
class ReasoningTokensFromUsage(_Base):
    """LiteLLM, LangChain (`usage_metadata.output_token_details.reasoning`): reasoning_tokens are
    taken from OpenAI's `usage.completion_tokens_details.reasoning_tokens`."""

    usage: int | None = None

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        chunk = _json(data)
        usage = chunk.get("usage") if isinstance(chunk, dict) else None
        details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
        if isinstance(details, dict) and isinstance(details.get("reasoning_tokens"), int):
            self.usage = details["reasoning_tokens"]
        return events

    @property
    def reasoning_tokens(self) -> int:
        return self.inner.reasoning_tokens if self.usage is None else self.usage

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        return _with_completion(completion, reasoning_tokens=self.reasoning_tokens)


@miniature(
    "R4",
    r"steps\[4\]\.state\.reasoning_tokens .*expected 9, got 1",
    cases="synthetic/r4_reasoning_without_timings_after_timings",
    kind=CLIENT,
)
class ReasoningTokensFromOwnChunk(_Base):
    """Clients that read `chunk.timings.predicted_n` only when the chunk with reasoning carries
    timings (llama.cpp web UI's `timings` handling per chunk): a reasoning chunk without timings
    after a timings-only chunk leaves the count behind."""

    count = 0

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        chunk = _json(data)
        timings = chunk.get("timings") if isinstance(chunk, dict) else None
        reasoning = any(isinstance(e, Reasoning) for e in events)
        if reasoning and isinstance(timings, dict) and isinstance(timings.get("predicted_n"), int):
            self.count = timings["predicted_n"]
        return events

    @property
    def reasoning_tokens(self) -> int:
        return self.count

    def finish(self, thinking_capped: bool) -> Completion:
        return _with_completion(super().finish(thinking_capped), reasoning_tokens=self.count)


@miniature(
    "R4",
    r"steps\[3\]\.state\.reasoning_tokens .*expected 1, got 9",
    cases="synthetic/r4_reasoning_without_timings_after_timings",
    kind=CLIENT,
)
class ReasoningTokensOnAnyTimings(_Base):
    """Clients that copy `timings.predicted_n` into the reasoning count on every chunk, answer text
    included, instead of only when the chunk carries reasoning."""

    count = 0

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        chunk = _json(data)
        timings = chunk.get("timings") if isinstance(chunk, dict) else None
        counting = self.inner.reasoning_tokens or any(isinstance(e, Reasoning) for e in events)
        if counting and isinstance(timings, dict) and isinstance(timings.get("predicted_n"), int):
            self.count = timings["predicted_n"]
        return events

    @property
    def reasoning_tokens(self) -> int:
        return self.count

    def finish(self, thinking_capped: bool) -> Completion:
        return _with_completion(super().finish(thinking_capped), reasoning_tokens=self.count)


@miniature(
    "R4",
    r"steps\[2\]\.state\.in_reasoning .*expected true, got false",
    cases="synthetic/r4_in_reasoning_across_empty_chunks",
    kind=CLIENT,
)
class InReasoningPerChunk(_Base):
    """Clients that set `in_reasoning = bool(delta.reasoning_content)` for each chunk: a chunk
    without text (an empty delta, timings, the finish) ends the reasoning."""

    flag = False

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        self.flag = bool(events) and self.inner.in_reasoning
        return events

    @property
    def in_reasoning(self) -> bool:
        return self.flag


@miniature(
    "R4",
    r"steps\[3\]\.state\.in_reasoning .*expected false, got true",
    cases="synthetic/r4_empty_reasoning_after_content",
    kind=CLIENT,
)
class EmptyReasoningStartsReasoning(_Base):
    """Clients that test `"reasoning_content" in delta` (or `!== undefined`): `reasoning_content:
    ""` after answer text turns the reasoning state back on."""

    flag = False

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        self.flag = self.inner.in_reasoning
        chunk = _json(data)
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            if delta.get("reasoning_content") == "" and not delta.get("content"):
                self.flag = True
        return events

    @property
    def in_reasoning(self) -> bool:
        return self.flag


@miniature(
    "R1",
    r'steps\[1\]\.events\[0\]\.type .*expected "reasoning", got "content"',
    cases="synthetic/r1_chunk_reasoning_content",
    kind=CLIENT,
)
class ElifContentReasoning(_Reads):
    """Clients with `if delta.content: ... elif delta.reasoning_content: ...`: reasoning in a chunk
    that also has answer text is lost."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            if delta.get("content") and delta.get("reasoning_content"):
                del delta["reasoning_content"]
        return chunk


@miniature(
    "R1",
    r'steps\[1\]\.events\[1\] .*"type": "tool_call_delta".*got \(absent\)',
    cases="synthetic/r1_chunk_content_tool_call",
    kind=CLIENT,
)
class ElifContentToolCalls(_Reads):
    """Clients with `if delta.content: ... elif delta.tool_calls: ...`: tool-call pieces in a chunk
    that also has answer text are lost."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            if delta.get("content") and delta.get("tool_calls"):
                del delta["tool_calls"]
        return chunk


@miniature(
    "I7",
    r'steps\[1\]\.events\[1\] .*"text": "A"\}, got \(absent\)',
    cases="synthetic/i7_choice_index_0_listed_second",
    kind=CLIENT,
)
class FirstChoiceOnly(_Reads):
    """Clients that read `chunk.choices[0]` only (most hand-written loops, go-openai examples):
    the first choice, whatever its index (I7 allows keeping the one with index 0)."""

    def adjust(self, chunk: Any) -> Any:
        if isinstance(chunk, dict) and isinstance(chunk.get("choices"), list):
            chunk["choices"] = chunk["choices"][:1]
        return chunk


@miniature(
    "R1",
    r'steps\[2\]\.events\[0\] .*"content", "text": "Hel"\}, got \(absent\)',
    cases="synthetic/r1_seq_tool_call_then_content",
    kind=CLIENT,
)
class DropsTextAfterToolCalls(_Reads):
    """Clients that switch to a tool-call message once a call began: answer text after a tool
    call is lost."""

    calling = False

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            if self.calling and "content" in delta:
                del delta["content"]
            if delta.get("tool_calls"):
                self.calling = True
        return chunk


@miniature(
    "R1",
    r'steps\[2\]\.events\[0\] .*"reasoning", "text": "Let me"\}, got \(absent\)',
    cases="synthetic/r1_seq_content_then_reasoning",
    kind=CLIENT,
)
class DropsReasoningAfterContent(_Reads):
    """Clients that close the thinking block for good at the first answer text (a `<think>` block
    rendered once): later reasoning is lost."""

    answering = False

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            if self.answering and "reasoning_content" in delta:
                del delta["reasoning_content"]
            if delta.get("content"):
                self.answering = True
        return chunk


@miniature(
    "R1",
    r'steps\[2\]\.events\[0\] .*"text": "Hel"\}, got \(absent\)',
    cases="synthetic/r1_seq_finish_then_content",
    kind=CLIENT,
)
class IgnoresChunksAfterFinish(_Base):
    """Clients that stop reading at the finish reason (`if finish_reason: break`): the usage chunk's
    timings and any later text are lost."""

    def push(self, data: str) -> list[Any]:
        if self.inner.is_finished:
            return []
        return super().push(data)


@miniature(
    "R7",
    r"finish\.completion\.timings\.predicted_n .*expected 3, got 2",
    cases="synthetic/r7_usage_chunk_after_finish",
    kind=CLIENT,
)
class SkipsEmptyChoicesChunk(_Base):
    """Clients that skip a chunk whose `choices` is empty (`if not chunk.choices: continue`):
    llama-server's last chunk, with its timings, is lost."""

    def push(self, data: str) -> list[Any]:
        chunk = _json(data)
        if isinstance(chunk, dict) and chunk.get("choices") == [] and "error" not in chunk:
            return []
        return super().push(data)


@miniature(
    "R5",
    _T + r"\[0\] \(finish\): expected \{.*got \(absent\)",
    cases="synthetic/r5_tool_calls_finish_stop",
    kind=CLIENT,
)
class ToolCallsOnlyWithToolCallsReason(_Base):
    """Clients that keep tool calls only when `finish_reason == "tool_calls"` (OpenAI's own
    examples): calls that finish with `stop` or `length` are lost."""

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        if completion.finish_reason != FinishReason.TOOL_CALLS:
            return _with_completion(completion, tool_calls=())
        return completion


@miniature(
    "R5",
    r'finish\.completion\.finish_reason .*expected "stop", got "stopstop"',
    cases="synthetic/r5_finish_reason_repeated_same",
    kind=CLIENT,
)
class ConcatenatesFinishReasons(_Base):
    """LangChain (`merge_dicts` of response_metadata concatenates strings: `lengthstop`)."""

    def __init__(self) -> None:
        super().__init__()
        self.reasons: list[str] = []

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        for choice in _choices(_json(data)):
            if isinstance(choice.get("finish_reason"), str):
                self.reasons.append(choice["finish_reason"])
        return events

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        return _with_completion(completion, finish_reason="".join(self.reasons))


@miniature(
    "R2",
    r'finish\.completion\.content .*got "Hello"',
    cases="synthetic/r2_white_space_text_kept",
    kind=CLIENT,
)
class StripsText(_Base):
    """Clients that `strip()` the final message (open-webui's `content.strip()`, many UIs): leading
    and trailing white space of content and reasoning is lost."""

    def finish(self, thinking_capped: bool) -> Completion:
        c = super().finish(thinking_capped)
        return _with_completion(
            c,
            content=c.content.strip() if c.content else c.content,
            reasoning_content=c.reasoning_content.strip() if c.reasoning_content else None,
        )


@miniature(
    "R1",
    r'finish\.completion\.content .*got "Answer "',
    cases="synthetic/r1_think_tags_in_content",
    kind=CLIENT,
)
class ThinkTagsToReasoning(_Base):
    """open-webui (`middleware.py`, `DEFAULT_REASONING_TAGS`): `<think>...</think>` in content is
    moved into the reasoning."""

    def finish(self, thinking_capped: bool) -> Completion:
        c = super().finish(thinking_capped)
        if not c.content or "<think>" not in c.content:
            return c
        inner = re.findall(r"<think>(.*?)</think>", c.content, re.S)
        content = re.sub(r"<think>.*?</think>", "", c.content, flags=re.S) or None
        reasoning = (c.reasoning_content or "") + "".join(inner)
        return _with_completion(c, content=content, reasoning_content=reasoning or None)


@miniature(
    "R2",
    r'steps\[2\]\.events\[0\] .*"text": "ha"\}, got \(absent\)',
    cases="synthetic/r2_repeated_and_prefix_pieces",
    kind=CLIENT,
)
class DropsRepeatedPiece(_Reads):
    """Clients that drop a text piece equal to the previous one, taking it for a re-sent chunk."""

    last: Any = None

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            text = delta.get("content")
            if isinstance(text, str) and text:
                if text == self.last:
                    del delta["content"]
                self.last = text
        return chunk


@miniature(
    "R2",
    r'finish\.completion\.content .*expected "hahaaaha0"',
    cases="synthetic/r2_repeated_and_prefix_pieces",
    kind=CLIENT,
)
class SnapshotHeuristic(_Reads):
    """Clients that also accept servers sending the whole text so far: a piece that starts with the
    text so far replaces it instead of being appended."""

    text = ""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            piece = delta.get("content")
            if isinstance(piece, str) and piece:
                if self.text and piece.startswith(self.text):
                    delta["content"] = piece[len(self.text) :]
                    piece = delta["content"]
                self.text += piece
        return chunk


@miniature("R2", _FAILED_EARLY, cases="synthetic/r2_tool_call_id_name_late", kind=CLIENT)
class RequiresIdInFirstPiece(_Reads):
    """Vercel AI SDK (`InvalidResponseDataError: Expected 'id' to be a string.` when a new call's
    first piece has no id): a call whose id comes later fails the stream."""

    def __init__(self) -> None:
        super().__init__()
        self.known: set[Any] = set()

    def adjust(self, chunk: Any) -> Any:
        for call in _calls(chunk):
            if call.get("index") not in self.known:
                if not isinstance(call.get("id"), str):
                    raise InferError(ErrorKind.PROTOCOL, "Expected 'id' to be a string.")
                self.known.add(call.get("index"))
        return chunk


@miniature("R2", _FAILED_EARLY, cases="synthetic/r2_tool_call_without_type", kind=CLIENT)
class RequiresFunctionType(_Reads):
    """Vercel AI SDK (@ai-sdk/openai: `Expected 'function' type.` when a new call's first piece
    lacks `"type": "function"`)."""

    def __init__(self) -> None:
        super().__init__()
        self.known: set[Any] = set()

    def adjust(self, chunk: Any) -> Any:
        for call in _calls(chunk):
            if call.get("index") not in self.known:
                if call.get("type") != "function":
                    raise InferError(ErrorKind.PROTOCOL, "Expected 'function' type.")
                self.known.add(call.get("index"))
        return chunk


@miniature(
    "R1",
    r"crashed at step 1 .*push raised TypeError",
    cases="synthetic/r1_tool_call_without_function",
    kind=CLIENT,
)
class CrashesWithoutFunction(_Reads):
    """openai-node 7 (`ChatCompletionStream` reads `tool_call.function.name` unguarded): a piece
    without `function` crashes."""

    def push(self, data: str) -> list[Any]:
        for call in _calls(_json(data)):
            if not isinstance(call.get("function"), dict):
                raise TypeError("Cannot read properties of undefined (reading 'name')")
        return super().push(data)


@miniature(
    "R1",
    r'finish\.completion\.reasoning_content .*got " think\."',
    cases="synthetic/r1_seq_reasoning_then_reasoning",
    kind=CLIENT,
)
class LastReasoningFragment(_Base):
    """openai-node (`ChatCompletionStream` copies the unknown `reasoning_content` with
    `Object.assign`, so each fragment replaces the last)."""

    last: str | None = None

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        for e in events:
            if isinstance(e, Reasoning):
                self.last = e.text
        return events

    def finish(self, thinking_capped: bool) -> Completion:
        return _with_completion(super().finish(thinking_capped), reasoning_content=self.last)


@miniature(
    "R1",
    _T + r'\[0\]\.arguments .*got "None',
    cases="synthetic/r1_arguments_absent_null_empty",
    kind=CLIENT,
)
class NoneArgumentsAsText(_Calls):
    """Python loops with `arguments += str(piece.function.arguments)`: a null piece adds "None"."""

    def push(self, data: str) -> list[Any]:
        self.nulls = [
            c.get("index")
            for c in _calls(_json(data))
            if isinstance(c.get("function"), dict)
            and "arguments" in c["function"]
            and c["function"]["arguments"] is None
        ]
        return super().push(data)

    def take(self, piece: ToolCallDelta) -> None:
        if piece.index in self.nulls and not piece.arguments:
            piece = ToolCallDelta(piece.index, piece.id, piece.name, "None")
        super().take(piece)


@miniature(
    "R8",
    r'steps\[1\]\.error .*expected \(absent\), got \{"kind": "server"',
    cases="synthetic/r8_error_null_ignored",
    kind=CLIENT,
)
class ErrorNullIsError(_Base):
    """Vercel AI SDK (`"error" in chunk` before the schema check): `"error": null` becomes a stream
    error."""

    def push(self, data: str) -> list[Any]:
        chunk = _json(data)
        if isinstance(chunk, dict) and "error" in chunk and chunk["error"] is None:
            raise InferError(ErrorKind.SERVER, "")
        return super().push(data)


@miniature(
    "R4",
    r"steps\[2\]\.state\.reasoning_tokens .*expected 0, got 3",
    cases="synthetic/r4_predicted_n_zero",
    kind=CLIENT,
)
class PredictedNTruthy(_Base):
    """Python (`if timings.get("predicted_n"):`), JavaScript (`if (t.predicted_n)`): a
    predicted_n of 0 is skipped, so the reasoning count keeps its old value."""

    count = 0

    def push(self, data: str) -> list[Any]:
        before = self.inner.reasoning_tokens
        events = super().push(data)
        after = self.inner.reasoning_tokens
        self.count = self.count if after == 0 and before != 0 else after
        return events

    @property
    def reasoning_tokens(self) -> int:
        return self.count

    def finish(self, thinking_capped: bool) -> Completion:
        return _with_completion(super().finish(thinking_capped), reasoning_tokens=self.count)


class AcceptsInvalidInput(_Base):
    """Section 10 of the spec: every valid stream right, every invalid input accepted. The
    reference under the outcomes that refuse nothing at an implementation-defined point, its
    `protocol` errors swallowed: a refused payload is skipped, a refused finish returns what the
    stream made so far. The verdict must say exactly that, not that it fails like a target
    that loses tool calls."""

    def __init__(self) -> None:
        accepting = {"I1": "integer", "I2": "exact", "I3": "ignore", "I4": "last"}
        self.inner = reference.Assembler(reference.choices.REFERENCE.replace(accepting))
        self.texts: dict[str, list[str]] = {"content": [], "reasoning": []}

    def push(self, data: str) -> list[Any]:
        try:
            events = self.inner.push(data)
        except InferError as exc:
            if exc.kind != ErrorKind.PROTOCOL:
                raise
            return []
        for event in events:
            if isinstance(event, Content | Reasoning):
                self.texts["content" if isinstance(event, Content) else "reasoning"].append(
                    event.text
                )
        return events

    def finish(self, thinking_capped: bool) -> Completion:
        try:
            return self.inner.finish(thinking_capped)
        except InferError as exc:
            if exc.kind != ErrorKind.PROTOCOL:
                raise
        content, reasoning = ("".join(t) or None for t in self.texts.values())
        return Completion(
            id=self.inner.id or "",
            content=content,
            reasoning_content=reasoning,
            tool_calls=(),
            finish_reason=FinishReason.STOP,
            timings=None,
            reasoning_tokens=self.inner.reasoning_tokens,
            thinking_capped=thinking_capped,
        )


@miniature(
    "R5",
    r'finish\.completion\.finish_reason .*expected "stop", got "tool_calls"',
    cases="synthetic/r5_tool_calls_finish_stop",
    kind=CLIENT,
)
class ToolCallsForceReason(_Base):
    """LiteLLM (`stream_chunk_builder`: a completion with tool calls gets finish_reason
    `tool_calls` even when the server said `stop`)."""

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        if completion.tool_calls and completion.finish_reason == FinishReason.STOP:
            return _with_completion(completion, finish_reason=FinishReason.TOOL_CALLS)
        return completion


@miniature(
    "R2",
    _T + r'\[0\]\.id .*got ""',
    cases="synthetic/r2_tool_call_later_pieces_empty_id_name",
    kind=CLIENT,
)
class EmptyOverridesIdAndName(_Calls):
    """Clients with `if piece.id is not None: call.id = piece.id` (and the same for the name): a
    later piece's `""` replaces the call's id and name."""

    def take(self, piece: ToolCallDelta) -> None:
        for call in self.calls:
            if call[1] == piece.index:
                call[2] = piece.id if piece.id is not None else call[2]
                call[3] = piece.name if piece.name is not None else call[3]
                call[4] += piece.arguments
                return
        super().take(piece)


@miniature("R9", r'state\.id .*got ""', cases="synthetic/r9_id_empty_after_real", kind=CLIENT)
class LatestIdNotNull(_Base):
    """Clients with `if chunk.id is not None: completion.id = chunk.id`: a later `"id": ""`
    replaces the completion id."""

    latest: str | None = None

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        chunk = _json(data)
        if isinstance(chunk, dict) and isinstance(chunk.get("id"), str):
            self.latest = chunk["id"] if self.latest is not None else (chunk["id"] or None)
        return events

    @property
    def id(self) -> str | None:
        return self.latest

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        return _with_completion(completion, id=self.latest)


@miniature("R2", _FAILED_EARLY, cases="synthetic/r2_payload_above_1_mib", kind=CLIENT)
class ScannerLimitOneMiB(ScannerLimit):
    """term-llm and goai (Go clients that raised `bufio.Scanner`'s buffer to 1 MiB): a longer
    payload still fails with `token too long`."""

    limit = 1024 * 1024


@miniature(
    "R1",
    r'finish\.completion\.reasoning_content .*expected "<think>Plan\..*got "Plan\.',
    cases="synthetic/r1_think_tags_in_content",
    kind=CLIENT,
)
class StripsThinkTags(_Base):
    """Clients that remove `<think>` and `</think>` from the reasoning text they show (Qwen-style
    tags), changing the reasoning the server sent."""

    def finish(self, thinking_capped: bool) -> Completion:
        c = super().finish(thinking_capped)
        text = c.reasoning_content
        if text is None:
            return c
        return _with_completion(c, reasoning_content=re.sub(r"</?think>", "", text) or None)


@miniature(
    "R7",
    r'steps\[1\]\.events\[0\] .*got \{"type": "content"',
    cases="synthetic/r7_delta_refusal_not_read",
    kind=CLIENT,
)
class ReadsRefusal(_Reads):
    """Chat UIs that show OpenAI's `delta.refusal` as answer text (appended to the content)."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = _delta_of(choice)
            if isinstance(delta.get("refusal"), str):
                delta["content"] = delta["refusal"] + (delta.get("content") or "")
        return chunk


@miniature(
    "R7",
    r'finish\.completion\.content .*expected "Hi", got "HiHi there"',
    cases="synthetic/r7_choice_message_not_read",
    kind=CLIENT,
)
class ReadsChoiceMessage(_Reads):
    """Clients that accept both shapes (`choice.delta ?? choice.message`, or the message when
    present): the non-streamed `message` is read from a stream chunk."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            if isinstance(choice.get("message"), dict):
                choice["delta"] = {"content": choice["message"].get("content")}
        return chunk


@miniature(
    "R1",
    r'finish\.completion\.content .*expected "Hel", got null',
    cases="synthetic/r1_seq_content_then_role",
    kind=CLIENT,
)
class RoleStartsNewMessage(_Base):
    """Clients that start a new message at every `delta.role` (the OpenAI stream's first chunk):
    text before a later role chunk is lost."""

    def __init__(self) -> None:
        super().__init__()
        self.content: list[str] = []

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        if any(_delta_of(c).get("role") for c in _choices(_json(data))):
            self.content = []
        self.content += [e.text for e in events if isinstance(e, Content)]
        return events

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        return _with_completion(completion, content="".join(self.content) or None)


# --- Issue 34: lax decoders, near-names, edge texts and ids, tool-call combinations ---
#
# Planted bugs of the classes issue 34's cases and near-names are for, each written as a client
# would write it (not from the cases): `SUITE_POWER` names the case and mode that must catch
# each; tests/integration/test_miniatures.py runs them.

#: The fields the rules read, by level, as a client's typed model would list them.
_SCALARS = {
    "top": ("id",),
    "choice": ("finish_reason",),
    "delta": ("content", "reasoning_content"),
    "call": ("index", "id"),
    "function": ("name", "arguments"),
    "timings": tuple(Timings.__struct_fields__),
    "prompt_progress": tuple(Progress.__struct_fields__),
    "error": ("message",),
}
_CONTAINERS = {
    "top": ("choices", "timings", "prompt_progress", "error"),
    "choice": ("delta",),
    "delta": ("tool_calls",),
    "call": ("function",),
}


def _levels(chunk: Any) -> list[tuple[str, dict[str, Any]]]:
    """Every object of a decoded chunk that has read fields, with its level."""
    if not isinstance(chunk, dict):
        return []
    found = [("top", chunk)]
    found += [(k, chunk[k]) for k in ("timings", "prompt_progress", "error") if isinstance(
        chunk.get(k), dict)]  # fmt: skip
    for choice in _choices(chunk):
        found.append(("choice", choice))
        delta = choice.get("delta")
        if isinstance(delta, dict):
            found.append(("delta", delta))
            for call in _calls({"choices": [{"delta": delta}]}):
                found.append(("call", call))
                if isinstance(call.get("function"), dict):
                    found.append(("function", call["function"]))
    return found


class _Coerces(_Reads):
    """Reads the chunk, then gives each read field's value to `coerce` (level, name, value) and
    keeps what it returns (`_ABSENT`: the member is dropped)."""

    def coerce(self, level: str, name: str, value: Any) -> Any:
        return value

    def adjust(self, chunk: Any) -> Any:
        for level, obj in _levels(chunk):
            for name in (*_SCALARS.get(level, ()), *_CONTAINERS.get(level, ())):
                if name in obj:
                    value = self.coerce(level, name, obj[name])
                    if value is _ABSENT:
                        del obj[name]
                    else:
                        obj[name] = value
        return chunk


_ABSENT: Any = object()


@miniature(
    "R6",
    r'steps\[1\]\.events .*got \[\{"type": "content", "text": "Hi"\}\]',
    cases="synthetic/type_confusion/delta_content_as_one_element_array",
    kind=POWER,
)
class UnwrapsOneElementArrays(_Coerces):
    """Jackson (UNWRAP_SINGLE_VALUE_ARRAYS), JavaScript's `String([x])`: `["Hi"]` is `"Hi"`."""

    def coerce(self, level: str, name: str, value: Any) -> Any:
        wants_list = name in ("choices", "tool_calls")
        if isinstance(value, list) and len(value) == 1 and not wants_list:
            return value[0]
        return value


@miniature("R6", _ACCEPTED, cases="synthetic/type_confusion/delta_tool_calls_as_false", kind=POWER)
class FalsyMeansAbsent(_Coerces):
    """JavaScript's `delta.tool_calls || []`, Python's `chunk.get("error") or None`: a falsy
    value where an object or array belongs (`false`, `0`, `""`, `[]` for an object) is absent."""

    def coerce(self, level: str, name: str, value: Any) -> Any:
        if name not in _CONTAINERS.get(level, ()) or value is None or value:
            return value
        valid = isinstance(value, dict) or (isinstance(value, list) and name.endswith("s"))
        return value if valid else None


@miniature(
    "R6",
    _ACCEPTED,
    cases="synthetic/type_confusion/choice_finish_reason_as_one_key_map",
    kind=POWER,
)
class EnumFromOneKeyMap(_Coerces):
    """serde (an externally tagged enum): `{"stop": null}` is the finish reason stop."""

    def coerce(self, level: str, name: str, value: Any) -> Any:
        if name == "finish_reason" and isinstance(value, dict) and len(value) == 1:
            return next(iter(value))
        return value


@miniature(
    "R8",
    r'steps\[1\]\.error\.kind .*expected "protocol", got "server"',
    cases="synthetic/type_confusion/error_message_as_two_element_array",
    kind=POWER,
)
class JoinsErrorMessageParts(_Coerces):
    """Clients that accept a list of messages (`" ".join(msg) if isinstance(msg, list)`): an
    error message that is an array of strings is joined."""

    def coerce(self, level: str, name: str, value: Any) -> Any:
        if level == "error" and isinstance(value, list) and all(isinstance(v, str) for v in value):
            return ", ".join(value)
        return value


@miniature(
    "R6", _ACCEPTED, cases="synthetic/type_confusion/choice_delta_as_empty_string", kind=POWER
)
class EmptyStringIsNull(_Coerces):
    """Jackson (ACCEPT_EMPTY_STRING_AS_NULL_OBJECT, blank as empty): `""` or `" "` where an
    object, an array, a number or a finish reason belongs is null."""

    def coerce(self, level: str, name: str, value: Any) -> Any:
        text_field = name in ("id", "content", "reasoning_content", "name", "arguments", "message")
        if isinstance(value, str) and not value.strip() and not text_field:
            return None
        return value


@miniature("R6", _ACCEPTED, cases="synthetic/type_confusion/choice_delta_as_json_text", kind=POWER)
class ParsesJsonText(_Coerces):
    """`typeof x === "string" ? JSON.parse(x) : x` (pydantic's Json[...]): an object or array
    written as JSON text is parsed."""

    def coerce(self, level: str, name: str, value: Any) -> Any:
        if name in _CONTAINERS.get(level, ()) and isinstance(value, str):
            with contextlib.suppress(ValueError):
                return json.loads(value)
        return value


@miniature("R7", _NEAR_VALUE, cases="llama-server/*", mode="unknown-fields", kind=POWER)
class ReadsCamelCase(_Reads):
    """Swift's `JSONDecoder.keyDecodingStrategy = .convertFromSnakeCase` (and naming policies
    that map camelCase to the snake_case fields): `reasoningContent` is `reasoning_content`."""

    def adjust(self, chunk: Any) -> Any:
        def snake(key: str) -> str:
            return re.sub(r"(?<!^)([A-Z])", lambda m: "_" + m.group(1).lower(), key)

        def walk(value: Any) -> Any:
            if isinstance(value, dict):
                return {snake(k): walk(v) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v) for v in value]
            return value

        return walk(chunk)


@miniature("R7", _NEAR_VALUE, cases="llama-server/*", mode="unknown-fields", kind=POWER)
class MatchesKeysWithoutCase(_Reads):
    """Go's encoding/json: a key matches a struct field without case and with Unicode folding
    (`Content`, `FINISH_REASON`, a long s U+017F for s); the last matching key wins."""

    def adjust(self, chunk: Any) -> Any:
        for level, obj in _levels(chunk):
            names = (*_SCALARS.get(level, ()), *_CONTAINERS.get(level, ()))
            folded = {n.casefold(): n for n in names}
            for key in list(obj):
                name = folded.get(key.casefold().replace("\u017f", "s").replace("\u212a", "k"))
                if name is not None and key != name:
                    obj[name] = obj.pop(key)
        return chunk


@miniature(
    "R8",
    r'error \(line \d+\): expected \(absent\), got \{"kind": "server"',
    cases="llama-server/*",
    mode="unknown-fields",
    kind=POWER,
)
class TopLevelMessageIsError(_Base):
    """Clients that take any chunk with a top-level `message` or `detail` for an error body."""

    def push(self, data: str) -> list[Any]:
        chunk = _json(data)
        if isinstance(chunk, dict) and ("message" in chunk or "detail" in chunk):
            raise InferError(ErrorKind.SERVER, str(chunk.get("message") or chunk.get("detail")))
        return super().push(data)


@miniature(
    "R7", r'\\"type\\": \\"ping\\"', cases="llama-server/*", mode="unknown-fields", kind=POWER
)
class SkipsPingEvents(_Base):
    """Clients written for Anthropic's stream: a chunk whose `type` is `ping` is skipped."""

    def push(self, data: str) -> list[Any]:
        chunk = _json(data)
        if isinstance(chunk, dict) and chunk.get("type") == "ping":
            return []
        return super().push(data)


@miniature(
    "R1",
    r'steps\[1\]\.events\[0\]\.text .*expected "assistant: Hi", got "Hi"',
    cases="synthetic/edges/content_starts_with_assistant_colon",
    kind=POWER,
)
class StripsRolePrefix(_Base):
    """Chat front ends that strip a leading speaker tag (`assistant:`, `<|im_start|>assistant`)
    from the answer, as if the model had echoed its role."""

    _PREFIX = re.compile(r"^(?:<\|im_start\|>assistant\n?|assistant:\s*)", re.IGNORECASE)

    def __init__(self) -> None:
        super().__init__()
        self.content: list[str] = []

    def push(self, data: str) -> list[Any]:
        events = []
        for e in super().push(data):
            if isinstance(e, Content) and not self.content:
                e = Content(self._PREFIX.sub("", e.text))
            if isinstance(e, Content):
                self.content.append(e.text)
            events.append(e)
        return events

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        return _with_completion(completion, content="".join(self.content) or None)


@miniature(
    "R1",
    r'expected \{"type": "content", "text": "data: \[DONE\]"\}, got \(absent\)',
    cases="synthetic/edges/content_holds_data_done",
    kind=POWER,
)
class DoneAnywhereInLine(_Base):
    """Line readers that end the stream once `[DONE]` appears in a line (`"[DONE]" in line`),
    even inside a payload's text."""

    def __init__(self) -> None:
        super().__init__()
        self.ended = False

    def push(self, data: str) -> list[Any]:
        if self.ended or "[DONE]" in data:
            self.ended = True
            return []
        return super().push(data)


@miniature(
    "R9",
    r'state\.id .*expected " ", got null',
    cases="synthetic/edges/completion_id_is_a_space",
    kind=POWER,
)
class BlankIdIsMissing(_Reads):
    """Validation with `str.strip()` (`if not id.strip()`, `@NotBlank`, zod's `.trim().min(1)`):
    an id or name of white space only is taken for none."""

    def adjust(self, chunk: Any) -> Any:
        for level, obj in _levels(chunk):
            for name in ("id", "name"):
                value = obj.get(name)
                if level in ("top", "call", "function") and isinstance(value, str):
                    obj[name] = value if value.strip() or not value else None
        return chunk


@miniature(
    "R2",
    _T + r'\[1\] .*"id": "call_abc".*got \(absent\)',
    cases="synthetic/edges/tool_call_ids_differ_only_in_case",
    kind=POWER,
)
class CallsKeyedByIdWithoutCase(_Calls):
    """Calls kept in a map keyed by their id, compared without case (a case-insensitive map, an
    `id.lower()` key): two calls whose ids differ only in case become one."""

    def take(self, piece: ToolCallDelta) -> None:
        if piece.id:
            for call in self.calls:
                if call[2] and call[2].lower() == piece.id.lower() and call[1] != piece.index:
                    call[4] += piece.arguments
                    self.aliases[piece.index] = call[1]
                    return
        index = self.aliases.get(piece.index, piece.index)
        super().take(ToolCallDelta(index, piece.id, piece.name, piece.arguments))

    def __init__(self) -> None:
        super().__init__()
        self.aliases: dict[int, int] = {}


@miniature(
    "R2",
    _T + r'\[0\]\.id .*expected "call_0", got "call_1"',
    cases="synthetic/tool_pairs/ids_out_of_index_order",
    kind=POWER,
)
class CallsInIdArrivalOrder(_Calls):
    """Accumulators that append a call when its id first arrives (`calls.append` on a new id) and
    list them in that order, whatever their indexes."""

    def __init__(self) -> None:
        super().__init__()
        self.arrival: list[int] = []

    def take(self, piece: ToolCallDelta) -> None:
        super().take(piece)
        if piece.id and piece.index not in self.arrival:
            self.arrival.append(piece.index)

    def order(self, calls: list[list[Any]]) -> list[list[Any]]:
        rank = {index: n for n, index in enumerate(self.arrival)}
        return sorted(calls, key=lambda c: rank.get(c[1], len(rank)))


@miniature(
    "R2",
    _T + r'\[1\] .*"name": "list_dir", "arguments": ""\}, got \(absent\)',
    cases="synthetic/tool_pairs/length_after_named_piece",
    kind=POWER,
)
class LengthDropsCallsWithoutArguments(_Calls):
    """Clients that, on finish_reason `length`, drop the calls the cut left without arguments (a
    call whose first, named piece is the last one received)."""

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        if completion.finish_reason == FinishReason.LENGTH:
            calls = tuple(c for c in completion.tool_calls if c.arguments)
            return _with_completion(completion, tool_calls=calls)
        return completion


@miniature(
    "R2",
    _T + r'\[0\] .*"id": "call_0".*got \(absent\)',
    cases="synthetic/tool_pairs/late_id_name_with_finish_after_first_piece",
    kind=POWER,
)
class FinishFreezesCalls(_Calls):
    """Accumulators that close the tool calls when a finish reason arrives: pieces after it are
    dropped, and a call still without an id or name then is dropped too."""

    def __init__(self) -> None:
        super().__init__()
        self.frozen = False

    def take(self, piece: ToolCallDelta) -> None:
        if not self.frozen:
            super().take(piece)

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        if self.inner.is_finished and not self.frozen:
            self.frozen = True
            self.calls = [c for c in self.calls if c[2] and c[3]]
        return events


@miniature("R7", _NEAR_VALUE, cases="llama-server/*", mode="unknown-fields", kind=POWER)
class ContentFromAnotherLevel(_Reads):
    """Code that falls back to a field's name at another level (`delta.content ?? choice.content
    ?? chunk.content`): a `content` beside the delta is read as the answer's text."""

    def adjust(self, chunk: Any) -> Any:
        for choice in _choices(chunk):
            delta = choice.get("delta")
            other = next(
                (o["content"] for o in (choice, chunk) if isinstance(o.get("content"), str)), None
            )
            if other is not None and isinstance(delta, dict) and delta.get("content") is None:
                delta["content"] = other
        return chunk


@miniature(
    "R1",
    r'steps\[\d+\]\.events\[\d+\] .*expected \{"type": "content", "text": "data: \[DONE\]"\}, '
    r"got \(absent\)",
    cases="synthetic/edges/content_holds_data_done",
    kind=POWER,
)
class CutsTextAtDone(_Base):
    """Clients that look for the end marker in the text they assemble (`text.split("data:
    [DONE]")[0]`): an answer holding `data: [DONE]` is cut there."""

    _MARK = re.compile(r"data: ?\[DONE\]")

    def __init__(self) -> None:
        super().__init__()
        self.content: list[str] = []

    def push(self, data: str) -> list[Any]:
        events = []
        for e in super().push(data):
            if isinstance(e, Content):
                e = Content(self._MARK.split(e.text)[0])
                self.content.append(e.text)
                if not e.text:
                    continue
            events.append(e)
        return events

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        return _with_completion(completion, content="".join(self.content) or None)


@miniature(
    "R2",
    _T + r'\[\d\]\.id .*expected "CALL_ABC", got "call_abc"',
    cases="synthetic/edges/tool_call_ids_differ_only_in_case",
    kind=POWER,
)
class NormalisesIds(_Reads):
    """Ids used as keys after `.strip().lower()` (a normalised map key, a case-insensitive
    column): an id of white space only is none, and ids in another case are the same."""

    def adjust(self, chunk: Any) -> Any:
        for level, obj in _levels(chunk):
            if level in ("top", "call") and isinstance(obj.get("id"), str):
                obj["id"] = obj["id"].strip().lower()
        return chunk


# --- Shortcuts: right on every recording pushed as recorded; only their mode catches them ---
#
# Each fails in its mode on the real captures, at the field (the pattern) it breaks, and passes
# plain (tests/check/test_modes.py).

_MODES = "tests/check/test_modes.py::test_its_mode_catches_it_at_the_field_it_breaks"


@miniature("R6", "events", cases="llama-server", mode="key-order", kind=SHORTCUT, test=_MODES)
class IndexIsFirstMember(_Base):
    """Reads a tool call's index as the first member of its object, where llama-server puts it."""

    def push(self, data: str) -> list[Any]:
        events = self.inner.push(data)
        calls = [
            call
            for choice in json.loads(data, object_pairs_hook=list)
            if choice[0] == "choices"
            for entry in choice[1] or ()
            for key, delta in entry
            if key == "delta" and delta
            for name, calls in delta
            if name == "tool_calls" and calls
            for call in calls
        ]
        pieces = iter(calls)
        return [
            reference.ToolCallDelta(next(pieces)[0][1], e.id, e.name, e.arguments)
            if isinstance(e, reference.ToolCallDelta)
            else e
            for e in events
        ]


@miniature(
    "R6", "state.is_finished", cases="llama-server", mode="whitespace", kind=SHORTCUT, test=_MODES
)
class FinishReasonByRegex(_Base):
    """Spots the finish reason in the raw text, as written without white space."""

    _FINISHED = re.compile(r'"finish_reason":"(stop|length|tool_calls)"')

    def __init__(self) -> None:
        super().__init__()
        self.finished = False

    def push(self, data: str) -> list[Any]:
        events = self.inner.push(data)
        self.finished = self.finished or bool(self._FINISHED.search(data))
        return events

    @property
    def is_finished(self) -> bool:
        return self.finished


@miniature("R6", "events", cases="llama-server", mode="escapes", kind=SHORTCUT, test=_MODES)
class ContentKeyFastPath(_Base):
    """Drops content events from payloads whose raw text has no `"content"` key (a fast path)."""

    def push(self, data: str) -> list[Any]:
        events = self.inner.push(data)
        if '"content"' in data:
            return events
        return [e for e in events if not isinstance(e, reference.Content)]


@miniature("R5", "finish", cases="llama-server", mode="truncated", kind=SHORTCUT, test=_MODES)
class ToolCallMeansFinished(_Base):
    """Assumes a stream cut inside a tool call's arguments ended there: no closed-early error
    then. (A stream whose complete calls end without a finish reason is a plain case:
    synthetic/tool_pairs/no_finish_reason.)"""

    def __init__(self) -> None:
        super().__init__()
        self.arguments: dict[int, str] = {}

    def push(self, data: str) -> list[Any]:
        events = self.inner.push(data)
        for e in events:
            if isinstance(e, reference.ToolCallDelta):
                self.arguments[e.index] = self.arguments.get(e.index, "") + e.arguments
        return events

    def finish(self, thinking_capped: bool) -> Any:
        if (
            any(not _is_json(text) for text in self.arguments.values())
            and not self.inner.is_finished
        ):
            self.inner.push('{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}')
        return self.inner.finish(thinking_capped)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# --- Levels: right completions with wrong events, and the reverse (tests/check/test_levels.py) ---

_LEVELS = "tests/check/test_levels.py::"
_LEVELS_SNAPSHOT = _LEVELS + "test_snapshot_events_pass_the_completion_level_and_fail_the_full_one"
_LEVELS_WRONG = _LEVELS + "test_the_completion_level_still_fails_a_wrong_completion"


@miniature("R1", r"events", mode="plain", kind=LEVEL, test=_LEVELS_SNAPSHOT)
class SnapshotEvents(reference.Assembler):
    """A client whose events are snapshots (the whole text so far) and that never reports its
    reasoning state, but whose completions and errors are right."""

    def __init__(self) -> None:
        super().__init__()
        self._texts: dict[str, str] = {}

    def push(self, data: str) -> list[Any]:
        events = []
        for event in super().push(data):
            if isinstance(event, reference.Content | reference.Reasoning):
                kind = type(event).__name__
                self._texts[kind] = self._texts.get(kind, "") + event.text
                event = type(event)(self._texts[kind])
            events.append(event)
        return events

    @property
    def in_reasoning(self) -> bool:
        return False


@miniature("R1", r"finish\.completion\.content", mode="plain", kind=LEVEL, test=_LEVELS_WRONG)
class WrongCompletion(reference.Assembler):
    """Right events, but the completion's content loses its first piece."""

    def finish(self, thinking_capped: bool) -> Any:
        completion = super().finish(thinking_capped)
        if completion.content:
            completion = msgspec.structs.replace(completion, content=completion.content[1:])
        return completion


# --- Fuzz: DropsServerMessage (a server error's message lost: one real bug, found within a few
# streams of any seed) with one more way of behaving that a `conform fuzz` run must take well ---

_FUZZ = "tests/cli/test_fuzz.py::"
_FUZZ_FLAKY = _FUZZ + "test_a_difference_that_does_not_reproduce_is_flaky_and_not_saved"
_FUZZ_CTRL_C = _FUZZ + "test_ctrl_c_while_shrinking_keeps_the_finding"


@miniature("R8", "flaky", kind=FUZZ, test=_FUZZ_FLAKY)
class FlakyServerMessage(DropsServerMessage):
    """Loses the server's message only the first time it is given each server error (as a race
    would, once): checked again, the stream passes, so the difference must be reported as flaky,
    never kept as a case. (Whatever number of assemblers a check makes.)"""

    seen: ClassVar[set[str]] = set()

    def push(self, data: str) -> list[Any]:
        if data in FlakyServerMessage.seen:
            return self.inner.push(data)  # this one is right
        if _has_message(data):
            FlakyServerMessage.seen.add(data)
        return super().push(data)


@miniature("R8", "interrupted", kind=FUZZ, test=_FUZZ_CTRL_C)
class InterruptedWhileShrinking(DropsServerMessage):
    """Sends Ctrl-C (SIGINT to its own process, as a terminal does) while conform shrinks the
    difference it found: at the first `finish` after its first wrong answer. The search stops at
    that answer, and the checks of the finding push the same stream (which ends at the error), so
    only a smaller stream shrinking tries without the error can reach `finish` then. (Whatever
    number of assemblers or streams the checks make.)"""

    wrong: ClassVar[bool] = False

    def push(self, data: str) -> list[Any]:
        try:
            return super().push(data)
        except InferError as error:
            if error.kind is ErrorKind.SERVER and _has_message(data):  # (without one, any
                InterruptedWhileShrinking.wrong = True  # text is allowed: I8)
            raise

    def finish(self, thinking_capped: bool) -> Completion:
        if InterruptedWhileShrinking.wrong:
            os.kill(os.getpid(), signal.SIGINT)
        return super().finish(thinking_capped)


def _has_message(data: str) -> bool:
    """True when `data` is a server error with a message (the one DropsServerMessage loses)."""
    if '"error"' not in data:
        return False
    try:
        chunk = json.loads(data)
    except (ValueError, RecursionError):
        return False
    error = chunk.get("error") if isinstance(chunk, dict) else None
    return isinstance(error, dict) and bool(error.get("message"))


# --- The odd targets that live elsewhere ---------------------------------------------------------

#: Every other odd target of the tests: its file, its classes, why it lives there and what uses
#: it. tests/test_odd_targets.py checks that no class of tests/ that assembles is missing here.
ELSEWHERE: dict[str, tuple[tuple[str, ...], str]] = {
    "tests/check/fair_targets.py": (
        ("TypeChecksOpenAI", "RefusesProto", "_Around", "KeepsChoiceZero", "OneChoiceOnly",
         "DefaultErrorMessage", "LatestId"),
        "Correct targets (the reference under every other allowed outcome: `<point>_<outcome>`):"
        " apart from the broken ones, as no suite may fail them. tests/check/test_fairness.py,"
        " tests/cli/test_fuzz.py (never flagged), benchmarks/fuzz_miniatures.py.",
    ),
    "tests/check/test_fairness.py": (
        ("RefusesHostileNames",),
        "Refuses `constructor` members too (no I6 outcome): the one target beside the careful"
        " client it extends, shown failing by its test there.",
    ),
    "tests/check/test_known_fields.py": (
        ("ValidatesKnownFields", "CopiesMembersOntoObjects"),
        "A strict correct client and a setattr copier: what unknown-fields' added names may and"
        " may not break, in-process beside the test.",
    ),
    "tests/check/test_modes.py": (
        ("CallLog",),
        "The reference logging its calls: a probe of what a mode pushes, not a broken target.",
    ),
    "tests/check/test_runner.py": (
        ("FailsAtSecondPush", "NoReasoningEvents", "FinishRaises"),
        "In-process probes of the runner's statuses (error, mismatch, crash at finish).",
    ),
    "tests/suite/golden/test_stream.py": (
        ("LateId",),
        "Takes an id late: a streamed golden file read as the whole one, in-process.",
    ),
    "tests/hostile/targets.py": (
        ("_Base", "Stuck", "StartsChild", "Forks", "ForksAndDies", "RaisesGeneratorExit",
         "RaisesBaseException", "ChangesDirectory", "HangsInInit", "Large", "Daemonizes",
         "HugeInteger", "KindRaises", "StrRaises", "StrRaisesProtocol", "DeepEvents", "DeepId",
         "RecursiveReprId", "NaNTokens"),
        "Attack the harness rather than get a rule wrong (hang, fork, leave processes, raise"
        " BaseException, change directory, odd values): read the outside world from the"
        " environment (HOSTILE_MARKS, HOSTILE_CHDIR). tests/hostile/.",
    ),
    "tests/reports/hostile_targets.py": (
        ("Surrogates", "HugeText"),
        "Hostile texts for the reports: a worker imports this alone. tests/reports/.",
    ),
    "tests/programs/targets.py": (
        ("_AtThirdPush", "SleepsInPush", "ExitsInPush", "Segfaults", "ExhaustsMemory",
         "RaisesInPush", "Prints", "DropsReasoning"),
        "Misbehave at a case's third push (mini_suite) as a process does: sleep, exit, segfault,"
        " run out of memory. tests/drive/, tests/worker/.",
    ),
    "tests/programs/": (
        ("bad_hello", "breaks_schema", "exits_after_third_push", "hostile", "never_answers",
         "prints_garbage", "reports_crash", "scripted", "slow_pushes", "stderr_then_dies",
         "strict_v1", "wrong_seq"),
        "Line-protocol programs (`--exec`), each a file of its own run as a process."
        " tests/drive/, tests/hostile/, tests/worker/.",
    ),
    "tests/check/test_batched.py": (
        ("ErrsAtSecondPush", "CrashesAtThirdPush", "DiesAtFourthPush", "CrashesAtFinish"),
        "Written as source by the test, so that a worker imports them without the test module.",
    ),
    "tests/check/test_ahead.py": (
        ("Loud", "HangsOnce", "Logs", "Dies", "Marks", "Poisons"),
        "Written as source (as above): each pass's stderr, a hang or a death in a pass sent"
        " ahead, a target's own bytes like a mark, assemblers that share state.",
    ),
    "tests/check/test_parallel.py": (("Uneven",), "Written as source by the test (as above)."),
    "tests/drive/test_blame.py": (("Assembler",), "Written as source: a client's crash origin."),
    "tests/drive/test_head_start.py": (("Target",), "Written as source: a slow import."),
    "tests/drive/test_inprocess_crashes.py": (
        ("RaisesInInit", "RaisesInPush", "UnreadableEvents", "StateRaises", "RaisesInFinish",
         "UnreadableCompletion", "CompletionPropertyRaises"),
        "Written as source: every call a target may crash in, in-process and in a worker.",
    ),
    "tests/hostile/test_baselines.py": (("Crashes",), "Written as source by the test."),
    "tests/hostile/test_bounds.py": (
        ("Doubles", "Leaks", "LeaksAll", "Spins"),
        "Written as source: targets that grow, leak descriptors or spin past conform's bounds.",
    ),
    "tests/hostile/test_messages.py": (("Says",), "Written as source: a target's odd messages."),
    "tests/reports/test_reports.py": (("Target",), "Written as source by the test."),
    "tests/worker/test_forkserver.py": (("Target",), "Written as source: the fork server's jobs."),
}  # fmt: skip
