"""Every golden file is what the reference makes of its recording, kept through syrupy.

`pytest --snapshot-update` regenerates them; a plain run fails on any drift, and a golden file whose
recording is gone is reported as unused (when pytest runs without path arguments).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from harness.suite.cases import Suite
from harness.suite.golden import build_golden
from tests.suite.golden.snapshot import GoldenExtension

ROOT = Path(__file__).resolve().parents[3]
CASES = Suite.open(ROOT).cases()


#: One extension class for every test: syrupy reads a class's snapshot files once (a new class per
#: test would read the whole golden folder again for each case).
EXTENSION = GoldenExtension.for_suite(ROOT)


@pytest.fixture
def golden_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(EXTENSION)


def test_the_suite_has_the_promised_cases() -> None:
    ids = {case.case_id for case in CASES}
    assert len([i for i in ids if i.startswith("llama-server/")]) == 9
    assert len([i for i in ids if i.startswith("synthetic/")]) >= 100


@pytest.mark.parametrize("case", CASES, ids=[case.case_id for case in CASES])
def test_golden(case, golden_snapshot: SnapshotAssertion) -> None:
    assert golden_snapshot(name=case.case_id) == build_golden(case)
