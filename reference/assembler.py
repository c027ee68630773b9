"""The reference assembler: rules R1 to R9 of the contract, as decided in docs/spec.md.

`Assembler.push` takes the text of one `data:` payload and returns its events; `finish` folds the
stream into a `Completion`. No I/O. Whatever text it is given, the only exception either raises is
`InferError`: decoding errors of every kind become protocol errors, and every number the server
sends is checked before it is used (a tool-call index never reaches a list unchecked).
"""

from __future__ import annotations

import re

import msgspec

from reference._wire import Chunk, ToolCallPiece, decode_chunk
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

#: Arrays and objects may nest this deep and no deeper (serde_json's default; docs/spec.md).
MAX_DEPTH = 128

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeError)


def _protocol(message: str) -> InferError:
    return InferError(ErrorKind.PROTOCOL, message)


def _nesting_depth(data: str) -> int:
    """The deepest nesting of arrays and objects in `data`, brackets inside strings not counted."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub("", data)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _decode(data: str) -> Chunk:
    # Counting every bracket over-estimates depth, so the exact scan runs only on rare payloads.
    if (data.count("{") + data.count("[") > MAX_DEPTH) and _nesting_depth(data) > MAX_DEPTH:
        raise _protocol(f"payload nests deeper than {MAX_DEPTH} levels")
    try:
        return decode_chunk(data)
    except _DECODE_ERRORS as exc:
        raise _protocol(f"not a chunk: {exc}") from None
    except TypeError:
        raise _protocol(f"payload must be text, not {type(data).__name__}") from None


def _integer(value: int | float, where: str) -> int:
    """An integer field's value: integral numbers only, within the safe range (docs/spec.md)."""
    if type(value) is int:
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return int(value)
    raise _protocol(f"{where} must be an integer, got {value!r}")


def _optional_integer(value: int | float | None, where: str) -> int | None:
    return None if value is None else _integer(value, where)


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
        "_content",
        "_finish_reason",
        "_id",
        "_in_reasoning",
        "_reasoning",
        "_reasoning_tokens",
        "_timings",
    )

    def __init__(self) -> None:
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

    def push(self, data: str) -> list[ChatEvent]:
        """Read one `data:` payload; return the events it stands for, in order (R1)."""
        chunk = _decode(data)
        if chunk.error is not None:
            raise InferError(ErrorKind.SERVER, chunk.error.message or "")
        if chunk.id and self._id is None:
            self._id = chunk.id
        if chunk.timings is not None:
            self._timings = chunk.timings
        events: list[ChatEvent] = []
        progress = chunk.prompt_progress
        if progress is not None:
            events.append(
                Progress(
                    _optional_integer(progress.total, "prompt_progress.total"),
                    _optional_integer(progress.cache, "prompt_progress.cache"),
                    _optional_integer(progress.processed, "prompt_progress.processed"),
                    _optional_integer(progress.time_ms, "prompt_progress.time_ms"),
                )
            )
        for choice in chunk.choices or ():
            delta = choice.delta
            if delta is not None:
                if delta.reasoning_content:
                    self._take_reasoning(delta.reasoning_content, events)
                if delta.content:
                    self._content.append(delta.content)
                    self._in_reasoning = False
                    events.append(Content(delta.content))
                if delta.tool_calls:
                    self._take_tool_calls(delta.tool_calls, events)
            if choice.finish_reason is not None:
                self._finish_reason = FinishReason(choice.finish_reason)
        return events

    def _take_reasoning(self, text: str, events: list[ChatEvent]) -> None:
        self._reasoning.append(text)
        self._in_reasoning = True
        if self._timings is not None and self._timings.predicted_n is not None:
            tokens = _integer(self._timings.predicted_n, "timings.predicted_n")
            if tokens < 0:
                raise _protocol(f"timings.predicted_n must not be negative, got {tokens}")
            self._reasoning_tokens = tokens
        events.append(Reasoning(text))

    def _take_tool_calls(self, pieces: list[ToolCallPiece], events: list[ChatEvent]) -> None:
        calls = self._calls
        for piece in pieces:
            index = _integer(piece.index, "tool_calls[].index")
            if index < 0 or index > len(calls):
                raise _protocol(
                    f"tool call index {index} is out of order: {len(calls)} call(s) so far"
                )
            if index == len(calls):
                calls.append(_CallBuilder())
            call = calls[index]
            function = piece.function
            name = function.name if function is not None else None
            arguments = (function.arguments if function is not None else None) or ""
            if piece.id and call.id is None:
                call.id = piece.id
            if name and call.name is None:
                call.name = name
            call.parts.append(arguments)
            self._in_reasoning = False
            events.append(ToolCallDelta(index, piece.id, name, arguments))

    def finish(self, thinking_capped: bool) -> Completion:
        """Fold the stream into its completion, or fail as R5 says."""
        if self._finish_reason is None:
            raise InferError(
                ErrorKind.STREAM_CLOSED_EARLY, "the stream ended without a finish reason"
            )
        if self._id is None:
            raise _protocol("no chunk carried an id")
        tool_calls = []
        for index, call in enumerate(self._calls):
            if call.id is None or call.name is None:
                missing = "an id" if call.id is None else "a name"
                raise _protocol(f"tool call {index} never got {missing}")
            tool_calls.append(ToolCall(call.id, call.name, "".join(call.parts)))
        return Completion(
            id=self._id,
            content="".join(self._content) if self._content else None,
            reasoning_content="".join(self._reasoning) if self._reasoning else None,
            tool_calls=tuple(tool_calls),
            finish_reason=self._finish_reason,
            timings=self._timings,
            reasoning_tokens=self._reasoning_tokens,
            thinking_capped=bool(thinking_capped),
        )
