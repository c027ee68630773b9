"""Hypothesis strategies that build llama-server streams from their parts.

A stream is built the way llama-server sends one: a role chunk, runs of reasoning and answer text,
tool-call pieces (parallel, interleaved, out of index order, split anywhere, more than ten calls),
prompt progress and timings present or not, a finish chunk with or without text, chunks after it,
a usage chunk with `"choices": []`, sometimes a mid-stream server error; each chunk may carry the
fields neighbouring servers send (`harness.model.fields`) and edge values (Unicode, NUL, long and
huge strings, numbers spelled `1.0` or beyond 2^53). `streams(broken=True)` also breaks each
stream in exactly one place (one of R6's shape errors, or a rule that fails on purpose), chosen
from `BREAKERS`. Every stream lists the features it used (`harness.model.features`).

Nothing here says what a stream should give: the reference does (`harness.model.expect`), under
every allowed outcome of the implementation-defined points, so the model never needs to know
which streams are valid, only to produce the space of them.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from harness.model import fields as neighbours
from harness.model.features import BY_NAME
from harness.model.jsonwrite import Dup, Raw, Style, dump

Draw = st.DrawFn

#: SSE framing choices: the line end and whether `data:` is followed by a space.
LINE_ENDS = ("\n", "\r\n", "\r")


@dataclass(frozen=True)
class Stream:
    """One generated stream: its payloads (the data of each event), how they are framed, and the
    features it used."""

    payloads: tuple[str, ...]
    features: tuple[str, ...]
    thinking_capped: bool = False
    done: bool = True  # `[DONE]` after the last payload
    line_end: str = "\n"
    space: bool = True  # `data: x` rather than `data:x`
    pings: frozenset[int] = frozenset()  # a `:` comment line before these payloads
    other_fields: frozenset[int] = frozenset()  # `event:` / `id:` / `retry:` lines before these
    unterminated: bool = False  # no blank line after the last event
    broken: str = ""  # the breaker applied, "" when none

    def sse(self, comments: tuple[str, ...] = ()) -> str:
        """The event stream as a `.sse` recording's text, `comments` as its leading `:` lines."""
        end = self.line_end
        out = [f": {line}{end}" if line else f":{end}" for line in comments]
        events = [*self.payloads, "[DONE]"] if self.done else list(self.payloads)
        for index, payload in enumerate(events):
            if index in self.pings:
                out.append(f":{end}")
            if index in self.other_fields:
                out.append(f"event: message{end}id: {index}{end}retry: 3000{end}")
            for part in payload.split("\n"):
                glue = "data: " if self.space or part.startswith(" ") or not part else "data:"
                out.append(f"{glue}{part}{end}")
            if not (self.unterminated and index == len(events) - 1):
                out.append(end)
        return "".join(out)


@functools.cache
def _ints(low: int, high: int) -> st.SearchStrategy[int]:
    """`st.integers`, each made once: building strategies costs more than drawing from them."""
    return st.integers(low, high)


def _pick(values: Sequence[Any]) -> st.SearchStrategy[Any]:
    """`st.sampled_from`, made once per tuple of hashable values."""
    try:
        return _cached_pick(tuple(values))
    except TypeError:  # values that are dicts or lists
        return st.sampled_from(values)


