"""`conform record` against a small fake llama-server on a loopback port.

The fake server speaks raw HTTP/1.1 over a socket, so each test controls the bytes exactly: chunk
boundaries (including a CRLF and a UTF-8 character split across two chunks), a socket closed
mid-event, a stall past the timeout.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import socketserver
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.capture import live as recorder
from harness.cli.record import record
from harness.errors import ConformError
from tests.conftest import invoke

# A llama-server-like stream: a keep-alive ping, CRLF line ends in one event, non-ASCII text,
# a finish chunk, a usage chunk, [DONE].
BODY = (
    b": \n\n"
    b'data: {"choices":[{"finish_reason":null,"index":0,'
    b'"delta":{"role":"assistant","content":null}}],'
    b'"id":"chatcmpl-1","object":"chat.completion.chunk"}\n\n'
    b'data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"H\xc3\xa9llo"}}],'
    b'"id":"chatcmpl-1"}\r\n\r\n'
    b'data: {"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"id":"chatcmpl-1",'
    b'"timings":{"predicted_n":2}}\n\n'
    b'data: {"choices":[],"id":"chatcmpl-1","usage":{"completion_tokens":2}}\n\n'
    b"data: [DONE]\n\n"
)
# Chunk boundaries that split a CRLF pair and the two bytes of "é".
SPLITS = (BODY.index(b"\xa9"), BODY.index(b"\r\n\r\n") + 1, len(BODY) - 7)

REQUEST = {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8, "seed": 1}

# What llama-server sends (build 11434).
STREAM_HEADERS = [
    ("Server", "llama.cpp"),
    ("Access-Control-Allow-Origin", ""),
    ("X-Accel-Buffering", "no"),
    ("Content-Type", "text/event-stream"),
    ("Transfer-Encoding", "chunked"),
    ("Keep-Alive", "timeout=5, max=100"),
]


@dataclass
class Scenario:
    """What the fake server does with the next POST."""

    kind: str = "stream"  # stream | status | json | cut | stall | no_end
    body: bytes = BODY
    splits: tuple[int, ...] = SPLITS
    props: dict[str, Any] | None = field(
        default_factory=lambda: {"build_info": "b9999-fake", "model_path": "/models/tiny.gguf"}
    )


class FakeServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scenario = Scenario()
        self.requests: list[tuple[str, list[tuple[str, str]], bytes]] = []
        self.release = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up is part of several tests


class _Handler(socketserver.BaseRequestHandler):
    server: FakeServer

    def handle(self) -> None:
        sock: socket.socket = self.request
        try:
            while self._one(sock):
                pass
        except OSError:
            pass

    def _one(self, sock: socket.socket) -> bool:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return False
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = [tuple(line.split(": ", 1)) for line in lines[1:]]
        length = int(dict((k.lower(), v) for k, v in headers).get("content-length", "0"))
        while len(rest) < length:
            rest += sock.recv(65536)
        self.server.requests.append((f"{method} {target}", headers, rest))  # type: ignore[arg-type]
        scenario = self.server.scenario

        if method == "GET":
            if target == "/props" and scenario.props is not None:
                _send_plain(
                    sock, 200, "OK", "application/json", json.dumps(scenario.props).encode()
                )
            else:
                _send_plain(sock, 404, "Not Found", "text/plain", b"not here")
            return True
        if scenario.kind == "status":
            error = {
                "error": {"code": 400, "message": "bad things", "type": "invalid_request_error"}
            }
            _send_plain(sock, 400, "Bad Request", "application/json", json.dumps(error).encode())
            return True
        if scenario.kind == "json":
            _send_plain(sock, 200, "OK", "application/json", b'{"choices":[]}')
            return True

        head_lines = ["HTTP/1.1 200 OK", *(f"{k}: {v}" for k, v in STREAM_HEADERS)]
        sock.sendall(("\r\n".join(head_lines) + "\r\n\r\n").encode("latin-1"))
        body = scenario.body
        cuts = [0, *scenario.splits, len(body)]
        pieces = [body[a:b] for a, b in itertools.pairwise(cuts) if b > a]
        if scenario.kind == "cut":
            # Half of the stream, then the socket goes away mid-event.
            sock.sendall(_chunk(body[: body.index(b"stop")]))
            sock.shutdown(socket.SHUT_RDWR)
            return False
        for number, piece in enumerate(pieces):
            if scenario.kind == "stall" and number == 1:
                self.server.release.wait(5)
            sock.sendall(_chunk(piece))
        sock.sendall(b"0\r\n\r\n")
        return True


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _send_plain(sock: socket.socket, status: int, reason: str, ctype: str, body: bytes) -> None:
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    srv = FakeServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.release.set()
        srv.shutdown()
        srv.server_close()
        thread.join(10)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "req.json").write_text(json.dumps(REQUEST), encoding="utf-8")
    return tmp_path


def run(suite: Path, *args: str) -> Any:
    # Through `conform` itself: its one error handler prints the `Error:` lines and exit codes.
    return invoke("record", *args, "--suite", str(suite))


def recordings(suite: Path) -> list[Path]:
    """Every file below recordings/, temporary files included."""
    root = suite / "recordings"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_records_the_stream_byte_for_byte(server: FakeServer, suite: Path) -> None:
    result = run(suite, server.url, "--request", str(suite / "req.json"), "sub/hello")
    assert result.exit_code == 0, result.output
    path = suite / "recordings" / "sub" / "hello.http"
    assert recordings(suite) == [path]
    data = path.read_bytes()

    # "stream" goes right after "messages", as in llama-server's captures.
    sent_body = (
        b'{"messages":[{"role":"user","content":"Say hello."}],'
        b'"stream":true,"max_tokens":8,"seed":1}'
    )
    comments, _, rest = data.partition(b"POST ")
    assert re.fullmatch(
        rb"# Recorded by conform record, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(UTC\)\.\n"
        rb"# Server: llama-server build b9999-fake \(from /props build_info\)\.\n"
        rb"# source: real llama-server build b9999-fake\n"
        rb"# Model: /models/tiny\.gguf \(from /props model_path\)\.\n"
        rb"# Command: conform record http://127\.0\.0\.1:\d+ --request \S+req\.json sub/hello\n",
        comments,
    )
    host = f"127.0.0.1:{server.server_address[1]}".encode()
    # The hop-by-hop Transfer-Encoding and Keep-Alive are left out.
    expected = (
        b"POST /v1/chat/completions HTTP/1.1\n"
        b"Host: " + host + b"\n"
        b"Content-Type: application/json\n"
        b"Accept: text/event-stream\n"
        b"\n" + sent_body + b"\n"
        b"\n"
        b"HTTP/1.1 200 OK\n"
        b"Server: llama.cpp\n"
        b"Access-Control-Allow-Origin: \n"
        b"X-Accel-Buffering: no\n"
        b"Content-Type: text/event-stream\n"
        b"\n" + BODY
    )
    assert b"POST " + rest == expected
    # What went over the wire is what the file says was sent.
    line, headers, body = server.requests[-1]
    assert line == "POST /v1/chat/completions"
    assert body == sent_body
    names = [name.lower() for name, _ in headers]
    assert names[:3] == ["host", "content-type", "accept"]
    assert "user-agent" not in names and "accept-encoding" not in names
    assert "Recorded " in result.output and "4 payloads" in result.output


def test_stream_is_forced_on_in_place(server: FakeServer, suite: Path) -> None:
    (suite / "req.json").write_text('{"stream": false, "messages": []}', encoding="utf-8")
    result = run(suite, server.url, "--request", str(suite / "req.json"), "forced")
    assert result.exit_code == 0, result.output
    assert server.requests[-1][2] == b'{"stream":true,"messages":[]}'


def test_non_200_is_reported_and_not_saved(server: FakeServer, suite: Path) -> None:
    server.scenario.kind = "status"
    result = run(suite, server.url, "--request", str(suite / "req.json"), "bad")
    assert result.exit_code == 1
    assert result.output.startswith("Error: server answered 400 Bad Request: bad things")
    assert len(result.output.strip().splitlines()) == 1
    assert recordings(suite) == []


def test_non_200_kept_with_keep_errors(server: FakeServer, suite: Path) -> None:
    server.scenario.kind = "status"
    result = run(suite, server.url, "--request", str(suite / "req.json"), "--keep-errors", "bad")
    assert result.exit_code == 1
    path = suite / "recordings" / "bad.http"
    assert recordings(suite) == [path]
    text = path.read_text(encoding="utf-8")
    assert "HTTP/1.1 400 Bad Request\n" in text
    assert text.endswith('"bad things", "type": "invalid_request_error"}}')


def test_not_an_event_stream_is_not_saved(server: FakeServer, suite: Path) -> None:
    server.scenario.kind = "json"
    result = run(suite, server.url, "--request", str(suite / "req.json"), "plain")
    assert result.exit_code == 1
    assert "not an event stream (Content-Type: application/json)" in result.output
    assert recordings(suite) == []


def test_body_cut_mid_event_leaves_nothing(server: FakeServer, suite: Path) -> None:
    server.scenario.kind = "cut"
    result = run(suite, server.url, "--request", str(suite / "req.json"), "cut")
    assert result.exit_code == 1
    assert result.output.startswith("Error: connection closed after 2 payloads")
    assert len(result.output.strip().splitlines()) == 1
    assert recordings(suite) == []


def test_clean_close_without_an_end_is_cut_off(server: FakeServer, suite: Path) -> None:
    server.scenario.body = BODY[: BODY.index(b'data: {"choices":[{"finish_reason":"stop"')]
    server.scenario.splits = ()
    result = run(suite, server.url, "--request", str(suite / "req.json"), "short")
    assert result.exit_code == 1
    assert "without [DONE], a finish_reason or an error" in result.output
    assert recordings(suite) == []


def test_server_error_payload_is_a_complete_stream(server: FakeServer, suite: Path) -> None:
    server.scenario.body = (
        b'data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"a"}}],"id":"x"}\n\n'
        b'data: {"error":{"code":500,"message":"boom","type":"server_error"}}\n\n'
    )
    server.scenario.splits = ()
    result = run(suite, server.url, "--request", str(suite / "req.json"), "err")
    assert result.exit_code == 0, result.output
    assert "server error: boom" in result.output
    assert (suite / "recordings" / "err.http").read_bytes().endswith(server.scenario.body)


def test_slow_server_times_out_and_leaves_nothing(server: FakeServer, suite: Path) -> None:
    server.scenario.kind = "stall"
    result = run(suite, server.url, "--request", str(suite / "req.json"), "--timeout", "1", "slow")
    assert result.exit_code == 1
    assert result.output.startswith("Error: timed out after 1 s")
    assert recordings(suite) == []


def test_unreachable_server(suite: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the request: nothing listens there
    result = run(suite, f"http://127.0.0.1:{port}", "--request", str(suite / "req.json"), "x")
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: cannot connect to http://127.0.0.1:{port}")
    assert recordings(suite) == []


def test_existing_file_needs_force(server: FakeServer, suite: Path) -> None:
    path = suite / "recordings" / "hello.http"
    path.parent.mkdir()
    path.write_bytes(b"old")
    result = run(suite, server.url, "--request", str(suite / "req.json"), "hello")
    assert result.exit_code == 2
    assert "already exists" in result.output and "--force" in result.output
    assert path.read_bytes() == b"old"
    assert server.requests == []  # refused before asking the server anything

    result = run(suite, server.url, "--request", str(suite / "req.json"), "--force", "hello")
    assert result.exit_code == 0, result.output
    assert path.read_bytes().endswith(BODY)
    assert recordings(suite) == [path]


@pytest.mark.parametrize(
    "content",
    ["{not json", "[1, 2]", "", '{"messages": [] } trailing'],
    ids=["broken", "array", "empty", "trailing"],
)
def test_invalid_request_json_is_a_usage_error(
    server: FakeServer, suite: Path, content: str
) -> None:
    (suite / "req.json").write_text(content, encoding="utf-8")
    result = run(suite, server.url, "--request", str(suite / "req.json"), "x")
    assert result.exit_code == 2
    assert "Error: Invalid value for '--request'" in result.output
    assert "Traceback" not in result.output
    assert server.requests == []
    assert recordings(suite) == []


def test_missing_request_file_is_a_usage_error(server: FakeServer, suite: Path) -> None:
    result = run(suite, server.url, "--request", str(suite / "nope.json"), "x")
    assert result.exit_code == 2
    assert "cannot read request file" in result.output


@pytest.mark.parametrize(
    "url", ["ftp://host/", "not a url", "http://"], ids=["ftp", "words", "nohost"]
)
def test_bad_url_is_a_usage_error(suite: Path, url: str) -> None:
    result = run(suite, url, "--request", str(suite / "req.json"), "x")
    assert result.exit_code == 2
    assert "Error: Invalid value for 'URL'" in result.output


@pytest.mark.parametrize("name", ["../escape", "/abs", "a//b", "a/./b", ".hidden", ""])
def test_bad_name_is_a_usage_error(suite: Path, name: str) -> None:
    result = run(suite, "http://127.0.0.1:1", "--request", str(suite / "req.json"), name)
    assert result.exit_code == 2
    assert "Error: Invalid value for 'NAME'" in result.output


def test_notes_and_thinking_capped_become_comment_lines(server: FakeServer, suite: Path) -> None:
    result = run(
        suite,
        server.url,
        "--request",
        str(suite / "req.json"),
        "--thinking-capped",
        "--note",
        "Chat template: ChatML",
        "capped",
    )
    assert result.exit_code == 0, result.output
    lines = (suite / "recordings" / "capped.http").read_text(encoding="utf-8").splitlines()
    assert "# thinking_capped: true" in lines
    assert "# Chat template: ChatML" in lines
    assert lines.index("# Chat template: ChatML") < lines.index(
        "POST /v1/chat/completions HTTP/1.1"
    )


def test_missing_props_is_tolerated(server: FakeServer, suite: Path) -> None:
    server.scenario.props = None
    result = run(suite, server.url, "--request", str(suite / "req.json"), "noprops")
    assert result.exit_code == 0, result.output
    text = (suite / "recordings" / "noprops.http").read_text(encoding="utf-8")
    assert "# Server: build unknown" in text and "# Model: unknown" in text


def test_help_text() -> None:
    result = invoke("--help", command=record)
    assert result.exit_code == 0
    for option in ("--request", "--suite", "--force", "--keep-errors", "--timeout", "--golden"):
        assert option in result.output


# --- library pieces -----------------------------------------------------------------------------


def test_request_body_stays_on_one_line() -> None:
    body = recorder.request_body(
        {"messages": [{"role": "user", "content": "a\u2028b\nc\x85\ud800"}]}
    )
    text = body.decode("utf-8")
    assert len(text.splitlines()) == 1
    assert json.loads(text)["messages"][0]["content"] == "a\u2028b\nc\x85\ud800"
    assert json.loads(text)["stream"] is True


def test_write_atomic_leaves_no_temp_file_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "recordings" / "x.http"
    recorder.write_atomic(path, b"one", force=False)
    with pytest.raises(ConformError) as info:
        recorder.write_atomic(path, b"two", force=False)
    assert info.value.exit_code == 2
    assert path.read_bytes() == b"one"
    assert sorted(p.name for p in path.parent.iterdir()) == ["x.http"]
    mask = os.umask(0o022)
    try:
        recorder.write_atomic(path, b"three", force=True)
    finally:
        os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # not mkstemp's 0600


def test_stream_watch_counts_payloads_across_any_split() -> None:
    for size in (1, 2, 3, 7, len(BODY)):
        watch = recorder.StreamWatch()
        for start in range(0, len(BODY), size):
            watch.feed(BODY[start : start + size])
        watch.close()
        assert (watch.payloads, watch.ended_by, watch.finish_reason) == (4, "[DONE]", "stop"), size


def test_golden_is_written_and_summarized(server: FakeServer, suite: Path) -> None:
    result = run(suite, server.url, "--request", str(suite / "req.json"), "--golden", "sub/hello")
    assert result.exit_code == 0, result.output
    golden = json.loads((suite / "golden" / "sub" / "hello.json").read_text(encoding="utf-8"))
    assert golden["recording"] == "sub/hello.http"
    assert golden["finish"]["completion"]["content"] == "Héllo"
    summary = result.output.strip().splitlines()[-1]
    assert summary.startswith("Golden ")
    assert "4 payloads; events: content 1; finish_reason stop." in summary


# -- error paths users hit -------------------------------------------------------------------------


def test_a_stream_that_is_not_utf8_is_not_saved(server: FakeServer, suite: Path) -> None:
    server.scenario.body = BODY.replace(b"H\xc3\xa9llo", b"H\xe9llo")
    server.scenario.splits = ()
    result = run(suite, server.url, "--request", str(suite / "req.json"), "latin1")
    assert result.exit_code == 1
    start = BODY.index(b"H\xc3\xa9llo") + 1
    assert result.output == (
        f"Error: the event stream is not valid UTF-8 (byte {start}) "
        "(a recording must be UTF-8; --keep-errors saves it anyway)\n"
    )
    assert recordings(suite) == []


def test_a_name_that_is_a_folder_is_a_usage_error(server: FakeServer, suite: Path) -> None:
    (suite / "recordings" / "taken.http").mkdir(parents=True)
    result = run(suite, server.url, "--request", str(suite / "req.json"), "--force", "taken")
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {suite / 'recordings' / 'taken.http'} is a folder")


def test_golden_that_cannot_be_written_is_exit_2_after_the_recording(
    server: FakeServer, suite: Path
) -> None:
    (suite / "golden").write_text("a file where the folder goes", encoding="utf-8")
    result = run(suite, server.url, "--request", str(suite / "req.json"), "--golden", "hello")
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert lines[0].startswith(f"Recorded {suite / 'recordings' / 'hello.http'}: 4 payloads")
    assert lines[1].startswith("Error: ") and str(suite / "golden") in lines[1]
    assert len(lines) == 2 and recordings(suite) == [suite / "recordings" / "hello.http"]


def test_the_golden_summary_names_a_server_error(server: FakeServer, suite: Path) -> None:
    server.scenario.body = (
        b'data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"a"}}],"id":"x"}\n\n'
        b'data: {"error":{"code":500,"message":"boom","type":"server_error"}}\n\n'
    )
    server.scenario.splits = ()
    result = run(suite, server.url, "--request", str(suite / "req.json"), "--golden", "err")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"Recorded {suite / 'recordings' / 'err.http'}: 2 payloads, "
        f"{len(server.scenario.body)} bytes (server error: boom).",
        f"Golden {suite / 'golden' / 'err.json'}: 2 payloads; events: content 1; "
        "error: server (boom).",
    ]
