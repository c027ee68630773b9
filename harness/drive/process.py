"""Driving a target that runs as another program, over conform's line protocol (docs/protocol.md).

`ProcessDriver` starts the program once, shakes hands, and turns each `push` and `finish` into one
request line and one reply line. Everything outside the protocol is a result, never a harness
failure: a program that dies, writes a line that is not a reply, answers out of order, reports a
crash or says nothing for longer than the case's time limit fails that case (`TargetCrash` or
`TargetTimeout`, with the tail of what it wrote to stderr) and is replaced before the next case.

One thread does all the I/O with the program, waiting on its stdin (while a request is being
written), stdout, stderr and its exit together with a deadline (POSIX `selectors`). Reading stderr
in the same loop as the replies keeps the order the program wrote them in: whatever it logged
before a reply is in the buffer when the reply is read, so a crash report always carries it.

Every program runs in a session of its own, and everything it starts stays in that session's
process group unless it leaves on purpose. The group is killed whenever the program stops (after a
case it broke, at the end of the run) and, through `stop_all_programs`, on Ctrl-C, on SIGTERM and
at interpreter exit, so no process a run started outlives it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from selectors import EVENT_READ, EVENT_WRITE, DefaultSelector
from typing import Any

from harness.drive.inprocess import Driver, InProcessDriver, TargetCrash, TargetTimeout, load_target
from harness.drive.normalize import ERROR_KINDS, SAID
from harness.drive.wire import decode_line, encode_line
from harness.errors import ConformError, TargetError
from harness.safetext import shorten

PROTOCOL_VERSION = 1
DEFAULT_TIMEOUT = 10.0

_STDERR_KEPT = 64 * 1024  # bytes of stderr kept; older output is dropped
_STDERR_SHOWN_LINES = 20
_STDERR_SHOWN_CHARS = 2000
_QUOTED_CHARS = 300
_MAX_REPLY = 256 * 1024 * 1024  # a "line" longer than this is garbage, not a reply
_READ_SIZE = 1024 * 1024
_PIPE_SIZE = 1024 * 1024  # asked of Linux for each pipe: fewer wake-ups for large messages
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ, named in the fcntl module only from Python 3.10 on Linux
_EXITED = -1  # the selector key data of a pidfd: the program has exited
_GRACE = 1.0  # seconds a program has to exit after `bye`, or to flush stderr after dying
_SCHEMAS = {
    "hello": "reply-hello",
    "new": "reply-ok",
    "push": "reply-push",
    "finish": "reply-finish",
    "bye": "reply-ok",
}


@dataclass(frozen=True, slots=True)
class ProgramInfo:
    """What the program said about itself in the handshake."""

    name: str
    version: str
    language: str


def quoted(text: str, limit: int = _QUOTED_CHARS) -> str:
    """`text` on one line, shortened to `limit` characters."""
    return shorten(text.rstrip("\r\n"), limit)


def shortened_stderr(data: bytes, *, dropped: bool = False) -> str:
    """The last lines of what a program wrote to stderr, with a header; "" when it wrote nothing."""
    text = data.decode("utf-8", errors="replace").rstrip()
    if not text:
        return ""
    lines = text.splitlines()
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
    is being stopped, a worker thread must not start a program that nothing would kill.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._closed = False

    def add(self, pgid: int) -> None:
        with self._lock:
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
        return len(groups)

    def reopen(self) -> None:
        """Allow starts again (a later run in the same process, as tests make)."""
        with self._lock:
            self._closed = False


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


_GROUPS = _ProcessGroups()
atexit.register(_GROUPS.kill_all, close=True)


def stop_all_programs() -> int:
    """Kill every program this process started (and all they started), now, from any thread
    or a signal handler; later starts fail. Returns how many groups were killed."""
    return _GROUPS.kill_all(close=True)


def allow_programs() -> None:
    """Undo `stop_all_programs`' refusal of new programs (for the next run in this process)."""
    _GROUPS.reopen()


def _widen_pipe(fd: int) -> None:
    if sys.platform == "linux":
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)


class _Refused(TargetCrash):
    """The program answered `bad_request`: it and the harness disagree about the protocol."""

    def __init__(self, message: str, *, details: str, reason: str) -> None:
        super().__init__(message, details=details)
        self.reason = reason


