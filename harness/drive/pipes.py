"""The programs a run starts: their pipes, their process groups, and stopping them all.

`Worker` is one running copy of a program: it starts the program in a session of its own, and one
thread does all the I/O with it, waiting on its stdin (while a request is being written), stdout,
stderr and its exit together with a deadline (POSIX `selectors`). Reading stderr in the same loop
as the replies keeps the order the program wrote them in: whatever it logged before a reply is in
the buffer when the reply is read, so a crash report always carries it.

Everything a program starts stays in its session's process group unless it leaves on purpose. The
group is killed whenever the program stops (after a case it broke, at the end of the run) and,
through `stop_all_programs`, on Ctrl-C, on SIGTERM, on SIGHUP and at interpreter exit.

What leaves on purpose (a double fork and `setsid`: a daemon) is found all the same: every program
gets `CONFORM_RUN=<run>.<driver>` in its environment, which whatever it starts inherits, and on
Linux this process becomes a child subreaper, so orphans of its programs are re-parented to it
rather than to init. When a program stops, every process still marked with its driver's value is
killed (and reaped when it is our child); `stop_all_programs` kills every process marked with
this run. So no process a run started outlives it.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import mmap
import os
import secrets
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from selectors import EVENT_READ, EVENT_WRITE, DefaultSelector
from typing import IO, Any, Protocol

# (SHARED_FROM and keep_freed_memory named here too, as before they moved: their old importers.)
from harness.drive.shared import SHARED_FROM as SHARED_FROM
from harness.drive.shared import SharedWriter
from harness.drive.shared import keep_freed_memory as keep_freed_memory
from harness.errors import TargetError

_STDERR_KEPT = 64 * 1024  # bytes of stderr kept; older output is dropped
_STDERR_SHOWN_LINES = 20
_STDERR_SHOWN_CHARS = 2000
QUOTED_CHARS = 300
_MAX_REPLY = 256 * 1024 * 1024  # a "line" longer than this is garbage, not a reply
_READ_SIZE = 1024 * 1024
_JOINED = 64 * 1024  # a request of at most this many bytes is joined into one buffer
_IOV_MAX = 1024  # buffers given to one writev (Linux's IOV_MAX)
_PIPE_SIZE = 1024 * 1024  # asked of Linux for each pipe: fewer wake-ups for large messages
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ, named in the fcntl module only from Python 3.10 on Linux
_EXITED = -1  # the selector key data of a pidfd: the program has exited
GRACE = 1.0  # seconds a program has to exit after `bye`, or to flush stderr after dying
MARK = "CONFORM_RUN"  # the environment variable that marks every process a run started
_RUN = f"{os.getpid()}-{secrets.token_hex(6)}"
_FAMILIES = itertools.count(1)
_PR_SET_CHILD_SUBREAPER = 36
_ROUNDS = 5  # scans for marked processes at one stop: each kills what forked during the last


def _crash_stack(lines: list[str]) -> list[str]:
    """From Python's fatal-error dump (faulthandler: "Fatal Python error: Segmentation fault", then
    every thread's stack), its first line and the crashing thread's stack; [] when there is none.
    The dump lists that thread among the others, often not last, so the last lines miss it."""
    start = next((i for i, line in enumerate(lines) if line.startswith("Fatal Python error:")), -1)
    if start < 0:
        return []
    current = next(
        (i for i in range(start, len(lines)) if lines[i].startswith("Current thread ")), -1
    )
    if current < 0:
        return []
    end = next((i for i in range(current, len(lines)) if not lines[i].strip()), len(lines))
    return [lines[start], *lines[current:end][:_STDERR_SHOWN_LINES]]


def shortened_stderr(data: bytes, *, dropped: bool = False) -> str:
    """The last lines of what a program wrote to stderr, with a header; "" when it wrote nothing.
    A Python crash dump is shown by the crashing thread's stack instead (`_crash_stack`)."""
    text = data.decode("utf-8", errors="replace").rstrip()
    if not text:
        return ""
    lines = text.splitlines()
    crash = _crash_stack(lines)
    if crash:
        shown = "\n".join(crash)
        if len(shown) > _STDERR_SHOWN_CHARS:
            shown = shown[: _STDERR_SHOWN_CHARS - 1] + "…"
        return "stderr (the crash, and the crashing thread's stack):\n" + "\n".join(
            "  " + line for line in shown.splitlines()
        )
    kept = lines[-_STDERR_SHOWN_LINES:]
    shown = "\n".join(kept)
    if len(shown) > _STDERR_SHOWN_CHARS:
        shown = "…" + shown[-(_STDERR_SHOWN_CHARS - 1) :]
    cut = dropped or len(kept) < len(lines) or shown.startswith("…")
    header = "stderr (last part):" if cut else "stderr:"
    return header + "\n" + "\n".join("  " + line for line in shown.splitlines())


