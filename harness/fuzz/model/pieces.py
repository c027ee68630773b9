"""The pieces of one stream's plan: runs of reasoning and answer text, tool-call pieces (parallel,
interleaved, out of index order, split anywhere, many), how they are interleaved and grouped into
chunks, and the features the order shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.fuzz.model.draw import Draw
from harness.fuzz.model.values import arguments, split_text, text

#: A text piece that is written as `null` rather than as a string.
NULL_TEXT = "\x7fnull"


@dataclass
class Piece:
    """One item of a delta: reasoning or answer text (`text`), or a tool-call piece (`call`)."""

    kind: str  # "reasoning", "content", "tool"
    text: str = ""
    call: dict[str, Any] = field(default_factory=dict)


_IDS = ("call_0", "call_abc", "toolu_01", "7", "\u00e9")
_CASED_IDS = _IDS[:3]  # ids with letters: one in another case is another id
_NAMES = ("read_file", "get_weather", "search", "f", "\u540d")
#: Ids and names a client may take for missing or cut (issue 34): white space only (an id all
#: the same: R2, R5), and thousands of characters.
BLANK_IDS = (" ", "\t", "\n ", "\u200b ", "\u00a0")
LONG_ID = "call_" + "x7" * 1500
LONG_NAME = "read_file_" * 200


def _call_count(draw: Draw) -> int:
    if draw.rarely(40, "tool_calls_many"):
        return draw.between(11, 14)
    if draw.wanted & _SEVERAL_CALLS:
        return draw.between(2, 5)
    if draw.wants("tool_calls_out_of_order"):
        return draw.between(2, 4)
    if draw.wanted & _NEEDS_A_CALL:
        return draw.between(1, 3)
    if draw.rarely(25):
        return draw.between(4, 10)
    return draw.pick((0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3))


#: Features that need two pieces of a call at least: to mix, or to repeat the id and name in.
_TWO_PIECES = frozenset(
    ("tool_calls_interleaved", "tool_calls_out_of_order", "tool_call_repeated_id_name")
)
_SEVERAL_CALLS = frozenset(
    (
        "tool_calls_parallel",
        "tool_calls_interleaved",
        "ids_differ_in_case",
        "ids_out_of_index_order",
        "text_between_tool_calls",
        "reasoning_between_tool_calls",
    )
)
_NEEDS_A_CALL = frozenset(
    (
        "tool_call",
        "huge_payload",
        "tool_call_split_anywhere",
        "tool_call_repeated_id_name",
        "tool_call_late_id_name",
        "tool_call_cut_by_length",
        "tool_call_never_named",
        "tool_call_without_function",
        "arguments_absent_or_null",
        "tool_call_type",
        "text_between_tool_calls",
        "reasoning_between_tool_calls",
        "blank_id_or_name",
        "long_id_or_name",
        "pieces_after_finish",
        "length_after_named_piece",
    )
)


def tool_pieces(draw: Draw, used: set[str]) -> list[list[Piece]]:
    """Each tool call's pieces, in order (the first creates the call)."""
    count = _call_count(draw)
    if count:
        used.add("tool_call")
    if count >= 2:
        used.add("tool_calls_parallel")
    if count > 10:
        used.add("tool_calls_many")
    blank = draw.rarely(20, "blank_id_or_name")
    long = draw.rarely(30, "long_id_or_name")
    # A call (not the last) whose id and name come late, after a later call's: the ids arrive
    # out of index order once the pieces are mixed (`interleave` makes sure when wanted).
    behind = draw.below(count - 1) if count > 1 and draw.wants("ids_out_of_index_order") else -1
    # The last call named in its only piece, without arguments: `length` comes after it.
    bare_last = draw.wants("length_after_named_piece")
    cased = draw.wants("ids_differ_in_case")
    calls: list[list[Piece]] = []
    for index in range(count):
        whole = arguments(draw, used)
        pieces = draw.pick((1, 1, 2, 2, 3)) if whole and count < 4 else draw.between(1, 2)
        if draw.wanted & _TWO_PIECES or index == behind:  # two pieces a call at least
            pieces = max(pieces, 2)
        if bare_last and index == count - 1:
            whole, pieces = "", 1
        parts = split_text(draw, whole, pieces)
        if len(parts) == 1 and draw.wants("tool_call_split_anywhere"):
            parts = split_text(draw, whole + "{}", 3)
        if len(parts) > 1:
            used.add("tool_call_split_anywhere")
        call_id = draw.pick(_CASED_IDS if index == 0 and cased else _IDS) + str(index)
        name = draw.pick(_NAMES)
        if blank and (index == 0 or draw.coin()):
            if draw.coin():
                call_id = draw.pick(BLANK_IDS)
            else:
                name = draw.pick(BLANK_IDS)
        elif long and (index == 0 or draw.coin()):
            call_id, name = (LONG_ID, name) if draw.coin() else (call_id, LONG_NAME)
        if index == 1 and draw.rarely(20, "ids_differ_in_case"):
            # call 0's id in another case: two calls all the same (a case-blind map merges them)
            first = calls[0][0].call.get("id") or calls[0][-1].call.get("id")
            if isinstance(first, str) and first.lower() != first.upper():
                call_id = first.swapcase()
        late = len(parts) > 1 and (index == behind or draw.rarely(7, "tool_call_late_id_name"))
        calls.append(_pieces_of(draw, used, index, parts, call_id, name, late=late))
    if count and not bare_last and draw.rarely(6, "tool_call_never_named"):
        # a call that never gets a name (or an id): the stream fails at finish (R5)
        victim = calls[draw.below(count)]
        key = draw.pick(("id", "name"))
        for part in victim:
            if key == "id":
                part.call.pop("id", None)
            else:
                part.call.get("function", {}).pop("name", None)
        used.add("tool_call_never_named")
    _note_ids(calls, used)
    return calls


