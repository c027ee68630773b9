"""The compatibility matrix: several targets' reports side by side, as data and Markdown.

Everything here works on typed `Report` records (`harness.reports.report`), whether a run made
them a moment ago (`conform matrix TARGET...`) or separate CI jobs wrote their JSON reports
(`conform matrix --from`, read back with `Report.load` and shards merged with `Report.combine`),
so both give the same matrix, and rule totals and headlines are the ones the other reports use.
The matrix document's schema is `harness/schemas/matrix.schema.json`, described in docs/matrix.md;
`harness.reports.matrix_page` draws it as an HTML page.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.check.modes import DEFAULT_SEED, TRUNCATED
from harness.check.results import CaseResult
from harness.check.status import STATUS_ORDER, Status
from harness.errors import ConformError
from harness.reports.report import Report, conform_version, counts, headline, reproduce
from harness.reports.text import recording_path, rule_totals
from harness.safetext import printable, shorten, shorten_with_size, shown
from harness.suite.recording import PIN_TAGS
from reference.choices import OUTCOMES, TITLES

#: The version of the matrix document's layout (`matrix_schema`).
MATRIX_SCHEMA = 1
#: A cell whose target has no result for the case (its run stopped, or could not start).
NOT_RUN = "not-run"
#: What each rule is about, in a few words (docs/spec.md, "The rules").
RULE_TITLES: dict[str, str] = {
    "R1": "events",
    "R2": "completion texts",
    "R3": "timings",
    "R4": "reasoning state",
    "R5": "finish",
    "R6": "protocol errors",
    "R7": "unknown fields, odd shapes",
    "R8": "server errors",
    "R9": "ids, progress and timings fields",
    **TITLES,
    "SSE": "the event-stream framing",
    "none": "cases without a pins: line",
}
_DETAIL_CHARS = 1_500
#: What a score shows when the target ran no such case (an en dash).
DASH = "\u2013"
_VALUE_CHARS = 300


@dataclass(frozen=True)
class Column:
    """One implementation: its label, its (merged) report, its expected-failures file, or the
    error that kept it from running."""

    label: str
    report: Report | None
    xfail: str | None = None
    error: str | None = None
    target: str = ""
    kind: str = "python"


def default_label(target: str, kind: str) -> str:
    """A short column name: `reference` for `reference:Assembler`, `openai_adapter` for
    `examples/clients/openai_adapter.py:Assembler`, `node assembler.mjs` for an --exec command."""
    if kind == "exec":
        words = shlex.split(target) or [target]
        names = [Path(w).name for w in words[:2] if not w.startswith("-")]
        return " ".join(names) or target
    module = target.rpartition(":")[0] or target
    return Path(module).stem if module.endswith(".py") else module


# -- the matrix ---------------------------------------------------------------------------------


def cell_status(statuses: Iterable[str]) -> str:
    """The status a cell shows: the worst of its modes' (`not-run` when there are none)."""
    found = [Status(s) for s in statuses]
    return str(max(found, key=lambda s: s.severity)) if found else NOT_RUN


def _value(value: Any) -> str:
    return shown(value, _VALUE_CHARS)


def cell_headline(result: CaseResult) -> str:
    """One line for a cell: the report's headline, saying where a crash happened."""
    crash = result.crash
    if crash is not None and not result.mismatches and result.status != Status.XPASSED:
        was = result.expectation.was if result.expectation is not None else result.status
        return printable(f"{was} at {crash.stage}: {shorten(crash.message, 200)}")
    return printable(headline(result))


def detail(result: CaseResult, modes: Mapping[str, str]) -> str:
    """The lines a cell's details show: which modes failed, then the first mismatch or crash in
    full (values shortened)."""
    bad = [mode for mode, status in modes.items() if status != Status.PASSED]
    lines = [f"{result.status} in {len(bad)} of {len(modes)} modes: {', '.join(bad)}"]
    expectation = result.expectation
    if expectation is not None:
        reason = f": {expectation.reason}" if expectation.reason else ""
        lines.append(f"expected failure ({expectation.was}), {expectation.source}{reason}")
    if result.mismatches:
        m = result.mismatches[0]
        where = f"line {m.line}" if m.line is not None else "finish"
        lines += [
            f"first mismatch [{result.mode}]: {m.path} ({where})",
            f"  expected: {_value(m.expected)}",
            f"  got:      {_value(m.actual)}",
        ]
        if m.said:
            lines.append(f"  the target raised {shorten(m.said, _VALUE_CHARS)}")
        if m.payload is not None:
            lines.append(f"  payload pushed: {shown(m.payload, _VALUE_CHARS)}")
        if len(result.mismatches) > 1:
            lines.append(f"  and {len(result.mismatches) - 1} more mismatch(es) in this mode")
    crash = result.crash
    if crash is not None:
        line = f", line {crash.line}" if crash.line is not None else ""
        lines.append(f"{result.status} [{result.mode}] at {crash.stage}{line}:")
        lines.append(f"  {crash.message}")
        if crash.details:
            lines.append(shorten_with_size(crash.details.rstrip(), 600))
    return shorten_with_size(printable("\n".join(lines), keep_lines=True), _DETAIL_CHARS)


