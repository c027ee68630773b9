"""Write the tool-call combination cases: each tool-call corner paired with the stream's other
features, kept only where the pair shows something its simpler cases do not.

The base stream is two tool calls, each in two pieces (`0a 0b 1a 1b`), then the finish reason.
A *tool-call feature* changes those pieces (the id and name arriving late, the ids arriving out of
index order, pieces out of index order or two in one chunk in reverse order, the finish reason
right after the first piece or in the last piece's chunk, `length` right after a call's first
named piece, empty id and name pieces before or after the real ones, arguments split inside an
escape, a call without arguments, ids and names repeated or changed); a *stream feature* adds
chunks around them (reasoning or text before, between the calls or inside one, a progress chunk,
empty chunks, usage or text after the finish, no `[DONE]`, a server error at the end, no finish
reason, timings on every chunk). Every single feature and every pair of a tool-call feature with
any other feature is generated; `KEPT` then decides.

**The criterion.** A stream's result is judged by the reference (`reference.Assembler`), and
read as two things:

- its *moments*: each time something other than a tool-call piece happens (reasoning, text or a
  progress event; the finish reason first arriving), the kind of moment with the state the tool
  calls are in then: each call by index with its id, name and arguments so far, the order their
  ids arrived in, and whether the stream has finished. This is what a client's accumulator
  decides on (closing a call on text, listing calls on a finish, dropping an unnamed one);
- its *outcome*: the completion field by field (id, texts, tool calls, finish reason, timings,
  reasoning tokens), or the error and its kind.

A pair (A, B) is *implied* by its simpler cases (the base, A alone and B alone, all committed)
when every moment it has is a moment one of them has, and each field of its outcome is the one
A's or B's change predicts: the base's value where neither changed the field, the changed value
where one did (a field both changed is never predicted). An implied pair puts an accumulator in
no state its simpler cases do not, and ends no other way; a client right on those is right on
it. An error outcome is judged whole (an error ends the stream whatever the calls were): a pair
that ends with the very error one of its simpler cases ends with is implied when its moments are.
The base and every single feature are committed (they are the simpler cases); of the pairs, only
those not implied. `python tests/tools/grow_tool_pairs.py --report` lists what was dropped and
why.

    python tests/tools/grow_tool_pairs.py            # (re)write the cases
    python tests/tools/grow_tool_pairs.py --check    # exit 1 if a committed case differs
    conform golden update -k 'synthetic/tool_pairs'  # then their golden files
"""

from __future__ import annotations

import copy
import itertools
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.tools.corpus_cases import Case, dumps, write_all  # noqa: E402

FOLDER = "synthetic/tool_pairs"
GENERATOR = "tests/tools/grow_tool_pairs.py"
_ID = "chatcmpl-toolpairs"
_TIMINGS = {"prompt_n": 12, "prompt_ms": 30.5, "predicted_n": 9, "predicted_ms": 61.2}


@dataclass
class Stream:
    """A stream as chunks: each a dict with the choice's delta (`delta`), its finish reason
    (`finish`), or a whole payload (`payload`); pieces are tagged `0a 0b 1a 1b`."""

    chunks: list[dict[str, Any]] = field(default_factory=list)
    done: bool = True
    timings: bool = False

    def find(self, tag: str) -> int:
        """The position of the chunk holding piece `tag` (ValueError: gone)."""
        for n, chunk in enumerate(self.chunks):
            if any(p.get("tag") == tag for p in chunk.get("pieces", ())):
                return n
        raise ValueError(tag)

    def piece(self, tag: str) -> dict[str, Any]:
        return next(p for p in self.chunks[self.find(tag)]["pieces"] if p["tag"] == tag)

    def finish_at(self) -> int:
        return next(n for n, c in enumerate(self.chunks) if c.get("finish"))

    def payloads(self) -> list[str]:
        out = [dumps({"id": _ID, "choices": [_choice({"role": "assistant", "content": None})]})]
        for chunk in self.chunks:
            if "payload" in chunk:
                out.append(dumps(chunk["payload"]))
                continue
            delta = dict(chunk.get("delta", {}))
            if chunk.get("pieces"):
                delta["tool_calls"] = [_written(p) for p in chunk["pieces"]]
            body: dict[str, Any] = {"id": _ID, "choices": [_choice(delta, chunk.get("finish"))]}
            if self.timings:  # the same on every chunk: the feature's effect is the chunk count's
                body["timings"] = _TIMINGS
            out.append(dumps(body))
        return out


