"""`python -m harness.adapter TARGET`: any Python target as a program that speaks the protocol.

It answers docs/protocol.md on stdin and stdout for the assembler that TARGET names, through the
same calls as an in-process run (`harness.drive.inprocess.push_step`, `finish_step` and the
normalizers), so both give the same results. `conform run TARGET` starts it as its worker process.

The target must not be able to corrupt the protocol: before the target is imported, the adapter
keeps private copies of the real stdin and stdout for itself and points file descriptors 0 and 1
(and `sys.stdin`, `sys.stdout`) at /dev/null and stderr, so the target's prints land on stderr,
which the harness shows with the case's failures. Its memory is limited (`--max-memory`), so a
target that exhausts it fails with MemoryError instead of taking the machine down.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import sys
from collections.abc import Callable
from importlib import metadata
from typing import IO, Any

import click

from harness.drive.inprocess import (
    Factory,
    TargetCrash,
    finish_step,
    load_target,
    new_assembler,
    push_step,
    split_spec,
)
from harness.drive.normalize import SAID
from harness.drive.process import PROTOCOL_VERSION
from harness.drive.wire import decode_line, encode_line
from harness.errors import TargetError

DEFAULT_MAX_MEMORY_MIB = 2048
_BUFFER = 1024 * 1024


class _BadRequest(Exception):
    """The request cannot be acted on (see the protocol's `bad_request`)."""


def _claim_stdio() -> tuple[IO[bytes], IO[bytes]]:
    """The real stdin and stdout, for the protocol only; fds 0 and 1 then go elsewhere."""
    requests = os.fdopen(os.dup(0), "rb", buffering=_BUFFER)  # large requests: few reads
    replies = os.fdopen(os.dup(1), "wb", buffering=_BUFFER)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    sys.stdout = sys.stderr
    return requests, replies


def _limit_memory(mebibytes: int) -> None:
    if mebibytes <= 0:
        return
    try:
        import resource
    except ImportError:  # not POSIX: no limit
        return
    wanted = mebibytes * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


def _version_of(factory: Factory) -> str:
    """The target's version: its module's or package's `__version__`, or the distribution's."""
    module_name = getattr(factory, "__module__", None) or ""
    top = module_name.partition(".")[0]
    for name in (module_name, top):
        version = getattr(sys.modules.get(name), "__version__", None)
        if isinstance(version, str) and version:
            return version
    try:  # a distribution named like the package (scanning them all costs 0.1 s a start)
        return metadata.version(top) if top else "unknown"
    except (metadata.PackageNotFoundError, ValueError):
        return "unknown"


class Session:
    """Answers requests for one target, one line at a time."""

    def __init__(self, spec: str, factory: Factory | None, load_error: str | None) -> None:
        self._spec = spec
        self._factory = factory
        self._load_error = load_error
        self._assembler: Any = None
        self._version: str | None = None

    def answer(self, line: bytes) -> tuple[dict[str, Any], bool]:
        """The reply to one request line, and whether the program should exit after it."""
        try:
            request = decode_line(line)
        except ValueError as exc:
            return _error(None, "bad_request", f"the request is not valid JSON: {exc}"), False
        seq = request.get("seq") if isinstance(request, dict) else None
        if not isinstance(seq, int) or isinstance(seq, bool):
            return _error(None, "bad_request", 'every request needs an integer "seq"'), False
        try:
            return self._dispatch(seq, request)
        except _BadRequest as exc:
            return _error(seq, "bad_request", str(exc)), False
        except TargetCrash as crash:
            message = f"{crash.message}\n{crash.details}" if crash.details else crash.message
            return _error(seq, "crash", message), False

    def _dispatch(self, seq: int, request: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        op = request.get("op")
        if op == "hello":
            if request.get("protocol") != PROTOCOL_VERSION:
                asked = request.get("protocol")
                raise _BadRequest(f"protocol {asked!r} is not spoken here; {PROTOCOL_VERSION} is")
            if self._load_error is not None or self._factory is None:
                raise _BadRequest(self._load_error or "no target")
            if self._version is None:
                self._version = _version_of(self._factory)
            hello = {"name": self._spec, "version": self._version, "language": "python"}
            return {"seq": seq, **hello, "protocol": PROTOCOL_VERSION}, False
        if op == "new":
            if self._factory is None:
                raise _BadRequest(self._load_error or "no target")
            self._assembler = None
            self._assembler = new_assembler(self._factory)
            return {"seq": seq, "ok": True}, False
        if op == "push":
            data = request.get("data")
            if not isinstance(data, str):
                raise _BadRequest('"push" needs a string "data"')
            step = push_step(self._open_assembler(), data, 0, say=True)
            if "error" in step:
                return _contract_error(seq, step), False
            return {"seq": seq, "events": step["events"], "state": step["state"]}, False
        if op == "finish":
            capped = request.get("thinking_capped")
            if not isinstance(capped, bool):
                raise _BadRequest('"finish" needs a boolean "thinking_capped"')
            done = finish_step(self._open_assembler(), capped, say=True)
            if "error" in done:
                return _contract_error(seq, done), False
            return {"seq": seq, "completion": done["completion"]}, False
        if op == "bye":
            return {"seq": seq, "ok": True}, True
        raise _BadRequest(f"unknown op {json.dumps(op)}")

    def _open_assembler(self) -> Any:
        if self._assembler is None:
            raise _BadRequest('no case is open: send "new" first')
        return self._assembler


def _error(seq: int | None, kind: str, message: str) -> dict[str, Any]:
    return {"seq": seq, "error": {"kind": kind, "message": message}}


def _contract_error(seq: int, step: dict[str, Any]) -> dict[str, Any]:
    # Messages of kinds other than `server` are not compared (harness.drive.normalize), but reports
    # show them: the reply carries the assembler's own message whatever the kind.
    error = step["error"]
    said = step.get(SAID, "")
    kind = str(error["kind"])
    message = error["message"] if "message" in error else said.removeprefix(f"{kind}: ")
    return _error(seq, kind, message)


def serve(session: Session, requests: IO[bytes], replies: IO[bytes]) -> None:
    """Answer every request line until `bye` or the end of input."""
    write: Callable[[bytes], object] = replies.write
    for line in requests:
        if line.isspace():  # not strip(): that copies a 50 MB line
            continue
        reply, done = session.answer(line)
        write(encode_line(reply, ascii_only=False))
        replies.flush()
        if done:
            return


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target")
@click.option(
    "--max-memory",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_MEMORY_MIB,
    show_default=True,
    metavar="MIB",
    help="Address-space limit of this process in MiB (0: none); beyond it, MemoryError.",
)
def main(target: str, max_memory: int) -> None:
    """Serve TARGET (module:Class, module:factory or file.py:Class) over conform's line protocol.

    Reads requests from stdin and writes replies to stdout (docs/protocol.md); the target's own
    output goes to stderr.
    """
    try:
        split_spec(target)
    except ValueError as exc:
        raise click.BadParameter(f"{target!r}: {exc}", param_hint="TARGET") from None
    requests, replies = _claim_stdio()
    faulthandler.enable()  # a segfault in the target leaves its traceback on stderr
    _limit_memory(max_memory)
    factory: Factory | None = None
    load_error: str | None = None
    try:
        factory = load_target(target)
    except TargetError as exc:
        load_error = str(exc)
    # When the harness went away (a broken pipe), nobody is left to answer.
    with contextlib.suppress(BrokenPipeError):
        serve(Session(target, factory, load_error), requests, replies)


if __name__ == "__main__":
    main()
