"""Programs that speak the protocol badly: each fails its own case, with a clear status and its
stderr, and the run goes on (`harness.drive.process`, `conform run --exec`)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from harness.check.parallel import run
from harness.check.results import CRASHED, FAILED, PASSED, TIMED_OUT
from harness.drive.process import ProcessDriver, shortened_stderr
from harness.errors import ConformError, TargetError
from harness.suite.cases import Suite
from tests.conftest import conform
from tests.programs.mini_suite import BAD, CASES

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
TIMEOUT = 1.0


def command(program: str) -> str:
    return shlex.join([sys.executable, str(PROGRAMS / f"{program}.py")])


def run_program(mini: Suite, program: str, *extra: str) -> tuple[int, str]:
    return conform(
        "run", "--exec", command(program), "--suite", str(mini.root), "--mode", "plain",
        "--timeout", str(TIMEOUT), "-v", *extra,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("program", "label", "message", "stderr"),
    [
        (
            "prints_garbage",
            "CRASH",
            "a line that is not JSON in reply to push: debug: third push coming up",
            "garbage-printer: about to print junk",
        ),
        (
            "exits_after_third_push",
            "CRASH",
            "crashed at step 3 (line 7): the program exited with status 3 before answering push",
            "exiter: leaving after the third push",
        ),
        (
            "never_answers",
            "TIMEOUT",
            "timed out at step 2 (line 5): no reply to push within 1 s",
            "sleeper: stuck on the third push",
        ),
        (
            "wrong_seq",
            "CRASH",
            "bad reply to push: it carries seq 8, not 9 (out of order, or a stray line)",
            "wrong-seq: answering out of order",
        ),
        (
            "stderr_then_dies",
            "CRASH",
            "the program was killed by SIGABRT before answering push",
            "fatal: out of cheese at the third push",
        ),
        (
            "reports_crash",
            "CRASH",
            "the program crashed in push: index out of range",
            "at push (assembler.rs:42)",
        ),
    ],
)
def test_a_misbehaving_program_fails_its_case_and_the_run_goes_on(
    mini: Suite, program: str, label: str, message: str, stderr: str
) -> None:
    code, output = run_program(mini, program)
    assert code == 1, output
    lines = output.splitlines()
    assert lines[0] == f"PASS {CASES[0]} [plain]"
    assert lines[1].startswith(f"{label} {BAD} [plain]")
    assert message in output
    assert stderr in output
    # The case after it passes: the program was restarted (or never needed to be).
    assert f"PASS {CASES[2]} [plain]" in lines
    status = "timed-out" if label == "TIMEOUT" else "crashed"
    assert lines[-1].startswith(f"totals: 2 passed, 1 {status}")


def test_the_request_is_quoted_with_a_bad_reply(mini: Suite) -> None:
    code, output = run_program(mini, "wrong_seq")
    assert code == 1
    assert '    request: {"op": "push", "data": ' in output
    assert '    reply: {"seq": 8, "events": [' in output


def test_a_hang_is_stopped_within_the_timeout(mini: Suite) -> None:
    # Bounds relative to the timeout: a deadline of twice the timeout (or none) fails here, and
    # the 2.25 s of slack below that covers a machine busy enough to stall this process.
    timeout = 2.5
    with ProcessDriver(
        [sys.executable, str(PROGRAMS / "never_answers.py")], timeout=timeout
    ) as driver:
        results = list(run(mini.cases(()), driver, modes=["plain"]))
    assert [r.status for r in results] == [PASSED, TIMED_OUT, PASSED]
    assert timeout <= results[1].duration < 1.9 * timeout


def test_the_timeout_bounds_each_call_not_the_case(mini: Suite) -> None:
    # Every push takes 0.4 s, so a case of three or more pushes outlasts a 1 s timeout that
    # bounded the case; bounding each call, no case times out.
    with ProcessDriver([sys.executable, str(PROGRAMS / "slow_pushes.py")], timeout=1.0) as driver:
        results = list(run(mini.cases(()), driver, modes=["plain"]))
    assert [r.status for r in results] == [PASSED] * len(results)
    assert max(r.duration for r in results) > 1.0


def test_a_reply_that_breaks_the_schema_is_reported_with_its_request(mini: Suite) -> None:
    code, output = run_program(mini, "breaks_schema", "--validate-protocol")
    assert code == 1
    assert "bad reply to push: it breaks the protocol's schema:" in output
    assert "'is_finished' is a required property" in output
    assert '    request: {"op": "push"' in output
    assert "totals: 2 passed, 1 crashed" in output

    # Unchecked, the same reply is only a wrong answer: the missing field is a mismatch.
    code, output = run_program(mini, "breaks_schema")
    assert code == 1
    assert "steps[2].state.is_finished (line 5): expected false, got (absent)" in output
    assert "  stderr:\n    breaks-schema: leaving out is_finished\n" in output
    assert "totals: 2 passed, 1 failed" in output


def test_replies_that_follow_the_schemas_pass_validation(mini: Suite) -> None:
    code, output = run_program(mini, "breaks_schema", "--validate-protocol", "-k", "a_*")
    assert code == 0, output


def test_a_program_that_floods_stderr_is_drained_and_shortened(mini: Suite, tmp_path: Path) -> None:
    flood = tmp_path / "flood.py"
    flood.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(PROGRAMS)!r})\n"
        "from _serve import serve\n"
        "def hook(request, pushes, message):\n"
        "    sys.stderr.write('x' * 1_000_000 + '\\nlast words\\n'); sys.stderr.flush()\n"
        "    if pushes == 3:\n"
        "        return {'seq': request['seq'], 'error': {'kind': 'crash', 'message': 'boom'}}\n"
        "    return message\n"
        "serve(hook)\n"
    )
    exec_command = shlex.join([sys.executable, str(flood)])
    code, output = conform(
        "run",
        "--exec",
        exec_command,
        "--suite",
        str(mini.root),
        "--timeout",
        "5",
        "--mode",
        "plain",
    )
    assert code == 1
    assert "crashed at step 2 (line 5): the program crashed in push: boom" in output
    assert "stderr (last part):" in output and "last words" in output
    assert len(output) < 5000


def test_stderr_is_shortened_to_its_last_lines() -> None:
    text = "".join(f"line {n}\n" for n in range(100)).encode()
    shown = shortened_stderr(text)
    assert shown.startswith("stderr (last part):")
    assert "line 99" in shown and "line 79" not in shown
    assert shortened_stderr(b"one line\n") == "stderr:\n  one line"
    assert shortened_stderr(b"  \n") == ""


def test_a_python_crash_dump_is_shown_by_the_crashing_threads_stack() -> None:
    # faulthandler lists every thread; the one that crashed is often not the last.
    dump = (
        "early noise\nFatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f91 (most recent call first):\n"
        '  File "/lib/logging.py", line 3628 in _restore\n'
        '  File "/lib/stream.py", line 638 in close\n\n'
        "Thread 0x00007f92 (most recent call first):\n"
        + "".join(f'  File "/x.py", line {n} in wait\n' for n in range(40))
        + "\nExtension modules: msgspec._core (total: 1)\n"
    ).encode()
    shown = shortened_stderr(dump)
    assert shown.startswith("stderr (the crash, and the crashing thread's stack):")
    assert "Fatal Python error: Segmentation fault" in shown
    assert "_restore" in shown and "close" in shown
    assert "in wait" not in shown and "early noise" not in shown
    # Without the current thread's block, the last lines as usual.
    assert shortened_stderr(b"Fatal Python error: Aborted\n").startswith("stderr:")


def test_a_program_that_fails_the_handshake_is_a_setup_error(mini: Suite) -> None:
    code, output = run_program(mini, "bad_hello")
    assert code == 2
    assert output.startswith("Error: ")
    assert "failed the handshake: it speaks protocol 9, not 1" in output
    assert "Traceback" not in output


def test_a_command_that_cannot_start_is_a_setup_error(tmp_path: Path) -> None:
    code, output = conform("run", "--exec", str(tmp_path / "no-such-program"))
    assert code == 2
    assert output.startswith("Error: cannot start ")
    assert output.count("\n") == 1
    with pytest.raises(TargetError, match="cannot read the command"):
        ProcessDriver.from_command_line("node 'unclosed")


def test_a_program_that_refuses_the_protocol_version() -> None:
    script = (
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    seq = json.loads(line)['seq']\n"
        "    error = {'kind': 'bad_request', 'message': 'protocol 1 is not spoken here'}\n"
        "    print(json.dumps({'seq': seq, 'error': error}), flush=True)\n"
    )
    driver = ProcessDriver([sys.executable, "-c", script], label="old-program")
    with pytest.raises(TargetError, match="old-program refused the handshake: protocol 1 is not"):
        driver.start()
    driver.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give either TARGET or --exec"),
        (("reference:Assembler", "--exec", "node x.mjs"), "give either TARGET or --exec"),
        (("--exec", "node x.mjs", "--in-process"), "--in-process runs a Python TARGET"),
        (("reference:Assembler", "--in-process", "--validate-protocol"), "--validate-protocol"),
        (("reference:Assembler", "--timeout", "0"), "--timeout"),
    ],
)
def test_usage_errors(args: tuple[str, ...], message: str) -> None:
    code, output = conform("run", *args)
    assert code == 2
    assert message in output


def test_validation_without_jsonschema_is_a_setup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    with pytest.raises(ConformError, match="needs the jsonschema package"):
        ProcessDriver(["true"], validate=True)


def test_a_wrong_answer_keeps_the_program_and_a_crash_restarts_it(mini: Suite) -> None:
    with ProcessDriver([sys.executable, str(PROGRAMS / "breaks_schema.py")]) as driver:
        first = driver.start() and driver.pid
        statuses = [r.status for r in run(mini.cases(()), driver, modes=["plain"])]
        assert statuses == [PASSED, FAILED, PASSED]
        assert driver.pid == first
    with ProcessDriver([sys.executable, str(PROGRAMS / "stderr_then_dies.py")]) as driver:
        first = driver.start() and driver.pid
        statuses = [r.status for r in run(mini.cases(()), driver, modes=["plain"])]
        assert statuses == [PASSED, CRASHED, PASSED]
        assert driver.pid not in (first, None)
    assert driver.pid is None  # closed