def _choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish}


def _written(piece: dict[str, Any]) -> dict[str, Any]:
    """A tagged piece as the stream writes it."""
    out: dict[str, Any] = {"index": piece["index"]}
    if "id" in piece:
        out["id"] = piece["id"]
        out["type"] = "function"
    function = {k: piece[k] for k in ("name", "arguments") if k in piece}
    if function:
        out["function"] = function
    return out


_NAMES = {0: ("call_0", "read_file"), 1: ("call_1", "list_dir")}


def base() -> Stream:
    def first(index: int, args: str) -> dict[str, Any]:
        call_id, name = _NAMES[index]
        return {"tag": f"{index}a", "index": index, "id": call_id, "name": name, "arguments": args}

    def second(index: int, args: str) -> dict[str, Any]:
        return {"tag": f"{index}b", "index": index, "arguments": args}

    return Stream(
        [
            {"pieces": [first(0, '{"path":')]},
            {"pieces": [second(0, '"a.txt"}')]},
            {"pieces": [first(1, '{"dir":')]},
            {"pieces": [second(1, '"src"}')]},
            {"finish": "tool_calls"},
        ]
    )


def _move(s: Stream, tag: str, after: str) -> None:
    chunk = s.chunks.pop(s.find(tag))
    s.chunks.insert(s.find(after) + 1, chunk)


def _late(piece: dict[str, Any], later: dict[str, Any]) -> None:
    later["id"], later["name"] = piece.pop("id"), piece.pop("name")


Edit = Callable[[Stream], None]


@dataclass(frozen=True)
class Feature:
    """One feature: its name in case names, what it is, and its edit of a stream."""

    name: str
    what: str
    edit: Edit
    tool: bool  # a tool-call feature (paired with every other feature)


def _ids_out_of_order(s: Stream) -> None:
    _late(s.piece("0a"), s.piece("0b"))
    _move(s, "0b", after="1a")


def _pieces_out_of_order(s: Stream) -> None:
    _move(s, "0b", after="1b")


def _one_chunk_reversed(s: Stream) -> None:
    b0, b1 = s.piece("0b"), s.piece("1b")
    s.chunks.pop(s.find("0b"))
    s.chunks[s.find("1b")]["pieces"] = [b1, b0]


def _finish_after_first_piece(s: Stream) -> None:
    reason = s.chunks.pop(s.finish_at())["finish"]
    s.chunks.insert(s.find("0a") + 1, {"finish": reason})


def _finish_with_last_piece(s: Stream) -> None:
    reason = s.chunks.pop(s.finish_at())["finish"]
    s.chunks[s.find("1b")]["finish"] = reason


def _length_after_named_piece(s: Stream) -> None:
    s.chunks.pop(s.find("1b"))
    s.piece("1a")["arguments"] = ""
    s.chunks[s.finish_at()]["finish"] = "length"


def _empty_later(s: Stream) -> None:
    for tag in ("0b", "1b"):
        s.piece(tag).update(id="", name="")


def _empty_first(s: Stream) -> None:
    first, second = s.piece("0a"), s.piece("0b")
    _late(first, second)
    first.update(id="", name="")


def _split_in_escape(s: Stream) -> None:
    s.piece("0a")["arguments"] = '{"path":"a\\'
    s.piece("0b")["arguments"] = 'nb.txt"}'


def _no_arguments(s: Stream) -> None:
    del s.piece("1a")["arguments"]
    del s.piece("1b")["arguments"]


def _repeated(s: Stream) -> None:
    for index in (0, 1):
        s.piece(f"{index}b").update(id=_NAMES[index][0], name=_NAMES[index][1])


