"""Record one streamed chat completion from llama-server as a `.http` capture (contract section 1).

The exchange is a single `POST /v1/chat/completions` with `"stream": true`; the capture holds
provenance comment lines, the request exactly as sent, the response head, and the response body
byte for byte (chunked transfer coding undone, nothing else touched). A capture is written only
when the exchange ended as a stream ends: `[DONE]`, a finish reason, or a server `error` payload
followed by a clean close. The file appears atomically (a temporary file in the same folder, then a
rename), so a failed or interrupted recording leaves nothing behind. This module never prints and
never exits: a usage problem is a `ConformError` (exit 2), a failed exchange a `RecordError`
(exit 1), both of `harness.errors`. The exchange itself is `harness.capture.exchange`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from harness.capture.exchange import (
    ENDPOINT,
    Capture,
    ProgressCallback,
    Provenance,
    StreamWatch,
    perform,
    render_capture,
)
from harness.errors import ConformError, RecordError
from harness.files import write_atomically
from harness.suite.recording import id_of_name

__all__ = [
    "ENDPOINT",
    "Capture",
    "Provenance",
    "RecordError",
    "RecordResult",
    "StreamWatch",
    "case_path",
    "command_line",
    "load_request",
    "normalize_url",
    "record",
    "render_capture",
    "request_body",
    "write_atomic",
]

_API_PREFIX = "/v1"
# but a one-line body must stay one line for every line counter.
_LINE_BREAKERS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")


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
        raise ConformError(
            f"{url!r} is not a URL: {exc}",
            hint="give the server base, e.g. http://127.0.0.1:8080",
        ) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConformError(
            f"{url!r} is not an http(s) URL with a host",
            hint="give the server base, e.g. http://127.0.0.1:8080",
        )
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise ConformError(
            f"{url!r} has port {parsed.port}, outside 1..65535",
            hint="give the server base, e.g. http://127.0.0.1:8080",
        )
    if parsed.query or parsed.fragment:
        raise ConformError(
            f"{url!r} has a query or fragment",
            hint="give the server base, e.g. http://127.0.0.1:8080",
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
        raise ConformError(
            f"{name!r} is not a recording name",
            hint="use a relative name such as 'content_stop' or 'llama-server/tool_call'",
        )
    case_id = id_of_name("/".join(parts))
    return suite_dir / "recordings" / Path(*parts).with_name(parts[-1] + ".http"), case_id


def load_request(path: Path) -> dict[str, Any]:
    """The request object from a JSON file; it must be one JSON object."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConformError(
            f"cannot read request file {path}: {exc.strerror or exc}",
            hint="pass a JSON file with --request",
        ) from None
    try:
        obj = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ConformError(
            f"request file {path} is not UTF-8",
            hint="save it as UTF-8 JSON",
        ) from None
    except json.JSONDecodeError as exc:
        raise ConformError(
            f"request file {path} is not valid JSON: {exc.msg} "
            f"at line {exc.lineno} column {exc.colno}",
            hint="it must hold one chat completion request object",
        ) from None
    if not isinstance(obj, dict):
        raise ConformError(
            f"request file {path} holds a JSON {type(obj).__name__}, not an object",
            hint='it must hold one chat completion request object, e.g. {"messages": [...]}',
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


def write_atomic(path: Path, data: bytes, *, force: bool) -> None:
    """Write `path` in one step (`harness.files`); overwrite only with `force`."""
    try:
        write_atomically(path, data, replace=force)
    except FileExistsError:
        raise _exists(path) from None


def _exists(path: Path) -> ConformError:
    return ConformError(f"{path} already exists", hint="pass --force to overwrite it")


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
        if isinstance(seen, socket.gaierror):  # its errno is getaddrinfo's, not the OS's
            return f"cannot resolve the host name ({(seen.strerror or str(seen)).lower()})"
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
        raise ConformError(f"{path} is a folder", hint="pick another NAME")
    hand_written = path.with_suffix(".sse")
    if hand_written.exists():
        # Both would make one case: every command would then refuse the suite.
        raise ConformError(
            f"case '{case_id}' is already the hand-written recording {hand_written}",
            hint="pick another NAME, or delete that file first to replace it with a capture",
        )
    if timeout <= 0:
        raise ConformError("--timeout must be positive", hint="e.g. --timeout 300")
    body = request_body(request)

    capture, provenance, failure = perform(base, body, timeout=timeout, on_progress=on_progress)
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
        raise RecordError(message, hint=hint, saved=saved)

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
