"""Rendering result records as text for people: a line per case that did not pass, then totals."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from harness.compare import ABSENT
from harness.runner import (
    CRASHED,
    FAILED,
    PASSED,
    PUSH,
    STATUS_ORDER,
    TIMED_OUT,
    XFAILED,
    XPASSED,
    CaseResult,
    Mismatch,
)

_LABEL = {
    PASSED: "PASS",
    FAILED: "FAIL",
    CRASHED: "CRASH",
    TIMED_OUT: "TIMEOUT",
    XFAILED: "XFAIL",
    XPASSED: "XPASS",
}
_SHOWN_CHARS = 300
#: Mismatches listed per case in text; reports in files (JSON, JUnit) carry all of them.
MAX_SHOWN_MISMATCHES = 12


def shown(value: Any, limit: int = _SHOWN_CHARS) -> str:
    """A value as JSON on one line, shortened to `limit` characters."""
    if value is ABSENT:
        return "(absent)"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return shorten(text, limit)


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the last one an ellipsis when anything was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def recording_path(result: CaseResult) -> str:
    """The recording's path inside the suite (`recordings/llama-server/tool_call.http`)."""
    return f"recordings/{result.recording}"


def _where(m: Mismatch) -> str:
    return f"line {m.line}" if m.line is not None else "finish"


def label(status: str) -> str:
    """The word a status is shown as (`FAIL`, `XPASS`)."""
    return _LABEL.get(status, status.upper())


def _expectation_line(result: CaseResult) -> str | None:
    expectation = result.expectation
    if expectation is None:
        return None
    why = f": {expectation.reason}" if expectation.reason else ""
    if result.status == XPASSED:
        return f"  passes, but {expectation.source} expects a failure{why} (remove that line)"
    return f"  expected failure ({expectation.was}), {expectation.source}{why}"


def exact(payload: str) -> str:
    """A pushed payload as a JSON string literal: every character of it visible and unambiguous."""
    return json.dumps(payload, ensure_ascii=False)


def _reproduce(result: CaseResult) -> str:
    """`  (--seed 7)` for a mode that depends on the seed; `truncated` names its cut too."""
    parts = []
    if "seed" in result.extra:
        parts.append(f"--seed {result.extra['seed']}")
    if "prefix" in result.extra:
        parts.append(f"cut after payload {result.extra['prefix']}")
    return f"  ({', '.join(parts)})" if parts else ""


def describe_case(result: CaseResult, *, limit: int | None = MAX_SHOWN_MISMATCHES) -> list[str]:
    """The lines that explain one case's result (its header, then what went wrong).

    At most `limit` mismatches are listed (all of them when None).
    """
    header = f"{label(result.status)} {result.case_id} [{result.mode}]"
    lines = [f"{header}  {recording_path(result)}{_reproduce(result)}"]
    expected = _expectation_line(result)
    if expected is not None:
        lines.append(expected)
    last_step: object = object()
    shown_mismatches = result.mismatches if limit is None else result.mismatches[:limit]
    for m in shown_mismatches:
        if m.step != last_step and m.payload is not None:
            lines.append(f"    payload pushed at {_where(m)}: {exact(m.payload)}")
        last_step = m.step
        lines.append(
            f"  {m.path} ({_where(m)}): expected {shown(m.expected)}, got {shown(m.actual)}"
        )
    hidden = len(result.mismatches) - len(shown_mismatches)
    if hidden > 0:
        lines.append(f"  … and {hidden} more mismatch(es)")
    if "stderr" in result.extra:
        lines.extend("  " + line for line in str(result.extra["stderr"]).splitlines())
    crash = result.crash
    if crash is not None:
        where = f"step {crash.step} (line {crash.line})" if crash.stage == PUSH else crash.stage
        was = result.expectation.was if result.expectation is not None else result.status
        stopped = "timed out" if was == TIMED_OUT else "crashed"
        lines.append(f"  {stopped} at {where}: {crash.message}")
        if crash.payload is not None:
            lines.append(f"    payload pushed: {exact(crash.payload)}")
        lines.extend("    " + line for line in crash.details.splitlines())
    return lines


def totals_line(results: Sequence[CaseResult], seconds: float) -> str:
    """`totals: 120 passed, 3 failed` with the time taken."""
    counts = Counter(r.status for r in results)
    parts = [f"{counts[s]} {s}" for s in STATUS_ORDER if counts[s]]
    return f"totals: {', '.join(parts) or 'no cases'} ({len(results)} runs in {seconds:.2f} s)"


def render(results: Iterable[CaseResult], *, verbose: bool = False) -> list[str]:
    """Every non-passing case explained (all cases with `verbose`); expected failures briefly."""
    lines: list[str] = []
    for result in results:
        if result.status == PASSED:
            if verbose:
                lines.append(f"PASS {result.case_id} [{result.mode}]")
            continue
        described = describe_case(result)
        lines.extend(described if verbose or result.status != XFAILED else described[:2])
    return lines
