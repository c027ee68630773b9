"""The pieces of one stream's plan: runs of reasoning and answer text, tool-call pieces (parallel,
interleaved, out of index order, split anywhere, many), how they are interleaved and grouped into
chunks, and the features the order shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from harness.fuzz.model.values import (
    BOOLEANS,
    draw_arguments,
    ints,
    rarely,
    sampled,
    split_text,
    text,
)

Draw = st.DrawFn


# --- one stream's plan ----------------------------------------------------------------------


@dataclass
class _Piece:
    """One item of a delta: reasoning or answer text (`text`), or a tool-call piece (`call`)."""

    kind: str  # "reasoning", "content", "tool"
    text: str = ""
    call: dict[str, Any] = field(default_factory=dict)


#: How many tool calls: mostly up to 3, sometimes up to 14 (more than ten: index 10 after 9).
_CALL_COUNTS = st.one_of(ints(0, 3), ints(0, 3), ints(4, 14))


def tool_pieces(draw: Draw, used: set[str]) -> list[list[_Piece]]:
    """Each tool call's pieces, in order (the first creates the call)."""
    count = int(draw(_CALL_COUNTS))
    if count:
        used.add("tool_call")
    if count >= 2:
        used.add("tool_calls_parallel")
    if count > 10:
        used.add("tool_calls_many")
    calls: list[list[_Piece]] = []
    for index in range(count):
        whole = draw_arguments(draw, used)
        parts = split_text(draw, whole, int(draw(ints(1, 5))))
        if len(parts) > 1:
            used.add("tool_call_split_anywhere")
        call_id = str(draw(sampled(("call_0", "call_abc", "toolu_01", "7", "\u00e9")))) + str(index)
        name = str(draw(sampled(("read_file", "get_weather", "search", "f", "\u540d"))))
        late = rarely(draw, 8) and len(parts) > 1
        pieces = []
        for number, args in enumerate(parts):
            piece: dict[str, Any] = {"index": index}
            function: dict[str, Any] = {}
            if number == (1 if late else 0):
                piece["id"] = call_id
                function["name"] = name
                if late:
                    used.add("tool_call_late_id_name")
            elif number > 0 and rarely(draw, 5):
                used.add("tool_call_repeated_id_name")
                piece["id"] = draw(sampled((call_id, "other", "", None)))
                function["name"] = draw(sampled((name, "other", "", None)))
            elif number == 0 and late and draw(BOOLEANS):
                piece["id"] = draw(sampled(("", None)))
            if args or draw(BOOLEANS):
                function["arguments"] = args
            if rarely(draw, 3):
                piece["type"] = "function"
                used.add("tool_call_type")
            bare = bool(draw(BOOLEANS))
            if function or bare:
                piece["function"] = function
            pieces.append(_Piece("tool", call=piece))
        calls.append(pieces)
    if count and rarely(draw, 5):
        # a call that never gets a name (or an id): the stream fails at finish (R5)
        victim = calls[int(draw(ints(0, count - 1)))]
        key = draw(sampled(("id", "name")))
        for part in victim:
            if key == "id":
                part.call.pop("id", None)
            else:
                part.call.get("function", {}).pop("name", None)
        used.add("tool_call_never_named")
    return calls


def text_runs(draw: Draw, used: set[str]) -> list[_Piece]:
    runs: list[_Piece] = []
    for _ in range(int(draw(ints(0, 4)))):
        kind = str(draw(sampled(("reasoning", "content"))))
        for _ in range(int(draw(ints(1, 4)))):
            if rarely(draw, 7):
                used.add("empty_text")
                runs.append(_Piece(kind, text=str(draw(sampled(("", "\x7fnull"))))))
            else:
                runs.append(_Piece(kind, text=text(draw, used)))
        used.add("reasoning_run" if kind == "reasoning" else "content_run")
    return runs


def interleave(draw: Draw, sequences: list[list[_Piece]], used: set[str]) -> list[_Piece]:
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
        pick = heads[int(draw(sampled(ready)))]
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


def group_pieces(draw: Draw, pieces: list[_Piece], used: set[str]) -> list[list[_Piece]]:
    """Cut the pieces into chunks: a chunk holds at most one reasoning and one answer text."""
    chunks: list[list[_Piece]] = []
    current: list[_Piece] = []
    for piece in pieces:
        kinds = {p.kind for p in current}
        clash = piece.kind in ("reasoning", "content") and piece.kind in kinds
        if current and (clash or draw(ints(0, 2)) != 0):
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


def delta_of(pieces: list[_Piece]) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    for piece in pieces:
        if piece.kind == "tool":
            delta.setdefault("tool_calls", []).append(piece.call)
        else:
            key = "reasoning_content" if piece.kind == "reasoning" else "content"
            delta[key] = None if piece.text == "\x7fnull" else piece.text
    return delta


def note_sequence(chunks: list[list[_Piece]], used: set[str]) -> None:
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
