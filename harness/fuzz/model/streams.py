"""Hypothesis strategies that build llama-server streams from their parts.

A stream is built the way llama-server sends one: a role chunk, runs of reasoning and answer text,
tool-call pieces (parallel, interleaved, out of index order, split anywhere, more than ten calls),
prompt progress and timings present or not, a finish chunk with or without text, chunks after it,
a usage chunk with `"choices": []`, sometimes a mid-stream server error; each chunk may carry the
fields neighbouring servers send (`harness.fuzz.model.fields`) and edge values (Unicode, NUL, long
and huge strings, numbers spelled `1.0` or beyond 2^53). `streams(broken=True)` also breaks each
stream in exactly one place (one of R6's shape errors, or a rule that fails on purpose), chosen
from `harness.fuzz.model.breakers.BREAKERS`. Every stream lists the features it used
(`harness.fuzz.model.features`).

Nothing here says what a stream should give: the reference does (`harness.fuzz.model.expect`), under
every allowed outcome of the implementation-defined points, so the model never needs to know
which streams are valid, only to produce the space of them.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import configuration as hypothesis_configuration
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers as hypothesis_providers

from harness.fuzz.model import fields as neighbours
from harness.fuzz.model.breakers import (
    NOT_JSON,
    NOT_JSON_FEATURES,
    WRONG_FEATURES,
    respell,
    wrong_shape,
)
from harness.fuzz.model.features import BY_NAME
from harness.fuzz.model.jsonwrite import Style, dump
from harness.fuzz.model.pieces import (
    delta_of,
    group_pieces,
    interleave,
    note_sequence,
    text_runs,
    tool_pieces,
)
from harness.fuzz.model.values import (
    BOOLEANS,
    draw_progress,
    draw_timings,
    ints,
    rarely,
    sampled,
    sets_of,
    spread,
    text,
    uniform,
)

Draw = st.DrawFn

#: SSE framing choices: the line end and whether `data:` is followed by a space.
LINE_ENDS = ("\n", "\r\n", "\r")


def cache_directory() -> Path:
    """Where hypothesis keeps its caches (its Unicode tables) while streams are drawn:
    `$HYPOTHESIS_STORAGE_DIRECTORY` when set, else `conform/hypothesis` in the user's cache
    directory (`$XDG_CACHE_HOME`, or `~/.cache`); never a `.hypothesis/` in the current folder."""
    where = os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY")
    if where:
        return Path(where)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "conform" / "hypothesis"


@contextlib.contextmanager
def drawing() -> Iterator[None]:
    """The conditions streams are drawn under, for as long as the block runs (then restored).

    - Hypothesis's storage is `cache_directory()`, so that drawing writes no `.hypothesis/`
      folder where it runs (the example database is off wherever streams are drawn).
    - Hypothesis's "local constants" are off: it would otherwise scan the source of every module
      loaded from the current folder (the target's own, for one) and sometimes draw its literals,
      so the streams of a seed would depend on which target is loaded and from where, and the scan
      costs time and writes a cache of its own.
    """
    home, scan = "__hypothesis_home_directory", "_get_local_constants"  # private to hypothesis
    before = getattr(hypothesis_configuration, home, None)
    local = getattr(hypothesis_providers, scan, None)
    hypothesis_configuration.set_hypothesis_home_dir(cache_directory())
    if local is not None:
        setattr(hypothesis_providers, scan, _no_local_constants)
    _forget_constants()  # the pools already drawn from (local constants included)
    try:
        yield
    finally:
        hypothesis_configuration.set_hypothesis_home_dir(before)
        if local is not None:
            setattr(hypothesis_providers, scan, local)
        _forget_constants()


def _forget_constants() -> None:
    cache = getattr(getattr(hypothesis_providers, "CONSTANTS_CACHE", None), "cache", None)
    if cache is not None:
        cache.clear()


def _no_local_constants() -> Any:
    from hypothesis.internal.constants_ast import Constants

    return Constants()


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


def _add_neighbours(draw: Draw, objects: dict[str, list[dict[str, Any]]], used: set[str]) -> None:
    """Put fields of neighbouring servers into some objects of a chunk (never over a read one)."""
    for level, found in objects.items():
        for obj in found:
            if not rarely(draw, 3):
                continue
            wrong = rarely(draw, 9)
            if not neighbours.at_level(level, wrong_typed=wrong):
                continue
            for item in draw(_some_fields(level, wrong)):
                if item.name in obj:
                    continue
                obj[item.name] = draw(sampled(item.values))
                used.add(item.feature)


def _name(field: neighbours.NeighbourField) -> str:
    return field.name


@functools.cache
def _some_fields(level: str, wrong: bool) -> st.SearchStrategy[list[Any]]:
    """One to three of the fields at `level`, no name twice; made once (as `values.ints`)."""
    choices = neighbours.at_level(level, wrong_typed=wrong)
    return st.lists(sampled(choices), min_size=1, max_size=3, unique_by=_name)


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
        if draw(BOOLEANS):
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
    policy = draw(sampled(("every", "every", "every", "first", "late", "changes", "none", "empty")))
    if policy == "every":
        return [cid] * count
    if policy == "first":
        return [cid] + [None] * (count - 1)
    if policy == "late":
        used.add("id_late")
        cut = int(draw(ints(0, count)))
        return [draw(sampled(("", None))) for _ in range(cut)] + [cid] * (count - cut)
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
    if draw(ints(0, 3)) != 0:
        head = {
            "created": 1764547200,
            "model": "qwen3-8b",
            "system_fingerprint": "b6981-3e5e4b3c",
            "object": "chat.completion.chunk",
        }
    calls = tool_pieces(draw, used)
    runs = text_runs(draw, used)
    # text runs and tool calls interleave as one sequence each (a run's order is kept)
    pieces = interleave(draw, [runs, *calls], used)
    groups = group_pieces(draw, pieces, used)
    note_sequence(groups, used)
    timing_policy = draw(sampled(("none", "last", "every", "some")))
    predicted = 0
    values: list[dict[str, Any]] = []

    def timings_now() -> dict[str, Any] | None:
        nonlocal predicted
        predicted += int(draw(ints(0, 3)))
        if timing_policy == "every" or (timing_policy == "some" and draw(BOOLEANS)):
            return draw_timings(draw, used, predicted)
        return None

    if rarely(draw, 4):
        for _ in range(int(draw(ints(1, 3)))):
            values.append(
                {
                    "progress": draw_progress(draw, used),
                    "delta": draw(sampled(({}, None, "none"))),
                }
            )
    if draw(ints(0, 3)) != 0:
        used.add("role_chunk")
        values.append({"delta": {"role": "assistant", "content": draw(sampled((None, "")))}})
    for group in groups:
        values.append({"delta": delta_of(group), "timings": timings_now(), "group": True})
    # the finish
    has_calls = bool(calls)
    reason = draw(sampled(("tool_calls", "stop", "length") if has_calls else ("stop", "length")))
    finish_style = draw(sampled(("own", "own", "merged", "none", "twice")))
    if finish_style == "none" and draw(BOOLEANS):
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
            values.append({"delta": {}, "finish": draw(sampled(("stop", "length", "tool_calls")))})
            used.add("finish_reason_repeated")
        values.append({"delta": {}, "finish": reason})
        if reason == "length" and has_calls:
            used.add("tool_call_cut_by_length")
    last_timings = draw_timings(draw, used, predicted)
    if timing_policy != "none":
        values[-1]["timings"] = last_timings
    if rarely(draw, 5):
        used.add("chunks_after_finish")
        after = draw(sampled(("timings", "text", "reasoning")))
        if after == "timings":
            values.append({"delta": {}, "timings": draw_timings(draw, used, predicted + 1)})
        else:
            key = "content" if after == "text" else "reasoning_content"
            values.append({"delta": {key: text(draw, used)}, "timings": timings_now()})
    if rarely(draw, 2):
        used.add("usage_chunk")
        usage: dict[str, Any] = {
            "completion_tokens": predicted,
            "prompt_tokens": 12,
            "total_tokens": predicted + 12,
        }
        values.append({"usage": usage, "timings": last_timings if draw(BOOLEANS) else None})
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
    if rarely(draw, 7):
        # a mid-stream server error: llama-server sends it and closes the stream
        at = int(draw(ints(0, len(chunks))))
        error: dict[str, Any] = {"code": 500, "type": "server_error"}
        message = draw(sampled(("absent", None, "Internal error", "context exceeded: \u00e9", "")))
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
        if rarely(draw, 2):
            _add_neighbours(draw, levels, used)
    capped = rarely(draw, 5)
    if capped:
        used.add("thinking_capped")
    return chunks, used, capped


def _style(draw: Draw, used: set[str]) -> Style:
    ascii = bool(draw(BOOLEANS))
    if ascii:
        used.add("escaped_text")
    if not rarely(draw, 4):
        return Style(ascii=ascii)
    used.add("json_whitespace")
    item = str(draw(sampled((", ", ",\n", " ,\t"))))
    key = str(draw(sampled((": ", " : ", ":\n"))))
    if "\n" in item or "\n" in key:
        used.add("sse_multiline_data")
    return Style(ascii=ascii, item=item, key=key)


@st.composite
def streams(draw: Draw, broken: bool | None = False) -> Stream:
    """A llama-server stream; with `broken=True` broken in one place, with None either."""
    chunks, used, capped = draw(_chunks())
    if broken is None:  # one in two broken
        broken = spread(draw) % 2 == 1
    for chunk in chunks:
        if "error" not in chunk and rarely(draw, 9):
            respell(draw, chunk, used)
    how = ""
    texts: list[str | None] = [None] * len(chunks)
    if broken:
        at = int(draw(ints(0, len(chunks))))
        if at == len(chunks):
            chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": None}]})
            texts.append(None)
        if draw(BOOLEANS):
            how = wrong_shape(draw, chunks[at])
            used.add(WRONG_FEATURES[how])
        else:
            how, breaker = uniform(draw, NOT_JSON)
            texts[at] = breaker(dump(chunks[at]))
            used.add(NOT_JSON_FEATURES.get(how, "not_json"))
    payloads = []
    for chunk, fixed in zip(chunks, texts, strict=True):
        payloads.append(fixed if fixed is not None else dump(chunk, _style(draw, used)))
    # SSE framing
    count = len(payloads) + 1
    line_end = str(draw(sampled(("\n", "\n", "\n", "\r\n", "\r"))))
    if line_end != "\n":
        used.add("sse_line_ends")
    pings = frozenset(draw(sets_of(ints(0, count - 1), 2)))
    if pings:
        used.add("sse_comments")
    other = frozenset(draw(sets_of(ints(0, count - 1), 1)) if rarely(draw, 5) else ())
    if other:
        used.add("sse_other_fields")
    space = not rarely(draw, 5)
    if not space:
        used.add("sse_no_space")
    done = not rarely(draw, 4)
    if done:
        used.add("done")
    unterminated = rarely(draw, 7)
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