def _choices(results: Iterable[CaseResult]) -> dict[str, dict[str, Any]]:
    """Per implementation-defined point the target met in a case it conforms in: `taken`, the
    outcomes that explain every such case (empty when no one outcome does: the target is not
    consistent), `cases`, per outcome, how many of those cases it explains, and `varies`, how
    many cases it conformed in with one outcome in some modes and another in others."""
    per_case: dict[str, dict[str, set[str]]] = {point: {} for point in OUTCOMES}
    results = list(results)
    # A truncated run matches the first outcome its cut allows, often before the point is met.
    if any(r.mode != TRUNCATED for r in results):
        results = [r for r in results if r.mode != TRUNCATED]
    for result in results:
        if not result.status.conforms or not result.choice:
            continue
        for point in OUTCOMES:
            seen = {combo[point] for combo in result.choice if point in combo}
            if seen:
                known = per_case[point].setdefault(result.case_id, seen)
                known &= seen  # every mode must agree with the outcome
    found: dict[str, dict[str, Any]] = {}
    for point, cases in per_case.items():
        if not cases:
            continue
        taken = set(OUTCOMES[point]).intersection(*cases.values())
        found[point] = {
            "taken": [o for o in OUTCOMES[point] if o in taken],
            "cases": {o: n for o in OUTCOMES[point] if (n := sum(o in c for c in cases.values()))},
            "varies": sum(not c for c in cases.values()),
        }
    return found


def verdict(column: Column) -> str:
    """What a column's run says of its target, in a few words: `did not run`, `partial
    (interrupted)`, `fails`, `meets its baseline` (its failures are all expected ones) or
    `conforms` (nothing failed, nothing expected to); the level is named when not `full`."""
    if column.error is not None or column.report is None:
        return "did not run"
    report = column.report
    at = "" if report.info.level == "full" else f" at level {report.info.level}"
    partial = report.info.why_partial()
    if partial is not None:
        return f"partial ({partial})"
    if report.failed:
        return "fails" + at
    if any(r.status == Status.XFAILED for r in report.results):
        return "meets its baseline" + at
    return "conforms" + at


def _column_json(column: Column) -> dict[str, Any]:
    report = column.report
    results = report.results if report is not None else ()
    info = report.info if report is not None else None
    cases = {r.case_id for r in results}
    passing = cases - {r.case_id for r in results if not r.status.conforms}
    problems = [] if report is None else report.problems()
    return {
        "label": column.label,
        "target": info.target if info is not None else column.target,
        "target_kind": info.kind if info is not None else column.kind,
        "level": info.level if info is not None else "full",
        "xfail": column.xfail,
        "error": column.error,
        "ok": column.error is None and report is not None and report.ok and not report.info.partial,
        "verdict": verdict(column),
        "partial": None if info is None else info.why_partial(),
        "duration": info.duration if info is not None else 0.0,
        "totals": {"runs": len(results), **counts(results)},
        "cases": {"total": len(cases), "conforming": len(passing)},
        "rules": rule_totals(results),
        "classes": {} if report is None else {n: t.to_json() for n, t in report.classes().items()},
        "in_words": None if report is None or not results else report.verdict(problems),
        "choices": _choices(results),
        "problems": [p.to_json() for p in problems],
    }


