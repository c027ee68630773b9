"""The compatibility matrix: several targets' JSON reports side by side, as data and Markdown.

Everything here works on JSON report documents (docs/json-report.md), whether a run made them a
moment ago (`conform matrix TARGET...`) or separate CI jobs wrote them (`conform matrix --from`),
so both give the same matrix. Shard reports of one target merge into one report first. The
matrix document's schema is `harness/schemas/matrix.schema.json`, described in docs/matrix.md;
`harness.reports.page` draws it as an HTML page.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.check.modes import DEFAULT_SEED, TRUNCATED
from harness.check.runner import (
    CRASHED,
    FAILED,
    PASSED,
    STATUS_ORDER,
    TIMED_OUT,
    XFAILED,
    XPASSED,
)
from harness.errors import ConformError
from harness.reports.machine import FAILING, REPORT_SCHEMA, conform_version
from harness.safetext import ABSENT, printable, shorten, shorten_with_size, shown
from harness.suite.cases import default_suite_root
from harness.suite.recording import PIN_TAGS
from reference.choices import OUTCOMES, TITLES

#: The version of the matrix document's layout (`matrix_schema`).
MATRIX_SCHEMA = 1
#: A cell whose target has no result for the case (its run stopped, or could not start).
NOT_RUN = "not-run"
#: A cell's status is its case's worst over the modes: the first of these that any mode had.
SEVERITY = (CRASHED, TIMED_OUT, FAILED, XPASSED, XFAILED, PASSED)
CONFORMING = (PASSED, XPASSED)
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
    """One implementation: its label, its (merged) JSON report, its expected-failures file, or the
    error that kept it from running."""

    label: str
    report: dict[str, Any] | None
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
    if module.endswith(".py"):
        return Path(module).stem
    return module


# -- reading and merging reports ----------------------------------------------------------------


def load_report(path: Path) -> dict[str, Any]:
    """A JSON report written by `conform run --json`; ConformError when it is not one."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConformError(f"no report {path}") from None
    except (OSError, UnicodeError, ValueError) as exc:
        raise ConformError(f"cannot read the report {path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("report_schema") != REPORT_SCHEMA:
        raise ConformError(
            f"{path} is not a conform JSON report (report_schema {REPORT_SCHEMA})",
            hint="'conform run TARGET --json FILE' writes one",
        )
    for key in ("target", "modes", "seed", "results", "suite"):
        if key not in doc:
            raise ConformError(f"{path}: the report has no {key!r}")
    return doc


def merge_reports(label: str, reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One report of a target from its shards' reports (or the one report given).

    The shards must agree on target, modes and seed, hold no case twice, and, when they say
    they are shards (`shard: {index, count}`), be all N of them.
    """
    first = reports[0]
    if len(reports) == 1 and first.get("shard") is None:
        return first
    for other in reports[1:]:
        for key in ("target", "modes", "seed"):
            if other.get(key) != first.get(key):
                raise ConformError(
                    f"the reports of {label!r} differ in {key}: "
                    f"{shown(first.get(key), 80)} and {shown(other.get(key), 80)}",
                    hint="a column merges the shards of one run; give other runs another label",
                )
    shards = [r.get("shard") for r in reports]
    if any(s is not None for s in shards):
        counts = {s["count"] for s in shards if s is not None}
        have = sorted(s["index"] for s in shards if s is not None)
        if None in shards or len(counts) != 1 or have != list(range(1, counts.pop() + 1)):
            named = ", ".join(
                "whole" if s is None else f"{s['index']}/{s['count']}" for s in shards
            )
            raise ConformError(
                f"the shards of {label!r} are not one complete set: {named}",
                hint="give every shard K/N of one N, once each",
            )
    modes = list(first["modes"])
    rank = {mode: n for n, mode in enumerate(modes)}
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for report in reports:
        for result in report["results"]:
            run = (result["case"], result["mode"])
            if run in results:
                raise ConformError(f"{label!r}: {run[0]} [{run[1]}] is in two reports")
            results[run] = result
    ordered = sorted(results.values(), key=lambda r: (r["case"], rank.get(r["mode"], 0)))
    statuses = Counter(r["status"] for r in ordered)
    paths: list[str] = []
    for report in reports:
        for path in report["suite"].get("paths") or [report["suite"]["path"]]:
            if path not in paths:
                paths.append(path)
    return {
        **first,
        "shard": None,
        "suite": {
            "path": paths[0],
            "paths": paths,
            "cases": sum(r["suite"]["cases"] for r in reports),
        },
        "ok": all(r.get("ok", False) for r in reports),
        "totals": {"runs": len(ordered), **{s: statuses[s] for s in STATUS_ORDER}},
        "rules": rule_scores(ordered),
        "duration": max(r.get("duration", 0.0) for r in reports),
        "interrupted": any(r.get("interrupted", False) for r in reports),
        "stopped": next((r["stopped"] for r in reports if r.get("stopped")), None),
        "results": ordered,
    }


# -- the matrix ---------------------------------------------------------------------------------


def rule_scores(results: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per tag, in PIN_TAGS order: cases, and how many conform in every mode (`passed`) or not."""
    conforming: dict[str, bool] = {}
    pins: dict[str, tuple[str, ...]] = {}
    for result in results:
        case = result["case"]
        conforming[case] = conforming.get(case, True) and result["status"] in CONFORMING
        pins[case] = tuple(result.get("pins") or ()) or ("none",)
    scores: dict[str, dict[str, int]] = {}
    for tag in (*PIN_TAGS, "none"):
        cases = [case for case, tags in pins.items() if tag in tags]
        if cases:
            passed = sum(conforming[case] for case in cases)
            scores[tag] = {"cases": len(cases), "passed": passed, "failed": len(cases) - passed}
    return scores


def cell_status(statuses: Iterable[str]) -> str:
    """The status a cell shows: the worst of its modes' (`not-run` when there are none)."""
    found = set(statuses)
    return next((s for s in SEVERITY if s in found), NOT_RUN)


def _value(result: Mapping[str, Any], key: str) -> str:
    return shown(result[key], _VALUE_CHARS) if key in result else "(absent)"


def headline(result: Mapping[str, Any]) -> str:
    """One line: the first mismatch, the crash, or the expectation, of a JSON result."""
    expectation = result.get("expectation")
    if result["status"] == XPASSED and expectation:
        return f"passes, but {expectation['source']} expects it to fail"
    mismatches = result.get("mismatches") or []
    if mismatches:
        m = mismatches[0]
        where = f" (line {m['line']})" if m.get("line") is not None else ""
        more = f" (+{len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
        expected, actual = shown(m.get("expected", ABSENT), 80), shown(m.get("actual", ABSENT), 80)
        if "expected" not in m:
            expected = "(absent)"
        if "actual" not in m:
            actual = "(absent)"
        return printable(f"{m['path']}{where}: expected {expected}, got {actual}{more}")
    crash = result.get("crash")
    if crash:
        return printable(f"{result['status']} at {crash['at']}: {shorten(crash['message'], 200)}")
    return str(result["status"])


def detail(result: Mapping[str, Any], modes: Mapping[str, str]) -> str:
    """The lines a cell's details show: which modes failed, then the first mismatch or crash in
    full (values shortened)."""
    bad = [mode for mode, status in modes.items() if status != PASSED]
    lines = [f"{result['status']} in {len(bad)} of {len(modes)} modes: {', '.join(bad)}"]
    expectation = result.get("expectation")
    if expectation:
        reason = f": {expectation['reason']}" if expectation.get("reason") else ""
        lines.append(f"expected failure ({expectation['was']}), {expectation['source']}{reason}")
    mismatches = result.get("mismatches") or []
    if mismatches:
        m = mismatches[0]
        where = f"line {m['line']}" if m.get("line") is not None else "finish"
        lines += [
            f"first mismatch [{result['mode']}]: {m['path']} ({where})",
            f"  expected: {_value(m, 'expected')}",
            f"  got:      {_value(m, 'actual')}",
        ]
        if m.get("said"):
            lines.append(f"  the target raised {shorten(m['said'], _VALUE_CHARS)}")
        if m.get("payload") is not None:
            lines.append(f"  payload pushed: {shown(m['payload'], _VALUE_CHARS)}")
        if len(mismatches) > 1:
            lines.append(f"  and {len(mismatches) - 1} more mismatch(es) in this mode")
    crash = result.get("crash")
    if crash:
        line = f", line {crash['line']}" if crash.get("line") is not None else ""
        lines.append(f"{result['status']} [{result['mode']}] at {crash['at']}{line}:")
        lines.append(f"  {crash['message']}")
        if crash.get("details"):
            lines.append(shorten_with_size(crash["details"].rstrip(), 600))
    return shorten_with_size(printable("\n".join(lines), keep_lines=True), _DETAIL_CHARS)


def reproduce(report: Mapping[str, Any], *, case: str, mode: str) -> str:
    """The `conform run` command that runs this case in this mode alone."""
    target = report["target"]
    words = ["conform", "run"]
    words += ["--exec", target] if report.get("target_kind") == "exec" else [target]
    shipped = str(default_suite_root())
    paths = report["suite"].get("paths") or [report["suite"]["path"]]
    if paths != [shipped]:
        for path in paths:
            words += ["--suite", ":shipped" if path == shipped else path]
    words += ["-k", case, "--mode", mode]
    if report["seed"] != DEFAULT_SEED:
        words += ["--seed", str(report["seed"])]
    return shlex.join(words)


def _choices(results: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per implementation-defined point the target met in a case it conforms in: `taken`, the
    outcomes that explain every such case (empty when no one outcome does: the target is not
    consistent), `cases`, per outcome, how many of those cases it explains, and `varies`, how
    many cases it conformed in with one outcome in some modes and another in others."""
    per_case: dict[str, dict[str, set[str]]] = {point: {} for point in OUTCOMES}
    results = list(results)
    # A truncated run matches the first outcome its cut allows, often before the point is met.
    if any(r["mode"] != TRUNCATED for r in results):
        results = [r for r in results if r["mode"] != TRUNCATED]
    for result in results:
        if result["status"] not in CONFORMING or not result.get("choice"):
            continue
        for point in OUTCOMES:
            seen = {combo[point] for combo in result["choice"] if point in combo}
            if seen:
                known = per_case[point].setdefault(result["case"], seen)
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


def _column_json(column: Column) -> dict[str, Any]:
    report = column.report or {}
    results = report.get("results", [])
    statuses = Counter(r["status"] for r in results)
    scores = rule_scores(results)
    cases = {r["case"] for r in results}
    passing = {r["case"] for r in results} - {
        r["case"] for r in results if r["status"] not in CONFORMING
    }
    ok = (
        column.error is None
        and not any(statuses[s] for s in FAILING)
        and not report.get("interrupted", False)
        and report.get("stopped") is None
    )
    return {
        "label": column.label,
        "target": report.get("target", column.target),
        "target_kind": report.get("target_kind", column.kind),
        "xfail": column.xfail,
        "error": column.error,
        "ok": ok,
        "duration": report.get("duration", 0.0),
        "totals": {"runs": len(results), **{s: statuses[s] for s in STATUS_ORDER}},
        "cases": {"total": len(cases), "conforming": len(passing)},
        "rules": scores,
        "choices": _choices(results),
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
    modes: list[str] = list(reports[0]["modes"]) if reports else []
    seed = reports[0]["seed"] if reports else DEFAULT_SEED
    for column in columns:
        if column.report is not None and list(column.report["modes"]) != modes:
            raise ConformError(
                f"{column.label!r} ran the modes {', '.join(column.report['modes'])}, "
                f"not {', '.join(modes)}",
                hint="a matrix compares runs over the same modes",
            )
    by_case: dict[str, dict[str, Any]] = {}
    grouped: list[dict[str, list[dict[str, Any]]]] = []
    for column in columns:
        per_case: dict[str, list[dict[str, Any]]] = {}
        for result in (column.report or {}).get("results", []):
            per_case.setdefault(result["case"], []).append(result)
            by_case.setdefault(
                result["case"],
                {"recording": result["recording"], "pins": list(result.get("pins") or [])},
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
    return {
        "matrix_schema": MATRIX_SCHEMA,
        "conform_version": conform_version(),
        "generated": (generated or datetime.now(UTC)).isoformat(timespec="seconds"),
        "modes": modes,
        "seed": seed,
        "ok": all(t["ok"] for t in targets),
        "rules": [
            {"tag": tag, "title": RULE_TITLES[tag]} for tag in (*PIN_TAGS, "none") if tag in present
        ],
        "targets": targets,
        "cases": rows,
        "baseline": None if baseline is None else {"path": baseline_path or "", "changed": changed},
    }


def _cell(column: Column, case: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    modes = {r["mode"]: r["status"] for r in results}
    status = cell_status(modes.values())
    cell: dict[str, Any] = {"status": status, "modes": modes}
    choice: list[dict[str, str]] = []
    for result in results:
        for combo in result.get("choice") or ():
            if result["status"] in CONFORMING and combo not in choice:
                choice.append(combo)
    cell["choice"] = choice
    worst = next((r for r in results if r["status"] == status and status != PASSED), None)
    if worst is None or column.report is None:
        cell["first"] = None
        return cell
    cell["first"] = {
        "mode": worst["mode"],
        "headline": shorten(headline(worst), 300),
        "detail": detail(worst, modes),
        "command": reproduce(column.report, case=case, mode=worst["mode"]),
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
    return f"{scores['passed']}/{scores['cases']}{mark}"


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
    totals = [
        f"**{t['cases']['conforming']}/{t['cases']['total']}**"
        + ("" if t["error"] is None else " (did not run)")
        for t in targets
    ]
    lines.append("| **all cases** | " + " | ".join(totals) + " |")
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
    return "\n".join(lines) + "\n"


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
    report = column.report or {}
    totals = report.get("totals", {})
    parts = [f"{totals[s]} {s}" for s in STATUS_ORDER if totals.get(s)]
    return (
        f"{column.label}: {totals.get('runs', 0)} runs, {', '.join(parts) or 'none'} "
        f"({report.get('duration', 0.0):.1f} s)"
    )
