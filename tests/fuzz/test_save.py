"""Keeping a finding as a case (harness/fuzz/save.py): whole or not at all, never over another.

A full disk is stood for by a writer that fails on the recording (after the golden file was
written, the order the save takes): nothing of the case may be left, and a case that was there
before (`force`) is put back as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.check.options import RunOptions
from harness.errors import ConformError, WriteError
from harness.fuzz import save
from harness.fuzz.loop import Finding, FuzzRequest, run_fuzz
from harness.suite.cases import Suite
from harness.suite.golden import check

MINIATURES = str(Path(__file__).resolve().parents[1] / "miniatures.py")


@pytest.fixture(scope="module")
def finding() -> Finding:
    options = RunOptions(target=f"{MINIATURES}:DropsServerMessage", in_process=True, seed=1)
    record = run_fuzz(FuzzRequest(options, examples=400, shrink_steps=30))
    assert record.finding is not None
    return record.finding


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    real = save.write_atomically

    def write(path: Path, data: str, **kwargs: object) -> None:
        if path.suffix == ".sse":
            raise WriteError(path, f"cannot write {path}: No space left on device")
        real(path, data)

    monkeypatch.setattr(save, "write_atomically", write)


def test_a_saved_case_is_the_golden_file_golden_update_writes(
    finding: Finding, tmp_path: Path
) -> None:
    saved = save.save_finding(finding, tmp_path)
    assert saved.status == "created"
    assert saved.recording.read_text(encoding="utf-8") == finding.recording
    suite = Suite.open(tmp_path)
    assert check(suite, suite.cases()) == []


def test_a_full_disk_leaves_no_half_case(
    finding: Finding, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _full_disk(monkeypatch)
    with pytest.raises(WriteError, match="No space left"):
        save.save_finding(finding, tmp_path)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_full_disk_puts_back_the_case_it_was_to_replace(
    finding: Finding, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording, golden = save.case_paths(tmp_path, finding.case_id)
    recording.parent.mkdir(parents=True)
    golden.parent.mkdir(parents=True)
    recording.write_text(": mine\n", encoding="utf-8")
    golden.write_text("{}\n", encoding="utf-8")
    _full_disk(monkeypatch)
    with pytest.raises(WriteError):
        save.save_finding(finding, tmp_path, force=True)
    assert recording.read_text(encoding="utf-8") == ": mine\n"
    assert golden.read_text(encoding="utf-8") == "{}\n"


def test_a_case_there_is_never_replaced_without_force(finding: Finding, tmp_path: Path) -> None:
    recording, _ = save.case_paths(tmp_path, finding.case_id)
    recording.parent.mkdir(parents=True)
    recording.write_text(": mine\n", encoding="utf-8")
    with pytest.raises(ConformError, match="already there"):
        save.save_finding(finding, tmp_path)
    assert recording.read_text(encoding="utf-8") == ": mine\n"
    assert save.save_finding(finding, tmp_path, force=True).status == "replaced"
    assert save.save_finding(finding, tmp_path).status == "unchanged"
