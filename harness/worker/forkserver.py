"""The fork server of a Python target's workers: the target imported once, each worker forked.

`conform` starts this program (`harness.drive.forked.ForkServer`) instead of importing a Python
TARGET in every worker it starts: the server prepares itself exactly as a worker does
(`harness.worker.prepare`: stdin and stdout kept for the protocol, the memory limit, faulthandler),
loads the target once, says `{"ready": true}` on its stdout, and then, for each request on its
socket (the worker's stdin, stdout and stderr pipes, the files of protocol 3 and 4, its environment,
folder and arguments), forks a worker that is the same as one started afresh with the target
imported: in a session of its own, its stdio on those pipes, the environment and folder as given. It
forks twice, so the worker is re-parented to `conform` (a child subreaper), which waits for it and
kills it like any program it started.

Forking a process that runs threads is unsafe (a lock another thread held stays held for ever in
the child), so a server that runs more than one thread once the target is imported refuses to
serve (`{"refused": ...}`), and `conform` starts that target's workers the usual way. The server
ends when `conform` closes the socket, and with its process group when `conform` is stopped.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import fcntl
import gc
import json
import os
import resource
import signal
import socket
import sys
import threading
import traceback
from typing import IO, Any

from harness.drive.inprocess import Factory, load_target
from harness.errors import TargetError
from harness.worker.prepare import BUFFER, prepare_process, worker_arguments
from harness.worker.program import Session, mark_pass, serve

#: The largest request (its environment as JSON) and the most files one request passes.
MAX_REQUEST = 1 << 20
MAX_FDS = 8
#: Where the server keeps its own files: below the limit of open files, above what a worker
#: is given (the numbers of conform's own files, which a run keeps low).
_HIGH = max(64, min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 65536) - 128)


def main(args: list[str] | None = None) -> None:
    """`python -c BOOTSTRAP FD TARGET [--max-memory MIB]`: serve forks of the worker of
    `TARGET [--max-memory MIB]` (the adapter's command line) on the socket FD."""
    channel, *rest = sys.argv[1:] if args is None else args
    # The server's own files go to high numbers: the low ones are the worker's to take (the
    # files `hello` names are at the numbers conform has them at).
    sock = socket.socket(fileno=_high(int(channel)))
    replies = _claim_stdio_high()  # as a worker: what the target prints at import goes to stderr
    plain = worker_arguments(rest)
    if plain is None:
        _say(replies, {"refused": f"not a worker's command line: {rest}"})
        return
    target, limit = plain
    # As a worker's: `python -c TARGET [--max-memory MIB]`, without the socket's number.
    sys.argv[:] = ["-c", *rest]
    # The environment the server was given: a worker's is this with the request's changes, so
    # what the target sets at import stays set in every worker, as in one that imported it.
    given = dict(os.environ)
    prepare_process(limit)
    factory: Factory | None = None
    load_error: str | None = None
    try:
        factory = load_target(target)
    except TargetError as exc:  # each worker answers `hello` with it, as a started one would
        load_error = str(exc)
    threads = _threads()
    if threads != 1:
        _say(replies, {"refused": f"{threads} threads run once the target is imported"})
        return
    _say(replies, {"ready": True, "fds": _open_fds()})
    replies.close()
    # Nothing more to say: stdout and stderr go nowhere, so the server never blocks on a pipe.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    # What the import made lives as long as the workers: out of the collector's sight, so that
    # a worker's collections do not touch (and so copy) every page the server shares with it.
    gc.collect()  # the import's garbage first, as a worker's first collection would free it
    gc.freeze()
    with sock:
        serve_forks(sock, target, factory, load_error, given)


def _high(fd: int) -> int:
    """`fd` moved to a number above those a worker is likely to be given (`_HIGH`)."""
    try:
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _HIGH)
    except OSError:  # a low limit of open files: where it is, then
        return fd
    os.close(fd)
    return moved


def _claim_stdio_high() -> IO[bytes]:
    """`harness.worker.prepare.claim_stdio`, the server's files at high numbers: the protocol's
    stdout (its stdin is not read here), fds 0 and 1 (and `sys.stdin`, `sys.stdout`) pointed at
    /dev/null and stderr before the target is imported."""
    replies = os.fdopen(_high(os.dup(1)), "wb", buffering=BUFFER)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = os.fdopen(_high(os.open(os.devnull, os.O_RDONLY)), encoding="utf-8")
    sys.stdout = sys.stderr
    return replies


def _open_fds() -> list[int]:
    try:
        return sorted(int(name) for name in os.listdir("/proc/self/fd"))
    except OSError:
        return []


