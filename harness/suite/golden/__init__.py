"""The golden files: what the reference makes of each recording, generated and checked in.

`store.py` builds them with the reference, serializes them one way, reads, updates and checks
them; `types.py` decodes them into msgspec types compiled from their JSON Schema, and `schema.py`
explains what those types refuse, naming the JSON path; `stream.py` reads and writes large ones a
step at a time. What the rest of the harness uses is re-exported here.
"""

from __future__ import annotations

from harness.suite.golden.store import (
    SCHEMA,
    Golden,
    GoldenChange,
    build_golden,
    check,
    made_for,
    open_golden,
    read_golden,
    remove_leftovers,
    serialize,
    update,
)

__all__ = [
    "SCHEMA",
    "Golden",
    "GoldenChange",
    "build_golden",
    "check",
    "made_for",
    "open_golden",
    "read_golden",
    "remove_leftovers",
    "serialize",
    "update",
]
