"""Every field the rules read (docs/spec.md section 3), with its JSON kind and two valid values.

The type-confusion matrix (`harness.suite.confusion`) makes each field's wrong values from this
table, and the near-names (`harness.suite.near_names`) the names near each field; the stream
model can read it too. A new read field goes here first (docs/layout.md, "Changing a rule or a
field").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "READ_FIELDS", "SCALARS", "ReadField", "field"]

#: The JSON kinds of read fields: text, one of the finish reasons, an integer (index, progress),
#: any number (timings), an object, an array of objects.
KINDS = ("string", "enum", "integer", "number", "object", "array")
SCALARS = ("string", "enum", "integer", "number")


@dataclass(frozen=True, slots=True)
class ReadField:
    """A field the rules read: where it stands (`delta.content`; `choices[]` is an element), its
    JSON kind, a valid value and a second valid value unlike it, whether it is required, and
    whether it stands for its siblings (`sampled`: see `confused`)."""

    path: str
    kind: str
    valid: Any
    other: Any
    required: bool = False
    sampled: bool = False

    @property
    def level(self) -> str:
        return self.path.rsplit(".", 1)[0] if "." in self.path else "top"

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def slug(self) -> str:
        """The field in a case name: `delta_content`, `choices_item`, `top_id`."""
        where = self.path.replace("[]", "_item").replace(".", "_")
        return where if "." in self.path or "[]" in self.path else f"top_{where}"


_CALL = {
    "index": 0,
    "id": "call_0",
    "type": "function",
    "function": {"name": "read_file", "arguments": "{}"},
}
_CALL_2 = {
    "index": 1,
    "id": "call_1",
    "type": "function",
    "function": {"name": "list_dir", "arguments": "{}"},
}
_CHOICE = {"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}
_CHOICE_2 = {"index": 0, "delta": {"content": " there"}, "finish_reason": None}
_TIMINGS = {
    "cache_n": 3,
    "prompt_n": 17,
    "prompt_ms": 53.87,
    "prompt_per_token_ms": 3.169,
    "prompt_per_second": 315.57,
    "predicted_n": 2,
    "predicted_ms": 14.122,
    "predicted_per_token_ms": 7.061,
    "predicted_per_second": 141.62,
    "draft_n": 4,
    "draft_n_accepted": 3,
}
_TIMINGS_2 = {key: value + 1 for key, value in _TIMINGS.items()}
_PROGRESS = {"total": 36, "cache": 0, "processed": 24, "time_ms": 12}
_PROGRESS_2 = {"total": 36, "cache": 0, "processed": 36, "time_ms": 19}

#: The timings fields that take every wrong value: the count R4 reads and a float. Their siblings
#: are sampled (`confused`).
_TIMINGS_SHOWN = ("predicted_n", "prompt_ms")

_F = ReadField

#: Every field the rules read (docs/spec.md section 3), in the spec's order.
READ_FIELDS: tuple[ReadField, ...] = (
    _F("id", "string", "chatcmpl-confused", "chatcmpl-other"),
    _F("choices", "array", [_CHOICE], [_CHOICE_2]),
    _F("timings", "object", _TIMINGS, _TIMINGS_2),
    _F("prompt_progress", "object", _PROGRESS, _PROGRESS_2),
    _F("error", "object", {"message": "boom"}, {"message": "bang"}),
    _F("choices[]", "object", _CHOICE, _CHOICE_2, required=True),
    _F("choice.delta", "object", {"content": "Hi"}, {"content": " there"}),
    _F("choice.finish_reason", "enum", "stop", "length"),
    _F("delta.content", "string", "Hi", " there"),
    _F("delta.reasoning_content", "string", "Hmm", " ok"),
    _F("delta.tool_calls", "array", [_CALL], [_CALL_2]),
    _F("tool_calls[]", "object", _CALL, _CALL_2, required=True),
    _F("tool_call.index", "integer", 0, 1, required=True),
    _F("tool_call.id", "string", "call_0", "call_9"),
    _F("tool_call.function", "object", _CALL["function"], _CALL_2["function"]),
    _F("function.name", "string", "read_file", "list_dir"),
    _F("function.arguments", "string", "{}", '{"path":"a.txt"}'),
    *(
        _F(f"timings.{n}", "number", value, value + 1, sampled=n not in _TIMINGS_SHOWN)
        for n, value in _TIMINGS.items()
    ),
    *(
        _F(f"prompt_progress.{n}", "integer", value, value + 1, sampled=n != "total")
        for n, value in _PROGRESS.items()
    ),
    _F("error.message", "string", "boom", "bang"),
)

_BY_PATH = {f.path: f for f in READ_FIELDS}


def field(path: str) -> ReadField:
    """The read field at `path` (`delta.content`); KeyError names it when there is none."""
    return _BY_PATH[path]
