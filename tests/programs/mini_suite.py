"""A three-case suite for the misbehaving programs and targets: they misbehave at the third push
of a case, which only the middle case has, so the cases around it show the run going on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.suite.cases import Suite
from harness.suite.golden import update


def _stream(chunks: list[dict[str, Any]]) -> str:
    events = [f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n" for chunk in chunks]
    return "".join(events) + "data: [DONE]\n"


def _short(name: str) -> str:
    """Two payloads."""
    chunk = {"id": f"chatcmpl-{name}"}
    return _stream(
        [
            {**chunk, "choices": [{"index": 0, "delta": {"content": "Hel"}}]},
            {
                **chunk,
                "choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}],
            },
        ]
    )


def _long() -> str:
    """Four payloads, at lines 1, 3, 5 and 7."""
    chunk = {"id": "chatcmpl-b"}
    deltas = [{"reasoning_content": "Think"}, {"reasoning_content": "ing"}, {"content": "Hi"}]
    chunks = [
        {**chunk, "choices": [{"index": 0, "delta": delta}], "timings": {"predicted_n": n}}
        for n, delta in enumerate(deltas, start=1)
    ]
    return _stream(
        [*chunks, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    )


#: The cases in order, and the one that meets the misbehaviour.
CASES = ("a_before", "b_misbehaves", "c_after")
BAD = "b_misbehaves"


def write_mini_suite(root: Path) -> Suite:
    """The suite, with golden files made by the reference, under `root`."""
    recordings = root / "recordings"
    recordings.mkdir(parents=True)
    for name in CASES:
        text = _long() if name == BAD else _short(name[0])
        (recordings / f"{name}.sse").write_text(text)
    (root / "golden").mkdir()
    suite = Suite.open(root)
    update(suite.cases(()))
    return suite
