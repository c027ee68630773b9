"""The line protocol's messages (docs/protocol.md): one small class per request and per reply,
read and written the same way by the driver (`harness.drive.process`) and by conform's own worker
(`harness.worker.program`).

    Hello(seq, protocol)          -> Started(seq, name, version, language, protocol)
    New(seq)                      -> Ok(seq)
    Push(seq, data)               -> Pushed(seq, events, state)
    Finish(seq, thinking_capped)  -> Finished(seq, completion)
    Bye(seq)                      -> Ok(seq)
    any of them                   -> Failed(seq, kind, message)

Each message is one JSON object on one line. `read_request` takes a request line as a program
must (`BadRequest` says what its `bad_request` reply says); `read_reply` takes a reply line as the
harness does (`NotAReply`, `BadReply` and `Refused` say why it cannot be taken). A reply's form is
checked here (its fields, a list of events, an object of state); its values are left to the
comparison with the golden file, where a value of a wrong type is a mismatch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.drive.normalize import ERROR_KINDS
from harness.drive.reply_form import Validator, unknown_field

#: The version of the protocol conform speaks (docs/protocol.md).
PROTOCOL_VERSION = 1


def pass_mark(token: str) -> bytes:
    """What conform's own worker writes to its stderr as it begins a `pass` that carries `token`
    as its `mark` (one the harness draws at random for each worker): so the harness knows which
    pass wrote what the target logged there, though the next pass may run already (it takes the
    marks out: `harness.drive.pipes.PassMarks`)."""
    return b"\x00conform pass " + token.encode("ascii", "backslashreplace") + b"\x00\n"


#: A request's encoding: compact, all ASCII, and no NaN or infinity (which JSON cannot hold).
_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
#: A reply of conform's own worker: the same, but a non-finite number the target returned is
#: written `NaN`, `Infinity` or `-Infinity` (outside JSON; conform reads them from its own worker
#: only, `read_reply(non_finite=True)`), so that it is shown as the value it is, as in-process.
_encode_reply = json.JSONEncoder(separators=(",", ":")).encode


# Requests --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hello:
    """The first request after the program starts: the version the harness speaks."""

    op: ClassVar[str] = "hello"
    seq: int
    protocol: int = PROTOCOL_VERSION


@dataclass(frozen=True, slots=True)
class New:
    """Starts a case: a fresh assembler."""

    op: ClassVar[str] = "new"
    seq: int


@dataclass(frozen=True, slots=True)
class Push:
    """One payload of the recording, as the mode changed it: any text, lone surrogates too."""

    op: ClassVar[str] = "push"
    seq: int
    data: str


@dataclass(frozen=True, slots=True)
class Finish:
    """Ends the case, unless a push failed."""

    op: ClassVar[str] = "finish"
    seq: int
    thinking_capped: bool


@dataclass(frozen=True, slots=True)
class Bye:
    """The last request: the program replies, then exits 0."""

    op: ClassVar[str] = "bye"
    seq: int


@dataclass(frozen=True, slots=True)
class Pass:
    """A whole pass in one request, which only conform's own worker takes (the fast form of
    `new`, each `push` and `finish`: `harness.drive.batched`): its `pushes`, then `finish` with
    `thinking_capped` unless that is None. The program answers each of those calls with its
    own reply line, carrying this request's `seq`, in order, and stops after the reply that
    ends the case (an error or a crash: nothing more is pushed, as the runner does)."""

    op: ClassVar[str] = "pass"
    seq: int
    pushes: list[str]
    thinking_capped: bool | None
    mark: str | None = None  # `pass_mark(mark)` is written to stderr first

    def calls(self) -> list[Request]:
        """The requests this one stands for, each with this one's `seq`."""
        calls: list[Request] = [New(self.seq), *(Push(self.seq, data) for data in self.pushes)]
        if self.thinking_capped is not None:
            calls.append(Finish(self.seq, self.thinking_capped))
        return calls


Request = Hello | New | Push | Finish | Bye | Pass


class BadRequest(Exception):
    """A request a program cannot act on; `seq` is None when it could not be read."""

    def __init__(self, seq: int | None, message: str) -> None:
        super().__init__(message)
        self.seq = seq
        self.message = message


def request_line(request: Request) -> bytes:
    """The request as the harness writes it: one compact line, all ASCII (a lone surrogate and
    every non-ASCII character as a `\\uXXXX` escape), with its LF."""
    message = {"seq": request.seq, "op": request.op, **members(request)}
    return _encode(message).encode("ascii") + b"\n"


def members(message: Request | Reply) -> dict[str, Any]:
    """A message's fields by name, as they are (not copied)."""
    return {name: getattr(message, name) for name in message.__slots__}


