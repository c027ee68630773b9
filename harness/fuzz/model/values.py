"""The values the stream model draws: texts (words, any Unicode, control characters, edge texts,
long runs), tool-call arguments and how they split, timings and prompt progress."""

from __future__ import annotations

import itertools
from typing import Any

from harness.fuzz.model.draw import Draw
from harness.fuzz.model.jsonwrite import COMPACT, Style, dump

WORDS = ("Hello", " world", ".", " The", " answer", " is", " 4", "\n", " ", "Let", " me", " think")
#: Texts that break clients which look inside text: control characters, NUL, surrogate pairs,
#: combining marks, right-to-left text, JSON and HTML syntax, escapes that are only text.
EDGE_TEXT = (
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
    "\t",
)
#: Texts that look like something else to a client that reads meaning into text (issue 34), by
#: feature: a speaker tag or chat-template token, the event stream's own syntax, think tags and
#: white space. Each is a JSON string inside one `data:` line, kept whole.
LOOKALIKE_TEXT: dict[str, tuple[str, ...]] = {
    "role_prefix_text": (
        "assistant: ",
        "Assistant: Hi",
        "assistant:",
        "user: hi",
        "<|im_start|>assistant\n",
        "### Assistant: ",
        "<|eot_id|>",
    ),
    "sse_syntax_in_text": (
        "[DONE]",
        "data: [DONE]",
        "data:[DONE]",
        "\n\ndata: {",
        'data: {"x":1}',
        "\n: ping\n",
        "event: error\n",
    ),
    "tagged_or_padded_text": (
        "<think>",
        "</think>",
        "<think>Plan.</think>Answer ",
        "<think></think>",
        "Sure. <think>hm</think>",
        "  ",
        "\n\t",
        " padded ",
        "\r\n",
    ),
}
_LOOKALIKES = tuple(LOOKALIKE_TEXT)
#: Text features: any Unicode, control characters, look-alikes, long runs.
_CODE_POINT_RANGES = (
    (0x20, 0x7E),
    (0xA0, 0x2FF),
    (0x300, 0x36F),
    (0x370, 0x1FFF),
    (0x2000, 0x206F),
    (0x3000, 0x9FFF),
    (0xE000, 0xFFFF),
    (0x10000, 0x10FFFF),
    (0x00, 0x1F),
)


def _char(draw: Draw) -> str:
    low, high = draw.pick(_CODE_POINT_RANGES)
    return chr(draw.between(low, high))


def text(draw: Draw, used: set[str]) -> str:
    """A non-empty text piece: words mostly, any Unicode, control characters, look-alikes,
    long runs."""
    if draw.once(200, "long_text"):
        used.add("long_text")
        return draw.pick(WORDS) * draw.between(300, 1500)
    wanted = [name for name in _LOOKALIKES if name in draw.wanted]
    if wanted or draw.rarely(12):
        name = draw.pick(wanted or _LOOKALIKES)
        used.add(name)
        return draw.pick(LOOKALIKE_TEXT[name])
    roll = draw.below(8)
    if roll < 5:
        return draw.pick(WORDS)
    if roll < 7 or draw.wants("unicode_text") or draw.wants("nul_in_text"):
        chars = "".join(_char(draw) for _ in range(draw.between(1, 12)))
        if draw.wants("nul_in_text") and not any(ord(c) < 0x20 for c in chars):
            chars += draw.pick(("\x00", "\x1f", "\x07"))
        if any(ord(c) > 0x7F for c in chars):
            used.add("unicode_text")
        if any(ord(c) < 0x20 for c in chars):
            used.add("nul_in_text")
        return chars
    chars = draw.pick(EDGE_TEXT)
    used.add("nul_in_text" if any(ord(c) < 0x20 for c in chars) else "unicode_text")
    return chars


_ARGUMENT_KEYS = ("path", "city", "query", "n", "files", "a")
_ARGUMENT_VALUES: tuple[Any, ...] = (-5, 0, 7, 99, "a.txt", "Paris", "é", "x y")
#: A payload above a client's buffer: 64 KiB (bufio.Scanner's default), 1 MiB (a raised one).
HUGE_SIZES = (70_000, 140_000, 1_100_000)


