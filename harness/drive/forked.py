"""Python workers forked from a server that imported the target once, instead of importing it each.

A worker of a Python TARGET (`python -m harness.adapter`) imports the target every time it
starts: at the start of a run, after each crash or timeout, for each `-j` worker and each worker a
matrix adds on an idle core. For a client library that import is most of the worker's CPU (about
4 s for litellm). Inside `forked_workers()` (every run of `harness.pipeline` is one), the first
worker of a Python target starts a **fork server** instead (`harness.worker.forkserver`, the same
interpreter, folder, `sys.path` and environment the worker would have): it imports the target
once, and every worker of that target in the run is forked from it, ready at once.

A forked worker is what a started one is: its own session and process group, its stdin, stdout
and stderr on pipes of its own, the environment and folder it would have had. It is re-parented
to this process (a child subreaper, `harness.drive.programs`), which waits for it and kills it on
a timeout as any program; the server is not touched. Whenever the server cannot serve (it failed
or refused to start: a crash or a hang at import, threads running after it; it died; a fork
failed), the worker is started the usual way, so a target that cannot start fails exactly as
without the server. The servers end with the outermost `forked_workers()`, and with every program
on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from harness.drive.pipes import Process, Worker
from harness.drive.programs import kill_marked, new_family

if TYPE_CHECKING:  # (the driver itself is not needed to start a server: `head_start`)
    from harness.drive.process import Launch

# The worker gets exactly the harness's sys.path, so it imports what `conform` itself could; the
# adapter itself comes from conform's own folder first, whatever `harness` the path holds.
_BOOTSTRAP = (
    "import json, os, sys; "
    "sys.path[:] = json.loads(os.environ.pop('CONFORM_SYS_PATH')); "
    "own = os.environ.pop('CONFORM_OWN_ROOT'); sys.path.insert(0, own); "
    "from harness.worker.program import main; "
    "sys.path.remove(own); "
    "main(prog_name='python -m harness.adapter')"
)
_OWN_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: The worker's environment names the bootstrap takes out (`_BOOTSTRAP`).
_BOOTSTRAP_NAMES = ("CONFORM_SYS_PATH", "CONFORM_OWN_ROOT")
_SERVER_BOOTSTRAP = (
    "import json, os, sys; "
    "sys.path[:] = json.loads(os.environ.pop('CONFORM_SYS_PATH')); "
    "own = os.environ.pop('CONFORM_OWN_ROOT'); sys.path.insert(0, own); "
    "from harness.worker.forkserver import main; "
    "sys.path.remove(own); "
    "main()"
)
#: Set (not empty) in conform's environment: every worker imports its target itself.
NO_FORK_SERVER = "CONFORM_NO_FORK_SERVER"
_FORK_TIME = 10.0  # seconds a fork may take before the worker is started the usual way


class Adopted:
    """A forked worker's process, this process's child once re-parented: what a `Worker` asks
    of a `subprocess.Popen`."""

    def __init__(self, pid: int, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self.pid = pid
        self.stdin: IO[bytes] | None = stdin
        self.stdout: IO[bytes] | None = stdout
        self.stderr: IO[bytes] | None = stderr
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        """Its exit code (negative: the signal) once it has ended, else None."""
        with self._lock:
            if self.returncode is None:
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:  # reaped by `kill_marked` as it stopped the run
                    self.returncode = -signal.SIGKILL
                else:
                    if pid:
                        self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code, waited for (`subprocess.TimeoutExpired` after `timeout` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pidfd = None
        with contextlib.suppress(AttributeError, OSError):
            pidfd = os.pidfd_open(self.pid)
        try:
            while True:
                code = self.poll()
                if code is not None:
                    return code
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
                if pidfd is not None:
                    select.select([pidfd], [], [], left)
                else:
                    time.sleep(0.01 if left is None else min(left, 0.01))
        finally:
            if pidfd is not None:
                os.close(pidfd)


def worker_command(spec: str, *, max_memory: int | None = None) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of a worker of the Python target `spec`
    (`python -m harness.adapter`): this interpreter, with this process's `sys.path`;
    `max_memory` (MiB) overrides the adapter's default address-space limit."""
    path = [os.path.abspath(entry or os.curdir) for entry in sys.path]
    env = {**os.environ, "CONFORM_SYS_PATH": json.dumps(path), "CONFORM_OWN_ROOT": _OWN_ROOT}
    command = [sys.executable, "-c", _BOOTSTRAP, spec]
    if max_memory is not None:
        command += ["--max-memory", str(max_memory)]
    return command, env


