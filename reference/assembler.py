"""The reference assembler: rules R1 to R9 of the contract, as decided in docs/spec.md.

`Assembler.push` takes the text of one `data:` payload and returns its events; `finish` folds the
stream into a `Completion`. No I/O. Whatever text it is given, the only exception either raises is
`InferError`: decoding errors of every kind become protocol errors, and every number the server
sends is checked before it is used (a tool-call index never reaches a list unchecked).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import Decimal
from itertools import accumulate
from typing import Any

import msgspec

from reference._wire import (
    Chunk,
    PromptProgress,
    ToolCallPiece,
    decode_chunk,
    decode_strict_chunk,
    decode_wide_chunk,
)
from reference.choices import REFERENCE, Choices
from reference.openai import wrong_type
from reference.types import (
    MAX_SAFE_INTEGER,
    ChatEvent,
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

#: Arrays and objects may nest this deep and no deeper (I3; docs/spec.md).
MAX_DEPTH = 128

#: A payload this long or shorter cannot nest deeper than MAX_DEPTH once it decodes: JSON closes
#: every bracket it opens, so MAX_DEPTH + 1 levels take 2 * (MAX_DEPTH + 1) characters at least.
_SHORT = 2 * MAX_DEPTH + 1

#: A payload longer than this has its brackets counted by `_within_depth`, in the pass that reads
#: its depth when there are more than MAX_DEPTH (about what `str.count` twice costs, and the only
#: pass then). Logprobs entries take some 30 characters a bracket, so a payload with more than
#: MAX_DEPTH of them is longer than this; a shorter one is cheaper counted by `str.count`.
_LONG = 4096

#: Under I3 `ignore`, values nested deeper than this are replaced by null before decoding. No field
#: the rules read lies this deep (top, choices, choice, delta, tool_calls, tool call, function: 7),
#: so only ignored values, or read ones already of the wrong type, are cut.
_KEPT_DEPTH = 9

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_SQUARE = bytes.maketrans(b"{}", b"[]")  # `_within_depth`'s one kind of bracket
_NOT_QUOTE_OR_BRACKET = bytes(sorted(set(range(256)) - set(b'"[]{}')))
#: `_within_depth`'s test for escaped quotes: a third of what `'\\"' in data` costs (CPython's
#: two-character search stops at every quote; this one only at backslashes).
_ESCAPED_QUOTE = re.compile(r'\\"')
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeError)
_TOKEN = re.compile(
    r'[ \t\n\r]*(?:("(?:[^"\\\x00-\x1f]|\\.)*")'
    r"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)|(true|false|null)|([\[\]{}:,]))"
)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_OPENERS = re.compile(r"[ \t\n\r]*(\[+)")  # `_prune`'s runs
_CLOSERS = re.compile(r"[ \t\n\r]*(\]+)")
_CLOSER = {"[": "]", "{": "}"}
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?[eE][+-]?[0-9]+|-?[0-9]+\.[0-9]+")


def _protocol(message: str) -> InferError:
    return InferError(ErrorKind.PROTOCOL, message)


def _nesting_depth(data: str) -> int:
    """The deepest nesting of arrays and objects in `data`, brackets inside strings not counted."""
    # At C speed: the brackets alone, each a step of +1 or -1, the highest running sum.
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", data))
    return max(0, max(accumulate(map(_STEP.__getitem__, brackets)), default=0))


def _within_depth(data: str) -> bool:
    """True when `data`, JSON text msgspec has decoded, nests at most MAX_DEPTH levels deep; False
    when it may nest deeper (`_nesting_depth` decides then).

    For a long payload, at C speed: its quotes and brackets alone (one `[` for each `[` or `{`),
    one pass over the text that counts the brackets as well as `str.count` twice would. At most
    MAX_DEPTH of them: it cannot nest deeper. More (many small objects: logprobs): the text is
    valid JSON, so with escaped quotes taken out every quote opens or closes a string, and a
    string without brackets is two quotes side by side. A quote left means a bracket inside a
    string: False. Then each pass of `replace` takes out the innermost pairs, one level (never
    two: it does not see the pairs it makes), and `depth` levels gone, what is left nests at
    most half its length deeper.
    """
    brackets = data.encode().translate(_SQUARE, _NOT_QUOTE_OR_BRACKET)
    if brackets.count(b"[") <= MAX_DEPTH:  # the count alone vouches
        return True
    # Escaped quotes out; escaped backslashes first (`\\"` ends a string).
    if _ESCAPED_QUOTE.search(data):
        data = data.replace("\\\\", "").replace('\\"', "")
        brackets = data.encode().translate(_SQUARE, _NOT_QUOTE_OR_BRACKET)
    brackets = brackets.replace(b'""', b"")
    if b'"' in brackets:
        return False
    for depth in range(MAX_DEPTH + 1):
        if len(brackets) <= 2 * (MAX_DEPTH - depth):
            return True
        brackets = brackets.replace(b"[]", b"")
    return False


def _check_string(token: str) -> None:
    try:
        text = json.loads(token)
    except ValueError:
        raise _protocol("not JSON: a bad string escape") from None
    if _LONE_SURROGATE.search(text):
        raise _protocol("an unpaired surrogate escape")


def _prune(data: str) -> str:
    """`data` with every value nested deeper than `_KEPT_DEPTH` replaced by null (I3 `ignore`).

    Iterative, so any depth is fine; the cut parts are checked here (syntax, string escapes,
    unpaired surrogates) since no decoder sees them; the rest is left to the decoder. Inside a
    cut value, a run of `[` (or of `]` closing arrays) is taken in one step: a deep array is a
    run of each, token by token about 1.5 us a bracket (r6_nesting_100000: 170 ms -> 2.5 ms).
    tests/assembler/test_prune.py holds it to the one-token-a-step walk.
    """
    out: list[str] = []
    stack: list[str] = []
    expect = "value"  # value, first (after '['), key_first (after '{'), key, colon, after, done
    cut_at = 0  # the stack depth where cutting began, 0 when not cutting
    pos = 0
    while True:
        if cut_at:  # nothing of a cut value is kept: a run of brackets at once
            if expect in ("value", "first"):
                run = _OPENERS.match(data, pos)
                if run is not None and len(run[1]) > 1:
                    stack += run[1]
                    expect = "first"
                    pos = run.end()
                    continue
            if expect in ("first", "after"):
                run = _CLOSERS.match(data, pos)
                if run is not None and len(run[1]) > 1:
                    # Up to the one closing the cut value (which is not kept either).
                    count = min(len(run[1]), len(stack) - cut_at + 1)
                    if stack[-count:] == ["["] * count:
                        del stack[-count:]
                        pos = run.start(1) + count
                        expect = "after"
                        if len(stack) < cut_at:
                            cut_at = 0
                        continue
        match = _TOKEN.match(data, pos)
        if match is None:
            if expect == "done" and not data[pos:].strip(" \t\n\r"):
                return "".join(out)
            raise _protocol("not JSON")
        pos = match.end()
        string, _number, _literal, punct = match.groups()
        token = match.group(0)
        if expect == "done":
            raise _protocol("not JSON: text after the value")
        closing = punct in ("]", "}")
        if expect == "colon":
            if punct != ":":
                raise _protocol("not JSON: ':' expected")
            expect = "value"
        elif expect in ("key", "key_first") and string is not None:
            expect = "colon"
        elif (expect == "key_first" and punct == "}") or (expect == "first" and punct == "]"):
            stack.pop()
            expect = "after"
        elif expect in ("value", "first") and not closing and punct not in (":", ","):
            if punct is not None:  # '[' or '{'
                stack.append(punct)
                expect = "first" if punct == "[" else "key_first"
                if not cut_at and len(stack) > _KEPT_DEPTH:
                    cut_at = len(stack)
                    out.append(token[: len(token) - 1] + "null")
            else:
                expect = "after"
        elif expect == "after" and stack and punct == ",":
            expect = "value" if stack[-1] == "[" else "key"
        elif (
            expect == "after" and stack and closing and "[]{}"["[]{}".index(stack[-1]) + 1] == punct
        ):
            stack.pop()
        else:
            raise _protocol("not JSON")
        if string is not None and cut_at:
            _check_string(string)
        if cut_at:
            if len(stack) < cut_at:
                cut_at = 0
        else:
            out.append(token)
        if expect == "after" and not stack:
            expect = "done"


class _Duplicate(Exception):
    pass


class _Raw(str):
    """A number's text, kept as written."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _dump(value: Any) -> str:
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump(v) for v in value) + "]"
    return json.dumps(value)  # strings (lone surrogates stay escaped), true, false, null


