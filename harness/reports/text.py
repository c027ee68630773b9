"""Rendering result records as text for people: a block per failure, then totals.

Results of one case that fail the same way in several modes fold into one block (`FAIL case
[plain, key-order, whitespace]`): the modes are the only difference, so the mismatches are listed
once. Every line is `printable` (lone surrogates and control characters escaped) and every value
shortened, whatever the target returned (`harness.safetext`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.check.results import PUSH, CaseResult, Mismatch
from harness.check.status import STATUS_ORDER, Status, count_statuses
from harness.safetext import (
    ABSENT,
    expected_got,
    printable,
    quoted,
    shorten_with_size,
    shown,
)
from harness.suite.recording import PIN_TAGS

#: Mismatches listed per case in text; reports in files (JSON, JUnit) carry all of them.
MAX_SHOWN_MISMATCHES = 12


def recording_path(result: CaseResult) -> str:
    """The recording's path inside the suite (`recordings/llama-server/tool_call.http`)."""
    return f"recordings/{result.recording}"


def _where(m: Mismatch) -> str:
    return f"line {m.line}" if m.line is not None else "finish"


def label(status: str) -> str:
    """The word a status is shown as (`FAIL`, `XPASS`)."""
    return Status(status).label


def _expectation_line(result: CaseResult) -> str | None:
    expectation = result.expectation
    if expectation is None:
        return None
    why = f": {expectation.reason}" if expectation.reason else ""
    if result.status == Status.XPASSED:
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
        if result.seed is not None and f"--seed {result.seed}" not in parts:
            parts.append(f"--seed {result.seed}")
        if result.cut is not None:
            parts.append(f"cut after payload {result.cut}")
    return f"  ({', '.join(parts)})" if parts else ""


def fold_header(folded: Fold) -> str:
    """`FAIL case [plain, key-order]`: the status, the case and the modes it fails in alike."""
    first = folded.first
    return f"{label(first.status)} {first.case_id} [{', '.join(folded.modes)}]"


#: Where a result's recording is, and the command that reruns it, as a run shows them.
Locate = Callable[[CaseResult], str]
Rerun = Callable[[CaseResult], str]


def describe_fold(
    folded: Fold,
    *,
    limit: int | None = MAX_SHOWN_MISMATCHES,
    where: Locate | None = None,
    rerun: Rerun | None = None,
) -> list[str]:
    """The lines that explain a fold: its header, then what went wrong, once for all its modes.

    A payload is quoted only when the result stands alone (one mode) and that mode changed it;
    at most `limit` mismatches are listed (all of them when None). `where` shows the recording
    (default: its path in the suite); `rerun`, when given, adds the command that reproduces the
    first result.
    """
    result = folded.first
    alone = len(folded.results) == 1
    recording = where(result) if where is not None else recording_path(result)
    lines = [f"{fold_header(folded)}  {recording}{_reproduce_fold(folded.results)}"]
    was = result.expectation.was if result.expectation is not None else result.status
    if result.choice and was == Status.FAILED:  # a crash or a timeout is never an allowed outcome
        points = " ".join(sorted({p for c in result.choice for p in c}))
        if result.outcomes > 1:
            lines.append(
                f"  implementation-defined {points}: no allowed outcome matched "
                f"({result.outcomes} tried); compared with the closest, "
                f"{choice_text(result.choice)}"
            )
        elif result.narrowed:
            lines.append(
                f"  implementation-defined {points}: only {choice_text(result.choice)} is "
                "allowed in this run (--strict or --choose)"
            )
    expected = _expectation_line(result)
    if expected is not None:
        lines.append(expected)
    last_step: object = object()
    shown_mismatches = result.mismatches if limit is None else result.mismatches[:limit]
    for m in shown_mismatches:
        if m.step != last_step:
            # Said before the step's mismatches, at their depth and naming the step, so that it
            # never reads as part of the previous step's mismatch.
            if alone and m.payload is not None:
                lines.append(f"  payload pushed at {_where(m)}: {exact(m.payload)}")
            if m.said is not None:
                said = shorten_with_size(m.said, _MESSAGE_CHARS)
                lines.append(f"  at {_where(m)} the target raised {said}")
        last_step = m.step
        lines.append(f"  {m.path} ({_where(m)}): {expected_got(m.expected, m.actual)}")
    hidden = len(result.mismatches) - len(shown_mismatches)
    if hidden > 0:
        lines.append(f"  … and {hidden} more mismatch(es)")
    if result.unlisted:
        lines.append(
            f"  … and {result.unlisted:,} more step(s) that differ, not listed (a run keeps "
            f"its first {len(result.mismatches)} mismatches)"
        )
    if result.stderr is not None:
        stderr = shorten_with_size(result.stderr, _DETAILS_CHARS)
        lines.extend("  " + line for line in stderr.splitlines())
    crash = result.crash
    if crash is not None:
        at = f"step {crash.step} (line {crash.line})" if crash.stage == PUSH else crash.stage
        stopped = "timed out" if was == Status.TIMED_OUT else "crashed"
        lines.append(f"  {stopped} at {at}: {shorten_with_size(crash.message, _MESSAGE_CHARS)}")
        if alone and crash.payload is not None:
            lines.append(f"    payload pushed: {exact(crash.payload)}")
        details = shorten_with_size(crash.details, _DETAILS_CHARS)
        lines.extend("    " + line for line in details.splitlines())
    if rerun is not None and result.status != Status.XPASSED:
        lines.append(f"  rerun: {rerun(result)}")
    return [printable(line) for line in lines]


