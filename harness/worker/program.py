"""The worker program, `python -m harness.adapter TARGET`: any Python target as a program that
speaks the protocol.

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
import json
import math
import mmap
import os
import re
import sys
from collections.abc import Callable
from typing import IO, Any

import msgspec

from harness.drive.inprocess import (
    Factory,
    TargetCrash,
    error_step,
    finish_step,
    load_target,
    new_assembler,
    push_step,
    split_spec,
    step_of,
)
from harness.drive.normalize import REFERENCE_EVENTS, REFERENCE_STATE, SAID, plain_state
from harness.drive.shared import SHARED_FROM, SharedWriter
from harness.drive.wire import (
    FAST_PROTOCOL,
    PROTOCOL_VERSION,
    REPLIES_PROTOCOL,
    SHARED_PROTOCOL,
    decode_line,
    encode_reply,
)
from harness.errors import TargetError
from harness.worker.prepare import (
    DEFAULT_MAX_MEMORY_MIB,
    claim_stdio,
    prepare_process,
    worker_arguments,
)

_REFERENCED = 256  # texts this long are sent as references into the payload (protocol 2)
_PROBE = 64  # characters of such a text looked for in the payload before comparing it whole
_TRIES = 8  # places the probe is tried at before the text is sent as it is
_MAX_FRAME = 1 << 40  # a framed payload claiming more bytes than this is a bad request
_ESCAPED = re.compile(r'["\\\x00-\x1f]')  # what a JSON string cannot hold unescaped
_ENCODINGS = {"utf-16le": "utf-16-le"}  # protocol 4: a shared payload's other encodings

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

Channel = tuple[str, int]  # ("content", 0), ("reasoning", 0) or ("tool", index)
_encode_own = msgspec.json.Encoder().encode
_decode_reply = msgspec.json.Decoder().decode


def _own_texts() -> dict[type, tuple[str, str]]:
    """The reference's own event types whose Structs encode exactly as the normalizer writes
    them (the golden objects), each with its text field ("" for one without) and its `type`;
    checked once, on one sample of each, so that a change of those types turns
    `Session._own_line` off rather than making replies that differ from what `push_step`
    makes."""
    found: dict[type, tuple[str, str]] = {}
    for kind, normal in REFERENCE_EVENTS.items():
        fields = getattr(kind, "__struct_fields__", ())
        values = {name: (0 if name in ("index", "total") else "x") for name in fields}
        try:
            sample = kind(**values)
            same = _encode_own(sample) == _encode_own(normal(sample))
        except (TypeError, ValueError):
            same = False
        if not same:
            return {}
        name = "arguments" if "arguments" in fields else "text" if "text" in fields else ""
        found[kind] = (name, str(normal(sample)["type"]))
    return found


#: Event type -> its text field, for `Session._own_line` (empty: the way is off).
_OWN_TEXTS = _own_texts()


#: A reply: its object, or (the usual ones, made as their line at once) its line.
Reply = dict[str, Any] | bytes


class _BadRequest(Exception):
    """The request cannot be acted on (see the protocol's `bad_request`)."""


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
    """Answers requests for one target, one line at a time."""

    def __init__(self, spec: str, factory: Factory | None, load_error: str | None) -> None:
        self._spec = spec
        self._factory = factory
        self._load_error = load_error
        self._assembler: Any = None
        self._version: str | None = None
        self.protocol = PROTOCOL_VERSION
        # Protocol 2: each channel's event texts this case, with the reference each was sent as
        # (`[seq, start, end]`, or in protocol 4 `{"at": offset, "bytes": size}`).
        self._texts: dict[Channel, list[tuple[str, Any]]] = {}
        # The events of this case's pushes answered by `_own_line` (none of whose texts was
        # long), put into `_texts` only when a later event's text is sent as a reference.
        self._unrecorded: list[list[Any]] = []
        self._ended = False  # the case had its error or its finish: skip what was planned after
        self._frame = bytearray()  # the buffer framed payloads are read into
        self._shared: int | None = None  # protocol 3: the shared file, open for reading
        self._shared_map: mmap.mmap | None = None  # and mapped, as far as it was needed
        self._replies: SharedWriter | None = None  # protocol 4: the file of long reply texts

    def answer(self, line: bytes, source: IO[bytes] | None = None) -> tuple[dict[str, Any], bool]:
        """The reply to one request line (`source` holds the bytes of a framed payload after
        it), and whether the program should exit after it."""
        reply, done = self.reply(line, source)
        return (_decode_reply(reply) if type(reply) is bytes else reply), done  # type: ignore[return-value]

    def reply(self, line: bytes, source: IO[bytes] | None = None) -> tuple[Reply, bool]:
        """`answer`, the usual replies made as their line at once (`encode` takes both)."""
        try:
            request = decode_line(line)
        except ValueError as exc:
            return _error(None, "bad_request", f"the request is not valid JSON: {exc}"), False
        seq = request.get("seq") if isinstance(request, dict) else None
        if not isinstance(seq, int) or isinstance(seq, bool):
            return _error(None, "bad_request", 'every request needs an integer "seq"'), False
        if request.get("op") == "push" and "bytes" in request:
            try:
                if "at" in request:
                    encoding = request.get("encoding")
                    request["data"] = self._from_shared(request["bytes"], request["at"], encoding)
                else:
                    request["data"] = self._framed(request["bytes"], source)
            except _BadRequest as exc:
                return _error(seq, "bad_request", str(exc)), False
        try:
            return self._dispatch(seq, request)
        except _BadRequest as exc:
            return _error(seq, "bad_request", str(exc)), False
        except TargetCrash as crash:
            self._ended = True
            message = f"{crash.message}\n{crash.details}" if crash.details else crash.message
            return _error(seq, "crash", message), False

    def _framed(self, size: Any, source: IO[bytes] | None) -> str:
        """The payload of a protocol-2 push: `size` bytes of UTF-8 and a LF after the line.

        They are read into one buffer kept from push to push (no fresh allocation of a large
        payload's size each time), and decoded from there.
        """
        if self.protocol < FAST_PROTOCOL or source is None:
            raise _BadRequest('"bytes" is protocol 2, which was not agreed in "hello"')
        if type(size) is not int or not 0 <= size <= _MAX_FRAME:
            raise _BadRequest('"bytes" must be a non-negative integer')
        if len(self._frame) < size:
            self._frame = bytearray(size)
        view = memoryview(self._frame)[:size]
        got = source.readinto(view)  # type: ignore[attr-defined]
        if got != size or source.read(1) != b"\n":
            raise _BadRequest(f"the payload after the request line is not {size} bytes and a LF")
        try:
            return str(view, "utf-8")
        except UnicodeDecodeError as exc:
            raise _BadRequest(f"the framed payload is not UTF-8: {exc}") from None

    def _from_shared(self, size: Any, at: Any, encoding: Any = None) -> str:
        """The payload of a protocol-3 push: `size` bytes of UTF-8 (in protocol 4, of the
        `encoding` named) at offset `at` of the shared file (mapped again when the harness has
        grown it)."""
        if self.protocol < SHARED_PROTOCOL or self._shared is None:
            raise _BadRequest('"at" is protocol 3, which was not agreed in "hello"')
        codec = "utf-8" if encoding is None else _ENCODINGS.get(encoding)
        if codec is None or (encoding is not None and self.protocol < REPLIES_PROTOCOL):
            raise _BadRequest(
                f'"encoding" {json.dumps(encoding)} is not spoken here (protocol 4: "utf-16le")'
            )
        if type(size) is not int or type(at) is not int or size < 0 or at < 0:
            raise _BadRequest('"bytes" and "at" must be non-negative integers')
        end = at + size
        found = self._shared_map
        if found is None or len(found) < end:
            length = os.fstat(self._shared).st_size
            if length < end:
                raise _BadRequest(f"bytes {at} to {end} are beyond the shared file's {length}")
            if found is not None:
                found.close()
            self._shared_map = found = mmap.mmap(self._shared, length, access=mmap.ACCESS_READ)
        with memoryview(found) as view, view[at:end] as part:
            try:
                return str(part, codec)
            except UnicodeDecodeError as exc:
                shown = "UTF-8" if encoding is None else "UTF-16"
                raise _BadRequest(f"the shared payload is not {shown}: {exc}") from None

    def _open_shared(self, path: Any) -> bool:
        """Open the shared file `hello` names (protocol 3); False when there is none to open."""
        if self._shared is not None:
            return True
        if not isinstance(path, str):
            return False
        try:
            self._shared = os.open(path, os.O_RDONLY)
        except (OSError, ValueError):
            return False
        return True

    def _open_replies(self, fd: Any) -> bool:
        """Take the replies' file `hello` names by its inherited descriptor (protocol 4)."""
        if self._replies is not None:
            return True
        if type(fd) is not int or fd < 3:  # (never stdin, stdout or stderr)
            return False
        try:
            import fcntl

            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDWR:
                return False
        except (OSError, ImportError, ValueError, OverflowError):
            return False
        self._replies = SharedWriter(fd)
        return True

    def _dispatch(self, seq: int, request: dict[str, Any]) -> tuple[Reply, bool]:
        op = request.get("op")
        if op == "hello":
            asked = request.get("protocol")
            if asked != PROTOCOL_VERSION or isinstance(asked, bool):
                raise _BadRequest(f"protocol {asked!r} is not spoken here; {PROTOCOL_VERSION} is")
            if self._load_error is not None or self._factory is None:
                raise _BadRequest(self._load_error or "no target")
            if self._version is None:
                self._version = _version_of(self._factory)
            accept = request.get("accept")
            accepted = accept if isinstance(accept, list) else []
            spoken = [v for v in accepted if type(v) is int]
            shared = SHARED_PROTOCOL in spoken and self._open_shared(request.get("shared"))
            if shared and REPLIES_PROTOCOL in spoken and self._open_replies(request.get("replies")):
                self.protocol = REPLIES_PROTOCOL
            elif shared:
                self.protocol = SHARED_PROTOCOL
            elif FAST_PROTOCOL in spoken:
                self.protocol = FAST_PROTOCOL
            else:
                self.protocol = PROTOCOL_VERSION
            hello = {"name": self._spec, "version": self._version, "language": "python"}
            return {"seq": seq, **hello, "protocol": self.protocol}, False
        if op == "new":
            if self._factory is None:
                raise _BadRequest(self._load_error or "no target")
            self._assembler = None
            self._texts = {}
            self._unrecorded = []
            self._ended = False
            if self._replies is not None:  # every reply of the last case has been read
                self._replies.reset()
            self._assembler = new_assembler(self._factory)
            return b'{"seq":%d,"ok":true}\n' % seq, False
        if op == "push":
            data = request.get("data")
            if not isinstance(data, str):
                raise _BadRequest('"push" needs a string "data"')
            if self._ended and self.protocol >= FAST_PROTOCOL:
                return {"seq": seq, "skipped": True}, False
            assembler = self._open_assembler()
            read = REFERENCE_STATE.get(type(assembler)) if _OWN_TEXTS else None
            if read is None:
                step = push_step(assembler, data, 0, say=True)
            else:  # `push_step` written out, for the reference's own assembler
                try:
                    events = assembler.push(data)
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # as `push_step` takes it
                    step = {"line": 0, **error_step(exc, "push", say=True)}
                else:
                    line = _own_line(seq, events, assembler, read)
                    if line is not None:
                        if events and self.protocol >= FAST_PROTOCOL:
                            self._unrecorded.append(events)
                        return line, False
                    step = step_of(assembler, events, 0)
            if "error" in step:
                self._ended = True
                return _contract_error(seq, step), False
            events = step["events"]
            if self.protocol >= FAST_PROTOCOL:
                if self._unrecorded:
                    self._record_unrecorded()
                events = [self._referenced(seq, data, event) for event in events]
            return {"seq": seq, "events": events, "state": step["state"]}, False
        if op == "finish":
            capped = request.get("thinking_capped")
            if not isinstance(capped, bool):
                raise _BadRequest('"finish" needs a boolean "thinking_capped"')
            if self._ended and self.protocol >= FAST_PROTOCOL:
                return {"seq": seq, "skipped": True}, False
            self._ended = True
            done = finish_step(self._open_assembler(), capped, say=True)
            if "error" in done:
                return _contract_error(seq, done), False
            completion = done["completion"]
            if self.protocol >= FAST_PROTOCOL and (self._texts or self._replies is not None):
                if self._texts and self._unrecorded:  # (without a reference: nothing to join)
                    self._record_unrecorded()
                completion = self._joined_completion(completion)
            return {"seq": seq, "completion": completion}, False
        if op == "bye":
            return {"seq": seq, "ok": True}, True
        raise _BadRequest(f"unknown op {json.dumps(op)}")

    # -- protocol 2: texts as references into the payloads they came from -------------------

    def _referenced(self, seq: int, data: str, event: dict[str, Any]) -> dict[str, Any]:
        """`event`, its long text replaced by a reference into `data` when it stands there as is."""
        kind = event.get("type")
        if kind == "tool_call_delta":
            key, index = "arguments", event.get("index")
            if type(index) is not int:
                return event
            channel: Channel = ("tool", index)
        elif kind in ("content", "reasoning"):
            key, channel = "text", (str(kind), 0)
        else:
            return event
        text = event.get(key)
        if type(text) is not str:
            return event
        ref: Any = _find(data, text, seq) if len(text) >= _REFERENCED else None
        if ref is None and len(text) >= SHARED_FROM:  # escaped in the payload: written out
            ref = self._shared_text(text)
        self._texts.setdefault(channel, []).append((text, ref))
        return event if ref is None else {**event, key: {"$text": [ref]}}

    def _record_unrecorded(self) -> None:
        """Put the texts of the events `_own_line` answered into `_texts`, as `_referenced`
        would have (each sent as it is), before the events of a push that `_referenced` takes."""
        texts = self._texts
        for events in self._unrecorded:
            for event in events:
                name, kind = _OWN_TEXTS[type(event)]
                if kind == "tool_call_delta":
                    if type(event.index) is not int:
                        continue
                    channel: Channel = ("tool", event.index)
                elif name:
                    channel = (kind, 0)
                else:
                    continue
                text = getattr(event, name)
                if type(text) is str:
                    texts.setdefault(channel, []).append((text, None))
        self._unrecorded = []

    def _joined_completion(self, completion: dict[str, Any]) -> dict[str, Any]:
        """`completion`, each text that is its events' texts joined sent as their references."""
        completion = dict(completion)
        for key, channel in (("content", ("content", 0)), ("reasoning_content", ("reasoning", 0))):
            completion[key] = self._joined(completion.get(key), channel)
        calls = completion.get("tool_calls")
        if isinstance(calls, list):
            completion["tool_calls"] = [
                {**call, "arguments": self._joined(call.get("arguments"), ("tool", number))}
                if isinstance(call, dict)
                else call
                for number, call in enumerate(calls)
            ]
        return completion

    def _shared_text(self, text: str) -> dict[str, int] | None:
        """Protocol 4: `text` written into the replies' file, as the piece that says where; None
        when there is no such file, no room in it, or `text` is not UTF-8 (a lone surrogate)."""
        replies = self._replies
        if replies is None:
            return None
        at, size = replies.put_text(text), len(text)  # an ASCII text: straight from the string
        if at is None:
            try:
                raw = text.encode("utf-8")
            except UnicodeEncodeError:
                return None
            at, size = replies.put(raw), len(raw)
            if at is None:
                return None
        return {"at": at, "bytes": size}

    def _joined(self, value: Any, channel: Channel) -> Any:
        texts = self._texts.get(channel)
        if type(value) is not str or not texts or all(ref is None for _, ref in texts):
            return self._unjoined(value)
        if len(value) != sum(len(text) for text, _ in texts):
            return self._unjoined(value)
        position = 0
        pieces: list[Any] = []
        for text, ref in texts:
            # Compared in place (no copy of the text); the completion's text may be the one event's
            # text itself (a join of one piece), which needs no comparison.
            if not (text is value and position == 0) and not value.startswith(text, position):
                return self._unjoined(value)
            position += len(text)
            if ref is not None:
                pieces.append(ref)
            elif pieces and isinstance(pieces[-1], str):
                pieces[-1] += text
            else:
                pieces.append(text)
        return {"$text": pieces}

    def _unjoined(self, value: Any) -> Any:
        """A completion's text that is not its events' texts joined: in protocol 4, written into
        the replies' file when it is long."""
        if type(value) is str and len(value) >= SHARED_FROM:
            piece = self._shared_text(value)
            if piece is not None:
                return {"$text": [piece]}
        return value

    def encode(self, reply: Reply) -> bytes:
        """`reply` as its line (one made as its line already: as it is). A value JSON cannot
        hold (NaN, an infinity) is sent as `{"$number": "NaN"}` in protocol 2 and as a crash in
        protocol 1; anything else that cannot be written is a crash reply, never the adapter's
        own traceback."""
        if type(reply) is bytes:
            return reply
        assert isinstance(reply, dict)
        try:
            return encode_reply(reply)
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if self.protocol >= FAST_PROTOCOL:
            with contextlib.suppress(TypeError, ValueError, OverflowError, RecursionError):
                return encode_reply(_numbers_marked(reply))
        message = f"the assembler's result cannot be sent as JSON ({problem})"
        return encode_reply(_error(reply.get("seq"), "crash", message))

    def _open_assembler(self) -> Any:
        if self._assembler is None:
            raise _BadRequest('no case is open: send "new" first')
        return self._assembler


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _numbers_marked(value: Any) -> Any:
    """`value` with each non-finite float as `{"$number": "NaN"}` (protocol 2)."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"$number": _NON_FINITE[repr(value)]}
    if isinstance(value, dict):
        return {key: _numbers_marked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_numbers_marked(item) for item in value]
    return value


def _own_line(seq: int, events: Any, assembler: Any, read: Any) -> bytes | None:
    """The reply line to a push of the reference's own assembler that returned `events`, made
    from its own events (Structs that encode as their golden objects, `_OWN_TEXTS`) and its
    one-call state reader `read`; None when the push must take `push_step`'s way (an event of
    another type, a text long enough for a reference, a state of other types, a value JSON
    cannot hold), which then reads the same events and state again."""
    if type(events) is not list:
        return None
    texts = _OWN_TEXTS
    for event in events:
        found = texts.get(type(event))
        if found is None or (found[0] and len(getattr(event, found[0])) >= _REFERENCED):
            return None
    try:
        state = plain_state(read(assembler))
    except KeyboardInterrupt:
        raise
    except BaseException:  # `step_of` reads it again, and says what is wrong
        return None
    if state is None:
        return None
    try:
        return _encode_own({"seq": seq, "events": events, "state": state}) + b"\n"
    except (TypeError, ValueError, OverflowError):  # a lone surrogate, a huge integer
        return None


def _find(data: str, text: str, seq: int) -> list[int] | None:
    """`[seq, start, end]` where `text` stands in `data` as it is, or None."""
    probe = text[:_PROBE]
    if _ESCAPED.search(probe) is not None:  # JSON escapes it: not in the payload as it is
        return None  # (and no search through all of a large payload for it)
    start = data.find(probe)
    for _ in range(_TRIES):
        if start < 0:
            return None
        if data.startswith(text, start):
            return [seq, start, start + len(text)]
        start = data.find(probe, start + 1)
    return None


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
    for line in iter(requests.readline, b""):
        if line.isspace():  # not strip(): that copies a 50 MB line
            continue
        reply, done = session.reply(line, requests)
        write(session.encode(reply))
        replies.flush()
        if done:
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
        serve(Session(target, factory, load_error), requests, replies)


if __name__ == "__main__":
    main()
