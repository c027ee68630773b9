"""The shape of one llama-server chunk, as a typed msgspec decoder.

Only the fields the rules read are declared; msgspec skips every other field without building it,
which is what makes the reference faster than `json.loads` alone. Everything msgspec checks here
(types, the safe integer range of timings under I2 `protocol`, finite floats, the finish reasons,
surrogate escapes) becomes a protocol error in `reference.assembler`; what it cannot express
(integral floats, depth) is checked there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

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
    delta: Delta | None = None
    finish_reason: Literal["stop", "tool_calls", "length", None] = None


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
    id: str | None = None
    choices: list[Choice] | None = None
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
    service_tier: str | None = None
    usage: _Usage | None = None


#: Under I2 `protocol` (the reference's own): the shape llama-server sends, decoded in one go.
decode_strict_chunk = msgspec.json.Decoder(StrictChunk).decode


# Members the strict shape learns. A newer server adds members nobody reads (at the top, in a
# choice, a delta, a tool call, the timings...): the strict shape refuses each, and every payload
# of such a stream would be decoded the lenient way, which pays for a bracket count over the whole
# text (the depth check of I3) on each. Instead, when the strict shape refuses a payload for a
# member it does not know, at a place it knows, that member is declared there as `Ignored`, and
# the payload is decoded again: a value of at most four levels is ignored as the lenient way
# ignores it, and the depth stays bounded (a payload the learned shape decodes nests at most 13
# levels), so the outcome is the same and only the speed differs. Learned members are kept for the
# whole process, at most `MAX_LEARNED` of them: a stream starts without them (each declared member
# makes every payload a little dearer to decode), and takes the learned shape at its first
# refusal. Any other refusal (a deeper value, a wrong type, too many members) leaves the payload,
# and its stream, to the lenient way.


def _json_value(depth: int) -> Any:
    """Any JSON value nested at most `depth` levels deep (arrays and objects)."""
    kind: Any = str | int | float | bool | None
    for _ in range(depth):
        kind = str | int | float | bool | None | list[kind] | dict[str, kind]
    return kind


#: The value of a learned member: any JSON value at most four levels deep.
Ignored = _json_value(4)

#: At most this many members are learned in one process (each learned one builds a decoder, about
#: a millisecond); members of hostile or generated streams cannot grow it further.
MAX_LEARNED = 64

_TOOL_CALL = "$.choices[].delta.tool_calls[]"
#: Where a member may be learned: the places of the strict shape, as msgspec's errors name them.
PLACES = (
    "$",
    "$.choices[]",
    "$.choices[].delta",
    _TOOL_CALL,
    _TOOL_CALL + ".function",
    "$.timings",
    "$.prompt_progress",
    "$.error",
    "$.usage",
    "$.usage.prompt_tokens_details",
    "$.usage.completion_tokens_details",
)
_UNKNOWN = re.compile(r"Object contains unknown field `(.*?)`(?: - at `(\$[^`]*)`)?", re.DOTALL)
_AN_INDEX = re.compile(r"\[[0-9]+\]")

_learned: frozenset[tuple[str, str]] = frozenset()
_decode_learned: Callable[[str], StrictChunk] = decode_strict_chunk


def _place(base: type[Any], place: str, learned: frozenset[tuple[str, str]], **inner: Any) -> Any:
    """`base` with the members learned at `place` declared (as `Ignored`) and the members of
    `inner` given their learned types."""
    names = sorted(name for where, name in learned if where == place)
    fields: list[tuple[str, Any, Any]] = [
        (f"learned_{i}", Ignored, None) for i, _ in enumerate(names)
    ]
    fields += [(name, kind, None) for name, kind in inner.items()]
    return msgspec.defstruct(
        base.__name__,
        fields,
        bases=(base,),
        rename={f"learned_{i}": name for i, name in enumerate(names)},
        forbid_unknown_fields=True,
        frozen=base.__struct_config__.frozen,
        gc=False,
    )


def _learned_shape(learned: frozenset[tuple[str, str]]) -> Any:
    """The strict shape with the members of `learned` (place, name) declared."""
    function: Any = _place(StrictFunction, _TOOL_CALL + ".function", learned)
    piece: Any = _place(StrictToolCallPiece, _TOOL_CALL, learned, function=function | None)
    delta: Any = _place(StrictDelta, "$.choices[].delta", learned, tool_calls=list[piece] | None)
    choice: Any = _place(StrictChoice, "$.choices[]", learned, delta=delta | None)
    prompt = _place(_PromptTokensDetails, "$.usage.prompt_tokens_details", learned)
    completion = _place(_CompletionTokensDetails, "$.usage.completion_tokens_details", learned)
    usage = _place(
        _Usage,
        "$.usage",
        learned,
        prompt_tokens_details=prompt | None,
        completion_tokens_details=completion | None,
    )
    return _place(
        StrictChunk,
        "$",
        learned,
        choices=list[choice] | None,
        timings=_place(Timings, "$.timings", learned) | None,
        prompt_progress=_place(StrictPromptProgress, "$.prompt_progress", learned) | None,
        error=_place(StrictServerError, "$.error", learned) | None,
        usage=usage | None,
    )


def learn(error: Exception, failed: Callable[[str], Chunk]) -> Callable[[str], StrictChunk] | None:
    """The strict decoder that also declares the member `error` (raised by the decoder `failed`)
    says is unknown; None when `error` is about anything else, the member cannot be learned, or
    `MAX_LEARNED` members are."""
    global _learned, _decode_learned
    match = _UNKNOWN.fullmatch(str(error))
    if match is None:
        return None
    member = (_AN_INDEX.sub("[]", match[2] or "$"), match[1])
    if member in _learned:  # learned since `failed` was made, or not the member's real name
        return _decode_learned if _decode_learned is not failed else None
    if member[0] not in PLACES or len(_learned) >= MAX_LEARNED:
        return None
    learned = _learned | {member}
    try:
        decode = msgspec.json.Decoder(_learned_shape(learned)).decode
    except (TypeError, ValueError):  # a name msgspec cannot declare (a quote, a control character)
        return None
    _learned, _decode_learned = learned, decode
    return decode
