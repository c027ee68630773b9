"""Write the type-confusion cases: one recording per read field and coerced value.

`harness.suite.confusion` is the matrix (every field the rules read, every value of another type
a lax decoder coerces into it, with the idioms); this script writes one case of
`recordings/synthetic/type_confusion/` per field and value: a valid stream (a role chunk, the
payload with the one confused value beside text that makes an event, a finish), so that a client
whose decoder coerces the value reads a payload the golden file refuses (R6; R8 for the error
object) and its result changes there. A tool-call index is confused in a second piece, after call
0 exists, so that the values a coercion gives (0 or 1) are both indexes the stream allows.

    python tests/tools/grow_confusion.py            # (re)write the cases
    python tests/tools/grow_confusion.py --check    # exit 1 if a committed case differs
    conform golden update -k 'synthetic/type_confusion'   # then their golden files

The output is deterministic; tests/suite/test_generated_corpus.py checks it is current.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.suite.confusion import READ_FIELDS, Coercion, ReadField, confused, field  # noqa: E402
from tests.tools.corpus_cases import Case, Chunks, choice, raw, write_all  # noqa: E402

FOLDER = "synthetic/type_confusion"
GENERATOR = "tests/tools/grow_confusion.py"
_ID = "chatcmpl-confused"
_FIRST_PIECE = {
    "index": 0,
    "id": "call_0",
    "type": "function",
    "function": {"name": "read_file", "arguments": '{"path":'},
}


def _stream(read: ReadField, value: str) -> list[str]:
    """The payloads of `read`'s case with `value` (JSON text) in it."""
    s = Chunks(_ID).role()
    x = raw(value)
    level, name = read.level, read.name
    if read.path == "id":
        s.top({"id": x, "choices": [choice({"content": "Hi"})]})
    elif read.path == "choices":
        s.top({"id": _ID, "choices": x})
    elif read.path in ("timings", "prompt_progress"):
        s.chunk(choice({"content": "Hi"}), **{read.path: x})
    elif read.path == "error":
        s.top({"error": x})
    elif read.path == "choices[]":
        s.top({"id": _ID, "choices": [x]})
    elif level == "choice":
        delta = x if name == "delta" else {"content": "Hi"}
        s.chunk(choice(delta, x if name == "finish_reason" else None))
    elif read.path in ("delta.tool_calls", "tool_calls[]") or level in ("tool_call", "function"):
        return _tool_stream(s, read, x)
    elif level == "delta":
        s.delta(**{name: x})
    elif level == "timings":
        timings = dict(field("timings").valid) | {name: x}
        s.chunk(choice({"content": "Hi"}), timings=timings)
    elif level == "prompt_progress":
        progress = dict(field("prompt_progress").valid) | {name: x}
        s.chunk(choice({"content": "Hi"}), prompt_progress=progress)
    elif read.path == "error.message":
        s.top({"error": {"code": 500, "message": x, "type": "server_error"}})
    else:  # pragma: no cover (a new field needs its stream)
        raise AssertionError(read.path)
    s.finish("stop")
    return s.payloads


def _tool_stream(s: Chunks, read: ReadField, x: str) -> list[str]:
    if read.path == "delta.tool_calls":
        s.delta(tool_calls=x)
    elif read.path == "tool_calls[]":
        s.delta(tool_calls=[x])
    elif read.path == "tool_call.index":
        s.delta(tool_calls=[_FIRST_PIECE])
        s.delta(tool_calls=[{"index": x, "function": {"arguments": '"a.txt"}'}}])
    elif read.path == "tool_call.function":
        s.delta(tool_calls=[{"index": 0, "id": "call_0", "type": "function", "function": x}])
    else:
        piece = {"index": 0, "id": "call_0", "type": "function"}
        function = {"name": "read_file", "arguments": "{}"}
        if read.path == "tool_call.id":
            piece["id"] = x
        else:
            function[read.name] = x
        s.delta(tool_calls=[piece | {"function": function}])
    s.finish("tool_calls")
    return s.payloads


_KINDS = {
    "string": "a string field",
    "enum": "a finish reason (stop, tool_calls or length)",
    "integer": "an integer field",
    "number": "a number field",
    "object": "an object field",
    "array": "an array of objects",
}


def _about(read: ReadField, coercion: Coercion, value: str) -> list[str]:
    where = read.path.replace("[]", "[0]") if read.path.endswith("[]") else read.path
    if read.level == "top" and "[]" not in read.path:
        where = f"the chunk's {read.path}"
    shown = value if len(value) <= 40 else value[:37] + "..."
    what = coercion.what(read)
    what = what if what == shown else f"{what} ({shown})"
    if read.path.startswith("error"):
        rule = (
            f"R8: {where} holding {what} is protocol: an error that is not "
            "an object, or whose message is not a string, is no server error."
        )
    else:
        rule = (
            f"R6: {where} holding {what} is protocol: {_KINDS[read.kind]} "
            "holding a value of another JSON type is a shape error, whatever a decoder could "
            "make of it."
        )
    return [rule, "Pitfall: " + coercion.idiom(read.kind) + "."]


def cases() -> Iterator[Case]:
    for read in READ_FIELDS:
        for coercion, value in confused(read):
            yield Case(
                f"{FOLDER}/{read.slug}_as_{coercion.name}",
                _about(read, coercion, value),
                "R8" if read.path.startswith("error") else "R6",
                GENERATOR,
                _stream(read, value),
            )


def main(argv: list[str]) -> int:
    differ = write_all(FOLDER, cases(), check="--check" in argv)
    if differ and "--check" in argv:
        print("stale generated cases:", " ".join(differ), f"(python {GENERATOR})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
