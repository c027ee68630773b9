"""Python targets in a worker process (`python -m harness.adapter`): the same results as in-process,
and a target that hangs, dies, segfaults, exhausts memory or prints cannot take the run down."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from harness.check.modes import PLAIN, UNKNOWN_FIELDS
from harness.check.options import RunOptions
from harness.check.parallel import run
from harness.check.results import CaseResult
from harness.drive.inprocess import InProcessDriver, load_target
from harness.drive.process import ProcessDriver
from harness.drive.spec import python_target_driver
from harness.suite.cases import Suite
from harness.worker.prepare import DEFAULT_MAX_MEMORY_MIB, worker_arguments
from tests.conftest import conform
from tests.programs.mini_suite import BAD, CASES

TARGETS = str(Path(__file__).resolve().parents[1] / "programs" / "targets.py")
ADAPTER = shlex.join([sys.executable, "-m", "harness.adapter", "reference:Assembler"])
MODES = (PLAIN, UNKNOWN_FIELDS)


def records(results: Iterable[CaseResult]) -> list[tuple[Any, ...]]:
    """Everything a result says except how long it took."""
    return [(r.case_id, r.mode, r.status, r.mismatches, r.crash) for r in results]


#: The cases the worker and in-process runs compare on: the real captures and the tool-call and
#: server-error cases (events, state readers, completions and errors of every kind).
SAMPLE = ("llama-server", "synthetic/r2_*", "synthetic/r8_*")


def test_the_reference_through_the_adapter_matches_in_process(suite: Suite) -> None:
    cases = suite.cases(SAMPLE)
    in_process = records(
        run(
            cases,
            InProcessDriver(load_target("reference:Assembler")),
            modes=MODES,
            options=RunOptions(seed=7),
        )
    )
    with ProcessDriver.from_command_line(ADAPTER, timeout=10) as driver:
        worker = records(run(cases, driver, modes=MODES, options=RunOptions(seed=7)))
    assert worker == in_process
    assert len(worker) == 2 * len(cases)


@pytest.mark.parametrize("target", ["DropsReasoning", "RaisesInPush"])
def test_a_broken_target_gets_the_same_records_in_a_worker(suite: Suite, target: str) -> None:
    """Mismatches (with the payloads of mutating modes) and crash messages are the same."""
    spec = f"{TARGETS}:{target}"
    cases = suite.cases(("llama-server/*",))
    in_process = records(
        run(cases, InProcessDriver(load_target(spec)), modes=MODES, options=RunOptions(seed=7))
    )
    with python_target_driver(spec) as driver:
        worker = records(run(cases, driver, modes=MODES, options=RunOptions(seed=7)))
    assert worker == in_process
    assert any(r[2] != "passed" for r in worker)


def _report(path: Path) -> dict[str, Any]:
    """A JSON report without what differs from run to run (durations, the start) or by how it ran
    (the target, the options a rerun repeats, and so the commands of its problems)."""
    report = json.loads(path.read_text())
    del report["duration"], report["target"], report["target_kind"], report["started"]
    del report["rerun"]
    for problem in report["problems"]:
        del problem["command"], problem["report"]
    for result in report["results"]:
        del result["duration"]
    return report


@pytest.mark.parametrize(("target", "code"), [("reference:Assembler", 0), ("DropsReasoning", 1)])
def test_exec_the_adapter_gives_the_same_json_report_as_in_process(
    tmp_path: Path, target: str, code: int
) -> None:
    spec = target if ":" in target else f"{TARGETS}:{target}"
    adapter = shlex.join([sys.executable, "-m", "harness.adapter", spec])
    modes = ("--mode", PLAIN, "--mode", UNKNOWN_FIELDS)
    worker, in_process = tmp_path / "worker.json", tmp_path / "in-process.json"
    # A generous timeout: this compares results; a loaded machine must not make one a timeout.
    sample = [arg for pattern in SAMPLE for arg in ("-k", pattern)]
    worker_run = ("run", "--exec", adapter, "--timeout", "120", *modes, *sample)
    assert conform(*worker_run, "--json", str(worker))[0] == code
    in_process_run = ("run", spec, "--in-process", *modes, *sample)
    assert conform(*in_process_run, "--json", str(in_process))[0] == code
    assert _report(worker) == _report(in_process)
    statuses = {r["status"] for r in _report(worker)["results"]}
    assert statuses == ({"passed"} if code == 0 else {"passed", "failed"})


@pytest.mark.parametrize(
    ("target", "label", "message", "stderr"),
    [
        (
            "SleepsInPush",
            "TIMEOUT",
            "timed out at step 2 (line 5): no reply to push within 1 s",
            "sleeps-in-push: going to sleep",
        ),
        (
            "ExitsInPush",
            "CRASH",
            "crashed at step 2 (line 5): the program exited with status 3 before answering push",
            "exits-in-push: bye",
        ),
        (
            "Segfaults",
            "CRASH",
            "crashed at step 2 (line 5): the program was killed by SIGSEGV before answering push",
            "Fatal Python error: Segmentation fault",
        ),
        (
            "ExhaustsMemory",
            "CRASH",
            "crashed at step 2 (line 5): push raised MemoryError",
            "self.hoard = bytearray(3 * 1024**3)",
        ),
    ],
)
def test_a_python_target_that_misbehaves_fails_only_its_case(
    mini: Suite, target: str, label: str, message: str, stderr: str
) -> None:
    code, output = conform(
        "run", f"{TARGETS}:{target}", "--suite", str(mini.root), "--timeout", "1", "-v",
        "--mode", PLAIN,
    )  # fmt: skip
    assert code == 1, output
    lines = output.splitlines()
    assert lines[0] == f"PASS {CASES[0]} [plain]"
    assert lines[1].startswith(f"{label} {BAD} [plain]")
    assert message in output
    assert stderr in output
    assert f"PASS {CASES[2]} [plain]" in lines
    assert lines[-1].startswith("totals: 2 passed, 1 ")


def test_a_target_that_prints_does_not_touch_the_harness_output(mini: Suite) -> None:
    code, output = conform("run", f"{TARGETS}:Prints", "--suite", str(mini.root), "--mode", PLAIN)
    assert code == 0, output
    assert "PRINTS-ON" not in output
    assert output.splitlines()[-1].startswith("totals: 3 passed")
    assert "verdict: assembles every valid stream right (3/3 cases)" in output


def test_the_adapter_keeps_stdout_for_replies_and_sends_prints_to_stderr() -> None:
    requests = [
        {"seq": 1, "op": "hello", "protocol": 1},
        {"seq": 2, "op": "new"},
        {"seq": 3, "op": "push", "data": "{}"},
        {"seq": 4, "op": "push", "data": "{}"},
        {"seq": 5, "op": "push", "data": '{"error":{"message":"boom"}}'},
        {"seq": 6, "op": "finish", "thinking_capped": False},
        {"seq": 7, "op": "frobnicate"},
        {"seq": 8, "op": "bye"},
    ]
    lines = "".join(json.dumps(r) + "\n" for r in requests) + "not json\n"
    done = subprocess.run(
        [sys.executable, "-m", "harness.adapter", f"{TARGETS}:Prints"],
        input=lines, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["seq"] for r in replies] == [1, 2, 3, 4, 5, 6, 7, 8]  # nothing after bye
    assert replies[0] == {
        "seq": 1, "name": f"{TARGETS}:Prints", "version": "unknown", "language": "python",
        "protocol": 1,
    }  # fmt: skip
    assert replies[4] == {"seq": 5, "error": {"kind": "server", "message": "boom"}}
    assert replies[5]["error"]["kind"] == "stream_closed_early"
    assert replies[6]["error"] == {"kind": "bad_request", "message": 'unknown op "frobnicate"'}
    assert "PRINTS-ON-STDOUT" in done.stderr and "PRINTS-ON-FD-1" in done.stderr
    assert "PRINTS-ON-STDERR" in done.stderr


def test_the_adapter_answers_bad_requests() -> None:
    lines = 'not json\n{"op": "hello"}\n{"seq": 1, "op": "push", "data": "{}"}\n'
    done = subprocess.run(
        [sys.executable, "-m", "harness.adapter", "reference:Assembler"],
        input=lines, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["seq"], r["error"]["kind"]) for r in replies] == [
        (None, "bad_request"),
        (None, "bad_request"),
        (1, "bad_request"),
    ]
    assert replies[2]["error"]["message"] == 'no case is open: send "new" first'


def test_the_adapter_has_help_and_rejects_a_malformed_target() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness.adapter", "--help"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and "--max-memory" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "harness.adapter", "reference"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "MODULE:ATTRIBUTE" in done.stderr


@pytest.mark.parametrize(
    ("args", "plain"),
    [
        (["reference:Assembler"], ("reference:Assembler", DEFAULT_MAX_MEMORY_MIB)),
        (["reference:Assembler", "--max-memory", "0"], ("reference:Assembler", 0)),
        (["reference:Assembler", "--max-memory", "-1"], None),
        (["reference:Assembler", "--max-memory=5"], None),
        (["reference"], None),
        (["--help"], None),
        ([], None),
    ],
)
def test_only_conform_s_own_command_line_skips_click(
    args: list[str], plain: tuple[str, int] | None
) -> None:
    # Anything else goes to the click command, which explains it (the test above).
    assert worker_arguments(args) == plain


def test_a_worker_does_not_import_click() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, harness.adapter; print('click' in sys.modules)"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "False"


def test_a_target_that_cannot_load_in_the_worker_is_one_error_line() -> None:
    code, output = conform("run", "reference:NoSuchThing")
    assert code == 2
    assert output == (
        "Error: 'reference' has no attribute 'NoSuchThing' "
        "(name an assembler class or a zero-argument factory)\n"
    )
