"""The hostile battery: targets and inputs that attack the harness, each pinning a way conform once
lost control (a process left running, a wrong label, a traceback, a file in the wrong place).

Signals (Ctrl-C, SIGTERM) are in test_signals.py; the targets are in targets.py.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest

from harness.capture.live import ENDPOINT, normalize_url
from harness.check import jsontext
from harness.check import modes as inject
from harness.check.xfail import parse_lines
from harness.suite.cases import Suite, case_matches
from harness.suite.golden import update
from tests.conftest import (
    ROOT,
    SUBREAPER,
    conform,
    invoke,
    live_children,
    orphan_problem,
    wait_for_children,
)
from tests.programs.mini_suite import BAD, write_mini_suite

HERE = Path(__file__).parent
TARGETS = HERE / "targets.py"


def target(name: str) -> str:
    return f"{TARGETS}:{name}"


def run_mini(mini: Suite, *args: str | Path) -> tuple[int, str]:
    return conform("run", *args, "--suite", mini.root, "--mode", "plain", "-v")


needs_proc = pytest.mark.skipif(not SUBREAPER, reason="counts processes through Linux's /proc")


# -- 1: large payloads in a worker ----------------------------------------------------------------


def test_1_a_large_payload_crosses_the_worker_pipe(tmp_path: Path) -> None:
    """16 MB in one payload: with the old 50 ms sleep per full pipe it took 12 s and more, beyond
    the generous limit here; now it takes well under a second."""
    text = "x" * (16 * 2**20)
    chunk = {"id": "chatcmpl-big", "choices": [{"index": 0, "delta": {"content": text}}]}
    last = {"id": "chatcmpl-big", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    (tmp_path / "recordings").mkdir()
    (tmp_path / "recordings" / "big.sse").write_text(
        f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(last)}\n\n"
    )
    suite = Suite.open(tmp_path)
    update(suite.cases())
    code, output = conform(
        "run", target("Large"), "--suite", tmp_path, "--mode", "plain", "--timeout", "8"
    )
    assert code == 0, output
    assert "1 passed" in output


# -- 4: processes a target starts -----------------------------------------------------------------


@needs_proc
@pytest.mark.parametrize("name", ["StartsChild", "Forks"])
@pytest.mark.parametrize("how", ["worker", "exec"])
def test_4_what_a_target_starts_ends_with_it(mini: Suite, name: str, how: str) -> None:
    before = live_children()
    if how == "worker":
        code, output = run_mini(mini, target(name), "--timeout", "1")
    else:
        program = f"{sys.executable} -m harness.adapter {target(name)}"
        code, output = run_mini(mini, "--exec", program, "--timeout", "1")
    if name == "StartsChild":  # it also hangs in the middle case, whose group is killed then
        assert code == 1 and f"TIMEOUT {BAD} [plain]" in output and "2 passed" in output
    else:
        assert code == 0, output
    assert not wait_for_children(before), output


# -- 5: BaseException in-process ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "raised"),
    [("RaisesGeneratorExit", "GeneratorExit"), ("RaisesBaseException", "Catastrophe")],
)
def test_5_base_exceptions_in_process_are_crashes(mini: Suite, name: str, raised: str) -> None:
    code, output = run_mini(mini, target(name), "--in-process")
    assert code == 1
    assert f"crashed at step 0 (line 1): push raised {raised}" in output
    assert "totals: 3 crashed" in output


# -- 6: factories that fail -----------------------------------------------------------------------


@pytest.mark.parametrize("where", ["worker", "in-process"])
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("factory_raises", "crashed at new: creating the assembler raised ValueError"),
        ("factory_returns_none", "crashed at new: creating the assembler returned None"),
    ],
)
def test_6_a_failing_factory_is_labelled_at_new(
    mini: Suite, name: str, message: str, where: str
) -> None:
    extra = ["--in-process"] if where == "in-process" else []
    code, output = run_mini(mini, target(name), *extra)
    assert code == 1
    assert output.count(message) == 3, output
    assert "no case is open" not in output


def test_6_a_hanging_init_is_timed_out_at_new(mini: Suite) -> None:
    code, output = run_mini(mini, target("HangsInInit"), "-k", "a_before", "--timeout", "0.5")
    assert code == 1
    assert "timed out at new: no reply to new within 0.5 s" in output


def test_6_the_json_report_names_the_call(mini: Suite, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    run_mini(mini, target("factory_raises"), "-k", "a_before", "--json", report)
    crash = json.loads(report.read_text())["results"][0]["crash"]
    assert crash["at"] == "new" and crash["step"] is None


# -- 7: a target that forks and dies --------------------------------------------------------------


@needs_proc
def test_7_a_parent_that_dies_is_a_crash_not_a_timeout(mini: Suite) -> None:
    before = live_children()
    code, output = run_mini(mini, target("ForksAndDies"), "--timeout", "60")
    assert code == 1
    assert f"CRASH {BAD} [plain]" in output
    assert "the program exited with status 3 before answering push" in output
    assert "forker: the parent leaves now" in output
    assert "TIMEOUT" not in output
    assert not wait_for_children(before)


# -- 8: golden files that break the schema --------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda g: g["steps"][0]["state"].update(extra=1), "$.steps[0].state.extra"),
        (lambda g: g["steps"][0].update(extra=1), "$.steps[0].extra"),
        (lambda g: g["steps"][0]["events"][0].update(extra=1), "$.steps[0].events[0].extra"),
        (lambda g: g["finish"]["completion"].update(extra=1), "$.finish.completion.extra"),
        (lambda g: g.update(extra=1), "$.extra"),
        (lambda g: g["steps"][0]["state"].update(in_reasoning=0), "$.steps[0].state.in_reasoning"),
    ],
    ids=["in-state", "in-step", "in-event", "in-completion", "top-level", "wrong-type"],
)
def test_8_a_golden_file_off_its_schema_is_a_setup_error(
    mini: Suite, tmp_path: Path, edit: object, where: str
) -> None:
    root = tmp_path / "suite"
    write_mini_suite(root)
    golden = root / "golden" / "a_before.json"
    document = json.loads(golden.read_text())
    edit(document)  # type: ignore[operator]
    golden.write_text(json.dumps(document, indent=2))
    code, output = conform("run", "reference:Assembler", "--suite", root, "--in-process")
    assert code == 2
    assert f"Error: {golden}: does not follow the golden file schema at {where}" in output


def test_8_the_schema_is_the_one_jsonschema_reads() -> None:
    """The shipped schema is valid JSON Schema and holds every shipped golden file, read by
    jsonschema as by conform's own checker."""
    jsonschema = pytest.importorskip("jsonschema")
    from harness.suite.golden.schema import golden_problem, golden_schema

    validator = jsonschema.Draft202012Validator(golden_schema())
    jsonschema.Draft202012Validator.check_schema(golden_schema())
    broken: dict[tuple[str, ...], int] = {}
    for path in sorted((ROOT / "golden").rglob("*.json")):
        document = json.loads(path.read_text())
        assert not list(validator.iter_errors(document)), path
        assert golden_problem(document) is None, path
        # Both refuse a broken line: in three files of each shape of last step (an error step,
        # a step with events and state), the same break in the others only repeats it.
        shape = tuple(sorted(document["steps"][-1]))
        if broken.setdefault(shape, 0) < 3:
            document["steps"][-1]["line"] = "x"
            assert list(validator.iter_errors(document)) and golden_problem(document) is not None
            broken[shape] += 1
    assert len(broken) >= 2 and all(count == 3 for count in broken.values()), broken


