"""The reference assembler: docs/spec.md's rules R1 to R9, in the spec's order, as plain Python.

This is the executable form of the spec, and what generates the golden files. `push` reads one
payload: its shape first (section 3 and R6, in `reference.shape`), then its server error (R8),
then the rules that fold it into the stream so far; `finish` folds the stream into a `Completion`
(R5). Each step is one small method named for what the spec calls it. The implementation-defined
points are the `Choices` given (`reference.choices`); the reference's own are the first outcome
of each.

`reference.fast.Assembler` (what `from reference import Assembler` gives) is the same assembler
with a faster `push` for the usual payload; tests/assembler/test_differential.py holds it to this
one. No I/O; the only exception either raises is `InferError`.
"""

from __future__ import annotations

from reference.choices import DEFAULT_MESSAGE, REFERENCE, Choices
from reference.json_text import MAX_DEPTH, protocol
from reference.shape import Choice, Chunk, Delta, ToolCallPiece, integer_of, read_chunk
from reference.types import (
    MAX_SAFE_INTEGER,
    ChatEvent,
    Completion,
    Content,
    ErrorKind,
    FinishReason,
    InferError,
    Reasoning,
    Timings,
    ToolCall,
    ToolCallDelta,
)

__all__ = ["MAX_DEPTH", "Assembler"]