class _Worker:
    """One running copy of the program: its pipes, its stderr tail and its next `seq`."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str] | None) -> None:
        try:
            self.proc = subprocess.Popen(
                list(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                env=None if env is None else dict(env),
                # Its own process group, so a timeout kills whatever it started too.
                start_new_session=True,
            )
        except OSError as exc:
            raise TargetError(
                f"cannot start '{command[0]}': {exc.strerror or exc}",
                hint="check the command given to --exec",
            ) from None
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
        # The program's exit is an event too: a program whose child still holds its stdout open
        # has died all the same, and must not be waited for until the case times out.
        self._pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self._pidfd = os.pidfd_open(self.proc.pid)
            self._selector.register(self._pidfd, EVENT_READ, _EXITED)
        self._exited = False
        self._writing = False
        self._pending = bytearray()  # stdout read but not yet taken as a reply
        self._scanned = 0  # bytes of _pending known to hold no line feed
        self._stderr = bytearray()
        self._stderr_total = 0  # bytes ever written to stderr, for marks
        self._out_open = True
        self._err_open = True
        self.seq = 0

    # -- stderr -------------------------------------------------------------------------------

    def stderr_mark(self) -> int:
        """A position in the program's stderr, to show only what it wrote after it."""
        return self._stderr_total

    def stderr_since(self, mark: int) -> str:
        """What the program wrote to stderr after `mark`, shortened for a report."""
        self._drain_ready()
        new = self._stderr_total - mark
        kept = bytes(self._stderr[-new:]) if new > 0 else b""
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
            else:
                self._out_open = False
                self._selector.unregister(fd)
        elif chunk:
            self._keep_stderr(chunk)
        else:
            self._err_open = False
            self._selector.unregister(fd)

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
            elif key.fd != self._in:
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

    def send(self, line: bytes, deadline: float) -> bool:
        """Write one request line; False when the deadline passed first. OSError when it died."""
        view = memoryview(line)
        try:
            while view:
                try:
                    written = os.write(self._in, view)
                except BlockingIOError:
                    written = 0
                view = view[written:]
                if not view:
                    break
                if self.exited:
                    raise BrokenPipeError("the program exited")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                if not self._writing:
                    self._selector.register(self._in, EVENT_WRITE)
                    self._writing = True
                # Wait until it takes more, reading meanwhile: it may be writing too.
                self._drain(remaining if self._pidfd is not None else min(remaining, 0.1))
        finally:
            if self._writing:
                self._selector.unregister(self._in)
                self._writing = False
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
            self._scanned = len(self._pending)
            if len(self._pending) > _MAX_REPLY:
                line = bytes(self._pending[:_QUOTED_CHARS])
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
            # Without a pidfd, look at the program now and then: it may have died.
            self._drain(remaining if self._pidfd is not None else min(remaining, 0.1))

    def exit_status(self) -> str:
        """How the program ended, after it closed its stdout (waiting a moment for it to exit)."""
        try:
            code = self.proc.wait(_GRACE)
        except subprocess.TimeoutExpired:
            return "closed its stdout"
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
        deadline = time.monotonic() + _GRACE
        while self._err_open:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return  # something it started still holds stderr open
            self._drain(remaining)

    def stop(self, *, kill: bool) -> None:
        """End the program: kill it at once, or give it a grace period first; either way, then
        kill its process group, so nothing it started outlives it."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        if not kill:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(_GRACE)
        _kill_group(self._group)
        self.proc.wait()
        _GROUPS.discard(self._group)
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


class _Validator:
    """Checks replies against the protocol's JSON Schemas (`--validate-protocol`)."""

    def __init__(self) -> None:
        try:
            import jsonschema  # type: ignore[import-untyped]
        except ImportError:
            raise ConformError(
                "--validate-protocol needs the jsonschema package",
                hint="pip install 'jsonschema>=4.20'",
            ) from None
        folder = resources.files("harness").joinpath("schemas")
        self._validators: dict[str, Any] = {}
        for op, name in _SCHEMAS.items():
            schema = json.loads(folder.joinpath(f"{name}.schema.json").read_text("utf-8"))
            self._validators[op] = jsonschema.Draft202012Validator(schema)
        self._best_match = jsonschema.exceptions.best_match

    def problem(self, op: str, reply: Any) -> str | None:
        """What is wrong with `reply` to `op`, or None when it follows the schema."""
        error = self._best_match(self._validators[op].iter_errors(reply))
        if error is None:
            return None
        where = error.json_path
        return f"{error.message} (at {where})" if where != "$" else str(error.message)


