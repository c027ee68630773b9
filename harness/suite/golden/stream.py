"""Golden files too large to hold in memory: read one step at a time, or written the same way.

A golden file of a million steps is some 300 MB of text and several GB as Python objects, so
`read_golden` hands files above `STREAM_ABOVE` bytes to `read_streamed`: the header and the finish
are parsed at once, and `GoldenSteps` parses the steps lazily, each time it is iterated (once per
mode). It relies on the fixed layout `golden.serialize` writes (two-space indent, so a step is the
text from a line `    {` to a line `    }`, and JSON strings hold no raw line breaks); a large
file in any other layout is refused with a hint to regenerate it. Every check `read_golden` makes
is made here too, on each step as it is read, naming the file and line.

`iter_serialized` is the writing side: the exact text of `serialize(build_golden(case))`, made
one step at a time, so that `write_streamed` can produce a golden file of any length, and
`golden update` and `golden check` can handle recordings above `STREAM_ABOVE` bytes in constant
memory (`update_streamed`, `check_streamed`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

import reference
from harness.drive.inprocess import finish_step, push_step
from harness.errors import GoldenError
from harness.files import write_atomically
from harness.suite.cases import Case
from harness.suite.golden.schema import check_golden
from harness.suite.golden.types import decode_typed
from harness.suite.recording import RecordingInfo, iter_payloads, read_info

#: Golden files larger than this (bytes) are streamed rather than parsed whole.
STREAM_ABOVE = 4 * 2**20

_BLOCK = 2**20
_STEPS_OPEN = b'\n  "steps": ['
_STEP_START = b"\n    {"
_STEP_END = b"\n    }"
_FINISH = b'\n  "finish": '
_END_AFTER_ERROR = b"\n  ]\n}\n"


_REGENERATE = "golden files are generated: regenerate it with 'conform golden update'"


def _layout_error(path: Path, what: str, line: int | None = None) -> GoldenError:
    where = f" at line {line}" if line is not None else ""
    return GoldenError(
        path,
        f"{what}{where}: a golden file this large must be in the layout conform writes",
        hint=_REGENERATE,
    )


def decode(text: str | bytes) -> Any:
    """JSON text as `json.loads` reads it, parsed by msgspec (several times faster) when it can.

    msgspec refuses a little that `json.loads` takes (`1e400`, a lone surrogate escape); the
    stdlib then decides, and names the line and column of any error (`json.JSONDecodeError`).
    """
    try:
        return msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return json.loads(text)


def _loads(path: Path, text: bytes, first_line: int, where: str = "") -> Any:
    """`text` parsed; GoldenError naming the line (counted from `first_line`, in `where`)."""
    try:
        return decode(text)
    except json.JSONDecodeError as exc:
        raise GoldenError(
            path,
            f"invalid JSON{where} at line {first_line + exc.lineno - 1}, column {exc.colno}: "
            f"{exc.msg}",
            hint=_REGENERATE,
        ) from None
    except UnicodeDecodeError:
        raise GoldenError(
            path, f"not valid UTF-8{where} (near line {first_line})", hint=_REGENERATE
        ) from None


def check_step(path: Path, index: int, step: Any, line: int | None, *, hint: str) -> None:
    """GoldenError unless `step` is a step as the golden schema has it (`golden.schema`)."""
    check_golden(path, step, part="step", at=("steps", index), line=line, hint=hint)


def check_header(path: Path, golden: Any, *, schema: int, hint: str) -> None:
    """GoldenError unless `golden` is an object of `schema` with its `thinking_capped`."""
    if not isinstance(golden, dict):
        raise GoldenError(path, "not a golden file: the top level must be an object", hint=hint)
    if golden.get("schema") != schema:
        raise GoldenError(
            path,
            f"golden schema {golden.get('schema')!r} is not {schema}",
            hint="regenerate it with 'conform golden update' or upgrade conform",
        )
    if not isinstance(golden.get("thinking_capped"), bool):
        raise GoldenError(
            path, "not a golden file: 'steps' or 'thinking_capped' is missing", hint=hint
        )


class GoldenSteps:
    """The steps of a streamed golden file: iterable any number of times, each pass from disk."""

    def __init__(self, path: Path, *, start: int, end: int, line: int, finished: bool) -> None:
        self.path = path
        self._start = start  # the byte after `"steps": [`
        self._end = end  # the byte of the newline before the closing `]`
        self._line = line  # the line of `"steps": [`
        self._finished = finished  # the file has a `finish`
        self._count: int | None = None

    def __len__(self) -> int:
        if self._count is None:
            count, carry = 0, b""
            with self.path.open("rb") as stream:
                for block in _blocks(stream, self._start, self._end):
                    data = carry + block
                    count += data.count(_STEP_START)
                    carry = data[-(len(_STEP_START) - 1) :]
            self._count = count
        return self._count

    def __iter__(self) -> Iterator[dict[str, Any]]:
        path = self.path
        line = self._line
        index = 0
        last_error = False
        with path.open("rb") as stream:
            blocks = _blocks(stream, self._start, self._end)
            buf, pos = b"", 0
            while True:
                end = buf.find(_STEP_END, pos)
                if end < 0:
                    block = next(blocks, None)
                    if block is None:
                        if buf[pos:].strip(b", \n"):
                            raise _layout_error(path, "a step does not end", line + 1)
                        break
                    buf, pos = buf[pos:] + block, 0
                    continue
                stop = end + len(_STEP_END)
                text = buf[pos:stop]
                pos = stop
                if text[:1] == b",":
                    text = text[1:]
                if not text.startswith(_STEP_START):
                    raise _layout_error(path, "a step does not start on its own line", line + 1)
                if last_error:
                    raise GoldenError(
                        path, f"steps[{index}] (line {line + 1}) follows an error step"
                    )
                step = decode_typed(text, "step")
                if step is None:  # refused by the types: the slow way says why
                    step = _loads(path, text, line)
                    check_step(path, index, step, line + 1, hint=_REGENERATE)
                last_error = "error" in step
                yield step
                line += text.count(b"\n")
                index += 1
        self._count = index
        if last_error and self._finished:
            raise GoldenError(
                path, "a golden file that ends in an error step has no finish", hint=_REGENERATE
            )
        if not last_error and not self._finished:
            raise GoldenError(path, "'finish' is missing", hint=_REGENERATE)


def _blocks(stream: BinaryIO, start: int, end: int) -> Iterator[bytes]:
    stream.seek(start)
    remaining = end - start
    while remaining > 0:
        block = stream.read(min(_BLOCK, remaining))
        if not block:
            return
        remaining -= len(block)
        yield block


def read_streamed(path: Path, *, schema: int) -> dict[str, Any]:
    """A large golden file's header and finish, with its steps as a lazy `GoldenSteps`."""
    size = path.stat().st_size
    with path.open("rb") as stream:
        head = stream.read(min(size, 64 * 1024))
        opening = head.find(_STEPS_OPEN)
        if opening < 0 or not head.startswith(b"{\n"):
            raise _layout_error(path, "no '\"steps\": [' line near the top")
        header = _loads(path, head[:opening] + b'\n  "steps": []\n}', 1)
        start = opening + len(_STEPS_OPEN)
        line = head[:start].count(b"\n") + 1
        end, finish = _read_finish(path, stream, size=size, start=start)
    check_header(path, header, schema=schema, hint=_REGENERATE)
    check_golden(path, header if finish is None else {**header, "finish": finish}, hint=_REGENERATE)
    steps = GoldenSteps(path, start=start, end=end, line=line, finished=finish is not None)
    golden = {**header, "steps": steps}
    if finish is not None:
        golden["finish"] = finish
    return golden


