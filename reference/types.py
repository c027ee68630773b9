"""The reference's public types: events, the completion and its parts, and the one error it raises.

All are frozen msgspec Structs: immutable, typed, cheap to build (an assembler makes one per event),
and what the fast assembler (`reference.fast`) decodes into directly where the payload's shape and
the public shape agree (`Timings`). An event encodes (`msgspec.json.encode`) as the golden files'
event object: its `type` first, then its fields.
"""

from __future__ import annotations

import enum
from typing import Annotated

import msgspec

#: The largest integer every JSON implementation holds exactly (I-JSON, RFC 7493); beyond it is I2.
MAX_SAFE_INTEGER = 2**53 - 1


class ErrorKind(enum.StrEnum):
    """Why an assembly failed (contract section 2)."""

    PROTOCOL = "protocol"
    STREAM_CLOSED_EARLY = "stream_closed_early"
    SERVER = "server"


class InferError(Exception):
    """The only exception `Assembler.push` and `Assembler.finish` raise."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        # `args` stays (kind, message), so that it pickles; the text is made only when shown.
        self.kind = kind
        self.message = message

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.message}"


class FinishReason(enum.StrEnum):
    """Why the server stopped generating."""

    STOP = "stop"
    TOOL_CALLS = "tool_calls"
    LENGTH = "length"


class Progress(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="progress"):
    """Prompt processing progress (`prompt_progress`)."""

    total: int | None = None
    cache: int | None = None
    processed: int | None = None
    time_ms: int | None = None


class Reasoning(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="reasoning"):
    """A piece of thinking text (`reasoning_content`)."""

    text: str


class Content(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="content"):
    """A piece of answer text (`content`)."""

    text: str


class ToolCallDelta(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="tool_call_delta"):
    """One entry of a chunk's `tool_calls`, as that piece had it."""

    index: int
    id: str | None
    name: str | None
    arguments: str


ChatEvent = Progress | Reasoning | Content | ToolCallDelta

#: A JSON number whose integers lie within ±(2^53-1): what the fast assembler decodes a `Timings`
#: field as, so that msgspec checks the range as it decodes (the plain assembler builds `Timings`
#: itself, as I2 chooses; a Struct's constructor checks no types).
SafeNumber = Annotated[int, msgspec.Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)] | float


class Timings(msgspec.Struct, frozen=True, gc=False, forbid_unknown_fields=True):
    """llama-server's `timings` object; fields it lacks are None (R3, R9).

    Decoded (by the fast assembler), it refuses members it does not declare, so that a payload
    whose timings hold one goes to the plain reading, which ignores them.
    """

    cache_n: SafeNumber | None = None
    prompt_n: SafeNumber | None = None
    prompt_ms: SafeNumber | None = None
    prompt_per_token_ms: SafeNumber | None = None
    prompt_per_second: SafeNumber | None = None
    predicted_n: SafeNumber | None = None
    predicted_ms: SafeNumber | None = None
    predicted_per_token_ms: SafeNumber | None = None
    predicted_per_second: SafeNumber | None = None
    draft_n: SafeNumber | None = None
    draft_n_accepted: SafeNumber | None = None


class ToolCall(msgspec.Struct, frozen=True, gc=False):
    """A complete tool call of the completion."""

    id: str
    name: str
    arguments: str


class Completion(msgspec.Struct, frozen=True, gc=False):
    """The whole streamed completion, folded."""

    id: str
    content: str | None
    reasoning_content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: FinishReason
    timings: Timings | None
    reasoning_tokens: int
    thinking_capped: bool