# -- 9: an orphaned golden file in the repository -------------------------------------------------


def test_9_an_orphan_is_named_once(suite_copy: Suite) -> None:
    assert orphan_problem(suite_copy) is None
    (suite_copy.golden_dir / "synthetic" / "gone.json").write_text("{}")
    problem = orphan_problem(suite_copy)
    assert problem is not None and "golden/synthetic/gone.json" in problem


# -- 10, 11: how targets load ---------------------------------------------------------------------


@pytest.mark.parametrize("where", ["worker", "in-process"])
def test_10_a_one_letter_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    (tmp_path / "t.py").write_text("from reference import Assembler as Base\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    extra = ["--in-process"] if where == "in-process" else []
    code, output = conform("run", "t:Base", "--mode", "plain", "-k", "synthetic/r1_*", *extra)
    assert code == 0, output


@pytest.mark.parametrize("where", ["worker", "in-process"])
def test_11_a_file_target_imports_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    (tmp_path / "helperpkg").mkdir()
    (tmp_path / "helperpkg" / "__init__.py").write_text("from reference import Assembler\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text("from helperpkg import Assembler\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    extra = ["--in-process"] if where == "in-process" else []
    code, output = conform(
        "run", "sub/a.py:Assembler", "--mode", "plain", "-k", "synthetic/r1_*", *extra
    )
    assert code == 0, output


# -- 12: a target that changes directory ----------------------------------------------------------


def test_12_reports_land_where_the_run_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start, elsewhere = tmp_path / "start", tmp_path / "elsewhere"
    start.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(start)
    monkeypatch.setenv("HOSTILE_CHDIR", str(elsewhere))
    code, output = conform(
        "run", target("ChangesDirectory"), "--in-process", "--mode", "plain",
        "-k", "synthetic/r1_*", "--json", "rel.json", "--junit-xml", "out/rel.xml",
    )  # fmt: skip
    os.chdir(start)
    assert code == 0, output
    assert (start / "rel.json").is_file() and (start / "out" / "rel.xml").is_file()
    assert not (elsewhere / "rel.json").exists()


# -- 13: a job summary that cannot be written -----------------------------------------------------


def test_13_an_unwritable_job_summary_does_not_fail_a_passing_run(tmp_path: Path) -> None:
    summary = tmp_path / "missing" / "summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    result = invoke(
        "run",
        "reference:Assembler",
        "--in-process",
        "--mode",
        "plain",
        "-k",
        "synthetic/r1_*",
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert f"warning: no job summary: cannot write {summary}" in result.output


# -- 14: a raw lone surrogate in a payload --------------------------------------------------------


@pytest.mark.parametrize("mode", inject.MODES)
def test_14_a_raw_lone_surrogate_is_pushed_unchanged(mode: str) -> None:
    data = '{"choices":[{"index":0,"delta":{"content":"a\udc00"}}]}'
    assert not jsontext.rewritable(data)
    assert inject.unknown_fields(data, random.Random(1)) == data
    if mode != inject.TRUNCATED:
        assert inject.mutate(mode, data, seed=1, case_id="x", step=0) == data


# -- 15: one rule for -k and --xfail --------------------------------------------------------------


def test_15_k_takes_whole_ids_or_folders() -> None:
    code, output = conform("list", "--ids", "-k", "llama-server/tool_call")
    assert code == 0 and output.split() == ["llama-server/tool_call"]
    code, output = conform("list", "--ids", "-k", "llama-server")
    assert len(output.split()) > 5 and all(c.startswith("llama-server/") for c in output.split())
    assert case_matches("synthetic/r1_x", "synthetic/") and case_matches("a/b/c", "a/b")
    assert not case_matches("llama-server/tool_calls_parallel", "llama-server/tool_call")
    assert not case_matches("synthetic/r1_x", "r1_")


def test_15_xfail_lines_follow_the_same_rule(tmp_path: Path) -> None:
    path = tmp_path / "x.xfail"
    entries = parse_lines(path, "llama-server/tool_call  plain  # only this one\nsynthetic\n")
    one, folder = entries
    assert one.matches("llama-server/tool_call", "plain")
    assert not one.matches("llama-server/tool_calls_parallel", "plain")
    assert folder.matches("synthetic/r1_anything", "escapes")


def test_15_the_rule_is_in_help() -> None:
    _code, output = conform("run", "--help")
    assert "whole id" in output and "folder" in output


# -- 16: conform record with an OpenAI-style base URL ---------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://h:8080",
        "http://h:8080/",
        "http://h:8080/v1",
        "http://h:8080/v1/",
        f"http://h{ENDPOINT}",
    ],
)
def test_16_a_v1_base_posts_to_one_v1(url: str) -> None:
    base = normalize_url(url)
    assert base.path.rstrip("/") + ENDPOINT == "/v1/chat/completions"
