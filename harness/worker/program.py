"""The worker program, `python -m harness.adapter TARGET`: any Python target as a program that
speaks the protocol.

It answers docs/protocol.md on stdin and stdout for the assembler that TARGET names, through the
same calls as an in-process run (`harness.drive.inprocess.push_step`, `finish_step` and the
normalizers), so both give the same results; its requests and replies are the typed messages the
driver uses too (`harness.drive.messages`), read and written the fast way
(`harness.drive.fastlines`: msgspec where it gives what the json module gives). `conform run
TARGET` starts it as its worker process.

The target must not be able to corrupt the protocol: before the target is imported, the adapter
keeps private copies of the real stdin and stdout for itself and points file descriptors 0 and 1
(and `sys.stdin`, `sys.stdout`) at /dev/null and stderr, so the target's prints land on stderr,
which the harness shows with the case's failures. Its memory is limited (`--max-memory`), so a
target that exhausts it fails with MemoryError instead of taking the machine down.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any

from harness.drive.fastlines import own_request
from harness.drive.fastlines import reply_line as fast_reply_line
from harness.drive.inprocess import (
    Factory,
    TargetCrash,
    finish_step,
    load_target,
    new_assembler,
    push_step,
    split_spec,
)
from harness.drive.messages import (
    BadRequest,
    Bye,
    Failed,
    Finish,
    Finished,
    Hello,
    New,
    Ok,
    Pass,
    Push,
    Pushed,
    Reply,
    Request,
    Started,
    pass_mark,
    reply_line,
    reply_object,
)
from harness.drive.normalize import SAID
from harness.errors import TargetError
from harness.worker.prepare import (
    DEFAULT_MAX_MEMORY_MIB,
    claim_stdio,
    prepare_process,
    worker_arguments,
)

_SEPARATORS = re.compile(r"[-_.]+")
_METADATA_SUFFIXES = frozenset({"dist-info", "egg-info"})
_PATH_FINDERS = frozenset(
    {
        "importlib._bootstrap",
        "importlib._bootstrap_external",
        "_frozen_importlib",
        "_frozen_importlib_external",
    }
)


def _version_of(factory: Factory) -> str:
    """The target's version: its module's or package's `__version__`, or the distribution's."""
    module_name = getattr(factory, "__module__", None) or ""
    top = module_name.partition(".")[0]
    for name in (module_name, top):
        version = getattr(sys.modules.get(name), "__version__", None)
        if isinstance(version, str) and version:
            return version
    if not top or not _may_be_installed(top):
        return "unknown"
    from importlib import metadata  # here: 20 ms a start, for a target without __version__

    try:  # a distribution named like the package (scanning them all costs 0.1 s a start)
        return metadata.version(top)
    except (metadata.PackageNotFoundError, ValueError):
        return "unknown"


def _normalized(name: str) -> str:
    """A distribution's name as `importlib.metadata` compares it."""
    return _SEPARATORS.sub("_", name).lower()


def _may_be_installed(name: str) -> bool:
    """False only when no folder of `sys.path` holds the metadata (`*.dist-info`, `*.egg-info`)
    of a distribution called `name`: then `importlib.metadata` would find none either, and is not
    imported (most of the time a worker took to start, for a target without `__version__`, as
    the reference). Anything else on the path (a zip archive, a finder of its own) is a maybe."""
    if any(
        hasattr(finder, "find_distributions") and finder.__module__ not in _PATH_FINDERS
        for finder in sys.meta_path
    ):
        return True
    wanted = _normalized(name)
    for entry in sys.path:
        try:
            children = os.listdir(entry or os.curdir)
        except NotADirectoryError:
            return True  # a zip archive: the metadata may be inside
        except OSError:
            continue
        for child in children:
            stem, dot, suffix = child.rpartition(".")
            metadata = dot and suffix.lower() in _METADATA_SUFFIXES
            if metadata and _normalized(stem.partition("-")[0]) == wanted:
                return True
    return False


