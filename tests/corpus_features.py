"""Which stream features each shipped case holds, read from the recording and its golden file.

Every feature of `harness.fuzz.model.features.FEATURES` has a detector here: a small predicate on
one case (its raw text, payloads, parsed chunks and golden outcome).
`tests/suite/test_spec_table.py` builds docs/spec.md's feature table from them and checks that
every feature has at least one case, so a feature the model learns, or a case that stops covering
one, shows at once."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from harness.suite.cases import Case
from harness.suite.near_names import NEAR_NAMES
from harness.suite.recording import iter_payloads

_READ_FINISH = ("stop", "tool_calls", "length")
_TIMINGS_CORE = (
    "cache_n",
    "prompt_n",
    "prompt_ms",
    "prompt_per_token_ms",
    "prompt_per_second",
    "predicted_n",
    "predicted_ms",
    "predicted_per_token_ms",
    "predicted_per_second",
)
_PROGRESS = ("total", "cache", "processed", "time_ms")


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _INVALID


_INVALID: Any = object()


@dataclass
class View:
    """One case, read for the detectors."""

    case: Case
    golden_root: Path

    @cached_property
    def raw(self) -> str:
        return self.case.recording.read_bytes().decode("utf-8")

    @cached_property
    def payloads(self) -> list[str]:
        return [p.data for p in iter_payloads(self.case.recording)]

    @cached_property
    def chunks(self) -> list[Any]:
        return [_load(p) for p in self.payloads]

    @cached_property
    def objects(self) -> list[dict[str, Any]]:
        return [c for c in self.chunks if isinstance(c, dict)]

    @cached_property
    def golden(self) -> dict[str, Any]:
        path = self.golden_root / f"{self.case.case_id}.json"
        return dict(json.loads(path.read_text(encoding="utf-8")))

    @cached_property
    def steps(self) -> list[dict[str, Any]]:
        return list(self.golden["steps"])

    @cached_property
    def events(self) -> list[dict[str, Any]]:
        return [e for s in self.steps for e in s.get("events", [])]

    @cached_property
    def kinds(self) -> list[str]:
        return [e["type"] for e in self.events]

    @cached_property
    def completion(self) -> dict[str, Any] | None:
        finish = self.golden.get("finish") or {}
        return finish.get("completion")

    @cached_property
    def finish_error(self) -> str | None:
        finish = self.golden.get("finish") or {}
        return (finish.get("error") or {}).get("kind")

    def choices(self) -> Iterator[tuple[int, dict[str, Any]]]:
        for n, chunk in enumerate(self.chunks):
            choices = chunk.get("choices") if isinstance(chunk, dict) else None
            for choice in choices if isinstance(choices, list) else ():
                if isinstance(choice, dict):
                    yield n, choice

    def deltas(self) -> Iterator[tuple[int, dict[str, Any]]]:
        for n, choice in self.choices():
            if isinstance(choice.get("delta"), dict):
                yield n, choice["delta"]

    def pieces(self) -> Iterator[tuple[int, dict[str, Any]]]:
        for n, delta in self.deltas():
            calls = delta.get("tool_calls")
            for piece in calls if isinstance(calls, list) else ():
                if isinstance(piece, dict):
                    yield n, piece

    def texts(self) -> Iterator[str]:
        for e in self.events:
            if e["type"] in ("reasoning", "content"):
                yield e["text"]
            elif e["type"] == "tool_call_delta":
                yield e["arguments"]

    def between(self, middle: str) -> bool:
        """An event of type `middle` between two tool-call pieces."""
        text = "".join({"tool_call_delta": "T", middle: "M"}.get(k, "") for k in self.kinds)
        return re.search(r"TM+T", text) is not None

    @cached_property
    def reasoning_chunks(self) -> list[int]:
        return [
            n
            for n, d in self.deltas()
            if isinstance(d.get("reasoning_content"), str) and d["reasoning_content"]
        ]

    def timings_before(self, n: int) -> Any:
        """The latest timings object at chunk `n` (its own included), or None."""
        latest = None
        for chunk in self.chunks[: n + 1]:
            if isinstance(chunk, dict) and isinstance(chunk.get("timings"), dict):
                latest = chunk["timings"]
        return latest


def _ids(v: View) -> list[Any]:
    return [c.get("id") for c in v.objects]


def _piece_indexes(v: View) -> list[Any]:
    return [p.get("index") for _, p in v.pieces()]


def _interleaved(v: View) -> bool:
    seen: list[Any] = []
    for index in _piece_indexes(v):
        if seen and index != seen[-1] and index in seen:
            return True
        seen.append(index)
    return False


def _out_of_order(v: View) -> bool:
    by_chunk: dict[int, list[Any]] = {}
    for n, p in v.pieces():
        by_chunk.setdefault(n, []).append(p.get("index"))
    if any(_decreases(indexes) for indexes in by_chunk.values()):
        return True
    indexes = [i for i in _piece_indexes(v) if isinstance(i, int)]
    return any(a > b > c for a, b, c in zip(indexes, indexes[1:], indexes[2:], strict=False))


def _decreases(indexes: list[Any]) -> bool:
    ints = [i for i in indexes if isinstance(i, int) and not isinstance(i, bool)]
    return any(a > b for a, b in itertools.pairwise(ints))


def _calls(v: View) -> dict[Any, list[dict[str, Any]]]:
    calls: dict[Any, list[dict[str, Any]]] = {}
    for _, piece in v.pieces():
        index = piece.get("index")
        key = index if isinstance(index, int | float | str | None) else repr(index)
        calls.setdefault(key, []).append(piece)
    return calls


def _name(piece: dict[str, Any]) -> Any:
    function = piece.get("function")
    return function.get("name") if isinstance(function, dict) else None


def _args_of(piece: dict[str, Any]) -> Any:
    function = piece.get("function")
    return function.get("arguments") if isinstance(function, dict) else None


def _late_id_name(v: View) -> bool:
    for pieces in _calls(v).values():
        for field in (lambda p: p.get("id"), _name):
            if not field(pieces[0]) and any(field(p) for p in pieces[1:]):
                return True
    return False


def _repeated_id_name(v: View) -> bool:
    for pieces in _calls(v).values():
        firsts = [n for n, p in enumerate(pieces) if p.get("id") or _name(p)]
        if len(firsts) > 1:
            return True
    return False


def _never_named(v: View) -> bool:
    return any(
        not any(p.get("id") for p in pieces) or not any(_name(p) for p in pieces)
        for pieces in _calls(v).values()
    )


def _split(v: View) -> bool:
    for pieces in _calls(v).values():
        texts = [_args_of(p) for p in pieces]
        if len([t for t in texts if t]) >= 3 or "" in texts[1:]:
            return True
    return False


def _finish_with_text(v: View) -> bool:
    for _, choice in v.choices():
        delta = choice.get("delta")
        if choice.get("finish_reason") is None or not isinstance(delta, dict):
            continue
        if delta.get("content") or delta.get("reasoning_content") or delta.get("tool_calls"):
            return True
    return False


def _reasons(v: View) -> list[Any]:
    return [c.get("finish_reason") for _, c in v.choices() if c.get("finish_reason") is not None]


def _after_finish(v: View) -> bool:
    firsts = [n for n, c in v.choices() if c.get("finish_reason") is not None]
    return bool(firsts) and len(v.payloads) > firsts[0] + 1


def _reasoning_without_timings(v: View) -> bool:
    timed = False
    for n, chunk in enumerate(v.chunks):
        if not isinstance(chunk, dict):
            continue
        if n in v.reasoning_chunks and timed and not isinstance(chunk.get("timings"), dict):
            return True
        timed = timed or isinstance(chunk.get("timings"), dict)
    return False


def _predicted_n(v: View, test: Callable[[Any], bool]) -> bool:
    for n in v.reasoning_chunks:
        timings = v.timings_before(n)
        if isinstance(timings, dict) and test(timings.get("predicted_n")):
            return True
    return False


def _wrong_typed_known(v: View) -> bool:
    for chunk in v.objects:
        if any(
            k in chunk and not isinstance(chunk[k], t)
            for k, t in (("object", str), ("model", str), ("created", int))
        ):
            return True
    for _, choice in v.choices():
        if "index" in choice and (
            not isinstance(choice["index"], int) or isinstance(choice["index"], bool)
        ):
            return True
    for _, delta in v.deltas():
        if delta.get("role") is not None and not isinstance(delta["role"], str):
            return True
    return any(p.get("type") is not None and not isinstance(p["type"], str) for _, p in v.pieces())


def _depth(text: str) -> int:
    depth = best = 0
    for token in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', text):
        t = token.group(0)
        if t in "[{":
            depth += 1
            best = max(best, depth)
        elif t in "]}":
            depth -= 1
    return best


def _numbers(v: View) -> Iterator[Any]:
    for chunk in v.objects:
        for name, fields in (("prompt_progress", _PROGRESS), ("timings", _TIMINGS_CORE)):
            obj = chunk.get(name)
            if isinstance(obj, dict):
                yield from (obj.get(f) for f in fields if f in obj)
    yield from _piece_indexes(v)


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _wrong_type(v: View) -> bool:
    for chunk in v.objects:
        if (
            "choices" in chunk
            and chunk["choices"] is not None
            and not isinstance(chunk["choices"], list)
        ):
            return True
        if chunk.get("id") is not None and not isinstance(chunk["id"], str):
            return True
        for name in ("timings", "prompt_progress"):
            obj = chunk.get(name)
            if obj is not None and not isinstance(obj, dict):
                return True
        for x in (
            (chunk.get("timings") or {}).values() if isinstance(chunk.get("timings"), dict) else ()
        ):
            if x is not None and not _is_number(x):
                return True
    for _, choice in v.choices():
        if choice.get("delta") is not None and not isinstance(choice["delta"], dict):
            return True
        reason = choice.get("finish_reason")
        if reason is not None and not isinstance(reason, str):
            return True
    for _, delta in v.deltas():
        for key in ("content", "reasoning_content"):
            if delta.get(key) is not None and not isinstance(delta[key], str):
                return True
        if delta.get("tool_calls") is not None and not isinstance(delta["tool_calls"], list):
            return True
    for _, piece in v.pieces():
        index = piece.get("index")
        if index is not None and not _is_number(index):
            return True
        if piece.get("id") is not None and not isinstance(piece["id"], str):
            return True
        function = piece.get("function")
        if function is not None and not isinstance(function, dict):
            return True
        if isinstance(function, dict) and any(
            function.get(k) is not None and not isinstance(function[k], str)
            for k in ("name", "arguments")
        ):
            return True
    return any(x is not None and not _is_number(x) for x in _numbers(v))


def _skips_ahead(v: View) -> bool:
    count = 0
    for _, piece in v.pieces():
        index = piece.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            continue
        if index > count:
            return True
        count = max(count, index + 1)
    return False


def _null_element(v: View) -> bool:
    for chunk in v.objects:
        if isinstance(chunk.get("choices"), list) and None in chunk["choices"]:
            return True
    return any(
        isinstance(d.get("tool_calls"), list) and None in d["tool_calls"] for _, d in v.deltas()
    )


def _bad_error(v: View) -> bool:
    for chunk in v.objects:
        error = chunk.get("error")
        if error is None:
            continue
        if not isinstance(error, dict):
            return True
        if error.get("message") is not None and not isinstance(error["message"], str):
            return True
    return False


def _data_lines(v: View) -> list[str]:
    return re.split(r"\r\n|\r|\n", v.raw)


def _body(v: View) -> list[str]:
    """The lines from the first field line on (after the leading comments)."""
    lines = _data_lines(v)
    for n, line in enumerate(lines):
        if line and not line.startswith(":") and not line.startswith("#"):
            return lines[n:]
    return []


_UNICODE = re.compile("[\U00010000-\U0010ffff\u0300-\u036f\u0590-\u08ff\uffff]")

_ROLE_PREFIX = re.compile(
    r"^\s*(?:assistant|user|system)\s*:|<\|im_start\|>|<\|eot_id\|>|^### Assistant", re.I | re.M
)
_SSE_IN_TEXT = re.compile(r"data: ?[\[{]|\[DONE\]|^: |^event: ", re.M)


def _id_names(v: View) -> list[str]:
    """Every id (the chunks' and the tool calls') and tool name the case's chunks hold."""
    found = [i for i in _ids(v) if isinstance(i, str)]
    for _, piece in v.pieces():
        found += [x for x in (piece.get("id"), _name(piece)) if isinstance(x, str)]
    return found