class ToolCallParts:
    """A tool call being assembled from its pieces (R2)."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.arguments: list[str] = []


class Assembler:
    """Folds llama-server chunks into events and one completion (docs/spec.md section 4)."""

    def __init__(self, choices: Choices = REFERENCE) -> None:
        """`choices`: the outcome of each implementation-defined point (`reference.choices`)."""
        self._choices = choices
        self._id: str | None = None
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[ToolCallParts] = []
        self._timings: Timings | None = None
        self._finish_reason: FinishReason | None = None
        self._reasoning_tokens = 0
        self._in_reasoning = False

    # --- the four state readers (section 2) ------------------------------------------------------

    @property
    def id(self) -> str | None:
        """The completion id, once a chunk carried a non-empty one (R9)."""
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
        """True once a finish reason has arrived (R5)."""
        return self._finish_reason is not None

    # --- push: one payload ------------------------------------------------------------------------

    def push(self, data: str) -> list[ChatEvent]:
        """Read one `data:` payload; return the events it stands for, in order (R1)."""
        chunk = read_chunk(data, self._choices)  # section 3, R6: the whole shape first
        self._raise_server_error(chunk)
        folded = self._choices_folded(chunk)
        self._keep_first_id(chunk)
        self._replace_timings(chunk)
        events: list[ChatEvent] = []
        if chunk.prompt_progress is not None:
            events.append(chunk.prompt_progress)  # R1: progress first
        for choice in folded:
            events += self._read_choice(choice)
        return events

    def _raise_server_error(self, chunk: Chunk) -> None:
        """R8: an `error` object fails the push with kind `server` and the server's message; I8
        for one without a message (absent, null or empty): `""`, or the reference's own text."""
        if chunk.error is None:
            return
        if chunk.error.message or self._choices.I8 == "empty":
            raise InferError(ErrorKind.SERVER, chunk.error.message or "")
        raise InferError(ErrorKind.SERVER, DEFAULT_MESSAGE)

    def _keep_first_id(self, chunk: Chunk) -> None:
        """R9: the id is the first non-empty id seen; I9 for a later, different one: ignored,
        or the latest."""
        if chunk.id and (self._id is None or self._choices.I9 == "latest"):
            self._id = chunk.id

    def _choices_folded(self, chunk: Chunk) -> list[Choice]:
        """R1, I7: the choices folded into the completion, in order: every one, or only those
        whose index is 0; or protocol for more than one choice, or another index."""
        if self._choices.I7 == "index0":
            return [choice for choice in chunk.choices if choice.index_is_zero]
        if self._choices.I7 == "protocol" and (
            len(chunk.choices) > 1 or not all(choice.index_is_zero for choice in chunk.choices)
        ):
            raise protocol("a chunk holds more than one choice, or a choice index other than 0")
        return chunk.choices

    def _replace_timings(self, chunk: Chunk) -> None:
        """R3: the latest `timings` object replaces the last, whole (before R4 reads it)."""
        if chunk.timings is not None:
            self._timings = chunk.timings

    def _read_choice(self, choice: Choice) -> list[ChatEvent]:
        """R1: a choice's events in order (reasoning, content, tool-call pieces); R5 its finish."""
        events: list[ChatEvent] = []
        if choice.delta is not None:
            events += self._read_reasoning(choice.delta)
            events += self._read_content(choice.delta)
            events += self._read_tool_calls(choice.delta)
        self._note_finish_reason(choice)
        return events

    def _read_reasoning(self, delta: Delta) -> list[ChatEvent]:
        """R1, R2, R4: non-empty reasoning text is an event, sets the reasoning state and tokens."""
        text = delta.reasoning_content
        if not text:
            return []
        self._reasoning.append(text)
        self._in_reasoning = True
        self._count_reasoning_tokens()
        return [Reasoning(text)]

    def _count_reasoning_tokens(self) -> None:
        """R4: reasoning tokens are the latest timings' `predicted_n`, when there is one; it must
        be a non-negative integer within ±(2^53-1) (I1 for one written `1.0`)."""
        if self._timings is None or self._timings.predicted_n is None:
            return
        tokens = integer_of(self._timings.predicted_n, "timings.predicted_n", self._choices)
        if not 0 <= tokens <= MAX_SAFE_INTEGER:
            raise protocol(f"timings.predicted_n must be a count, not {tokens}")
        self._reasoning_tokens = tokens

    def _read_content(self, delta: Delta) -> list[ChatEvent]:
        """R1, R2, R4: non-empty content text is an event and ends the reasoning state."""
        text = delta.content
        if not text:
            return []
        self._content.append(text)
        self._in_reasoning = False
        return [Content(text)]

    def _read_tool_calls(self, delta: Delta) -> list[ChatEvent]:
        """R1, R2, R4: an event per tool-call piece, in order; a piece ends the reasoning state."""
        events: list[ChatEvent] = [self._read_tool_call_piece(piece) for piece in delta.tool_calls]
        if events:
            self._in_reasoning = False
        return events

    def _read_tool_call_piece(self, piece: ToolCallPiece) -> ToolCallDelta:
        """R1, R2, R6: a piece adds to the call of its index, or starts the next one."""
        if piece.index > len(self._calls):
            raise protocol(
                f"tool call index {piece.index} skips ahead: {len(self._calls)} call(s) so far"
            )
        if piece.index == len(self._calls):
            self._calls.append(ToolCallParts())
        call = self._calls[piece.index]
        name = None if piece.function is None else piece.function.name
        arguments = (None if piece.function is None else piece.function.arguments) or ""
        if piece.id and call.id is None:  # R2: the first non-empty id and name
            call.id = piece.id
        if name and call.name is None:
            call.name = name
        call.arguments.append(arguments)
        return ToolCallDelta(piece.index, piece.id, name, arguments)

    def _note_finish_reason(self, choice: Choice) -> None:
        """R5: the latest non-null finish reason wins; a null one changes nothing."""
        if choice.finish_reason is not None:
            self._finish_reason = choice.finish_reason

    # --- finish: the completion -------------------------------------------------------------------

    def finish(self, thinking_capped: bool) -> Completion:
        """R5: the completion; `stream_closed_early` without a finish reason; `protocol` without
        an id, or for a tool call that never got a non-empty id or name."""
        if self._finish_reason is None:
            raise InferError(
                ErrorKind.STREAM_CLOSED_EARLY, "the stream ended without a finish reason"
            )
        if self._id is None:
            raise protocol("no chunk carried an id")
        return Completion(
            id=self._id,
            content="".join(self._content) if self._content else None,
            reasoning_content="".join(self._reasoning) if self._reasoning else None,
            tool_calls=tuple(
                self._complete_tool_call(i, call) for i, call in enumerate(self._calls)
            ),
            finish_reason=self._finish_reason,
            timings=self._timings,
            reasoning_tokens=self._reasoning_tokens,
            thinking_capped=bool(thinking_capped),
        )

    def _complete_tool_call(self, index: int, call: ToolCallParts) -> ToolCall:
        """R2, R5: a tool call's arguments joined; it must have got an id and a name."""
        if call.id is None:
            raise protocol(f"tool call {index} never got an id")
        if call.name is None:
            raise protocol(f"tool call {index} never got a name")
        return ToolCall(call.id, call.name, "".join(call.arguments))