class Session:
    """Answers requests for one target, one at a time."""

    def __init__(
        self,
        spec: str,
        factory: Factory | None,
        load_error: str | None,
        *,
        marks: Callable[[str], None] | None = None,
    ) -> None:
        self._spec = spec
        self._marks = marks  # writes a pass's mark to stderr as it begins
        self._factory = factory
        self._load_error = load_error
        self._assembler: Any = None
        self._version: str | None = None
        self.done = False  # `bye` was answered

    def answer(self, line: bytes) -> tuple[dict[str, Any], bool]:
        """The reply to one request line (not a pass), as its JSON object, and whether the
        program should exit after it."""
        (reply,) = self.respond(line)
        return reply_object(reply), self.done

    def respond(self, line: bytes) -> Iterator[Reply]:
        """The replies to one request line, each as soon as it is made: one, or for a pass, one
        for each call it stands for, up to the one that ends the case. `done` is set once the
        program should exit."""
        try:
            request = own_request(line)
        except BadRequest as exc:
            yield Failed(exc.seq, "bad_request", exc.message)
            return
        if not isinstance(request, Pass):
            yield self._reply(request)
            self.done = isinstance(request, Bye)
            return
        if self._marks is not None and request.mark is not None:
            self._marks(request.mark)
        for call in request.calls():
            reply = self._reply(call)
            yield reply
            if isinstance(reply, Failed):  # the case ended: nothing more reaches the assembler
                return

    def _reply(self, request: Request) -> Reply:
        try:
            return self._answer(request)
        except BadRequest as exc:
            return Failed(exc.seq, "bad_request", exc.message)
        except TargetCrash as crash:
            message = f"{crash.message}\n{crash.details}" if crash.details else crash.message
            return Failed(request.seq, "crash", message)

    def _answer(self, request: Request) -> Reply:
        seq = request.seq
        if isinstance(request, Push):  # most requests: looked for first
            step = push_step(self._open_assembler(seq), request.data, 0, say=True)
            if "error" in step:
                return _contract_error(seq, step)
            return Pushed(seq, step["events"], step["state"])
        if isinstance(request, Hello):
            if self._load_error is not None or self._factory is None:
                raise BadRequest(seq, self._load_error or "no target")
            if self._version is None:
                self._version = _version_of(self._factory)
            return Started(seq, self._spec, self._version, "python")
        if isinstance(request, New):
            if self._factory is None:
                raise BadRequest(seq, self._load_error or "no target")
            self._assembler = None
            self._assembler = new_assembler(self._factory)
            return Ok(seq)
        if isinstance(request, Finish):
            done = finish_step(self._open_assembler(seq), request.thinking_capped, say=True)
            if "error" in done:
                return _contract_error(seq, done)
            return Finished(seq, done["completion"])
        return Ok(seq)  # bye

    def _open_assembler(self, seq: int) -> Any:
        if self._assembler is None:
            raise BadRequest(seq, 'no case is open: send "new" first')
        return self._assembler


def _contract_error(seq: int, step: dict[str, Any]) -> Failed:
    # Messages of kinds other than `server` are not compared (harness.drive.normalize), but reports
    # show them: the reply carries the assembler's own message whatever the kind.
    error = step["error"]
    said = step.get(SAID, "")
    kind = str(error["kind"])
    message = error["message"] if "message" in error else said.removeprefix(f"{kind}: ")
    return Failed(seq, kind, message)


def encoded(reply: Reply) -> bytes:
    """`reply` as its line; one that cannot be written is a crash reply instead, never the
    adapter's own traceback."""
    try:
        return fast_reply_line(reply)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        problem = f"{type(exc).__name__}: {exc}"
    message = f"the assembler's result cannot be sent as JSON ({problem})"
    return reply_line(Failed(reply.seq, "crash", message))


def serve(session: Session, requests: IO[bytes], replies: IO[bytes]) -> None:
    """Answer every request line until `bye` or the end of input."""
    for line in iter(requests.readline, b""):
        if line.isspace():  # not strip(): that copies a 50 MB line
            continue
        for reply in session.respond(line):
            replies.write(encoded(reply))
            replies.flush()  # each call's reply as soon as it is made: the time allowed is a call's
        if session.done:
            return


def main(args: list[str] | None = None, prog_name: str | None = None) -> None:
    """`python -m harness.adapter TARGET [--max-memory MIB]`: serve TARGET.

    The command line conform itself starts a worker with is read here; any other one (`--help`, a
    mistake, another spelling of the option) goes to the click command, which explains it. So a
    worker does not import click, about a fifth of its start."""
    args = sys.argv[1:] if args is None else args
    plain = worker_arguments(args)
    if plain is None:
        _command()(args, prog_name=prog_name)
    else:
        _serve_target(*plain)


def _command() -> Any:
    """The adapter's click command (made on first use: a worker started by conform needs none)."""
    import click

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
    def command(target: str, max_memory: int) -> None:
        """Serve TARGET (module:Class, module:factory or file.py:Class) over conform's line
        protocol.

        Reads requests from stdin and writes replies to stdout (docs/protocol.md); the target's
        own output goes to stderr.
        """
        try:
            split_spec(target)
        except ValueError as exc:
            raise click.BadParameter(f"{target!r}: {exc}", param_hint="TARGET") from None
        _serve_target(target, max_memory)

    return command


def _serve_target(target: str, max_memory: int) -> None:
    requests, replies = claim_stdio()
    prepare_process(max_memory)
    factory: Factory | None = None
    load_error: str | None = None
    try:
        factory = load_target(target)
    except TargetError as exc:
        load_error = str(exc)
    # When the harness went away (a broken pipe), nobody is left to answer.
    with contextlib.suppress(BrokenPipeError):
        serve(Session(target, factory, load_error, marks=mark_pass), requests, replies)


def mark_pass(token: str) -> None:
    """The mark of a pass (`messages.pass_mark`) on stderr, after what the target's streams still
    hold (which the pass before wrote; file descriptor 1 is stderr here too)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(OSError):
        os.write(2, pass_mark(token))


if __name__ == "__main__":
    main()