def _read_finish(
    path: Path, stream: BinaryIO, *, size: int, start: int
) -> tuple[int, dict[str, Any] | None]:
    """Where the steps end, and the parsed `finish` (None when the file ends in an error step)."""
    stream.seek(max(start, size - len(_END_AFTER_ERROR)))
    if stream.read() == _END_AFTER_ERROR:
        return size - len(_END_AFTER_ERROR), None
    span = 64 * 1024
    while True:  # the finish is the last member: read back from the end until its key shows
        begin = max(start, size - span)
        stream.seek(begin)
        tail = stream.read()
        marker = tail.rfind(_FINISH)
        if marker >= 0:
            break
        if begin == start:
            raise _layout_error(path, "no '\"finish\":' line and no error step at the end")
        span *= 4
    if not tail[:marker].endswith(b"\n  ],") or not tail.endswith(b"\n}\n"):
        raise _layout_error(path, "the end of the file is not '],' then \"finish\"")
    text = tail[marker + len(_FINISH) : -len(b"\n}\n")]
    finish = _loads(path, text, 1, " in 'finish'")
    if not isinstance(finish, dict):
        raise GoldenError(path, "'finish' is not an object", hint=_REGENERATE)
    return begin + marker - len(b"\n  ],") + 1, finish


def document_header(case: Case, info: RecordingInfo, *, schema: int) -> dict[str, Any]:
    """The members a golden document of `case` opens with, its recording described by `info`:
    the one place every writer of golden documents takes them from."""
    return {
        "schema": schema,
        "recording": case.recording_name,
        "thinking_capped": info.thinking_capped,
        "pins": list(info.pins),
    }


