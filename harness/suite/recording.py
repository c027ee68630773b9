"""Reading recordings: the `.http` head, the leading directives, and the event stream's payloads.

The event stream is read as docs/spec.md section 1 says, by the decoder live capture uses too
(`harness.suite.sse`). Payloads are yielded one at a time, so a recording of any length is read in
constant memory.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from io import BytesIO
from itertools import repeat
from operator import getitem
from pathlib import Path
from typing import cast

from harness.errors import RecordingError
from harness.files import read_small
from harness.suite.sse import EventDecoder, Payload

#: The file endings that are recordings.
RECORDING_SUFFIXES = (".http", ".sse")

_DIRECTIVE_CAPPED = "thinking_capped:"
_DIRECTIVE_PINS = "pins:"
_DIRECTIVE_SOURCE = "source:"

#: Where a recording comes from (its `source:` directive, docs/spec.md section 1): a real capture
#: from a named server version, a shape a named server is documented to send, or hand-written.
REAL, DOCUMENTED, HAND_WRITTEN = "real", "documented", "hand-written"
SOURCES = (REAL, DOCUMENTED, HAND_WRITTEN)

#: What a recording may say it pins: the rules, the implementation-defined points, and `SSE`
#: (the event-stream reading rules of docs/spec.md section 1).
PIN_TAGS = (*(f"R{n}" for n in range(1, 10)), *(f"I{n}" for n in range(1, 10)), "SSE")


@dataclass(frozen=True, slots=True)
class RecordingInfo:
    """What a recording declares in its leading comment lines."""

    thinking_capped: bool
    comments: tuple[str, ...]
    pins: tuple[str, ...] = ()  # in PIN_TAGS order
    #: Where it comes from: REAL, DOCUMENTED or HAND_WRITTEN (the default of an `.sse` file;
    #: an `.http` file, the form of a capture, is REAL unless it says otherwise).
    source: str = HAND_WRITTEN
    #: The server and version a real or documented recording names (`llama-server build 11434`).
    origin: str = ""

    @property
    def real(self) -> bool:
        """A real capture from a server: valid input that server sent."""
        return self.source == REAL


def _numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Lines without their ends (LF, CRLF or CR), numbered from 1; bad UTF-8 named by line."""
    try:
        with path.open(encoding="utf-8", newline="") as stream:
            for number, raw in enumerate(stream, start=1):
                # The line end: LF, CRLF or CR (inline: this runs twice per payload).
                if raw[-1:] == "\n":
                    yield number, raw[:-2] if raw[-2:-1] == "\r" else raw[:-1]
                else:
                    yield number, raw[:-1] if raw[-1:] == "\r" else raw
    except FileNotFoundError:
        raise RecordingError(path, "no such recording") from None
    except IsADirectoryError:
        raise RecordingError(path, "is a folder, not a recording") from None
    except UnicodeDecodeError:
        raise RecordingError(
            path,
            "not valid UTF-8",
            line=_first_bad_utf8_line(path),
            hint="recordings are UTF-8 text; re-record the case or fix its encoding",
        ) from None
    except OSError as exc:  # permissions, a vanished disk: still one line, never a traceback
        raise RecordingError(path, f"cannot be read: {exc.strerror or exc}") from None


def _first_bad_utf8_line(path: Path) -> int:
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        prefix = data[: exc.start]
        # Count line ends as the reader does: CRLF, LF and CR alone each end one line.
        return prefix.replace(b"\r\n", b"\n").replace(b"\r", b"\n").count(b"\n") + 1
    return 1


def read_info(path: Path) -> RecordingInfo:
    """The leading comment lines of a recording and the directives among them."""
    return _info_of(path, (line for _, line in _numbered_lines(path)))