def _keep_last(data: str) -> str | None:
    """`data` with each duplicated key's last value only (I4 `last`); None without duplicates."""
    seen_duplicate = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal seen_duplicate
        kept: dict[str, Any] = {}
        for key, value in items:
            if key in kept:
                seen_duplicate = True
                del kept[key]
            kept[key] = value
        return kept

    try:
        value = json.loads(
            data,
            object_pairs_hook=pairs,
            parse_int=_Raw,
            parse_float=_Raw,
            parse_constant=_reject_constant,
        )
    except (ValueError, RecursionError):
        return None
    return _dump(value) if seen_duplicate else None


def _has_duplicate_keys(data: str) -> bool:
    def pairs(items: list[tuple[str, Any]]) -> None:
        keys = [key for key, _ in items]
        if len(set(keys)) != len(keys):
            raise _Duplicate

    try:
        json.loads(data, object_pairs_hook=pairs, parse_constant=_reject_constant)
    except _Duplicate:
        return True
    except (ValueError, RecursionError):
        pass  # not JSON: the decoder says so
    return False


class _Proto(Exception):
    pass


def _has_proto_member(data: str) -> bool:
    """True when some object of `data` has a member named `__proto__` (I6 `protocol`)."""
    if "__proto__" not in data and "\\u" not in data:  # the name, as written or escaped
        return False

    def pairs(items: list[tuple[str, Any]]) -> None:
        if any(key == "__proto__" for key, _ in items):
            raise _Proto

    try:
        json.loads(data, object_pairs_hook=pairs, parse_constant=_reject_constant)
    except _Proto:
        return True
    except (ValueError, RecursionError):
        pass  # not JSON: the decoder says so
    return False


