"""The SSE reader and the `.http` head: payloads, their lines, directives and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import RecordingError
from harness.suite.recording import iter_payloads, read_info

HEAD = (
    "# provenance\n"
    "POST /v1/chat/completions HTTP/1.1\nHost: x\n\n"
    '{"stream":true}\n\n'
    "HTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n"
)


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def payloads(path: Path) -> list[tuple[int, str]]:
    return [(p.line, p.data) for p in iter_payloads(path)]


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_line_ends(tmp_path: Path, end: str) -> None:
    text = f"data: a{end}{end}: ping{end}data: b{end}data: c{end}{end}data: [DONE]{end}{end}"
    assert payloads(write(tmp_path, "x.sse", text)) == [(1, "a"), (4, "b\nc")]


def test_fields_comments_and_spaces(tmp_path: Path) -> None:
    text = "event: x\nid: 7\nretry: 1\n:\ndata:tight\n\ndata:  two spaces\n\nerror: gone\n\n"
    assert payloads(write(tmp_path, "x.sse", text)) == [(5, "tight"), (7, " two spaces")]


def test_empty_data_is_an_empty_payload_and_no_data_is_none(tmp_path: Path) -> None:
    text = "data:\n\nevent: only\n\ndata\n\n"
    assert payloads(write(tmp_path, "x.sse", text)) == [(1, ""), (5, "")]


def test_last_event_without_blank_line_is_dispatched(tmp_path: Path) -> None:
    assert payloads(write(tmp_path, "x.sse", "data: a\n\ndata: b")) == [(1, "a"), (3, "b")]


def test_done_ends_the_stream(tmp_path: Path) -> None:
    text = "data: a\n\ndata: [DONE]\n\ndata: never\n\n"
    assert payloads(write(tmp_path, "x.sse", text)) == [(1, "a")]


def test_bom_is_dropped(tmp_path: Path) -> None:
    path = write(tmp_path, "x.sse", b"\xef\xbb\xbf: thinking_capped: true\ndata: a\n\n")
    assert payloads(path) == [(2, "a")]
    assert read_info(path).thinking_capped is True


def test_http_lines_count_from_the_top_of_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "x.http", HEAD + "data: {}\n\ndata: [DONE]\n\n")
    assert payloads(path) == [(10, "{}")]
    assert read_info(path).comments == ("provenance",)


def test_directive(tmp_path: Path) -> None:
    assert read_info(
        write(tmp_path, "a.sse", ": pins R5\n: thinking_capped: true\n")
    ).thinking_capped
    assert not read_info(write(tmp_path, "b.sse", ": thinking_capped: false\n")).thinking_capped
    assert not read_info(
        write(tmp_path, "c.sse", "data: x\n: thinking_capped: true\n")
    ).thinking_capped
    with pytest.raises(RecordingError, match=r"c?\.sse:1: 'thinking_capped:' must be"):
        read_info(write(tmp_path, "d.sse", ": thinking_capped: yes\n"))


def test_http_without_response_part(tmp_path: Path) -> None:
    path = write(tmp_path, "x.http", "POST / HTTP/1.1\nHost: x\n\n{}\n\n")
    with pytest.raises(RecordingError, match="no response part") as info:
        list(iter_payloads(path))
    assert info.value.line == 6


def test_http_with_a_two_line_body(tmp_path: Path) -> None:
    path = write(tmp_path, "x.http", "POST / HTTP/1.1\n\n{\n}\n\nHTTP/1.1 200 OK\n\ndata: x\n\n")
    with pytest.raises(RecordingError, match="single line") as info:
        list(iter_payloads(path))
    assert info.value.line == 4


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "x.sse", b"data: a\n\ndata: \xff\n\n")
    with pytest.raises(RecordingError, match=r"x\.sse:3: not valid UTF-8"):
        list(iter_payloads(path))


def test_real_capture(suite) -> None:
    path = suite.recordings_dir / "llama-server" / "tool_call.http"
    found = list(iter_payloads(path))
    assert len(found) == 24 and found[0].line == 17
    assert all(p.data.startswith("{") for p in found)
