"""The shape of one llama-server chunk, as a typed msgspec decoder.

Only the fields the rules read are declared; msgspec skips every other field without building it,
which is what makes the reference faster than `json.loads` alone. Everything msgspec checks here
(types, the safe integer range of timings under I2 `protocol`, finite floats, the finish reasons,
surrogate escapes) becomes a protocol error in `reference.assembler`; what it cannot express
(integral floats, depth) is checked there.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from reference.types import MAX_SAFE_INTEGER, Number, Timings


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
    finish_reason: Literal["stop", "tool_calls", "length", None] = None
    delta: Delta | None = None


class PromptProgress(msgspec.Struct, gc=False):
    total: Number | None = None
    cache: Number | None = None
    processed: Number | None = None
    time_ms: Number | None = None


class ServerError(msgspec.Struct, gc=False):
    message: str | None = None


class LooseTimings(Timings, forbid_unknown_fields=False, frozen=True, gc=False):
    """`Timings` that ignores members it does not declare (made a `Timings` by `finish`)."""


class Chunk(msgspec.Struct, gc=False):
    choices: list[Choice] | None = None
    id: str | None = None
    timings: LooseTimings | None = None
    prompt_progress: PromptProgress | None = None
    error: ServerError | None = None


class WideTimings(LooseTimings, frozen=True, gc=False):
    """`Timings` with integers of any size, for I2 `exact` and `double`."""

    cache_n: Number | None = None
    prompt_n: Number | None = None
    prompt_ms: Number | None = None
    prompt_per_token_ms: Number | None = None
    prompt_per_second: Number | None = None
    predicted_n: Number | None = None
    predicted_ms: Number | None = None
    predicted_per_token_ms: Number | None = None
    predicted_per_second: Number | None = None
    draft_n: Number | None = None
    draft_n_accepted: Number | None = None


class WideChunk(Chunk, gc=False):
    """`Chunk` whose timings hold integers of any size."""

    timings: WideTimings | None = None


#: Under I2 `protocol`: a timings integer beyond ±(2^53-1) fails as it is decoded.
decode_chunk = msgspec.json.Decoder(Chunk).decode
#: Under the other I2 outcomes (`reference.assembler._timings` decides those integers).
decode_wide_chunk = msgspec.json.Decoder(WideChunk).decode


# The strict shape: the same fields, its integers already as the rules read them (safe, and an
# index not negative), the members llama-server and OpenAI send that the rules do not read declared
# with the scalar types they have, and no other member allowed. A payload it decodes nests at most 9
# levels deep, so it needs no depth scan, and its numbers no check; any other payload (an unknown
# member, a container where a scalar is declared, `1.0` for an integer, an error of any kind) is
# decoded again the lenient way, which alone decides what it means. `reference.assembler` stops
# trying it for the rest of a stream after one such payload.
#
# Every member a shape declares costs its default on each payload that lacks it, so the strict
# shape leaves out `service_tier` (OpenAI's own chunks, which alone send it, also carry
# `obfuscation`, which sends them the lenient way whatever it declares). Fields stand in
# llama-server's key order (`choices` first, `finish_reason` before `delta`): msgspec looks a key
# up from the field after the last one matched.


class StrictFunction(Function, forbid_unknown_fields=True, gc=False):
    pass


#: An integer as the rules read it (R6, I1, I2): the strict shape takes nothing else for one.
SafeInteger = Annotated[int, msgspec.Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
#: A tool-call index: a safe integer, not negative.
SafeIndex = Annotated[int, msgspec.Meta(ge=0, le=MAX_SAFE_INTEGER)]


class StrictToolCallPiece(ToolCallPiece, forbid_unknown_fields=True, gc=False):
    index: SafeIndex
    function: StrictFunction | None = None
    type: str | None = None


class StrictDelta(Delta, forbid_unknown_fields=True, gc=False):
    # list is invariant for mypy; its items are subclasses of the base field's, as msgspec wants
    tool_calls: list[StrictToolCallPiece] | None = None  # type: ignore[assignment]
    role: str | None = None
    refusal: str | None = None


class StrictChoice(Choice, forbid_unknown_fields=True, gc=False):
    delta: StrictDelta | None = None
    index: int | None = None
    logprobs: None = None


class StrictPromptProgress(PromptProgress, forbid_unknown_fields=True, gc=False):
    total: SafeInteger | None = None
    cache: SafeInteger | None = None
    processed: SafeInteger | None = None
    time_ms: SafeInteger | None = None


class StrictServerError(ServerError, forbid_unknown_fields=True, gc=False):
    code: int | str | None = None
    type: str | None = None
    param: str | None = None


class _PromptTokensDetails(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    cached_tokens: int | None = None
    audio_tokens: int | None = None


class _CompletionTokensDetails(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    reasoning_tokens: int | None = None
    audio_tokens: int | None = None
    accepted_prediction_tokens: int | None = None
    rejected_prediction_tokens: int | None = None


class _Usage(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    prompt_tokens_details: _PromptTokensDetails | None = None
    completion_tokens_details: _CompletionTokensDetails | None = None


class StrictChunk(Chunk, forbid_unknown_fields=True, gc=False):
    choices: list[StrictChoice] | None = None  # type: ignore[assignment]
    timings: Timings | None = None  # type: ignore[assignment]  # the strict public one
    prompt_progress: StrictPromptProgress | None = None
    error: StrictServerError | None = None
    object: Literal["chat.completion.chunk", None] = None
    created: int | None = None
    model: str | None = None
    system_fingerprint: str | None = None
    usage: _Usage | None = None


#: Under I2 `protocol` (the reference's own): the shape llama-server sends, decoded in one go.
decode_strict_chunk = msgspec.json.Decoder(StrictChunk).decode
