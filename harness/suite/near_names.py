"""Near-names: members a client may take for a field the rules read, though the rules never do.

An unknown member is ignored (R7) whatever its name; an invented name (`x_future`) tests only
that a client tolerates it. Clients go wrong on names *near* a read field instead: Go's
encoding/json matches keys to fields without case (and with Unicode folding: a long s, U+017F),
Swift's `convertFromSnakeCase` and Jackson's naming strategies take `reasoningContent` for
`reasoning_content`, code that flattens or falls back reads a field's name at another level
(`content` on the chunk, `finish_reason` in the delta), and code written for another API reads
that API's names for the same meaning (`delta.reasoning`, `choice.text`, a top-level `message` or
`detail` as an error, `"type": "ping"` as a chunk to skip, `"done": true` as the end).

`NEAR_NAMES` lists them by the level they are added at, each with the read field it stands for and
why a client reads it; `near_value` gives the value to add: one of the read field's type that
differs from what the object holds, so that a client reading the near-name gets another result.
None is a member OpenAI's chunk schema defines at its level (a wrong type there would be I5, and
`choices[].index` means something under I7), none is read at its level, and a name another server
sends at that level gets a value of the type that server sends (`delta.reasoning`: a string). The
`unknown-fields` mode adds them beside its invented names (`harness.check.members`); the stream
model can draw from the same lists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.suite.read_fields import READ_FIELDS
from reference.openai import MEMBERS

__all__ = ["LEVELS", "NEAR_NAMES", "READ_AT", "NearName", "near_value"]

#: The levels members are added at, in the order a chunk is walked.
LEVELS = ("top", "choice", "delta", "tool_call", "function", "timings", "prompt_progress", "error")

#: The names each level reads, with their JSON kind (`harness.suite.read_fields`).
READ_AT: dict[str, dict[str, str]] = {level: {} for level in LEVELS}
for _field in READ_FIELDS:
    if "[]" not in _field.path:
        READ_AT[_field.level][_field.name] = _field.kind


@dataclass(frozen=True, slots=True)
class NearName:
    """A member added at `level`, which a client may read as the field `stands_for` (`level.name`
    of a read field); `how` it is near (`case`, `spelling`, `fold`, `level`, `meaning`), why a
    client reads it, and for a meaning taken from another API the value that API sends."""

    level: str
    name: str
    stands_for: str
    how: str
    why: str
    value: Any = None

    @property
    def kind(self) -> str:
        """The JSON kind of the field it stands for."""
        level, name = self.stands_for.split(".")
        return READ_AT[level][name]


def _spellings(name: str) -> dict[str, str]:
    """Other spellings of a snake_case name, each with how it is near."""
    words = name.split("_")
    camel = words[0] + "".join(w.capitalize() for w in words[1:])
    found = {camel: "spelling", camel[0].upper() + camel[1:]: "spelling"}
    found |= {name.capitalize(): "case", name.upper(): "case"}  # `Choices` differs in case only
    # Go's EqualFold folds U+017F (long s) to s and U+212A (Kelvin sign) to k.
    if "s" in name:
        found[name.replace("s", "\u017f", 1)] = "fold"
    elif "k" in name:
        found[name.replace("k", "\u212a", 1)] = "fold"
    found.pop(name, None)
    return found


_WHY = {
    "case": "Go's encoding/json matches keys to struct fields without case (the last key wins); "
    "C#'s PropertyNameCaseInsensitive and Jackson's ACCEPT_CASE_INSENSITIVE_PROPERTIES too",
    "spelling": "Swift's convertFromSnakeCase, Jackson's and System.Text.Json's naming policies "
    "and pydantic's alias generators read camelCase and PascalCase as the snake_case field",
    "fold": "Go's encoding/json folds keys with Unicode simple folding (U+017F is s, U+212A k)",
    "level": "code that flattens a chunk, or falls back to another level "
    "(`chunk.content ?? delta.content`), reads a field's name where the rules do not",
}

#: Read names moved to other levels: those of the levels a chunk nests (not the timings and
#: progress counts, which move only to the chunk's top, as flattened timings).
_MOVED_TO = ("top", "choice", "delta", "tool_call", "function", "error")

_S = "string"

#: Names other servers and APIs use for a meaning the rules take from a read field only.
_MEANINGS: tuple[NearName, ...] = (
    NearName("top", "message", "choice.delta", "meaning", "Ollama's native stream sends the text "
             "as a top-level message (an object), and error bodies a message beside the error "
             "(a string: the value beside an `error` member): a client that reads either"),
    NearName("top", "detail", "error.message", "meaning", "FastAPI's error body "
             "(`{\"detail\": ...}`), read as an error"),
    NearName("top", "errors", "top.error", "meaning", "GraphQL-style and Azure error lists",
             [{"message": "(errors)"}]),
    NearName("top", "type", "top.choices", "meaning", "Anthropic's event types: a client that "
             "skips `ping` chunks, or treats `error` ones as errors", "ping"),
    NearName("top", "event", "top.error", "meaning", "an SSE event name repeated in the data by "
             "some proxies, read as an error", "error"),
    NearName("top", "status", "top.error", "meaning", "gateways' status field, read as an error",
             "error"),
    NearName("top", "done", "choice.finish_reason", "meaning", "Ollama's native stream ends with "
             "`\"done\": true`: a client that stops there", True),
    NearName("top", "stop", "choice.finish_reason", "meaning", "llama-server's native "
             "/completion stream ends with `\"stop\": true`", True),
    NearName("top", "response", "delta.content", "meaning", "Ollama's /api/generate text"),
    NearName("top", "text", "delta.content", "meaning", "legacy completions' text"),
    NearName("choice", "text", "delta.content", "meaning", "legacy /v1/completions and TGI send "
             "choice.text"),
    NearName("choice", "message", "choice.delta", "meaning", "the non-streamed shape "
             "(choice.message), which some servers also put in chunks"),
    NearName("choice", "stop_reason", "choice.finish_reason", "meaning", "vLLM's and Anthropic's "
             "stop_reason, read as the finish reason"),
    NearName("choice", "done_reason", "choice.finish_reason", "meaning", "Ollama's done_reason"),
    NearName("choice", "native_finish_reason", "choice.finish_reason", "meaning",
             "OpenRouter's native_finish_reason"),
    NearName("delta", "reasoning", "delta.reasoning_content", "meaning", "vLLM, OpenRouter and "
             "Ollama send reasoning text as delta.reasoning"),
    NearName("delta", "thinking", "delta.reasoning_content", "meaning", "Ollama's and "
             "Anthropic-style proxies' name for reasoning"),
    NearName("delta", "text", "delta.content", "meaning", "Anthropic's text_delta"),
    NearName("delta", "partial_json", "function.arguments", "meaning", "Anthropic's "
             "input_json_delta"),
    NearName("tool_call", "call_id", "tool_call.id", "meaning", "the Responses API's call_id"),
    NearName("tool_call", "tool_call_id", "tool_call.id", "meaning", "the chat messages' "
             "tool_call_id"),
    NearName("tool_call", "input", "function.arguments", "meaning", "Anthropic's tool_use input"),
    NearName("function", "args", "function.arguments", "meaning", "a common short name"),
    NearName("function", "parameters", "function.arguments", "meaning", "Llama 3's JSON tool "
             "calls name the arguments parameters"),
    NearName("error", "detail", "error.message", "meaning", "FastAPI's error detail"),
    NearName("error", "msg", "error.message", "meaning", "pydantic's and Starlette's "
             "validation errors"),
    NearName("error", "error", "error.message", "meaning", "Ollama sends the error as a string"),
    NearName("error", "description", "error.message", "meaning", "OAuth-style error bodies"),
    NearName("timings", "tokens_predicted", "timings.predicted_n", "meaning", "llama-server's "
             "native /completion names the count tokens_predicted"),
    NearName("timings", "tokens_evaluated", "timings.prompt_n", "meaning", "llama-server's native "
             "/completion names the prompt count tokens_evaluated"),
)  # fmt: skip


def _near_names() -> dict[str, tuple[NearName, ...]]:
    found: dict[str, dict[str, NearName]] = {level: {} for level in LEVELS}
    for level, read in READ_AT.items():
        for name in read:
            stands_for = f"{level}.{name}"
            for spelling, how in _spellings(name).items():
                found[level][spelling] = NearName(level, spelling, stands_for, how, _WHY[how])
            targets = _MOVED_TO if level in _MOVED_TO else ("top",)
            for other in targets:
                if other != level and name not in found[other]:
                    found[other][name] = NearName(other, name, stands_for, "level", _WHY["level"])
    for near in _MEANINGS:
        found[near.level][near.name] = near
    for level, names in found.items():
        for name in list(names):
            # Never a name read there, nor one OpenAI's schema defines there (I5, and I7 for a
            # choice's index): a real member's wrong value is no unknown field.
            if name in READ_AT[level] or name in MEMBERS.get(level, {}) or name == "__proto__":
                del names[name]
    return {level: tuple(names.values()) for level, names in found.items()}


#: The near-names of each level, in a fixed order.
NEAR_NAMES: dict[str, tuple[NearName, ...]] = _near_names()

_OBJECTS: dict[str, Any] = {
    "choice.delta": lambda text: {"content": text},
    "tool_call.function": lambda text: {"name": text, "arguments": "{}"},
    "top.timings": lambda text: {"predicted_n": 4321, "prompt_ms": 1.5},
    "top.prompt_progress": lambda text: {"total": 99, "processed": 99},
    "top.error": lambda text: {"message": text},
}
_ARRAYS: dict[str, Any] = {
    "top.choices": lambda text: [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    "delta.tool_calls": lambda text: [
        {"index": 0, "id": text, "type": "function", "function": {"name": text, "arguments": "{}"}}
    ],
}


def _another_number(current: Any, kind: str) -> int | float:
    if isinstance(current, bool) or not isinstance(current, int | float) or abs(current) >= 2**52:
        return 7 if kind == "integer" else 1234.5
    return current + 1


def _maker(near: NearName) -> Callable[[dict[str, Any]], Any]:
    """How `near_value` makes `near`'s value, decided once per near-name."""
    if (near.level, near.name) == ("top", "message"):
        said = {"role": "assistant", "content": "(message)"}
        return lambda obj: "(message)" if "error" in obj else said
    if near.value is not None:
        fixed = near.value
        return lambda obj: fixed
    level, name = near.stands_for.split(".")
    text = f"({near.name})"
    kind = near.kind
    if kind == _S:
        return lambda obj: text
    if level != near.level:  # the field it stands for is not in this object
        value = near_value_for(kind, near.stands_for, text, None)
        return lambda obj: value
    return lambda obj: near_value_for(kind, near.stands_for, text, obj.get(name))


def near_value_for(kind: str, stands_for: str, text: str, current: Any) -> Any:
    """A value of `kind` for the field `stands_for`, unlike `current` (`text` for a string)."""
    if kind == _S:
        return text
    if kind == "enum":
        return "length" if current == "stop" else "stop"
    if kind in ("integer", "number"):
        return _another_number(current, kind)
    if kind == "object":
        return _OBJECTS[stands_for](text)
    return _ARRAYS[stands_for](text)


_MAKERS: dict[tuple[str, str], Callable[[dict[str, Any]], Any]] = {
    (near.level, near.name): _maker(near) for names in NEAR_NAMES.values() for near in names
}


def near_value(near: NearName, obj: dict[str, Any]) -> Any:
    """The value `near` is added with to `obj`: of the type of the field it stands for, and not
    the value that field has in `obj`, so that a client reading it gets another result."""
    return _MAKERS[near.level, near.name](obj)
