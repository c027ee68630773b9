"""Making any value a target returns safe to print and to write: escaped, capped, and saying so.

A target may hand back text no terminal, UTF-8 file or XML document can hold (a lone surrogate, a
NUL, an ANSI escape), strings of megabytes, or structures nested thousands of levels deep. Every
reporter passes what it shows through here, so a report never breaks and never floods:

- `printable` escapes lone surrogates (`\\udc80`), C0 and C1 controls and DEL (`\\x1b`), line and
  paragraph separators, bidirectional controls and the BOM (`\\u202e`, `\\ufeff`) in a line of text;
- `capped` copies a JSON value with long strings shortened and deep containers cut, each cut
  saying how much it removed (`… (10,000,000 chars, 9,998,000 cut)`), without recursion;
- `quoted` is a payload or string as a JSON string literal, shortened with its size.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

#: Characters kept of a string in the reports written to files (JSON, JUnit, GitHub summary).
FILE_STRING_CHARS = 2_000
#: Levels of nesting kept in those reports; deeper containers become a note.
FILE_DEPTH = 32
#: Characters of a pushed payload quoted in text output.
PAYLOAD_CHARS = 1_000

# Besides C0, DEL, C1 and lone surrogates: characters that break a line where a terminal or an
# editor sees one (U+2028, U+2029), reorder what follows (the bidirectional controls of Unicode's
# "Trojan Source" warning, U+061C, U+200E/F, U+202A-E, U+2066-9) or hide (a BOM, U+FEFF).
_INVISIBLE = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff"
_UNPRINTABLE = re.compile(f"[\x00-\x08\x0b-\x1f{_INVISIBLE}]")
_UNPRINTABLE_OR_LINE = re.compile(f"[\x00-\x08\x0a-\x1f{_INVISIBLE}]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, keep_lines: bool = False) -> str:
    """`text` with lone surrogates, control characters, line separators, bidirectional controls
    and the BOM escaped; tab always kept, LF with `keep_lines` (else escaped too, so that one
    value stays on one line)."""
    pattern = _UNPRINTABLE if keep_lines else _UNPRINTABLE_OR_LINE
    return pattern.sub(_escape, text)


def json_safe(text: str) -> str:
    """JSON text with any lone surrogate written as its `\\uXXXX` escape, so it encodes as UTF-8.

    `json.dumps(..., ensure_ascii=False)` leaves a lone surrogate as a raw character; it can only
    stand inside a string there, where its escape means the same.
    """
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def cut_note(total: int, kept: int, unit: str = "chars") -> str:
    """`… (10,000,000 chars, 9,998,000 cut)`."""
    return f"… ({total:,} {unit}, {total - kept:,} cut)"


def shorten_with_size(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, ending with a note of its size when cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + cut_note(len(text), limit)


def _depth_below(value: Any) -> int:
    """How many levels of containers `value` holds (0 for a scalar), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            deepest = max(deepest, depth + 1)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            deepest = max(deepest, depth + 1)
            stack.extend((v, depth + 1) for v in item)
    return deepest


_LONGEST_INT_BITS = 4096  # longer integers are described, not written (Python caps int -> str)
#: Non-finite numbers as JSON writers that allow them spell them (`NaN`, not Python's `nan`).
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _leaf(value: Any, chars: int, finite: bool = True) -> Any:
    if isinstance(value, str):
        return shorten_with_size(value, chars)
    if isinstance(value, float) and not math.isfinite(value):
        return _NON_FINITE[repr(value)] if finite else value
    if isinstance(value, int) and value.bit_length() > _LONGEST_INT_BITS:  # str() would refuse it
        return f"(an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits)"
    if value is None or isinstance(value, bool | int | float):
        return value
    try:
        text = repr(value)
    except Exception as exc:  # a foreign object whose repr fails, or recurses
        text = f"<{type(value).__name__}: repr failed with {type(exc).__name__}>"
    return shorten_with_size(text, chars)


def capped(
    value: Any, *, chars: int = FILE_STRING_CHARS, depth: int = FILE_DEPTH, finite: bool = True
) -> Any:
    """A copy of `value` that JSON can hold and that stays small.

    Strings beyond `chars` are shortened (with their size), containers below `depth` levels are
    replaced by a note of how many levels were cut, keys become strings, non-finite numbers and
    foreign objects their repr. Works with a stack, so any depth is fine. Non-finite numbers
    become the strings "NaN", "Infinity" and "-Infinity", or stay numbers when not `finite`.
    """
    root: list[Any] = [None]
    # (value, container to fill, key or index in it, its depth)
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
    while stack:
        item, parent, key, level = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if level >= depth:
                parent[key] = f"… ({_depth_below(item):,} more levels cut)"
                continue
            if isinstance(item, Mapping):
                copy: Any = {}
                for k, v in item.items():
                    name = _leaf(k, chars) if not isinstance(k, str) else k
                    name = shorten_with_size(str(name), chars)
                    copy[name] = None
                    stack.append((v, copy, name, level + 1))
            else:
                copy = [None] * len(item)
                stack.extend((v, copy, i, level + 1) for i, v in enumerate(item))
            parent[key] = copy
        else:
            parent[key] = _leaf(item, chars, finite)
    return root[0]


def dumps(value: Any, *, indent: int | None = None) -> str:
    """`value` (already `capped`) as JSON text that UTF-8 can hold."""
    return json_safe(json.dumps(value, ensure_ascii=False, indent=indent))


def quoted(text: str, limit: int = PAYLOAD_CHARS) -> str:
    """`text` as a JSON string literal (every character visible), shortened with its size."""
    literal = json.dumps(text[:limit], ensure_ascii=False)
    if len(text) > limit:
        literal += " " + cut_note(len(text), limit)
    return json_safe(literal)


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"

    def __reduce__(self) -> str:
        return "ABSENT"  # unpickled as this module's one marker, so that `is ABSENT` holds


#: Stands for a field one side does not have (the comparison's marker; shown as `(absent)`).
ABSENT: Any = _Absent()

#: How many characters a quoted value may take in a text report line.
SHOWN_CHARS = 300


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """A value as JSON on one line, shortened to `limit` characters: the one way reports, errors
    and baselines quote a value."""
    if value is ABSENT:
        return "(absent)"
    # Capped first: a 10 MB string or a 10,000-level list costs no more than a short one.
    try:
        # NaN stays a number, shown bare as JSON writers that allow it do (`got NaN`).
        short = capped(value, chars=limit, depth=max(limit // 8, 4), finite=False)
        text = json.dumps(short, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return shorten(text, limit)


#: How many characters each value may take in a one-line account of a mismatch (a JUnit message, a
#: GitHub annotation, an expected-failures reason).
ONE_LINE_CHARS = 80


def expected_got(expected: Any, actual: Any, limit: int = SHOWN_CHARS) -> str:
    """`expected X, got Y`, each value `shown`: the one wording of a mismatch in every report."""
    return f"expected {shown(expected, limit)}, got {shown(actual, limit)}"


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the last one an ellipsis when anything was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
