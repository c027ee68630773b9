"""Values spelled the way some servers or libraries spell them (`1.0`, `-0`, duplicate keys,
escapes), and breaking a stream in exactly one place: each of R6's shape errors, a rule that fails
on purpose, and every value of the type-confusion matrix (`BREAKERS`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.fuzz.model.draw import Draw
from harness.fuzz.model.jsonwrite import Dup, Raw
from harness.suite.confusion import READ_FIELDS, confused

# --- values spelled the way some servers or libraries spell them ----------------------------

_RESPELLINGS = ("fraction", "big", "dup", "proto", "deep", "int32", "minus_zero")
_RESPELLED = {
    "fraction": "integral_fraction",
    "big": "big_integer",
    "dup": "duplicate_key",
    "proto": "proto_key",
    "deep": "deep_ignored_value",
    "int32": "big_integer",
    "minus_zero": "minus_zero_index",
}


def respelling_for(draw: Draw) -> str:
    """Which respelling a chunk gets: a wanted one first."""
    for kind in _RESPELLINGS:
        if draw.wants(_RESPELLED[kind]):
            return kind
    return draw.pick(_RESPELLINGS)


def respell(draw: Draw, chunk: dict[str, Any], used: set[str], kind: str) -> None:
    """Rewrite one value of `chunk` as an edge spelling: `1.0`, a big integer, a duplicate key,
    a `__proto__` member, a deep ignored value, `-0` as an index."""
    choices = chunk.get("choices") or []
    choice = choices[0] if choices and isinstance(choices[0], dict) else None
    delta = choice.get("delta") if choice else None
    calls = delta.get("tool_calls") if isinstance(delta, dict) else None
    if kind == "minus_zero":
        if calls and isinstance(calls[0], dict) and calls[0].get("index") == 0:
            used.add("minus_zero_index")
            calls[0]["index"] = Raw("-0")
            return
        kind = "fraction"
    if kind == "fraction":
        used.add("integral_fraction")
        target = chunk.get("timings") or chunk.get("prompt_progress")
        if isinstance(target, dict) and target:
            key = draw.pick(sorted(target))
            if isinstance(target[key], int) and not isinstance(target[key], bool):
                target[key] = Raw(f"{target[key]}{draw.pick(('.0', 'e0', '.000', 'E+0'))}")
                return
        chunk["prompt_progress"] = {
            "total": Raw("3.0"),
            "cache": 0,
            "processed": Raw("1e0"),
            "time_ms": 1,
        }
    elif kind == "big":
        used.add("big_integer")
        value = draw.pick((2**53 - 1, 2**53, 2**53 + 1, 2**31, 2**63, -(2**53) - 1, 10**30))
        where = draw.pick(("progress", "timings", "ignored"))
        if where == "progress":
            chunk["prompt_progress"] = {"total": value, "cache": 0, "processed": 1, "time_ms": 0}
        elif where == "timings":
            chunk["timings"] = {**(chunk.get("timings") or {}), "prompt_ms": Raw(str(value))}
        else:
            chunk["created"] = Raw(str(value))
    elif kind == "dup":
        used.add("duplicate_key")
        name = draw.pick(("id", "model", "choices"))
        if name in chunk:
            value = chunk.pop(name)
            other = "chatcmpl-other" if name == "id" else value
            first, second = (value, other) if draw.coin() else (other, value)
            chunk[Dup(name)] = first
            chunk[Dup(name)] = second
        else:
            chunk[Dup("model")] = "a"
            chunk[Dup("model")] = "b"
    elif kind == "proto":
        used.add("proto_key")
        polluted: Any = draw.pick(({"reasoning_content": "x"}, {"predicted_n": 7}, {}, None, 1))
        host = draw.pick(("top", "delta", "timings"))
        if host == "delta" and isinstance(delta, dict):
            delta[Dup("__proto__")] = polluted
        elif host == "timings" and isinstance(chunk.get("timings"), dict):
            chunk["timings"][Dup("__proto__")] = polluted
        else:
            chunk[Dup("__proto__")] = polluted
    elif kind == "deep":
        used.add("deep_ignored_value")
        depth = draw.pick((100, 128, 129, 130, 1000))
        chunk["x_deep"] = Raw("[" * depth + "]" * depth)
    else:
        used.add("big_integer")
        chunk["prompt_progress"] = {
            "total": 2**31,
            "cache": 0,
            "processed": 2**31 - 1,
            "time_ms": 0,
        }


# --- breaking a stream in one place ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Breaker:
    """One way to break a stream in one place: its name, the feature it makes, and either a
    change of the chunk (`shape`) or of the payload's text (`text`)."""

    name: str
    feature: str
    shape: Callable[[Draw, dict[str, Any]], None] | None = None
    text: Callable[[str], str] | None = None