def read_request(line: bytes) -> Request:
    """The request a line holds, as a program reads it; BadRequest saying what is wrong.

    Fields a request does not define are ignored (a program of version 1 ignores what later
    versions add)."""
    try:
        request = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(None, f"the request is not valid JSON: {exc}") from None
    return request_of(request)


def request_of(request: Any) -> Request:
    """The request a decoded request line holds (`read_request` after the decoding)."""
    seq = request.get("seq") if isinstance(request, dict) else None
    if type(seq) is not int:
        raise BadRequest(None, 'every request needs an integer "seq"')
    op = request.get("op")
    if op == "hello":
        asked = request.get("protocol")
        if asked != PROTOCOL_VERSION or type(asked) is not int:
            raise BadRequest(seq, f"protocol {asked!r} is not spoken here; {PROTOCOL_VERSION} is")
        return Hello(seq, asked)
    if op == "new":
        return New(seq)
    if op == "push":
        data = request.get("data")
        if not isinstance(data, str):
            raise BadRequest(seq, '"push" needs a string "data"')
        return Push(seq, data)
    if op == "finish":
        capped = request.get("thinking_capped")
        if not isinstance(capped, bool):
            raise BadRequest(seq, '"finish" needs a boolean "thinking_capped"')
        return Finish(seq, capped)
    if op == "bye":
        return Bye(seq)
    if op == "pass":
        pushes, capped = request.get("pushes"), request.get("thinking_capped")
        if not isinstance(pushes, list) or not all(isinstance(data, str) for data in pushes):
            raise BadRequest(seq, '"pass" needs a list of strings "pushes"')
        if capped is not None and not isinstance(capped, bool):
            raise BadRequest(seq, '"pass" needs a boolean or null "thinking_capped"')
        mark = request.get("mark")
        if mark is not None and not isinstance(mark, str):
            raise BadRequest(seq, '"pass" takes a string "mark"')
        return Pass(seq, pushes, capped, mark)
    raise BadRequest(seq, f"unknown op {json.dumps(op)}")


# Replies ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Started:
    """The reply to `hello`: who the program is (shown in reports), and its protocol."""

    seq: int
    name: str
    version: str
    language: str
    protocol: int = PROTOCOL_VERSION


@dataclass(frozen=True, slots=True)
class Ok:
    """The reply to `new` and to `bye`."""

    seq: int
    ok: bool = True


@dataclass(frozen=True, slots=True)
class Pushed:
    """The reply to `push`: the events of the payload, in the golden files' shapes, and the
    assembler's four readers afterwards."""

    seq: int
    events: list[Any]
    state: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Finished:
    """The reply to `finish`: the completion, in the golden files' shape."""

    seq: int
    completion: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Failed:
    """The reply to a request that failed: the assembler's error (`protocol`,
    `stream_closed_early`, `server`), a `crash`, or `bad_request`; `seq` None when the request
    could not be read. `message` is whatever the program sent (a string, if it follows the
    schema)."""

    seq: int | None
    kind: str
    message: Any

    @property
    def said(self) -> str:
        """`kind: message`: the program's own words for its error (shown, not compared)."""
        message = self.message
        shown = (
            message if isinstance(message, str) else f"(a {type(message).__name__}, not a message)"
        )
        return f"{self.kind}: {shown}"

    def golden_error(self) -> dict[str, Any]:
        """The golden file's error object of one of the contract's kinds (ERROR_KINDS): only a
        `server` error's message is compared."""
        if self.kind == "server":
            return {"kind": "server", "message": self.message}
        return {"kind": self.kind}

    @property
    def in_contract(self) -> bool:
        """True for an error the assembler may raise (compared with the golden step)."""
        return self.kind in ERROR_KINDS


Reply = Started | Ok | Pushed | Finished | Failed


def reply_line(reply: Reply) -> bytes:
    """The reply as conform's worker writes it: one compact line, all ASCII, with its LF
    (`NaN` for a non-float number: `_encode_reply`); ValueError or TypeError for a value that
    cannot be written."""
    return _encode_reply(reply_object(reply)).encode("ascii") + b"\n"


def reply_object(reply: Reply) -> dict[str, Any]:
    """The reply as its JSON object."""
    if isinstance(reply, Failed):
        return {"seq": reply.seq, "error": {"kind": reply.kind, "message": reply.message}}
    return members(reply)


class NotAReply(Exception):
    """A line that is not JSON at all: `why`, and the line's `text` (to be quoted)."""

    def __init__(self, why: str, text: str) -> None:
        super().__init__(f"{why}: {text}")
        self.why = why
        self.text = text


