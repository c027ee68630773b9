"""Differential runs: the four examples (Python, JavaScript, Go, Rust) fuzzed against the reference.

Each example passes the shipped suite; here it meets streams the suite does not hold: the first
500 streams drawn from the model on a fixed seed, each run in plain mode and one other mode, as
`conform fuzz TARGET --seed 20261201 --examples 500` runs them (docs/fuzz.md, "Differential
runs"): the same search, through the same runner. A difference is a bug in the example or in the
reference (or in the model's expected results): the failure shows it like `conform fuzz` does,
shrunk, with the command that finds it again; fix it and pin it with a case. The Go and Rust
examples are built as their own tests build them (tests/integration/builds.py).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.check.options import RunOptions
from harness.fuzz.loop import FuzzRequest, run_fuzz
from harness.reports.text import render
from tests.integration import test_go_example, test_rust_example
from tests.integration.builds import cached_build, source_key, tool_version

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261201
EXAMPLES = 500


def agrees(*, target: str | None = None, exec_command: str | None = None) -> None:
    """The target (in-process) or the program agrees with the reference on every stream, as
    `conform fuzz` checks them; else the difference, shrunk, and the command that finds it."""
    options = RunOptions(
        target=target, exec_command=exec_command, in_process=target is not None, seed=SEED
    )
    record = run_fuzz(FuzzRequest(options, examples=EXAMPLES, shrink_steps=200))
    finding = record.finding
    if finding is None:
        assert record.streams == EXAMPLES
        return
    fuzz = (
        f"{target} --in-process"
        if target is not None
        else f"--exec {shlex.quote(str(exec_command))}"
    )
    shown = "\n".join([*render(finding.results), finding.listing])
    pytest.fail(
        f"stream {finding.number + 1} of {EXAMPLES} differs from the reference:\n{shown}\n"
        f"find it again with: conform fuzz {fuzz} --seed {SEED} --examples {finding.number + 1}",
        pytrace=False,
    )


def test_the_python_example_agrees_with_the_reference() -> None:
    target = f"{ROOT / 'examples' / 'python' / 'simple_assembler.py'}:Assembler"
    agrees(target=target)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
def test_the_js_example_agrees_with_the_reference() -> None:
    script = ROOT / "examples" / "js" / "assembler.mjs"
    command = f"{shlex.quote(str(shutil.which('node')))} {shlex.quote(str(script))}"
    agrees(exec_command=command)


@pytest.mark.skipif(test_go_example.GO is None, reason="go is not on PATH")
def test_the_go_example_agrees_with_the_reference() -> None:
    go = str(test_go_example.GO)

    def make(out: Path) -> None:
        subprocess.run([go, "build", "-o", str(out), "."], cwd=test_go_example.EXAMPLE, check=True)

    key = source_key(test_go_example.EXAMPLE, tool_version(go, "version"))
    command = shlex.quote(str(cached_build("conform-go", key, make)))
    agrees(exec_command=command)


def test_the_rust_example_agrees_with_the_reference() -> None:
    reason = test_rust_example.missing_toolchain()
    if reason is not None:
        pytest.skip(reason)
    command = shlex.quote(str(test_rust_example.build()))
    agrees(exec_command=command)
