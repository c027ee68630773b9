"""Gate an assembler from Python with conform's library API (docs/api.md).

    python examples/api/gate.py reference:Assembler

runs the target over the llama-server captures in two modes, prints one line per case that did
not pass and the totals, writes a JSON report next to it, and exits with the code `conform run`
would.
"""

from __future__ import annotations

import sys
from pathlib import Path

import harness


def main(spec: str, report: Path) -> int:
    plan = harness.prepare(
        harness.Selection(patterns=("llama-server",)), modes=("plain", "key-order")
    )
    options = harness.RunOptions(target=spec)
    record = harness.run_target(options, plan)
    for result in record.results:
        if result.status is not harness.Status.PASSED:
            print(f"{result.status.label} {result.case_id} [{result.mode}]")
    passed = sum(r.status.conforms for r in record.results)
    print(f"{passed} of {len(record.results)} runs conform")
    harness.write_outputs(record, harness.Outputs(json=report), plan=plan, note=print, warn=print)
    return record.exit_code


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "reference:Assembler"
    sys.exit(main(target, Path("conform-report.json")))
