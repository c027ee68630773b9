"""The shape of one llama-server chunk, as a typed msgspec decoder.

Only the fields the rules read are declared; msgspec skips every other field without building it,
which is what makes the reference faster than `json.loads` alone. Everything msgspec checks here
(types, the safe integer range of timings under I2 `protocol`, finite floats, the finish reasons,
surrogate escapes) becomes a protocol error in `reference.assembler`; what it cannot express
(integral floats, depth) is checked there.
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


class WideTimings(Timings, frozen=True, gc=False):
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


# The strict shape: the same fields, the members llama-server and OpenAI send that the rules do not
# read declared with the scalar types they have, and no other member allowed. A payload it decodes
# nests at most 9 levels deep, so it needs no depth scan; any other payload (an unknown member, a
# container where a scalar is declared, an error of any kind) is decoded again the lenient way,
# which alone decides what it means. `reference.assembler` stops trying it for the rest of a
# stream after one such payload.


class StrictFunction(Function, forbid_unknown_fields=True, gc=False):
    pass


class StrictToolCallPiece(ToolCallPiece, forbid_unknown_fields=True, gc=False):
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
    pass


class StrictServerError(ServerError, forbid_unknown_fields=True, gc=False):
    code: int | str | None = None
    type: str | None = None
    param: str | None = None


class StrictTimings(Timings, forbid_unknown_fields=True, frozen=True, gc=False):
    """Made a `Timings` when it leaves the assembler (`finish`)."""


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
    timings: StrictTimings | None = None
    prompt_progress: StrictPromptProgress | None = None
    error: StrictServerError | None = None
    object: str | None = None
    created: int | None = None
    model: str | None = None
    system_fingerprint: str | None = None
    service_tier: str | None = None
    usage: _Usage | None = None


#: Under I2 `protocol` (the reference's own): the shape llama-server sends, decoded in one go.
decode_strict_chunk = msgspec.json.Decoder(StrictChunk).decode