def _info_of(path: Path, lines: Iterable[str], suffix: str | None = None) -> RecordingInfo:
    """`read_info` of a recording whose lines (without their ends) are `lines` (`suffix`: the
    path's, when the caller has it)."""
    comments: list[str] = []
    capped = False
    pins: set[str] = set()
    http = (path.suffix if suffix is None else suffix) == ".http"
    source, origin = (REAL if http else HAND_WRITTEN), ""
    marker = "#" if http else ":"  # what a comment line starts with
    for line in lines:
        line = line.removeprefix("\ufeff") if not comments else line
        if not line.startswith(marker):
            break
        text = line[1:].strip()
        comments.append(text)
        if text.startswith(_DIRECTIVE_CAPPED):
            value = text[len(_DIRECTIVE_CAPPED) :].strip()
            if value not in ("true", "false"):
                raise RecordingError(
                    path,
                    f"'thinking_capped:' must be followed by true or false, not {value!r}",
                    line=len(comments),
                )
            capped = value == "true"
        elif text.startswith(_DIRECTIVE_PINS):
            pins |= _pins(path, text[len(_DIRECTIVE_PINS) :], line=len(comments))
        elif text.startswith(_DIRECTIVE_SOURCE):
            source, origin = _source(path, text[len(_DIRECTIVE_SOURCE) :], line=len(comments))
    ordered = tuple(tag for tag in PIN_TAGS if tag in pins) if pins else ()  # most pin none
    return RecordingInfo(
        thinking_capped=capped,
        comments=tuple(comments),
        pins=ordered,
        source=source,
        origin=origin,
    )


def _source(path: Path, value: str, *, line: int) -> tuple[str, str]:
    """`source: real llama-server build 11434` as (REAL, "llama-server build 11434")."""
    kind, _, origin = value.strip().partition(" ")
    origin = origin.strip()
    if kind not in SOURCES:
        raise RecordingError(
            path,
            f"'source:' names {kind!r}" if kind else "'source:' names nothing",
            line=line,
            hint="write 'source: real SERVER VERSION', 'source: documented SERVER VERSION' "
            "or 'source: hand-written'",
        )
    if kind != HAND_WRITTEN and not origin:
        raise RecordingError(
            path,
            f"'source: {kind}' must name the server and its version",
            line=line,
            hint=f"e.g. 'source: {kind} llama-server build 11434'",
        )
    return kind, origin


def _pins(path: Path, value: str, *, line: int) -> set[str]:
    tags = set(value.replace(",", " ").split())
    unknown = sorted(tags - set(PIN_TAGS))
    if unknown or not tags:
        raise RecordingError(
            path,
            f"'pins:' names {', '.join(map(repr, unknown)) or 'nothing'}",
            line=line,
            hint=f"a recording pins some of {' '.join(PIN_TAGS)}",
        )
    return tags


_HTTP_LAYOUT = (
    "an .http recording is: request line, headers, blank line, body, blank line, "
    "status line, headers, blank line, event stream"
)


def _skip_http_head(path: Path, lines: Iterator[tuple[int, str]]) -> None:
    """Consume comments, the request and the response head, leaving `lines` at the body."""
    seen = 0

    def next_line(what: str) -> str:
        nonlocal seen
        for number, line in lines:
            seen = number
            return line
        if not seen:
            raise RecordingError(path, "is empty", hint=_HTTP_LAYOUT)
        raise RecordingError(path, f"the file ends before {what}", line=seen + 1, hint=_HTTP_LAYOUT)

    line = next_line("the request line")
    while line.startswith("#"):
        line = next_line("the request line")
    while line:  # the request line and headers
        line = next_line("the blank line after the request headers")
    next_line("the request body")
    if next_line("the blank line after the request body"):
        raise RecordingError(path, "the request body must be a single line", line=seen)
    line = next_line("the response status line: no response part")
    if not line.startswith("HTTP/"):
        raise RecordingError(path, "expected the response status line (HTTP/1.1 ...)", line=seen)
    while line:  # the status line and headers
        line = next_line("the blank line after the response headers")


