"""Under CI=true a skipped test fails (the live tests aside): .ci/run installs every tool."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TESTS = """
import shutil
import pytest

@pytest.mark.skipif(shutil.which("no-such-tool-here") is None, reason="no-such-tool-here missing")
def test_needs_a_tool():
    pass

@pytest.mark.live
def test_live():
    pytest.skip("live test")

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_to_fail():
    assert False
"""


@pytest.mark.parametrize(
    ("ci", "expected"), [("true", {"skipped": 1, "errors": 1}), ("", {"skipped": 2})]
)
def test_a_skip_for_want_of_a_tool_fails_only_in_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str, expected: dict[str, int]
) -> None:
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest("from tests.ci_rules import pytest_runtest_makereport  # noqa: F401\n")
    pytester.makeini("[pytest]\nmarkers =\n    live: a live test\n")
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes == {"xfailed": 1, **expected}, result.stdout.str()
    if ci:
        result.stdout.fnmatch_lines(["*skipped under CI=true*no-such-tool-here missing*"])
