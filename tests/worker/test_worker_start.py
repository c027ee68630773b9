"""What the worker's start costs and says: it imports nothing of the harness's side (its start is
on the critical path of every run: the harness waits for its `hello`), nor `importlib.metadata`
when it need not, and it names its target's version. And the driver's side of a program's
stderr: a case's mark is past everything the program logged before its last reply."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.drive.inprocess import load_target
from harness.drive.pipes import Worker
from harness.drive.programs import new_family
from harness.worker import program as adapter

ROOT = Path(__file__).resolve().parents[2]


def test_stderr_is_drained_to_the_last_byte_before_the_mark() -> None:
    # The program logs 300 KB (more than one read of the pipe), then answers: once its reply is
    # read, a mark is past all it logged (what parts one case's stderr from the next's).
    text = "x" * 300_000 + "\nlast line\n"
    code = (
        "import sys; sys.stderr.write('x' * 300_000 + '\\nlast line\\n'); sys.stderr.flush(); "
        "print('{}', flush=True); sys.stdin.read()"
    )
    worker = Worker([sys.executable, "-c", code], None, family=new_family())
    try:
        assert worker.receive(time.monotonic() + 10) == b"{}"
        assert worker.stderr_mark() == len(text)
        assert worker.stderr_since(0).endswith("last line")
    finally:
        worker.stop(kill=True)


def _fresh(code: str) -> str:
    """What `code` prints in a fresh interpreter with this checkout first on its path, and not
    under coverage (`.ci/run` measures subprocesses too, and coverage imports modules of its own:
    `selectors`, under Python 3.12)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("COVERAGE")}
    return subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {code}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.strip()


def test_the_worker_imports_nothing_of_the_harness_s_side() -> None:
    loaded = _fresh(
        "import harness.worker.program as a; a.load_target('reference:Assembler'); "
        "print(sorted(m for m in sys.modules if m.startswith(('harness', 'subprocess', "
        "'selectors', 'importlib.metadata'))))"
    )
    for module in (
        "harness.drive.process",
        "harness.drive.batched",
        "harness.drive.pipes",
        "harness.drive.programs",
        "subprocess",
        "selectors",
    ):
        assert f"'{module}'" not in loaded, loaded


def test_a_target_of_no_distribution_is_unknown_without_importlib_metadata() -> None:
    found = _fresh(
        "from harness.worker.program import _version_of; "
        "from harness.drive.inprocess import load_target; "
        "print(_version_of(load_target('reference:Assembler')), "
        "'importlib.metadata' in sys.modules)"
    )
    assert found == "unknown False"


def test_a_target_of_a_distribution_on_the_path_gets_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_target").mkdir()
    (tmp_path / "my_target" / "__init__.py").write_text("class Assembler:\n    pass\n")
    info = tmp_path / "My.Target-1.2.3.dist-info"  # as pip names it, normalized alike
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-target\nVersion: 1.2.3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert adapter._may_be_installed("my_target")
    assert not adapter._may_be_installed("my_targets")
    assert adapter._version_of(load_target("my_target:Assembler")) == "1.2.3"


def test_a_zip_archive_on_the_path_may_hold_a_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "packages.zip"
    archive.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip archive
    monkeypatch.syspath_prepend(str(archive))
    assert adapter._may_be_installed("anything")