def matrix(
    columns: Sequence[Column],
    *,
    baseline: Mapping[str, Any] | None = None,
    baseline_path: str | None = None,
    generated: datetime | None = None,
) -> dict[str, Any]:
    """The matrix document (docs/matrix.md): a column per target, a row per case."""
    labels = [c.label for c in columns]
    if len(set(labels)) != len(labels):
        twice = sorted({x for x in labels if labels.count(x) > 1})
        raise ConformError(
            f"two targets have the label {twice[0]!r}", hint="give each one LABEL=..."
        )
    reports = [c.report for c in columns if c.report is not None]
    modes: list[str] = list(reports[0].info.modes) if reports else []
    seed = reports[0].info.seed if reports else DEFAULT_SEED
    for column in columns:
        if column.report is not None and list(column.report.info.modes) != modes:
            raise ConformError(
                f"{column.label!r} ran the modes {', '.join(column.report.info.modes)}, "
                f"not {', '.join(modes)}",
                hint="a matrix compares runs over the same modes",
            )
    by_case: dict[str, dict[str, Any]] = {}
    grouped: list[dict[str, list[CaseResult]]] = []
    for column in columns:
        per_case: dict[str, list[CaseResult]] = {}
        for result in column.report.results if column.report is not None else ():
            per_case.setdefault(result.case_id, []).append(result)
            by_case.setdefault(
                result.case_id,
                {"recording": recording_path(result), "pins": list(result.pins)},
            )
        grouped.append(per_case)
    old = _baseline_cells(baseline)
    changed = 0
    rows = []
    for case in sorted(by_case):
        cells = []
        for column, per_case in zip(columns, grouped, strict=True):
            cell = _cell(column, case, per_case.get(case, []))
            if baseline is not None:
                was = old.get((column.label, case))
                if was != cell["status"]:
                    cell["changed"] = {"was": was}
                    changed += 1
            cells.append(cell)
        rows.append({"case": case, **by_case[case], "cells": cells})
    targets = [_column_json(c) for c in columns]
    present = {tag for row in rows for tag in (row["pins"] or ["none"])}
    partial = [t["label"] for t in targets if t["partial"] is not None or t["error"] is not None]
    return {
        "matrix_schema": MATRIX_SCHEMA,
        "conform_version": conform_version(),
        "generated": (generated or datetime.now(UTC)).isoformat(timespec="seconds"),
        "modes": modes,
        "seed": seed,
        "ok": all(t["ok"] for t in targets),
        "partial": partial,
        "rules": [
            {"tag": tag, "title": RULE_TITLES[tag]} for tag in (*PIN_TAGS, "none") if tag in present
        ],
        "targets": targets,
        "cases": rows,
        "baseline": None if baseline is None else {"path": baseline_path or "", "changed": changed},
    }


def _cell(column: Column, case: str, results: list[CaseResult]) -> dict[str, Any]:
    modes = {r.mode: str(r.status) for r in results}
    status = cell_status(modes.values())
    cell: dict[str, Any] = {"status": status, "modes": modes}
    choice: list[dict[str, str]] = []
    for result in results:
        for combo in result.choice:
            if result.status.conforms and combo not in choice:
                choice.append(combo)
    cell["choice"] = choice
    worst = next((r for r in results if r.status == status and status != Status.PASSED), None)
    if worst is None or column.report is None:
        cell["first"] = None
        return cell
    cell["first"] = {
        "mode": worst.mode,
        "headline": shorten(cell_headline(worst), 300),
        "detail": detail(worst, modes),
        "command": reproduce(column.report.info, case=case, mode=worst.mode),
    }
    return cell


def _baseline_cells(baseline: Mapping[str, Any] | None) -> dict[tuple[str, str], str]:
    if baseline is None:
        return {}
    labels = [t["label"] for t in baseline.get("targets", [])]
    found: dict[tuple[str, str], str] = {}
    for row in baseline.get("cases", []):
        for label, cell in zip(labels, row.get("cells", []), strict=False):
            found[(label, row["case"])] = cell["status"]
    return found


