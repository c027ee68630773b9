"""conform's reference assembler: the executable form of the contract (docs/spec.md).

    from reference import Assembler
    asm = Assembler()
    events = asm.push(payload)          # one `data:` payload -> its events
    completion = asm.finish(False)      # or InferError

`Assembler` is the fast form (`reference.fast`), what a program that assembles streams should
use. `PlainAssembler` (`reference.assembler.Assembler`) is the same assembler written rule by rule
in the spec's order: it generates the golden files, and the fast one is held to it by a
differential test (tests/assembler/test_differential.py). Both pass the suite:
`conform run reference:Assembler`, `conform run reference:PlainAssembler`.
"""

from __future__ import annotations

from reference.assembler import Assembler as PlainAssembler
from reference.fast import Assembler
from reference.json_text import MAX_DEPTH
from reference.types import (
    MAX_SAFE_INTEGER,
    ChatEvent,
    Completion,
    Content,
    ErrorKind,
    FinishReason,
    InferError,
    Progress,
    Reasoning,
    Timings,
    ToolCall,
    ToolCallDelta,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "Assembler",
    "ChatEvent",
    "Completion",
    "Content",
    "ErrorKind",
    "FinishReason",
    "InferError",
    "PlainAssembler",
    "Progress",
    "Reasoning",
    "Timings",
    "ToolCall",
    "ToolCallDelta",
]