def _changed(s: Stream) -> None:
    s.piece("0b").update(id="call_9", name="other_tool")


TOOL_FEATURES = (
    Feature("late_id_name", "call 0's id and name arrive in its second piece",
            lambda s: _late(s.piece("0a"), s.piece("0b")), True),
    Feature("ids_out_of_index_order", "call 0 starts without id and name, call 1 arrives whole, "
            "then call 0's id and name: the ids arrive in the order 1, 0", _ids_out_of_order,
            True),
    Feature("pieces_out_of_index_order", "call 1's second piece before call 0's",
            _pieces_out_of_order, True),
    Feature("pieces_in_one_chunk_reversed", "both second pieces in one chunk, call 1's first",
            _one_chunk_reversed, True),
    Feature("finish_after_first_piece", "the finish reason right after call 0's first piece, "
            "the other pieces after it", _finish_after_first_piece, True),
    Feature("finish_in_last_piece_chunk", "the finish reason in the chunk of the last piece",
            _finish_with_last_piece, True),
    Feature("length_after_named_piece", "finish reason length right after call 1's first, named "
            "piece (arguments \"\")", _length_after_named_piece, True),
    Feature("empty_id_name_later", 'later pieces carry id "" and name ""', _empty_later, True),
    Feature("empty_id_name_first", 'call 0\'s first piece carries id "" and name "", its second '
            "the real ones", _empty_first, True),
    Feature("arguments_split_in_escape", "call 0's arguments split after a backslash",
            _split_in_escape, True),
    Feature("call_without_arguments", "call 1's pieces carry no arguments", _no_arguments, True),
    Feature("id_name_repeated", "later pieces repeat the id and name", _repeated, True),
    Feature("id_name_changed", "a later piece carries another id and name (ignored)", _changed,
            True),
)  # fmt: skip


def _insert(at: Callable[[Stream], int], chunk: dict[str, Any]) -> Edit:
    def edit(s: Stream) -> None:
        s.chunks.insert(at(s), copy.deepcopy(chunk))

    return edit


def _after(tag: str) -> Callable[[Stream], int]:
    return lambda s: s.find(tag) + 1


def _first_piece(s: Stream) -> int:
    return min(s.find("0a"), s.find("1a"))


def _end(s: Stream) -> int:
    return len(s.chunks)


def _after_finish(s: Stream) -> int:
    return s.finish_at() + 1


def _no_done(s: Stream) -> None:
    s.done = False


def _with_timings(s: Stream) -> None:
    s.timings = True


def _no_finish(s: Stream) -> None:
    at = s.finish_at()
    if s.chunks[at].get("pieces"):
        del s.chunks[at]["finish"]
    else:
        s.chunks.pop(at)


def _empty_chunks(s: Stream) -> None:
    _insert(_after("0a"), {"payload": {"id": _ID, "choices": []}})(s)
    _insert(_after("0a"), {"delta": {}})(s)


_ERROR = {"payload": {"error": {"code": 500, "message": "boom", "type": "server_error"}}}
_PROGRESS = {"payload": {"id": _ID, "choices": [_choice({})],
                         "prompt_progress": {"total": 20, "cache": 0, "processed": 20,
                                             "time_ms": 5}}}  # fmt: skip