def _ids_out_of_index_order(v: View) -> bool:
    arrived: list[Any] = []
    for _, piece in v.pieces():
        index = piece.get("index")
        if isinstance(piece.get("id"), str) and piece["id"] and index not in arrived:
            arrived.append(index)
    numbers = [i for i in arrived if isinstance(i, int) and not isinstance(i, bool)]
    return numbers != sorted(numbers)


def _pieces_after_finish(v: View) -> bool:
    finished = False
    for _, choice in v.choices():
        delta = choice.get("delta")
        calls = delta.get("tool_calls") if isinstance(delta, dict) else None
        if finished and isinstance(calls, list) and calls:
            return True
        finished = finished or choice.get("finish_reason") is not None
    return False


def _length_after_named_piece(v: View) -> bool:
    completion = v.completion or {}
    return completion.get("finish_reason") == "length" and any(
        call.get("name") and call.get("arguments") == ""
        for call in completion.get("tool_calls", ())
    )


def _ids_differ_in_case(v: View) -> bool:
    ids = {p["id"] for _, p in v.pieces() if isinstance(p.get("id"), str) and p["id"]}
    return len({i.lower() for i in ids}) < len(ids)


#: Each feature's detector, by feature name.
DETECTORS: dict[str, Callable[[View], bool]] = {
    # structure
    "role_chunk": lambda v: any(d.get("role") == "assistant" for _, d in v.deltas()),
    "reasoning_run": lambda v: v.kinds.count("reasoning") >= 2,
    "content_run": lambda v: v.kinds.count("content") >= 2,
    "reasoning_then_content": lambda v: (
        "reasoning" in v.kinds and "content" in v.kinds[v.kinds.index("reasoning") :]
    ),
    "reasoning_after_content": lambda v: (
        "content" in v.kinds and "reasoning" in v.kinds[v.kinds.index("content") :]
    ),
    "reasoning_and_content_in_one_chunk": lambda v: any(
        d.get("content") and d.get("reasoning_content") for _, d in v.deltas()
    ),
    "empty_text": lambda v: any(
        d.get(k, 0) in ("", None)
        for _, d in v.deltas()
        if "role" not in d
        for k in ("content", "reasoning_content")
    ),
    "empty_reasoning_after_content": lambda v: any(
        d.get("reasoning_content") == ""
        and n > min((m for m, e in v.deltas() if e.get("content")), default=n)
        for n, d in v.deltas()
    ),
    "tool_call": lambda v: "tool_call_delta" in v.kinds,
    "tool_calls_parallel": lambda v: (
        2 <= len({e["index"] for e in v.events if e["type"] == "tool_call_delta"}) <= 10
    ),
    "tool_calls_many": lambda v: any(
        isinstance(i, int) and i >= 10 for i in (e.get("index") for e in v.events)
    ),
    "tool_calls_interleaved": _interleaved,
    "tool_calls_out_of_order": _out_of_order,
    "tool_call_split_anywhere": _split,
    "tool_call_repeated_id_name": _repeated_id_name,
    "tool_call_late_id_name": _late_id_name,
    "text_between_tool_calls": lambda v: v.between("content"),
    "reasoning_between_tool_calls": lambda v: v.between("reasoning"),
    "tool_call_cut_by_length": lambda v: bool(
        v.completion and v.completion["finish_reason"] == "length" and v.completion["tool_calls"]
    ),
    "finish_chunk_with_text": _finish_with_text,
    "finish_reason_repeated": lambda v: len(_reasons(v)) >= 2,
    "chunks_after_finish": _after_finish,
    "usage_chunk": lambda v: any("usage" in c and c.get("choices") == [] for c in v.objects),
    "choices_absent": lambda v: any("choices" not in c and "error" not in c for c in v.objects),
    "timings": lambda v: sum(isinstance(c.get("timings"), dict) for c in v.objects) >= 2,
    "timings_partial": lambda v: any(
        isinstance(c.get("timings"), dict)
        and any(c["timings"].get(f) is None for f in _TIMINGS_CORE)
        for c in v.objects
    ),
    "reasoning_without_timings": _reasoning_without_timings,
    "predicted_n_null": lambda v: _predicted_n(v, lambda x: x is None),
    "prompt_progress": lambda v: any(isinstance(c.get("prompt_progress"), dict) for c in v.objects),
    "id_late": lambda v: bool(v.objects) and not v.objects[0].get("id") and any(_ids(v)),
    "id_changes": lambda v: len({i for i in _ids(v) if isinstance(i, str) and i}) >= 2,
    "no_id": lambda v: not any(isinstance(i, str) and i for i in _ids(v)),
    "no_finish_reason": lambda v: v.finish_error == "stream_closed_early",
    "tool_call_never_named": lambda v: _never_named(v) and v.finish_error == "protocol",
    "server_error": lambda v: any(isinstance(c.get("error"), dict) for c in v.objects),
    "thinking_capped": lambda v: v.golden.get("thinking_capped") is True,
    # fields of neighbouring servers
    "openai_chunk_fields": lambda v: any(
        {"object", "created", "model"} <= set(c) for c in v.objects
    ),
    "delta_role_refusal": lambda v: any("role" in d or "refusal" in d for _, d in v.deltas()),
    "logprobs": lambda v: any("logprobs" in c for _, c in v.choices()),
    "delta_reasoning": lambda v: any("reasoning" in d for _, d in v.deltas()),
    "delta_thinking": lambda v: any("thinking" in d for _, d in v.deltas()),
    "delta_function_call": lambda v: any("function_call" in d for _, d in v.deltas()),
    "choice_text": lambda v: any("text" in c or "message" in c for _, c in v.choices()),
    "tool_call_type": lambda v: any("type" in p for _, p in v.pieces()),
    "usage_details": lambda v: any(
        isinstance(c.get("usage"), dict)
        and {"prompt_tokens_details", "completion_tokens_details"} & set(c["usage"])
        for c in v.objects
    ),
    "server_specific_fields": lambda v: (
        re.search(
            r'"(stop_reason|matched_stop|native_finish_reason|provider|stats|details|__verbose)"\s*:',
            v.raw,
        )
        is not None
    ),
    "wrong_typed_known_field": _wrong_typed_known,
    "proto_key": lambda v: '"__proto__"' in v.raw,
    "deep_ignored_value": lambda v: (
        any(_depth(p) > 128 for p in v.payloads) and "I3" in v.case.pins
    ),
    # values
    "unicode_text": lambda v: any(_UNICODE.search(t) for t in v.texts()),
    "nul_in_text": lambda v: any("\0" in t for t in v.texts()),
    "escaped_text": lambda v: (
        re.search(r"\\u(?!00[01])[0-9a-fA-F]{4}", "\n".join(v.payloads)) is not None
    ),
    "long_text": lambda v: any(len(t) >= 4096 for t in v.texts()),
    "huge_payload": lambda v: any(len(p.encode()) > 64 * 1024 for p in v.payloads),
    "other_finish_reason": lambda v: any(
        r in ("content_filter", "function_call") for r in _reasons(v)
    ),
    "integral_fraction": lambda v: "I1" in v.case.pins,
    "big_integer": lambda v: (
        "I2" in v.case.pins or any(_is_number(x) and abs(x) >= 2**31 for x in _numbers(v))
    ),
    "duplicate_key": lambda v: "I4" in v.case.pins,
    "zero_counts": lambda v: any(
        e["type"] == "progress" and 0 in (e["cache"], e["processed"], e["time_ms"])
        for e in v.events
    ),
    "empty_objects": lambda v: any(
        c.get(k) == {} for c in v.objects for k in ("prompt_progress", "timings", "error")
    ),
    "minus_zero_index": lambda v: re.search(r'"index"\s*:\s*-0(?![.\deE])', v.raw) is not None,
    "json_whitespace": lambda v: any(p != p.strip() or re.match(r"\{\s+\"", p) for p in v.payloads),
    # the event stream
    "sse_comments": lambda v: any(line.startswith(":") for line in _body(v)),
    "sse_line_ends": lambda v: "\r" in v.raw,
    "sse_other_fields": lambda v: any(
        re.match(r"(event|id|retry|error):", line) for line in _body(v)
    ),
    "sse_no_space": lambda v: any(re.match(r"data:(?! )", line) for line in _body(v)),
    "sse_multiline_data": lambda v: any("\n" in p for p in v.payloads),
    "done": lambda v: any(re.fullmatch(r"data: ?\[DONE\]", line) for line in _body(v)),
    "done_with_white_space": lambda v: any(
        p.startswith("[DONE]") and p != "[DONE]" for p in v.payloads
    ),
    "last_event_unterminated": lambda v: not re.search(r"(\r\n|\r|\n)(\r\n|\r|\n)$", v.raw),
    # broken in one place
    "not_json": lambda v: any(
        c is _INVALID and not _depth(p) > 128 for c, p in zip(v.chunks, v.payloads, strict=True)
    ),
    "not_an_object": lambda v: any(c is not _INVALID and not isinstance(c, dict) for c in v.chunks),
    "non_finite_number": lambda v: (
        re.search(r"\bNaN\b|Infinity|\d[eE]\+?\d{3,}", "\n".join(v.payloads)) is not None
    ),
    "lone_surrogate": lambda v: (
        re.search(
            r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|(?<![0-9a-fA-F]{4})\\u[dD][c-fC-F][0-9a-fA-F]{2}",
            "\n".join(v.payloads),
        )
        is not None
    ),
    "wrong_type": _wrong_type,
    "content_parts": lambda v: any(isinstance(d.get("content"), list) for _, d in v.deltas()),
    "fraction_integer": lambda v: any(
        isinstance(x, float) and not x.is_integer()
        for x in (*_piece_indexes(v), *_progress_values(v))
    ),
    "negative_index": lambda v: any(_is_number(i) and i < 0 for i in _piece_indexes(v)),
    "missing_index": lambda v: any(p.get("index") is None for _, p in v.pieces()),
    "index_skips_ahead": _skips_ahead,
    "null_element": _null_element,
    "unknown_finish_reason": lambda v: any(
        r not in _READ_FINISH for r in _reasons(v) if r not in ("content_filter", "function_call")
    ),
    "bad_error_object": _bad_error,
    "negative_predicted_n": lambda v: _predicted_n(
        v, lambda x: _is_number(x) and (x < 0 or (isinstance(x, float) and not x.is_integer()))
    ),
    "ids_out_of_index_order": _ids_out_of_index_order,
    "pieces_after_finish": _pieces_after_finish,
    "length_after_named_piece": _length_after_named_piece,
    "role_prefix_text": lambda v: any(_ROLE_PREFIX.search(t) for t in v.texts()),
    "sse_syntax_in_text": lambda v: any(_SSE_IN_TEXT.search(t) for t in v.texts()),
    "blank_id_or_name": lambda v: any(i and not i.strip("\u200b").strip() for i in _id_names(v)),
    "long_id_or_name": lambda v: any(len(i) >= 1000 for i in _id_names(v)),
    "ids_differ_in_case": _ids_differ_in_case,
    "confused_boolean": lambda v: _confused(v, bool),
    "confused_number": lambda v: _confused(v, int) or _confused(v, float),
    "confused_string": lambda v: _confused(v, str),
    "confused_array": lambda v: _confused(v, list),
    "confused_object": lambda v: _confused(v, dict),
}


