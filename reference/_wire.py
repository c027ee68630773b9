"""The shape of one llama-server chunk, as a typed msgspec decoder.

Only the fields the rules read are declared; msgspec skips every other field without building it,
which is what makes the reference faster than `json.loads` alone. Everything msgspec checks here
(types, the safe integer range, finite floats, the finish reasons, surrogate escapes) becomes a
protocol error in `reference.assembler`; what it cannot express (integral floats, depth) is checked
there.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from reference.types import Number, Timings


class Function(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class ToolCallPiece(msgspec.Struct, gc=False):
    index: Number
    id: str | None = None
    function: Function | None = None


class Delta(msgspec.Struct, gc=False):
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCallPiece] | None = None


class Choice(msgspec.Struct, gc=False):
    delta: Delta | None = None
    finish_reason: Literal["stop", "tool_calls", "length", None] = None


class PromptProgress(msgspec.Struct, gc=False):
    total: Number | None = None
    cache: Number | None = None
    processed: Number | None = None
    time_ms: Number | None = None


class ServerError(msgspec.Struct, gc=False):
    message: str | None = None


class Chunk(msgspec.Struct, gc=False):
    id: str | None = None
    choices: list[Choice] | None = None
    timings: Timings | None = None
    prompt_progress: PromptProgress | None = None
    error: ServerError | None = None


decode_chunk = msgspec.json.Decoder(Chunk).decode
