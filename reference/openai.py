"""The members of OpenAI's chat-completion chunk that the rules do not read, with their types (I5).

A client may validate these against OpenAI's schema and refuse a chunk where one has a type that
schema does not allow (`"role": 7`, `"index": "zero"`), or where a member that schema requires is
left out or null (`REQUIRED`); the contract lets it (I5, docs/spec.md section 5), and lets it
ignore them as the reference does. `MEMBERS` is the one list of them, by where they stand, each
with its JSON type and its source; `harness.check.known_fields` re-exports it, and the reference
checks both under I5 `protocol` (`wrong_type`, `missing_member`).

Types are JSON types: `integer` is a number written without a fraction or exponent, `number` any
number, and a string member with `values` allows those strings only (OpenAI's enums). `null` is
allowed for every member (it means the member is absent, contract R6), and so is a member's
absence, whatever the schema says is required: I5 is about the values present. Inside arrays,
`items` names the type of every element (null not allowed: an element is never absent).

Sources (as of 2026): openai-python `src/openai/types/chat/chat_completion_chunk.py`
(`ChatCompletionChunk`, `Choice`, `ChoiceDelta`, `ChoiceDeltaFunctionCall`, `ChoiceDeltaToolCall`,
`ChoiceLogprobs`), `chat_completion_token_logprob.py` (`ChatCompletionTokenLogprob`,
`TopLogprob`), `src/openai/types/completion_usage.py` (`CompletionUsage`,
`CompletionTokensDetails`, `PromptTokensDetails`), and the OpenAI API reference's
`CreateChatCompletionStreamResponse` (with the streamed `delta.audio` of audio output and the
chunk's `obfuscation`).
"""

from __future__ import annotations

from typing import Any, TypeGuard

import msgspec

from reference.json_text import Number


class Member(msgspec.Struct, frozen=True, gc=False):
    """One unread member of the OpenAI chunk schema: its JSON type, and where that is defined."""

    type: str  # string, integer, number, object, array
    source: str
    values: tuple[str, ...] = ()  # for a string: the only values the schema allows
    level: str = ""  # for an object: the level its members are at; for an array: of its items
    items: str = ""  # for an array: the type of its elements


_CHUNK = "openai-python ChatCompletionChunk"
_CHOICE = "openai-python chat_completion_chunk.Choice"
_DELTA = "openai-python ChoiceDelta"
_LOGPROB = "openai-python ChatCompletionTokenLogprob"
_TOP = "openai-python TopLogprob"
_USAGE = "openai-python CompletionUsage"
_COMPLETION_DETAILS = "openai-python CompletionTokensDetails"
_PROMPT_DETAILS = "openai-python PromptTokensDetails"
_AUDIO = "OpenAI API reference, streamed audio output (delta.audio)"
_OBFUSCATION = "OpenAI API reference (stream obfuscation)"
_TOOL_CALL = "openai-python ChoiceDeltaToolCall"
_FUNCTION_CALL = "openai-python ChoiceDeltaFunctionCall"
_LOGPROBS = "openai-python ChoiceLogprobs"
#: The names above are where each member's type comes from: documentation, which only
#: `harness.check.known_fields` and its tests read (tests/tools/mutate_reference.py leaves them be).
SOURCES = (
    _CHUNK,
    _CHOICE,
    _DELTA,
    _LOGPROB,
    _TOP,
    _USAGE,
    _COMPLETION_DETAILS,
    _PROMPT_DETAILS,
    _AUDIO,
    _OBFUSCATION,
    _TOOL_CALL,
    _FUNCTION_CALL,
    _LOGPROBS,
)

