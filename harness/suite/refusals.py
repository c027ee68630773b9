"""Why the rules refuse a recording's input: the reference's own `protocol` message for it.

Golden files hold an error's kind, not its message (messages of other kinds than `server` are
not part of the contract), so a report that groups invalid input by what is wrong with it asks
the reference again: `refusal` runs it over the recording and returns the message of the
`protocol` error it ends with (`not a chunk: Expected int, got str - at $.choices[0]...`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import reference
from harness.errors import ConformError
from harness.suite.recording import iter_payloads, read_info


@functools.lru_cache(maxsize=4096)
def refusal(path: Path) -> str | None:
    """The reference's message for the `protocol` error the recording at `path` ends in, or
    None when it ends otherwise (or cannot be read)."""
    try:
        capped = read_info(path).thinking_capped
        assembler = reference.Assembler()
        for payload in iter_payloads(path):
            assembler.push(payload.data)
        assembler.finish(capped)
    except reference.InferError as exc:
        return exc.message if exc.kind == reference.ErrorKind.PROTOCOL else None
    except (ConformError, OSError, RecursionError, MemoryError):
        return None
    return None
