"""Values spelled the way some servers or libraries spell them (`1.0`, `-0`, duplicate keys,
escapes), and breaking a stream in exactly one place: each of R6's shape errors, or a rule that
fails on purpose (`BREAKERS`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from harness.fuzz.model.jsonwrite import Dup, Raw
from harness.fuzz.model.values import BOOLEANS, rarely, sampled, uniform

Draw = st.DrawFn


# --- values spelled the way some servers or libraries spell them ----------------------------


def respell(draw: Draw, chunk: dict[str, Any], used: set[str]) -> None:
    """Rewrite one value of `chunk` as an edge spelling: `1.0`, a big integer, a duplicate key,
    a `__proto__` member, a deep ignored value, `-0` as an index."""
    kind = draw(sampled(("fraction", "big", "dup", "proto", "deep", "int32")))
    choices = chunk.get("choices") or []
    choice = choices[0] if choices and isinstance(choices[0], dict) else None
    delta = choice.get("delta") if choice else None
    calls = delta.get("tool_calls") if isinstance(delta, dict) else None
    if calls and isinstance(calls[0], dict) and calls[0].get("index") == 0 and rarely(draw, 2):
        used.add("minus_zero_index")
        calls[0]["index"] = Raw("-0")
        return
    if kind == "fraction":
        used.add("integral_fraction")
        target = chunk.get("timings") or chunk.get("prompt_progress")
        if isinstance(target, dict) and target:
            key = draw(sampled(sorted(target)))
            if isinstance(target[key], int):
                target[key] = Raw(f"{target[key]}{draw(sampled(('.0', 'e0', '.000', 'E+0')))}")
                return
        chunk["prompt_progress"] = {
            "total": Raw("3.0"),
            "cache": 0,
            "processed": Raw("1e0"),
            "time_ms": 1,
        }
    elif kind == "big":
        used.add("big_integer")
        value = draw(sampled((2**53 - 1, 2**53, 2**53 + 1, 2**31, 2**63, -(2**53) - 1, 10**30)))
        where = draw(sampled(("progress", "timings", "ignored")))
        if where == "progress":
            chunk["prompt_progress"] = {"total": value, "cache": 0, "processed": 1, "time_ms": 0}
        elif where == "timings":
            chunk["timings"] = {**(chunk.get("timings") or {}), "prompt_ms": Raw(str(value))}
        else:
            chunk["created"] = Raw(str(value))
    elif kind == "dup":
        used.add("duplicate_key")
        name = draw(sampled(("id", "model", "choices")))
        if name in chunk:
            value = chunk.pop(name)
            other = "chatcmpl-other" if name == "id" else value
            first, second = (value, other) if draw(BOOLEANS) else (other, value)
            chunk[Dup(name)] = first
            chunk[Dup(name)] = second
        else:
            chunk[Dup("model")] = "a"
            chunk[Dup("model")] = "b"
    elif kind == "proto":
        used.add("proto_key")
        value = draw(sampled(({"reasoning_content": "x"}, {"predicted_n": 7}, {}, None, 1)))
        host = draw(sampled(("top", "delta", "timings")))
        if host == "delta" and isinstance(delta, dict):
            delta[Dup("__proto__")] = value
        elif host == "timings" and isinstance(chunk.get("timings"), dict):
            chunk["timings"][Dup("__proto__")] = value
        else:
            chunk[Dup("__proto__")] = value
    elif kind == "deep":
        used.add("deep_ignored_value")
        depth = int(draw(sampled((100, 128, 129, 130, 1000))))
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

NOT_JSON: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("trailing comma", lambda t: t[:-1] + ",}"),
    ("comment", lambda t: "{/* c */" + t[1:]),
    (
        "single quotes",
        lambda t: t.replace('"choices"', "'choices'", 1) if '"choices"' in t else "{'a':1}",
    ),
    (
        "unquoted key",
        lambda t: t.replace('"choices"', "choices", 1) if '"choices"' in t else "{a:1}",
    ),
    ("leading zero", lambda t: t[:-1] + ',"prompt_progress":{"total":012}}'),
    ("plus sign", lambda t: t[:-1] + ',"prompt_progress":{"total":+12}}'),
    ("leading point", lambda t: t[:-1] + ',"timings":{"prompt_ms":.5}}'),
    ("bad escape", lambda t: t[:-1] + ',"x":"\\\'"}'),
    ("raw control character", lambda t: t[:-1] + ',"x":"a\tb"}'),
    ("trailing garbage", lambda t: t + " x"),
    ("second value", lambda t: t + "{}"),
    ("non-JSON white space", lambda t: "\u00a0" + t + "\x0c"),
    ("NaN", lambda t: t[:-1] + ',"timings":{"prompt_ms":NaN}}'),
    ("Infinity", lambda t: t[:-1] + ',"timings":{"predicted_ms":-Infinity}}'),
    ("overflow", lambda t: t[:-1] + ',"timings":{"prompt_ms":1e400}}'),
    ("lone surrogate", lambda t: t[:-1] + ',"x":"\\ud800"}'),
    ("cut short", lambda t: t[: max(1, len(t) // 2)]),
    ("empty", lambda t: ""),
    ("not an object", lambda t: "[" + t + "]"),
    ("a string", lambda t: json.dumps(t)),
    ("a number", lambda t: "1"),
    ("null", lambda t: "null"),
    ("[DONE] with white space", lambda t: "[DONE] "),
    ("[DONE] and more", lambda t: "[DONE]x"),
)


def _read_predicted(chunk: dict[str, Any], delta: dict[str, Any], value: float) -> None:
    """Reasoning text beside timings whose predicted_n is `value` (R4 reads it)."""
    chunk["timings"] = {"predicted_n": value}
    delta["reasoning_content"] = "r"


def wrong_shape(draw: Draw, chunk: dict[str, Any]) -> str:
    """Change one read field of `chunk` to a wrong type or value; the name of the change."""
    choices = chunk.get("choices") or [{"index": 0, "delta": {}}]
    chunk["choices"] = choices
    choice = choices[0] if isinstance(choices[0], dict) else {"delta": {}}
    delta = choice.setdefault("delta", {}) if isinstance(choice.get("delta", {}), dict) else {}
    options: dict[str, Callable[[], None]] = {
        "content_number": lambda: delta.__setitem__("content", 7),
        "content_parts": lambda: delta.__setitem__("content", [{"type": "text", "text": "Hi"}]),
        "reasoning_object": lambda: delta.__setitem__("reasoning_content", {"text": "x"}),
        "index_string": lambda: delta.__setitem__(
            "tool_calls", [{"index": "0", "id": "c", "function": {"name": "f"}}]
        ),
        "index_true": lambda: delta.__setitem__(
            "tool_calls", [{"index": True, "id": "c", "function": {"name": "f"}}]
        ),
        "index_fraction": lambda: delta.__setitem__(
            "tool_calls", [{"index": 0.5, "id": "c", "function": {"name": "f"}}]
        ),
        "index_negative": lambda: delta.__setitem__(
            "tool_calls", [{"index": -1, "id": "c", "function": {"name": "f"}}]
        ),
        "index_missing": lambda: delta.__setitem__(
            "tool_calls", [{"id": "c", "function": {"name": "f"}}]
        ),
        "index_null": lambda: delta.__setitem__(
            "tool_calls", [{"index": None, "id": "c", "function": {"name": "f"}}]
        ),
        "index_skips": lambda: delta.__setitem__(
            "tool_calls", [{"index": 99, "id": "c", "function": {"name": "f"}}]
        ),
        "index_big": lambda: delta.__setitem__(
            "tool_calls", [{"index": 2**53 + 1, "id": "c", "function": {"name": "f"}}]
        ),
        "arguments_number": lambda: delta.__setitem__(
            "tool_calls", [{"index": 0, "id": "c", "function": {"name": "f", "arguments": 1}}]
        ),
        "function_list": lambda: delta.__setitem__(
            "tool_calls", [{"index": 0, "id": "c", "function": ["f", "{}"]}]
        ),
        "tool_calls_object": lambda: delta.__setitem__("tool_calls", {"index": 0}),
        "tool_calls_null_element": lambda: delta.__setitem__("tool_calls", [None]),
        "choices_null_element": lambda: chunk.__setitem__("choices", [None]),
        "choices_object": lambda: chunk.__setitem__("choices", {"index": 0}),
        "delta_string": lambda: choice.__setitem__("delta", "Hi"),
        "finish_case": lambda: choice.__setitem__(
            "finish_reason", draw(sampled(("STOP", "Stop", "tool_calls ")))
        ),
        "finish_prototype": lambda: choice.__setitem__(
            "finish_reason",
            draw(sampled(("constructor", "toString", "__proto__", "hasOwnProperty"))),
        ),
        "finish_number": lambda: choice.__setitem__("finish_reason", draw(sampled((0, 1, 2)))),
        "finish_other": lambda: choice.__setitem__(
            "finish_reason", draw(sampled(("content_filter", "function_call", "eos", "")))
        ),
        "id_number": lambda: chunk.__setitem__("id", 12),
        "timings_string": lambda: chunk.__setitem__("timings", {"predicted_n": "5"}),
        "timings_true": lambda: chunk.__setitem__("timings", {"prompt_ms": True}),
        "timings_list": lambda: chunk.__setitem__("timings", [1, 2]),
        "predicted_negative": lambda: _read_predicted(chunk, delta, -3),
        "predicted_fraction": lambda: _read_predicted(chunk, delta, 2.5),
        "progress_list": lambda: chunk.__setitem__("prompt_progress", [10, 0, 5, 1]),
        "progress_string": lambda: chunk.__setitem__("prompt_progress", {"total": "10"}),
        "progress_fraction": lambda: chunk.__setitem__("prompt_progress", {"total": 1.5}),
        "error_array": lambda: chunk.__setitem__("error", draw(sampled(([], ["boom"])))),
        "error_string": lambda: chunk.__setitem__("error", "boom"),
        "error_message_number": lambda: chunk.__setitem__("error", {"message": 500}),
        "error_empty": lambda: chunk.__setitem__("error", {}),
        "progress_empty": lambda: chunk.__setitem__("prompt_progress", {}),
        "timings_empty": lambda: chunk.__setitem__("timings", {}),
    }
    # finish reasons are where readers are most lenient (enums read case-blind, by ordinal, by
    # name lookup): one breaker in four is one of them
    finishes = sorted(n for n in options if n.startswith("finish_"))
    name = str(uniform(draw, finishes if rarely(draw, 3) else sorted(options)))
    options[name]()
    return name


WRONG_FEATURES = {
    "content_number": "wrong_type",
    "content_parts": "content_parts",
    "reasoning_object": "wrong_type",
    "index_string": "wrong_type",
    "index_true": "wrong_type",
    "index_fraction": "fraction_integer",
    "index_negative": "negative_index",
    "index_missing": "missing_index",
    "index_null": "missing_index",
    "index_skips": "index_skips_ahead",
    "index_big": "big_integer",
    "arguments_number": "wrong_type",
    "function_list": "wrong_type",
    "tool_calls_object": "wrong_type",
    "tool_calls_null_element": "null_element",
    "choices_null_element": "null_element",
    "choices_object": "wrong_type",
    "delta_string": "wrong_type",
    "finish_case": "unknown_finish_reason",
    "finish_prototype": "unknown_finish_reason",
    "finish_number": "unknown_finish_reason",
    "finish_other": "other_finish_reason",
    "id_number": "wrong_type",
    "timings_string": "wrong_type",
    "timings_true": "wrong_type",
    "timings_list": "wrong_type",
    "predicted_negative": "negative_predicted_n",
    "predicted_fraction": "negative_predicted_n",
    "progress_list": "wrong_type",
    "progress_string": "wrong_type",
    "progress_fraction": "fraction_integer",
    "error_array": "bad_error_object",
    "error_string": "bad_error_object",
    "error_message_number": "bad_error_object",
    "error_empty": "empty_objects",
    "progress_empty": "empty_objects",
    "timings_empty": "empty_objects",
}
NOT_JSON_FEATURES = {
    "NaN": "non_finite_number",
    "Infinity": "non_finite_number",
    "overflow": "non_finite_number",
    "lone surrogate": "lone_surrogate",
    "not an object": "not_an_object",
    "a string": "not_an_object",
    "a number": "not_an_object",
    "null": "not_an_object",
    "[DONE] with white space": "done_with_white_space",
    "[DONE] and more": "done_with_white_space",
}

#: The names of every way `streams(broken=True)` breaks a stream.
BREAKERS: tuple[str, ...] = (*sorted(WRONG_FEATURES), *(name for name, _ in NOT_JSON))