class ForkServer:
    """One target's fork server (`harness.worker.forkserver`), started and ready;
    `ForkServerUnavailable` else."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str], time_allowed: float):
        self._start(command, env)
        self.wait_ready(time_allowed)

    @classmethod
    def starting(cls, command: Sequence[str], env: Mapping[str, str]) -> ForkServer:
        """A server started but not waited for: it imports the target while this process goes
        on (`wait_ready` before its first fork)."""
        server = cls.__new__(cls)
        server._start(command, env)
        return server

    def _start(self, command: Sequence[str], env: Mapping[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        self._lock = threading.Lock()
        self.forks = 0
        # The worker's own arguments (TARGET [--max-memory MIB]) after the socket's number.
        server = [command[0], "-c", _SERVER_BOOTSTRAP, str(theirs.fileno()), *command[3:]]
        try:
            self._worker = Worker(server, env, family=new_family(), pass_fds=(theirs.fileno(),))
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()

    def wait_ready(self, time_allowed: float) -> None:
        """Wait for the server to say it is ready (its target imported);
        `ForkServerUnavailable`, with the server stopped, when it does not within `time_allowed`
        seconds."""
        try:
            line = self._worker.receive(time.monotonic() + time_allowed)
        except (OSError, EOFError):
            line = b""
        said: Any = None
        with contextlib.suppress(ValueError):
            said = json.loads(line or b"null")
        if not (isinstance(said, dict) and said.get("ready") is True):
            self.close()
            why = "no answer in time" if line is None else (line or b"it ended").decode()
            raise ForkServerUnavailable(f"the fork server did not start: {why}")

    def fork(
        self, command: Sequence[str], env: Mapping[str, str], pass_fds: tuple[int, ...]
    ) -> Process:
        """A worker forked with these stdio pipes, environment and files;
        `ForkServerUnavailable` when the server cannot make it."""
        pipes = [os.pipe() for _ in range(3)]
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1]]
        ours = [pipes[0][1], pipes[1][0], pipes[2][0]]
        environ = {k: v for k, v in env.items() if k not in _BOOTSTRAP_NAMES}
        request = {
            "env": environ,
            "cwd": os.getcwd(),
            "argv": ["-c", *command[3:]],
            "fds": list(pass_fds),
        }
        try:
            with self._lock:
                self._sock.settimeout(_FORK_TIME)
                socket.send_fds(self._sock, [json.dumps(request).encode()], [*theirs, *pass_fds])
                answer = json.loads(self._sock.recv(4096) or b"{}")
        except (OSError, ValueError) as exc:
            for fd in ours:
                os.close(fd)
            raise ForkServerUnavailable(f"the fork server is gone: {exc}") from None
        finally:
            for fd in theirs:
                os.close(fd)
        pid = answer.get("pid") if isinstance(answer, dict) else None
        if type(pid) is not int:
            for fd in ours:
                os.close(fd)
            raise ForkServerUnavailable(f"the fork server could not fork: {answer}")
        try:  # re-parented to this process? Only then can it be waited for (not reaped here)
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            for fd in ours:
                os.close(fd)
            raise ForkServerUnavailable("a forked worker is not this process's child") from None
        self.forks += 1
        stdin, stdout, stderr = (  # (the Worker closes them)
            open(fd, mode, buffering=0)  # noqa: SIM115
            for fd, mode in zip(ours, ("wb", "rb", "rb"), strict=True)
        )
        return Adopted(pid, stdin, stdout, stderr)

    def close(self, *, family: bool = True) -> None:
        """Stop the server and, with `family`, every process that carries its mark.

        The workers it forked carry its mark (a forked process keeps the environment block it
        was forked with, as /proc shows it), and so does what they start without a new program
        (a daemon forked, not executed). A server that stops serving mid-run is stopped alone
        (`family=False`: its workers at work go on); its family is killed once the runs are over
        (`kill_family`), as is a server's that served to the end."""
        with contextlib.suppress(OSError):
            self._sock.close()
        self._worker.stop(kill=True, family=family)

    def kill_family(self) -> None:
        """Kill what carries this server's mark (every run that used it is over)."""
        kill_marked(self._worker.family + "\0")


class ForkServerUnavailable(Exception):
    """The fork server cannot serve: the worker is started the usual way."""


class _ForkedWorker(Worker):
    """A `Worker` whose program is forked from `server` (or started the usual way when the
    server cannot: `ForkServerUnavailable`)."""

    def __init__(
        self, server: _Slot, command: Sequence[str], env: Mapping[str, str] | None, **kw: Any
    ):
        self._server = server
        super().__init__(command, env, **kw)

    def _spawn(self, command: list[str], env: dict[str, str], pass_fds: tuple[int, ...]) -> Process:
        server = self._server.get()
        if server is not None:
            try:
                return server.fork(command, env, pass_fds)
            except ForkServerUnavailable:
                self._server.broken()
        return super()._spawn(command, env, pass_fds)