def _repeated_text(v: View) -> bool:
    """A text piece equal to the one before, or one that starts with the whole text so far."""
    so_far = {"reasoning": "", "content": ""}
    last: dict[str, str | None] = {"reasoning": None, "content": None}
    for event in v.events:
        kind = event["type"]
        if kind not in so_far:
            continue
        text = event["text"]
        if text == last[kind] or (so_far[kind] and text.startswith(so_far[kind])):
            return True
        last[kind] = text
        so_far[kind] += text
    return False


def _predicted_n_resets(v: View) -> bool:
    highest = 0
    for n, chunk in enumerate(v.chunks):
        timings = chunk.get("timings") if isinstance(chunk, dict) else None
        if not isinstance(timings, dict) or not _is_number(timings.get("predicted_n")):
            continue
        if timings["predicted_n"] == 0 and highest > 0 and n in v.reasoning_chunks:
            return True
        highest = max(highest, timings["predicted_n"])
    return False


def _role_later(v: View) -> bool:
    text = False
    for _, delta in v.deltas():
        if "role" in delta and text:
            return True
        text = text or bool(delta.get("content") or delta.get("tool_calls"))
    return False


_TAGGED_OR_PADDED = re.compile(r"^\s|\s$|<\/?think>", re.IGNORECASE)