STREAM_FEATURES = (
    Feature("reasoning_before", "reasoning text before the first piece",
            _insert(_first_piece, {"delta": {"reasoning_content": "Two files."}}), False),
    Feature("content_before", "answer text before the first piece",
            _insert(_first_piece, {"delta": {"content": "Reading."}}), False),
    Feature("content_between_calls", "answer text after call 0's last piece",
            _insert(_after("0b"), {"delta": {"content": " Next."}}), False),
    Feature("content_inside_call", "answer text between call 0's two pieces",
            _insert(_after("0a"), {"delta": {"content": "Hm."}}), False),
    Feature("reasoning_inside_call", "reasoning text between call 0's two pieces",
            _insert(_after("0a"), {"delta": {"reasoning_content": "Which?"}}), False),
    Feature("progress_first", "a prompt_progress chunk before the first piece",
            _insert(_first_piece, _PROGRESS), False),
    Feature("empty_chunks_inside", "an empty delta and a choices [] chunk inside call 0",
            _empty_chunks, False),
    Feature("usage_after_finish", "a usage chunk with choices [] after the finish",
            _insert(_end, {"payload": {"id": _ID, "choices": [], "usage": {
                "prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}}}), False),
    Feature("text_after_finish", "answer text after the finish reason",
            _insert(_after_finish, {"delta": {"content": "Done."}}), False),
    Feature("no_done", "the stream ends without [DONE]", _no_done, False),
    Feature("server_error_at_end", "a server error as the last payload", _insert(_end, _ERROR),
            False),
    Feature("no_finish_reason", "no finish reason at all", _no_finish, False),
    Feature("timings_on_every_chunk", "timings on every chunk", _with_timings, False),
)  # fmt: skip


# --- judging a stream by the reference --------------------------------------------------------


def _judged(payloads: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The reference's golden steps and finish for `payloads`."""
    import reference
    from harness.drive.inprocess import finish_step, push_step

    assembler = reference.Assembler()
    steps = []
    for line, data in enumerate(payloads):
        steps.append(push_step(assembler, data, line))
        if "error" in steps[-1]:
            return steps, None
    return steps, finish_step(assembler, False)


def judge(s: Stream) -> tuple[frozenset[Any], dict[str, Any]]:
    """A stream's moments and its outcome, field by field (see the module's docstring)."""
    steps, finish = _judged(s.payloads())
    calls: dict[int, list[Any]] = {}
    arrived: list[int] = []
    moments = set()
    finished = False
    for step in steps:
        if "error" in step:
            return frozenset(moments), {"error": json.dumps(step["error"], sort_keys=True)}
        kinds = []
        for event in step["events"]:
            if event["type"] != "tool_call_delta":
                kinds.append(event["type"])
                continue
            call = calls.setdefault(event["index"], [None, None, ""])
            if event["id"] and not call[0]:
                call[0] = event["id"]
                arrived.append(event["index"])
            call[1] = call[1] or event["name"] or None
            call[2] += event["arguments"]
        if step["state"]["is_finished"] and not finished:
            kinds.append("finish")
            finished = True
        state = (tuple((i, *calls[i]) for i in sorted(calls)), tuple(arrived), finished)
        moments |= {(kind, state) for kind in kinds}
    assert finish is not None
    if "error" in finish:
        return frozenset(moments), {"error": json.dumps(finish["error"], sort_keys=True)}
    completion = finish["completion"]
    return frozenset(moments), {k: json.dumps(v, sort_keys=True) for k, v in completion.items()}


def implied(
    pair: tuple[frozenset[Any], dict[str, Any]],
    simpler: list[tuple[frozenset[Any], dict[str, Any]]],
) -> str | None:
    """Why `pair` is implied by `simpler` (the base first, then each feature alone), or None
    when it is not (it is kept)."""
    moments, outcome = pair
    known = frozenset().union(*(m for m, _ in simpler))
    if not moments <= known:
        return None
    if "error" in outcome:  # an error ends the stream whatever the calls were: the whole outcome
        if any(o == outcome for _, o in simpler):
            return "its moments are its simpler cases', and it ends with the error one of them has"
        return None
    completions = [o for _, o in simpler if "error" not in o]
    if len(completions) < len(simpler):
        return None  # a simpler case fails where the pair does not: they interact
    base = completions[0]
    for name in outcome:
        changed = {o[name] for o in completions[1:] if o[name] != base[name]}
        if len(changed) > 1 or outcome[name] != (changed.pop() if changed else base[name]):
            return None
    return "its moments are its simpler cases', and each field of its completion is theirs"


# --- the cases --------------------------------------------------------------------------------


def _stream(*features: Feature) -> Stream | None:
    """The base with each feature's edit, in order; None where one cannot apply."""
    s = base()
    try:
        for feature in features:
            feature.edit(s)
    except (ValueError, KeyError, StopIteration):
        return None
    return s


def _pins(s: Stream) -> str:
    """The rules a stream's result rests on: R1, R2 and R5 always (tool-call events, the calls
    of the completion, its finish); R4 with reasoning, R3 with timings, R8 with a server error,
    R9 with progress, R7 with chunks after the finish reason or without choices."""
    text = json.dumps(s.chunks)
    pins = {"R1", "R2", "R5"}
    if "reasoning_content" in text:
        pins.add("R4")
    if s.timings:
        pins.add("R3")
    if '"error"' in text:
        pins.add("R8")
    if "prompt_progress" in text:
        pins.add("R9")
    finishes = [n for n, c in enumerate(s.chunks) if c.get("finish")]
    if '"choices": []' in text or (finishes and finishes[0] < len(s.chunks) - 1):
        pins.add("R7")
    return " ".join(sorted(pins))


def _case(name: str, s: Stream, about: list[str]) -> Case:
    return Case(f"{FOLDER}/{name}", about, _pins(s), GENERATOR, s.payloads(), s.done)


@dataclass
class Outcome:
    """What the generator decided for one single or pair."""

    name: str
    features: tuple[Feature, ...]
    stream: Stream | None
    why_dropped: str | None = None


def decide() -> list[Outcome]:
    """Every single feature and pair, with whether it is kept (see the module's docstring)."""
    judged: dict[tuple[str, ...], tuple[frozenset[Any], dict[str, Any]]] = {}
    the_base = base()
    judged[()] = judge(the_base)
    out = [Outcome("base_two_calls", (), the_base)]
    every = (*TOOL_FEATURES, *STREAM_FEATURES)
    for feature in every:
        s = _stream(feature)
        assert s is not None, feature.name
        judged[(feature.name,)] = judge(s)
        out.append(Outcome(feature.name, (feature,), s))  # the simpler cases: always kept
    for a, b in itertools.combinations(every, 2):
        if not (a.tool or b.tool):
            continue
        s = _stream(a, b)
        name = f"{a.name}_with_{b.name}"
        if s is None:
            out.append(Outcome(name, (a, b), None, "the two edits do not combine"))
            continue
        simpler = [judged[()], judged[(a.name,)], judged[(b.name,)]]
        out.append(Outcome(name, (a, b), s, implied(judge(s), simpler)))
    return out


KEPT = "kept: not implied by its simpler cases"


def cases() -> Iterator[Case]:
    for outcome in decide():
        if outcome.why_dropped is not None or outcome.stream is None:
            continue
        if not outcome.features:
            about = ["The base of the tool-call combinations: two tool calls, each in two pieces, "
                     "then the finish reason (R1, R2, R5)."]  # fmt: skip
        else:
            what = "; ".join(f.what for f in outcome.features)
            kind = "A tool-call combination" if len(outcome.features) == 2 else "A tool-call case"
            about = [
                f"{kind} (R1, R2, R5): two tool calls in pieces, and {what}. The calls are "
                "listed in index order with the first non-empty id and name of their pieces and "
                "their arguments concatenated, whatever else the stream holds.",
                f"{KEPT}: some moment of this stream (text, a progress event or the finish "
                "reason, with the calls in some state) or some field of its result is not one "
                f"of its simpler cases' (python {GENERATOR} --report).",
            ]
        yield _case(outcome.name, outcome.stream, about)


def main(argv: list[str]) -> int:
    if "--report" in argv:
        outcomes = decide()
        for outcome in outcomes:
            print(f"{'kept' if outcome.why_dropped is None else 'dropped'}  {outcome.name}"
                  + (f"  ({outcome.why_dropped})" if outcome.why_dropped else ""))  # fmt: skip
        kept = sum(o.why_dropped is None for o in outcomes)
        print(f"{kept} kept of {len(outcomes)}")
        return 0
    differ = write_all(FOLDER, cases(), check="--check" in argv)
    if differ and "--check" in argv:
        print("stale generated cases:", " ".join(differ), f"(python {GENERATOR})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
