"""The one event-stream decoder (`harness.suite.sse`): live capture, fed bytes in chunks split
anywhere, finds exactly the payloads the recording reader finds in the same bytes on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.capture.exchange import StreamWatch as _StreamWatch
from harness.suite.recording import iter_payloads
from harness.suite.sse import ChunkLines, EventDecoder

# Every kind of line end, one CRLF and one CR in the middle of an event (between two data lines,
# where a CRLF split in two would end the event early), a comment, a BOM, an event without data,
# non-ASCII text, and lines after [DONE] that must be ignored.
BODY = (
    "\ufeffdata: one\r\ndata: two\r\n\r\n"
    ": keep-alive\n\n"
    'data: {"choices":[{"delta":{"content":"h\u00e9"}}]}\rdata: x\r\r'
    "event: nothing\n\n"
    "data:tight\ndata\n\n"
    'data: {"choices":[{"finish_reason":"stop","delta":{}}]}\r\n\r\n'
    "data: [DONE]\n\n"
    "data: after\n\n"
).encode()
EXPECTED = [
    "one\ntwo",
    '{"choices":[{"delta":{"content":"h\u00e9"}}]}\nx',
    "tight\n",
    '{"choices":[{"finish_reason":"stop","delta":{}}]}',
]


def decode(chunks: list[bytes]) -> list[str]:
    lines, decoder = ChunkLines(), EventDecoder()
    found = []
    for chunk in chunks:
        found += [p.data for p in decoder.payloads(lines.feed(chunk))]
    found += [p.data for p in decoder.payloads(lines.close())]
    found += [p.data for p in decoder.end()]
    return found


def test_the_recording_reader_reads_the_body_so(tmp_path: Path) -> None:
    path = tmp_path / "body.sse"
    path.write_bytes(BODY)
    assert [p.data for p in iter_payloads(path)] == EXPECTED
    assert [p.line for p in iter_payloads(path)] == [1, 6, 11, 14]


def test_chunks_split_anywhere_give_the_same_payloads() -> None:
    assert decode([BODY]) == EXPECTED
    for cut in range(1, len(BODY)):
        assert decode([BODY[:cut], BODY[cut:]]) == EXPECTED, BODY[:cut]
    for size in (1, 2, 3, 5):
        assert decode([BODY[i : i + size] for i in range(0, len(BODY), size)]) == EXPECTED, size


def test_a_cr_ending_a_chunk_waits_for_the_next() -> None:
    lines = ChunkLines()
    assert lines.feed(b"data: a\r") == []  # a CR, or the first half of a CRLF?
    assert lines.feed(b"\ndata: b\r") == [(1, "data: a")]
    assert lines.feed(b"x") == [(2, "data: b")]  # a CR alone, after all
    assert lines.close() == [(3, "x")]
    assert lines.feed(b"\r") == [] and lines.close() == []


def test_a_last_event_without_its_blank_line_is_dispatched_at_the_end() -> None:
    assert decode([b"data: a\n\ndata: b"]) == ["a", "b"]
    assert decode([b"data: a\n\ndata: b\r"]) == ["a", "b"]
    assert decode([b"data: a\n\ndata: [DONE]"]) == ["a"]


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(BODY)])
def test_live_capture_counts_the_payloads_across_any_split(size: int) -> None:
    watch = _StreamWatch()
    for start in range(0, len(BODY), size):
        watch.feed(BODY[start : start + size])
    watch.close()
    assert (watch.payloads, watch.ended_by, watch.finish_reason) == (
        len(EXPECTED),
        "[DONE]",
        "stop",
    )
