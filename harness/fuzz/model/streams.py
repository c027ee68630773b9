"""Building llama-server streams from their parts, one seeded `Draw` a stream.

A stream is built the way llama-server sends one: a role chunk, runs of reasoning and answer text,
tool-call pieces (parallel, interleaved, out of index order, ids and names late, split anywhere,
more than ten calls), prompt progress and timings present or not, a finish chunk with or without
text (or right after any tool-call piece, more pieces after it), chunks after it, a usage chunk
with `"choices": []`, sometimes a mid-stream server error; each chunk may carry the fields
neighbouring servers send and names a client may take for a read field
(`harness.fuzz.model.members`), and edge values (Unicode, NUL, look-alike text, blank and long ids,
long and huge strings, numbers spelled `1.0` or beyond 2^53). `build(draw, breaker)` also breaks the
stream in exactly one place with `breaker` (`harness.fuzz.model.breakers.BREAKERS`). Every stream
lists the features it used (`harness.fuzz.model.features`).

Nothing here says what a stream should give: the reference does (`harness.fuzz.model.expect`), under
every allowed outcome of the implementation-defined points, so the model never needs to know
which streams are valid, only to produce the space of them.
"""

from __future__ import annotations

from typing import Any

from harness.fuzz.model.breakers import Breaker, break_chunk, respell, respelling_for
from harness.fuzz.model.draw import Draw
from harness.fuzz.model.features import BY_NAME, FEATURES
from harness.fuzz.model.jsonwrite import COMPACT, Style, dump
from harness.fuzz.model.members import NEIGHBOUR_FEATURES, add_neighbours, null_field
from harness.fuzz.model.pieces import (
    BLANK_IDS,
    Piece,
    delta_of,
    group_pieces,
    interleave,
    note_sequence,
    text_runs,
    tool_pieces,
)
from harness.fuzz.model.stream import Stream
from harness.fuzz.model.values import progress, text, timings

__all__ = ["Stream", "build"]

_HEAD = {
    "created": 1764547200,
    "model": "qwen3-8b",
    "system_fingerprint": "b6981-3e5e4b3c",
    "object": "chat.completion.chunk",
}


def _ids(draw: Draw, count: int, used: set[str]) -> list[str | None]:
    """The id each chunk carries."""
    cid = f"chatcmpl-{draw.below(1 << draw.pick((16, 32, 64, 96))):x}"
    if draw.rarely(40, "blank_id_or_name") and draw.coin():
        cid = draw.pick(BLANK_IDS)
        used.add("blank_id_or_name")
    elif draw.rarely(60, "long_id_or_name") and draw.coin():
        cid = "chatcmpl-" + "x" * 4000
        used.add("long_id_or_name")
    policy = draw.pick(("every", "every", "every", "first", "late", "changes", "none", "empty"))
    for feature in ("id_late", "id_changes", "no_id"):
        if draw.wants(feature):
            policy = {"id_late": "late", "id_changes": "changes", "no_id": "none"}[feature]
    if policy == "every" or count == 0:
        return [cid] * count
    if policy == "first":
        return [cid] + [None] * (count - 1)
    if policy == "late":
        used.add("id_late")
        cut = draw.between(1, max(1, count))
        return [draw.pick(("", None)) for _ in range(cut)] + [cid] * (count - cut)
    if policy == "changes":
        used.add("id_changes")
        at = draw.between(1, max(1, count - 1))
        other = draw.pick((cid + "x", "chatcmpl-other", ""))
        return [cid if i < at else other if draw.coin() else None for i in range(count)]
    used.add("no_id")
    return [draw.pick(("", None)) for _ in range(count)]