class _ProcessGroups:
    """The process groups of every program this process started and has not yet killed.

    `kill_all` kills them all and, with `close`, makes any later start fail at once: once a run
    is being stopped, a worker thread must not start a program that nothing would kill. It runs
    at exit too, from the first program started on (importing this module registers nothing).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._closed = False
        self._at_exit = False

    def __contains__(self, pgid: int) -> bool:
        return pgid in self._groups

    def add(self, pgid: int) -> None:
        with self._lock:
            if not self._at_exit:
                atexit.register(self.kill_all, close=True)
                self._at_exit = True
            self._groups.add(pgid)
            if not self._closed:
                return
        _kill_group(pgid)
        raise TargetError("the run is being stopped: no program is started any more")

    def discard(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)

    def kill_all(self, *, close: bool = False) -> int:
        """Kill every group still registered (they stay registered until reaped); how many."""
        with self._lock:
            self._closed = self._closed or close
            groups = list(self._groups)
        for pgid in groups:
            _kill_group(pgid)
        kill_marked(_RUN + ".")
        return len(groups)

    def reopen(self) -> None:
        """Allow starts again (a later run in the same process, as tests make)."""
        with self._lock:
            self._closed = False

    def forget(self) -> None:
        """Start empty: in a forked child, the parent's programs are not this process's."""
        self._lock = threading.Lock()
        self._groups = set()
        self._closed = False


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


_GROUPS = _ProcessGroups()


def a_run_of_its_own() -> None:
    """In a process forked from conform (`conform fuzz -j N`'s searches): mark the programs it
    starts as a run of its own, so that stopping them never stops its parent's or its siblings'
    (whose marks start like ours), and forget the parent's programs."""
    global _RUN, _FAMILIES
    _RUN = f"{os.getpid()}-{secrets.token_hex(6)}"
    _FAMILIES = itertools.count(1)
    _GROUPS.forget()


def new_family() -> str:
    """A value of `CONFORM_RUN` for one driver's programs (and all they start)."""
    return f"{_RUN}.{next(_FAMILIES)}"


def _marked(needle: bytes) -> list[int]:
    """The processes (not this one) whose environment has an entry starting with `needle`."""
    try:
        names = os.listdir("/proc")
    except OSError:  # not Linux: process groups are all there is
        return []
    me = os.getpid()
    found = []
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as file:
                environ = file.read()
        except OSError:  # gone, or not ours to read
            continue
        if needle in environ and (environ.startswith(needle) or b"\0" + needle in environ):
            found.append(int(name))
    return found


def kill_marked(value: str) -> int:
    """Kill every process whose `CONFORM_RUN` starts with `value` (a family ends with "\0": exact),
    wherever it went (another group, another session, another parent); how many were killed."""
    needle = f"{MARK}={value}".encode()
    killed = 0
    for _ in range(_ROUNDS):
        pids = _marked(needle)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        for pid in pids:
            if pid not in _GROUPS:  # a program's own pid is reaped by its Popen
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)  # an orphan re-parented to this subreaper
    return killed


def _become_subreaper() -> None:
    """On Linux, adopt the orphans of our programs' descendants (see the module docstring)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def stop_all_programs() -> int:
    """Kill every program this process started (and all they started, even what left their
    process group and session), now, from any thread or a signal handler; later starts fail.
    Call it on SIGINT, SIGTERM and SIGHUP alike. Returns how many groups were killed."""
    return _GROUPS.kill_all(close=True)


def allow_programs() -> None:
    """Undo `stop_all_programs`' refusal of new programs (for the next run in this process)."""
    _GROUPS.reopen()


_SHARED_DIR = "/dev/shm"  # memory, not a disk: a shared file there is only pages both sides map