def _check_openai_types(data: str) -> None:
    """Protocol when an unread OpenAI member has a type its schema does not allow (I5)."""
    try:
        value = json.loads(data, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return  # not JSON: the decoder says so
    wrong = wrong_type(value)
    if wrong is not None:
        raise _protocol(f"{wrong} has a type OpenAI's chunk schema does not allow")


def _decode(data: str, choices: Choices, decode: Callable[[str], Chunk]) -> Chunk:
    """The payload as a typed chunk, every check the choices ask for made (the slow path)."""
    if not isinstance(data, str):
        raise _protocol(f"payload must be text, not {type(data).__name__}")
    # Counting every bracket over-estimates depth, so the exact scan runs only on rare payloads.
    if (data.count("{") + data.count("[") > MAX_DEPTH) and _nesting_depth(data) > MAX_DEPTH:
        if choices.I3 == "protocol":
            raise _protocol(f"payload nests deeper than {MAX_DEPTH} levels")
        data = _prune(data)
    if choices.I4 == "protocol" and _has_duplicate_keys(data):
        raise _protocol("a key stands twice in one object")
    if choices.I6 == "protocol" and _has_proto_member(data):
        raise _protocol("a member is named __proto__")
    if choices.I5 == "protocol":
        _check_openai_types(data)
    try:
        return decode(data)
    except _DECODE_ERRORS as exc:
        # msgspec keeps the last of duplicate keys but checks every copy's type: under `last`,
        # an earlier copy must not matter, so a failed payload is decoded again without them.
        kept = _keep_last(data) if choices.I4 == "last" else None
        if kept is not None:
            try:
                return decode(kept)
            except _DECODE_ERRORS:
                pass
        raise _protocol(f"not a chunk: {exc}") from None


def _integer(value: int | float, where: str, choices: Choices, payload: str | None = None) -> int:
    """An integer field's value (R6), as I1 and I2 choose.

    `payload`, the text the value came from, lets I2 `exact` read an integral number written with
    a fraction or exponent beyond ±(2^53-1) exactly (a double cannot hold 9007199254740993.0).
    """
    if type(value) is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER or choices.I2 == "exact":
            return value
        raise _protocol(f"{where} is beyond ±(2^53-1): {value}")
    if isinstance(value, float) and value.is_integer():
        if choices.I1 == "protocol":
            raise _protocol(f"{where} must be written as an integer, got {value!r}")
        if abs(value) <= MAX_SAFE_INTEGER:
            return int(value)
        exact = _as_written(payload, value) if choices.I2 == "exact" else None
        if exact is not None:
            return exact
        raise _protocol(f"{where} is beyond ±(2^53-1): {value!r}")
    raise _protocol(f"{where} must be an integer, got {value!r}")


def _as_written(payload: str | None, value: float) -> int | None:
    """The integer a number of `payload` written with a fraction or exponent stands for, found by
    its value as a double; None when no such number is there or two differ."""
    if payload is None:
        return None
    found = {
        int(exact)
        for token in _NUMBER.findall(_STRING.sub('""', payload))
        if float(token) == value and (exact := Decimal(token)) == exact.to_integral_value()
    }
    return found.pop() if len(found) == 1 else None


def _optional_integer(
    value: int | float | None, where: str, choices: Choices, payload: str
) -> int | None:
    return None if value is None else _integer(value, where, choices, payload)


def _timings(timings: Timings, choices: Choices) -> Timings:
    """Decoded `LooseTimings` or `WideTimings` as a `Timings`, integers beyond ±(2^53-1) as I2
    chooses (a number field); under I2 `protocol` the decoder has already refused them."""
    values = msgspec.structs.astuple(timings)
    if choices.I2 == "double":
        values = tuple(
            float(v) if type(v) is int and not -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER else v
            for v in values
        )
    return Timings(*values)


_FINISH_REASONS = {reason.value: reason for reason in FinishReason}


class _CallBuilder:
    """A tool call being assembled from its pieces (R2)."""

    __slots__ = ("id", "name", "parts")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.parts: list[str] = []


class Assembler:
    """Folds llama-server chunks into events and one completion."""

    __slots__ = (
        "_calls",
        "_choices",
        "_content",
        "_decode",
        "_fast",
        "_finish_reason",
        "_id",
        "_in_reasoning",
        "_reasoning",
        "_reasoning_tokens",
        "_strict",
        "_timings",
    )

    def __init__(self, choices: Choices = REFERENCE) -> None:
        """`choices`: the outcome of each implementation-defined point (`reference.choices`)."""
        self._choices = choices
        # The choices, resolved once: under I2 `protocol` msgspec checks the timings' range as
        # it decodes; the fast path (a bracket count, then the decoder) serves every payload
        # unless a choice needs a scan of each (I4 `protocol`, I5 or I6 `protocol`).
        if choices is REFERENCE:
            self._decode, self._fast, self._strict = decode_chunk, True, True
        else:
            self._decode = decode_chunk if choices.I2 == "protocol" else decode_wide_chunk
            self._fast = (choices.I4, choices.I5, choices.I6) == ("last", "ignore", "ignore")
            # Faster still, llama-server's own shape (`reference._wire.StrictChunk`): no bracket
            # count at all. Tried until one payload of the stream does not fit it.
            self._strict = self._fast and choices.I2 == "protocol"
        self._id: str | None = None
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_CallBuilder] = []
        self._timings: Timings | None = None
        self._finish_reason: FinishReason | None = None
        self._reasoning_tokens = 0
        self._in_reasoning = False

    @property
    def id(self) -> str | None:
        """The completion id, once a chunk carried a non-empty one."""
        return self._id

    @property
    def reasoning_tokens(self) -> int:
        """Tokens generated while the model was reasoning (R4)."""
        return self._reasoning_tokens

    @property
    def in_reasoning(self) -> bool:
        """True while the latest text was reasoning (R4)."""
        return self._in_reasoning

    @property
    def is_finished(self) -> bool:
        """True once a finish reason has arrived."""
        return self._finish_reason is not None

    def state(self) -> tuple[str | None, int, bool, bool]:
        """The four state readers at once: (`id`, `reasoning_tokens`, `in_reasoning`,
        `is_finished`), for a caller that reads them after every push (conform's in-process
        driver recognises this method on this class only; any other assembler is read through
        its readers)."""
        return (
            self._id,
            self._reasoning_tokens,
            self._in_reasoning,
            self._finish_reason is not None,
        )

    def push(self, data: str) -> list[ChatEvent]:
        """Read one `data:` payload; return the events it stands for, in order (R1)."""
        # The decoding, cheapest first (each way decides nothing the lenient way would not):
        # llama-server's own shape, which needs no bracket count, until one payload does not fit.
        if self._strict and type(data) is str:
            try:
                chunk: Chunk = decode_strict_chunk(data)
                strict = True
            except _DECODE_ERRORS:
                self._strict = strict = False  # the lenient way decides, for the rest too
                chunk = self._lenient(data)
        else:  # every payload of a stream the strict shape left
            strict = False
            chunk = self._lenient(data)
        if chunk.prompt_progress is None and chunk.error is None:
            events: list[ChatEvent] = []
        else:  # its progress event, or the server's error raised
            events = self._progress_or_error(chunk, data, strict)
        # Without an error object every failure left is `protocol`, whatever its order, and
        # the case ends there: the payload is read in one pass.
        if self._id is None and chunk.id:
            self._id = chunk.id
        # Kept as decoded (a Timings, or under I2 `exact`/`double` a WideTimings); `finish`
        # makes the public one.
        timings = chunk.timings
        if timings is not None:
            self._timings = timings
        chunk_choices = chunk.choices
        if not chunk_choices:
            return events
        for choice in chunk_choices:
            delta = choice.delta
            if delta is not None:
                text = delta.reasoning_content
                if text:  # R4, inline: a reasoning phase is most of many streams
                    self._reasoning.append(text)
                    self._in_reasoning = True
                    latest = self._timings
                    if latest is not None and latest.predicted_n is not None:
                        tokens = latest.predicted_n
                        if type(tokens) is not int or not 0 <= tokens <= MAX_SAFE_INTEGER:
                            tokens = _integer(tokens, "timings.predicted_n", self._choices)
                        if tokens < 0:
                            raise _protocol(
                                f"timings.predicted_n must not be negative, got {tokens}"
                            )
                        self._reasoning_tokens = tokens
                    events.append(Reasoning(text))
                text = delta.content
                if text:
                    self._content.append(text)
                    self._in_reasoning = False
                    events.append(Content(text))
                pieces = delta.tool_calls
                if pieces:  # R2, inline: the loop most tool-call streams spend their time in
                    calls = self._calls
                    for piece in pieces:
                        index = piece.index
                        # The strict shape checked the index's range as it decoded.
                        if type(index) is not int or (
                            not strict and not 0 <= index <= MAX_SAFE_INTEGER
                        ):
                            index = self._index(piece, data)
                        try:
                            call = calls[index]
                        except IndexError:  # not negative: a new call, or one skipping ahead
                            if index != len(calls):
                                raise _protocol(
                                    f"tool call index {index} is out of order: "
                                    f"{len(calls)} call(s) so far"
                                ) from None
                            call = _CallBuilder()
                            calls.append(call)
                        function = piece.function
                        if function is None:
                            name = None
                            arguments = ""
                        else:
                            name = function.name
                            arguments = function.arguments or ""
                        piece_id = piece.id
                        if piece_id and call.id is None:
                            call.id = piece_id
                        if name and call.name is None:
                            call.name = name
                        call.parts.append(arguments)
                        events.append(ToolCallDelta(index, piece_id, name, arguments))
                    self._in_reasoning = False
            reason = choice.finish_reason
            if reason is not None:
                self._finish_reason = _FINISH_REASONS[reason]
        return events

    def _progress_or_error(self, chunk: Chunk, data: str, strict: bool) -> list[ChatEvent]:
        """The events of a chunk's `prompt_progress` (the first of its events); the server's
        error (R8) raised, once the payload's shape is checked (R6)."""
        events: list[ChatEvent] = []
        progress = chunk.prompt_progress
        if progress is not None:
            if strict:  # its numbers are integers as the rules read them already
                p = progress
                events.append(Progress(p.total, p.cache, p.processed, p.time_ms))  # type: ignore[arg-type]
            else:
                events.append(self._progress(progress, data))
        if chunk.error is not None:
            # The payload's whole shape first (R6), then its error object (R8).
            for choice in chunk.choices or ():
                if choice.delta is not None:
                    for piece in choice.delta.tool_calls or ():
                        self._index(piece, data)
            raise InferError(ErrorKind.SERVER, chunk.error.message or "")
        return events

    def _lenient(self, data: str) -> Chunk:
        """The payload as a typed chunk, decoded the lenient way (`reference._wire.Chunk`)."""
        # A short payload cannot nest too deep; for a longer one, counting every bracket
        # over-estimates depth: only a payload with more than MAX_DEPTH of them can nest too
        # deep, and only that one gets the exact scan (in `_decode`).
        if (
            self._fast
            and type(data) is str
            and (
                len(data) <= _SHORT
                or (len(data) <= _LONG and data.count("{") + data.count("[") <= MAX_DEPTH)
            )
        ):
            try:
                return self._decode(data)
            except _DECODE_ERRORS:  # the error, or I4 `last`'s retry
                pass
        elif self._fast and type(data) is str:  # long, or many brackets: the decoder, the depth
            try:
                chunk = self._decode(data)
            except _DECODE_ERRORS:
                pass
            else:
                if _within_depth(data):
                    return chunk
        return _decode(data, self._choices, self._decode)

    def _progress(self, progress: PromptProgress, data: str) -> Progress:
        values = (progress.total, progress.cache, progress.processed, progress.time_ms)
        for value in values:
            if value is not None and (
                type(value) is not int or not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
            ):
                break
        else:
            return Progress(*values)  # type: ignore[arg-type]  # integers, or absent: usual
        choices = self._choices
        return Progress(
            _optional_integer(progress.total, "prompt_progress.total", choices, data),
            _optional_integer(progress.cache, "prompt_progress.cache", choices, data),
            _optional_integer(progress.processed, "prompt_progress.processed", choices, data),
            _optional_integer(progress.time_ms, "prompt_progress.time_ms", choices, data),
        )

    def _index(self, piece: ToolCallPiece, payload: str) -> int:
        index = piece.index
        if type(index) is int and 0 <= index <= MAX_SAFE_INTEGER:
            return index
        index = _integer(index, "tool_calls[].index", self._choices, payload)
        if index < 0:
            raise _protocol(f"tool call index {index} is negative")
        return index

    def finish(self, thinking_capped: bool) -> Completion:
        """Fold the stream into its completion, or fail as R5 says."""
        if self._finish_reason is None:
            raise InferError(
                ErrorKind.STREAM_CLOSED_EARLY, "the stream ended without a finish reason"
            )
        if self._id is None:
            raise _protocol("no chunk carried an id")
        tool_calls: list[ToolCall] | tuple[()] = ()
        if self._calls:
            tool_calls = []
            for index, call in enumerate(self._calls):
                if call.id is None or call.name is None:
                    missing = "an id" if call.id is None else "a name"
                    raise _protocol(f"tool call {index} never got {missing}")
                tool_calls.append(ToolCall(call.id, call.name, "".join(call.parts)))
        timings = self._timings
        if timings is not None and type(timings) is not Timings:  # LooseTimings, WideTimings
            timings = _timings(timings, self._choices)
        return Completion(
            self._id,
            "".join(self._content) if self._content else None,
            "".join(self._reasoning) if self._reasoning else None,
            tuple(tool_calls),
            self._finish_reason,
            timings,
            self._reasoning_tokens,
            bool(thinking_capped),
        )
