"""Keeping a finding as a case of the user's suite (`conform fuzz --save DIR`).

The case is the recording `DIR/recordings/<case id>.sse` and its golden file
`DIR/golden/<case id>.json`, written whole or not at all: the golden file is built first (in a
scratch folder, as `conform golden update` builds any), then written, then the recording; a
recording that cannot be written takes the golden file written for it away again, so a full disk
or a read-only folder leaves the suite as it was. A case already there is never replaced unless
`force` (as `conform record` refuses without `--force`); the same finding saved again is left as
it is. A flaky finding is never saved: it would be a case that passes and fails by turns.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConformError
from harness.files import write_atomically
from harness.fuzz.loop import Finding
from harness.suite import golden as golden_files
from harness.suite.cases import Case, writable_root


@dataclass(frozen=True)
class Saved:
    """Where a finding was kept, and whether it was `created`, `replaced` or `unchanged`."""

    recording: Path
    golden: Path
    status: str


def golden_text(finding: Finding) -> str:
    """The golden file of the finding's case, as `conform golden update` would write it."""
    with tempfile.TemporaryDirectory(prefix="conform-fuzz-") as folder:
        scratch = Path(folder)
        recording = scratch / "recordings" / f"{finding.case_id}.sse"
        recording.parent.mkdir(parents=True)
        recording.write_text(finding.recording, encoding="utf-8", newline="")
        case = Case(finding.case_id, recording, scratch / "golden" / f"{finding.case_id}.json")
        return golden_files.serialize(golden_files.build_golden(case))


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return ""  # there, but not readable: not the same case


def case_paths(root: Path, case_id: str) -> tuple[Path, Path]:
    """The recording and golden file a case of the suite at `root` is kept in."""
    return root / "recordings" / f"{case_id}.sse", root / "golden" / f"{case_id}.json"


def save_finding(finding: Finding, root: Path, *, force: bool = False) -> Saved:
    """Write `finding` as a case of the suite at `root` (never into an installed package).

    ConformError when it is flaky, when a different case of that name is there (without
    `force`), or when it cannot be written (nothing is then left of it).
    """
    if finding.flaky:
        raise ConformError(
            f"not saved: the target differed on this stream in {finding.reproduced} of "
            f"{finding.runs} runs",
            hint="a case that passes and fails by turns is no case; fix what makes it flaky",
        )
    suite = writable_root(root, command="fuzz --save")
    recording, golden = case_paths(suite, finding.case_id)
    expected = golden_text(finding)
    old_recording, old_golden = _text(recording), _text(golden)
    if old_recording == finding.recording and old_golden == expected:
        return Saved(recording, golden, "unchanged")
    if (old_recording is not None or old_golden is not None) and not force:
        there = recording if old_recording is not None else golden
        raise ConformError(
            f"not saved: {there} is already there",
            hint="--force replaces it with what this run found",
        )
    write_atomically(golden, expected)
    try:
        write_atomically(recording, finding.recording)
    except BaseException:
        # Not half a case: the golden file goes too (or is put back as it was).
        if old_golden is None:
            golden.unlink(missing_ok=True)
        else:
            try:
                write_atomically(golden, old_golden)
            except ConformError:
                golden.unlink(missing_ok=True)
        raise
    status = "created" if old_recording is None and old_golden is None else "replaced"
    return Saved(recording, golden, status)
