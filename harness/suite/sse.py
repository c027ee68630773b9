"""The event stream's reading rules, once: lines in, payloads out (docs/spec.md section 1).

The WHATWG server-sent-events rules, with the contract's two additions: a last event without its
blank line is still dispatched, and `[DONE]` ends the stream. Both readers of event streams use
this module: the recording reader (`harness.suite.recording`, lines of a file) and live capture
(`harness.capture.live`, bytes as they arrive, split into lines by `ChunkLines`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import msgspec

_LINE_END = re.compile(rb"\r\n|\r|\n")


class Payload(msgspec.Struct, frozen=True, gc=False):
    """One dispatched event's data, and the line of its first `data` field."""

    # A Struct, not a frozen dataclass: one is made per payload, and a frozen dataclass's
    # __init__ (object.__setattr__ per field) cost more than splitting the recording did.

    line: int
    data: str


class EventDecoder:
    """Incremental: feed numbered lines (without their ends) in any number of batches.

    `payloads` yields each event's data as its blank line arrives; `end` dispatches a last event
    that had none. After `[DONE]`, `done` is true and every later line is ignored.
    """

    __slots__ = ("_first", "_parts", "_started", "done")

    def __init__(self) -> None:
        self._parts: list[str] = []  # the data lines of the event being read
        self._first = 0  # the line of its first data field
        self._started = False  # a first line was seen (a byte order mark is dropped from it)
        self.done = False

    def payloads(self, lines: Iterable[tuple[int, str]]) -> Iterator[Payload]:
        """The payloads that `lines` complete, in order (the hot loop: kept inline)."""
        if self.done:
            return
        parts = self._parts
        if not self._started:
            lines = iter(lines)
            opening = next(lines, None)
            if opening is None:
                return
            self._started = True
            lines = _chain(opening[0], opening[1].removeprefix("\ufeff"), lines)
        for number, line in lines:
            if line[:5] == "data:":  # the usual line first
                value = line[6:] if line[5:6] == " " else line[5:]
            elif not line:
                if parts:
                    data = "\n".join(parts)
                    parts.clear()
                    if data == "[DONE]":
                        self.done = True
                        return
                    yield Payload(self._first, data)
                continue
            elif line == "data":  # a field name without a colon: an empty value
                value = ""
            else:
                continue  # a comment, or a field other than data
            if not parts:
                self._first = number
            parts.append(value)

    def end(self) -> Iterator[Payload]:
        """The stream ended: the event under way, if any, is dispatched without its blank line."""
        if self.done or not self._parts:
            return
        data = "\n".join(self._parts)
        self._parts.clear()
        if data == "[DONE]":
            self.done = True
            return
        yield Payload(self._first, data)


def _chain(number: int, line: str, rest: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    yield number, line
    yield from rest


class ChunkLines:
    """Bytes as they arrive, split into numbered lines at LF, CRLF or CR.

    A CR at the end of a chunk may be the first half of a CRLF split across chunks, so it waits
    for the next chunk (or the end). Each line is decoded as UTF-8, a bad sequence replaced: no
    line end byte occurs inside a UTF-8 character, so splitting first never cuts one.
    """

    __slots__ = ("_number", "_pending")

    def __init__(self) -> None:
        self._pending = b""
        self._number = 0

    def feed(self, chunk: bytes) -> list[tuple[int, str]]:
        """The lines `chunk` completes."""
        buf = self._pending + chunk
        lines: list[tuple[int, str]] = []
        start = 0
        for match in _LINE_END.finditer(buf):
            if match.group() == b"\r" and match.end() == len(buf):
                break  # may be the first half of a CRLF split across chunks
            lines.append(self._line(buf[start : match.start()]))
            start = match.end()
        self._pending = buf[start:]
        return lines

    def close(self) -> list[tuple[int, str]]:
        """The last line, when the stream did not end with a line end."""
        rest, self._pending = self._pending.removesuffix(b"\r"), b""
        return [self._line(rest)] if rest else []

    def _line(self, raw: bytes) -> tuple[int, str]:
        self._number += 1
        return self._number, raw.decode("utf-8", errors="replace")
