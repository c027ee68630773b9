"""Class 6, temp files stay: SIGINT, SIGTERM and SIGHUP during a write remove its temporary file
and exit 128 + the signal's number (Ctrl-C: 130, never 1 "Aborted!"); a temporary file a killed
run left behind is named by `golden check` (exit 1) and removed and named by `golden update`.

Never touch what conform did not write: only a file with conform's mark in its name, that no
writer holds locked, is a leftover: a user's file of a like name, and a write under way in
another process or PID namespace, are left alone; a name the OS accepts is never refused for the
length its temporary file's name adds.

The signals are sent to real processes, as a terminal or a CI runner sends them.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import files
from harness.files import stale_temp_files, write_report
from tests.conftest import conform
from tests.hostile.support import CASE, ROOT, small_suite

WRITER = """\
import sys, time
from pathlib import Path
from harness.errors import Interrupted
from harness.files import interruptible, write_atomically

def pieces():
    yield "x" * 100_000
    print("writing", flush=True)
    time.sleep(60)
    yield "never"

try:
    with interruptible():
        write_atomically(Path(sys.argv[1]), pieces())
except Interrupted as exc:
    sys.exit(exc.exit_code)
"""


def _temps(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.tmp"))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_a_write_removes_its_temporary_file(
    tmp_path: Path, signum: signal.Signals
) -> None:
    target = tmp_path / "out" / "golden.json"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "writing\n"
    assert len(_temps(tmp_path)) == 1  # the write is under way
    proc.send_signal(signum)
    proc.communicate(timeout=20)
    assert proc.returncode == 128 + signum
    assert _temps(tmp_path) == [] and not target.exists()


def _long_recording(path: Path, payloads: int) -> None:
    chunk = '{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"word "}}]}'
    last = '{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for _ in range(payloads):
            out.write(f"data: {chunk}\n\n")
        out.write(f"data: {last}\n\ndata: [DONE]\n\n")


def test_sigterm_during_golden_update_of_a_long_case_leaves_nothing(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    _long_recording(suite / "recordings" / "long.sse", 150_000)  # about 11 MB: streamed
    (suite / "golden").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "golden", "update", "--suite", str(suite)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 60
    while not _temps(suite / "golden"):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no temporary file appeared"
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, output
    assert "Traceback" not in output and "Aborted" not in output
    assert _temps(suite) == [] and not (suite / "golden" / "long.json").exists()


def _leftover(suite: Path) -> Path:
    """A temporary file as a run killed with SIGKILL leaves it: conform's mark, nobody's lock."""
    folder = suite / "golden" / "llama-server"
    path = folder / files.temp_name("content_stop.json", "k3j2h1g0")
    path.write_text('{"schema": 2, "steps": [')
    return path


def test_golden_check_names_a_leftover_and_update_removes_it(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    leftover = _leftover(suite)
    assert stale_temp_files([suite / "golden"]) == [leftover]
    code, output = conform("golden", "check", "--suite", suite)
    assert code == 1, output
    assert f"leftover: {leftover}" in output
    code, output = conform("golden", "update", "--suite", suite)
    assert code == 0, output
    assert f"removed: {leftover}" in output and not leftover.exists()
    code, output = conform("golden", "check", "--suite", suite)
    assert code == 0, output


def _start_writer(target: Path, *, pid_namespace: bool = False) -> subprocess.Popen[str]:
    """A conform writer in the middle of writing `target` (its temporary file is there); with
    `pid_namespace`, as a writer in another PID namespace looks from here: its `getpid()` is a
    number that names no process of ours (one that has exited)."""
    script = WRITER
    if pid_namespace:
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)  # fmt: skip
        script = f"import os; os.getpid = lambda: {int(dead.stdout)}\n" + WRITER
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(target)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "writing\n"
    return proc


def test_a_running_writers_temporary_file_is_no_leftover(tmp_path: Path) -> None:
    proc = _start_writer(tmp_path / "x.json")
    try:
        (live,) = _temps(tmp_path)
        assert files.conform_temp_file(live.name)
        assert stale_temp_files([tmp_path]) == []
    finally:
        proc.kill()
        proc.communicate()


def test_golden_update_in_another_pid_namespace_leaves_a_live_write_alone(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    golden = suite / "golden" / f"{CASE}.json"
    proc = _start_writer(golden, pid_namespace=True)
    try:
        (live,) = _temps(suite)
        code, output = conform("golden", "check", "--suite", suite)
        assert code == 0 and "leftover" not in output, output
        code, output = conform("golden", "update", "--suite", suite)
        assert code == 0 and "removed" not in output, output
        assert live.exists()
    finally:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize(
    "name",
    [
        ".notes.20261206.tmp",  # a user's own file, in the shape of conform's old names
        ".content_stop.json.conform-1.abcdefgh.tmp",  # the shape of a name with a pid
        ".content_stop.json.conform-abcdefgh123456.tmp",  # conform's shape, but not its mark
    ],
)
def test_golden_update_never_touches_a_file_conform_did_not_write(
    tmp_path: Path, name: str
) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    for folder in (suite / "recordings" / "llama-server", suite / "golden" / "llama-server"):
        (folder / name).write_text("mine\n")
    code, output = conform("golden", "check", "--suite", suite)
    assert code == 0, output
    code, output = conform("golden", "update", "--suite", suite)
    assert code == 0 and "removed" not in output, output
    for folder in (suite / "recordings" / "llama-server", suite / "golden" / "llama-server"):
        assert (folder / name).read_text() == "mine\n"


def test_a_name_the_os_accepts_is_written_however_long(tmp_path: Path) -> None:
    for size in (200, 230, 250, 255):
        target = tmp_path / ("r" * (size - 5) + ".json")
        write_report(target, "x\n")
        assert target.read_text() == "x\n"
    target = tmp_path / ("é" * 125 + ".json")  # 255 bytes of UTF-8
    write_report(target, "y\n")
    assert target.read_text() == "y\n"
    assert _temps(tmp_path) == []


def test_ctrl_c_in_golden_update_and_record_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.capture import live
    from harness.suite import golden

    def interrupted(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    suite = small_suite(tmp_path / "suite", CASE)
    monkeypatch.setattr(golden, "update", interrupted)
    code, output = conform("golden", "update", "--suite", suite)
    assert code == 130 and "Aborted" not in output, output
    monkeypatch.setattr(live, "perform", interrupted)
    (tmp_path / "req.json").write_text('{"messages": []}')
    code, output = conform(
        "record", "http://127.0.0.1:9", "--request", tmp_path / "req.json", "--suite", suite, "x"
    )
    assert code == 130 and "Aborted" not in output, output
    assert not (suite / "recordings" / "x.http").exists()


def test_ctrl_c_in_a_real_record_exits_130_and_leaves_nothing(tmp_path: Path) -> None:
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()  # never answers: the exchange waits
    port = server.getsockname()[1]
    suite = small_suite(tmp_path / "suite", CASE)
    (tmp_path / "req.json").write_text('{"messages": []}')
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness", "record", f"http://127.0.0.1:{port}", "--request",
             str(tmp_path / "req.json"), "--suite", str(suite), "x"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        )  # fmt: skip
        server.settimeout(30)
        conn, _ = server.accept()
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=30)
        conn.close()
    finally:
        server.close()
    assert proc.returncode == 130, output
    assert "Traceback" not in output and "Aborted" not in output
    assert sorted(p.name for p in (suite / "recordings").rglob("*")) == [
        "content_stop.http",
        "llama-server",
    ]


def test_the_leftover_of_a_killed_writer_is_found(tmp_path: Path) -> None:
    proc = _start_writer(tmp_path / "x.json")
    (path,) = _temps(tmp_path)
    assert stale_temp_files([tmp_path]) == []  # its writer runs
    proc.kill()
    proc.communicate()
    assert stale_temp_files([tmp_path]) == [path]
