"""`CaseGlobs` answers as `case_matches` does, glob by glob, for any globs and case ids."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.check.xfail import XfailEntry, XfailList
from harness.suite.cases import CaseGlobs, case_matches

# Few letters, so that drawn globs and ids often share folders; every character fnmatch treats
# specially, and the folder separator.
_CHARS = st.sampled_from(list("ab/*?[]!-"))
_IDS = st.text(st.sampled_from(list("ab/")), max_size=7)
_GLOBS = st.text(_CHARS, max_size=6)


@settings(max_examples=400, deadline=None)
@given(globs=st.lists(_GLOBS, max_size=8), case_id=_IDS)
def test_the_lookup_matches_exactly_the_globs_case_matches_matches(
    globs: list[str], case_id: str
) -> None:
    expected = [index for index, glob in enumerate(globs) if case_matches(case_id, glob)]
    assert CaseGlobs(globs).matching(case_id) == expected


def test_ids_folders_and_wildcards_each_match_as_the_rule_says() -> None:
    globs = CaseGlobs(
        [
            "llama-server/tool_call",  # 0: that case alone
            "synthetic",  # 1: a folder
            "synthetic/",  # 2: the same folder
            "synthetic/r6_*",  # 3: a wildcard
            "synthetic/r6_nesting_1",  # 4: a case
            "llama-server/tool_call",  # 5: a repeated line
        ]
    )
    assert globs.matching("llama-server/tool_call") == [0, 5]
    assert globs.matching("llama-server/tool_calls_parallel") == []
    assert globs.matching("synthetic/r6_nesting_1") == [1, 2, 3, 4]
    assert globs.matching("synthetic/r8_server_error") == [1, 2]
    assert globs.matching("synthetics/r6_x") == []


def test_an_expected_failures_list_applies_its_first_matching_line() -> None:
    entries = (
        XfailEntry("synthetic/r6_*", "plain", "wildcard", 1),
        XfailEntry("synthetic", "*", "folder", 2),
        XfailEntry("synthetic/r6_nesting_1", "*", "case", 3),
    )
    listed = XfailList(__file__, entries)  # type: ignore[arg-type]
    found = listed.find("synthetic/r6_nesting_1", "plain")
    assert found is not None and found.reason == "wildcard"
    found = listed.find("synthetic/r6_nesting_1", "whitespace")
    assert found is not None and found.reason == "folder"
    assert listed.find("llama-server/tool_call", "plain") is None
