"""The fast reference assembler: the plain one with a faster `push` for the usual payload.

This is what users import (`from reference import Assembler`). It is `reference.assembler`'s
`Assembler` (the executable form of docs/spec.md, which generates the golden files), with one
change: under the reference's own choices, a payload that msgspec decodes into `Chunk` below (the
members the rules read, each of the type it usually has: integers within ±(2^53-1), a tool-call
index not negative) and that nests no deeper than 128 levels is folded here, inline, without the
plain reading's `json.loads`. Every other payload, and every payload under other choices, goes to
the plain `push`, which alone decides what it means (a protocol error, `1.0` read as an integer,
an earlier copy of a duplicate key left unchecked).
`finish` and the state readers are the plain one's.

Held to the plain one by tests/assembler/test_differential.py: every recording, under every
combination of the choices it pins, in every mode's rewritten payloads, and generated payloads;
events, state readers, errors and completion alike. Its speed: benchmarks/bench_assembler.py
(at most 2x a msgspec typed decode of the same payloads, on the real captures).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec

from reference import assembler
from reference.assembler import ToolCallParts
from reference.choices import REFERENCE, Choices
from reference.json_text import MAX_DEPTH, protocol
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
    ToolCallDelta,
)

__all__ = ["Assembler"]

#: An integer within ±(2^53-1), and a tool-call index: one not negative.
SafeInteger = Annotated[int, msgspec.Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
SafeIndex = Annotated[int, msgspec.Meta(ge=0, le=MAX_SAFE_INTEGER)]


class Function(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class ToolCallPiece(msgspec.Struct, gc=False):
    index: SafeIndex
    id: str | None = None
    function: Function | None = None


class Delta(msgspec.Struct, gc=False):
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCallPiece] | None = None


class Choice(msgspec.Struct, gc=False):
    finish_reason: Literal["stop", "tool_calls", "length", None] = None
    delta: Delta | None = None


class PromptProgress(msgspec.Struct, gc=False):
    total: SafeInteger | None = None
    cache: SafeInteger | None = None
    processed: SafeInteger | None = None
    time_ms: SafeInteger | None = None


class ServerError(msgspec.Struct, gc=False):
    message: str | None = None


class OpenTimings(Timings, forbid_unknown_fields=False, frozen=True, gc=False):
    """`Timings` that skips members it does not declare (made a `Timings` by `finish`)."""


class Chunk(msgspec.Struct, gc=False):
    """The usual payload: the members the rules read, of their usual types. Every other member
    is skipped unread, and unbuilt."""

    choices: list[Choice] | None = None
    id: str | None = None
    timings: Timings | None = None  # an OpenTimings, in this open shape
    prompt_progress: PromptProgress | None = None
    error: ServerError | None = None


class _OpenChunk(Chunk, gc=False):
    timings: OpenTimings | None = None


decode_chunk = msgspec.json.Decoder(_OpenChunk).decode


# The closed shape: llama-server's own chunk, each member it sends declared (those the rules do
# not read with the scalar types llama-server gives them) and no other member allowed. A payload
# it decodes nests 5 levels at most, so its depth needs no count of brackets, which costs about
# half a typed decode; the members the rules read are the same as the open shape's. Any other
# payload (an unknown member, `1.0` for an integer, an error of any kind) goes to the open shape,
# and so does the rest of its stream. Its members are declared in the order llama-server writes
# them: msgspec looks for each key first at the member after the last one found, so a chunk in
# that order costs about 5% less to decode than one whose members it has to search for.


class _ClosedFunction(Function, forbid_unknown_fields=True, gc=False):
    pass


class _ClosedPiece(ToolCallPiece, forbid_unknown_fields=True, gc=False):
    function: _ClosedFunction | None = None
    type: str | None = None


class _ClosedDelta(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    role: str | None = None
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[_ClosedPiece] | None = None


class _ClosedChoice(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    finish_reason: Literal["stop", "tool_calls", "length", None] = None
    index: int | None = None
    delta: _ClosedDelta | None = None


class _ClosedProgress(PromptProgress, forbid_unknown_fields=True, gc=False):
    pass


class _ClosedError(ServerError, forbid_unknown_fields=True, gc=False):
    code: int | None = None
    type: str | None = None


class _PromptTokensDetails(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    cached_tokens: int | None = None


class _Usage(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    total_tokens: int | None = None
    prompt_tokens_details: _PromptTokensDetails | None = None


class _ClosedChunk(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    choices: list[_ClosedChoice] | None = None
    created: int | None = None
    id: str | None = None
    model: str | None = None
    system_fingerprint: str | None = None
    object: str | None = None
    usage: _Usage | None = None
    timings: Timings | None = None  # the public one, closed
    prompt_progress: _ClosedProgress | None = None
    error: _ClosedError | None = None


decode_closed_chunk = msgspec.json.Decoder(_ClosedChunk).decode
_NOT_USUAL = (msgspec.DecodeError, RecursionError, UnicodeError)
_FINISH_REASONS = {reason.value: reason for reason in FinishReason}
#: A payload this short cannot nest deeper than MAX_DEPTH: each level takes two characters.
_SHORT = 2 * MAX_DEPTH + 1
#: Beyond this length, brackets are counted by `_within_depth`'s one pass, not `str.count` twice.
_LONG = 4096
#: Found by `re` at a third of the cost of `'\\"' in data`, which stops at every quote.
_ESCAPED_QUOTE = re.compile(r'\\"')
_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_QUOTE_OR_BRACKET = bytes(sorted(set(range(256)) - set(b'"[]{}')))


class Assembler(assembler.Assembler):
    """Folds llama-server chunks into events and one completion (the plain `Assembler`, faster)."""

    def __init__(self, choices: Choices = REFERENCE) -> None:
        """`choices`: the outcome of each implementation-defined point (`reference.choices`)."""
        super().__init__(choices)
        self._fast = choices == REFERENCE
        self._closed = self._fast  # tried until one payload of the stream does not fit it

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

    def finish(self, thinking_capped: bool) -> Completion:
        """Fold the stream into its completion, or fail as R5 says (the plain `finish`)."""
        if self._timings is not None and type(self._timings) is not Timings:  # OpenTimings
            self._timings = Timings(*msgspec.structs.astuple(self._timings))
        return super().finish(thinking_capped)

    def push(self, data: str) -> list[ChatEvent]:
        """Read one `data:` payload; return the events it stands for, in order (R1)."""
        if self._closed and type(data) is str:
            try:
                chunk: _ClosedChunk | Chunk = decode_closed_chunk(data)
            except _NOT_USUAL:
                self._closed = False  # this stream's payloads are not llama-server's own: open
                return self.push(data)
        elif not self._fast or type(data) is not str:
            return super().push(data)
        else:
            try:
                chunk = decode_chunk(data)
            except _NOT_USUAL:
                return super().push(data)  # the plain reading decides
            if len(data) > _SHORT and not _within_depth(data):
                return super().push(data)  # it may nest deeper than 128 levels (I3)
        # The plain `push`'s rules, written out (its shape is checked: R6 before R8).
        if chunk.error is not None:
            raise InferError(ErrorKind.SERVER, chunk.error.message or "")
        progress = chunk.prompt_progress
        if progress is None:
            events: list[ChatEvent] = []
        else:
            p = progress
            events = [Progress(p.total, p.cache, p.processed, p.time_ms)]
        if self._id is None and chunk.id:
            self._id = chunk.id
        timings = chunk.timings
        if timings is not None:
            self._timings = timings
        choices = chunk.choices
        if not choices:
            return events
        for choice in choices:
            delta = choice.delta
            if delta is not None:
                text = delta.reasoning_content
                if text:
                    self._reasoning.append(text)
                    self._in_reasoning = True
                    timings = self._timings
                    if timings is not None and timings.predicted_n is not None:
                        tokens = timings.predicted_n
                        if type(tokens) is int and tokens >= 0:
                            self._reasoning_tokens = tokens
                        else:  # negative, or a fraction: the plain rule decides (R4, I1)
                            self._count_reasoning_tokens()
                    events.append(Reasoning(text))
                text = delta.content
                if text:
                    self._content.append(text)
                    self._in_reasoning = False
                    events.append(Content(text))
                if delta.tool_calls:
                    self._read_pieces(delta.tool_calls, events)
            reason = choice.finish_reason
            if reason is not None:
                self._finish_reason = _FINISH_REASONS[reason]
        return events

    def _read_pieces(
        self, pieces: list[ToolCallPiece] | list[_ClosedPiece], events: list[ChatEvent]
    ) -> None:
        """The plain `_read_tool_calls`, written out: one event per piece (R1, R2, R4, R6)."""
        calls = self._calls
        for piece in pieces:
            index = piece.index
            if index < len(calls):
                call = calls[index]
            elif index == len(calls):
                call = ToolCallParts()
                calls.append(call)
            else:
                raise protocol(f"tool call index {index} skips ahead: {len(calls)} call(s) so far")
            function = piece.function
            if function is None:
                name = None
                arguments = ""
            else:
                name = function.name
                arguments = function.arguments or ""
            if piece.id and call.id is None:
                call.id = piece.id
            if name and call.name is None:
                call.name = name
            call.arguments.append(arguments)
            events.append(ToolCallDelta(index, piece.id, name, arguments))
        self._in_reasoning = False


def _within_depth(data: str) -> bool:
    """True when `data`, JSON text msgspec has decoded, nests at most MAX_DEPTH levels deep; False
    when it may nest deeper (the plain reading then decides).

    Only a payload with more than MAX_DEPTH brackets can nest deeper: counted by `str.count`
    up to `_LONG` characters, beyond in the one pass below. Then, at C speed (logprobs with many
    alternatives hold hundreds of brackets a payload): its quotes and brackets alone, `{}` as
    `[]`. The text is valid JSON, so with escaped quotes taken out every quote opens or closes a
    string, and a string without brackets is two quotes side by side; a quote left means a
    bracket inside a string: False. Then each pass of `replace` takes out the innermost pairs,
    one level (it does not see the pairs it makes), and `depth` levels gone, what is left nests
    at most half its length deeper.
    """
    if len(data) <= _LONG and data.count("[") + data.count("{") <= MAX_DEPTH:
        return True
    brackets = data.encode().translate(_SQUARE, _NOT_QUOTE_OR_BRACKET)
    if brackets.count(b"[") <= MAX_DEPTH:
        return True
    if _ESCAPED_QUOTE.search(
        data
    ):  # escaped quotes out, escaped backslashes first (`\\"` ends a string)
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