#: Where each unread member stands: a level, then the member's name. `top` is the chunk, `choice`
#: an entry of `choices`, `delta` its delta, `tool_call` an entry of `delta.tool_calls`; the other
#: levels are the objects these members hold.
MEMBERS: dict[str, dict[str, Member]] = {
    "top": {
        "object": Member("string", _CHUNK, values=("chat.completion.chunk",)),
        "created": Member("integer", _CHUNK),
        "model": Member("string", _CHUNK),
        "system_fingerprint": Member("string", _CHUNK),
        "service_tier": Member(
            "string", _CHUNK, values=("auto", "default", "flex", "scale", "priority")
        ),
        "usage": Member("object", _CHUNK, level="usage"),
        "obfuscation": Member("string", _OBFUSCATION),
    },
    "choice": {
        "index": Member("integer", _CHOICE),
        "logprobs": Member("object", _CHOICE, level="logprobs"),
    },
    "delta": {
        "role": Member(
            "string", _DELTA, values=("developer", "system", "user", "assistant", "tool")
        ),
        "refusal": Member("string", _DELTA),
        "function_call": Member("object", _DELTA, level="function_call"),  # deprecated
        "audio": Member("object", _AUDIO, level="audio"),
    },
    "tool_call": {
        "type": Member("string", _TOOL_CALL, values=("function",)),
    },
    "function_call": {
        "name": Member("string", _FUNCTION_CALL),
        "arguments": Member("string", _FUNCTION_CALL),
    },
    "audio": {
        "id": Member("string", _AUDIO),
        "data": Member("string", _AUDIO),
        "transcript": Member("string", _AUDIO),
        "expires_at": Member("integer", _AUDIO),
    },
    "logprobs": {
        "content": Member("array", _LOGPROBS, items="object", level="logprob"),
        "refusal": Member("array", _LOGPROBS, items="object", level="logprob"),
    },
    "logprob": {
        "token": Member("string", _LOGPROB),
        "logprob": Member("number", _LOGPROB),
        "bytes": Member("array", _LOGPROB, items="integer"),
        "top_logprobs": Member("array", _LOGPROB, items="object", level="top_logprob"),
    },
    "top_logprob": {
        "token": Member("string", _TOP),
        "logprob": Member("number", _TOP),
        "bytes": Member("array", _TOP, items="integer"),
    },
    "usage": {
        "prompt_tokens": Member("integer", _USAGE),
        "completion_tokens": Member("integer", _USAGE),
        "total_tokens": Member("integer", _USAGE),
        "completion_tokens_details": Member("object", _USAGE, level="completion_tokens_details"),
        "prompt_tokens_details": Member("object", _USAGE, level="prompt_tokens_details"),
    },
    "completion_tokens_details": {
        "accepted_prediction_tokens": Member("integer", _COMPLETION_DETAILS),
        "audio_tokens": Member("integer", _COMPLETION_DETAILS),
        "reasoning_tokens": Member("integer", _COMPLETION_DETAILS),
        "rejected_prediction_tokens": Member("integer", _COMPLETION_DETAILS),
    },
    "prompt_tokens_details": {
        "audio_tokens": Member("integer", _PROMPT_DETAILS),
        "cached_tokens": Member("integer", _PROMPT_DETAILS),
    },
}


def is_openai_integer(value: Any) -> TypeGuard[Number]:
    """True for a number of OpenAI's `integer` type: one written without a fraction or exponent."""
    return isinstance(value, Number) and value.is_written_as_integer


def _is(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return is_openai_integer(value)
    if kind == "number":
        return isinstance(value, Number)
    if kind == "object":
        return isinstance(value, dict)
    return isinstance(value, list)  # array


def _check_level(value: dict[str, Any], level: str, where: str) -> str | None:
    for name, member in MEMBERS[level].items():
        found = value.get(name)
        if found is None:
            continue
        path = f"{where}.{name}" if where else name
        if not _is(found, member.type) or (member.values and found not in member.values):
            return path
        if member.type == "object" and member.level:
            wrong = _check_level(found, member.level, path)
        elif member.type == "array":
            wrong = _check_items(found, member, path)
        else:
            wrong = None
        if wrong is not None:
            return wrong
    return None


def _check_items(items: list[Any], member: Member, where: str) -> str | None:
    for index, item in enumerate(items):
        path = f"{where}[{index}]"
        if not _is(item, member.items):
            return path
        if member.level and (wrong := _check_level(item, member.level, path)) is not None:
            return wrong
    return None


#: The members OpenAI's chunk schema requires that llama-server streams always carry but the rules
#: let a chunk leave out (R7), by level (openai-python `ChatCompletionChunk.choices`,
#: `chat_completion_chunk.Choice.delta` and `.index` have no default). Its other required members
#: (`id`, `object`, `created`, `model`) are left to the rules: R9 and R5 read `id`.
REQUIRED: dict[str, tuple[str, ...]] = {"top": ("choices",), "choice": ("delta", "index")}


def missing_member(chunk: dict[str, Any]) -> str | None:
    """The path of the first member of `REQUIRED` that `chunk` (a payload as
    `reference.json_text.read_json` reads it) leaves out or sets to null; None when there is
    none. A payload with an `error` object is no chunk (R8): it has none."""
    if isinstance(chunk.get("error"), dict):
        return None
    for name in REQUIRED["top"]:
        if chunk.get(name) is None:
            return name
    choices = chunk["choices"]
    for index, choice in enumerate(choices if isinstance(choices, list) else ()):
        for name in REQUIRED["choice"] if isinstance(choice, dict) else ():
            if choice.get(name) is None:
                return f"choices[{index}].{name}"
    return None


def wrong_type(chunk: Any) -> str | None:
    """The path of the first unread OpenAI member of `chunk` (a payload as
    `reference.json_text.read_json` reads it) whose value has a type the schema does not allow;
    None when there is none. Members the rules read, and values of the wrong shape for them, are
    left to the shape's check (`reference.shape`)."""
    if not isinstance(chunk, dict):
        return None
    wrong = _check_level(chunk, "top", "")
    choices = chunk.get("choices")
    if wrong is not None or not isinstance(choices, list):
        return wrong
    for index, choice in enumerate(choices):
        if not isinstance(choice, dict):
            continue
        where = f"choices[{index}]"
        if (wrong := _check_level(choice, "choice", where)) is not None:
            return wrong
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            continue
        if (wrong := _check_level(delta, "delta", f"{where}.delta")) is not None:
            return wrong
        calls = delta.get("tool_calls")
        for number, call in enumerate(calls if isinstance(calls, list) else ()):
            if isinstance(call, dict):
                path = f"{where}.delta.tool_calls[{number}]"
                if (wrong := _check_level(call, "tool_call", path)) is not None:
                    return wrong
    return None
