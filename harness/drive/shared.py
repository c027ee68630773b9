"""The files both sides of the protocol map (protocols 3 and 4), the writer's side, and the
allocator setting of processes that move large messages.

`SharedWriter` writes texts one after another into such a file: the harness its payloads
(`harness.drive.pipes.SharedPayloads`), conform's worker the long texts of its replies. Kept apart
from the pipes and processes of `harness.drive.pipes`, so the worker (`harness.adapter`) imports
only what it uses: its start is on the critical path of every run.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
from typing import Any, NamedTuple

_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # mallopt's parameters (glibc's malloc.h)
_TRIM_ABOVE = 256 * 2**20  # freed memory kept at the top of the heap, at most
_KEEPING: list[bool] = []


def keep_freed_memory(trim_above: int = _TRIM_ABOVE) -> None:
    """Have glibc's malloc keep freed memory (up to `trim_above` bytes) for reuse; once per
    process.

    A large message is several buffers of its size (the request, the payload decoded, its text,
    the reply), made and freed again for every message. By default glibc maps each block of more
    than a few hundred KiB on its own and unmaps it when it is freed, so the next message's first
    touch of each page is a page fault: at 1 MiB that cost three times the reference's own work
    on the payload, at 50 MiB twice. From the heap, and kept there, the pages are reused. A no-op
    elsewhere than glibc on Linux.

    A setting of the whole process: the `conform` command and its worker make it; a process that
    only imports the harness (the pytest plugin, the API) keeps its allocator as it was.
    """
    if _KEEPING or not sys.platform.startswith("linux"):
        return
    _KEEPING.append(True)
    with contextlib.suppress(OSError, AttributeError, TypeError):
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
        mallopt(_M_MMAP_MAX, 0)
        mallopt(_M_TRIM_THRESHOLD, trim_above)


#: Protocol 3: a payload of at least this many bytes goes through the shared file, not the pipe;
#: protocol 4: a text of a reply this long goes through the replies' file.
SHARED_FROM = 64 * 1024
_SHARED_LEAST = 2**20  # a shared file's first size


class SharedWriter:
    """Texts written one after another into a file both sides map (the writer's side).

    Each `put` (or `put_text`) lies after the ones before it, from offset 0 again after `reset`;
    the file's room is reserved before it is written (`posix_fallocate`, which only ever grows
    it): a full file system is a None, never a SIGBUS. The harness writes the payloads of a case
    into one (`SharedPayloads`), conform's worker the long texts of its replies into another.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._map: mmap.mmap | None = None
        self._anchor: Any = None  # a ctypes view of the mapping while `put_text` writes into it
        self._base = 0  # the address of the mapping's first byte
        self._size = 0  # bytes reserved and mapped
        self._used = 0  # bytes written since the last reset

    def put(self, raw: bytes) -> int | None:
        """Write `raw` after what was written so far; its offset, or None when there is no room."""
        at = self._room(len(raw))
        if at is not None:
            assert self._map is not None
            self._map[at : at + len(raw)] = raw
        return at

    def put_text(self, data: str) -> int | None:
        """`put(data.encode())` for an ASCII `data` (its UTF-8 bytes are its characters, one
        byte each), copied straight from the string into the file: no bytes object of its size
        made and copied again. None when there is no room, when `data` is not ASCII, or where
        CPython's string memory cannot be read (the caller then encodes it)."""
        memory = _string_memory() if data.isascii() else None
        if memory is None:
            return None
        at = self._room(len(data))
        if at is None:
            return None
        assert self._map is not None
        if self._anchor is None:  # held while mapped: the mapping cannot close under it
            self._anchor = memory.byte.from_buffer(self._map)
            self._base = memory.address_of(self._anchor)
        size = memory.size()
        source = memory.utf8(data, memory.by_ref(size))  # the string's own bytes: not a copy
        if source is None or size.value != len(data):  # never for ASCII: the ordinary way then
            self._map[at : at + len(data)] = data.encode("ascii")
        else:
            memory.move(self._base + at, source, size.value)
        return at

    def _room(self, length: int) -> int | None:
        """Reserve `length` bytes after what was written so far (growing the file and its
        mapping when needed); their offset, or None when there is no room."""
        at, end = self._used, self._used + length
        if end > self._size:
            size = max(end, 2 * self._size, _SHARED_LEAST)
            try:
                os.posix_fallocate(self.fd, 0, size)
                mapped = mmap.mmap(self.fd, size)
            except (OSError, ValueError):
                return None
            self._unmap()
            self._map = mapped
            self._size = size
        self._used = end
        return at

    def _unmap(self) -> None:
        self._anchor = None  # (a view of the mapping would keep it from closing)
        if self._map is not None:
            self._map.close()
            self._map = None

    def reset(self) -> None:
        """A new case: its texts may take the place of the last case's."""
        self._used = 0

    def close(self) -> None:
        """Unmap the file (the descriptor is its owner's to close)."""
        self._unmap()


class _StringMemory(NamedTuple):  # (not a dataclass: the worker need not import dataclasses)
    """What `SharedWriter.put_text` needs of ctypes: a string's UTF-8 bytes where they lie."""

    utf8: Any  # PyUnicode_AsUTF8AndSize: for an ASCII string, its own characters
    size: Any  # ctypes.c_ssize_t
    by_ref: Any
    move: Any  # ctypes.memmove
    byte: Any  # ctypes.c_char, to view the mapping
    address_of: Any


_MEMORY: list[_StringMemory | None] = []


def _string_memory() -> _StringMemory | None:
    """ctypes' view of CPython's strings, made once (None on another interpreter)."""
    if not _MEMORY:
        found = None
        with contextlib.suppress(ImportError, AttributeError, OSError):
            import ctypes

            if sys.implementation.name == "cpython":
                prototype = ctypes.PYFUNCTYPE(
                    ctypes.c_void_p, ctypes.py_object, ctypes.POINTER(ctypes.c_ssize_t)
                )
                utf8 = prototype(("PyUnicode_AsUTF8AndSize", ctypes.pythonapi))
                found = _StringMemory(
                    utf8, ctypes.c_ssize_t, ctypes.byref, ctypes.memmove, ctypes.c_char,
                    ctypes.addressof,
                )  # fmt: skip
        _MEMORY.append(found)
    return _MEMORY[0]