class BadReply(Exception):
    """A reply the harness cannot take (`why`), shown as it came (`reply`, decoded)."""

    def __init__(self, why: str, reply: Any) -> None:
        super().__init__(why)
        self.why = why
        self.reply = reply


class BadHello(BadReply):
    """A reply to `hello` of the right form that says what the harness cannot work with (another
    protocol, no name): the handshake fails with `why` as it is."""


class Refused(BadReply):
    """A `bad_request` reply: the program and the harness disagree about the protocol."""

    def __init__(self, message: str, reply: Any) -> None:
        super().__init__(f"the program refused the request: {message}", reply)
        self.message = message


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (docs/protocol.md: numbers are finite)")


def read_reply(
    line: bytes,
    request: Request,
    validator: Validator | None = None,
    *,
    non_finite: bool = False,
    own: bool = False,
) -> Reply:
    """The reply to `request` that a line holds; NotAReply, BadReply (Refused) when it cannot be
    taken: not one JSON object, out of order, a field the protocol does not define (or, with a
    `validator`, a reply that breaks the protocol's JSON Schemas), or the wrong form for its
    request. `non_finite`: the line may hold `NaN` and the infinities (conform's own worker);
    `own`: as `reply_of`'s."""
    op = request.op
    try:
        reply = json.loads(line.decode("utf-8"), parse_constant=None if non_finite else _not_json)
    except (UnicodeDecodeError, ValueError):
        text = line.decode("utf-8", errors="replace")
        raise NotAReply(
            f"the program wrote a line that is not JSON in reply to {op}", text
        ) from None
    except RecursionError:  # valid JSON nested beyond what the decoder takes
        text = line.decode("utf-8", errors="replace")
        why = f"the program's reply to {op} ({len(line):,} bytes) nests too deep to read"
        raise NotAReply(why, text) from None
    return reply_of(reply, request, validator, own=own)


def reply_of(
    reply: Any, request: Request, validator: Validator | None = None, *, own: bool = False
) -> Reply:
    """The reply to `request` a decoded reply line holds (`read_reply` after the decoding).

    `own`: the reply of conform's own worker, which writes only the protocol's fields (each reply
    is one of the classes below, its values made by `harness.drive.normalize`): they are not
    looked for unknown ones (a tenth of the harness's CPU a reply)."""
    op = request.op
    if not isinstance(reply, dict):
        raise BadReply("a reply must be a JSON object", reply)
    error = reply.get("error")
    if isinstance(error, dict) and error.get("kind") == "bad_request":
        raise Refused(str(error.get("message")), reply)
    found = reply.get("seq")
    if found != request.seq or type(found) is not int:
        why = (
            f"it carries seq {json.dumps(found)}, not {request.seq} (out of order, or a stray line)"
        )
        raise BadReply(why, reply)
    if "error" in reply and not isinstance(error, dict):
        raise BadReply("'error' must be an object", reply)
    if validator is not None:
        problem = validator.problem(op, reply)
        if problem is not None:
            raise BadReply(f"it breaks the protocol's schema: {problem}", reply)
    elif not own:
        problem = unknown_field(op, reply)
        if problem is not None:
            raise BadReply(f"unknown field {problem} (docs/protocol.md, Values)", reply)
    if error is not None:
        assert isinstance(error, dict)
        return Failed(found, str(error.get("kind")), error.get("message"))
    return _typed(op, reply)


def _typed(op: str, reply: dict[str, Any]) -> Reply:
    """A reply that is no error, as the class its request expects (BadReply: the wrong form)."""
    seq: int = reply["seq"]
    if op == "push":
        events, state = reply.get("events"), reply.get("state")
        if not isinstance(events, list) or not isinstance(state, dict):
            raise BadReply("a reply to push needs a list 'events' and an object 'state'", reply)
        return Pushed(seq, events, state)
    if op == "finish":
        completion = reply.get("completion")
        if not isinstance(completion, dict):
            raise BadReply("a reply to finish needs an object 'completion'", reply)
        return Finished(seq, completion)
    if op == "hello":
        return _started(reply)
    return Ok(seq)


def _started(reply: dict[str, Any]) -> Started:
    protocol = reply.get("protocol")
    if protocol != PROTOCOL_VERSION or type(protocol) is not int:
        raise BadHello(f"it speaks protocol {json.dumps(protocol)}, not {PROTOCOL_VERSION}", reply)
    texts = [reply.get(key) for key in ("name", "version", "language")]
    if not all(isinstance(text, str) and text for text in texts):
        raise BadHello(f"the reply to hello needs name, version and language: {reply}", reply)
    name, version, language = (str(text) for text in texts)
    return Started(reply["seq"], name, version, language, protocol)
