"""A small assembler of llama-server chat streams, on the standard library alone.

It is the example of gating an implementation with conform (README, "Gating an implementation in
CI"): it follows docs/spec.md and passes the suite. At one implementation-defined point it takes
another allowed outcome than the reference (I3: it reads a value nested 129 levels deep in an
ignored field, where the reference fails the payload), so under `--strict`, which asks for the
reference's own outcomes, it fails those cases, which its expected-failures file lists:

    conform run examples/python/simple_assembler.py:Assembler
    conform run examples/python/simple_assembler.py:Assembler --strict \
        --xfail examples/python/conform.xfail

Python's `json` stops only near the interpreter's recursion limit, which the reference's deepest
case (100,000 levels) reaches: a protocol error, the other allowed outcome.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1
FINISH_REASONS = ("stop", "tool_calls", "length")
TIMINGS_FIELDS = (
    "cache_n",
    "prompt_n",
    "prompt_ms",
    "prompt_per_token_ms",
    "prompt_per_second",
    "predicted_n",
    "predicted_ms",
    "predicted_per_token_ms",
    "predicted_per_second",
    "draft_n",
    "draft_n_accepted",
)
PROGRESS_FIELDS = ("total", "cache", "processed", "time_ms")


class StreamError(Exception):
    """Why the stream cannot be assembled; `kind` is protocol, stream_closed_early or server."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def _protocol(message: str) -> StreamError:
    return StreamError("protocol", message)


# The events and the completion: conform reads an event's type from its class name.
@dataclass(frozen=True)
class Progress:
    total: int | None
    cache: int | None
    processed: int | None
    time_ms: int | None


@dataclass(frozen=True)
class Reasoning:
    text: str


@dataclass(frozen=True)
class Content:
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Completion:
    id: str
    content: str | None
    reasoning_content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str
    timings: dict[str, Any] | None
    reasoning_tokens: int
    thinking_capped: bool


