"""Regenerate docs/clients.md's figures: what each shipped client adapter gets right and wrong,
by class of input, and its distinct problems by what they are about.

    pip install -e '.[clients]' && (cd examples/clients/node && npm ci)
    python tests/tools/clients_docs.py            # runs the six adapters (about 6 minutes)
    python tests/tools/clients_docs.py --from DIR # reads DIR/LABEL.json reports instead

Runs each adapter over the whole shipped suite in every mode, at the full level, with its
baseline (as `tests/integration/test_clients.py` does, `-j 2 --timeout 60`), keeps its JSON
report, and writes the tables between the `clients:begin` and `clients:end` markers of
docs/clients.md: per client, the runs and cases it passes, each class of input's cases (real
captures apart), its distinct problems by category, its baseline's lines, and its verdict in
words. Nothing there is typed by hand; `tests/tools/test_clients_docs.py` checks the parts that
need no client run (the suite's size, the baselines' lines).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DOC = ROOT / "docs" / "clients.md"
BEGIN, END = "<!-- clients:begin -->", "<!-- clients:end -->"

#: Each shipped adapter: its label, how conform runs it, and its baseline.
CLIENTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("openai-python", ("examples/clients/openai_adapter.py:Assembler",), "openai.xfail"),
    ("litellm", ("examples/clients/litellm_adapter.py:Assembler",), "litellm.xfail"),
    ("langchain", ("examples/clients/langchain_adapter.py:Assembler",), "langchain.xfail"),
    ("pydantic-ai", ("examples/clients/pydantic_ai_adapter.py:Assembler",), "pydantic-ai.xfail"),
    (
        "openai-node",
        ("--exec", "node examples/clients/node/openai-node.mjs"),
        "openai-node.xfail",
    ),
    ("vercel-ai", ("--exec", "node examples/clients/node/vercel-ai.mjs"), "vercel-ai.xfail"),
)
#: The problem categories, as the table's columns show them.
COLUMNS = (
    ("valid", "valid, plain"),
    ("valid-under-mutation", "valid, a mode only"),
    ("invalid-crashed", "invalid, crashed"),
    ("invalid-accepted", "invalid, not refused"),
    ("implementation-defined", "impl.-defined"),
    ("adapter-fault", "adapter faults"),
)


def run(label: str, target: tuple[str, ...], baseline: str, out: Path) -> None:
    """One adapter's run, its JSON report written to `out`."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    command = [sys.executable, "-m", "harness", "run", *target, "-q", "-j", "2"]
    command += ["--timeout", "60", "--xfail", f"examples/clients/{baseline}", "--json", str(out)]
    print(f"{label}: {' '.join(command[3:])}", file=sys.stderr)
    subprocess.run(command, cwd=ROOT, env=env, check=False)


def baseline_lines(baseline: str) -> int:
    """The expected-failure lines of a baseline (one a case)."""
    text = (ROOT / "examples" / "clients" / baseline).read_text(encoding="utf-8")
    return sum(1 for line in text.splitlines() if line.strip() and not line.startswith("#"))


def _cases(report: dict[str, Any]) -> tuple[int, int]:
    results = report["results"]
    cases = {r["case"] for r in results}
    bad = {r["case"] for r in results if r["status"] not in ("passed", "xpassed")}
    return len(cases) - len(bad), len(cases)


def _summary(path: Path) -> dict[str, Any]:
    """What the tables read of a JSON report, its problems and verdict made by this conform (so
    that a report written before a change of the grouping is read as today's)."""
    from harness.reports.report import Report

    report = Report.load(path)
    problems = report.problems()
    return {
        **json.loads(path.read_text(encoding="utf-8")),
        "problems": [p.to_json() for p in problems],
        "verdict": report.verdict(problems),
    }


def tables(reports: dict[str, dict[str, Any]]) -> str:
    """The Markdown between the markers."""
    lines = [
        "| client | runs passed | cases conforming | valid streams (real captures) "
        "| invalid input refused | implementation-defined | baseline lines |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, _, baseline in CLIENTS:
        report = reports[label]
        totals, classes = report["totals"], report["classes"]
        passed, cases = _cases(report)
        valid, invalid = classes["valid"], classes["invalid"]
        defined = classes["implementation-defined"]
        real = valid["real"]
        lines.append(
            f"| `{label}` | {totals['passed']:,}/{totals['runs']:,} | {passed}/{cases} "
            f"| {valid['passed']}/{valid['cases']} ({real['passed']}/{real['cases']}) "
            f"| {invalid['passed']}/{invalid['cases']} | {defined['passed']}/{defined['cases']} "
            f"| {baseline_lines(baseline)} |"
        )
    lines += [
        "",
        'Distinct problems, by what they are about (README.md, "Reading a failure"):',
        "",
        "| client | " + " | ".join(title for _, title in COLUMNS) + " | all |",
        "|---|" + "---|" * (len(COLUMNS) + 1),
    ]
    for label, _, _ in CLIENTS:
        problems = reports[label]["problems"]
        counts = [sum(p["category"] == name for p in problems) for name, _ in COLUMNS]
        lines.append(f"| `{label}` | " + " | ".join(map(str, counts)) + f" | {len(problems)} |")
    lines += ["", "Each verdict in words:", ""]
    lines += [f"- `{label}` {reports[label]['verdict']}." for label, _, _ in CLIENTS]
    modes = ", ".join(next(iter(reports.values()))["modes"])
    lines += [
        "",
        f"Every case of the shipped suite in every mode ({modes}), at the full level, with the "
        "pinned versions; a case conforms when it passes in every mode; expected failures count "
        "as not conforming.",
    ]
    return "\n".join(lines) + "\n"


def write(reports: dict[str, dict[str, Any]]) -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + tables(reports) + text[end:], encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, help="read LABEL.json from here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.source or Path(scratch)
        reports = {}
        for label, target, baseline in CLIENTS:
            path = folder / f"{label}.json"
            if args.source is None:
                run(label, target, baseline, path)
            reports[label] = _summary(path)
        write(reports)
    print(f"wrote {DOC.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
