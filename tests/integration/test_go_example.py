"""The Go assembler (examples/go/) is gated like any other program: built with the Go toolchain,
it passes every case (and a sample in every mode: tests/integration/every_mode.py) except the
implementation-defined outcomes its expected-failures file lists, and each encoding/json pitfall
it fixes, switched back on, fails the case pinning it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.check.modes import PLAIN
from harness.check.results import PASSED
from harness.suite.cases import Suite
from reference.choices import OUTCOMES
from tests.conftest import conform
from tests.integration.builds import cached_build, source_key, tool_version
from tests.integration.every_mode import NOT_PLAIN, EveryMode, run_every_mode
from tests.integration.versions import check_protocol_1

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "go"
KIT = ROOT / "examples" / "kits" / "go"  # the module the example's go.mod replaces
XFAIL = EXAMPLE / "conform.xfail"
#: `--rule` for every implementation-defined point: the cases where --strict can change a verdict.
POINTED = tuple(arg for point in OUTCOMES for arg in ("--rule", point))
GO = shutil.which("go")

if GO is None and os.environ.get("CI") == "true":
    # CI must build and gate the example: a missing toolchain there is an error, not a skip.
    pytest.fail("go is not on PATH, and CI=true", pytrace=False)
pytestmark = pytest.mark.skipif(GO is None, reason="go (the Go toolchain) is not on PATH")

#: Each pitfall the example fixes (CONFORM_GO_PITFALL=NAME switches the natural code back on), the
#: case that catches it and the line of the report that shows how.
PITFALLS = {
    "omitempty": ("llama-server/content_stop", "CRASH"),
    "nil_slice": (
        "synthetic/r3_no_timings",
        "finish.completion.tool_calls (finish): expected [], got null",
    ),
    "surrogate_fffd": (
        "synthetic/r6_surrogate_high_unpaired",
        'expected {"kind": "protocol"}, got (absent)',
    ),
    "null_payload": ("synthetic/r6_payload_null", 'expected {"kind": "protocol"}, got (absent)'),
    "null_element": ("synthetic/r6_choice_null", 'expected {"kind": "protocol"}, got (absent)'),
    "case_insensitive_keys": (
        "synthetic/r7_go_case_insensitive_keys",
        'state.id (line 6): expected "chatcmpl-go-case-1", got "chatcmpl-go-case-WRONG"',
    ),
    "duplicate_keys_merge": (
        "synthetic/i4_go_duplicate_keys_merged",
        'finish.completion.reasoning_content (finish): expected null, got "first copy"',
    ),
    "float_to_int": (
        "synthetic/r4_go_predicted_n_float_to_int",
        'reasoning_tokens": -9223372036854775808',
    ),
}


@pytest.fixture(scope="session")
def binary() -> str:
    """The example, built once for its sources and Go version (tests/integration/builds.py)."""

    def make(out: Path) -> None:
        # Built in the module's folder (it has its own go.mod); GOCACHE stays the user's default.
        subprocess.run([str(GO), "build", "-o", str(out), "."], cwd=EXAMPLE, check=True)

    key = source_key(EXAMPLE, source_key(KIT), tool_version(str(GO), "version"))
    return str(cached_build("conform-go", key, make))


def passes_every_case(binary: str, mode: str, report: Path, *extra: str) -> None:
    code, output = conform("run", "--exec", binary, "--mode", mode, "--json", str(report), *extra)
    assert code == 0, output
    results = json.loads(report.read_text(encoding="utf-8"))["results"]
    assert {r["status"] for r in results} == {PASSED}, output


@pytest.fixture(scope="module")
def every_mode(binary: str, tmp_path_factory: pytest.TempPathFactory) -> EveryMode:
    return run_every_mode(binary, tmp_path_factory.mktemp("go") / "report.json")


# Plain runs in test_the_example_follows_the_protocol_schemas, which checks the replies as well.
@pytest.mark.parametrize("mode", NOT_PLAIN)
def test_the_example_passes_in_each_mode(every_mode: EveryMode, mode: str) -> None:
    every_mode.check_passes(mode)


def test_strict_fails_it_only_where_it_takes_another_allowed_outcome(binary: str) -> None:
    # --strict requires the reference's own outcome at I1..I9; encoding/json takes others (the
    # list in examples/go/conform.xfail, the example's --strict baseline, checked in every mode).
    code, output = conform("run", "--exec", binary, "--mode", "plain", "--strict")
    assert code == 1
    failing = {line.split()[1] for line in output.splitlines() if line.startswith("FAIL ")}
    pins = {case.case_id: case.pins for case in Suite(ROOT).cases()}
    assert failing and all(any(pin.startswith("I") for pin in pins[c]) for c in failing), output
    assert "implementation-defined I1: only I1=integer is allowed" in output
    # The baseline in every mode, on the cases that pin a point: --strict changes the gate only
    # there.
    code, output = conform("run", "--exec", binary, "--strict", "--xfail", str(XFAIL), *POINTED)
    assert code == 0, output


def test_the_example_follows_the_protocol_schemas(binary: str, tmp_path: Path) -> None:
    passes_every_case(binary, PLAIN, tmp_path / "report.json", "--validate-protocol")


def test_it_answers_conforms_hello_with_protocol_1(binary: str) -> None:
    # What conform sends (the runs above are protocol 1 runs), spoken to it directly.
    check_protocol_1([binary])


def test_a_lone_surrogate_in_the_request_line_is_a_protocol_error(binary: str) -> None:
    # No recording can hold a lone surrogate (its file is UTF-8), so the request is written here:
    # "data" itself carries the escape, which encoding/json would decode to U+FFFD.
    requests = [
        {"seq": 1, "op": "hello", "protocol": 1},
        {"seq": 2, "op": "new"},
        {"seq": 3, "op": "push", "data": '{"id":"chatcmpl-a","x":"\ud800"}'},
        {"seq": 4, "op": "push", "data": '{"id":"chatcmpl-a","x":"\ud83d\ude00"}'},
        {"seq": 5, "op": "bye"},
    ]
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    done = subprocess.run(
        [binary], input=lines, capture_output=True, text=True, timeout=30, check=True
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["seq"] for r in replies] == [1, 2, 3, 4, 5]
    assert replies[2]["error"]["kind"] == "protocol"
    assert replies[3]["state"]["id"] == "chatcmpl-a"


@pytest.mark.parametrize("pitfall", sorted(PITFALLS))
def test_each_pitfall_left_in_fails_its_case(
    binary: str, pitfall: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    case, shown = PITFALLS[pitfall]
    code, output = conform("run", "--exec", binary, "--mode", "plain", "-k", case)
    assert code == 0, output

    monkeypatch.setenv("CONFORM_GO_PITFALL", pitfall)
    code, output = conform("run", "--exec", binary, "--mode", "plain", "-k", case)
    assert code == 1, output
    assert f" {case} [plain]" in output
    assert shown in output


def test_the_adapter_kit_passes_its_own_tests() -> None:
    # examples/kits/go: the line-protocol loop and the llama-server glue the example is built on.
    done = subprocess.run(
        [str(GO), "test", "./..."], cwd=KIT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ok "), done.stdout
