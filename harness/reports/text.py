"""Rendering result records as text for people: a line per case that did not pass, then totals."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from harness.check.runner import (
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
from harness.quoting import shown
from harness.suite.recording import PIN_TAGS

_LABEL = {
    PASSED: "PASS",
    FAILED: "FAIL",
    CRASHED: "CRASH",
    TIMED_OUT: "TIMEOUT",
    XFAILED: "XFAIL",
    XPASSED: "XPASS",
}
#: Mismatches listed per case in text; reports in files (JSON, JUnit) carry all of them.
MAX_SHOWN_MISMATCHES = 12


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
    if result.choice and result.status not in CONFORMING:
        points = " ".join(sorted({p for c in result.choice for p in c}))
        tried = result.extra.get("outcomes", 1)
        lines.append(
            f"  implementation-defined {points}: no allowed outcome matched ({tried} tried); "
            f"compared with the closest, {choice_text(result.choice)}"
            if tried > 1
            else f"  implementation-defined {points}: only {choice_text(result.choice)} is "
            "allowed in this run (--strict or --choose)"
        )
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


#: The statuses of a run whose target did what the golden file says (an xpass did, too).
CONFORMING = (PASSED, XPASSED)


def choice_text(choice: Sequence[Mapping[str, str]]) -> str:
    """`I3=ignore` (or `I2=protocol or I2=double` when several choices give that outcome)."""
    return " or ".join(" ".join(f"{p}={v}" for p, v in sorted(c.items())) for c in choice)


def rule_totals(results: Iterable[CaseResult]) -> dict[str, dict[str, int]]:
    """Per tag a case pins (`R1`..`R9`, `I1`..`I4`, `SSE`, in that order): its cases, and how many
    of them conform in every mode run (`passed`) or not (`failed`); a case counts once per tag."""
    conforming: dict[str, bool] = {}
    pins: dict[str, tuple[str, ...]] = {}
    for result in results:
        ok = result.status in CONFORMING
        conforming[result.case_id] = conforming.get(result.case_id, True) and ok
        pins[result.case_id] = result.pins or ("none",)
    totals: dict[str, dict[str, int]] = {}
    for tag in (*PIN_TAGS, "none"):
        cases = [case for case, tags in pins.items() if tag in tags]
        if cases:
            passed = sum(conforming[case] for case in cases)
            totals[tag] = {"cases": len(cases), "passed": passed, "failed": len(cases) - passed}
    return totals


def rules_line(results: Sequence[CaseResult]) -> str:
    """`by rule (cases conforming): R1 8/8, ..., R6 60/62 FAIL, ...` in one line."""
    parts = [
        f"{tag} {n['passed']}/{n['cases']}" + (" FAIL" if n["failed"] else "")
        for tag, n in rule_totals(results).items()
    ]
    return f"by rule (cases conforming): {', '.join(parts) or 'no cases'}"


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
                took = f"  (took {choice_text(result.choice)})" if result.choice else ""
                lines.append(f"PASS {result.case_id} [{result.mode}]{took}")
            continue
        described = describe_case(result)
        lines.extend(described if verbose or result.status != XFAILED else described[:2])
    return lines