def _null_fields(v: View) -> bool:
    for chunk in v.objects:
        if any(k in chunk and chunk[k] is None for k in ("error", "prompt_progress", "choices")):
            return True
    return any("tool_calls" in d and d["tool_calls"] is None for _, d in v.deltas())


#: The features of the stream model's rewrite (issue 35), by feature name.
DETECTORS |= {
    "repeated_text": _repeated_text,
    "tool_call_without_function": lambda v: any("function" not in p for _, p in v.pieces()),
    "arguments_absent_or_null": lambda v: any(
        isinstance(p.get("function"), dict) and p["function"].get("arguments") is None
        for _, p in v.pieces()
    ),
    "choice_without_delta": lambda v: any(
        c.get("finish_reason") is not None and c.get("delta") is None for _, c in v.choices()
    ),
    "usage_beside_choices": lambda v: any(
        isinstance(c.get("usage"), dict) and c.get("choices") for c in v.objects
    ),
    "timings_null": lambda v: any(
        "timings" in c and c["timings"] is None and v.timings_before(n) is not None
        for n, c in enumerate(v.chunks)
        if isinstance(c, dict)
    ),
    "predicted_n_resets": _predicted_n_resets,
    "role_chunk_later": _role_later,
    "tagged_or_padded_text": lambda v: any(
        _TAGGED_OR_PADDED.search(e["text"])
        for e in v.events
        if e["type"] in ("reasoning", "content")
    ),
    "several_choices": lambda v: any(
        isinstance(c.get("choices"), list)
        and (
            len(c["choices"]) > 1
            or any(isinstance(x, dict) and x.get("index") not in (0, None) for x in c["choices"])
        )
        for c in v.objects
    ),
    "null_fields": _null_fields,
}