def _threads() -> int:
    """The threads of this process, native ones included (Linux), else Python's."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _say(stream: IO[bytes], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message).encode() + b"\n")
    stream.flush()


def serve_forks(
    sock: socket.socket,
    target: str,
    factory: Factory | None,
    load_error: str | None,
    given: dict[str, str],
) -> None:
    """Fork a worker for each request on `sock` and answer its pid, until the socket closes."""
    while True:
        message, fds, _, _ = socket.recv_fds(sock, MAX_REQUEST, MAX_FDS)
        if not message:
            for fd in fds:
                os.close(fd)
            return  # conform closed the socket: the run is over
        try:
            request = json.loads(message)
            pid = _fork(sock, request, fds, target, factory, load_error, given)
            answer: dict[str, Any] = {"pid": pid}
        except Exception as exc:  # that worker is started the usual way instead
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            for fd in fds:  # the worker's pipes must not stay open here: EOF is its death
                os.close(fd)
        sock.sendall(json.dumps(answer).encode())


def _fork(
    sock: socket.socket,
    request: dict[str, Any],
    fds: list[int],
    target: str,
    factory: Factory | None,
    load_error: str | None,
    given: dict[str, str],
) -> int:
    """The pid of a worker forked (twice: it is re-parented to conform) for `request`."""
    numbers = [0, 1, 2, *request["fds"]]
    if len(numbers) != len(fds):
        raise ValueError(f"{len(fds)} files passed for {len(numbers)} places")
    mine = {*fds, sock.fileno()}
    taken = [n for n in numbers[3:] if n not in mine and _is_open(n)]
    if taken:  # the worker needs that number for a file conform named in `hello`
        raise ValueError(f"file descriptor {taken[0]} is in use in the server")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    reader, writer = os.pipe()
    middle = os.fork()
    if middle == 0:
        code = 1
        try:
            os.close(reader)
            pid = os.fork()
            if pid == 0:
                os.close(writer)
                _become_worker(sock, request, fds, numbers, target, factory, load_error, given)
            os.write(writer, b"%d" % pid)
            code = 0
        finally:
            os._exit(code)
    os.close(writer)
    with os.fdopen(reader, "rb") as said:
        text = said.read()
    os.waitpid(middle, 0)  # gone: its child is conform's now
    if not text:
        raise RuntimeError("the fork failed")
    return int(text)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _become_worker(
    sock: socket.socket,
    request: dict[str, Any],
    fds: list[int],
    numbers: list[int],
    target: str,
    factory: Factory | None,
    load_error: str | None,
    given: dict[str, str],
) -> None:
    """Turn this forked process into the worker `request` describes; never returns.

    Its environment is the server's with what the request's differs in from what the server
    was given (`given`): the variables the target set or changed at import stay as it left
    them, as in a worker that imported it with that environment."""
    code = 0
    try:
        sock.close()
        os.setsid()  # a session and process group of its own, as every worker has
        # The files first go above every number they must take, then to their numbers.
        above = max(numbers) + 1
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, above) for fd in fds]
        for fd in fds:
            os.close(fd)
        for fd, number in zip(high, numbers, strict=True):
            os.dup2(fd, number)  # inheritable, as `pass_fds` makes them
            os.close(fd)
        _take_environment(request["env"], given)
        os.chdir(request["cwd"])
        sys.argv[:] = request["argv"]
        requests, replies = _reclaim_stdio()
        faulthandler.enable()  # on the new stderr
        with contextlib.suppress(BrokenPipeError):
            serve(Session(target, factory, load_error, marks=mark_pass), requests, replies)
        atexit._run_exitfuncs()  # as an interpreter ending normally runs them
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def _take_environment(wanted: dict[str, str], given: dict[str, str]) -> None:
    """Make `os.environ` what a worker started with `wanted` would have after the import that
    this server made with `given`: each variable `wanted` has otherwise than `given` is set
    (or removed), and every other stays as the import left it."""
    for name in given.keys() - wanted.keys():
        os.environ.pop(name, None)
    for name, value in wanted.items():
        if given.get(name) != value:
            os.environ[name] = value


def _reclaim_stdio() -> tuple[IO[bytes], IO[bytes]]:
    """`claim_stdio` for the worker's own fds 0 and 1 (`sys.stdin` and `sys.stdout` were
    pointed elsewhere in the server already, before the target was imported)."""
    requests = os.fdopen(os.dup(0), "rb", buffering=BUFFER)
    replies = os.fdopen(os.dup(1), "wb", buffering=BUFFER)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return requests, replies