#: The statuses of a run whose target did what the golden file says (an xpass did, too).


def choice_text(choice: Sequence[Mapping[str, str]]) -> str:
    """`I3=ignore` (or `I2=protocol or I2=double` when several choices give that outcome)."""
    return " or ".join(" ".join(f"{p}={v}" for p, v in sorted(c.items())) for c in choice)


def rule_totals(results: Iterable[CaseResult]) -> dict[str, dict[str, Any]]:
    """Per tag a case pins (`R1`..`R9`, `I1`..`I9`, `SSE`, in that order): its cases, and how many
    of them conform in every mode run (`passed`) or not (`failed`); a case counts once per tag.
    `unexpected` counts the cases with a result that fails the run (not an expected failure).
    When every failing run of the tag's cases is in one mode, `only_in` names it (a rule that
    fails only in `truncated` is not a rule the target gets wrong everywhere)."""
    conforming: dict[str, bool] = {}
    pins: dict[str, tuple[str, ...]] = {}
    bad_modes: dict[str, set[str]] = {}
    unexpected: set[str] = set()  # cases with a result that fails the run
    every_mode: set[str] = set()
    for result in results:
        every_mode.add(result.mode)
        ok = result.status.conforms
        conforming[result.case_id] = conforming.get(result.case_id, True) and ok
        if result.status.fails_run:
            unexpected.add(result.case_id)
        pins[result.case_id] = result.pins or ("none",)
        if not ok:
            bad_modes.setdefault(result.case_id, set()).add(result.mode)
    totals: dict[str, dict[str, Any]] = {}
    for tag in (*PIN_TAGS, "none"):
        cases = [case for case, tags in pins.items() if tag in tags]
        if cases:
            passed = sum(conforming[case] for case in cases)
            found: dict[str, Any] = {
                "cases": len(cases),
                "passed": passed,
                "failed": len(cases) - passed,
            }
            found["unexpected"] = sum(case in unexpected for case in cases)
            modes = set().union(*(bad_modes.get(case, set()) for case in cases))
            if len(modes) == 1 and found["failed"] > 1 and len(every_mode) > 1:
                found["only_in"] = modes.pop()
            totals[tag] = found
    return totals


def rules_line(results: Sequence[CaseResult]) -> str:
    """`by rule (cases conforming): R1 8/8, ..., R6 60/62 FAIL, ...` in one line."""
    parts = [
        f"{tag} {n['passed']}/{n['cases']}"
        + (" FAIL" if n["unexpected"] else " xfail" if n["failed"] else "")
        + (f" (all in {n['only_in']})" if n.get("only_in") else "")
        for tag, n in rule_totals(results).items()
    ]
    return f"by rule (cases conforming): {', '.join(parts) or 'no cases'}"


def totals_line(results: Sequence[CaseResult], seconds: float) -> str:
    """`totals: 120 passed, 3 failed` with the time taken."""
    counts = count_statuses(r.status for r in results)
    parts = [f"{counts[s]} {s}" for s in STATUS_ORDER if counts[s]]
    return f"totals: {', '.join(parts) or 'no cases'} ({len(results)} runs in {seconds:.2f} s)"


def render(
    results: Iterable[CaseResult],
    *,
    verbose: bool = False,
    where: Locate | None = None,
    rerun: Rerun | None = None,
) -> list[str]:
    """Every non-passing case explained, folded across modes (all cases with `verbose`);
    expected failures briefly."""
    lines: list[str] = []
    for folded in fold(results):
        result = folded.first
        if result.status == Status.PASSED:
            if verbose:
                took = f"  (took {choice_text(result.choice)})" if result.choice else ""
                lines.append(printable(f"PASS {result.case_id} [{', '.join(folded.modes)}]{took}"))
            continue
        described = describe_fold(folded, where=where, rerun=rerun)
        lines.extend(described if verbose or result.status != Status.XFAILED else described[:2])
    return lines