def _plan(draw: Draw, used: set[str]) -> tuple[list[dict[str, Any]], list[list[Piece]]]:
    """What each chunk of a valid stream holds, and its tool calls' pieces."""
    calls = tool_pieces(draw, used)
    runs = text_runs(draw, used)
    pieces = interleave(draw, [runs, *calls], used)
    groups = group_pieces(draw, pieces, used)
    note_sequence(groups, used)
    values: list[dict[str, Any]] = []
    if draw.rarely(4, "prompt_progress"):
        for _ in range(draw.between(1, 2)):
            values.append(
                {"progress": progress(draw, used), "delta": draw.pick(({}, None, "none"))}
            )
    if draw.below(4) == 0 or draw.wants("role_chunk"):
        used.add("role_chunk")
        values.append({"delta": {"role": "assistant", "content": draw.pick((None, ""))}})
    for group in groups:
        values.append({"delta": delta_of(group), "group": True})
    if len(values) > 1 and draw.rarely(12, "role_chunk_later"):
        at = draw.between(1, len(values))
        values.insert(at, {"delta": {"role": "assistant", "content": draw.pick((None, ""))}})
        used.add("role_chunk_later")
    return values, calls


def _finish(
    draw: Draw, values: list[dict[str, Any]], calls: list[list[Piece]], used: set[str]
) -> None:
    """The finish reason: its own chunk, merged into the last, twice, right after any piece of
    a tool call (more pieces after it), or none at all."""
    has_calls = bool(calls)
    reason = draw.pick(("tool_calls", "stop", "length") if has_calls else ("stop", "length"))
    wants_length = draw.wants("tool_call_cut_by_length") or draw.wants("length_after_named_piece")
    if wants_length:
        reason = "length"
    if reason == "length" and any(map(_named_without_arguments, calls)):
        used.add("length_after_named_piece")  # (the reason that wins, whatever comes before)
    # right after a piece of a tool call, before the last chunk of the stream's pieces
    early = [n for n, v in enumerate(values[:-1]) if v.get("group") and _calls_in(v)]
    if early and draw.rarely(12, "pieces_after_finish"):
        at = draw.pick(early)
        if draw.coin() and not draw.wants("choice_without_delta"):
            values[at]["finish"] = reason
            used.add("finish_chunk_with_text")
        else:
            bare: Any = draw.pick(({}, None, "none"))
            if draw.wants("choice_without_delta"):
                bare = draw.pick((None, "none"))
            if bare != {}:
                used.add("choice_without_delta")
            values.insert(at + 1, {"delta": bare, "finish": reason})
        if any(_calls_in(v) for v in values[at + 1 :]):
            used.add("pieces_after_finish")
        used.add("chunks_after_finish")
        if draw.rarely(6, "finish_reason_repeated"):  # and again at the end, where it wins
            values.append({"delta": {}, "finish": reason})
            used.add("finish_reason_repeated")
        if reason == "length" and has_calls:
            used.add("tool_call_cut_by_length")
        return
    style = draw.pick(("own", "own", "merged", "merged", "none", "twice"))
    if style == "none" and draw.coin():
        style = "own"
    for feature, wanted in (
        ("finish_chunk_with_text", "merged"),
        ("finish_reason_repeated", "twice"),
        ("no_finish_reason", "none"),
    ):
        if draw.wants(feature):
            style = wanted
    if style == "merged" and values and values[-1].get("group"):
        values[-1]["finish"] = reason
        used.add("finish_chunk_with_text")
    elif style == "none":
        used.add("no_finish_reason")
        return
    else:
        if style == "twice":
            values.append({"delta": {}, "finish": draw.pick(("stop", "length", "tool_calls"))})
            used.add("finish_reason_repeated")
        delta: Any = draw.pick(({}, {}, {}, None, "none"))
        if draw.rarely(8, "choice_without_delta"):
            delta = draw.pick((None, "none"))
        if delta is None or delta == "none":
            used.add("choice_without_delta")
        values.append({"delta": delta, "finish": reason})
    if reason == "length" and has_calls:
        used.add("tool_call_cut_by_length")


def _calls_in(value: dict[str, Any]) -> bool:
    delta = value.get("delta")
    return isinstance(delta, dict) and bool(delta.get("tool_calls"))


