"""The fork server behind `conform fuzz` and the pytest plugin too, not only `conform run`: each
restart of a Python target's worker after a crash forks from the one import, where without the
server every restart imports the target again (`test_forkserver.py` checks the same of a run)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.suite.cases import Suite
from tests.conftest import SUBREAPER, conform
from tests.worker.test_forkserver import TARGET, _imports, _workers

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.skipif(
    not (SUBREAPER and sys.platform == "linux"), reason="the fork server is for Linux only"
)


@contextlib.contextmanager
def _no_server() -> Iterator[None]:
    yield


def _target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """TARGET (which exits at the third push of a case) as `file.py:Target`, and its log."""
    log = tmp_path / "log.jsonl"
    path = tmp_path / "zygote_target.py"
    path.write_text(TARGET.replace("{extra}", ""))
    monkeypatch.setenv("ZYGOTE_LOG", str(log))
    monkeypatch.setenv("ZYGOTE_DO", "exit")
    return f"{path}:Target", log


def _log(log: Path) -> list[dict[str, object]]:
    import json

    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_a_fuzz_run_forks_each_restart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (Without the server, which the plugin's test below shows too, this run imports the target
    # at every restart: about 1.6 s of CPU of worker starts. A fuzz run that forgot the server
    # fails the one import below.)
    target, log = _target(tmp_path, monkeypatch)
    status, output = conform(
        "fuzz", target, "--examples", "20", "--shrink", "5", "--mode", "plain",
        "--streams", "valid", "--timeout", "5",
    )  # fmt: skip
    assert status == 1, output  # a stream of three pushes or more crashes it
    entries = _log(log)
    assert len(_workers(entries)) >= 3, entries  # crashed, restarted, shrunk, re-run
    assert _imports(entries) == 1, entries


@pytest.mark.parametrize("server", [True, False])
def test_the_pytest_plugin_forks_each_restart(
    pytester: pytest.Pytester,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mini: Suite,
    server: bool,
) -> None:
    target, log = _target(tmp_path, monkeypatch)
    if not server:
        monkeypatch.setattr("harness.drive.forked.forked_workers", _no_server)
    result = pytester.runpytest(
        "--conform-target", target, "--conform-suite", str(mini.root), "--conform-mode", "plain",
        "--conform-mode", "key-order", "--conform-timeout", "5",
    )  # fmt: skip
    assert result.parseoutcomes()["failed"] == 2, result.stdout.str()  # the middle case, twice
    entries = _log(log)
    assert len(_workers(entries)) >= 3, entries  # the first worker, then one after each crash
    if server:
        assert _imports(entries) == 1, entries
    else:
        assert _imports(entries) >= len(_workers(entries))
