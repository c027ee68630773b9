"""Shared fixtures: the project's own suite and a scratch copy of it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness.suite.cases import Suite

ROOT = Path(__file__).resolve().parent.parent

collect_ignore_glob = ["fuzz/*"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Live tests (a real llama-server) run only when asked for: `pytest -m live`."""
    if "live" in (config.getoption("markexpr") or "") or os.environ.get("CONFORM_LIVE") == "1":
        return
    skip = pytest.mark.skip(
        reason="live test: run with 'pytest -m live' (needs llama-server and a model; "
        "see docs/recording.md)"
    )
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def suite() -> Suite:
    """The suite shipped in this repository."""
    return Suite.open(ROOT)


@pytest.fixture
def suite_copy(tmp_path: Path) -> Suite:
    """A private copy of the shipped suite that a test may break."""
    for name in ("recordings", "golden"):
        shutil.copytree(ROOT / name, tmp_path / name)
    return Suite.open(tmp_path)
