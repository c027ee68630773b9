"""conform's reference assembler: the executable form of the contract (docs/spec.md).

from reference import Assembler
asm = Assembler()
events = asm.push(payload)          # one `data:` payload -> its events
completion = asm.finish(False)      # or InferError
"""

from __future__ import annotations

from reference.assembler import MAX_DEPTH, Assembler
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
    "Progress",
    "Reasoning",
    "Timings",
    "ToolCall",
    "ToolCallDelta",
]
