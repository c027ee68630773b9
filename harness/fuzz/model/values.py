"""The values the stream model draws: texts (plain, Unicode, NUL, long, huge), tool-call
arguments and how they split, timings and prompt progress, and the draw helpers every part of the
model shares (rare features from mixed integers, since hypothesis favours small values)."""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

Draw = st.DrawFn


@functools.cache
def ints(low: int, high: int) -> st.SearchStrategy[int]:
    """`st.integers`, each made once: building strategies costs more than drawing from them."""
    return st.integers(low, high)


#: `st.booleans()`, made once (hypothesis caches it too, at a cost on every call).
BOOLEANS = st.booleans()


@functools.cache
def _lists(
    of: st.SearchStrategy[Any], low: int, high: int | None = None
) -> st.SearchStrategy[list[Any]]:
    """`st.lists`, each made once (as `ints`)."""
    return st.lists(of, min_size=low, max_size=high)


@functools.cache
def sets_of(of: st.SearchStrategy[Any], high: int | None = None) -> st.SearchStrategy[Any]:
    """`st.sets`, each made once (as `ints`)."""
    return st.sets(of, max_size=high)


def sampled(values: Sequence[Any]) -> st.SearchStrategy[Any]:
    """`st.sampled_from`, made once per tuple of hashable values."""
    try:
        return _cached_pick(tuple(values))
    except TypeError:  # values that are dicts or lists
        return st.sampled_from(values)


@functools.cache
def _cached_pick(values: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(values)


def uniform(draw: Draw, values: Sequence[Any]) -> Any:
    """One of `values`, about equally often: hypothesis favours the first of a `sampled_from`,
    which would leave the last breakers of a long list untried in a short run. A 32-bit integer,
    its bits mixed (hypothesis favours small ones too), spreads the picks, and still shrinks (to
    the smallest integer that picks the same value)."""
    return values[spread(draw) % len(values)]


def spread(draw: Draw) -> int:
    """An integer whose residues are about equally likely: hypothesis favours small integers,
    so its bits are mixed (0, the value it shrinks to, stays 0)."""
    return (int(draw(ints(0, 2**32 - 1))) * 0x9E3779B1 % 2**32) >> 8


def rarely(draw: Draw, odds: int) -> bool:
    """True once in `odds + 1` draws; shrinks to False, so a shrunk stream loses the feature."""
    return spread(draw) % (odds + 1) == odds


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
    if rarely(draw, 30):
        used.add("long_text")
        return str(draw(sampled(_WORDS))) * int(draw(ints(300, 3000)))
    kind = draw(sampled(("word", "word", "word", "chars", "edge")))
    if kind == "word":
        return str(draw(sampled(_WORDS)))
    if kind == "chars":
        text = str(draw(st.text(_CHARS, min_size=1, max_size=12)))
        if any(ord(c) > 0xFFFF or not c.isascii() for c in text):
            used.add("unicode_text")
        if any(ord(c) < 0x20 for c in text):
            used.add("nul_in_text")
        return text
    text = str(draw(sampled(_EDGE_TEXT)))
    used.add("nul_in_text" if any(ord(c) < 0x20 for c in text) else "unicode_text")
    return text


def text(draw: Draw, used: set[str]) -> str:
    """A non-empty text piece: words mostly, any Unicode, control characters, long runs."""
    return _text_kind(draw, used)


_ARGUMENT_OBJECTS = st.dictionaries(
    sampled(("path", "city", "query", "n", "files", "a")),
    st.one_of(ints(-5, 99), sampled(("a.txt", "Paris", "é", "x y"))),
    max_size=3,
)


def draw_arguments(draw: Draw, used: set[str]) -> str:
    """A tool call's whole arguments text (JSON mostly, as models write it)."""
    if rarely(draw, 60):
        used.add("huge_payload")
        return '{"content":"' + "x" * int(draw(sampled((70_000, 140_000)))) + '"}'
    kind = draw(sampled(("object", "object", "empty", "number", "text")))
    if kind == "object":
        value = draw(_ARGUMENT_OBJECTS)
        return json.dumps(value, ensure_ascii=bool(draw(BOOLEANS)))
    if kind == "empty":
        return str(draw(sampled(("", "{}"))))
    if kind == "number":
        return str(draw(sampled(("12", "1", "[1,2]", "true", "null"))))
    return text(draw, used)


def split_text(draw: Draw, whole: str, pieces: int) -> list[str]:
    """`whole` cut into `pieces` parts at any characters (empty parts allowed)."""
    if pieces <= 1:
        return [whole]
    cuts = sorted(draw(_lists(ints(0, len(whole)), pieces - 1, pieces - 1)))
    bounds = [0, *cuts, len(whole)]
    return [whole[a:b] for a, b in itertools.pairwise(bounds)]


def draw_timings(draw: Draw, used: set[str], predicted: int) -> dict[str, Any]:
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
    if draw(BOOLEANS):
        values |= {"draft_n": 4, "draft_n_accepted": 3}
    if rarely(draw, 4):
        used.add("timings_partial")
        kept = draw(sets_of(sampled(names)))
        values = {k: v for k, v in values.items() if k in kept}
        if draw(BOOLEANS):
            values["predicted_n"] = None
            used.add("predicted_n_null")
        if not values:
            used.add("empty_objects")
    if values.get("predicted_n") == 0 or values.get("cache_n") == 0:
        used.add("zero_counts")
    return values


def draw_progress(draw: Draw, used: set[str]) -> dict[str, Any]:
    total = int(draw(ints(0, 4096)))
    cache = int(draw(ints(0, total)))
    processed = int(draw(ints(cache, total)))
    progress: dict[str, Any] = {
        "total": total,
        "cache": cache,
        "processed": processed,
        "time_ms": int(draw(ints(0, 900))),
    }
    if rarely(draw, 5):
        kept = draw(sets_of(sampled(tuple(progress))))
        progress = {k: v for k, v in progress.items() if k in kept}
        if not progress:
            used.add("empty_objects")
    if 0 in progress.values():
        used.add("zero_counts")
    used.add("prompt_progress")
    return progress
