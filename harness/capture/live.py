"""Record one streamed chat completion from llama-server as a `.http` capture (contract section 1).

The exchange is a single `POST /v1/chat/completions` with `"stream": true`; the capture holds
provenance comment lines, the request exactly as sent, the response head, and the response body
byte for byte (chunked transfer coding undone, nothing else touched). A capture is written only
when the exchange ended as a stream ends: `[DONE]`, a finish reason, or a server `error` payload
followed by a clean close. The file appears atomically (a temporary file in the same folder, then a
rename), so a failed or interrupted recording leaves nothing behind. This module never prints and
never exits; failures are `RecordError`s carrying the exit code the CLI should use.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any

import httpx

from harness.files import write_atomically
from harness.suite.sse import ChunkLines, EventDecoder, Payload

__all__ = [
    "ENDPOINT",
    "Capture",
    "Provenance",
    "RecordError",
    "RecordResult",
    "case_path",
    "command_line",
    "load_request",
    "normalize_url",
    "record",
    "render_capture",
    "request_body",
    "write_atomic",
]

ENDPOINT = "/v1/chat/completions"
_API_PREFIX = "/v1"

# Provenance look-ups are courtesy: each gets at most this long, inside the overall timeout.
_PROBE_TIMEOUT = 5.0
# Hop-by-hop headers: they describe the connection and its framing (the chunked coding is undone),
# not the message, and the captures in recordings/llama-server/ leave them out too.
_DROPPED_RESPONSE_HEADERS = frozenset({"transfer-encoding", "connection", "keep-alive"})
# Characters str.splitlines() breaks on besides CR and LF; JSON may carry them raw inside strings,
# but a one-line body must stay one line for every line counter.
_LINE_BREAKERS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")

ProgressCallback = Callable[[int, int], None]
"""Called as bytes arrive with (payloads so far, body bytes so far)."""


class RecordError(Exception):
    """A recording that could not be made: `exit_code` 2 for usage errors, 1 for a failed exchange.

    `saved` is the path of the capture when it was kept anyway (`keep_errors`).
    """

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        exit_code: int = 1,
        saved: Path | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code
        self.saved = saved

    def __str__(self) -> str:
        return self.message if self.hint is None else f"{self.message} ({self.hint})"


class _StreamWatch:
    """Reads the event stream as it arrives, just enough to count payloads and see how it ended.

    The event stream is read by the recording reader's rules (`harness.suite.sse`), so a capture
    counts the payloads its recording will have. The bytes themselves are not touched.
    """

    def __init__(self) -> None:
        self._lines = ChunkLines()
        self._decoder = EventDecoder()
        self.payloads = 0
        self.done = False
        self.finish_reason: str | None = None
        self.server_error: str | None = None

    @property
    def ended_by(self) -> str | None:
        """How the stream ended, or None if it did not end as a stream ends."""
        if self.done:
            return "[DONE]"
        if self.server_error is not None:
            return "server error"
        if self.finish_reason is not None:
            return "finish_reason"
        return None

    def feed(self, chunk: bytes) -> None:
        self._take(self._decoder.payloads(self._lines.feed(chunk)))

    def close(self) -> None:
        self._take(self._decoder.payloads(self._lines.close()))
        self._take(self._decoder.end())

    def _take(self, payloads: Iterable[Payload]) -> None:
        for payload in payloads:
            self._payload(payload.data)
        self.done = self._decoder.done

    def _payload(self, payload: str) -> None:
        self.payloads += 1
        try:
            obj = json.loads(payload)
        except ValueError:
            return
        if not isinstance(obj, dict):
            return
        error = obj.get("error")
        if isinstance(error, dict):
            message = error.get("message")
            self.server_error = message if isinstance(message, str) else ""
        choices = obj.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str):
                    self.finish_reason = choice["finish_reason"]


@dataclass(frozen=True)
class Provenance:
    """What the leading comment lines say about where and how a capture was made."""

    recorded_at: datetime
    build: str | None = None
    build_source: str | None = None
    model: str | None = None
    model_source: str | None = None
    command: str | None = None
    notes: tuple[str, ...] = ()


@dataclass
class Capture:
    """One exchange as it happened (or as far as it got)."""

    request_line: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status_line: str | None = None
    status_code: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    watch: _StreamWatch = field(default_factory=_StreamWatch)

    @property
    def content_type(self) -> str | None:
        for name, value in self.response_headers:
            if name.lower() == "content-type":
                return value
        return None

    def header(self, name: str) -> str | None:
        for key, value in self.response_headers:
            if key.lower() == name.lower():
                return value
        return None


@dataclass(frozen=True)
class RecordResult:
    """A capture written to disk."""

    path: Path
    case_id: str
    payloads: int
    body_bytes: int
    ended_by: str
    finish_reason: str | None
    server_error: str | None


# --- inputs -----------------------------------------------------------------------------------


def normalize_url(url: str) -> httpx.URL:
    """The server's base URL (a trailing `/v1/chat/completions` or `/v1` is dropped)."""
    text = url.strip()
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise RecordError(
            f"{url!r} is not a URL: {exc}",
            hint="give the server base, e.g. http://127.0.0.1:8080",
            exit_code=2,
        ) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise RecordError(
            f"{url!r} is not an http(s) URL with a host",
            hint="give the server base, e.g. http://127.0.0.1:8080",
            exit_code=2,
        )
    if parsed.query or parsed.fragment:
        raise RecordError(
            f"{url!r} has a query or fragment",
            hint="give the server base, e.g. http://127.0.0.1:8080",
            exit_code=2,
        )
    path = parsed.path.rstrip("/")
    # An OpenAI-style base (`.../v1`, as clients configure it) names the same server.
    path = path.removesuffix(ENDPOINT).removesuffix(_API_PREFIX)
    return parsed.copy_with(path=path or "/")