def _read_values(v: View) -> Iterator[tuple[str, Any]]:
    """(kind, value) of every read field present in the case's chunks, and of every element of
    `choices` and `tool_calls` (kinds as `harness.suite.confusion` names them)."""
    for chunk in v.objects:
        yield from _kinds(chunk, _TOP_KINDS)
        for name in ("timings", "prompt_progress", "error"):
            obj = chunk.get(name)
            if isinstance(obj, dict):
                yield from _kinds(obj, _MEMBER_KINDS[name])
        choices = chunk.get("choices")
        for element in choices if isinstance(choices, list) else ():
            yield "object", element
    for _, choice in v.choices():
        yield from _kinds(choice, {"delta": "object", "finish_reason": "enum"})
    for _, delta in v.deltas():
        yield from _kinds(delta, {"content": "string", "reasoning_content": "string"})
        yield from _kinds(delta, {"tool_calls": "array"})
        calls = delta.get("tool_calls")
        for element in calls if isinstance(calls, list) else ():
            yield "object", element
    for _, piece in v.pieces():
        yield from _kinds(piece, {"index": "integer", "id": "string", "function": "object"})
        if isinstance(piece.get("function"), dict):
            yield from _kinds(piece["function"], {"name": "string", "arguments": "string"})


_TOP_KINDS = {
    "id": "string",
    "choices": "array",
    "timings": "object",
    "prompt_progress": "object",
    "error": "object",
}
_MEMBER_KINDS = {
    "timings": dict.fromkeys((*_TIMINGS_CORE, "draft_n", "draft_n_accepted"), "number"),
    "prompt_progress": dict.fromkeys(_PROGRESS, "integer"),
    "error": {"message": "string"},
}


