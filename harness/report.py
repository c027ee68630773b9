"""Rendering result records as text for people: a block per failure, then totals.

Results of one case that fail the same way in several modes fold into one block (`FAIL case
[plain, key-order, whitespace]`): the modes are the only difference, so the mismatches are listed
once. Every line is `printable` (lone surrogates and control characters escaped) and every value
shortened, whatever the target returned (`harness.safetext`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.compare import ABSENT
from harness.runner import (
    CRASHED,
    FAILED,
    PASSED,
    STATUS_ORDER,
    TIMED_OUT,
    XFAILED,
    XPASSED,
    CaseResult,
    Mismatch,
)
from harness.safetext import capped, printable, quoted, shorten_with_size

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
    # Capped first: a 10 MB string or a 10,000-level list costs no more than a short one.
    text = json.dumps(capped(value, chars=limit, depth=max(limit // 8, 4)), ensure_ascii=False)
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
    """A pushed payload as a JSON string literal (every character visible), shortened with its
    size when long."""
    return quoted(payload)


#: Characters kept of a crash's message and of its details (traceback, stderr) in text.
_MESSAGE_CHARS = 2_000
_DETAILS_CHARS = 20_000


def describe_case(result: CaseResult, *, limit: int | None = MAX_SHOWN_MISMATCHES) -> list[str]:
    """The lines that explain one case's result in one mode (its header, then what went wrong).

    At most `limit` mismatches are listed (all of them when None).
    """
    return describe_fold(Fold((result,)), limit=limit)


@dataclass(frozen=True)
class Fold:
    """Results of one case that did not pass in the same way, in one or more modes."""

    results: tuple[CaseResult, ...]

    @property
    def first(self) -> CaseResult:
        return self.results[0]

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(r.mode for r in self.results)


def _value_key(value: Any) -> str:
    return "(absent)" if value is ABSENT else shown(value, 100_000)


def failure_signature(result: CaseResult) -> tuple[Any, ...]:
    """How a case went wrong, whatever the mode and any expectation: the status it had, each
    mismatch's field, step, values and the target's words, the crash's message and step
    (payloads differ by mode, and are left out)."""
    crash = result.crash
    was = result.expectation.was if result.expectation is not None else result.status
    return (
        result.case_id,
        was,
        tuple(
            (m.path, m.step, _value_key(m.expected), _value_key(m.actual), m.said)
            for m in result.mismatches
        ),
        None if crash is None else (crash.message, crash.step),
    )


def signature(result: CaseResult) -> tuple[Any, ...]:
    """What must be equal for two modes' results of a case to fold: the status, the
    expectation's line, and the `failure_signature`."""
    source = None if result.expectation is None else result.expectation.source
    return (result.status, source, failure_signature(result))


def fold(results: Iterable[CaseResult]) -> list[Fold]:
    """The results grouped: a case's results with the same `signature` make one fold, in the
    order of their first result."""
    groups: dict[tuple[Any, ...], list[CaseResult]] = {}
    for result in results:
        groups.setdefault(signature(result), []).append(result)
    return [Fold(tuple(group)) for group in groups.values()]


def _reproduce_fold(results: Sequence[CaseResult]) -> str:
    """`  (--seed 7)` when a mode depends on the seed; `truncated` names its cut too."""
    parts: list[str] = []
    for result in results:
        if "seed" in result.extra and f"--seed {result.extra['seed']}" not in parts:
            parts.append(f"--seed {result.extra['seed']}")
        if "prefix" in result.extra:
            parts.append(f"cut after payload {result.extra['prefix']}")
    return f"  ({', '.join(parts)})" if parts else ""


def fold_header(folded: Fold) -> str:
    """`FAIL case [plain, key-order]`: the status, the case and the modes it fails in alike."""
    first = folded.first
    return f"{label(first.status)} {first.case_id} [{', '.join(folded.modes)}]"


def describe_fold(folded: Fold, *, limit: int | None = MAX_SHOWN_MISMATCHES) -> list[str]:
    """The lines that explain a fold: its header, then what went wrong, once for all its modes.

    A payload is quoted only when the result stands alone (one mode) and that mode changed it;
    at most `limit` mismatches are listed (all of them when None).
    """
    result = folded.first
    alone = len(folded.results) == 1
    lines = [f"{fold_header(folded)}  {recording_path(result)}{_reproduce_fold(folded.results)}"]
    expected = _expectation_line(result)
    if expected is not None:
        lines.append(expected)
    last_step: object = object()
    shown_mismatches = result.mismatches if limit is None else result.mismatches[:limit]
    for m in shown_mismatches:
        if m.step != last_step:
            if alone and m.payload is not None:
                lines.append(f"    payload pushed at {_where(m)}: {exact(m.payload)}")
            if m.said is not None:
                lines.append(f"    the target raised {shorten_with_size(m.said, _MESSAGE_CHARS)}")
        last_step = m.step
        lines.append(
            f"  {m.path} ({_where(m)}): expected {shown(m.expected)}, got {shown(m.actual)}"
        )
    hidden = len(result.mismatches) - len(shown_mismatches)
    if hidden > 0:
        lines.append(f"  … and {hidden} more mismatch(es)")
    if "stderr" in result.extra:
        stderr = shorten_with_size(str(result.extra["stderr"]), _DETAILS_CHARS)
        lines.extend("  " + line for line in stderr.splitlines())
    crash = result.crash
    if crash is not None:
        where = f"step {crash.step} (line {crash.line})" if crash.step is not None else "finish"
        was = result.expectation.was if result.expectation is not None else result.status
        stopped = "timed out" if was == TIMED_OUT else "crashed"
        lines.append(f"  {stopped} at {where}: {shorten_with_size(crash.message, _MESSAGE_CHARS)}")
        if alone and crash.payload is not None:
            lines.append(f"    payload pushed: {exact(crash.payload)}")
        details = shorten_with_size(crash.details, _DETAILS_CHARS)
        lines.extend("    " + line for line in details.splitlines())
    return [printable(line) for line in lines]


def totals_line(results: Sequence[CaseResult], seconds: float) -> str:
    """`totals: 120 passed, 3 failed` with the time taken."""
    counts = Counter(r.status for r in results)
    parts = [f"{counts[s]} {s}" for s in STATUS_ORDER if counts[s]]
    return f"totals: {', '.join(parts) or 'no cases'} ({len(results)} runs in {seconds:.2f} s)"


def render(results: Iterable[CaseResult], *, verbose: bool = False) -> list[str]:
    """Every non-passing case explained, folded across modes (all cases with `verbose`);
    expected failures briefly."""
    lines: list[str] = []
    for folded in fold(results):
        result = folded.first
        if result.status == PASSED:
            if verbose:
                lines.append(printable(f"PASS {result.case_id} [{', '.join(folded.modes)}]"))
            continue
        described = describe_fold(folded)
        lines.extend(described if verbose or result.status != XFAILED else described[:2])
    return lines