def _named_without_arguments(pieces: list[Piece]) -> bool:
    """Whether a tool call gets a name and no arguments (`""` when it finishes)."""
    function = [p.call.get("function") or {} for p in pieces]
    return any(f.get("name") for f in function) and not any(f.get("arguments") for f in function)


def _timings(draw: Draw, values: list[dict[str, Any]], used: set[str]) -> int:
    """Timings on some chunks (each replacing the last), the last ones on the finish chunk;
    the predicted_n reached."""
    policy = draw.pick(("none", "none", "last", "last", "every", "some"))
    resets = draw.rarely(12, "predicted_n_resets")
    if resets or draw.wants("timings") or draw.wants("reasoning_without_timings"):
        policy = draw.pick(("every", "some")) if policy in ("none", "last") else policy
    predicted = 0
    for value in values:
        if "finish" in value or policy in ("none", "last"):
            continue
        predicted += draw.between(0, 3)
        if policy == "every" or draw.coin():
            value["timings"] = timings(draw, used, predicted)
        if resets and predicted and draw.coin() and _has_reasoning(value):
            value["timings"] = timings(draw, used, 0)
            used.add("predicted_n_resets")
    if policy != "none" and values:
        values[-1]["timings"] = timings(draw, used, predicted)
    if draw.wants("reasoning_without_timings"):
        # a reasoning chunk without timings after one with them
        timed = [n for n, v in enumerate(values) if v.get("timings")]
        later = [n for n, v in enumerate(values) if _has_reasoning(v) and timed and n > timed[0]]
        if later:
            values[draw.pick(later)].pop("timings", None)
    if any(v.get("timings") for v in values) and draw.rarely(10, "timings_null"):
        at = draw.below(len(values))
        values[at]["timings"] = None
        values[at]["timings_null"] = True
        used.add("timings_null")
    return predicted


def _has_reasoning(value: dict[str, Any]) -> bool:
    delta = value.get("delta")
    return isinstance(delta, dict) and bool(delta.get("reasoning_content"))


_USAGE = frozenset(("usage_beside_choices", "choices_absent"))


def _after(draw: Draw, values: list[dict[str, Any]], predicted: int, used: set[str]) -> None:
    """Chunks after the finish reason, and the usage chunk."""
    if draw.rarely(5, "chunks_after_finish"):
        used.add("chunks_after_finish")
        after = draw.pick(("timings", "text", "reasoning"))
        if after == "timings":
            values.append({"delta": {}, "timings": timings(draw, used, predicted + 1)})
        else:
            key = "content" if after == "text" else "reasoning_content"
            values.append({"delta": {key: text(draw, used)}})
    if draw.rarely(3, "usage_chunk") or draw.wanted & _USAGE:
        used.add("usage_chunk")
        usage = {
            "completion_tokens": predicted,
            "prompt_tokens": 12,
            "total_tokens": predicted + 12,
        }
        last = values[-1] if values else None
        if last is not None and "usage" not in last and draw.rarely(6, "usage_beside_choices"):
            last["usage"] = usage
            used.add("usage_beside_choices")
        else:
            timed = [v["timings"] for v in values if v.get("timings")]
            values.append({"usage": usage, "timings": timed[-1] if timed and draw.coin() else None})