def _kinds(obj: dict[str, Any], kinds: dict[str, str]) -> Iterator[tuple[str, Any]]:
    for name, kind in kinds.items():
        if obj.get(name) is not None:
            yield kind, obj[name]


#: The JSON types each kind of read field allows (an integer is also a number).
_ALLOWED = {
    "string": (str,),
    "enum": (str,),
    "integer": (int, float),
    "number": (int, float),
    "object": (dict,),
    "array": (list,),
}


def _confused(v: View, json_type: type) -> bool:
    """Some read field holds a value of `json_type` that its kind does not allow."""
    for kind, value in _read_values(v):
        if json_type is bool:
            if isinstance(value, bool):
                return True
            continue
        if isinstance(value, bool) or not isinstance(value, json_type):
            continue
        if not isinstance(value, _ALLOWED[kind]):
            return True
    return False


def _near_names(v: View) -> bool:
    """A member named as `harness.suite.near_names` lists for its level (the `unknown-fields`
    mode adds them to every case; this counts the cases whose payloads hold one)."""
    objects: list[tuple[str, Any]] = []
    for chunk in v.objects:
        objects.append(("top", chunk))
        objects += [(k, chunk.get(k)) for k in ("timings", "prompt_progress", "error")]
    objects += [("choice", c) for _, c in v.choices()]
    objects += [("delta", d) for _, d in v.deltas()]
    objects += [("tool_call", p) for _, p in v.pieces()]
    objects += [("function", p.get("function")) for _, p in v.pieces()]
    return any(
        isinstance(obj, dict) and not _NEAR_NAMES.get(level, frozenset()).isdisjoint(obj)
        for level, obj in objects
    )


_NEAR_NAMES = {level: frozenset(n.name for n in near) for level, near in NEAR_NAMES.items()}
DETECTORS["near_names"] = _near_names


def _progress_values(v: View) -> Iterator[Any]:
    for chunk in v.objects:
        progress = chunk.get("prompt_progress")
        if isinstance(progress, dict):
            yield from (progress.get(f) for f in _PROGRESS)


def features_of(case: Case, golden_root: Path) -> set[str]:
    """The names of the features `case` holds."""
    view = View(case, golden_root)
    return {name for name, detect in DETECTORS.items() if detect(view)}
