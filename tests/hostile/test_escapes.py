"""Issue 21 class 5, processes escape: a target whose daemon double-forks and calls `setsid`
leaves its process group and session, and still ends with the run (`conform run` in a worker, with
`--exec`, and as a real process that exits)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.suite.cases import Suite
from tests.conftest import FOREIGN_PLUGINS_OFF, invoke
from tests.programs.mini_suite import write_mini_suite

TARGET = f"{Path(__file__).parent / 'targets.py'}:Daemonizes"

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="Linux's /proc")


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    return write_mini_suite(tmp_path_factory.mktemp("mini"))


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, dead but not yet reaped by its parent, is not alive)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _daemons(marks: Path) -> list[int]:
    return [int(path.name.rpartition("-")[2]) for path in marks.glob("daemon-*")]


def _left(marks: Path) -> list[int]:
    deadline = time.monotonic() + 30  # ends only a wait that would be the bug (a loaded
    while True:  # machine takes longer to reap a daemon, it is not wrong)
        left = [pid for pid in _daemons(marks) if _alive(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@pytest.mark.parametrize("how", ["worker", "exec"])
def test_a_daemon_of_the_target_ends_with_the_run(
    mini: Suite, tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOSTILE_MARKS", str(tmp_path))
    spec = (
        [TARGET] if how == "worker" else ["--exec", f"{sys.executable} -m harness.adapter {TARGET}"]
    )
    result = invoke("run", *spec, "--suite", str(mini.root), "--mode", "plain")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 0, result.output
    assert len(_daemons(tmp_path)) == 3  # one per case: the act happened
    assert _left(tmp_path) == []


def test_a_daemon_ends_with_a_conform_process(mini: Suite, tmp_path: Path) -> None:
    env = {**os.environ, "HOSTILE_MARKS": str(tmp_path)}
    command = [sys.executable, "-m", "harness", "run", TARGET, "--suite", str(mini.root), "-q"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _daemons(tmp_path)
    assert _left(tmp_path) == []


def test_a_daemon_ends_with_a_pytest_session(mini: Suite, tmp_path: Path) -> None:
    env = {**os.environ, "HOSTILE_MARKS": str(tmp_path)}
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FOREIGN_PLUGINS_OFF,
        "--rootdir", str(tmp_path), "--conform-target", TARGET, "--conform-suite", str(mini.root),
        "--conform-mode", "plain",
    ]  # fmt: skip
    done = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _daemons(tmp_path)
    assert _left(tmp_path) == []