def _note_ids(calls: list[list[Piece]], used: set[str]) -> None:
    """The features of the ids and names the calls hold: white space only, thousands of
    characters, ids that differ only in case."""
    ids = set()
    for piece in (p for call in calls for p in call):
        call_id = piece.call.get("id")
        name = (piece.call.get("function") or {}).get("name")
        for said in (call_id, name):
            if isinstance(said, str) and said:
                if not said.strip("\u200b").strip():
                    used.add("blank_id_or_name")
                elif len(said) >= 1000:
                    used.add("long_id_or_name")
        if isinstance(call_id, str) and call_id:
            ids.add(call_id)
    if len({i.lower() for i in ids}) < len(ids):
        used.add("ids_differ_in_case")


def _pieces_of(
    draw: Draw,
    used: set[str],
    index: int,
    parts: list[str],
    call_id: str,
    name: str,
    *,
    late: bool,
) -> list[Piece]:
    pieces = []
    repeat = draw.rarely(5, "tool_call_repeated_id_name")
    again = draw.wants("tool_call_repeated_id_name")  # wanted: in every later piece
    bare = draw.wants("tool_call_without_function")
    bare_odds = 0 if bare else 6
    null_args = draw.rarely(6, "arguments_absent_or_null")
    for number, args in enumerate(parts):
        piece: dict[str, Any] = {"index": index}
        function: dict[str, Any] = {}
        if number == (1 if late else 0):
            piece["id"] = call_id
            function["name"] = name
            if late:
                used.add("tool_call_late_id_name")
        elif number > 0 and repeat and (again or draw.coin()):
            used.add("tool_call_repeated_id_name")
            piece["id"] = draw.pick((call_id, "other", "", None))
            function["name"] = draw.pick((name, "other", "", None))
        elif number == 0 and late and draw.coin():
            piece["id"] = draw.pick(("", None))
        if args:
            function["arguments"] = args
        elif null_args:
            used.add("arguments_absent_or_null")
            if draw.coin():
                function["arguments"] = None
        elif draw.coin():
            function["arguments"] = ""
        if draw.rarely(3, "tool_call_type"):
            piece["type"] = "function"
            used.add("tool_call_type")
        if function and not (bare and "name" not in function and number > 0):
            piece["function"] = function
        elif draw.rarely(bare_odds):
            used.add("tool_call_without_function")
        else:
            piece["function"] = {}
        pieces.append(Piece("tool", call=piece))
    return pieces


