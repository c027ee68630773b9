"""Differential runs: the four examples (Python, JavaScript, Go, Rust) fuzzed against the reference.

Each example passes the shipped suite; `conform fuzz` then tries streams the suite does not hold,
on a fixed budget and seed. A difference is a bug in the example or in the reference (or in the
model's expected results): fix it and pin it with a case (docs/fuzz.md, "Differential runs").
The Go and Rust examples are built as their own tests build them (tests/integration/builds.py).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import conform
from tests.integration import test_go_example, test_rust_example
from tests.integration.builds import cached_build, source_key, tool_version

ROOT = Path(__file__).resolve().parents[2]
SEED = "20261201"
EXAMPLES = "150"


def _fuzz(*target: str) -> None:
    code, output = conform("fuzz", *target, "--examples", EXAMPLES, "--seed", SEED, "-q")
    assert code == 0, output
    assert f"no difference from the reference in {EXAMPLES} streams" in output


def test_the_python_example_agrees_with_the_reference() -> None:
    _fuzz(f"{ROOT / 'examples' / 'python' / 'simple_assembler.py'}:Assembler", "--in-process")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
def test_the_js_example_agrees_with_the_reference() -> None:
    script = ROOT / "examples" / "js" / "assembler.mjs"
    _fuzz("--exec", f"{shlex.quote(str(shutil.which('node')))} {shlex.quote(str(script))}")


@pytest.mark.skipif(test_go_example.GO is None, reason="go is not on PATH")
def test_the_go_example_agrees_with_the_reference() -> None:
    go = str(test_go_example.GO)

    def make(out: Path) -> None:
        subprocess.run([go, "build", "-o", str(out), "."], cwd=test_go_example.EXAMPLE, check=True)

    key = source_key(test_go_example.EXAMPLE, tool_version(go, "version"))
    _fuzz("--exec", shlex.quote(str(cached_build("conform-go", key, make))))


def test_the_rust_example_agrees_with_the_reference() -> None:
    reason = test_rust_example.missing_toolchain()
    if reason is not None:
        pytest.skip(reason)
    _fuzz("--exec", shlex.quote(str(test_rust_example.build())))