def load_matrix(path: Path) -> dict[str, Any]:
    """A matrix document written by `conform matrix --json` (for `--baseline`)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConformError(f"no baseline {path}", hint="'conform matrix ... --json FILE'") from None
    except (OSError, UnicodeError, ValueError) as exc:
        raise ConformError(f"cannot read the baseline {path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("matrix_schema") != MATRIX_SCHEMA:
        raise ConformError(f"{path} is not a conform matrix (matrix_schema {MATRIX_SCHEMA})")
    return doc


# -- Markdown -----------------------------------------------------------------------------------


def _md(text: str) -> str:
    return printable(text).replace("\\", "\\\\").replace("|", "\\|")


def score(scores: Mapping[str, int] | None) -> str:
    """`12/13`, with a mark when not all conform; a dash when the target ran no such case."""
    if not scores:
        return DASH
    mark = "" if scores["failed"] == 0 else " ✗"
    only = f" (all in {scores['only_in']})" if scores.get("only_in") else ""
    return f"{scores['passed']}/{scores['cases']}{mark}{only}"


def chosen(point: Mapping[str, Any] | None) -> str:
    """The outcome a target took at a point: `ignore`, `protocol or double` (its cases do not
    tell them apart), `mixed: protocol 3, ignore 1`, or a dash (no conforming case)."""
    if not point:
        return DASH
    if point["taken"]:
        return " or ".join(point["taken"])
    parts = [f"{o} {n}" for o, n in point["cases"].items()]
    if point.get("varies"):
        parts.append(f"{point['varies']} varying by mode")
    return "mixed: " + ", ".join(parts)


def markdown(data: Mapping[str, Any]) -> str:
    """The per-rule scores as a Markdown table: a row per rule, a column per target."""
    targets = data["targets"]
    head = "| rule | " + " | ".join(f"`{_md(t['label'])}`" for t in targets) + " |"
    lines = [head, "|---|" + "---|" * len(targets)]
    for rule in data["rules"]:
        tag = rule["tag"]
        name = f"{tag} {rule['title']}" if tag != "none" else rule["title"]
        cells = [score(t["rules"].get(tag)) for t in targets]
        lines.append(f"| {_md(name)} | " + " | ".join(cells) + " |")
    for name, title in CLASS_ROWS:
        if any(t.get("classes", {}).get(name, {}).get("cases") for t in targets):
            cells = [class_score(t.get("classes", {}).get(name)) for t in targets]
            lines.append(f"| **{title}** | " + " | ".join(cells) + " |")
    totals = [
        f"**{t['cases']['conforming']}/{t['cases']['total']}**"
        + ("" if t["error"] is None else " (did not run)")
        + ("" if t.get("partial") is None else f" (partial: {_md(t['partial'])})")
        for t in targets
    ]
    lines.append("| **all cases** | " + " | ".join(totals) + " |")
    lines.append("| **verdict** | " + " | ".join(_md(t["verdict"]) for t in targets) + " |")
    for point in OUTCOMES:
        if any(t["choices"].get(point) for t in targets):
            cells = [_md(chosen(t["choices"].get(point))) for t in targets]
            lines.append(f"| {point} outcome taken | " + " | ".join(cells) + " |")
    modes = ", ".join(data["modes"])
    lines += [
        "",
        f"Cases conforming in every mode ({modes}; seed {data['seed']}); "
        "✗: some case of the rule fails; expected failures (`--xfail`) count as not conforming.",
    ]
    said = [(t["label"], t.get("in_words")) for t in targets if t.get("in_words")]
    if said:
        lines.append("")
        lines += [f"- `{_md(label)}` {_md(words)}." for label, words in said]
    return "\n".join(lines) + "\n"


#: The matrix's rows per class of input (docs/spec.md section 10), above the rule rows' totals.
CLASS_ROWS = (
    ("valid", "valid streams"),
    ("invalid", "invalid input"),
    ("implementation-defined", "implementation-defined"),
)


def class_score(totals: Mapping[str, Any] | None) -> str:
    """`185/185 (real 9/9)`, with a mark when not all conform; a dash without such cases."""
    if not totals or not totals.get("cases"):
        return DASH
    mark = "" if totals["failed"] == 0 else " ✗"
    real = totals.get("real") or {}
    shown_real = f" (real {real['passed']}/{real['cases']})" if real.get("cases") else ""
    return f"{totals['passed']}/{totals['cases']}{mark}{shown_real}"


def matrix_text(data: Mapping[str, Any]) -> str:
    """The matrix document as JSON text: compact cells, one case a line, UTF-8."""
    head = {k: v for k, v in data.items() if k != "cases"}
    body = ",\n".join(json.dumps(row, ensure_ascii=False) for row in data["cases"])
    text = json.dumps(head, ensure_ascii=False, indent=2)
    return text[:-2] + ',\n  "cases": [\n' + body + "\n  ]\n}\n"


def column_line(column: Column) -> str:
    """One line on a finished column: `go: 1204 runs, 1190 passed, 14 xfailed (3.1 s)`."""
    if column.error is not None:
        return f"{column.label}: did not run: {printable(column.error)}"
    results = column.report.results if column.report is not None else ()
    duration = column.report.info.duration if column.report is not None else 0.0
    totals = counts(results)
    parts = [f"{totals[s]} {s}" for s in STATUS_ORDER if totals[s]]
    return (
        f"{column.label}: {len(results)} runs, {', '.join(parts) or 'none'} "
        f"({duration:.1f} s): {verdict(column)}"
    )