#: Recordings up to this size (bytes) are read whole, to take the fast path below.
READ_WHOLE_BELOW = 8 * 2**20


def iter_payloads(path: Path) -> Iterator[Payload]:
    """Yield the payloads of a recording's event stream, in order, up to `[DONE]`."""
    fast = _simple_payloads(path)
    if fast is None:
        yield from _decoded_payloads(path)
    else:
        yield from fast


def read_recording(path: Path) -> tuple[RecordingInfo, list[Payload] | None]:
    """`read_info` and, for a recording of at most `READ_WHOLE_BELOW` bytes, all its payloads
    (None for a longer one, or one whose reading fails: `iter_payloads` then says why).

    A recording in the plain layout is read in one go for both; any other reads its head, then
    its payloads, as `read_info` and `iter_payloads` do.
    """
    info: list[RecordingInfo] = []  # the fast path's, when it read the head too
    payloads = _simple_payloads(path, info=info)
    if info:
        return info[0], payloads
    found = read_info(path)
    try:
        if payloads is None and path.stat().st_size <= READ_WHOLE_BELOW:
            payloads = list(_decoded_payloads(path))
    except (OSError, RecordingError):
        # Read as it goes instead, which says what is wrong where it always did (a pass that
        # stops at an error step never reads a broken line after it).
        payloads = None
    return found, payloads


def _simple_payloads(
    path: Path, *, info: list[RecordingInfo] | None = None
) -> list[Payload] | None:
    """The payloads of a recording in the plain layout, read in a few C calls; None otherwise.

    The plain layout is what llama-server sends and what most recordings hold: UTF-8, LF line
    ends, no byte order mark, and an event stream in which every event is one line followed by
    one blank line, after any comment lines at its top. Each event is then every other line
    of the bytes, on line `first + 2 * i`; a line that is not a `data` field (a comment,
    `event:`) carries no data. The file is split into lines as bytes and each line decoded on
    its own (in one `map`): decoding the whole text is slower, as one emoji widens all of it
    to four bytes a character. With `info` (an `.sse` file), its `read_info` is appended to it
    too, from the same bytes. Anything else, and any problem reading the file, goes to the
    line-by-line reader, which names the problem (tests/suite/test_recording_fast.py checks both
    give the same payloads).
    """
    try:
        raw = read_small(path, READ_WHOLE_BELOW)
    except OSError:
        return None
    if raw is None:
        return None
    if b"\r" in raw:
        return None
    first = 1
    suffix = path.suffix
    head_info: RecordingInfo | None = None
    if suffix == ".http":  # its head first
        lines = _lines_of(raw)
        try:
            if info is not None:  # its comment lines, as `read_info` reads them
                head_info = _info_of(path, (line for _, line in _lines_of(raw)), suffix)
            _skip_http_head(path, lines)
        except (RecordingError, UnicodeDecodeError):
            return None  # the line-by-line reader says what is wrong
        found = next(lines, None)
        if found is None:
            return []
        first = found[0]
        cut = -1
        for _ in range(first - 1):
            cut = raw.index(b"\n", cut + 1)
        raw = raw[cut + 1 :]
    if raw.startswith(b"\xef\xbb\xbf"):  # the stream's byte order mark: the decoder drops it
        return None
    # The file's lines, each with its LF: BytesIO finds them with memchr, where `bytes.split`
    # and `bytes.count` look at every byte in turn (four times as long, on a recording of
    # 60 chunks).
    rows = BytesIO(raw).readlines()
    start = 0
    while start < len(rows) and rows[start][:1] == b":":  # leading comment lines
        start += 1
    if start and rows[start - 1][-1:] != b"\n":  # the file ends in one, without its LF
        return None
    first += start  # the first event's line
    events = rows[start::2]
    # Plain when every other line is blank (so each event line ends in LF too).
    if len(rows) - start != 2 * len(events) or rows[start + 1 :: 2].count(b"\n") != len(events):
        return None
    datas: list[str | None]
    try:
        comments = _utf8(b"".join(rows[:start])).split("\n")[:-1]
        # llama-server's own stream: every event line starts `data: ` when the least and the
        # greatest of them do (each lies between the two in byte order): two C calls, three
        # times quicker than asking each line.
        if not events or min(events)[:6] == b"data: " == max(events)[:6]:
            # Each line cut to its value before it is decoded (one copy): a cut text copies it
            # again, and looks for its widest character anew.
            texts: list[str] = list(map(_utf8, map(_cut, events, repeat(_VALUE))))
            if "[DONE]" in texts:
                del texts[texts.index("[DONE]") :]
            _keep_info(info, head_info, path, comments, suffix)
            return list(map(Payload, range(first, first + 2 * len(texts), 2), texts))
        datas = [
            t[6:]
            if t[:6] == "data: "
            else t[5:]
            if t[:5] == "data:"
            else ""
            if t == "data"
            else None
            for t in map(_utf8, map(_cut, events, repeat(_LINE)))
        ]
    except UnicodeDecodeError:
        return None
    if "[DONE]" in datas:
        del datas[datas.index("[DONE]") :]
    _keep_info(info, head_info, path, comments, suffix)
    return [Payload(first + 2 * i, d) for i, d in enumerate(datas) if d is not None]