def text_runs(draw: Draw, used: set[str]) -> list[Piece]:
    """Runs of reasoning or answer text, each piece a chunk's worth."""
    runs: list[Piece] = []
    kinds = [draw.pick(("reasoning", "content")) for _ in range(draw.pick(_RUN_COUNTS))]
    if not kinds and draw.wanted & _NEEDS_TEXT:
        kinds = [draw.pick(("reasoning", "content")) for _ in range(draw.between(1, 3))]
    for wanted, order in _ORDERS:
        if draw.wants(wanted):
            at = draw.below(len(kinds) + 1)
            kinds[at:at] = order
    for feature, kind in (*_BETWEEN, ("reasoning_run", "reasoning"), ("content_run", "content")):
        if draw.wants(feature) and kind not in kinds:
            kinds.append(kind)
    for kind in kinds:
        so_far = ""
        for _ in range(draw.pick(_RUN_PIECES)):
            if draw.rarely(7, "empty_text"):
                used.add("empty_text")
                runs.append(Piece(kind, text=draw.pick(("", NULL_TEXT))))
                continue
            piece = text(draw, used)
            if so_far and draw.rarely(9, "repeated_text"):
                used.add("repeated_text")
                # the same piece again, or the whole text so far and more (a snapshot)
                piece = draw.pick((runs[-1].text or piece, so_far + piece))
            so_far += piece
            runs.append(Piece(kind, text=piece))
        used.add("reasoning_run" if kind == "reasoning" else "content_run")
    if draw.wants("empty_reasoning_after_content"):
        found = next((i for i, p in enumerate(runs) if p.kind == "content" and p.text), None)
        at = len(runs) if found is None else found
        if found is None:
            runs.append(Piece("content", text=text(draw, used)))
            used.add("content_run")
            at = len(runs) - 1
        runs.insert(at + 1, Piece("reasoning", text=""))
        used.add("empty_text")
    return runs


#: How many runs of text a stream has, and pieces a run: small streams mostly (a bug shows in a
#: few chunks, and a small stream costs little), sometimes more.
_RUN_COUNTS = (0, 1, 1, 1, 1, 2, 2, 3)
_RUN_PIECES = (1, 1, 1, 1, 2, 2, 3)

#: Runs in an order a feature needs, put among the others when it is wanted.
_ORDERS = (
    ("reasoning_then_content", ["reasoning", "content"]),
    ("reasoning_after_content", ["content", "reasoning"]),
    ("reasoning_and_content_in_one_chunk", ["reasoning", "content"]),
)


_NEEDS_TEXT = frozenset(
    (
        "reasoning_run",
        "content_run",
        "reasoning_then_content",
        "reasoning_after_content",
        "reasoning_and_content_in_one_chunk",
        "empty_text",
        "empty_reasoning_after_content",
        "repeated_text",
        "unicode_text",
        "nul_in_text",
        "long_text",
        "escaped_text",
        "text_between_tool_calls",
        "reasoning_between_tool_calls",
        "predicted_n_zero_later",
        "role_chunk_later",
        "id_changes",
    )
)


def interleave(draw: Draw, sequences: list[list[Piece]], used: set[str]) -> list[Piece]:
    """Merge the sequences keeping each one's order, so that pieces of one call may come between
    another's. A call's first piece keeps creation order (index 0 before 1), or the stream would
    skip ahead; later pieces come in any order."""
    heads = [list(seq) for seq in sequences if seq]
    merged: list[Piece] = []
    created = 0
    mixed = draw.wants("tool_calls_interleaved") or draw.wants("tool_calls_out_of_order")
    while heads:
        ready = [seq for seq in heads if seq[0].kind != "tool" or seq[0].call["index"] <= created]
        if mixed and len(ready) > 1 and merged and merged[-1].kind == "tool":
            # another sequence than the last piece's, lower indices first
            others = [s for s in ready if s[0].kind != "tool" or s[0] is not merged[-1]]
            ready = sorted(others, key=lambda s: s[0].call.get("index", -1))[:2] or ready
        pick = draw.pick(ready)
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
    if draw.wants("ids_out_of_index_order"):
        _ids_behind(merged)
    for feature, kind in _BETWEEN:
        if draw.wants(feature):
            _put_between(merged, kind)
    return merged


