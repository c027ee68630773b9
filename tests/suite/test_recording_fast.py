"""The recording reader's fast path gives exactly the payloads of the line-by-line decoder.

`iter_payloads` reads a plain recording (LF line ends, one-line events) with a few C calls; any
other layout goes line by line. Both are checked against each other on every shipped recording
and on every combination of small pieces that could trip a shortcut: comments, other fields,
bare `data`, extra blank lines, multi-line events, a missing last blank line, `[DONE]`, byte order
marks, CR and CRLF, and `.http` heads.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from harness.errors import RecordingError
from harness.suite import recording
from harness.suite.recording import iter_payloads

ROOT = Path(__file__).resolve().parents[2]
HEAD = "# c\nPOST /v1/chat/completions HTTP/1.1\nHost: x\n\n{}\n\nHTTP/1.1 200 OK\nA: b\n\n"
PIECES = [
    ": directive\n",
    "data: a\n\n",
    "data:b\n\n",
    "data\n\n",
    "data: \n\n",
    ": ping\n\n",
    "event: x\n\n",
    "\n\n",
    "\n",
    "data: c\ndata: d\n\n",
    "data: [DONE]\n\n",
    "data: é😀\n\n",
    "data: e",
    "data: f\n",
    "\ufeffdata: g\n\n",
    "data: h\r\n\r\n",
    "data: i\r\r",
]


def both(path: Path) -> tuple[object, object]:
    def read(reader: object) -> object:
        try:
            return [(p.line, p.data) for p in reader(path)]  # type: ignore[operator]
        except RecordingError as exc:
            return f"error: {exc}"

    return read(iter_payloads), read(recording._decoded_payloads)


def texts() -> list[str]:
    """Every one or two pieces, and a fixed sample of threes."""
    found = ["".join(p) for count in (1, 2) for p in itertools.product(PIECES, repeat=count)]
    threes = list(itertools.product(PIECES, repeat=3))
    return found + ["".join(p) for p in random.Random(22).sample(threes, 300)]


@pytest.mark.parametrize("suffix", [".sse", ".http"])
def test_every_small_layout_reads_the_same_both_ways(tmp_path: Path, suffix: str) -> None:
    fast = 0
    for number, text in enumerate(texts()):
        path = tmp_path / f"{number}{suffix}"  # new: rewriting a file waits for the disk (ext4)
        path.write_bytes(((HEAD if suffix == ".http" else "") + text).encode())
        got, expected = both(path)
        assert got == expected, repr(text)
        fast += recording._simple_payloads(path) is not None
    assert fast > 100  # the fast path was taken, not only the fallback


@pytest.mark.parametrize(
    "head",
    ["", "# only a comment\n", "POST / HTTP/1.1\n\n{}\n\nHTTP/1.1 200 OK\n", HEAD + "x"],
    ids=["empty", "comment", "no-blank-after-headers", "body-without-end"],
)
def test_http_heads_that_end_early_read_the_same(tmp_path: Path, head: str) -> None:
    path = tmp_path / "x.http"
    path.write_bytes(head.encode())
    got, expected = both(path)
    assert got == expected


def test_every_shipped_recording_reads_the_same_both_ways() -> None:
    paths = sorted((ROOT / "recordings").rglob("*.*"))
    assert len(paths) > 100
    for path in paths:
        got, expected = both(path)
        assert got == expected, path


def test_a_large_recording_is_read_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.sse"
    path.write_bytes(b"data: a\n\n" * 10)
    monkeypatch.setattr(recording, "READ_WHOLE_BELOW", 50)
    assert recording._simple_payloads(path) is None
    assert [p.line for p in iter_payloads(path)] == list(range(1, 21, 2))


DIRECTIVES = [
    ": thinking_capped: true\n",
    ": thinking_capped: maybe\n",
    ": pins: R6 I3\n",
    ": pins: R99\n",
    ":plain comment\n",
    "\ufeff: thinking_capped: true\n",
]


def _apart(path: Path) -> object:
    """`read_info` and then the payloads, each as its own reader says (or its error)."""
    try:
        info = recording.read_info(path)
    except RecordingError as exc:
        return f"error: {exc}"
    return info, both(path)[1]


def _together(path: Path) -> object:
    try:
        info, payloads = recording.read_recording(path)
    except RecordingError as exc:
        return f"error: {exc}"
    if payloads is None:  # read as it goes, by iter_payloads, which names the problem
        return info, both(path)[0]
    return info, [(p.line, p.data) for p in payloads]


@pytest.mark.parametrize("suffix", [".sse", ".http"])
def test_the_head_and_the_payloads_read_together_are_those_read_apart(
    tmp_path: Path, suffix: str
) -> None:
    together = 0
    rng = random.Random(7)
    for number, text in enumerate(texts()[::3]):
        path = tmp_path / f"{number}{suffix}"
        head = "".join(rng.sample(DIRECTIVES, rng.randrange(3)))
        if suffix == ".http":  # its comment lines start with '#', before the request
            head = "".join(_http_comment(line) for line in head.splitlines(keepends=True)) + HEAD
        path.write_bytes((head + text).encode())
        assert _together(path) == _apart(path), repr(head + text)
        found: list[recording.RecordingInfo] = []
        try:
            recording._simple_payloads(path, info=found)
        except RecordingError:  # it read the head in the same go, and refused a directive
            together += 1
        together += bool(found)
    assert together > 40  # the one-read path was taken, not only the fallback


def _http_comment(line: str) -> str:
    """An .sse comment line (`: pins: R6`) as an .http one (`# pins: R6`)."""
    bom = "\ufeff" if line.startswith("\ufeff") else ""
    return bom + "#" + line.removeprefix(bom)[1:]


def test_every_shipped_recording_reads_the_same_together() -> None:
    for path in sorted((ROOT / "recordings").rglob("*.*")):
        assert _together(path) == _apart(path), path


@pytest.mark.parametrize(
    "raw",
    [
        # bad UTF-8 after [DONE]
        b": thinking_capped: true\ndata: \xc3\xa9\n\ndata: [DONE]\n\n\xff",
        b": thinking_capped: \xff\ndata: a\n\n",  # in the head
        b": pins: I3\ndata: \xf0\x9f\x98\x80\n\n",
    ],
    ids=["after-done", "in-head", "emoji"],
)
def test_a_head_read_together_is_read_from_utf_8_only(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "x.sse"
    path.write_bytes(raw)
    assert _together(path) == _apart(path)


@pytest.mark.parametrize("text", [": thinking_capped: true", "data: a\n\n: pins: R6"])
def test_a_last_comment_line_without_its_line_end_reads_the_same(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.sse"
    path.write_bytes(text.encode())
    assert _together(path) == _apart(path)
