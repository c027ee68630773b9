"""One running copy of a program and its pipes: a request line written, a reply line read.

`Worker` starts the program in a session of its own (`harness.drive.programs` kills its group, and
whatever carries its mark, when it stops), and one thread does all the I/O with it, waiting on its
stdin (while a request is being written), stdout, stderr and its exit together with a deadline
(POSIX `selectors`). Reading stderr in the same loop as the replies keeps the order the program
wrote them in: whatever it logged before a reply is in the buffer when the reply is read, so a
crash report always carries it; and a program that fills its stderr pipe while a large request is
written to it is read meanwhile, never waited for in a deadlock.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from selectors import EVENT_READ, EVENT_WRITE, DefaultSelector
from typing import IO, Protocol

from harness.drive.programs import GROUPS, MARK, become_subreaper, kill_group, kill_marked
from harness.errors import TargetError

_STDERR_KEPT = 64 * 1024  # bytes of stderr kept; older output is dropped
_STDERR_SHOWN_LINES = 20
_STDERR_SHOWN_CHARS = 2000
QUOTED_CHARS = 300
_MAX_REPLY = 256 * 1024 * 1024  # a "line" longer than this is garbage, not a reply
_READ_SIZE = 1024 * 1024
_PIPE_SIZE = 1024 * 1024  # asked of Linux for each pipe: a large message in fewer wake-ups
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ (named in the fcntl module only on Linux)
_EXITED = -1  # the selector key data of a pidfd: the program has exited
GRACE = 1.0  # seconds a program has to exit after `bye`, or to flush stderr after dying


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


def _widen(fd: int) -> None:
    """Ask Linux for a pipe of `_PIPE_SIZE` bytes (elsewhere, or refused: it stays as it is)."""
    if sys.platform == "linux":
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)


class PassMarks:
    """Takes the marks conform's own worker writes to stderr as it begins each pass
    (`harness.drive.messages.pass_mark`) out of what it wrote, read in chunks, and notes where
    each was: `starts[n]` is where pass `n` begins, counted in bytes of stderr without the marks."""

    def __init__(self, mark: bytes) -> None:
        self.mark = mark
        self.starts: list[int] = []
        self._part = b""  # what may be the start of a mark, at the end of the last chunk

    def taken(self, chunk: bytes, total: int) -> bytes:
        """`chunk` without the marks it holds, `total` bytes after the start of stderr; the
        start of a mark at its end is held back until the next chunk says whether it is one."""
        mark = self.mark
        data = self._part + chunk
        self._part = b""
        tail = len(data) - len(mark) + 1  # where a mark that does not fit would begin
        at = data.find(mark[:1], max(tail, 0))
        while at >= 0:
            if mark.startswith(data[at:]):
                data, self._part = data[:at], data[at:]
                break
            at = data.find(mark[:1], at + 1)
        if mark not in data:
            return data
        kept = bytearray()
        for number, part in enumerate(data.split(mark)):
            if number:
                self.starts.append(total + len(kept))
            kept += part
        return bytes(kept)

    def rest(self) -> bytes:
        """What was held back, once it is known to be no mark (the worker writes each mark whole
        before the pass it begins, so at the end of a pass it is the target's)."""
        part, self._part = self._part, b""
        return part


class Process(Protocol):
    """What a `Worker` needs of its program's process: a `subprocess.Popen`, or one adopted."""

    pid: int
    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class Worker:
    """One running copy of the program: its pipes and its stderr tail."""

    def __init__(
        self,
        command: Sequence[str],
        env: Mapping[str, str] | None,
        *,
        family: str,
        pass_fds: Sequence[int] = (),
    ) -> None:
        become_subreaper()
        self.family = family
        environ = {**(os.environ if env is None else env), MARK: family}
        self.proc: Process = self._spawn(list(command), environ, tuple(pass_fds))
        self._group = self.proc.pid  # the session's leader: its pid is the group's id
        try:
            GROUPS.add(self._group)
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
            _widen(fd)
        self._selector = DefaultSelector()
        self._selector.register(self._out, EVENT_READ)
        self._selector.register(self._err, EVENT_READ)
        # The program's exit is an event too: a program whose child still holds its stdout open
        # has died all the same, and must not be waited for until the case times out.
        self._pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self._pidfd = os.pidfd_open(self.proc.pid)
            self._selector.register(self._pidfd, EVENT_READ, _EXITED)
        self._exited = False
        self._unsent = memoryview(b"")  # the rest of the request being written
        self._pending = bytearray()  # stdout read but not yet taken as a reply
        self._scanned = 0  # bytes of it known to hold no line feed
        self._stderr = bytearray()
        self._stderr_total = 0  # bytes ever written to stderr, for marks
        self._marks: PassMarks | None = None  # where each pass's stderr begins
        self._out_open = True
        self._err_open = True

    def _spawn(self, command: list[str], env: dict[str, str], pass_fds: tuple[int, ...]) -> Process:
        """The program started, in a session of its own, its stdio on pipes, with the files
        `pass_fds` (a fork server's socket); overridden by a worker forked from a server instead
        (`harness.drive.forked`)."""
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
                pass_fds=pass_fds,
            )
        except OSError as exc:
            raise TargetError(
                f"cannot start '{command[0]}': {exc.strerror or exc}",
                hint="check the command given to --exec",
            ) from None

    # -- stderr -------------------------------------------------------------------------------

    def stderr_mark(self) -> int:
        """A position in the program's stderr, to show only what it wrote after it (all that
        its stderr pipe holds now is read first)."""
        total = -1
        while self._err_open and total != self._stderr_total:
            total = self._stderr_total
            self._read(self._err)
        return self._stderr_total

    def stderr_since(self, mark: int) -> str:
        """What the program wrote to stderr after `mark`, shortened for a report."""
        self._read_stderr()
        return self._stderr_between(mark, self._stderr_total)

    def count_passes(self, mark: bytes) -> None:
        """Take the marks conform's own worker writes to stderr as each pass begins (`mark`) out
        of what it wrote, and note where each was (`pass_stderr`)."""
        self._marks = PassMarks(mark)

    def unmarked_pass(self) -> None:
        """Note that a pass the worker writes no mark for (one call at a time) begins here: the
        passes before it have ended, all they wrote is read."""
        self._read_stderr()
        if self._marks is not None:
            self._marks.starts.append(self._stderr_total)

    def pass_stderr(self, ordinal: int) -> str:
        """What the program wrote to stderr in its pass number `ordinal` (0 for the first since
        `count_passes`), shortened for a report: from that pass's mark up to the next one's."""
        self._read_stderr()
        starts = [] if self._marks is None else self._marks.starts
        total = self._stderr_total
        begin = starts[ordinal] if ordinal < len(starts) else total
        end = starts[ordinal + 1] if ordinal + 1 < len(starts) else total
        return self._stderr_between(begin, end)

    def _read_stderr(self) -> None:
        """Everything the program has written so far (with all of it read, a mark's start held
        back is the target's: the worker writes each mark whole, in one write)."""
        while self._wait(0.0):
            pass
        if self._marks is not None:
            self._keep_stderr(self._marks.rest())

    def _stderr_between(self, begin: int, end: int) -> str:
        first = self._stderr_total - len(self._stderr)  # the oldest byte kept
        kept = bytes(self._stderr[max(begin - first, 0) : max(end - first, 0)])
        return shortened_stderr(kept, dropped=begin < first)

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
            else:
                self._out_open = False
                self._selector.unregister(fd)
        elif chunk:
            marks = self._marks
            self._keep_stderr(chunk if marks is None else marks.taken(chunk, self._stderr_total))
        else:
            if self._marks is not None:
                self._keep_stderr(self._marks.rest())
            self._err_open = False
            self._selector.unregister(fd)

    def _keep_stderr(self, data: bytes) -> None:
        self._stderr += data
        self._stderr_total += len(data)
        if len(self._stderr) > _STDERR_KEPT:
            del self._stderr[: len(self._stderr) - _STDERR_KEPT]

    def _wait(self, seconds: float) -> bool:
        """Wait up to `seconds` for the program to write (or exit, or take more of the request
        being written), and deal with what happened; False when nothing did."""
        if not (self._out_open or self._err_open or self._unsent):
            return False
        # Without a pidfd, look at the program now and then: it may have died.
        ready = self._selector.select(seconds if self._pidfd is not None else min(seconds, 0.1))
        for key, _ in ready:
            if key.data is _EXITED:
                self._note_exit()
            elif key.fd == self._in:
                self._write_some()
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

    def _write_some(self) -> None:
        """Write as much of the request as the pipe takes now (OSError when the program died);
        while some is left, the next wait also wakes when the pipe takes more."""
        try:
            written = os.write(self._in, self._unsent)
        except BlockingIOError:
            written = 0
        had = bool(self._unsent)
        self._unsent = self._unsent[written:]
        if had and not self._unsent:
            self._selector.unregister(self._in)

    def send_now(self, line: bytes) -> bool:
        """Write a request line of at most `select.PIPE_BUF` bytes if the pipe takes it now,
        whole (it never takes part of one); False when it does not (or the program died)."""
        assert len(line) <= select.PIPE_BUF and not self._unsent
        try:
            return os.write(self._in, line) == len(line)
        except OSError:
            return False

    def send(self, line: bytes, deadline: float) -> bool:
        """Write one request line, reading the program's output meanwhile; False when the
        deadline passed first. OSError when the program died."""
        try:  # most lines fit in the pipe at once: no need to wait for it to take them
            written = os.write(self._in, line)
        except BlockingIOError:
            written = 0
        if written == len(line):
            return True
        self._unsent = memoryview(line)[written:]
        self._selector.register(self._in, EVENT_WRITE)
        try:
            while self._unsent:
                if self.exited:
                    raise BrokenPipeError("the program exited")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._wait(remaining)
        finally:
            if self._unsent:  # not all written: the program is stopped next
                self._selector.unregister(self._in)
                self._unsent = memoryview(b"")
        return True

    def receive(self, deadline: float) -> bytes | None:
        """The next line of stdout, without its end; None on timeout, EOFError when it closed."""
        while True:
            end = self._pending.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._pending[:end])
                del self._pending[: end + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._pending)  # a long line is read in many parts: look once
            if len(self._pending) > _MAX_REPLY:
                line = bytes(self._pending[:QUOTED_CHARS])
                self._pending.clear()
                self._scanned = 0
                return line  # quoted as garbage: it cannot be a reply
            if not self._out_open:
                raise EOFError
            if self.exited:
                # It died: take what its pipes hold, never wait for what it started (which may
                # hold stdout open for ever).
                if not self._wait(0.0) or time.monotonic() >= deadline:
                    raise EOFError
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._wait(remaining)

    # -- the end ------------------------------------------------------------------------------

    def exit_status(self, *, writing: bool = False) -> str:
        """How the program ended, after it closed its stdout, or with `writing` its stdin (a
        write to it failed), waiting a moment for it to exit."""
        try:
            code = self.proc.wait(GRACE)
        except subprocess.TimeoutExpired:
            return "closed its stdin" if writing else "closed its stdout"
        kill_group(self._group)  # what it started would hold stderr open
        deadline = time.monotonic() + GRACE
        while self._err_open and time.monotonic() < deadline:  # unless something holds it open
            self._wait(deadline - time.monotonic())
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"was killed by {name}"
        return f"exited with status {code}"

    def stop(self, *, kill: bool, family: bool = True) -> None:
        """End the program: kill it at once, or give it a grace period first; either way, then
        kill its process group, so nothing it started outlives it, and (with `family`) every
        process that carries its mark elsewhere."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        if not kill:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(GRACE)
        kill_group(self._group)
        self.proc.wait()
        GROUPS.discard(self._group)
        if family:
            kill_marked(self.family + "\0")  # what left the group: a daemon it started
        self._selector.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        self._close_pipes()
        self._out_open = self._err_open = False  # what it wrote stays readable (`pass_stderr`)
        self._unsent = memoryview(b"")

    def _close_pipes(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