def _text(name: str, change: Callable[[str], str], feature: str = "not_json") -> Breaker:
    return Breaker(name, feature, text=change)


NOT_JSON: tuple[Breaker, ...] = (
    _text("trailing comma", lambda t: t[:-1] + ",}"),
    _text("comment", lambda t: "{/* c */" + t[1:]),
    _text(
        "single quotes",
        lambda t: t.replace('"choices"', "'choices'", 1) if '"choices"' in t else "{'a':1}",
    ),
    _text(
        "unquoted key",
        lambda t: t.replace('"choices"', "choices", 1) if '"choices"' in t else "{a:1}",
    ),
    _text("leading zero", lambda t: t[:-1] + ',"prompt_progress":{"total":012}}'),
    _text("plus sign", lambda t: t[:-1] + ',"prompt_progress":{"total":+12}}'),
    _text("leading point", lambda t: t[:-1] + ',"timings":{"prompt_ms":.5}}'),
    _text("bad escape", lambda t: t[:-1] + ',"x":"\\\'"}'),
    _text("raw control character", lambda t: t[:-1] + ',"x":"a\tb"}'),
    _text("trailing garbage", lambda t: t + " x"),
    _text("second value", lambda t: t + "{}"),
    _text("non-JSON white space", lambda t: "\u00a0" + t + "\x0c"),
    _text("NaN", lambda t: t[:-1] + ',"timings":{"prompt_ms":NaN}}', "non_finite_number"),
    _text(
        "Infinity",
        lambda t: t[:-1] + ',"timings":{"predicted_ms":-Infinity}}',
        "non_finite_number",
    ),
    _text("overflow", lambda t: t[:-1] + ',"timings":{"prompt_ms":1e400}}', "non_finite_number"),
    _text("lone surrogate", lambda t: t[:-1] + ',"x":"\\ud800"}', "lone_surrogate"),
    _text("cut short", lambda t: t[: max(1, len(t) // 2)]),
    _text("empty", lambda t: ""),
    _text("white space only", lambda t: " "),
    _text("not an object", lambda t: "[" + t + "]", "not_an_object"),
    _text("a string", lambda t: json.dumps(t), "not_an_object"),
    _text("a number", lambda t: "1", "not_an_object"),
    _text("null", lambda t: "null", "not_an_object"),
    _text("[DONE] with white space", lambda t: "[DONE] ", "done_with_white_space"),
    _text("[DONE] and more", lambda t: "[DONE]x", "done_with_white_space"),
)


def _choice(chunk: dict[str, Any]) -> dict[str, Any]:
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        choices = chunk["choices"] = [{"index": 0, "delta": {}, "finish_reason": None}]
    choice: dict[str, Any] = choices[0]
    return choice


def _delta(chunk: dict[str, Any]) -> dict[str, Any]:
    choice = _choice(chunk)
    if not isinstance(choice.get("delta"), dict):
        choice["delta"] = {}
    delta: dict[str, Any] = choice["delta"]
    return delta


def _set(where: Callable[[dict[str, Any]], dict[str, Any]], key: str, value: Any) -> Any:
    return lambda draw, chunk: where(chunk).__setitem__(key, value)


def _top(chunk: dict[str, Any]) -> dict[str, Any]:
    return chunk


def _call(value: Any = 0, **members: Any) -> list[dict[str, Any]]:
    call: dict[str, Any] = {"index": value, "id": "c", "function": {"name": "f"}}
    call.update(members)
    return [call]


def _read_predicted(value: Any) -> Callable[[Draw, dict[str, Any]], None]:
    """Reasoning text beside timings whose predicted_n is `value` (R4 reads it)."""

    def change(draw: Draw, chunk: dict[str, Any]) -> None:
        chunk["timings"] = {"predicted_n": value}
        _delta(chunk)["reasoning_content"] = "r"

    return change


def _pick(where: Callable[[dict[str, Any]], dict[str, Any]], key: str, *values: Any) -> Any:
    return lambda draw, chunk: where(chunk).__setitem__(key, draw.pick(values))


def _shape(name: str, feature: str, change: Callable[[Draw, dict[str, Any]], None]) -> Breaker:
    return Breaker(name, feature, shape=change)


WRONG_SHAPES: tuple[Breaker, ...] = (
    _shape("content_number", "wrong_type", _set(_delta, "content", 7)),
    _shape(
        "content_parts", "content_parts", _set(_delta, "content", [{"type": "text", "text": "Hi"}])
    ),
    _shape("reasoning_object", "wrong_type", _set(_delta, "reasoning_content", {"text": "x"})),
    _shape("index_string", "wrong_type", _set(_delta, "tool_calls", _call("0"))),
    _shape("index_true", "wrong_type", _set(_delta, "tool_calls", _call(True))),
    _shape("index_fraction", "fraction_integer", _set(_delta, "tool_calls", _call(0.5))),
    _shape("index_negative", "negative_index", _set(_delta, "tool_calls", _call(-1))),
    _shape(
        "index_missing",
        "missing_index",
        _set(_delta, "tool_calls", [{"id": "c", "function": {"name": "f"}}]),
    ),
    _shape("index_null", "missing_index", _set(_delta, "tool_calls", _call(None))),
    _shape("index_skips", "index_skips_ahead", _set(_delta, "tool_calls", _call(99))),
    _shape("index_big", "big_integer", _set(_delta, "tool_calls", _call(2**53 + 1))),
    _shape(
        "arguments_number",
        "wrong_type",
        _set(_delta, "tool_calls", _call(function={"name": "f", "arguments": 1})),
    ),
    _shape(
        "arguments_object",
        "wrong_type",
        _set(_delta, "tool_calls", _call(function={"name": "f", "arguments": {"a": 1}})),
    ),
    _shape("function_list", "wrong_type", _set(_delta, "tool_calls", _call(function=["f", "{}"]))),
    _shape("tool_calls_object", "wrong_type", _set(_delta, "tool_calls", {"index": 0})),
    _shape("tool_calls_null_element", "null_element", _set(_delta, "tool_calls", [None])),
    _shape("choices_null_element", "null_element", _set(_top, "choices", [None])),
    _shape("choices_object", "wrong_type", _set(_top, "choices", {"index": 0})),
    _shape("delta_string", "wrong_type", _set(_choice, "delta", "Hi")),
    _shape(
        "finish_case",
        "unknown_finish_reason",
        _pick(_choice, "finish_reason", "STOP", "Stop", "tool_calls "),
    ),
    _shape(
        "finish_prototype",
        "unknown_finish_reason",
        _pick(_choice, "finish_reason", "constructor", "toString", "__proto__", "hasOwnProperty"),
    ),
    _shape("finish_number", "unknown_finish_reason", _pick(_choice, "finish_reason", 0, 1, 2)),
    _shape(
        "finish_other",
        "other_finish_reason",
        _pick(_choice, "finish_reason", "content_filter", "function_call", "eos"),
    ),
    _shape("finish_empty", "unknown_finish_reason", _set(_choice, "finish_reason", "")),
    _shape("id_number", "wrong_type", _set(_top, "id", 12)),
    _shape("timings_string", "wrong_type", _set(_top, "timings", {"predicted_n": "5"})),
    _shape("timings_true", "wrong_type", _set(_top, "timings", {"prompt_ms": True})),
    _shape("timings_list", "wrong_type", _set(_top, "timings", [1, 2])),
    _shape("predicted_negative", "negative_predicted_n", _read_predicted(-3)),
    _shape("predicted_fraction", "negative_predicted_n", _read_predicted(2.5)),
    _shape("progress_list", "wrong_type", _set(_top, "prompt_progress", [10, 0, 5, 1])),
    _shape("progress_string", "wrong_type", _set(_top, "prompt_progress", {"total": "10"})),
    _shape("progress_fraction", "fraction_integer", _set(_top, "prompt_progress", {"total": 1.5})),
    _shape("error_array", "bad_error_object", _pick(_top, "error", [], ["boom"])),
    _shape("error_string", "bad_error_object", _set(_top, "error", "boom")),
    _shape("error_message_number", "bad_error_object", _set(_top, "error", {"message": 500})),
    _shape("error_empty", "empty_objects", _set(_top, "error", {})),
    _shape("progress_empty", "empty_objects", _set(_top, "prompt_progress", {})),
    _shape("timings_empty", "empty_objects", _set(_top, "timings", {})),
)

# --- the type-confusion matrix: every read field holding each value a lax decoder coerces ------


def _holder(path: str) -> Callable[[dict[str, Any]], tuple[dict[str, Any] | list[Any], Any]]:
    """Where the read field at `path` stands in a chunk: the object (or list) that holds it,
    made where the chunk has none, and its key (or index)."""
    level, _, name = path.rpartition(".")
    if path in ("choices[]", "tool_calls[]"):
        array = "choices" if path == "choices[]" else "tool_calls"

        def element(chunk: dict[str, Any]) -> tuple[list[Any], Any]:
            items: list[Any] = []
            (_top(chunk) if array == "choices" else _delta(chunk))[array] = items
            items.append(None)
            return items, 0

        return element
    makers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
        "": _top,
        "choice": _choice,
        "delta": _delta,
        "tool_call": lambda chunk: _call_of(chunk),
        "function": lambda chunk: _call_of(chunk)["function"],
        "timings": lambda chunk: _object(chunk, "timings"),
        "prompt_progress": lambda chunk: _object(chunk, "prompt_progress"),
        "error": lambda chunk: _object(chunk, "error"),
    }
    make = makers[level]
    return lambda chunk: (make(chunk), name)


def _call_of(chunk: dict[str, Any]) -> dict[str, Any]:
    call = _call()[0]
    _delta(chunk)["tool_calls"] = [call]
    return call


def _object(chunk: dict[str, Any], name: str) -> dict[str, Any]:
    found = chunk.get(name)
    found = dict(found) if isinstance(found, dict) else {}
    chunk[name] = found
    return found


def _confusion_feature(read_path: str, kind: str, text: str) -> str:
    value = json.loads(text)
    if value is None:
        return "missing_index" if read_path.endswith("index") else "null_element"
    if kind == "enum" and isinstance(value, str):  # " stop", another field's enum text
        return "unknown_finish_reason"
    kinds = (
        (bool, "confused_boolean"),
        ((int, float), "confused_number"),
        (str, "confused_string"),
        (list, "confused_array"),
        (dict, "confused_object"),
    )
    return next(feature for kind, feature in kinds if isinstance(value, kind))


def _confused(read_path: str, text: str) -> Callable[[Draw, dict[str, Any]], None]:
    hold = _holder(read_path)

    def change(draw: Draw, chunk: dict[str, Any]) -> None:
        holder, key = hold(chunk)
        holder[key] = Raw(text)

    return change


#: How the name of a breaker of the type-confusion matrix starts.
CONFUSED_PREFIX = "confused "
#: One breaker per read field and value of `harness.suite.confusion`'s matrix (`confused
#: delta_content one_key_map`): the corpus has one case of each, the model draws them all.
CONFUSED: tuple[Breaker, ...] = tuple(
    _shape(
        f"{CONFUSED_PREFIX}{read.slug} {coercion.name}",
        _confusion_feature(read.path, read.kind, text),
        _confused(read.path, text),
    )
    for read in READ_FIELDS
    for coercion, text in confused(read)
)

#: Every way a stream is broken in one place, by name.
BREAKERS: dict[str, Breaker] = {b.name: b for b in (*WRONG_SHAPES, *NOT_JSON, *CONFUSED)}


def break_chunk(draw: Draw, breaker: Breaker, chunk: dict[str, Any]) -> None:
    """Apply a shape breaker to `chunk`."""
    assert breaker.shape is not None
    breaker.shape(draw, chunk)