@functools.cache
def _cached_pick(values: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(values)


def _uniform(draw: Draw, values: Sequence[Any]) -> Any:
    """One of `values`, about equally often: hypothesis favours the first of a `sampled_from`,
    which would leave the last breakers of a long list untried in a short run. A 32-bit integer,
    its bits mixed (hypothesis favours small ones too), spreads the picks, and still shrinks (to
    the smallest integer that picks the same value)."""
    return values[_spread(draw) % len(values)]


def _spread(draw: Draw) -> int:
    """An integer whose residues are about equally likely: hypothesis favours small integers,
    so its bits are mixed (0, the value it shrinks to, stays 0)."""
    return (int(draw(_ints(0, 2**32 - 1))) * 0x9E3779B1 % 2**32) >> 8


def _rarely(draw: Draw, odds: int) -> bool:
    """True once in `odds + 1` draws; shrinks to False, so a shrunk stream loses the feature."""
    return _spread(draw) % (odds + 1) == odds


# --- values ---------------------------------------------------------------------------------

_WORDS = ("Hello", " world", ".", " The", " answer", " is", " 4", "\n", " ", "Let", " me", " think")
_EDGE_TEXT = (
    "\x00",
    "a\x00b",
    "\x01\x1f",
    "\u2028\u2029",
    "\ufeff",
    "\uffff",
    "\U0001f600",
    "e\u0301",
    "\u05e9\u05dc\u05d5\u05dd",
    "\U00010348",
    '"',
    "\\",
    "\\u0041",
    "</script>",
    "[DONE]",
    "data: x",
    "\t",
)
_CHARS = st.characters(exclude_categories=["Cs"])


def _text_kind(draw: Draw, used: set[str]) -> str:
    if _rarely(draw, 30):
        used.add("long_text")
        return str(draw(_pick(_WORDS))) * int(draw(_ints(300, 3000)))
    kind = draw(_pick(("word", "word", "word", "chars", "edge")))
    if kind == "word":
        return str(draw(_pick(_WORDS)))
    if kind == "chars":
        text = str(draw(st.text(_CHARS, min_size=1, max_size=12)))
        if any(ord(c) > 0xFFFF or not c.isascii() for c in text):
            used.add("unicode_text")
        if any(ord(c) < 0x20 for c in text):
            used.add("nul_in_text")
        return text
    text = str(draw(_pick(_EDGE_TEXT)))
    used.add("nul_in_text" if any(ord(c) < 0x20 for c in text) else "unicode_text")
    return text


def text(draw: Draw, used: set[str]) -> str:
    """A non-empty text piece: words mostly, any Unicode, control characters, long runs."""
    return _text_kind(draw, used)


def _arguments(draw: Draw, used: set[str]) -> str:
    """A tool call's whole arguments text (JSON mostly, as models write it)."""
    if _rarely(draw, 60):
        used.add("huge_payload")
        return '{"content":"' + "x" * int(draw(_pick((70_000, 140_000)))) + '"}'
    kind = draw(_pick(("object", "object", "empty", "number", "text")))
    if kind == "object":
        value = draw(
            st.dictionaries(
                _pick(("path", "city", "query", "n", "files", "a")),
                st.one_of(_ints(-5, 99), _pick(("a.txt", "Paris", "é", "x y"))),
                max_size=3,
            )
        )
        return json.dumps(value, ensure_ascii=bool(draw(st.booleans())))
    if kind == "empty":
        return str(draw(_pick(("", "{}"))))
    if kind == "number":
        return str(draw(_pick(("12", "1", "[1,2]", "true", "null"))))
    return text(draw, used)


def _split(draw: Draw, whole: str, pieces: int) -> list[str]:
    """`whole` cut into `pieces` parts at any characters (empty parts allowed)."""
    if pieces <= 1:
        return [whole]
    cuts = sorted(draw(st.lists(_ints(0, len(whole)), min_size=pieces - 1, max_size=pieces - 1)))
    bounds = [0, *cuts, len(whole)]
    return [whole[a:b] for a, b in itertools.pairwise(bounds)]


def _timings(draw: Draw, used: set[str], predicted: int) -> dict[str, Any]:
    names = (
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
    values: dict[str, Any] = {
        "cache_n": 0,
        "prompt_n": 12,
        "prompt_ms": 35.2,
        "prompt_per_token_ms": 2.93,
        "prompt_per_second": 340.9,
        "predicted_n": predicted,
        "predicted_ms": 120.5,
        "predicted_per_token_ms": 12.05,
        "predicted_per_second": 83.0,
    }
    if draw(st.booleans()):
        values |= {"draft_n": 4, "draft_n_accepted": 3}
    if _rarely(draw, 4):
        used.add("timings_partial")
        kept = draw(st.sets(_pick(names)))
        values = {k: v for k, v in values.items() if k in kept}
        if draw(st.booleans()):
            values["predicted_n"] = None
            used.add("predicted_n_null")
        if not values:
            used.add("empty_objects")
    if values.get("predicted_n") == 0 or values.get("cache_n") == 0:
        used.add("zero_counts")
    return values


def _progress(draw: Draw, used: set[str]) -> dict[str, Any]:
    total = int(draw(_ints(0, 4096)))
    cache = int(draw(_ints(0, total)))
    processed = int(draw(_ints(cache, total)))
    progress: dict[str, Any] = {
        "total": total,
        "cache": cache,
        "processed": processed,
        "time_ms": int(draw(_ints(0, 900))),
    }
    if _rarely(draw, 5):
        kept = draw(st.sets(_pick(tuple(progress))))
        progress = {k: v for k, v in progress.items() if k in kept}
        if not progress:
            used.add("empty_objects")
    if 0 in progress.values():
        used.add("zero_counts")
    used.add("prompt_progress")
    return progress


# --- one stream's plan ----------------------------------------------------------------------


@dataclass
class _Piece:
    """One item of a delta: reasoning or answer text (`text`), or a tool-call piece (`call`)."""

    kind: str  # "reasoning", "content", "tool"
    text: str = ""
    call: dict[str, Any] = field(default_factory=dict)


def _tool_pieces(draw: Draw, used: set[str]) -> list[list[_Piece]]:
    """Each tool call's pieces, in order (the first creates the call)."""
    count = int(draw(st.one_of(_ints(0, 3), _ints(0, 3), _ints(4, 14))))
    if count:
        used.add("tool_call")
    if count >= 2:
        used.add("tool_calls_parallel")
    if count > 10:
        used.add("tool_calls_many")
    calls: list[list[_Piece]] = []
    for index in range(count):
        whole = _arguments(draw, used)
        parts = _split(draw, whole, int(draw(_ints(1, 5))))
        if len(parts) > 1:
            used.add("tool_call_split_anywhere")
        call_id = str(draw(_pick(("call_0", "call_abc", "toolu_01", "7", "\u00e9")))) + str(index)
        name = str(draw(_pick(("read_file", "get_weather", "search", "f", "\u540d"))))
        late = _rarely(draw, 8) and len(parts) > 1
        pieces = []
        for number, args in enumerate(parts):
            piece: dict[str, Any] = {"index": index}
            function: dict[str, Any] = {}
            if number == (1 if late else 0):
                piece["id"] = call_id
                function["name"] = name
                if late:
                    used.add("tool_call_late_id_name")
            elif number > 0 and _rarely(draw, 5):
                used.add("tool_call_repeated_id_name")
                piece["id"] = draw(_pick((call_id, "other", "", None)))
                function["name"] = draw(_pick((name, "other", "", None)))
            elif number == 0 and late and draw(st.booleans()):
                piece["id"] = draw(_pick(("", None)))
            if args or draw(st.booleans()):
                function["arguments"] = args
            if _rarely(draw, 3):
                piece["type"] = "function"
                used.add("tool_call_type")
            bare = bool(draw(st.booleans()))
            if function or bare:
                piece["function"] = function
            pieces.append(_Piece("tool", call=piece))
        calls.append(pieces)
    if count and _rarely(draw, 5):
        # a call that never gets a name (or an id): the stream fails at finish (R5)
        victim = calls[int(draw(_ints(0, count - 1)))]
        key = draw(_pick(("id", "name")))
        for part in victim:
            if key == "id":
                part.call.pop("id", None)
            else:
                part.call.get("function", {}).pop("name", None)
        used.add("tool_call_never_named")
    return calls


def _text_runs(draw: Draw, used: set[str]) -> list[_Piece]:
    runs: list[_Piece] = []
    for _ in range(int(draw(_ints(0, 4)))):
        kind = str(draw(_pick(("reasoning", "content"))))
        for _ in range(int(draw(_ints(1, 4)))):
            if _rarely(draw, 7):
                used.add("empty_text")
                runs.append(_Piece(kind, text=str(draw(_pick(("", "\x7fnull"))))))
            else:
                runs.append(_Piece(kind, text=text(draw, used)))
        used.add("reasoning_run" if kind == "reasoning" else "content_run")
    return runs


def _interleave(draw: Draw, sequences: list[list[_Piece]], used: set[str]) -> list[_Piece]:
    """Merge the sequences keeping each one's order, so that pieces of one call may come between
    another's. A call's first piece keeps creation order (index 0 before 1), or the stream would
    skip ahead; later pieces come in any order."""
    heads = [list(seq) for seq in sequences if seq]
    merged: list[_Piece] = []
    created = 0
    while heads:
        ready = [
            i
            for i, seq in enumerate(heads)
            if seq[0].kind != "tool" or seq[0].call["index"] <= created
        ]
        pick = heads[int(draw(_pick(ready)))]
        piece = pick.pop(0)
        if piece.kind == "tool" and piece.call["index"] == created:
            created += 1
        elif piece.kind == "tool" and merged and merged[-1].kind == "tool":
            if merged[-1].call["index"] > piece.call["index"]:
                used.add("tool_calls_out_of_order")
            if merged[-1].call["index"] != piece.call["index"]:
                used.add("tool_calls_interleaved")
        merged.append(piece)
        heads = [seq for seq in heads if seq]
    return merged


def _group(draw: Draw, pieces: list[_Piece], used: set[str]) -> list[list[_Piece]]:
    """Cut the pieces into chunks: a chunk holds at most one reasoning and one answer text."""
    chunks: list[list[_Piece]] = []
    current: list[_Piece] = []
    for piece in pieces:
        kinds = {p.kind for p in current}
        clash = piece.kind in ("reasoning", "content") and piece.kind in kinds
        if current and (clash or draw(_ints(0, 2)) != 0):
            chunks.append(current)
            current = []
        current.append(piece)
    if current:
        chunks.append(current)
    for chunk in chunks:
        kinds = {p.kind for p in chunk}
        if {"reasoning", "content"} <= kinds:
            used.add("reasoning_and_content_in_one_chunk")
    return chunks


def _delta(pieces: list[_Piece]) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    for piece in pieces:
        if piece.kind == "tool":
            delta.setdefault("tool_calls", []).append(piece.call)
        else:
            key = "reasoning_content" if piece.kind == "reasoning" else "content"
            delta[key] = None if piece.text == "\x7fnull" else piece.text
    return delta


def _note_sequence(chunks: list[list[_Piece]], used: set[str]) -> None:
    """The structure features that depend on the order of the pieces."""
    order = [
        p.kind
        for chunk in chunks
        for p in chunk
        if p.kind == "tool" or p.text not in ("", "\x7fnull")
    ]
    seen: set[str] = set()
    for i, kind in enumerate(order):
        if kind == "content" and "reasoning" in seen:
            used.add("reasoning_then_content")
        if kind == "reasoning" and "content" in seen:
            used.add("reasoning_after_content")
        if kind in ("content", "reasoning") and "tool" in seen and "tool" in order[i + 1 :]:
            used.add(
                "text_between_tool_calls" if kind == "content" else "reasoning_between_tool_calls"
            )
        seen.add(kind)
    flat = [p for chunk in chunks for p in chunk]
    for i, piece in enumerate(flat):
        if (
            piece.kind == "reasoning"
            and piece.text == ""
            and any(p.kind == "content" and p.text for p in flat[:i])
        ):
            used.add("empty_reasoning_after_content")


def _add_neighbours(draw: Draw, objects: dict[str, list[dict[str, Any]]], used: set[str]) -> None:
    """Put fields of neighbouring servers into some objects of a chunk (never over a read one)."""
    for level, found in objects.items():
        for obj in found:
            if not _rarely(draw, 3):
                continue
            wrong = _rarely(draw, 9)
            choices = neighbours.at_level(level, wrong_typed=wrong)
            if not choices:
                continue
            for item in draw(
                st.lists(_pick(choices), min_size=1, max_size=3, unique_by=lambda f: f.name)
            ):
                if item.name in obj:
                    continue
                obj[item.name] = draw(_pick(item.values))
                used.add(item.feature)


def _chunk(
    draw: Draw,
    used: set[str],
    *,
    cid: str | None,
    head: dict[str, Any],
    delta: dict[str, Any] | None,
    finish: str | None = None,
    timings: dict[str, Any] | None = None,
    progress: dict[str, Any] | None = None,
    no_choices: bool = False,
) -> dict[str, Any]:
    chunk: dict[str, Any] = {}
    if no_choices:
        if draw(st.booleans()):
            chunk["choices"] = []
        else:
            used.add("choices_absent")
    else:
        choice: dict[str, Any] = {"finish_reason": finish, "index": 0}
        if delta is not None:
            choice["delta"] = delta
        chunk["choices"] = [choice]
    chunk |= head
    if cid is not None:
        chunk["id"] = cid
    if timings is not None:
        chunk["timings"] = dict(timings)  # each chunk its own, as respelling changes one
        used.add("timings")
    if progress is not None:
        chunk["prompt_progress"] = progress
    return chunk


def _ids(draw: Draw, count: int, used: set[str]) -> list[str | None]:
    """The id each chunk carries."""
    cid = "chatcmpl-" + str(
        draw(st.text("abcdefghijklmnopqrstuvwxyzABC0123456789", min_size=4, max_size=24))
    )
    policy = draw(_pick(("every", "every", "every", "first", "late", "changes", "none", "empty")))
    if policy == "every":
        return [cid] * count
    if policy == "first":
        return [cid] + [None] * (count - 1)
    if policy == "late":
        used.add("id_late")
        cut = int(draw(_ints(0, count)))
        return [draw(_pick(("", None))) for _ in range(cut)] + [cid] * (count - cut)
    if policy == "changes":
        used.add("id_changes")
        return [cid if i % 2 == 0 else cid + "x" for i in range(count)]
    used.add("no_id")
    return ["" if policy == "empty" else None] * count


@st.composite
def _chunks(draw: Draw) -> tuple[list[dict[str, Any]], set[str], bool]:
    """The chunks of one valid stream (as values), the features used, and thinking_capped."""
    used: set[str] = set()
    head: dict[str, Any] = {}
    if draw(_ints(0, 3)) != 0:
        head = {
            "created": 1764547200,
            "model": "qwen3-8b",
            "system_fingerprint": "b6981-3e5e4b3c",
            "object": "chat.completion.chunk",
        }
    calls = _tool_pieces(draw, used)
    runs = _text_runs(draw, used)
    # text runs and tool calls interleave as one sequence each (a run's order is kept)
    pieces = _interleave(draw, [runs, *calls], used)
    groups = _group(draw, pieces, used)
    _note_sequence(groups, used)
    timing_policy = draw(_pick(("none", "last", "every", "some")))
    predicted = 0
    values: list[dict[str, Any]] = []

    def timings_now() -> dict[str, Any] | None:
        nonlocal predicted
        predicted += int(draw(_ints(0, 3)))
        if timing_policy == "every" or (timing_policy == "some" and draw(st.booleans())):
            return _timings(draw, used, predicted)
        return None

    if _rarely(draw, 4):
        for _ in range(int(draw(_ints(1, 3)))):
            values.append(
                {
                    "progress": _progress(draw, used),
                    "delta": draw(_pick(({}, None, "none"))),
                }
            )
    if draw(_ints(0, 3)) != 0:
        used.add("role_chunk")
        values.append({"delta": {"role": "assistant", "content": draw(_pick((None, "")))}})
    for group in groups:
        values.append({"delta": _delta(group), "timings": timings_now(), "group": True})
    # the finish
    has_calls = bool(calls)
    reason = draw(_pick(("tool_calls", "stop", "length") if has_calls else ("stop", "length")))
    finish_style = draw(_pick(("own", "own", "merged", "none", "twice")))
    if finish_style == "none" and draw(st.booleans()):
        finish_style = "own"
    if finish_style == "merged" and values and values[-1].get("group"):
        values[-1]["finish"] = reason
        used.add("finish_chunk_with_text")
        if reason == "length" and has_calls:
            used.add("tool_call_cut_by_length")
    elif finish_style == "none":
        used.add("no_finish_reason")
    else:
        if finish_style == "twice":
            values.append({"delta": {}, "finish": draw(_pick(("stop", "length", "tool_calls")))})
            used.add("finish_reason_repeated")
        values.append({"delta": {}, "finish": reason})
        if reason == "length" and has_calls:
            used.add("tool_call_cut_by_length")
    last_timings = _timings(draw, used, predicted)
    if timing_policy != "none":
        values[-1]["timings"] = last_timings
    if _rarely(draw, 5):
        used.add("chunks_after_finish")
        after = draw(_pick(("timings", "text", "reasoning")))
        if after == "timings":
            values.append({"delta": {}, "timings": _timings(draw, used, predicted + 1)})
        else:
            key = "content" if after == "text" else "reasoning_content"
            values.append({"delta": {key: text(draw, used)}, "timings": timings_now()})
    if _rarely(draw, 2):
        used.add("usage_chunk")
        usage: dict[str, Any] = {
            "completion_tokens": predicted,
            "prompt_tokens": 12,
            "total_tokens": predicted + 12,
        }
        values.append({"usage": usage, "timings": last_timings if draw(st.booleans()) else None})
    if any(
        v.get("delta") and "reasoning_content" in v["delta"] and v.get("timings") is None
        for v in values
    ) and any(v.get("timings") for v in values):
        used.add("reasoning_without_timings")
    ids = _ids(draw, len(values), used)
    chunks: list[dict[str, Any]] = []
    for value, cid in zip(values, ids, strict=True):
        if "usage" in value:
            chunk = _chunk(
                draw,
                used,
                cid=cid,
                head=head,
                delta=None,
                timings=value.get("timings"),
                no_choices=True,
            )
            chunk["usage"] = value["usage"]
        elif "progress" in value:
            delta = value["delta"]
            chunk = _chunk(
                draw,
                used,
                cid=cid,
                head=head,
                delta=None if delta == "none" else delta,
                progress=value["progress"],
                no_choices=delta is None,
            )
        else:
            chunk = _chunk(
                draw,
                used,
                cid=cid,
                head=head,
                delta=value["delta"],
                finish=value.get("finish"),
                timings=value.get("timings"),
            )
        chunks.append(chunk)
    if _rarely(draw, 7):
        # a mid-stream server error: llama-server sends it and closes the stream
        at = int(draw(_ints(0, len(chunks))))
        error: dict[str, Any] = {"code": 500, "type": "server_error"}
        message = draw(_pick(("absent", None, "Internal error", "context exceeded: \u00e9", "")))
        if message != "absent":
            error["message"] = message
        chunks = [*chunks[:at], {"error": error}]
        used.add("server_error")
    for chunk in chunks:
        levels: dict[str, list[dict[str, Any]]] = {"top": [chunk]}
        if isinstance(chunk.get("error"), dict):
            levels["error"] = [chunk["error"]]
        for choice in chunk.get("choices") or ():
            levels.setdefault("choice", []).append(choice)
            if isinstance(choice.get("delta"), dict):
                levels.setdefault("delta", []).append(choice["delta"])
                for call in choice["delta"].get("tool_calls") or ():
                    levels.setdefault("tool_call", []).append(call)
        if isinstance(chunk.get("usage"), dict):
            levels["usage"] = [chunk["usage"]]
        if _rarely(draw, 2):
            _add_neighbours(draw, levels, used)
    capped = _rarely(draw, 5)
    if capped:
        used.add("thinking_capped")
    return chunks, used, capped


# --- values spelled the way some servers or libraries spell them ----------------------------


def _respell(draw: Draw, chunk: dict[str, Any], used: set[str]) -> None:
    """Rewrite one value of `chunk` as an edge spelling: `1.0`, a big integer, a duplicate key,
    a `__proto__` member, a deep ignored value, `-0` as an index."""
    kind = draw(_pick(("fraction", "big", "dup", "proto", "deep", "int32")))
    choices = chunk.get("choices") or []
    choice = choices[0] if choices and isinstance(choices[0], dict) else None
    delta = choice.get("delta") if choice else None
    calls = delta.get("tool_calls") if isinstance(delta, dict) else None
    if calls and isinstance(calls[0], dict) and calls[0].get("index") == 0 and _rarely(draw, 2):
        used.add("minus_zero_index")
        calls[0]["index"] = Raw("-0")
        return
    if kind == "fraction":
        used.add("integral_fraction")
        target = chunk.get("timings") or chunk.get("prompt_progress")
        if isinstance(target, dict) and target:
            key = draw(_pick(sorted(target)))
            if isinstance(target[key], int):
                target[key] = Raw(f"{target[key]}{draw(_pick(('.0', 'e0', '.000', 'E+0')))}")
                return
        chunk["prompt_progress"] = {
            "total": Raw("3.0"),
            "cache": 0,
            "processed": Raw("1e0"),
            "time_ms": 1,
        }
    elif kind == "big":
        used.add("big_integer")
        value = draw(_pick((2**53 - 1, 2**53, 2**53 + 1, 2**31, 2**63, -(2**53) - 1, 10**30)))
        where = draw(_pick(("progress", "timings", "ignored")))
        if where == "progress":
            chunk["prompt_progress"] = {"total": value, "cache": 0, "processed": 1, "time_ms": 0}
        elif where == "timings":
            chunk["timings"] = {**(chunk.get("timings") or {}), "prompt_ms": Raw(str(value))}
        else:
            chunk["created"] = Raw(str(value))
    elif kind == "dup":
        used.add("duplicate_key")
        name = draw(_pick(("id", "model", "choices")))
        if name in chunk:
            value = chunk.pop(name)
            other = "chatcmpl-other" if name == "id" else value
            first, second = (value, other) if draw(st.booleans()) else (other, value)
            chunk[Dup(name)] = first
            chunk[Dup(name)] = second
        else:
            chunk[Dup("model")] = "a"
            chunk[Dup("model")] = "b"
    elif kind == "proto":
        used.add("proto_key")
        value = draw(_pick(({"reasoning_content": "x"}, {"predicted_n": 7}, {}, None, 1)))
        host = draw(_pick(("top", "delta", "timings")))
        if host == "delta" and isinstance(delta, dict):
            delta[Dup("__proto__")] = value
        elif host == "timings" and isinstance(chunk.get("timings"), dict):
            chunk["timings"][Dup("__proto__")] = value
        else:
            chunk[Dup("__proto__")] = value
    elif kind == "deep":
        used.add("deep_ignored_value")
        depth = int(draw(_pick((100, 128, 129, 130, 1000))))
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

_NOT_JSON: tuple[tuple[str, Callable[[str], str]], ...] = (
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


def _wrong_shape(draw: Draw, chunk: dict[str, Any]) -> str:
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
            "finish_reason", draw(_pick(("STOP", "Stop", "tool_calls ")))
        ),
        "finish_prototype": lambda: choice.__setitem__(
            "finish_reason",
            draw(_pick(("constructor", "toString", "__proto__", "hasOwnProperty"))),
        ),
        "finish_number": lambda: choice.__setitem__("finish_reason", draw(_pick((0, 1, 2)))),
        "finish_other": lambda: choice.__setitem__(
            "finish_reason", draw(_pick(("content_filter", "function_call", "eos", "")))
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
        "error_array": lambda: chunk.__setitem__("error", draw(_pick(([], ["boom"])))),
        "error_string": lambda: chunk.__setitem__("error", "boom"),
        "error_message_number": lambda: chunk.__setitem__("error", {"message": 500}),
        "error_empty": lambda: chunk.__setitem__("error", {}),
        "progress_empty": lambda: chunk.__setitem__("prompt_progress", {}),
        "timings_empty": lambda: chunk.__setitem__("timings", {}),
    }
    # finish reasons are where readers are most lenient (enums read case-blind, by ordinal, by
    # name lookup): one breaker in four is one of them
    finishes = sorted(n for n in options if n.startswith("finish_"))
    name = str(_uniform(draw, finishes if _rarely(draw, 3) else sorted(options)))
    options[name]()
    return name


_WRONG_FEATURES = {
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
_NOT_JSON_FEATURES = {
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
BREAKERS: tuple[str, ...] = (*sorted(_WRONG_FEATURES), *(name for name, _ in _NOT_JSON))


def _style(draw: Draw, used: set[str]) -> Style:
    ascii = bool(draw(st.booleans()))
    if ascii:
        used.add("escaped_text")
    if not _rarely(draw, 4):
        return Style(ascii=ascii)
    used.add("json_whitespace")
    item = str(draw(_pick((", ", ",\n", " ,\t"))))
    key = str(draw(_pick((": ", " : ", ":\n"))))
    if "\n" in item or "\n" in key:
        used.add("sse_multiline_data")
    return Style(ascii=ascii, item=item, key=key)


@st.composite
def streams(draw: Draw, broken: bool | None = False) -> Stream:
    """A llama-server stream; with `broken=True` broken in one place, with None either."""
    chunks, used, capped = draw(_chunks())
    if broken is None:  # one in two broken
        broken = _spread(draw) % 2 == 1
    for chunk in chunks:
        if "error" not in chunk and _rarely(draw, 9):
            _respell(draw, chunk, used)
    how = ""
    texts: list[str | None] = [None] * len(chunks)
    if broken:
        at = int(draw(_ints(0, len(chunks))))
        if at == len(chunks):
            chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": None}]})
            texts.append(None)
        if draw(st.booleans()):
            how = _wrong_shape(draw, chunks[at])
            used.add(_WRONG_FEATURES[how])
        else:
            how, breaker = _uniform(draw, _NOT_JSON)
            texts[at] = breaker(dump(chunks[at]))
            used.add(_NOT_JSON_FEATURES.get(how, "not_json"))
    payloads = []
    for chunk, fixed in zip(chunks, texts, strict=True):
        payloads.append(fixed if fixed is not None else dump(chunk, _style(draw, used)))
    # SSE framing
    count = len(payloads) + 1
    line_end = str(draw(_pick(("\n", "\n", "\n", "\r\n", "\r"))))
    if line_end != "\n":
        used.add("sse_line_ends")
    pings = frozenset(draw(st.sets(_ints(0, count - 1), max_size=2)))
    if pings:
        used.add("sse_comments")
    other = frozenset(draw(st.sets(_ints(0, count - 1), max_size=1)) if _rarely(draw, 5) else ())
    if other:
        used.add("sse_other_fields")
    space = not _rarely(draw, 5)
    if not space:
        used.add("sse_no_space")
    done = not _rarely(draw, 4)
    if done:
        used.add("done")
    unterminated = _rarely(draw, 7)
    if unterminated:
        used.add("last_event_unterminated")
    # payloads with a CR would be cut by the event-stream reader: a JSON writer never makes one
    payloads = [
        p.replace("\r", "\\r") if p.startswith("{") else p.replace("\r", "") for p in payloads
    ]
    unknown = used - set(BY_NAME)
    assert not unknown, f"features missing from the catalogue: {sorted(unknown)}"
    return Stream(
        payloads=tuple(payloads),
        features=tuple(sorted(used)),
        thinking_capped=capped,
        done=done,
        line_end=line_end,
        space=space,
        pings=pings,
        other_fields=other,
        unterminated=unterminated,
        broken=how,
    )
