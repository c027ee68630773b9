"""Rewriting a JSON text without changing what it means, working on the original text's tokens.

A mode rewrites only what it means to change and copies every other character, so numbers keep
their exact text and strings their exact escapes. A payload is rewritten only when changing its
text cannot change its meaning under any reading docs/spec.md allows (`rewritable`): one RFC 8259
text (no `NaN` or `Infinity`, no unpaired surrogate escape, nothing after the value) nested at most
`MAX_DEPTH` levels. Anything else, invalid JSON included, is pushed as it was, since its only
meaning is the error it must cause. msgspec's untyped decoder is the check, several times faster
than `json.loads`; what it refuses is asked again of `json.loads`, which also takes numbers beyond
a double's range (valid JSON, and fine in ignored fields).

Each rewrite is one pass over the tokens (found by one regular expression, possessive so that a
long string of escapes is scanned once) with the generator's draws made in the order and number
the first version made them (`tests/check/test_mutation_oracle.py`): a payload is the same text
for the same seed across versions.
"""

from __future__ import annotations

import json
import random
import re
from itertools import accumulate
from json.encoder import encode_basestring
from typing import Any, Final

import msgspec

#: Nesting beyond this is a protocol error (docs/spec.md); such payloads are never rewritten.
MAX_DEPTH = 128

_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
#: The tokens of a valid JSON text, white space skipped (strings first would be slower: most
#: tokens are punctuation).
_SOLID = re.compile(r"[{}\[\],:]|" + _STRING + r'|[^ \t\n\r"{}\[\],:]+')
#: The same with the runs of white space as tokens of their own.
_TOKEN = re.compile(r"[{}\[\],:]|" + _STRING + r'|[^ \t\n\r"{}\[\],:]+|[ \t\n\r]+')
_STRINGS = re.compile(_STRING)
_STRINGS_SPLIT = re.compile(f"({_STRING})")
#: A text with this many backslashes is tokenized on a copy whose escaped backslashes and quotes
#: are blanked, two characters for two: its strings then hold no escape for the pattern to step
#: through (a 1 MiB tool call's arguments hold 38,000), and each token is the same slice of both.
_MANY_ESCAPES = 4096
_PLAIN_STRING = r'"[^"]*+"'
_PLAIN_TOKEN = re.compile(r"[{}\[\],:]|" + _PLAIN_STRING + r'|[^ \t\n\r"{}\[\],:]+|[ \t\n\r]+')
_PLAIN_SPLIT = re.compile(f"({_PLAIN_STRING})")
#: What `with_keys_shuffled` moves: the brackets and commas, each string, and each run of anything
#: else (colons, numbers, literals, white space), which stays where it is.
_PIECES = re.compile(r"[{}\[\],]|" + _STRING + r'|[^{}\[\],"]++')
_PLAIN_PIECES = re.compile(r"[{}\[\],]|" + _PLAIN_STRING + r'|[^{}\[\],"]++')
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_BRACKETS = re.compile(r"[\[\]{}]")
_WHITE = frozenset(" \t\n\r")
_OPEN = frozenset("{[")
#: What the `whitespace` mode puts between tokens: nothing, or runs of all four JSON white spaces.
_GAPS = ("", "", "", " ", "  ", "\t", "\n", "\r", "\r\n", " \n\t", "\n\n  ", "\t\r ", "\n ")


#: What `decoded` returns for a text that `rewritable` refuses or msgspec cannot decode.
REFUSED: Final = object()


def _too_deep(data: str) -> bool:
    return data.count("{") + data.count("[") > MAX_DEPTH and _depth(data) > MAX_DEPTH


def rewritable(data: str) -> bool:
    """True when `data` is one JSON text whose text may be rewritten without changing meaning."""
    if _too_deep(data):
        return False
    try:
        msgspec.json.decode(data)
    except (RecursionError, UnicodeEncodeError):  # a raw lone surrogate: not UTF-8, not JSON text
        return False
    except msgspec.DecodeError:
        return _rewritable_slowly(data)
    return True


