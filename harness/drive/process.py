"""Driving a target that runs as another program, over conform's line protocol (docs/protocol.md).

`ProcessDriver` starts the program (a `harness.drive.pipes.Worker`), shakes hands, and turns each
call into one request line and one reply line (`harness.drive.messages`): `new`, each `push`,
`finish`, and `bye` at the end. Everything outside the protocol is a result, never a harness
failure: a program that dies, writes a line that is not a reply, answers out of order, reports a
crash or says nothing for longer than the time allowed for one call fails that case
(`TargetCrash` or `TargetTimeout`, with the tail of what it wrote to stderr) and is started again
before the next case.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.drive.base import DEFAULT_TIMEOUT
from harness.drive.messages import (
    PROTOCOL_VERSION,
    BadHello,
    BadReply,
    Bye,
    Failed,
    Finish,
    Finished,
    Hello,
    New,
    NotAReply,
    Push,
    Pushed,
    Refused,
    Reply,
    Request,
    Started,
    members,
    read_reply,
    request_line,
)
from harness.drive.normalize import SAID
from harness.drive.pipes import GRACE, QUOTED_CHARS, Worker, shortened_stderr
from harness.drive.programs import allow_programs, new_family, stop_all_programs
from harness.drive.reply_form import Validator
from harness.errors import TargetCrash, TargetError, TargetTimeout
from harness.safetext import shorten

__all__ = [
    "DEFAULT_TIMEOUT",
    "PROTOCOL_VERSION",
    "ProcessDriver",
    "ProgramInfo",
    "allow_programs",
    "quoted",
    "shortened_stderr",
    "stop_all_programs",
]

#: How a driver starts each copy of its program: `Worker` itself, or a launcher that forks it
#: from a server that imported the target once (`harness.drive.forked`).
Launch = Callable[..., Worker]

HELLO_TIME = 5.0  # seconds a program has at least to start and answer `hello`


@dataclass(frozen=True, slots=True)
class ProgramInfo:
    """What the program said about itself in the handshake."""

    name: str
    version: str
    language: str


def quoted(text: str, limit: int = QUOTED_CHARS) -> str:
    """`text` on one line, shortened to `limit` characters."""
    return shorten(text.rstrip("\r\n"), limit)


class ProcessDriver:
    """Drives a target that is another program speaking the protocol over stdin and stdout.

    The program starts with `start` (or the first case) and is started again after a case that
    broke the protocol. `timeout` is the time allowed for each call, in seconds. With
    `own_worker` (the program is conform's own worker, `python -m harness.adapter`), its own
    messages for a refused handshake and a crash are shown as they are (the adapter's words for
    a TARGET that cannot load or that raised, as an in-process run has them), and a number its
    replies hold that JSON cannot (`NaN`) is read as the value it is.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        validate: bool = False,
        env: Mapping[str, str] | None = None,
        label: str | None = None,
        own_worker: bool = False,
        launch: Launch | None = None,
    ) -> None:
        if not command:
            raise TargetError("the command is empty", hint="give --exec 'COMMAND ARGS'")
        self._command = list(command)
        self.label = label or shlex.join(self._command)
        self._timeout = timeout
        self._validator = Validator() if validate else None
        self._env = env
        self.own_worker = own_worker
        self._launch: Launch = Worker if launch is None else launch  # how each copy starts
        self._worker: Worker | None = None
        self._family = new_family()  # marks this driver's programs and all they start
        self._seq = 0  # the last request's seq (1 for the first after the program starts)
        self._case_mark = 0  # where the current case's stderr begins
        self._last: Request | None = None  # the request last sent (quoted in failures)
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
            self._worker = self._launch(self._command, self._env, family=self._family)
            self._seq = 0
            self._case_mark = 0
            try:
                reply = self._call(Hello(self._next_seq()), max(self._timeout, HELLO_TIME))
                self.program = self._read_hello(reply)
            except _Refused as exc:
                self._discard()
                if self.own_worker:  # the adapter's own words for a target that cannot load
                    raise TargetError(exc.reason) from None
                raise TargetError(
                    f"{self.label} refused the handshake: {exc.reason}", hint="see docs/protocol.md"
                ) from None
            except TargetCrash as exc:
                self._discard()
                raise TargetError(
                    f"{self.label} failed the handshake: {exc.message}",
                    hint="see docs/protocol.md",
                    details=exc.details,
                ) from None
        assert self.program is not None
        return self.program

    def _read_hello(self, reply: Reply) -> ProgramInfo:
        if isinstance(reply, Failed):
            raise TargetCrash(f"it answered with an error: {reply.message}")
        assert isinstance(reply, Started)
        return ProgramInfo(reply.name, reply.version, reply.language)

    def start_case(self) -> None:
        """Start a case: a fresh assembler in the program (started again first when needed)."""
        self.start()
        assert self._worker is not None
        # All the program wrote to stderr so far is the case before's (its last reply is read).
        self._case_mark = self._worker.stderr_mark()
        self._checked(self._call(New(self._next_seq())))

    def push(self, data: str, line: int) -> dict[str, Any]:
        """One payload; the golden step the program's reply stands for."""
        return self._step(self._checked(self._call(Push(self._next_seq(), data))), line)

    def finish(self, thinking_capped: bool) -> dict[str, Any]:
        """`finish`; the golden finish object the program's reply stands for."""
        return self._finished(self._checked(self._call(Finish(self._next_seq(), thinking_capped))))

    @staticmethod
    def _step(reply: Reply, line: int) -> dict[str, Any]:
        """The golden step a (checked) reply to `push` stands for."""
        if isinstance(reply, Failed):
            return {"line": line, "error": reply.golden_error(), SAID: reply.said}
        assert isinstance(reply, Pushed)
        return {"line": line, "events": reply.events, "state": reply.state}

    @staticmethod
    def _finished(reply: Reply) -> dict[str, Any]:
        """The golden finish object a (checked) reply to `finish` stands for."""
        if isinstance(reply, Failed):
            return {"error": reply.golden_error(), SAID: reply.said}
        assert isinstance(reply, Finished)
        return {"completion": reply.completion}

    def case_stderr(self) -> str:
        """What the program wrote to stderr in the current case, shortened ("" when nothing)."""
        return "" if self._worker is None else self._worker.stderr_since(self._case_mark)

    def close(self) -> None:
        """Say `bye` and let the program exit (killing it after a grace period)."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        deadline = time.monotonic() + GRACE
        try:
            if worker.send(request_line(Bye(self._seq + 1)), deadline):
                worker.receive(deadline)
        except (OSError, EOFError):
            pass
        worker.stop(kill=False)

    # -- the exchange -------------------------------------------------------------------------

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _call(self, request: Request, time_allowed: float | None = None) -> Reply:
        """Send one request and read its reply, the time limit bounding this one call (a long
        case is many calls, and only a call that does not return is a hang)."""
        allowed = self._timeout if time_allowed is None else time_allowed
        deadline = time.monotonic() + allowed
        self._send(request, deadline, allowed, answering=request)
        return self._reply_to(request, deadline, allowed)

    def _send(
        self, request: Request, deadline: float, allowed: float, *, answering: Request
    ) -> None:
        """Write one request line (whose first reply answers `answering`) by `deadline`."""
        worker = self._worker
        assert worker is not None
        self._last = answering
        try:
            sent = worker.send(self._line(request), deadline)
        except OSError:
            status = worker.exit_status(writing=True)
            raise self._broken(f"the program {status} before answering {answering.op}") from None
        if not sent:
            raise self._timed_out(answering.op, allowed)

    def _reply_to(self, request: Request, deadline: float, allowed: float) -> Reply:
        """Read the reply to `request` by `deadline` (`allowed` seconds after it was asked)."""
        worker = self._worker
        assert worker is not None
        return self._parsed(self._received(request, deadline, allowed), request)

    def _received(self, request: Request, deadline: float, allowed: float) -> bytes:
        """The line that answers `request`, read by `deadline` (`allowed` seconds after it was
        asked)."""
        worker = self._worker
        assert worker is not None
        self._last = request
        try:
            line = worker.receive(deadline)
        except (OSError, EOFError):
            status = worker.exit_status()
            raise self._broken(f"the program {status} before answering {request.op}") from None
        if line is None:
            raise self._timed_out(request.op, allowed)
        return line

    def _parsed(self, line: bytes, request: Request) -> Reply:
        """The reply to `request` that `line` holds; a crash (a restart) when it holds none."""
        try:
            return self._read(line, request)
        except NotAReply as exc:
            raise self._broken(f"{exc.why}: {quoted(exc.text)}") from None
        except Refused as exc:
            refused = self._garbage(exc.reply, exc.why)
            raise _Refused(refused.message, details=refused.details, reason=exc.message) from None
        except BadHello as exc:
            raise TargetCrash(exc.why) from None
        except BadReply as exc:
            raise self._garbage(exc.reply, exc.why) from None

    def _line(self, request: Request) -> bytes:
        """The line that sends `request`."""
        return request_line(request)

    def _read(self, line: bytes, request: Request) -> Reply:
        """The reply to `request` that `line` holds (`read_reply`'s exceptions when none)."""
        return read_reply(line, request, self._validator, non_finite=self.own_worker)

    def _timed_out(self, op: str, allowed: float) -> TargetTimeout:
        """No reply in the time allowed: a timeout for this case, and a restart."""
        assert self._worker is not None
        stderr = self._stderr(self._worker)
        self._discard()
        return TargetTimeout(
            f"no reply to {op} within {allowed:g} s (the time allowed for one call); "
            "the program was stopped",
            details=self._details(stderr=stderr),
        )

    def _checked(self, reply: Reply) -> Reply:
        """`reply`, unless it is an error outside the contract's three kinds: a crash (the
        program is still in step with the harness: no restart)."""
        if not isinstance(reply, Failed) or (
            reply.in_contract and self._last_op in ("push", "finish")
        ):
            return reply
        message = reply.message
        text = message if isinstance(message, str) else json.dumps(message)
        headline, _, rest = text.partition("\n")
        assert self._worker is not None
        stderr = self._stderr(self._worker)
        details = "\n".join(part for part in (rest.rstrip(), stderr) if part)
        if reply.kind == "crash" and self.own_worker:  # the adapter's words, as in-process
            raise TargetCrash(headline, details=details)
        op = self._last_op
        what = (
            "crashed"
            if reply.kind == "crash"
            else f"answered {op} with error {json.dumps(reply.kind)}"
        )
        raise TargetCrash(f"the program {what} in {op}: {headline}", details=details)

    @property
    def _last_op(self) -> str:
        return "?" if self._last is None else self._last.op

    # -- failures -----------------------------------------------------------------------------

    def _stderr(self, worker: Worker) -> str:
        return worker.stderr_since(self._case_mark)

    def _details(self, *, stderr: str, reply: str | None = None) -> str:
        # Quoted without its seq, which depends on the cases run before (and on -j); a seq that
        # matters is named in the message itself ("it carries seq 8, not 9").
        shown: dict[str, Any] = {}
        if self._last is not None:
            fields = members(self._last)
            shown = {"op": self._last.op, **{k: v for k, v in fields.items() if k != "seq"}}
        parts = [f"request: {quoted(json.dumps(shown, ensure_ascii=False))}"]
        if reply is not None:
            parts.append(f"reply: {quoted(reply)}")
        if stderr:
            parts.append(stderr)
        return "\n".join(parts)

    def _broken(self, message: str) -> TargetCrash:
        """The program can no longer be talked to: a crash for this case, and a restart."""
        assert self._worker is not None
        stderr = self._stderr(self._worker)
        self._discard()
        return TargetCrash(message, details=self._details(stderr=stderr))

    def _garbage(self, reply: Any, why: str) -> TargetCrash:
        """A reply the harness cannot take: a crash for this case, and a restart."""
        assert self._worker is not None
        stderr = self._stderr(self._worker)
        self._discard()
        try:
            shown = json.dumps(reply, ensure_ascii=False)
        except (RecursionError, ValueError):
            shown = f"(a reply of type {type(reply).__name__} that cannot be shown)"
        return TargetCrash(
            f"bad reply to {self._last_op}: {why}",
            details=self._details(stderr=stderr, reply=shown),
        )

    def _discard(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop(kill=True)


class _Refused(TargetCrash):
    """The program answered `bad_request`: it and the harness disagree about the protocol."""

    def __init__(self, message: str, *, details: str, reason: str) -> None:
        super().__init__(message, details=details)
        self.reason = reason