class SharedPayloads(SharedWriter):
    """The file a protocol-3 program reads the large payloads of the case under way from.

    The harness writes each payload after the ones before it in the case (`put`) and starts again
    at 0 with each case (`reset`, once every reply of the last case is read); the program maps
    the same file read-only. Its room is reserved before it is written: no room is a payload
    sent through the pipe instead.

    On Linux it is a memory file sealed against shrinking, which the program inherits (`fd`, the
    same number in the program) and opens by the path `/proc/self/fd/N`: a program that tries to
    shrink it (the harness writes into its own mapping of it) is refused, where a file it could
    truncate would kill the harness with SIGBUS. Elsewhere it is a file in /dev/shm, unlinked as
    soon as the program has opened it (`unlink`, after the reply to `hello`). Either way nothing
    is left behind.
    """

    def __init__(self) -> None:
        self.fd_passed: int | None = _sealed_memory_file("conform-payloads")
        if self.fd_passed is not None:
            fd, self.path = self.fd_passed, f"/proc/self/fd/{self.fd_passed}"
            super().__init__(fd)
            self._remove = weakref.finalize(self, _remove_shared, None, fd)
            return
        import tempfile

        fd, self.path = tempfile.mkstemp(prefix="conform-", suffix=".shared", dir=_SHARED_DIR)
        super().__init__(fd)
        # Removed however this object ends: closed, dropped with its driver (a run stopped by a
        # signal, a program that never answered `hello`), or at the interpreter's exit.
        self._remove = weakref.finalize(self, _remove_shared, self.path, fd)

    @classmethod
    def make(cls) -> SharedPayloads | None:
        """A new shared file; None where there is neither a sealed memory file nor /dev/shm
        (protocol 3 is then not offered)."""
        if not hasattr(os, "posix_fallocate"):
            return None
        if not _can_seal() and not os.path.isdir(_SHARED_DIR):
            return None
        try:
            return cls()
        except OSError:
            return None

    def unlink(self) -> None:
        """Remove the file's name (the mappings, and the program's, stay); a memory file has
        none."""
        if self.fd_passed is None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)

    def close(self) -> None:
        self._unmap()
        self._remove()


class SharedReplies:
    """The file a protocol-4 program writes the long texts of its replies into (the harness's
    side: it only reads).

    A memory file (`memfd_create`) sealed against shrinking, so that no program can make the
    harness's mapping of it point past its end (a SIGBUS): the program gets it as an inherited
    descriptor (`fd`, kept open in the program as the same number) and may only grow it.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._close = weakref.finalize(self, _close_quietly, self.fd)
        self._map: mmap.mmap | None = None

    @classmethod
    def make(cls) -> SharedReplies | None:
        """A new replies' file; None where memory files cannot be sealed (then 4 is not offered)."""
        fd = _sealed_memory_file("conform-replies")
        return None if fd is None else cls(fd)

    def text(self, at: int, size: int) -> tuple[str | None, str | None]:
        """(the `size` bytes of UTF-8 at offset `at`, decoded, None) or (None, what is wrong)."""
        end = at + size
        found = self._map
        try:
            if found is None or len(found) < end:
                length = os.fstat(self.fd).st_size
                if length < end:
                    return None, f"bytes {at} to {end} are beyond the replies' file's {length:,}"
                if found is not None:
                    found.close()
                self._map = None
                self._map = found = mmap.mmap(self.fd, length, access=mmap.ACCESS_READ)
            with memoryview(found) as view, view[at:end] as part:
                return str(part, "utf-8"), None
        except UnicodeDecodeError as exc:
            return None, f"bytes {at} to {end} of the replies' file are not UTF-8: {exc}"
        except (OSError, ValueError, MemoryError) as exc:  # a file grown beyond what maps
            return None, f"bytes {at} to {end} of the replies' file cannot be read: {exc}"

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        self._close()


def _can_seal() -> bool:
    return hasattr(os, "memfd_create") and sys.platform.startswith("linux")


def _sealed_memory_file(name: str) -> int | None:
    """A memory file no one can shrink (`F_SEAL_SHRINK`), for a program to inherit; None where
    there is none."""
    if not _can_seal():
        return None
    import fcntl

    try:
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (OSError, AttributeError):
        return None
    try:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
    except (OSError, AttributeError):
        os.close(fd)
        return None
    return fd


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


# The header of a non-ASCII string (CPython; a guess elsewhere), from one made at run time: a
# one-character string such as "é" is a static singleton in 3.12, of another size.
_COMPACT = sys.getsizeof("".join(("é", "é"))) - 3


def utf16_is_cheaper(data: str) -> bool:
    """True when `data` (not ASCII) is quicker to write and read again as UTF-16 than as UTF-8:
    when CPython holds it one or two bytes a character (every code point below 65,536; it then
    converts to UTF-16 at memory speed, and UTF-8 a character at a time). A string of four bytes
    a character (one emoji is enough) converts faster to UTF-8. Told from the string's size,
    without reading it (a string that keeps its UTF-8 too looks larger: only speed depends on
    the answer)."""
    return sys.getsizeof(data) - _COMPACT < 4 * (len(data) + 1)


