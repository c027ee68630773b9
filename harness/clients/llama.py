"""What an adapter adds itself: the llama-server fields no OpenAI client keeps, and the events
and completion conform reads.

openai-python and the clients built on it accumulate OpenAI's chat-completion chunks.
llama-server adds fields to them that they do not read: `timings` and `prompt_progress` at the
top of a chunk, and the reasoning state (`in_reasoning`, `reasoning_tokens`) that the contract
derives from `reasoning_content` and `timings.predicted_n`. An adapter keeps these here,
validated as docs/spec.md says, so that a failure in these fields is never blamed on the client.

`peek(data)` reads a payload for those fields without ever raising: a payload that is not a JSON
object (`[DONE] `, `null`, a cut one) is `{}`, since an adapter must never fail on a payload
before or after the client has dealt with it (the client's own answer to it is what is judged).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1
#: All eleven keys: conform reads every one of them from a completion's `timings` (docs/clients.md).
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


def peek(data: str) -> dict[str, Any]:
    """The payload as a JSON object, to read the llama-server fields from; `{}` for anything
    else (not JSON, not an object, nested too deep). Never raises."""
    try:
        found = json.loads(data)
    except (ValueError, RecursionError):
        return {}
    return found if isinstance(found, dict) else {}


class StreamError(Exception):
    """A contract error; `kind` is protocol, stream_closed_early or server."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def protocol(message: str) -> StreamError:
    """The contract's `protocol` error, with this message."""
    return StreamError("protocol", message)


# The events: conform reads an event's type from its class name.
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
    id: str | None
    name: str | None
    arguments: str | None


@dataclass(frozen=True)
class Completion:
    id: str | None
    content: str | None
    reasoning_content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    timings: dict[str, Any] | None
    reasoning_tokens: int
    thinking_capped: bool


def _number(value: Any, where: str) -> int | float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise protocol(f"{where} must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise protocol(f"{where} is out of range")
    if isinstance(value, int) and abs(value) > MAX_SAFE_INTEGER:
        raise protocol(f"{where} is out of range")
    return value


def as_integer(value: int | float, where: str) -> int:
    """An integral number as an int, or `protocol` (contract I1, I2).

    A float beyond ±(2^53-1) is refused even when integral: the parser has already rounded it
    (`9007199254740993.0` reads as ...992.0, `1e300` is no count at all), so no exact integer is
    left to read, and I2 allows only the exact value or `protocol`.
    """
    if isinstance(value, float):
        if not value.is_integer():
            raise protocol(f"{where} must be an integer")
        if abs(value) > MAX_SAFE_INTEGER:
            raise protocol(f"{where} is out of range")
        return int(value)
    if abs(value) > MAX_SAFE_INTEGER:
        raise protocol(f"{where} is out of range")
    return value


def _integer(value: Any, where: str) -> int | None:
    number = _number(value, where)
    return None if number is None else as_integer(number, where)


def read_timings(value: Any) -> dict[str, Any] | None:
    """A chunk's `timings`, with every one of the eleven keys (None when the server left it out)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise protocol("timings must be an object")
    return {name: _number(value.get(name), f"timings.{name}") for name in TIMINGS_FIELDS}


def read_progress(value: Any) -> Progress | None:
    """A chunk's `prompt_progress` as the progress event, or None when it has none."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise protocol("prompt_progress must be an object")
    return Progress(*(_integer(value.get(n), f"prompt_progress.{n}") for n in PROGRESS_FIELDS))


def read_reasoning(value: Any) -> str | None:
    """A delta's `reasoning_content`: a string or nothing."""
    if value is None or isinstance(value, str):
        return value
    raise protocol("reasoning_content must be a string")


def read_id(current: str | None, value: Any) -> str | None:
    """R9 for a client that keeps no completion id: the first non-empty `id` seen."""
    if value is not None and not isinstance(value, str):
        raise protocol("id must be a string")
    return current if current or not value else value


@dataclass
class ReasoningState:
    """Timings, `reasoning_tokens` and `in_reasoning` (contract R3, R4), kept by the adapter."""

    timings: dict[str, Any] | None = None
    reasoning_tokens: int = 0
    in_reasoning: bool = False
    _pending: list[Any] = field(default_factory=list)

    def take_timings(self, timings: dict[str, Any] | None) -> None:
        """R4: a chunk's timings are taken before any of its text."""
        if timings is not None:
            self.timings = timings

    def saw(self, event: Any) -> None:
        """Update the state for one event, in event order."""
        if isinstance(event, Reasoning):
            self.in_reasoning = True
            tokens = None if self.timings is None else self.timings["predicted_n"]
            if tokens is not None:
                count = as_integer(tokens, "timings.predicted_n")
                if count < 0:
                    raise protocol("timings.predicted_n must be a non-negative integer")
                self.reasoning_tokens = count
        elif isinstance(event, Content | ToolCallDelta):
            self.in_reasoning = False


class ReasoningReaders:
    """An adapter's `reasoning_tokens` and `in_reasoning` state readers (R4), from the
    `ReasoningState` it keeps as `_llama`."""

    _llama: ReasoningState

    @property
    def reasoning_tokens(self) -> int:
        return self._llama.reasoning_tokens

    @property
    def in_reasoning(self) -> bool:
        return self._llama.in_reasoning