def iter_serialized(case: Case, *, schema: int) -> Iterator[str]:
    """The text `serialize(build_golden(case))` returns, in pieces, one step in memory at a time."""
    info = read_info(case.recording)
    capped = info.thinking_capped
    header = json.dumps(document_header(case, info, schema=schema), indent=2, ensure_ascii=False)
    assembler = reference.PlainAssembler()
    separator = header[:-2] + ',\n  "steps": [\n    '
    ended = False
    for payload in iter_payloads(case.recording):
        step = push_step(assembler, payload.data, payload.line)
        yield separator + json.dumps(step, indent=2, ensure_ascii=False).replace("\n", "\n    ")
        separator = ",\n    "
        if "error" in step:
            ended = True
            break
    if separator != ",\n    ":  # no steps at all
        yield header[:-2] + ',\n  "steps": []'
    else:
        yield "\n  ]"
    if not ended:
        finish = json.dumps(finish_step(assembler, capped), indent=2, ensure_ascii=False)
        yield ',\n  "finish": ' + finish.replace("\n", "\n  ")
    yield "\n}\n"


def write_streamed(case: Case, *, schema: int) -> None:
    """Write the golden file of a recording of any length, atomically, in constant memory."""
    write_atomically(case.golden, iter_serialized(case, schema=schema))


def _differs(case: Case, *, schema: int) -> bool | None:
    """Whether the golden file's text differs from what the reference makes now (None: missing)."""
    try:
        stream = case.golden.open(encoding="utf-8", errors="replace", newline="")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GoldenError(case.golden, f"cannot be read: {exc.strerror or exc}") from None
    with stream:
        for piece in iter_serialized(case, schema=schema):
            if stream.read(len(piece)) != piece:
                return True
        return stream.read(1) != ""


def update_streamed(case: Case, *, schema: int) -> str:
    """`golden update` for a long recording, in constant memory: created, changed or unchanged."""
    differs = _differs(case, schema=schema)
    if differs is False:
        return "unchanged"
    write_streamed(case, schema=schema)
    return "created" if differs is None else "changed"


def check_streamed(case: Case, *, schema: int) -> str | None:
    """`golden check` for a long recording, in constant memory: missing, drifted, or None."""
    differs = _differs(case, schema=schema)
    return "missing" if differs is None else "drifted" if differs else None
