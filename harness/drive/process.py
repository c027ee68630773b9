"""Driving a target that runs as another program, over conform's line protocol (docs/protocol.md).

`ProcessDriver` starts the program once (a `harness.drive.pipes.Worker`), shakes hands, and turns
each `push` and `finish` into one request line and one reply line. Everything outside the protocol
is a result, never a harness failure: a program that dies, writes a line that is not a reply,
answers out of order, reports a crash or says nothing for longer than the time allowed fails that
case (`TargetCrash` or `TargetTimeout`, with the tail of what it wrote to stderr) and is replaced
before the next case. Protocols 2 and 3 (framed payloads, text references, planned cases, and
in 3 large payloads through a file both sides map: `harness.drive.pipes.SharedPayloads`) are
offered in `hello` and spoken when the program answers with one of them.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.drive.base import DEFAULT_TIMEOUT
from harness.drive.normalize import ERROR_KINDS, SAID
from harness.drive.pipes import (
    GRACE,
    QUOTED_CHARS,
    SHARED_FROM,
    SharedPayloads,
    SharedReplies,
    Worker,
    allow_programs,
    new_family,
    shortened_stderr,
    stop_all_programs,
    utf16_is_cheaper,
)
from harness.drive.replies import (
    NUMBER_MARK,
    Slices,
    Validator,
    contract_error,
    is_error_reply,
    plain_push,
    plain_push_line,
    resolve_numbers,
    resolve_texts,
    said,
    unknown_field,
)
from harness.drive.wire import (
    FAST_PROTOCOL,
    PROTOCOL_VERSION,
    REPLIES_PROTOCOL,
    SHARED_PROTOCOL,
    decode_line,
    encode_line,
)
from harness.errors import TargetCrash, TargetError, TargetTimeout
from harness.safetext import shorten

__all__ = [
    "DEFAULT_TIMEOUT",
    "FAST_PROTOCOL",
    "PROTOCOL_VERSION",
    "REPLIES_PROTOCOL",
    "SHARED_PROTOCOL",
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

_SPOKEN = (PROTOCOL_VERSION, FAST_PROTOCOL, SHARED_PROTOCOL, REPLIES_PROTOCOL)
#: In a reply's raw line: a key of a protocol-4 piece (a text in the replies' file). Inside a JSON
#: string the quotes would be escaped, so a text holding these characters does not look like it.
_PIECE = b'"at"'


def _numbered(raw: bytes) -> bool:
    """Whether a reply's line may hold a `$number` (its key written plainly, or with the dollar
    sign escaped)."""
    return NUMBER_MARK in raw or b"\\u0024" in raw


def _marked(raw: bytes) -> bool:
    """Whether a reply's line may hold a text reference or a `$number`: every key of one
    starts `"$` in the line, or with the dollar sign escaped (a string may hold either too)."""
    return b'"$' in raw or b"\\u0024" in raw


UTF16 = "utf-16le"  # protocol 4: a shared payload's `encoding`, when it is not UTF-8
_START_FROM = 4 * 2**20  # a shared payload this large is sent at once, even in a planned case
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


@dataclass(slots=True)  # (not frozen: made for every request, and never changed)
class _Sent:
    """A request written (or queued), whose reply is still to be read."""

    seq: int
    op: str
    data: str | None  # a push's payload
    fields: dict[str, Any]  # the request's other fields
    mark: int  # the worker's byte count once it is written (`Worker.receive`)

    def shown(self) -> dict[str, Any]:
        """The request as reports quote it (a push with its payload as text), made only then."""
        if self.op == "push":
            return {"seq": self.seq, "op": self.op, "data": self.data}
        return {"seq": self.seq, "op": self.op, **self.fields}


@dataclass(slots=True)
class _Spec:
    """The case the runner expects after the current one (`plan_next`): held until the program
    has answered every request before it, then sent (`sent`), and taken as the next case by
    `plan` when that names the same pushes and finish."""

    pushes: Sequence[str]
    finish: bool | None
    sent: list[_Sent] | None = None  # its `new`, pushes and finish, once written
    data: dict[int, str] = field(default_factory=dict)  # seq -> payload, as `_case_data`
    mark: int = 0  # the program's stderr mark when it was sent: where the case before it ends


#: A next case is sent ahead only when its payloads are this small (in characters, each and all):
#: one that large gains nothing from it, and must not take a room in the shared file meanwhile.
_AHEAD_PAYLOAD = SHARED_FROM // 4
#: A payload shorter than this (in characters) is under SHARED_FROM bytes of UTF-8, however many
#: bytes each character takes: `_send_case` frames it without asking where it should go.
_FRAMED_AT_ONCE = SHARED_FROM // 4
_AHEAD_CASE = 4 * 1024 * 1024


class _Refused(TargetCrash):
    """The program answered `bad_request`: it and the harness disagree about the protocol."""

    def __init__(self, message: str, *, details: str, reason: str) -> None:
        super().__init__(message, details=details)
        self.reason = reason


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
        launch: Launch | None = None,
    ) -> None:
        if not command:
            raise TargetError("the command is empty", hint="give --exec 'COMMAND ARGS'")
        self._command = list(command)
        self.label = label or shlex.join(self._command)
        self._timeout = timeout
        self._validator = Validator() if validate else None
        self._env = env
        self._own_errors = own_errors
        self._launch: Launch = Worker if launch is None else launch  # how each copy starts
        self._worker: Worker | None = None
        self._family = new_family()  # marks this driver's programs and all they start
        self._case_mark = 0
        self._case_end: int | None = None  # stderr mark where the next case, sent ahead, begins
        self._next: _Spec | None = None  # the case expected next (`plan_next`)
        self._adopting = False  # `start_case` found the next case sent: `plan` says if it is it
        self._last: _Sent | None = None  # the request last sent or awaited (quoted in failures)
        self._offer = True  # offer protocols 2 and 3 in `hello` (until a program refuses the offer)
        self.protocol = PROTOCOL_VERSION  # the version the running program speaks
        self._case_data: dict[int, str] = {}  # seq -> payload of each push of this case (v2)
        self._slices: Slices = {}  # texts of this case's references, resolved once
        self._ahead: deque[_Sent] = deque()  # requests sent ahead of their replies (`plan`)
        self._new: _Sent | None = None  # the case's `new`, sent but its reply not yet read
        self._shared: SharedPayloads | None = None  # protocol 3: the running program's file
        self._replies: SharedReplies | None = None  # protocol 4: the file of its replies' texts
        self._offered: tuple[int, ...] = (PROTOCOL_VERSION,)  # in the last `hello`
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
            hello: dict[str, Any] = {"protocol": PROTOCOL_VERSION}
            self._offered = (PROTOCOL_VERSION,)
            if self._offer:  # the files first: the program inherits the replies' one
                self._shared = SharedPayloads.make()
                self._replies = SharedReplies.make() if self._shared is not None else None
                files = (self._shared is not None) + (self._replies is not None)
                self._offered = _SPOKEN[: 2 + files]
                hello["accept"] = list(self._offered)
                if self._shared is not None:
                    hello["shared"] = self._shared.path
                if self._replies is not None:
                    hello["replies"] = self._replies.fd
            passed = tuple(
                fd
                for fd in (
                    None if self._shared is None else self._shared.fd_passed,
                    None if self._replies is None else self._replies.fd,
                )
                if fd is not None
            )
            try:
                self._worker = self._launch(
                    self._command, self._env, family=self._family, pass_fds=passed
                )
            except BaseException:
                self._close_shared()
                raise
            self._case_mark = 0
            self.protocol = PROTOCOL_VERSION
            try:
                reply = self._exchange("hello", hello, time_allowed=max(self._timeout, HELLO_TIME))
                self.program = self._read_hello(reply)
            except _Refused as exc:
                self._close_shared()
                if self._own_errors:  # the adapter's own words for a target that cannot load
                    raise TargetError(exc.reason) from None
                if self._offer:  # a strict version-1 program may refuse the offer: ask again
                    self._offer = False
                    self._discard()
                    return self.start()
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

    def start_case(self) -> None:
        """Start a case: a fresh assembler in the program (restarted first when needed).

        When the case expected next (`plan_next`) was sent ahead, it may be this one: `plan`
        takes it when it names the same requests; anything else reads its replies and drops
        them first (`_begin`)."""
        self._settle()
        self._adopting = False
        spec = self._next
        if spec is not None and spec.sent is not None and self._worker is not None:
            self._adopting = True
            return
        self._next = None  # held, never sent: `plan` sends it as the case's own
        self._begin()

    def _begin(self) -> None:
        """Start a case on the wire: its `new` (the program restarted first when needed)."""
        self._adopting = False
        spec, self._next = self._next, None
        dropped = spec is not None and spec.sent is not None and self._worker is not None
        if dropped:
            assert spec is not None and spec.sent is not None
            self._case_data = spec.data  # not the case that comes: its replies are dropped
            self._ahead.extend(spec.sent)
            self._settle()
        self.start()
        assert self._worker is not None
        # All the program wrote to stderr so far is read first: the case before's (its last
        # reply is read, so all it wrote is in the pipe) or a dropped case's, never this one's.
        self._case_mark = self._worker.stderr_mark(drain=True)
        self._case_end = None
        self._case_data = {}
        self._slices = {}
        if self._shared is not None:  # every reply of the last case is read: its room is free
            self._shared.reset()
        if self.protocol >= FAST_PROTOCOL:  # its reply is read with the plan (or the first call)
            self._new = self._send("new", {}, now=False)
        else:
            self._call("new", {})

    def _await_new(self) -> None:
        """Read the reply to the case's `new`, sent ahead (a crash there is the case's)."""
        sent, self._new = self._new, None
        if sent is not None and self._worker is not None:
            self._checked("new", self._await(sent))

    def plan(self, pushes: Sequence[str], *, finish: bool | None) -> None:
        """Say what this case will push (and `finish` with, unless None): in protocol 2 they
        are all sent now, ahead of their replies, which `push` and `finish` then read in order.
        The program skips what comes after an error (docs/protocol.md, Planned cases)."""
        if self._adopting:
            spec = self._next
            assert spec is not None and spec.sent is not None
            if spec.finish == finish and (spec.pushes is pushes or spec.pushes == pushes):
                self._adopt(spec)
                return
            self._begin()
        if self.protocol < FAST_PROTOCOL or self._worker is None or self._ahead:
            return
        self._ahead.extend(self._send_case(pushes, finish))
        self._await_new()  # here, so a factory that fails is reported at `new`

    def plan_next(self, pushes: Sequence[str], *, finish: bool | None) -> None:
        """Say what the case after this one will push (and `finish` with, unless None), as
        `plan` would be told: in protocol 2 it is sent as soon as the program has answered
        every request of this case (so the program works on it while the harness checks this
        one, and what it writes to stderr from then on is the next case's), and taken by the
        next `start_case` and `plan` when they name it. Anything else drops it unread."""
        if (
            self.protocol < FAST_PROTOCOL
            or self._worker is None
            or self._adopting
            or (self._next is not None and self._next.sent is not None)
        ):
            return
        total = 0
        for data in pushes:
            total += len(data)
            if len(data) > _AHEAD_PAYLOAD or total > _AHEAD_CASE:
                return
        self._next = _Spec(pushes, finish)
        self._release()

    def _release(self, unresolved: bytes = b"") -> None:
        """Send the next case ahead, once every request before it is answered (its replies are
        read, or wait in the pipe): the program has ended the current case by then.

        Not while a reply not yet resolved (`unresolved`, or one still waiting in the pipe) may
        hold a text in the replies' file (protocol 4): the next case's `new` lets the program
        write over that file, so such a case's replies are all read first."""
        spec, worker = self._next, self._worker
        if spec is None or spec.sent is not None or worker is None or self._adopting:
            return
        if worker.lines_in < worker.seq or worker.exited:
            return
        replies = self._replies is not None and self.protocol >= REPLIES_PROTOCOL
        if replies and (_PIECE in unresolved or worker.holds(_PIECE)):
            return
        # Everything it wrote to stderr before its last reply is in the pipe: read it, so the
        # mark parts this case's stderr from the next one's.
        spec.mark = self._case_end = worker.stderr_mark(drain=True)
        data, self._case_data = self._case_data, spec.data
        try:
            sent = [self._send("new", {}, now=False)]
            sent += self._send_case(spec.pushes, spec.finish)
        finally:
            self._case_data = data
        spec.sent = sent
        # If it died, the next case finds that out (`receive` still gives this one's replies).
        with contextlib.suppress(OSError):
            worker.flush()

    def _adopt(self, spec: _Spec) -> None:
        """Take the case sent ahead as this one."""
        assert spec.sent is not None and self._worker is not None
        self._adopting = False
        self._next = None
        self._case_mark, self._case_end = spec.mark, None
        self._case_data = spec.data
        self._slices = {}
        if self._shared is not None:  # the case before is all read, and this one has no room
            self._shared.reset()
        self._new = spec.sent[0]
        self._ahead.extend(spec.sent[1:])
        self._await_new()

    def _send_case(self, pushes: Sequence[str], finish: bool | None) -> list[_Sent]:
        """Queue a planned case's pushes (and its `finish`, unless None), to be written with the
        next ones; what was queued, in order.

        A small payload (every payload sent ahead) is framed here in one go: its request line
        made by hand, and the case's requests queued in one buffer (`Worker.queue`). Any other
        payload takes `_send_push`'s ways."""
        worker = self._worker
        assert worker is not None
        sent: list[_Sent] = []
        parts: list[bytes] = []
        case_data = self._case_data
        seq = worker.seq
        queued = worker.queued  # the mark of the last request queued so far
        for data in pushes:
            raw = None
            if len(data) < _FRAMED_AT_ONCE:
                try:  # noqa: SIM105 (no context manager made for every payload)
                    raw = data.encode("utf-8")
                except UnicodeEncodeError:  # a lone surrogate: a JSON string (`_send_push`)
                    pass
            if raw is None:  # what is framed so far goes first, then this one its own way
                worker.seq = seq
                if parts:
                    worker.queue(*parts, now=False)
                    parts = []
                sent.append(self._send_push(data, now=False))
                seq, queued = worker.seq, worker.queued
                continue
            seq += 1
            line = b'{"seq":%d,"op":"push","bytes":%d}\n' % (seq, len(raw))
            parts += (line, raw, b"\n")
            queued += len(line) + len(raw) + 1
            case_data[seq] = data
            sent.append(_Sent(seq, "push", data, {"bytes": len(raw)}, queued))
        worker.seq = seq
        if parts:
            worker.queue(*parts, now=False)
        if finish is not None:
            sent.append(self._send("finish", {"thinking_capped": finish}, now=False))
        return sent

    def _send_push(self, data: str, *, now: bool = True) -> _Sent:
        if self.protocol >= FAST_PROTOCOL:
            shared = self._shared
            if shared is not None and len(data) >= SHARED_FROM:  # ASCII: written unencoded
                at = shared.put_text(data)
                if at is not None:
                    fields = {"bytes": len(data), "at": at}
                    # A payload this large is worth the program's starting on it at once (while
                    # the next ones are written), rather than with the rest of a planned case.
                    now = now or len(data) >= _START_FROM
                    return self._send("push", fields, data=data, now=now)
                if self.protocol >= REPLIES_PROTOCOL and utf16_is_cheaper(data):
                    sent = self._send_utf16(shared, data, now=now)
                    if sent is not None:
                        return sent
            try:
                raw = data.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: sent as a JSON string, as in version 1
                pass
            else:
                shared = self._shared
                if shared is not None and len(raw) >= SHARED_FROM:
                    at = shared.put(raw)
                    if at is not None:  # else no room: framed in the pipe
                        fields = {"bytes": len(raw), "at": at}
                        now = now or len(raw) >= _START_FROM
                        return self._send("push", fields, data=data, now=now)
                return self._send("push", {"bytes": len(raw)}, raw=raw, data=data, now=now)
        return self._send("push", {"data": data}, now=now)

    def _send_utf16(self, shared: SharedPayloads, data: str, *, now: bool) -> _Sent | None:
        """Protocol 4: a large payload of non-ASCII text written as UTF-16 (which both sides
        convert to and from some times faster than UTF-8, for text of the first 65,536 code
        points); None when it cannot be (a lone surrogate) or there is no room."""
        try:
            raw = data.encode("utf-16-le")
        except UnicodeEncodeError:
            return None
        at = shared.put(raw)
        if at is None:
            return None
        fields = {"bytes": len(raw), "at": at, "encoding": UTF16}
        return self._send("push", fields, data=data, now=now or len(raw) >= _START_FROM)

    def _settle(self) -> None:
        """Read the replies to planned requests the runner did not ask for (after an error): a
        program that fails at them is restarted, never blamed on the next case."""
        ahead, self._ahead = self._ahead, deque()
        if self._new is not None:
            ahead.appendleft(self._new)
            self._new = None
        for sent in ahead:
            if self._worker is None:
                return
            try:
                self._await(sent)
            except TargetCrash:
                self._discard()
                return

    def push(self, data: str, line: int) -> dict[str, Any]:
        """One payload; the golden step the program's reply stands for."""
        reply = self._ready(data)
        if reply is None:
            reply = self._planned("push", data)
        if reply is None:
            reply = self._checked("push", self._await(self._send_push(data)))
        if "error" in reply:
            return {"line": line, "error": contract_error(reply), SAID: said(reply)}
        events, state = reply.get("events"), reply.get("state")
        if not isinstance(events, list) or not isinstance(state, dict):
            raise self._garbage(
                reply, "a reply to push needs a list 'events' and an object 'state'"
            )
        return {"line": line, "events": events, "state": state}

    def finish(self, thinking_capped: bool) -> dict[str, Any]:
        """`finish`; the golden finish object the program's reply stands for."""
        reply = self._planned("finish")  # (the case's `new` answered first)
        if reply is None:
            reply = self._call("finish", {"thinking_capped": thinking_capped})
        if "error" in reply:
            return {"error": contract_error(reply), SAID: said(reply)}
        completion = reply.get("completion")
        if not isinstance(completion, dict):
            raise self._garbage(reply, "a reply to finish needs an object 'completion'")
        return {"completion": completion}

    def case_stderr(self) -> str:
        """What the program wrote to stderr in the current case, shortened ("" when nothing)."""
        return "" if self._worker is None else self._stderr(self._worker)

    def _stderr(self, worker: Worker) -> str:
        """The current case's stderr: from its mark to the next case's, when that was sent."""
        return worker.stderr_since(self._case_mark, self._case_end)

    def close(self) -> None:
        """Say `bye` and let the program exit (killing it after a grace period)."""
        self._close_shared()
        worker, self._worker = self._worker, None
        if worker is None:
            return
        line = encode_line({"seq": worker.seq + 1, "op": "bye"}, ascii_only=True)
        deadline = time.monotonic() + GRACE
        try:
            if worker.send(line, deadline):
                worker.receive(deadline)
        except (OSError, EOFError):
            pass
        worker.stop(kill=False)

    # -- the exchange -------------------------------------------------------------------------

    def _exchange(
        self,
        op: str,
        fields: dict[str, Any],
        *,
        raw: bytes | None = None,
        data: str | None = None,
        time_allowed: float | None = None,
    ) -> dict[str, Any]:
        """Send one request (with `raw` bytes after its line: a framed payload, `data` as text)
        and read its reply: a JSON object with the right `seq`, its text references resolved."""
        return self._await(self._send(op, fields, raw=raw, data=data), time_allowed)

    def _send(
        self,
        op: str,
        fields: dict[str, Any],
        *,
        raw: bytes | None = None,
        data: str | None = None,
        now: bool = True,
    ) -> _Sent:
        """Queue one request (written now, or with the next ones: not `now`); what it was."""
        worker = self._worker
        assert worker is not None
        worker.seq += 1
        seq = worker.seq
        if op == "push":
            data = data if data is not None else fields["data"]
            self._case_data[seq] = data
        if raw is not None and len(fields) == 1:  # a framed push, the request sent most
            line = b'{"seq":%d,"op":"push","bytes":%d}\n' % (seq, fields["bytes"])
            parts: tuple[bytes, ...] = (line, raw, b"\n")
        elif op == "new" and not fields:  # once a case each, written as encode_line would
            parts = (b'{"seq":%d,"op":"new"}\n' % seq,)
        elif op == "finish" and len(fields) == 1 and type(fields.get("thinking_capped")) is bool:
            capped = b"true" if fields["thinking_capped"] else b"false"
            parts = (b'{"seq":%d,"op":"finish","thinking_capped":%s}\n' % (seq, capped),)
        else:
            parts = (encode_line({"seq": seq, "op": op, **fields}, ascii_only=True),)
            if raw is not None:
                parts += (raw, b"\n")
        try:
            mark = worker.queue(*parts, now=now)
        except OSError:
            self._last = _Sent(seq, op, data, fields, 0)
            status = worker.exit_status(writing=True)
            raise self._broken(f"the program {status} before answering {op}") from None
        return _Sent(seq, op, data, fields, mark)

    def _await(
        self, sent: _Sent, time_allowed: float | None = None, *, line: bytes | None = None
    ) -> dict[str, Any]:
        """The reply to `sent` (every request before it answered already); its `line` when it
        was read already (`_ready`).

        The time limit bounds this one call (`time_allowed`, else the driver's timeout), from the
        moment the harness waits for it: a long case is many calls, and only a call that does not
        return is a hang.
        """
        worker = self._worker
        assert worker is not None
        op = sent.op
        self._last = sent
        if line is None:
            line = self._receive(worker, sent, time_allowed)
        raw = line
        if op == "new" and raw == b'{"seq":%d,"ok":true}' % sent.seq:
            return {"seq": sent.seq, "ok": True}  # the usual reply, as conform's worker writes it
        reply: dict[str, Any]  # once the checks below have passed
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
        if type(reply) is not dict or "error" in reply or type(reply.get("seq")) is not int:
            self._check_unusual(reply, sent.seq)  # else: an object, no error, an integer seq
        elif reply["seq"] != sent.seq:
            self._check_unusual(reply, sent.seq)
        if self.protocol >= FAST_PROTOCOL and reply.get("skipped") is True and len(reply) == 2:
            return reply  # a request planned after the case ended (see `plan`)
        if op == "push" and self._validator is None and plain_push(reply):
            # The usual reply: no text references and no unknown field (`plain_push`), so only
            # a number of protocol 2 may be left to resolve.
            if _numbered(raw) and self.protocol >= FAST_PROTOCOL:
                problem = resolve_numbers(reply)
                if problem is not None:
                    raise self._garbage(reply, f"bad reference: {problem}")
            return reply
        if self.protocol >= FAST_PROTOCOL and "error" not in reply and _marked(raw):
            problem = resolve_texts(op, reply, self._case_data, self._slices, self._replies)
            if problem is None and _numbered(raw):
                problem = resolve_numbers(reply)
            if problem is not None:
                raise self._garbage(reply, f"bad reference: {problem}")
        if self._validator is not None:
            problem = self._validator.problem(op, reply)
            if problem is not None:
                raise self._garbage(reply, f"it breaks the protocol's schema: {problem}")
        else:
            problem = unknown_field(op, reply)
            if problem is not None:
                raise self._garbage(reply, f"unknown field {problem} (docs/protocol.md, Values)")
        return reply

    def _receive(self, worker: Worker, sent: _Sent, time_allowed: float | None) -> bytes:
        """The next reply line, waited for as `_await` says (the next case released meanwhile)."""
        op = sent.op
        allowed = self._timeout if time_allowed is None else time_allowed
        deadline = time.monotonic() + allowed
        held = self._next is not None and self._next.sent is None
        if held:  # has the program answered the whole case? Then send the next one now.
            if worker.lines_in < worker.seq:
                worker.read_ready()
            self._release()
        try:
            reply_line = worker.receive(deadline, sent.mark)
        except (OSError, EOFError) as exc:  # OSError: a request could not be written
            status = worker.exit_status(writing=isinstance(exc, OSError))
            raise self._broken(f"the program {status} before answering {op}") from None
        if held and reply_line is not None:
            self._release(reply_line)
        if reply_line is None:
            stderr = self._stderr(worker)
            self._discard()
            raise TargetTimeout(
                f"no reply to {op} within {allowed:g} s (the time allowed for one call); "
                "the program was stopped",
                details=self._details(stderr=stderr),
            )
        return reply_line

    def _ready(self, data: str) -> dict[str, Any] | None:
        """The reply to the next planned push (of `data`) when its line is read already and no
        next case waits to be sent: the usual reply checked here in one go, any other by
        `_await`'s checks (as `_planned` takes it); None, with nothing taken, otherwise.

        Most replies of a planned case are in the pipe by the time they are asked for: this is
        `_planned`, `_await` and `Worker.receive` for them, without the calls."""
        ahead = self._ahead
        if not ahead or self._adopting or self._new is not None or self._validator is not None:
            return None
        worker, spec, sent = self._worker, self._next, ahead[0]
        if worker is None or worker.unsent or (spec is not None and spec.sent is None):
            return None
        if sent.op != "push" or (sent.data is not data and sent.data != data):
            return None
        line = worker.ready_line()
        if line is None:
            return None
        ahead.popleft()
        self._last = sent
        plain = plain_push_line(line)  # the usual reply, its form checked as it is decoded
        if plain is not None and plain[0] == sent.seq:
            return {"seq": plain[0], "events": plain[1], "state": plain[2]}
        reply = self._await(sent, line=line)  # named as every reply is, when it is not plain
        if "skipped" in reply:
            raise self._garbage(reply, "the program skipped a push of a case that had not ended")
        return self._checked("push", reply)

    def _check_unusual(self, reply: Any, seq: int) -> None:
        """The checks of a reply that is not an object with an integer `seq` and no error."""
        if not isinstance(reply, dict):
            raise self._garbage(reply, "a reply must be a JSON object")
        if is_error_reply(reply) and reply["error"].get("kind") == "bad_request":
            message = str(reply["error"].get("message"))
            refused = self._garbage(reply, f"the program refused the request: {message}")
            raise _Refused(refused.message, details=refused.details, reason=message)
        found = reply.get("seq")
        if found != seq or isinstance(found, bool):
            raise self._garbage(
                reply,
                f"it carries seq {json.dumps(found)}, not {seq} (out of order, or a stray line)",
            )
        if "error" in reply and not is_error_reply(reply):
            raise self._garbage(reply, "'error' must be an object")

    def _call(
        self, op: str, fields: dict[str, Any], *, raw: bytes | None = None, data: str | None = None
    ) -> dict[str, Any]:
        """`_exchange`, with error replies outside the contract's three kinds as crashes."""
        return self._checked(op, self._exchange(op, fields, raw=raw, data=data))

    def _planned(self, op: str, data: str | None = None) -> dict[str, Any] | None:
        """The reply to the next planned request when it is this `op` (of this payload), checked
        as `_call` checks; None when nothing is planned."""
        if self._adopting:  # a case with no plan: not the one sent ahead
            self._begin()
        if self._new is not None:
            self._await_new()
        if not self._ahead:
            return None
        sent = self._ahead.popleft()
        if sent.op != op or (op == "push" and sent.data is not data and sent.data != data):
            # conform's own runner left its plan: nothing the target did. Settle, then go on.
            self._ahead.appendleft(sent)
            self._settle()
            raise RuntimeError(f"conform planned {sent.op} but asked for {op}")
        reply = self._await(sent)
        if "skipped" in reply:
            raise self._garbage(reply, f"the program skipped a {op} of a case that had not ended")
        return self._checked(op, reply)

    def _checked(self, op: str, reply: dict[str, Any]) -> dict[str, Any]:
        if "error" not in reply:
            return reply
        kind = reply["error"].get("kind")
        if kind in ERROR_KINDS and op in ("push", "finish"):
            return reply
        message = reply["error"].get("message")
        text = message if isinstance(message, str) else json.dumps(message)
        headline, _, rest = text.partition("\n")
        assert self._worker is not None
        stderr = self._stderr(self._worker)
        # The program is still in step with the harness: a crash reply needs no restart.
        details = "\n".join(part for part in (rest.rstrip(), stderr) if part)
        if kind == "crash" and self._own_errors:  # the adapter's words, as an in-process run's
            raise TargetCrash(headline, details=details)
        what = "crashed" if kind == "crash" else f"answered {op} with error {json.dumps(kind)}"
        raise TargetCrash(f"the program {what} in {op}: {headline}", details=details)

    def _read_hello(self, reply: dict[str, Any]) -> ProgramInfo:
        if self._shared is not None:
            self._shared.unlink()  # the program opened it while answering, if it speaks 3
        if "error" in reply:
            raise TargetCrash(f"it answered with an error: {reply['error'].get('message')}")
        protocol = reply.get("protocol")
        spoken = self._offered
        if protocol not in spoken or isinstance(protocol, bool):
            versions = [str(version) for version in spoken]
            offered = " or ".join(
                [", ".join(versions[:-1]), versions[-1]] if versions[1:] else versions
            )
            raise TargetCrash(f"it speaks protocol {json.dumps(protocol)}, not {offered}")
        self.protocol = protocol
        if protocol < SHARED_PROTOCOL:
            self._close_shared()
        elif protocol < REPLIES_PROTOCOL and self._replies is not None:
            self._replies.close()
            self._replies = None
        fields = [reply.get(name) for name in ("name", "version", "language")]
        texts = [value for value in fields if isinstance(value, str) and value]
        if len(texts) != len(fields):
            raise TargetCrash(f"the reply to hello needs name, version and language: {reply}")
        return ProgramInfo(*texts)

    # -- failures -----------------------------------------------------------------------------

    def _details(self, *, stderr: str, reply: str | None = None) -> str:
        # Quoted without its seq, which depends on the cases run before (and on -j); a seq that
        # matters is named in the message itself ("it carries seq 8, not 9").
        shown = {} if self._last is None else self._last.shown()
        request = {key: value for key, value in shown.items() if key != "seq"}
        parts = [f"request: {quoted(json.dumps(request, ensure_ascii=False))}"]
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
        op = "?" if self._last is None else self._last.op
        try:
            shown = json.dumps(reply, ensure_ascii=False)
        except (RecursionError, ValueError):
            shown = f"(a reply of type {type(reply).__name__} that cannot be shown)"
        return TargetCrash(
            f"bad reply to {op}: {why}", details=self._details(stderr=stderr, reply=shown)
        )

    def _close_shared(self) -> None:
        shared, self._shared = self._shared, None
        if shared is not None:
            shared.close()
        replies, self._replies = self._replies, None
        if replies is not None:
            replies.close()

    def _discard(self) -> None:
        self._ahead.clear()
        self._new = None
        self._next = None  # sent ahead to this program: the next case sends it again
        self._adopting = False
        self._case_end = None
        self._close_shared()
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop(kill=True)