class _Slot:
    """The fork server of one worker command line and environment: started on first use, once;
    None for good once it could not start or stopped serving."""

    def __init__(
        self,
        command: Sequence[str],
        env: Mapping[str, str],
        time_allowed: float,
        started: ForkServer | None = None,
    ):
        self._command, self._env, self._time = list(command), dict(env), time_allowed
        self._lock = threading.Lock()
        self._server: ForkServer | None = None
        self._started = started  # started ahead of the run (`head_start`), not yet waited for
        self._stopped: list[ForkServer] = []  # servers that stopped serving mid-run
        self._tried = False
        self._closed = False

    def get(self) -> ForkServer | None:
        with self._lock:
            if not self._tried and not self._closed:
                self._tried = True
                started, self._started = self._started, None
                try:
                    if started is None:
                        self._server = ForkServer(self._command, self._env, self._time)
                    else:
                        started.wait_ready(self._time)
                        self._server = started
                except ForkServerUnavailable:
                    self._server = None
            return self._server

    def broken(self) -> None:
        """The server stopped serving: stopped alone, its workers at work left to finish."""
        with self._lock:
            server, self._server = self._server, None
            if server is not None:
                self._stopped.append(server)
        if server is not None:
            server.close(family=False)

    def close(self) -> None:
        """The runs are over: the server stopped, and what carries its mark (or the mark of
        one stopped before) killed."""
        with self._lock:
            self._closed = True
            server, self._server = self._server, None
            stopped, self._stopped = self._stopped, []
            started, self._started = self._started, None
        for unused in (server, started):
            if unused is not None:
                unused.close()
        for old in stopped:
            old.kill_family()

    @property
    def forks(self) -> int:
        server = self._server
        return 0 if server is None else server.forks


class _Servers:
    """The fork servers of the runs in progress in this process (`forked_workers`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._slots: dict[tuple[Any, ...], _Slot] = {}
        self._ahead: dict[tuple[Any, ...], ForkServer] = {}  # `head_start`'s, not yet taken

    def enter(self) -> None:
        with self._lock:
            self._depth += 1

    def leave(self) -> None:
        with self._lock:
            self._depth -= 1
            slots = list(self._slots.values()) if self._depth == 0 else []
            ahead = list(self._ahead.values()) if self._depth == 0 else []
            if self._depth == 0:
                self._slots.clear()
                self._ahead.clear()
        for slot in slots:
            slot.close()
        for server in ahead:  # started for a run that did not want it
            server.close()

    @staticmethod
    def _key(command: Sequence[str], env: Mapping[str, str]) -> tuple[Any, ...]:
        return (tuple(command), tuple(sorted(env.items())), os.getcwd())

    def start_ahead(self, command: Sequence[str], env: Mapping[str, str]) -> None:
        key = self._key(command, env)
        with self._lock:
            if key in self._ahead:
                return
            self._ahead[key] = ForkServer.starting(command, env)

    def slot(
        self, command: Sequence[str], env: Mapping[str, str], time_allowed: float
    ) -> _Slot | None:
        key = self._key(command, env)
        with self._lock:
            if self._depth == 0:
                return None
            found = self._slots.get(key)
            if found is None:
                started = self._ahead.pop(key, None)
                found = self._slots[key] = _Slot(command, env, time_allowed, started)
            return found


_SERVERS = _Servers()


@contextlib.contextmanager
def forked_workers() -> Iterator[None]:
    """Within this, the workers of Python targets are forked from one server per target (and
    command line, environment and folder); the servers stop when the outermost one ends."""
    _SERVERS.enter()
    try:
        yield
    finally:
        _SERVERS.leave()


def enabled() -> bool:
    """False on other systems than Linux, and when `CONFORM_NO_FORK_SERVER` is set (not empty):
    for a target whose import opens what its workers must not share (a connection, a device),
    each worker then imports it itself."""
    return sys.platform == "linux" and not os.environ.get(NO_FORK_SERVER)


def launcher(*, time_allowed: float) -> Launch:
    """How a driver of a Python target starts each worker (`ProcessDriver`'s `launch`): forked
    from the target's server while a `forked_workers()` is open, else started as usual."""

    def launch(command: Sequence[str], env: Mapping[str, str] | None, **kw: Any) -> Worker:
        slot = None if env is None or not enabled() else _SERVERS.slot(command, env, time_allowed)
        if slot is None:
            return Worker(command, env, **kw)
        return _ForkedWorker(slot, command, env, **kw)

    return launch


#: `conform run` options after which no Python worker is started (or only help is printed).
_NO_WORKER = frozenset({"--in-process", "--exec", "-h", "--help"})


def head_start(args: Sequence[str]) -> bool:
    """Start the fork server that the command line `args` (`sys.argv[1:]` of `conform`) will
    want, before conform has imported the rest of itself; True when one was started.

    Only `conform run TARGET ...` with a Python TARGET run in workers (no `--in-process`,
    `--exec` or `--help`) starts one, with the command line and environment its workers get
    (`worker_command`). The server imports the target while conform imports itself and reads
    the suite (on another core, where there is one), and the run's first worker is forked from
    it as from a server it started itself; a run that wants another one (a changed `sys.path` or
    environment), or none (a usage error), leaves it unused, and it is stopped with the run or
    at exit. Nothing is ever raised: the run then starts its server as usual."""
    if len(args) < 2 or args[0] != "run" or not enabled():
        return False
    target = args[1]
    if target.startswith("-") or ":" not in target:
        return False
    if any(arg in _NO_WORKER or arg.startswith("--exec=") for arg in args[2:]):
        return False
    command, env = worker_command(target)
    try:
        _SERVERS.start_ahead(command, env)
    except Exception:  # (a program that cannot start: the run finds that out itself)
        return False
    return True
