"""Under CI=true no test skips for want of a tool: .ci/run installs them all.

The hook below is registered by tests/conftest.py; tests/test_ci_rules.py checks it.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Under CI=true nothing skips but the live tests: .ci/run installs every tool the tests use
    (Node, Go, cargo and Debian's serde crates), so a skip there means a tool went missing."""
    report = yield
    if (
        os.environ.get("CI") == "true"
        and report.skipped
        and "live" not in item.keywords
        and not hasattr(report, "wasxfail")
    ):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where nothing may skip: {reason}"
    return report