class ProcessDriver:
    """Drives a target that is another program speaking the protocol over stdin and stdout.

    The program starts with `start` (or the first case) and is restarted after a case that broke
    the protocol. `timeout` is the time allowed for each case, in seconds. With `own_errors`,
    the program's own messages for a refused handshake and a crash are shown as they are (the
    adapter's words for a TARGET that cannot load or that raised, as an in-process run has them).
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        validate: bool = False,
        env: Mapping[str, str] | None = None,
        label: str | None = None,
        own_errors: bool = False,
    ) -> None:
        if not command:
            raise TargetError("the command is empty", hint="give --exec 'COMMAND ARGS'")
        self._command = list(command)
        self.label = label or shlex.join(self._command)
        self._timeout = timeout
        self._validator = _Validator() if validate else None
        self._env = env
        self._own_errors = own_errors
        self._worker: _Worker | None = None
        self._deadline = 0.0
        self._case_mark = 0
        self._request: dict[str, Any] = {}
        self.program: ProgramInfo | None = None

    @classmethod
    def from_command_line(cls, command_line: str, **options: Any) -> ProcessDriver:
        """A driver for a command given as one string, split like a POSIX shell would."""
        try:
            command = shlex.split(command_line)
        except ValueError as exc:
            raise TargetError(f"cannot read the command {command_line!r}: {exc}") from None
        return cls(command, label=command_line, **options)

    @property
    def pid(self) -> int | None:
        """The process id of the running program (None when none runs)."""
        return None if self._worker is None else self._worker.proc.pid

    def __enter__(self) -> ProcessDriver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the Driver protocol ------------------------------------------------------------------

    def start(self) -> ProgramInfo:
        """Start the program (unless it runs) and shake hands; TargetError when that fails."""
        if self._worker is None:
            self._worker = _Worker(self._command, self._env)
            self._case_mark = 0
            self._deadline = time.monotonic() + max(self._timeout, 5.0)
            try:
                reply = self._exchange("hello", {"protocol": PROTOCOL_VERSION})
                self.program = self._read_hello(reply)
            except _Refused as exc:
                if self._own_errors:  # the adapter's own words for a target that cannot load
                    raise TargetError(exc.reason) from None
                raise TargetError(
                    f"{self.label} refused the handshake: {exc.reason}", hint="see docs/protocol.md"
                ) from None
            except TargetCrash as exc:
                self._discard()
                details = f"\n{exc.details}" if exc.details else ""
                raise TargetError(
                    f"{self.label} failed the handshake: {exc.message}{details}",
                    hint="see docs/protocol.md",
                ) from None
        assert self.program is not None
        return self.program

    def start_case(self) -> None:
        """Start a case: a fresh assembler in the program (restarted first when needed)."""
        self.start()
        assert self._worker is not None
        self._case_mark = self._worker.stderr_mark()
        self._deadline = time.monotonic() + self._timeout
        self._call("new", {})

    def push(self, data: str, line: int) -> dict[str, Any]:
        """One payload; the golden step the program's reply stands for."""
        reply = self._call("push", {"data": data})
        if "error" in reply:
            return {"line": line, "error": _contract_error(reply), SAID: _said(reply)}
        events, state = reply.get("events"), reply.get("state")
        if not isinstance(events, list) or not isinstance(state, dict):
            raise self._garbage(
                reply, "a reply to push needs a list 'events' and an object 'state'"
            )
        return {"line": line, "events": events, "state": state}

    def finish(self, thinking_capped: bool) -> dict[str, Any]:
        """`finish`; the golden finish object the program's reply stands for."""
        reply = self._call("finish", {"thinking_capped": thinking_capped})
        if "error" in reply:
            return {"error": _contract_error(reply), SAID: _said(reply)}
        completion = reply.get("completion")
        if not isinstance(completion, dict):
            raise self._garbage(reply, "a reply to finish needs an object 'completion'")
        return {"completion": completion}

    def case_stderr(self) -> str:
        """What the program wrote to stderr in the current case, shortened ("" when nothing)."""
        return "" if self._worker is None else self._worker.stderr_since(self._case_mark)

    def close(self) -> None:
        """Say `bye` and let the program exit (killing it after a grace period)."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        line = encode_line({"seq": worker.seq + 1, "op": "bye"}, ascii_only=True)
        deadline = time.monotonic() + _GRACE
        try:
            if worker.send(line, deadline):
                worker.receive(deadline)
        except (OSError, EOFError):
            pass
        worker.stop(kill=False)

    # -- the exchange -------------------------------------------------------------------------

    def _exchange(self, op: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Send one request and read its reply: a JSON object with the right `seq`."""
        worker = self._worker
        assert worker is not None
        worker.seq += 1
        request = {"seq": worker.seq, "op": op, **fields}
        self._request = request
        line = encode_line(request, ascii_only=True)
        try:
            sent = worker.send(line, self._deadline)
            raw = worker.receive(self._deadline) if sent else None
        except (OSError, EOFError):
            status = worker.exit_status()
            raise self._broken(f"the program {status} before answering {op}") from None
        if raw is None:
            stderr = worker.stderr_since(self._case_mark)
            self._discard()
            raise TargetTimeout(
                f"no reply to {op} within {self._timeout:g} s (the time allowed for a case); "
                "the program was stopped",
                details=self._details(stderr=stderr),
            )
        try:
            reply = decode_line(raw)
        except (UnicodeDecodeError, ValueError):
            text = raw.decode("utf-8", errors="replace")
            raise self._broken(
                f"the program wrote a line that is not JSON in reply to {op}: {quoted(text)}"
            ) from None
        except RecursionError:  # valid JSON nested beyond what the decoder takes
            raise self._broken(
                f"the program's reply to {op} ({len(raw):,} bytes) nests too deep to read: "
                f"{quoted(raw.decode('utf-8', errors='replace'))}"
            ) from None
        if not isinstance(reply, dict):
            raise self._garbage(reply, "a reply must be a JSON object")
        if _is_error_reply(reply) and reply["error"].get("kind") == "bad_request":
            message = str(reply["error"].get("message"))
            refused = self._garbage(reply, f"the program refused the request: {message}")
            raise _Refused(refused.message, details=refused.details, reason=message)
        seq = reply.get("seq")
        if seq != request["seq"] or isinstance(seq, bool):
            raise self._garbage(
                reply,
                f"it carries seq {json.dumps(seq)}, not {request['seq']} (out of order, or a stray "
                "line)",
            )
        if self._validator is not None:
            problem = self._validator.problem(op, reply)
            if problem is not None:
                raise self._garbage(reply, f"it breaks the protocol's schema: {problem}")
        if "error" in reply and not _is_error_reply(reply):
            raise self._garbage(reply, "'error' must be an object")
        return reply

    def _call(self, op: str, fields: dict[str, Any]) -> dict[str, Any]:
        """`_exchange`, with error replies outside the contract's three kinds as crashes."""
        reply = self._exchange(op, fields)
        if "error" not in reply:
            return reply
        kind = reply["error"].get("kind")
        if kind in ERROR_KINDS and op in ("push", "finish"):
            return reply
        message = reply["error"].get("message")
        text = message if isinstance(message, str) else json.dumps(message)
        headline, _, rest = text.partition("\n")
        assert self._worker is not None
        stderr = self._worker.stderr_since(self._case_mark)
        # The program is still in step with the harness: a crash reply needs no restart.
        details = "\n".join(part for part in (rest.rstrip(), stderr) if part)
        if kind == "crash" and self._own_errors:  # the adapter's words, as an in-process run's
            raise TargetCrash(headline, details=details)
        what = "crashed" if kind == "crash" else f"answered {op} with error {json.dumps(kind)}"
        raise TargetCrash(f"the program {what} in {op}: {headline}", details=details)

    def _read_hello(self, reply: dict[str, Any]) -> ProgramInfo:
        if "error" in reply:
            raise TargetCrash(f"it answered with an error: {reply['error'].get('message')}")
        protocol = reply.get("protocol")
        if protocol != PROTOCOL_VERSION or isinstance(protocol, bool):
            raise TargetCrash(f"it speaks protocol {json.dumps(protocol)}, not {PROTOCOL_VERSION}")
        fields = [reply.get(name) for name in ("name", "version", "language")]
        texts = [value for value in fields if isinstance(value, str) and value]
        if len(texts) != len(fields):
            raise TargetCrash(f"the reply to hello needs name, version and language: {reply}")
        return ProgramInfo(*texts)

    # -- failures -----------------------------------------------------------------------------

    def _details(self, *, stderr: str, reply: str | None = None) -> str:
        # Quoted without its seq, which counts every request this program got before, so depends
        # on the cases it ran earlier (and on -j): reports must not. A seq that matters is named in
        # the message itself ("it carries seq 8, not 9").
        request = {key: value for key, value in self._request.items() if key != "seq"}
        parts = [f"request: {quoted(json.dumps(request, ensure_ascii=False))}"]
        if reply is not None:
            parts.append(f"reply: {quoted(reply)}")
        if stderr:
            parts.append(stderr)
        return "\n".join(parts)

    def _broken(self, message: str) -> TargetCrash:
        """The program can no longer be talked to: a crash for this case, and a restart."""
        assert self._worker is not None
        stderr = self._worker.stderr_since(self._case_mark)
        self._discard()
        return TargetCrash(message, details=self._details(stderr=stderr))

    def _garbage(self, reply: Any, why: str) -> TargetCrash:
        """A reply the harness cannot take: a crash for this case, and a restart."""
        assert self._worker is not None
        stderr = self._worker.stderr_since(self._case_mark)
        self._discard()
        op = self._request["op"]
        try:
            shown = json.dumps(reply, ensure_ascii=False)
        except (RecursionError, ValueError):
            shown = f"(a reply of type {type(reply).__name__} that cannot be shown)"
        return TargetCrash(
            f"bad reply to {op}: {why}", details=self._details(stderr=stderr, reply=shown)
        )

    def _discard(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop(kill=True)


# The worker gets exactly the harness's sys.path, so it imports what `conform` itself could.
_BOOTSTRAP = (
    "import json, os, sys; "
    "sys.path[:] = json.loads(os.environ.pop('CONFORM_SYS_PATH')); "
    "from harness.adapter import main; "
    "main(prog_name='python -m harness.adapter')"
)


def python_target_driver(
    spec: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    validate: bool = False,
    max_memory: int | None = None,
) -> ProcessDriver:
    """A driver running the Python target `spec` in a worker process (`harness.adapter`).

    The worker is this interpreter, in the current directory, with this process's `sys.path`;
    `max_memory` (MiB) overrides the adapter's default address-space limit.
    """
    path = [os.path.abspath(entry or os.curdir) for entry in sys.path]
    env = {**os.environ, "CONFORM_SYS_PATH": json.dumps(path)}
    command = [sys.executable, "-c", _BOOTSTRAP, spec]
    if max_memory is not None:
        command += ["--max-memory", str(max_memory)]
    return ProcessDriver(
        command, timeout=timeout, validate=validate, env=env, label=spec, own_errors=True
    )


def check_driver_options(
    target: str | None,
    exec_command: str | None,
    *,
    in_process: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    validate_protocol: bool = False,
) -> None:
    """ConformError for options that do not go together: the rules of `conform run` and the
    pytest plugin alike."""
    if (target is None) == (exec_command is None):
        raise ConformError("give either TARGET or --exec 'COMMAND ARGS' (exactly one)")
    if not timeout > 0:
        raise ConformError(f"the timeout must be more than 0 seconds, not {timeout}")
    if in_process and exec_command is not None:
        raise ConformError("--in-process runs a Python TARGET; it does not go with --exec")
    if in_process and validate_protocol:
        raise ConformError("--validate-protocol checks a worker, not --in-process")


def start_driver(
    target: str | None,
    exec_command: str | None,
    *,
    in_process: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    validate_protocol: bool = False,
) -> Driver:
    """The driver for a Python TARGET or an --exec program, started; ConformError on bad options."""
    check_driver_options(
        target,
        exec_command,
        in_process=in_process,
        timeout=timeout,
        validate_protocol=validate_protocol,
    )
    if in_process:
        return InProcessDriver(load_target(str(target)))
    if exec_command is not None:
        driver = ProcessDriver.from_command_line(
            exec_command, timeout=timeout, validate=validate_protocol
        )
    else:
        driver = python_target_driver(str(target), timeout=timeout, validate=validate_protocol)
    driver.start()
    return driver


def _is_error_reply(reply: dict[str, Any]) -> bool:
    return isinstance(reply.get("error"), dict)


def _said(reply: dict[str, Any]) -> str:
    """`kind: message`: the program's own words for its error (shown, not compared)."""
    error = reply["error"]
    message = error.get("message")
    text = message if isinstance(message, str) else f"(a {type(message).__name__}, not a message)"
    return f"{error['kind']}: {text}"


def _contract_error(reply: dict[str, Any]) -> dict[str, Any]:
    """The golden error object of an error reply of one of the contract's kinds."""
    error = reply["error"]
    if error["kind"] == "server":
        return {"kind": "server", "message": error.get("message")}
    return {"kind": error["kind"]}