def _chunk(draw: Draw, value: dict[str, Any], cid: str | None, used: set[str]) -> dict[str, Any]:
    chunk: dict[str, Any] = {}
    delta = value.get("delta")
    if "usage" in value and "group" not in value and "finish" not in value and delta is None:
        if draw.coin() and not draw.wants("choices_absent"):
            chunk["choices"] = []
        else:
            used.add("choices_absent")
    elif "progress" in value and delta is None:
        used.add("choices_absent")
    else:
        choice: dict[str, Any] = {"finish_reason": value.get("finish"), "index": 0}
        if delta != "none":
            choice["delta"] = delta
        chunk["choices"] = [choice]
        if draw.rarely(30, "several_choices"):
            # OpenAI's `n`: each index its own completion (I7 of contract 4)
            used.add("several_choices")
            other: dict[str, Any] = {"index": draw.pick((1, 0, 2)), "finish_reason": None}
            other["delta"] = draw.pick(({"content": "x"}, {"reasoning_content": "y"}, {}))
            chunk["choices"].insert(draw.below(2), other)
    if cid is not None:
        chunk["id"] = cid
    if value.get("timings") is not None:
        chunk["timings"] = value["timings"]
        used.add("timings")
    elif value.get("timings_null"):
        chunk["timings"] = None
    if "progress" in value:
        chunk["prompt_progress"] = value["progress"]
    if "usage" in value:
        chunk["usage"] = value["usage"]
    return chunk


def _chunks(draw: Draw, used: set[str]) -> list[dict[str, Any]]:
    """The chunks of one valid stream (as values)."""
    values, calls = _plan(draw, used)
    _finish(draw, values, calls, used)
    predicted = _timings(draw, values, used)
    _after(draw, values, predicted, used)
    timed = False
    for value in values:
        found = value.get("timings")
        if _has_reasoning(value):
            if found is None and timed:
                used.add("reasoning_without_timings")
            elif isinstance(found, dict) and found.get("predicted_n") is None:
                used.add("predicted_n_null")
        timed = timed or bool(found)
    head = _HEAD if draw.coin() else {}
    ids = _ids(draw, len(values), used)
    chunks = []
    for value, cid in zip(values, ids, strict=True):
        chunk = _chunk(draw, value, cid, used)
        if head:
            chunk = {**chunk, **head} if draw.coin() else {**head, **chunk}
        chunks.append(chunk)
    if draw.rarely(7, "server_error"):
        # a mid-stream server error: llama-server sends it and closes the stream
        at = draw.between(0, len(chunks))
        error: dict[str, Any] = {"code": 500, "type": "server_error"}
        message = draw.pick(("absent", None, "Internal error", "context exceeded: \u00e9", ""))
        if message != "absent":
            error["message"] = message
        chunks = [*chunks[:at], {"error": error}]
        used.add("server_error")
    if draw.rarely(2) or NEIGHBOUR_FEATURES & draw.wanted:
        # An implementation-defined point in one payload of the stream at most (I5 here): a
        # target may take another outcome at each payload (docs/spec.md section 5), and the
        # alternatives of an expected result take one outcome for the whole stream.
        wrong = True
        for chunk in chunks:
            wrong = not add_neighbours(draw, chunk, used, wrong=wrong) and wrong
    if chunks and draw.rarely(10, "null_fields"):
        null_field(draw, draw.pick(chunks), used)
    return chunks


def _first_call_index(chunk: dict[str, Any]) -> Any:
    choices = chunk.get("choices") or [None]
    delta = choices[0].get("delta") if isinstance(choices[0], dict) else None
    calls = delta.get("tool_calls") if isinstance(delta, dict) else None
    return calls[0].get("index") if calls and isinstance(calls[0], dict) else None


_RESPELL_FEATURES = frozenset(
    ("integral_fraction", "big_integer", "duplicate_key", "proto_key", "deep_ignored_value")
)


def _style(draw: Draw, used: set[str]) -> Style:
    ascii = draw.coin() or draw.wants("escaped_text")
    if ascii:
        used.add("escaped_text")
    lines = draw.wants("sse_multiline_data")
    if not draw.rarely(6, "json_whitespace") and not lines:
        return Style(ascii=ascii) if ascii else COMPACT
    used.add("json_whitespace")
    item = ",\n" if lines else draw.pick((", ", ",\n", " ,\t"))
    key = draw.pick((": ", " : ", ":\n"))
    if "\n" in item or "\n" in key:
        used.add("sse_multiline_data")
    return Style(ascii=ascii, item=item, key=key)


