"""Differential runs: the four examples (Python, JavaScript, Go, Rust) fuzzed against the reference.

Each example passes the shipped suite; here it meets streams the suite does not hold: 150 streams
drawn from the model on a fixed seed, each run in plain mode and one other mode drawn with it, as
`conform fuzz --seed 20261201 --examples 150` runs them (docs/fuzz.md, "Differential runs"). The
streams and their expected results are drawn once per session for the four examples (drawing them
is three quarters of a fuzz run's cost), and each example's run is the runner `conform fuzz` uses.
A difference is a bug in the example or in the reference (or in the model's expected results):
the failure shows it like a `conform run` failure, with the command that finds and shrinks it; fix
it and pin it with a case. The Go and Rust examples are built as their own tests build them
(tests/integration/builds.py).
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.check.modes import MODES
from harness.check.options import RunOptions
from harness.check.results import PASSED, CaseResult
from harness.check.runner import run_case
from harness.drive.inprocess import Driver
from harness.drive.spec import start_driver
from harness.fuzz import loop as fuzzing
from harness.fuzz.loop import CASE_ID
from harness.fuzz.model.expect import expected, write_case
from harness.fuzz.model.streams import Stream, drawing
from harness.reports.text import render
from harness.suite.cases import Case
from tests.integration import test_go_example, test_rust_example
from tests.integration.builds import cached_build, source_key, tool_version

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261201
EXAMPLES = 150


@dataclass(frozen=True)
class Drawn:
    """One generated stream, written as a case, with its expected result and its modes."""

    stream: Stream
    case: Case
    golden: dict[str, Any]
    modes: tuple[str, ...]


class _Enough(BaseException):
    """All the streams are drawn (a BaseException: hypothesis leaves at once, as in a fuzz run)."""


def draw(root: Path, *, count: int, seed: int) -> list[Drawn]:
    """`count` streams as `conform fuzz --seed SEED` draws them (valid and broken ones, plain and
    one other mode each), each written under `root` as the fuzz run's scratch case."""
    found: list[tuple[Stream, tuple[str, ...]]] = []

    def collect(stream: Stream, modes: tuple[str, ...]) -> None:
        found.append((stream, modes))
        if len(found) >= count:
            raise _Enough

    search = fuzzing.search(collect, seed=seed, broken=None, modes=MODES, shrink=False)
    with drawing(), contextlib.suppress(_Enough):
        search()
    drawn = []
    for number, (stream, modes) in enumerate(found):
        folder = root / f"{number:03}"
        case = write_case(stream, folder / "recordings", folder / "golden", CASE_ID)
        drawn.append(Drawn(stream, case, expected(case), modes))
    return drawn


@pytest.fixture(scope="session")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> list[Drawn]:
    return draw(tmp_path_factory.mktemp("differential"), count=EXAMPLES, seed=SEED)


def agrees(
    drawn: list[Drawn], *, target: str | None = None, exec_command: str | None = None
) -> None:
    """Every stream passes in its modes through the target (in-process) or the program, as in
    `conform fuzz`; else the failures, shown as `conform run` shows them, and the `conform fuzz`
    command that finds and shrinks one."""
    assert len(drawn) == EXAMPLES
    driver: Driver = start_driver(target, exec_command, in_process=target is not None)
    fuzz = (
        f"{target} --in-process"
        if target is not None
        else f"--exec {shlex.quote(str(exec_command))}"
    )
    failed: list[tuple[Drawn, CaseResult]] = []
    try:
        for one in drawn:
            for mode in one.modes:
                result = run_case(
                    one.case, one.golden, driver, mode=mode, options=RunOptions(seed=SEED)
                )
                if result.status != PASSED:
                    failed.append((one, result))
                    break
    finally:
        driver.close()
    if failed:
        # One block each: every stream is the case fuzz/stream (which the seeded modes read).
        shown = "\n".join(
            "\n".join([*render([result]), f"  the stream: {one.case.recording}"])
            for one, result in failed[:3]
        )
        pytest.fail(
            f"{len(failed)} of {EXAMPLES} streams differ from the reference:\n{shown}\n"
            f"shrink one with: conform fuzz {fuzz} --examples {EXAMPLES} --seed {SEED}",
            pytrace=False,
        )


def test_the_streams_are_those_conform_fuzz_draws(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first streams of a seed do not depend on the budget: five stand for the 150.
    seen: list[str] = []
    write = write_case  # the one harness.fuzz.loop calls

    def spy(stream: Stream, *args: Any, **kwargs: Any) -> Case:
        seen.append(stream.sse())
        return write(stream, *args, **kwargs)

    monkeypatch.setattr(fuzzing, "write_case", spy)
    options = RunOptions(target="reference:Assembler", in_process=True, seed=SEED)
    record = fuzzing.run_fuzz(fuzzing.FuzzRequest(options=options, examples=5, broken=None))
    assert record.finding is None and record.streams == 5
    ours = draw(tmp_path, count=5, seed=SEED)
    assert seen == [one.stream.sse() for one in ours]


def test_the_python_example_agrees_with_the_reference(drawn: list[Drawn]) -> None:
    target = f"{ROOT / 'examples' / 'python' / 'simple_assembler.py'}:Assembler"
    agrees(drawn, target=target)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
def test_the_js_example_agrees_with_the_reference(drawn: list[Drawn]) -> None:
    script = ROOT / "examples" / "js" / "assembler.mjs"
    command = f"{shlex.quote(str(shutil.which('node')))} {shlex.quote(str(script))}"
    agrees(drawn, exec_command=command)


@pytest.mark.skipif(test_go_example.GO is None, reason="go is not on PATH")
def test_the_go_example_agrees_with_the_reference(drawn: list[Drawn]) -> None:
    go = str(test_go_example.GO)

    def make(out: Path) -> None:
        subprocess.run([go, "build", "-o", str(out), "."], cwd=test_go_example.EXAMPLE, check=True)

    key = source_key(test_go_example.EXAMPLE, tool_version(go, "version"))
    command = shlex.quote(str(cached_build("conform-go", key, make)))
    agrees(drawn, exec_command=command)


def test_the_rust_example_agrees_with_the_reference(drawn: list[Drawn]) -> None:
    reason = test_rust_example.missing_toolchain()
    if reason is not None:
        pytest.skip(reason)
    command = shlex.quote(str(test_rust_example.build()))
    agrees(drawn, exec_command=command)