def _remove_shared(path: str | None, fd: int) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)
    with contextlib.suppress(OSError):
        os.close(fd)


def _widen_pipe(fd: int) -> None:
    if sys.platform == "linux":
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)


class Process(Protocol):
    """What a `Worker` needs of its program's process: a `subprocess.Popen`, or one adopted."""

    pid: int
    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class Worker:
    """One running copy of the program: its pipes, its stderr tail and its next `seq`."""

    def __init__(
        self,
        command: Sequence[str],
        env: Mapping[str, str] | None,
        *,
        family: str,
        pass_fds: Sequence[int] = (),
    ) -> None:
        _become_subreaper()
        self.family = family
        environ = {**(os.environ if env is None else env), MARK: family}
        self.proc: Process = self._spawn(list(command), environ, tuple(pass_fds))
        self._group = self.proc.pid  # the session's leader: its pid is the group's id
        try:
            _GROUPS.add(self._group)
        except TargetError:
            self.proc.wait()
            self._close_pipes()
            raise
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._err = self.proc.stderr.fileno()
        for fd in (self._in, self._out, self._err):
            os.set_blocking(fd, False)
            _widen_pipe(fd)
        self._selector = DefaultSelector()
        self._selector.register(self._out, EVENT_READ)
        self._selector.register(self._err, EVENT_READ)
        self._err_ready: Any = None  # `poll(0)` of stderr alone (where there is `select.poll`)
        if hasattr(select, "poll"):
            err_poll = select.poll()
            err_poll.register(self._err, select.POLLIN)
            self._err_ready = err_poll.poll
        # The program's exit is an event too: a program whose child still holds its stdout open
        # has died all the same, and must not be waited for until the case times out.
        self._pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self._pidfd = os.pidfd_open(self.proc.pid)
            self._selector.register(self._pidfd, EVENT_READ, _EXITED)
        self._exited = False
        self._writing = False  # stdin is registered for writing: the outbox is not empty
        self._outbox: deque[memoryview] = deque()  # requests queued, not yet taken by the program
        self._queued = 0  # bytes ever queued, and ever written: a request is written once
        self._written = 0  # `_written` reaches the `_queued` that `queue` returned for it
        self._pending = bytearray()  # stdout read but not yet taken as a reply
        self.lines_in = 0  # line feeds ever read from stdout: the replies the program has written
        self._scanned = 0  # bytes of _pending known to hold no line feed
        self._taken = 0  # bytes of stdout taken as replies: where _pending starts in the stream
        self._looked = 0  # `holds`: where in the stream it has looked up to
        self._found_at = -1  # `holds`: where in the stream its needle was last found
        self._stderr = bytearray()
        self._stderr_total = 0  # bytes ever written to stderr, for marks
        self._out_open = True
        self._err_open = True
        self.seq = 0

    def _spawn(self, command: list[str], env: dict[str, str], pass_fds: tuple[int, ...]) -> Process:
        """The program started, in a session of its own, its stdio on pipes (overridden by a
        worker forked from a server instead: `harness.drive.forked`)."""
        try:
            return subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                env=env,
                # Its own process group, so a timeout kills whatever it started too.
                start_new_session=True,
                pass_fds=pass_fds,  # (the replies' file of protocol 4)
            )
        except OSError as exc:
            raise TargetError(
                f"cannot start '{command[0]}': {exc.strerror or exc}",
                hint="check the command given to --exec",
            ) from None

    # -- stderr -------------------------------------------------------------------------------

    def stderr_mark(self, *, drain: bool = False) -> int:
        """A position in the program's stderr, to show only what it wrote after it; with
        `drain`, after reading all that its stderr pipe holds now."""
        if drain and self._err_ready is not None:  # asked once a case: no failed read each time
            while self._err_open and self._err_ready(0):
                self._read(self._err)
        elif drain:
            total = -1
            while self._err_open and total != self._stderr_total:
                total = self._stderr_total
                self._read(self._err)
        return self._stderr_total

    def stderr_since(self, mark: int, end: int | None = None) -> str:
        """What the program wrote to stderr after `mark` (and before the mark `end`, if given),
        shortened for a report."""
        self._drain_ready()
        new = self._stderr_total - mark
        after = 0 if end is None else max(self._stderr_total - end, 0)
        stop = len(self._stderr) - after
        if new > after and stop <= 0:  # what came after `end` filled all that is kept
            return f"stderr: {new - after:,} bytes, no longer kept (later output took their place)"
        kept = bytes(self._stderr[-new:stop]) if new > after else b""
        return shortened_stderr(kept, dropped=new > len(self._stderr))

    def _keep_stderr(self, chunk: bytes) -> None:
        self._stderr += chunk
        self._stderr_total += len(chunk)
        if len(self._stderr) > _STDERR_KEPT:
            del self._stderr[: len(self._stderr) - _STDERR_KEPT]

    # -- I/O ----------------------------------------------------------------------------------

    def _read(self, fd: int) -> None:
        try:
            chunk = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if fd == self._out:
            if chunk:
                self._pending += chunk
                self.lines_in += chunk.count(b"\n")
            else:
                self._out_open = False
                self._selector.unregister(fd)
        elif chunk:
            self._keep_stderr(chunk)
        else:
            self._err_open = False
            self._selector.unregister(fd)

    def _read_out(self) -> bool:
        """Read what stdout holds now, without waiting (or see it closed); False when it holds
        nothing yet. (Stderr and the program's exit are looked at by the wait after a False.)"""
        try:
            chunk = os.read(self._out, _READ_SIZE)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if chunk:
            self._pending += chunk
            self.lines_in += chunk.count(b"\n")
        else:
            self._out_open = False
            self._selector.unregister(self._out)
        return True

    def holds(self, needle: bytes) -> bool:
        """Whether the replies read but not yet taken hold `needle` (always the same needle).

        Each byte is looked at once, however often this is asked while the replies are taken one
        by one (a long case's: asking `needle in` every time would be quadratic)."""
        start = max(self._looked - len(needle) + 1, self._taken) - self._taken
        found = self._pending.rfind(needle, start)
        if found >= 0:
            self._found_at = self._taken + found
        self._looked = self._taken + len(self._pending)
        return self._found_at >= self._taken

    def read_ready(self) -> None:
        """Read what stdout holds now, without waiting (`lines_in` then counts it)."""
        if self._out_open:
            self._read_out()

    def _drain(self, wait: float) -> bool:
        """Read once from whichever pipe is ready, waiting up to `wait` s; False when none was.

        While a request is being written, the program's stdin taking more also ends the wait.
        """
        if not (self._out_open or self._err_open or self._writing):
            return False
        ready = self._selector.select(wait)
        for key, _ in ready:
            if key.data is _EXITED:
                self._note_exit()
            elif key.fd == self._in:
                self._write_some(register=True)
            else:
                self._read(key.fd)
        return bool(ready)

    def _note_exit(self) -> None:
        if self._pidfd is not None:
            self._selector.unregister(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        self._exited = True

    @property
    def exited(self) -> bool:
        """True once the program itself has exited (what it started may live on)."""
        if not self._exited and self._pidfd is None and self.proc.poll() is not None:
            self._exited = True
        return self._exited

    def _drain_ready(self) -> None:
        """Read everything the program has written so far."""
        while self._drain(0.0):
            pass

    def queue(self, *parts: bytes, now: bool = True) -> int:
        """Write `parts` (one request) as far as the pipe takes them now (or, not `now`, at the
        next `flush`: requests queued together go in one system call); the rest is written
        while waiting for replies (`receive`), so requests may run ahead of replies. OSError
        when the program died. Returns the mark `receive` needs written for this request."""
        outbox = self._outbox
        waiting = bool(outbox)  # the pipe was full a moment ago: no write to try now
        if len(parts) == 1:  # the common case, a request line alone: no generator, no copy
            size = len(parts[0])
            if size:
                outbox.append(memoryview(parts[0]))
        else:
            size = sum(map(len, parts))
            if size <= _JOINED:  # one buffer for a small request
                if size:
                    outbox.append(memoryview(b"".join(parts)))
            else:
                outbox.extend(memoryview(part) for part in parts if part)
        self._queued += size
        if now and not waiting:
            self._write_some(register=True)
        return self._queued

    @property
    def queued(self) -> int:
        """The mark of the last request queued (as `queue` returned it)."""
        return self._queued

    def flush(self) -> None:
        """Write what is queued, as far as the pipe takes it now. OSError when it died."""
        if self._outbox and not self._writing:
            self._write_some(register=False)

    @property
    def unsent(self) -> bool:
        """True while queued requests wait for the program to take them."""
        return bool(self._outbox)

    def _write_some(self, *, register: bool) -> None:
        """Write what the pipe takes now; with `register`, wake the next wait when it takes more
        (only while a request that is awaited is unwritten: waking for every bit of room a
        program makes in a full pipe would cost a system call per request)."""
        outbox = self._outbox
        while outbox:
            try:  # many queued requests in one call: the program wakes once for them all
                written = os.writev(self._in, list(itertools.islice(outbox, _IOV_MAX)))
            except BlockingIOError:
                break
            self._written += written
            while outbox and written >= len(outbox[0]):
                written -= len(outbox.popleft())
            if written:
                outbox[0] = outbox[0][written:]
                break  # the pipe is full
        register = register and bool(outbox)
        if register and not self._writing:
            self._selector.register(self._in, EVENT_WRITE)
            self._writing = True
        elif not register and self._writing:
            self._selector.unregister(self._in)
            self._writing = False

    def send(self, line: bytes, deadline: float, *more: bytes) -> bool:
        """Write one request line (and `more` bytes after it, unjoined: no copy of a large payload)
        and everything queued before it; False when the deadline passed first. OSError when it
        died."""
        self.queue(line, *more)
        while self._outbox:
            if self.exited:
                raise BrokenPipeError("the program exited")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            # Wait until it takes more, reading meanwhile: it may be writing too.
            self._drain(remaining if self._pidfd is not None else min(remaining, 0.1))
        return True

    def ready_line(self) -> bytes | None:
        """The next line of stdout when it has been read already (without its end), else None:
        `receive` without a wait or a read."""
        end = self._pending.find(b"\n", self._scanned)
        if end < 0:
            self._scanned = len(self._pending)
            return None
        line = bytes(self._pending[:end])
        del self._pending[: end + 1]
        self._taken += end + 1
        self._scanned = 0
        return line

    def receive(self, deadline: float, need: int = 0) -> bytes | None:
        """The next line of stdout, without its end; None on timeout, EOFError when it closed.

        Queued requests are written meanwhile, as far as the pipe takes them; the wait also
        wakes for room in the pipe while the request up to the mark `need` is not all written.
        """
        while True:
            if self._outbox:
                try:
                    self._write_some(register=self._written < need)
                except OSError:  # it died: a reply it wrote before that is still its reply
                    if self._pending.find(b"\n", self._scanned) < 0:
                        raise
            end = self._pending.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._pending[:end])
                del self._pending[: end + 1]
                self._taken += end + 1
                self._scanned = 0
                return line
            self._scanned = len(self._pending)
            if len(self._pending) > _MAX_REPLY:
                line = bytes(self._pending[:QUOTED_CHARS])
                self._taken += len(self._pending)
                self._pending.clear()
                self._scanned = 0
                return line  # quoted as garbage: it cannot be a reply
            if not self._out_open:
                raise EOFError
            if self.exited:
                # It died: take what its pipes hold, never wait for what it started (which may
                # hold stdout open for ever).
                if not self._drain(0.0) or time.monotonic() >= deadline:
                    raise EOFError
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if self._read_out():  # the reply is often there already: no wait to set up
                continue
            # Without a pidfd, look at the program now and then: it may have died.
            self._drain(remaining if self._pidfd is not None else min(remaining, 0.1))

    def exit_status(self, *, writing: bool = False) -> str:
        """How the program ended, after it closed its stdout, or with `writing` its stdin (a
        write to it failed), waiting a moment for it to exit."""
        try:
            code = self.proc.wait(GRACE)
        except subprocess.TimeoutExpired:
            return "closed its stdin" if writing else "closed its stdout"
        _kill_group(self._group)  # what it started would hold stderr open
        self._drain_stderr_to_end()
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"was killed by {name}"
        return f"exited with status {code}"

    def _drain_stderr_to_end(self) -> None:
        deadline = time.monotonic() + GRACE
        while self._err_open:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return  # something it started still holds stderr open
            self._drain(remaining)

    def stop(self, *, kill: bool, family: bool = True) -> None:
        """End the program: kill it at once, or give it a grace period first; either way, then
        kill its process group, so nothing it started outlives it, and (with `family`) every
        process that carries its mark elsewhere."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        if not kill:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(GRACE)
        _kill_group(self._group)
        self.proc.wait()
        _GROUPS.discard(self._group)
        if family:
            kill_marked(self.family + "\0")  # what left the group: a daemon it started
        self._selector.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        self._close_pipes()

    def _close_pipes(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