_CATALOGUE = frozenset(BY_NAME)
_STYLED = frozenset(("escaped_text", "json_whitespace", "sse_multiline_data"))
#: The features only a breaker makes (a valid stream never holds them).
MADE_BY_BREAKERS = frozenset(
    (
        "other_finish_reason",
        "done_with_white_space",
        *(f.name for f in FEATURES if f.group == "broken" and f.drawn),
    )
)


def build(draw: Draw, breaker: Breaker | None = None) -> Stream:
    """A llama-server stream drawn by `draw`; broken in one place by `breaker` when given."""
    used: set[str] = set()
    chunks = _chunks(draw, used)
    # One chunk at most is respelled (a point in one payload: see `_chunks`), in a way that
    # touches no point the breaker touches.
    respelled = _RESPELL_FEATURES & draw.wanted or draw.wants("minus_zero_index")
    open = [chunk for chunk in chunks if "error" not in chunk]
    if open and (draw.rarely(3) or respelled):
        kind = respelling_for(draw)
        if kind == "minus_zero":  # a chunk whose first tool-call piece is call 0's, if any
            open = [c for c in open if _first_call_index(c) == 0] or open
        if not (kind == "big" and breaker is not None and breaker.name == "index_big"):
            respell(draw, draw.pick(open), used, kind)
    texts: list[str | None] = [None] * len(chunks)
    if breaker is not None:
        # Before a server error (the stream's last chunk), which would end the stream first or,
        # in the same chunk, win over a wrong value (R8): the break would not be seen.
        errors = [n for n, chunk in enumerate(chunks) if "error" in chunk]
        at = draw.between(0, errors[0] - 1 if errors and errors[0] else len(chunks))
        if errors and errors[0] == 0:
            at = 0
            chunks.insert(0, {"choices": [{"index": 0, "delta": {}, "finish_reason": None}]})
            texts.insert(0, None)
        elif at == len(chunks):
            chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": None}]})
            texts.append(None)
        if breaker.shape is not None:
            break_chunk(draw, breaker, chunks[at])
        else:
            assert breaker.text is not None
            texts[at] = breaker.text(dump(chunks[at]))
        used.add(breaker.feature)
    style = _style(draw, used) if draw.coin() or draw.wanted & _STYLED else COMPACT
    payloads = []
    for chunk, fixed in zip(chunks, texts, strict=True):
        if fixed is not None:
            # payloads with a CR would be cut by the event-stream reader
            payloads.append(fixed.replace("\r", ""))
        else:
            payloads.append(dump(chunk, style).replace("\r", "\\r"))
        if draw.rarely(8):
            style = _style(draw, used)
    # SSE framing
    count = len(payloads) + 1
    line_end = draw.pick(("\n", "\n", "\n", "\n", "\n", "\r\n", "\r"))
    if draw.wants("sse_line_ends") and line_end == "\n":
        line_end = draw.pick(("\r\n", "\r"))
    if line_end != "\n":
        used.add("sse_line_ends")
    pings = frozenset(draw.below(count) for _ in range(draw.below(3)))
    if draw.wants("sse_comments"):
        pings |= {draw.below(count)}
    if pings:
        used.add("sse_comments")
    other = frozenset((draw.below(count),)) if draw.rarely(5, "sse_other_fields") else frozenset()
    if other:
        used.add("sse_other_fields")
    space = not draw.rarely(5, "sse_no_space")
    if not space:
        used.add("sse_no_space")
    done = not draw.rarely(4) or draw.wants("done")
    if done:
        used.add("done")
    unterminated = draw.rarely(7, "last_event_unterminated")
    if unterminated:
        used.add("last_event_unterminated")
    capped = draw.rarely(5, "thinking_capped")
    if capped:
        used.add("thinking_capped")
    unknown = used - _CATALOGUE
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
        broken=breaker.name if breaker is not None else "",
    )
