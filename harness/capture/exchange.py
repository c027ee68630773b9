"""The exchange behind `conform record`: probes, the streamed POST, and the capture's bytes.

`perform` runs the provenance probes (`/props`, `/v1/models`) and the one streamed
`POST /v1/chat/completions` under one deadline and returns what arrived as a `Capture`, watched as
it arrives by the recording reader's event-stream rules (`harness.suite.sse`), with the failure
that ended it, if any. `render_capture` is the `.http` form of contract section 1. Nothing here
decides whether a capture is good enough to keep (`harness.capture.live` does) or writes a file.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

import httpx

from harness.suite.sse import ChunkLines, EventDecoder, Payload

__all__ = [
    "ENDPOINT",
    "Capture",
    "ProgressCallback",
    "Provenance",
    "StreamWatch",
    "perform",
    "render_capture",
]

ENDPOINT = "/v1/chat/completions"

# Provenance look-ups are courtesy: each gets at most this long, inside the overall timeout.
_PROBE_TIMEOUT = 5.0
# Hop-by-hop headers: they describe the connection and its framing (the chunked coding is undone),
# not the message, and the captures in recordings/llama-server/ leave them out too.
_DROPPED_RESPONSE_HEADERS = frozenset({"transfer-encoding", "connection", "keep-alive"})
# Characters str.splitlines() breaks on besides CR and LF; JSON may carry them raw inside strings,
ProgressCallback = Callable[[int, int], None]
"""Called as bytes arrive with (payloads so far, body bytes so far)."""


class StreamWatch:
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
    watch: StreamWatch = field(default_factory=StreamWatch)

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


def perform(
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
    # The directive every report reads: a real capture, from this server (docs/spec.md).
    server = f"build {provenance.build}" if provenance.build is not None else "(build unknown)"
    lines.append(_comment(f"source: real llama-server {server}"))
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