#: An event line of the plain layout without its `data: ` and its LF; without its LF.
_VALUE = slice(6, -1)
_LINE = slice(0, -1)
_cut = cast("Callable[[bytes, slice], bytes]", getitem)  # `line[part]`, called by `map`


def _keep_info(
    info: list[RecordingInfo] | None,
    head: RecordingInfo | None,
    path: Path,
    comments: list[str],
    suffix: str,
) -> None:
    """Append to `info` (when asked for) the recording's `read_info`: an `.http` file's from its
    head, an `.sse` file's from its leading `comments`, which are the file's first lines."""
    if info is None:
        return
    if head is not None:
        info.append(head)
    elif suffix == ".sse":
        info.append(_info_of(path, comments, suffix))


_utf8 = bytes.decode  # UTF-8, strict


def _lines_of(raw: bytes) -> Iterator[tuple[int, str]]:
    """The numbered lines of LF-ended bytes, decoded one at a time (as a file reads them)."""
    start, number = 0, 1
    while start < len(raw):
        end = raw.find(b"\n", start)
        if end < 0:
            end = len(raw)
        yield number, raw[start:end].decode("utf-8")
        start, number = end + 1, number + 1


def _decoded_payloads(path: Path) -> Iterator[Payload]:
    """The payloads, line by line through the event-stream decoder, in constant memory."""
    lines = _numbered_lines(path)
    if path.suffix == ".http":
        _skip_http_head(path, lines)
    decoder = EventDecoder()
    yield from decoder.payloads(lines)
    yield from decoder.end()


def case_id_of(recordings_dir: Path, path: Path) -> str:
    """The case id of a recording: its path below `recordings/`, without the extension."""
    return id_of_name(path.relative_to(recordings_dir).with_suffix("").as_posix())


#: True when file names are decoded as UTF-8 (the usual case): a name is then its case id.
_NAMES_ARE_UTF8 = sys.getfilesystemencoding().lower().replace("-", "") == "utf8"


def id_of_name(name: str) -> str:
    """A file name (as Python decoded it) as a case id: its bytes read as UTF-8, whatever the
    locale (`LC_ALL=C` decodes `日本語` as ASCII with escapes, which would name another case and
    write another golden file than the locale of the one who made it)."""
    if _NAMES_ARE_UTF8:
        return name
    return os.fsencode(name).decode("utf-8", "surrogateescape")


def name_of_id(case_id: str) -> str:
    """A case id (or a path made of one) as the file name that holds it: `id_of_name` undone."""
    if _NAMES_ARE_UTF8:
        return case_id
    return os.fsdecode(case_id.encode("utf-8", "surrogateescape"))