def _id_at(piece: Piece) -> bool:
    """Whether `piece` is a tool-call piece with a non-empty id."""
    found = piece.call.get("id") if piece.kind == "tool" else None
    return isinstance(found, str) and bool(found)


def _ids_behind(merged: list[Piece]) -> None:
    """Move the pieces of a call whose id comes late, from its id on, after the first id of a
    call with a higher index (each call's pieces keep their order): its id arrives out of index
    order. Nothing moves when the ids already do, or when no call's id comes late."""
    firsts: dict[int, int] = {}  # each call's index: where its id first arrives
    for at, piece in enumerate(merged):
        if _id_at(piece):
            firsts.setdefault(piece.call["index"], at)
    arrived = sorted(firsts, key=firsts.__getitem__)
    if arrived != sorted(arrived):
        return
    for index in arrived:
        created = next(
            n for n, p in enumerate(merged) if p.kind == "tool" and p.call["index"] == index
        )
        later = [i for i in arrived if i > index and firsts[i] > created]
        if firsts[index] == created or not later:
            continue
        tail = [p for p in merged[firsts[index] :] if p.kind == "tool" and p.call["index"] == index]
        rest = [p for p in merged if not any(p is t for t in tail)]
        after = next(n for n, p in enumerate(rest) if _id_at(p) and p.call["index"] == later[0])
        merged[:] = [*rest[: after + 1], *tail, *rest[after + 1 :]]
        return


#: The features of text between two tool-call pieces, and the kind of text each moves there.
_BETWEEN = (("text_between_tool_calls", "content"), ("reasoning_between_tool_calls", "reasoning"))


def _put_between(merged: list[Piece], kind: str) -> None:
    """Move a text piece of `kind` between the first two tool-call pieces (when there are two)."""
    tools = [n for n, piece in enumerate(merged) if piece.kind == "tool"]
    texts = [n for n, piece in enumerate(merged) if piece.kind == kind and piece.text]
    if len(tools) < 2 or not texts or any(tools[0] < n < tools[-1] for n in texts):
        return
    piece = merged.pop(texts[0])
    tools = [n for n, p in enumerate(merged) if p.kind == "tool"]
    merged.insert(tools[0] + 1, piece)


def group_pieces(draw: Draw, pieces: list[Piece], used: set[str]) -> list[list[Piece]]:
    """Cut the pieces into chunks: a chunk holds at most one reasoning and one answer text."""
    chunks: list[list[Piece]] = []
    current: list[Piece] = []
    apart = 0.3 if draw.wants("reasoning_and_content_in_one_chunk") else 0.45
    for piece in pieces:
        kinds = {p.kind for p in current}
        clash = piece.kind in ("reasoning", "content") and piece.kind in kinds
        if current and (clash or draw.chance(apart)):
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


def delta_of(pieces: list[Piece]) -> dict[str, Any]:
    """The delta of one chunk's pieces."""
    delta: dict[str, Any] = {}
    for piece in pieces:
        if piece.kind == "tool":
            delta.setdefault("tool_calls", []).append(piece.call)
        else:
            key = "reasoning_content" if piece.kind == "reasoning" else "content"
            delta[key] = None if piece.text == NULL_TEXT else piece.text
    return delta


def note_sequence(chunks: list[list[Piece]], used: set[str]) -> None:
    """The structure features that depend on the order of the pieces."""
    order = [
        p.kind
        for chunk in chunks
        for p in chunk
        if p.kind == "tool" or p.text not in ("", NULL_TEXT)
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
    arrived: list[int] = []
    for piece in flat:
        if _id_at(piece) and piece.call["index"] not in arrived:
            arrived.append(piece.call["index"])
    if arrived != sorted(arrived):
        used.add("ids_out_of_index_order")
    for i, piece in enumerate(flat):
        if (
            piece.kind == "reasoning"
            and piece.text == ""
            and any(p.kind == "content" and p.text for p in flat[:i])
        ):
            used.add("empty_reasoning_after_content")