# -- reading one payload: validate everything the rules read before using any of it ------------


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _check_strings(value: Any) -> None:
    """Every string and key must be valid Unicode: an escaped lone surrogate is a protocol error.

    A loop, not recursion: `json` may return a value nested nearly as deep as the interpreter's
    recursion limit allows, and checking it must not go deeper.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if any("\ud800" <= ch <= "\udfff" for ch in item):
                raise _protocol("a string holds an unpaired surrogate")
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def _object(value: Any, where: str) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    raise _protocol(f"{where} must be an object")


def _string(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _protocol(f"{where} must be a string")


def _objects(value: Any, where: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise _protocol(f"{where} must be an array of objects")
    return value


def _number(value: Any, where: str) -> int | float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _protocol(f"{where} must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise _protocol(f"{where} is out of range")
    if isinstance(value, int) and abs(value) > MAX_SAFE_INTEGER:
        raise _protocol(f"{where} is out of range")
    return value


def _integer(value: Any, where: str) -> int | None:
    number = _number(value, where)
    if isinstance(number, float):
        if not number.is_integer() or abs(number) > MAX_SAFE_INTEGER:
            raise _protocol(f"{where} must be an integer")
        return int(number)
    return number


@dataclass
class _Piece:
    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass
class _Choice:
    reasoning: str | None
    content: str | None
    pieces: list[_Piece]
    finish_reason: str | None


@dataclass
class _Chunk:
    id: str | None = None
    timings: dict[str, Any] | None = None
    progress: Progress | None = None
    error: str | None = None  # the server's message
    choices: list[_Choice] = field(default_factory=list)


def read_chunk(data: str) -> _Chunk:
    """One payload, validated as docs/spec.md section 2 says; StreamError when it is not a chunk."""
    try:
        top = json.loads(data, parse_constant=_no_constants)
    except (ValueError, RecursionError):
        raise _protocol("the payload is not JSON") from None
    if not isinstance(top, dict):
        raise _protocol("the payload is not a JSON object")
    _check_strings(top)
    chunk = _Chunk(id=_string(top.get("id"), "id"))
    timings = _object(top.get("timings"), "timings")
    if timings is not None:
        chunk.timings = {
            name: _number(timings.get(name), f"timings.{name}") for name in TIMINGS_FIELDS
        }
    progress = _object(top.get("prompt_progress"), "prompt_progress")
    if progress is not None:
        values = [
            _integer(progress.get(name), f"prompt_progress.{name}") for name in PROGRESS_FIELDS
        ]
        chunk.progress = Progress(*values)
    error = _object(top.get("error"), "error")
    if error is not None:
        chunk.error = _string(error.get("message"), "error.message") or ""
    for choice in _objects(top.get("choices"), "choices"):
        delta = _object(choice.get("delta"), "delta") or {}
        reason = choice.get("finish_reason")
        if reason is not None and reason not in FINISH_REASONS:
            raise _protocol(f"unknown finish_reason {reason!r}")
        pieces = []
        for call in _objects(delta.get("tool_calls"), "tool_calls"):
            index = _integer(call.get("index"), "tool_calls[].index")
            if index is None:
                raise _protocol("a tool call has no index")
            if index < 0:  # a shape error: it wins over an error object beside it (R8)
                raise _protocol(f"tool call index {index} is negative")
            function = _object(call.get("function"), "function") or {}
            name = _string(function.get("name"), "function.name")
            arguments = _string(function.get("arguments"), "function.arguments") or ""
            pieces.append(
                _Piece(index, _string(call.get("id"), "tool_calls[].id"), name, arguments)
            )
        chunk.choices.append(
            _Choice(
                _string(delta.get("reasoning_content"), "reasoning_content"),
                _string(delta.get("content"), "content"),
                pieces,
                reason,
            )
        )
    return chunk


# -- the assembler -----------------------------------------------------------------------------


class Assembler:
    """Folds the payloads of one stream into events and a completion."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.reasoning_tokens = 0
        self.in_reasoning = False
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[dict[str, Any]] = []
        self._timings: dict[str, Any] | None = None
        self._finish_reason: str | None = None

    @property
    def is_finished(self) -> bool:
        return self._finish_reason is not None

    def push(self, data: str) -> list[Any]:
        chunk = read_chunk(data)
        if chunk.error is not None:
            raise StreamError("server", chunk.error)
        if chunk.id and self.id is None:
            self.id = chunk.id
        if chunk.timings is not None:
            self._timings = chunk.timings
        events: list[Any] = [] if chunk.progress is None else [chunk.progress]
        for choice in chunk.choices:
            if choice.reasoning:
                self._reasoning.append(choice.reasoning)
                self.in_reasoning = True
                tokens = None if self._timings is None else self._timings["predicted_n"]
                if tokens is not None:
                    # A double beyond 2^53 may not be the integer written: refuse it too.
                    if (
                        (isinstance(tokens, float) and not tokens.is_integer())
                        or tokens < 0
                        or tokens > MAX_SAFE_INTEGER
                    ):
                        raise _protocol("timings.predicted_n must be a non-negative integer")
                    self.reasoning_tokens = int(tokens)
                events.append(Reasoning(choice.reasoning))
            if choice.content:
                self._content.append(choice.content)
                self.in_reasoning = False
                events.append(Content(choice.content))
            for piece in choice.pieces:
                events.append(self._take_piece(piece))
            if choice.finish_reason is not None:
                self._finish_reason = choice.finish_reason
        return events

    def _take_piece(self, piece: _Piece) -> ToolCallDelta:
        if piece.index < 0 or piece.index > len(self._calls):
            raise _protocol(f"tool call index {piece.index} is out of order")
        if piece.index == len(self._calls):
            self._calls.append({"id": None, "name": None, "arguments": []})
        call = self._calls[piece.index]
        if piece.id and call["id"] is None:
            call["id"] = piece.id
        if piece.name and call["name"] is None:
            call["name"] = piece.name
        call["arguments"].append(piece.arguments)
        self.in_reasoning = False
        return ToolCallDelta(piece.index, piece.id, piece.name, piece.arguments)

    def finish(self, thinking_capped: bool) -> Completion:
        if self._finish_reason is None:
            raise StreamError("stream_closed_early", "the stream ended without a finish reason")
        if self.id is None:
            raise _protocol("no chunk carried an id")
        calls = []
        for index, call in enumerate(self._calls):
            if call["id"] is None or call["name"] is None:
                raise _protocol(f"tool call {index} never got an id or a name")
            calls.append(ToolCall(call["id"], call["name"], "".join(call["arguments"])))
        return Completion(
            id=self.id,
            content="".join(self._content) if self._content else None,
            reasoning_content="".join(self._reasoning) if self._reasoning else None,
            tool_calls=calls,
            finish_reason=self._finish_reason,
            timings=self._timings,
            reasoning_tokens=self.reasoning_tokens,
            thinking_capped=bool(thinking_capped),
        )