def decoded(data: str) -> Any:
    """msgspec's value of `data` when it is `rewritable` and msgspec takes it, else `REFUSED`.

    One decode where `rewritable` and then `msgspec.json.decode` would make two: what msgspec
    refuses and the stdlib takes (`1e400`) cannot be written back from a msgspec value anyway.
    """
    if _too_deep(data):
        return REFUSED
    try:
        return msgspec.json.decode(data)
    except (RecursionError, UnicodeEncodeError, msgspec.DecodeError):
        return REFUSED


def _reject(name: str) -> None:
    raise ValueError(name)


def _rewritable_slowly(data: str) -> bool:
    """The check again with the stdlib, which unlike msgspec takes numbers like `1e400`."""
    try:
        json.loads(data, parse_constant=_reject)
    except (ValueError, RecursionError):
        return False
    return not any(_unpaired(match.group()) for match in _STRINGS.finditer(data))


def _unpaired(token: str) -> bool:
    """True when a string token holds an escaped surrogate that is not half of a pair."""
    if not _SURROGATE_ESCAPE.search(token):
        return False
    try:
        json.loads(token).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _depth(data: str) -> int:
    """How deep `data` nests at the end, or at the first point deeper than `MAX_DEPTH`."""
    depth = 0
    for match in _BRACKETS.finditer(_STRINGS.sub("", data)):
        if match.group() in _OPEN:
            depth += 1
            if depth > MAX_DEPTH:
                break
        else:
            depth -= 1
    return depth


def colons(data: str) -> int:
    """The colons outside strings: in a valid JSON text, the number of object members."""
    return _STRINGS.sub("", data).count(":")


def _decoded(token: str) -> str:
    text: str = json.loads(token) if "\\" in token else token[1:-1]
    return text


def shuffle(rng: random.Random, items: list[Any]) -> None:
    """`rng.shuffle(items)`, with the same draws, faster for a plain `random.Random`."""
    if type(rng) is not random.Random:
        rng.shuffle(items)
        return
    getrandbits = rng.getrandbits
    for i in range(len(items) - 1, 0, -1):
        n = i + 1
        k = n.bit_length()
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        items[i], items[j] = items[j], items[i]


def _blanked(data: str, *, checked: bool) -> str | None:
    """`data` with each escaped backslash and quote as two control characters (which a JSON text
    cannot hold raw), for a `rewritable` text with many escapes (`checked`: known to be one); None
    for any other text."""
    if data.count("\\") < _MANY_ESCAPES or "\x00" in data or "\x01" in data:
        return None
    if not checked and not rewritable(data):  # where a string token ends: in JSON text only
        return None
    return data.replace("\\\\", "\x00\x00").replace('\\"', "\x01\x01")


def _same_slices(data: str, pieces: list[str]) -> list[str] | None:
    """The slices of `data` as long as `pieces`, one after the other; None unless they fill it."""
    ends = list(accumulate(map(len, pieces)))
    if not ends or ends[-1] != len(data):
        return None
    return list(map(data.__getitem__, map(slice, [0, *ends[:-1]], ends)))


def _found(
    data: str, blanked: str | None, full: re.Pattern[str], plain: re.Pattern[str]
) -> list[str]:
    """`full.findall(data)`, found by `plain` in `blanked` if there is one."""
    if blanked is not None:
        found = _same_slices(data, plain.findall(blanked))
        if found is not None:
            return found
    return full.findall(data)


def _tokens(data: str, blanked: str | None) -> list[str]:
    """`_TOKEN.findall(data)`, found in `blanked` if there is one."""
    return _found(data, blanked, _TOKEN, _PLAIN_TOKEN)


def _pieces(data: str, blanked: str | None) -> list[str]:
    """`_PIECES.findall(data)`, found in `blanked` if there is one."""
    return _found(data, blanked, _PIECES, _PLAIN_PIECES)