def case_path(suite_dir: Path, name: str) -> tuple[Path, str]:
    """Where recording NAME lives in the suite, and its case id (NAME without `.http`)."""
    text = name.removesuffix(".http")
    parts = tuple(text.split("/"))
    # Every part a plain visible name: no "", ".", "..", hidden names, or Windows separators.
    if any(not part or part.startswith(".") or "\\" in part or "\x00" in part for part in parts):
        raise RecordError(
            f"{name!r} is not a recording name",
            hint="use a relative name such as 'content_stop' or 'llama-server/tool_call'",
            exit_code=2,
        )
    case_id = "/".join(parts)
    return suite_dir / "recordings" / Path(*parts).with_name(parts[-1] + ".http"), case_id


def load_request(path: Path) -> dict[str, Any]:
    """The request object from a JSON file; it must be one JSON object."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RecordError(
            f"cannot read request file {path}: {exc.strerror or exc}",
            hint="pass a JSON file with --request",
            exit_code=2,
        ) from None
    try:
        obj = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise RecordError(
            f"request file {path} is not UTF-8", hint="save it as UTF-8 JSON", exit_code=2
        ) from None
    except json.JSONDecodeError as exc:
        raise RecordError(
            f"request file {path} is not valid JSON: {exc.msg} "
            f"at line {exc.lineno} column {exc.colno}",
            hint="it must hold one chat completion request object",
            exit_code=2,
        ) from None
    if not isinstance(obj, dict):
        raise RecordError(
            f"request file {path} holds a JSON {type(obj).__name__}, not an object",
            hint='it must hold one chat completion request object, e.g. {"messages": [...]}',
            exit_code=2,
        )
    return obj


def request_body(request: Mapping[str, Any]) -> bytes:
    """The request as sent: `"stream": true` forced, compact JSON on one line, UTF-8."""
    body = dict(request)
    if "stream" not in body and "messages" in body:
        # Where llama-server's own examples (and our captures) put it: right after the messages.
        ordered: dict[str, Any] = {}
        for key, value in body.items():
            ordered[key] = value
            if key == "messages":
                ordered["stream"] = True
        body = ordered
    body["stream"] = True
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # Both can only stand inside JSON strings, where an escape means the same.
    text = _LINE_BREAKERS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.encode("utf-8")


# --- the exchange -----------------------------------------------------------------------------


async def _probe(client: httpx.AsyncClient, base: httpx.URL, timeout: float) -> Provenance:
    """Server build and model from /props (or /v1/models); absent fields are fine."""
    build = build_source = model = model_source = None
    props: Any = None
    try:
        response = await client.get(base.join(_path(base, "/props")), timeout=timeout)
        if response.status_code == 200:
            props = response.json()
    except (httpx.HTTPError, ValueError):
        props = None
    if isinstance(props, dict):
        for key in ("build_info", "build", "build_number", "version"):
            value = props.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
                build, build_source = str(value), f"/props {key}"
                break
        for key in ("model_alias", "model_path", "model"):
            value = props.get(key)
            if isinstance(value, str) and value:
                model, model_source = value, f"/props {key}"
                break
    if model is None:
        try:
            response = await client.get(base.join(_path(base, "/v1/models")), timeout=timeout)
            data = response.json().get("data") if response.status_code == 200 else None
            if isinstance(data, list) and data and isinstance(data[0], dict):
                value = data[0].get("id")
                if isinstance(value, str) and value:
                    model, model_source = value, "/v1/models"
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
    return Provenance(
        recorded_at=datetime.now(UTC),
        build=build,
        build_source=build_source,
        model=model,
        model_source=model_source,
    )


def _path(base: httpx.URL, suffix: str) -> str:
    return base.path.rstrip("/") + suffix


def _header_text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


async def _exchange(
    client: httpx.AsyncClient,
    base: httpx.URL,
    body: bytes,
    capture: Capture,
    on_progress: ProgressCallback | None,
    timeout: float,
) -> None:
    url = base.copy_with(path=_path(base, ENDPOINT))
    request = httpx.Request(
        "POST",
        url,
        headers=[
            ("Host", capture.request_headers[0][1]),
            ("Content-Type", "application/json"),
            ("Accept", "text/event-stream"),
        ],
        content=body,
        extensions={"timeout": httpx.Timeout(timeout).as_dict()},
    )
    response = await client.send(request, stream=True)
    try:
        reason = response.extensions.get("reason_phrase", b"")
        reason_text = reason.decode("latin-1") if isinstance(reason, bytes) else ""
        if not reason_text:
            try:
                reason_text = HTTPStatus(response.status_code).phrase
            except ValueError:
                reason_text = ""
        capture.status_code = response.status_code
        capture.status_line = (
            f"{response.http_version} {response.status_code} {reason_text}".rstrip()
        )
        capture.response_headers = [
            (_header_text(name), _header_text(value))
            for name, value in response.headers.raw
            if name.decode("latin-1").lower() not in _DROPPED_RESPONSE_HEADERS
        ]
        async for chunk in response.aiter_raw():
            capture.body += chunk
            capture.watch.feed(chunk)
            if on_progress is not None:
                on_progress(capture.watch.payloads, len(capture.body))
        capture.watch.close()
    finally:
        await response.aclose()


def _perform(
    base: httpx.URL, body: bytes, *, timeout: float, on_progress: ProgressCallback | None
) -> tuple[Capture, Provenance, BaseException | None]:
    """Run the probes and the exchange under one deadline; return what arrived and what failed."""
    host = base.netloc.decode("ascii")
    capture = Capture(
        request_line=f"POST {_path(base, ENDPOINT)} HTTP/1.1",
        request_headers=[
            ("Host", host),
            ("Content-Type", "application/json"),
            ("Accept", "text/event-stream"),
        ],
        request_body=body,
    )
    provenance = Provenance(recorded_at=datetime.now(UTC))

    async def run() -> None:
        nonlocal provenance
        async with httpx.AsyncClient(trust_env=False) as client:
            provenance = await _probe(client, base, min(_PROBE_TIMEOUT, timeout))
            await _exchange(client, base, body, capture, on_progress, timeout)

    failure: BaseException | None = None
    try:
        asyncio.run(asyncio.wait_for(run(), timeout))
    except (TimeoutError, httpx.TimeoutException) as exc:
        failure = TimeoutError(str(exc))
    except (httpx.HTTPError, httpx.StreamError, httpx.InvalidURL, OSError) as exc:
        failure = exc
    return capture, provenance, failure


# --- rendering and writing --------------------------------------------------------------------


def _comment(text: str) -> str:
    return "# " + " ".join(text.splitlines()).strip() + "\n"


def render_capture(capture: Capture, provenance: Provenance, *, error: str | None = None) -> bytes:
    """The `.http` file: comment lines, request, response head, then the body as received."""
    lines: list[str] = []
    stamp = provenance.recorded_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines.append(_comment(f"Recorded by conform record, {stamp} (UTC)."))
    if provenance.build is not None:
        lines.append(
            _comment(
                f"Server: llama-server build {provenance.build} (from {provenance.build_source})."
            )
        )
    else:
        lines.append(_comment("Server: build unknown (/props did not report one)."))
    if provenance.model is not None:
        lines.append(_comment(f"Model: {provenance.model} (from {provenance.model_source})."))
    else:
        lines.append(_comment("Model: unknown (neither /props nor /v1/models reported one)."))
    if provenance.command is not None:
        lines.append(_comment(f"Command: {provenance.command}"))
    if error is not None:
        lines.append(_comment(f"Kept despite an error (--keep-errors): {error}"))
    lines.extend(_comment(note) for note in provenance.notes)
    lines.append(capture.request_line + "\n")
    lines.extend(f"{name}: {value}\n" for name, value in capture.request_headers)
    lines.append("\n")
    head = "".join(lines).encode("utf-8") + capture.request_body + b"\n\n"
    response_head = ""
    if capture.status_line is not None:
        response_head = capture.status_line + "\n"
        response_head += "".join(f"{name}: {value}\n" for name, value in capture.response_headers)
        response_head += "\n"
    return head + response_head.encode("utf-8") + bytes(capture.body)


def write_atomic(path: Path, data: bytes, *, force: bool) -> None:
    """Write `path` in one step (`harness.files`); overwrite only with `force`."""
    try:
        write_atomically(path, data, replace=force)
    except FileExistsError:
        raise _exists(path) from None


def _exists(path: Path) -> RecordError:
    return RecordError(f"{path} already exists", hint="pass --force to overwrite it", exit_code=2)


# --- the whole recording ----------------------------------------------------------------------


def _failure_message(
    capture: Capture, failure: BaseException | None, base: httpx.URL, timeout: float
) -> tuple[str, str] | None:
    """(message, hint) when the exchange did not give a usable capture, else None."""
    where = str(base).rstrip("/")
    if capture.status_line is None:
        if isinstance(failure, TimeoutError):
            return (
                f"timed out after {timeout:g} s waiting for {where} to answer",
                "raise --timeout, or check that the server is not stuck",
            )
        if isinstance(failure, httpx.ConnectError):
            return (
                f"cannot connect to {where}: {_reason(failure)}",
                "is llama-server running there? see docs/recording.md",
            )
        return (
            f"the exchange with {where} failed before an answer: {_reason(failure)}",
            "check the URL and the server's log",
        )
    status = capture.status_code
    if status != 200:
        return (
            f"server answered {capture.status_line.partition(' ')[2]}{_error_detail(capture)}",
            "check the request body against the server's log; --keep-errors saves the answer",
        )
    content_type = capture.content_type
    if content_type is None or content_type.split(";")[0].strip().lower() != "text/event-stream":
        return (
            f"the answer is not an event stream (Content-Type: {content_type or 'none'})",
            "is URL a llama-server? --keep-errors saves the answer",
        )
    encoding = capture.header("content-encoding")
    if encoding is not None and encoding.strip().lower() not in ("", "identity"):
        return (
            f"the answer is compressed (Content-Encoding: {encoding})",
            "record straight from llama-server, not through a compressing proxy",
        )
    ended_by = capture.watch.ended_by
    if isinstance(failure, TimeoutError):
        return (
            f"timed out after {timeout:g} s, {_payloads(capture.watch.payloads)} received",
            "raise --timeout or lower max_tokens",
        )
    if failure is not None and ended_by not in ("[DONE]", "server error"):
        return (
            (
                f"connection closed after {_payloads(capture.watch.payloads)}, before the stream "
                f"ended: {_reason(failure)}"
            ),
            "the server stopped or crashed mid-stream; see its log and record again",
        )
    if ended_by is None:
        return (
            (
                f"the stream ended after {_payloads(capture.watch.payloads)} without [DONE], "
                "a finish_reason or an error"
            ),
            "the server stopped mid-stream; see its log and record again",
        )
    try:
        capture.body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            f"the event stream is not valid UTF-8 (byte {exc.start})",
            "a recording must be UTF-8; --keep-errors saves it anyway",
        )
    return None


def _reason(exc: BaseException | None) -> str:
    """The most telling words about a transport failure (the OS error underneath, if any)."""
    if exc is None:
        return "unknown error"
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno is not None:
            return os.strerror(seen.errno).lower()
        seen = seen.__cause__ or seen.__context__
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _payloads(count: int) -> str:
    return f"{count} payload" if count == 1 else f"{count} payloads"


def _error_detail(capture: Capture) -> str:
    try:
        obj = json.loads(bytes(capture.body))
        message = obj["error"]["message"]
        if isinstance(message, str) and message:
            return ": " + " ".join(message.split())[:300]
    except (ValueError, KeyError, TypeError):
        pass
    text = " ".join(bytes(capture.body[:300]).decode("utf-8", "replace").split())
    return f": {text}" if text else ""


def record(
    url: str,
    request: Mapping[str, Any],
    *,
    suite_dir: Path,
    name: str,
    timeout: float = 300.0,
    force: bool = False,
    keep_errors: bool = False,
    command: str | None = None,
    notes: tuple[str, ...] = (),
    on_progress: ProgressCallback | None = None,
) -> RecordResult:
    """Post `request` (streaming forced) to the server at `url` and write `recordings/NAME.http`."""
    base = normalize_url(url)
    path, case_id = case_path(suite_dir, name)
    if path.exists() and not force:
        raise _exists(path)
    if path.is_dir():
        raise RecordError(f"{path} is a folder", hint="pick another NAME", exit_code=2)
    if timeout <= 0:
        raise RecordError("--timeout must be positive", hint="e.g. --timeout 300", exit_code=2)
    body = request_body(request)

    capture, provenance, failure = _perform(base, body, timeout=timeout, on_progress=on_progress)
    provenance = Provenance(
        recorded_at=provenance.recorded_at,
        build=provenance.build,
        build_source=provenance.build_source,
        model=provenance.model,
        model_source=provenance.model_source,
        command=command,
        notes=notes,
    )
    problem = _failure_message(capture, failure, base, timeout)
    if problem is not None:
        message, hint = problem
        saved = None
        if keep_errors and capture.status_line is not None:
            write_atomic(path, render_capture(capture, provenance, error=message), force=force)
            saved = path
            hint = f"kept as {path} (--keep-errors)"
        raise RecordError(message, hint=hint, exit_code=1, saved=saved)

    write_atomic(path, render_capture(capture, provenance), force=force)
    watch = capture.watch
    return RecordResult(
        path=path,
        case_id=case_id,
        payloads=watch.payloads,
        body_bytes=len(capture.body),
        ended_by=watch.ended_by or "",
        finish_reason=watch.finish_reason,
        server_error=watch.server_error,
    )


def command_line(url: str, name: str, *, request_file: str, options: Mapping[str, object]) -> str:
    """The command as a user would retype it, for the provenance comment."""
    words = ["conform", "record", url, "--request", request_file]
    for option, value in options.items():
        if value is True:
            words.append(option)
        elif value not in (None, False):
            words.extend([option, str(value)])
    words.append(name)
    return shlex.join(words)