#: How models write arguments: compact, or as Python's json.dumps does (spaced), ASCII or not.
_ARGUMENT_STYLES = (
    COMPACT,
    Style(ascii=True),
    Style(item=", ", key=": "),
    Style(ascii=True, item=", ", key=": "),
)


def arguments(draw: Draw, used: set[str]) -> str:
    """A tool call's whole arguments text (JSON mostly, as models write it)."""
    if draw.once(600, "huge_payload"):
        used.add("huge_payload")
        # wanted: above 1 MiB (a raised buffer too); else above 64 KiB, a buffer's default
        size = HUGE_SIZES[-1] if draw.wants("huge_payload") else draw.pick(HUGE_SIZES[:2])
        return '{"content":"' + "x" * size + '"}'
    kind = draw.below(6)
    if kind < 3:
        value = {
            draw.pick(_ARGUMENT_KEYS): draw.pick(_ARGUMENT_VALUES) for _ in range(draw.below(4))
        }
        return dump(value, draw.pick(_ARGUMENT_STYLES))
    if kind == 3:
        return draw.pick(("", "{}"))
    if kind == 4:
        return draw.pick(("12", "1", "[1,2]", "true", "null", '{"a":', "{'a': 1}"))
    return text(draw, used)


def split_text(draw: Draw, whole: str, pieces: int) -> list[str]:
    """`whole` cut into `pieces` parts at any characters (empty parts allowed)."""
    if pieces <= 1:
        return [whole]
    bounds = [0, *draw.cuts(len(whole), pieces - 1), len(whole)]
    return [whole[a:b] for a, b in itertools.pairwise(bounds)]


TIMINGS_NAMES = (
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


def timings(draw: Draw, used: set[str], predicted: int) -> dict[str, Any]:
    """A timings object whose predicted_n is `predicted`, sometimes partial or with nulls."""
    values: dict[str, Any] = {
        "cache_n": draw.pick((0, 0, 3, 17)),
        "prompt_n": 12,
        "prompt_ms": 35.2,
        "prompt_per_token_ms": 2.93,
        "prompt_per_second": 340.9,
        "predicted_n": predicted,
        "predicted_ms": draw.pick((120.5, 0.0, 7.25, 1e-3)),
        "predicted_per_token_ms": 12.05,
        "predicted_per_second": draw.pick((83.0, 83.33333333333333, 1e20)),
    }
    if draw.coin():
        values |= {"draft_n": 4, "draft_n_accepted": 3}
    if (
        draw.rarely(4, "timings_partial")
        or draw.wants("predicted_n_null")
        or draw.wants("empty_objects")
    ):
        used.add("timings_partial")
        values = {k: v for k, v in values.items() if draw.coin()}
        if draw.rarely(1, "predicted_n_null"):
            values["predicted_n"] = None
            used.add("predicted_n_null")
        if draw.rarely(4, "empty_objects"):
            values = {}
        if not values:
            used.add("empty_objects")
    if values.get("predicted_n") == 0 or values.get("cache_n") == 0:
        used.add("zero_counts")
    return values


def progress(draw: Draw, used: set[str]) -> dict[str, Any]:
    """A prompt_progress object (counts that add up), sometimes partial or empty."""
    total = draw.pick((0, 1, 36, 4096, draw.below(5000)))
    cache = draw.between(0, total) if draw.coin() else 0
    processed = draw.between(cache, total)
    value: dict[str, Any] = {
        "total": total,
        "cache": cache,
        "processed": processed,
        "time_ms": draw.pick((0, 12, draw.below(900))),
    }
    if draw.wants("empty_objects"):
        value = {}
    elif draw.rarely(5):
        value = {k: v for k, v in value.items() if draw.coin()}
        if not value:
            used.add("empty_objects")
    if 0 in value.values():
        used.add("zero_counts")
    used.add("prompt_progress")
    return value