def with_whitespace(data: str, rng: random.Random, *, checked: bool = False) -> str:
    """The text with random white space (space, tab, LF, CR) between all tokens and around
    (`checked`: the caller found `data` `rewritable`)."""
    blanked = _blanked(data, checked=checked)
    if blanked is None:
        solid = _SOLID.findall(data)
    else:  # in a JSON text, _SOLID's tokens are _TOKEN's but the white space
        solid = [token for token in _tokens(data, blanked) if token[0] not in _WHITE]
    gaps = rng.choices(_GAPS, k=len(solid) + 1)
    if len(solid) > 1 and "\n" not in "".join(gaps):
        gaps[rng.randrange(1, len(solid))] = "\n"  # every payload of two tokens or more gets one
    # gap, token, gap, ..., token, gap: laid out by two slice assignments, not a step per token
    text = gaps + solid
    text[::2] = gaps
    text[1::2] = solid
    return "".join(text)


#: Characters `encode_basestring` escapes besides `"` and `\` (which a string token's body holds
#: only escaped): in a token without these or a backslash, the characters are written as they are.
_CONTROL = re.compile(r"[\x00-\x1f]")
#: Runs at least this long are escaped a whole buffer at a time rather than by `translate`.
_LONG_RUN = 64


def with_escapes(data: str, rng: random.Random, *, checked: bool = False) -> str:
    """The text with a random run of every string's characters (keys too) `\\u` escaped.

    The run is one to a third of the string's characters, at a random place; one run per string
    (rather than scattered characters) keeps this mode's cost near the others'. `checked`: the
    caller found `data` `rewritable`.
    """
    # the text between the strings, then each string token
    blanked = _blanked(data, checked=checked)
    parts = None if blanked is None else _same_slices(data, _PLAIN_SPLIT.split(blanked))
    if parts is None:
        parts = _STRINGS_SPLIT.split(data)
    getrandbits = rng.getrandbits
    printable = data.isprintable()  # no control character in any token (and no white space)
    for at in range(1, len(parts), 2):
        token = parts[at]
        # A token with no escape and no control character is " + its characters + ", which
        # encode_basestring writes back as they were: its pieces are slices of it.
        verbatim = "\\" not in token and (
            printable or token.isprintable() or not _CONTROL.search(token)
        )
        size = len(token) - 2 if verbatim else len(text := _decoded(token))
        if not size:
            continue
        bits = getrandbits(48)  # one draw for the run's length, place and hex case
        length = 1 + bits % (size // 3 + 1) if size > 2 else size
        start = (bits >> 16) % (size - length + 1)
        end = start + length
        run = token[start + 1 : end + 1] if verbatim else text[start:end]
        if length < _LONG_RUN:
            kept = _RUNS[bits >> 47]  # most runs are a few characters of a key met before
            escaped = kept.get(run)
            if escaped is None:
                escaped = run.translate(_ESCAPES[bits >> 47])
                if len(kept) < _RUNS_KEPT:
                    kept[run] = escaped
        else:
            escaped = _escaped_long(run, upper=bits >> 47 == 1)
        if verbatim:
            parts[at] = token[: start + 1] + escaped + token[end + 1 :]
        else:
            head = encode_basestring(text[:start])[:-1]
            parts[at] = head + escaped + encode_basestring(text[end:])[1:]
    return "".join(parts)


def _escaped_long(run: str, *, upper: bool) -> str:
    """What `_ESCAPES` makes of a long `run`: each UTF-16 code unit as `\\u` and four hex digits,
    laid out by slice assignments over the whole run (surrogate pairs outside the BMP)."""
    hexes = run.encode("utf-16-be", "surrogatepass").hex().encode("ascii")
    if upper:
        hexes = hexes.upper()
    units = len(hexes) // 4
    out = bytearray(6 * units)
    out[0::6] = b"\\" * units
    out[1::6] = b"u" * units
    for digit in range(4):
        out[2 + digit :: 6] = hexes[digit::4]
    return out.decode("ascii")


class _EscapeTable(dict[int, str]):
    """A `str.translate` table from each character to its `\\u` escape, filled as met."""

    def __init__(self, form: str) -> None:
        super().__init__()
        self.form = form

    def __missing__(self, code: int) -> str:
        form = self.form
        if code > 0xFFFF:  # outside the BMP: a surrogate pair
            low = code - 0x10000
            value = form % (0xD800 + (low >> 10)) + form % (0xDC00 + (low & 0x3FF))
        else:
            value = form % code
        self[code] = value
        return value


_ESCAPES = (_EscapeTable("\\u%04x"), _EscapeTable("\\u%04X"))
#: Short runs already escaped, in lower and in upper case, up to `_RUNS_KEPT` of each.
_RUNS: tuple[dict[str, str], dict[str, str]] = ({}, {})
_RUNS_KEPT = 1 << 16
#: The tokens that open, close or separate; every other token is copied into the member or
#: element it is in.
_STRUCTURE = frozenset("{}[],")


def with_keys_shuffled(data: str, rng: random.Random, *, checked: bool = False) -> str:
    """The text with every object's members in a random order, at every depth.

    A member keeps its own white space; members with the same key (compared decoded, so `"a"` and
    `"\\u0061"` are one key) keep their order among themselves, so whichever reading of duplicate
    keys a target has, last wins or all validated, means the same. Objects are shuffled in the
    order they close. `data` must be one JSON text (`rewritable`; `checked`: found so by the
    caller).
    """
    if "{" not in data:
        return data
    # One pass over the tokens with a stack of the containers open around them: in an object,
    # `members` holds the finished members and `parts` the current one; in an array (members is
    # None), `parts` is the array's text so far.
    parts: list[str] = []
    members: list[str] | None = None
    keys: list[str] = []
    key: str | None = None
    stack: list[tuple[list[str], list[str] | None, list[str], str | None]] = []
    for token in _pieces(data, _blanked(data, checked=checked)):
        if token[0] not in _STRUCTURE:  # not `token in`: that would hash a long string
            if key is None and members is not None and token[0] == '"':
                key = token
            parts.append(token)
        elif token == ",":
            if members is None:
                parts.append(token)
            else:
                if key is not None or parts:
                    members.append("".join(parts))
                    keys.append(key if key is not None else '""')
                parts, key = [], None
        elif token == "{":
            stack.append((parts, members, keys, key))
            parts, members, keys, key = [], [], [], None
        elif token == "[":
            stack.append((parts, members, keys, key))
            parts, members, key = ["["], None, None
        elif token == "]":
            parts.append("]")
            text = "".join(parts)
            parts, members, keys, key = stack.pop()
            parts.append(text)
        else:  # "}"
            assert members is not None
            if key is not None or parts:  # a member, or the white space of an empty object
                members.append("".join(parts))
                keys.append(key if key is not None else '""')
            text = "{" + ",".join(_shuffled(members, keys, rng)) + "}"
            parts, members, keys, key = stack.pop()
            parts.append(text)
    return "".join(parts)


def _shuffled(members: list[str], keys: list[str], rng: random.Random) -> list[str]:
    """`members` in a random order, those with the same decoded key in their own order."""
    if len(members) < 2:
        return members
    order = list(range(len(members)))
    shuffle(rng, order)
    if len(set(keys)) == len(keys) and "\\" not in "".join(keys):
        return [members[i] for i in order]  # distinct as written and unescaped: distinct decoded
    decoded_keys = [_decoded(k) for k in keys]
    if len(set(decoded_keys)) == len(keys):
        return [members[i] for i in order]
    same_key: dict[str, list[int]] = {}
    for i, k in enumerate(decoded_keys):
        same_key.setdefault(k, []).append(i)
    for pending in same_key.values():
        pending.reverse()
    return [members[same_key[decoded_keys[i]].pop()] for i in order]
