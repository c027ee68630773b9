"""`conform matrix` and `conform run --shard`: the matrix data, its JSON Schema, Markdown, the
baseline marks, exit statuses, and shards' reports merging into the matrix of one whole run."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness.check.options import RunOptions
from harness.cli import matrix_targets
from harness.cli.matrix_targets import split_label, targets_of
from harness.pipeline.selection import in_shard, shard_of
from harness.reports.matrix_table import default_label
from harness.suite.cases import Suite
from tests.conftest import invoke
from tests.schemas import validate

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "harness/schemas/matrix.schema.json").read_text(encoding="utf-8"))
BAD = "tests/miniatures.py:LastToolCallIdWins"  # fails R2 cases
CRASHES = "tests/miniatures.py:RaisesValueError"  # crashes on protocol errors
SELECT = ("-k", "llama-server/tool_*", "-k", "synthetic/r2_*", "-k", "synthetic/r6_tool_index_*")
MODES = ("--mode", "plain", "--mode", "escapes", "--mode", "truncated")


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The matrix's Python targets run in this process, as `conform run --in-process` runs them.

    For what lies above the driver (baselines, --xfail files, the selection): a worker's start
    is 0.3 s of CPU, and `test_four_shards_merge_into_the_matrix_of_one_run` shows that the live
    matrix, run by workers, gives the in-process one's data; `test_cells_statuses_...`, the target
    that cannot start and the --exec target run workers as a user's matrix does.
    """

    def options(**fields: Any) -> RunOptions:
        return RunOptions(**fields, in_process=fields.get("target") is not None)

    monkeypatch.setattr(matrix_targets, "RunOptions", options)


def matrix_json(tmp_path: Path, *args: str, name: str = "m.json") -> tuple[int, dict[str, Any]]:
    out = tmp_path / name
    result = invoke("matrix", *args, "--json", str(out))
    assert result.exit_code in (0, 1), result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    validate(data, SCHEMA)
    return result.exit_code, data


def comparable(data: dict[str, Any]) -> dict[str, Any]:
    """The matrix without what differs between two runs of the same thing: times, the date, and
    `--in-process` in the commands that reproduce a cell (the reports were made in-process, the
    live matrix runs workers)."""
    found: dict[str, Any] = json.loads(json.dumps(data).replace(" --in-process", ""))
    return {
        **{k: v for k, v in found.items() if k != "generated"},
        "targets": [{k: v for k, v in t.items() if k != "duration"} for t in found["targets"]],
    }


def test_shards_are_a_partition_and_stable(suite: Suite) -> None:
    cases = suite.cases()
    parts = [in_shard(cases, (k, 4)) for k in range(1, 5)]
    ids = [c.case_id for part in parts for c in part]
    assert sorted(ids) == sorted(c.case_id for c in cases)  # each case once
    assert all(len(part) > len(cases) // 8 for part in parts)  # none nearly empty
    # A case's shard depends on its id alone, not on the other cases.
    assert [shard_of(c.case_id, 4) for c in cases[:20]] == [
        shard_of(c.case_id, 4) for c in reversed(cases[:20])
    ][::-1]
    assert shard_of("llama-server/tool_call", 4) == shard_of("llama-server/tool_call", 4)


def test_four_shards_merge_into_the_matrix_of_one_run(tmp_path: Path) -> None:
    # The shards and the whole run in-process (ten runs without a worker's start); the live
    # matrix at the end runs workers, and must still give the same matrix.
    reports = []
    for target in ("reference:Assembler", BAD):
        for k in range(1, 5):
            path = tmp_path / f"{default_label(target, 'python')}-{k}.json"
            result = invoke(
                "run", target, *SELECT, *MODES, "--shard", f"{k}/4", "-q", "--json", str(path),
                "--in-process",
            )  # fmt: skip
            assert result.exit_code in (0, 1), result.output
            shard = json.loads(path.read_text(encoding="utf-8"))
            assert shard["shard"] == {"index": k, "count": 4}
            reports.append(str(path))
    code, merged = matrix_json(
        tmp_path, *(a for r in reports for a in ("--from", r)), name="merged.json"
    )
    whole = []
    for target in ("reference:Assembler", BAD):
        path = tmp_path / f"whole-{default_label(target, 'python')}.json"
        invoke("run", target, *SELECT, *MODES, "-q", "--in-process", "--json", str(path))
        whole += ["--from", str(path)]
    whole_code, one = matrix_json(tmp_path, *whole, name="one.json")
    assert comparable(merged) == comparable(one)
    live_code, live = matrix_json(tmp_path, "reference:Assembler", BAD, *SELECT, *MODES)
    assert comparable(live) == comparable(one)
    assert code == whole_code == live_code == 1  # the bad target fails
    assert [t["label"] for t in one["targets"]] == ["reference", "miniatures"]


def test_a_missing_shard_is_an_error(tmp_path: Path) -> None:
    paths = []
    for k in (1, 3):
        path = tmp_path / f"s{k}.json"
        invoke(
            "run",
            "reference:Assembler",
            *SELECT,
            "--mode",
            "plain",
            "--shard",
            f"{k}/3",
            "-q",
            "--json",
            str(path),
            "--in-process",
        )
        paths += ["--from", str(path)]
    result = invoke("matrix", *paths)
    assert result.exit_code == 2
    assert "not one complete set: 1/3, 3/3" in result.output


def test_cells_statuses_scores_and_the_command(tmp_path: Path) -> None:
    code, data = matrix_json(
        tmp_path, "ref=reference:Assembler", f"bad={BAD}", f"boom={CRASHES}", *SELECT, *MODES
    )
    assert code == 1 and not data["ok"]
    assert [t["label"] for t in data["targets"]] == ["ref", "bad", "boom"]
    ref, bad, _boom = data["targets"]
    assert ref["ok"] and ref["cases"]["conforming"] == ref["cases"]["total"] == len(data["cases"])
    assert not bad["ok"] and bad["rules"]["R2"]["failed"] > 0
    assert bad["rules"].get("R6", {"failed": 0})["failed"] == 0
    statuses = {s for row in data["cases"] for s in (row["cells"][2]["status"],)}
    assert "crashed" in statuses
    row = next(r for r in data["cases"] if r["cells"][1]["status"] == "failed")
    cell = row["cells"][1]
    assert set(cell["modes"]) == {"plain", "escapes", "truncated"}
    assert cell["first"]["command"] == (
        f"conform run {BAD} -k {row['case']} --mode {cell['first']['mode']}"
    )
    assert (
        cell["first"]["headline"] in cell["first"]["detail"]
        or "expected" in cell["first"]["detail"]
    )
    # The command reproduces that failure.
    again = invoke("run", *cell["first"]["command"].split()[2:])
    assert again.exit_code == 1 and row["case"] in again.output


@pytest.mark.usefixtures("in_process")
def test_own_xfail_files_make_the_matrix_pass(tmp_path: Path) -> None:
    xfail = tmp_path / "bad.xfail"
    result = invoke(
        "run", BAD, *SELECT, "--mode", "plain", "-q", "--write-xfail", str(xfail), "--in-process"
    )
    assert result.exit_code == 0, result.output
    html, md = tmp_path / "m.html", tmp_path / "m.md"
    args = ("reference:Assembler", f"bad={BAD}", *SELECT, "--mode", "plain")
    result = invoke(
        "matrix", *args, "--xfail", f"bad={xfail}", "--html", str(html), "--markdown", str(md)
    )
    assert result.exit_code == 0, result.output
    assert md.read_text(encoding="utf-8") in result.output  # the table is printed too
    assert "| rule | `reference` | `bad` |" in md.read_text(encoding="utf-8")
    assert "with --xfail" in html.read_text(encoding="utf-8")
    # Another target's failures are not covered by that file.
    result = invoke("matrix", *args, f"bad2={BAD}", "--xfail", f"bad={xfail}")
    assert result.exit_code == 1
    # A line for a case outside the -k selection is no error (as for conform run).
    one = "synthetic/r2_tool_call_id_name_changed"
    assert one in xfail.read_text(encoding="utf-8") and len(xfail.read_text().splitlines()) > 4
    result = invoke(
        "matrix",
        "reference:Assembler",
        f"bad={BAD}",
        "-k",
        one,
        "--mode",
        "plain",
        "--xfail",
        f"bad={xfail}",
    )
    assert result.exit_code == 0, result.output
    result = invoke("matrix", *args, "--xfail", f"nobody={xfail}")
    assert result.exit_code == 2 and "names no target" in result.output


@pytest.mark.usefixtures("in_process")
def test_a_baseline_marks_the_cells_that_changed(tmp_path: Path) -> None:
    _, before = matrix_json(
        tmp_path, "x=reference:Assembler", *SELECT, "--mode", "plain", name="before.json"
    )
    _code, after = matrix_json(
        tmp_path,
        f"x={BAD}",
        *SELECT,
        "--mode",
        "plain",
        "--baseline",
        str(tmp_path / "before.json"),
    )
    changed = [row["case"] for row in after["cases"] if "changed" in row["cells"][0]]
    failing = [row["case"] for row in after["cases"] if row["cells"][0]["status"] != "passed"]
    assert changed == failing and changed
    assert after["baseline"]["changed"] == len(changed)
    assert all(
        row["cells"][0].get("changed", {"was": "passed"})["was"] == "passed"
        for row in after["cases"]
    )
    assert before["baseline"] is None


def test_a_target_that_cannot_start_is_a_column_that_fails(tmp_path: Path) -> None:
    code, data = matrix_json(
        tmp_path, "reference:Assembler", "nope=no_such_module:Thing", *SELECT, "--mode", "plain"
    )
    assert code == 1
    nope = data["targets"][1]
    assert nope["error"] and not nope["ok"]
    assert {row["cells"][1]["status"] for row in data["cases"]} == {"not-run"}


def test_exec_targets_and_labels(tmp_path: Path) -> None:
    assert split_label("js=node a.mjs") == ("js", "node a.mjs")
    assert split_label("node a.mjs") == (None, "node a.mjs")
    assert split_label("pkg.mod:Cls") == (None, "pkg.mod:Cls")
    assert default_label("examples/clients/openai_adapter.py:Assembler", "python") == (
        "openai_adapter"
    )
    assert default_label("node examples/js/assembler.mjs", "exec") == "node assembler.mjs"
    with pytest.raises(Exception, match="the label 'reference:Assembler'"):
        targets_of(["reference:Assembler", "reference:Assembler"], [], [], {})
    with pytest.raises(Exception, match="no label before"):
        split_label("=reference:Assembler")
    # Two classes of one module: labelled by their whole spec, not stopped for a shared default.
    labels = [t.label for t in targets_of(["tests.miniatures:A", "tests.miniatures:B"], [], [], {})]
    assert labels == ["tests.miniatures:A", "tests.miniatures:B"]
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    code, data = matrix_json(
        tmp_path,
        "--exec",
        f"js=node {ROOT / 'examples/js/assembler.mjs'}",
        *SELECT,
        "--mode",
        "plain",
    )
    assert code == 0 and data["targets"][0]["target_kind"] == "exec"
    cmd = data["targets"][0]["target"]
    assert cmd.startswith("node ")


def _run_json(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "r.json"
    result = invoke("run", *args, "--json", str(out), "--in-process")
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "selection",
    [
        ("--mode", "plain", "--mode", "plain"),  # a mode named twice runs once
        ("--mode", "escapes", "--mode", "plain", "--mode", "escapes"),
        ("--rule", "R2", "--exclude", "synthetic/r2_tool_call_id_*", "--mode", "key-order"),
    ],
    ids=["twice", "order-kept", "rule-and-exclude"],
)
@pytest.mark.usefixtures("in_process")
def test_run_and_matrix_select_the_same_cases_and_modes(
    tmp_path: Path, selection: tuple[str, ...]
) -> None:
    args = ("-k", "llama-server/tool_call", "-k", "synthetic/r2_*", *selection)
    _, run = _run_json(tmp_path, "reference:Assembler", *args)
    _, data = matrix_json(tmp_path, "r=reference:Assembler", *args)
    assert data["modes"] == run["modes"]
    assert data["targets"][0]["totals"]["runs"] == run["totals"]["runs"] == len(run["results"])
    assert sorted(row["case"] for row in data["cases"]) == sorted(
        {r["case"] for r in run["results"]}
    )


@pytest.mark.parametrize(
    "line", ["llama-server/tool_call  key-order", "llama-server/tool_call  w*"]
)
@pytest.mark.usefixtures("in_process")
def test_run_and_matrix_check_xfail_lines_against_every_mode(tmp_path: Path, line: str) -> None:
    """A line for a mode this run does not select is a line of the baseline, not a mistake: both
    front doors accept it (it names a real case and mode of the suite) and pass."""
    baseline = tmp_path / "b.xfail"
    baseline.write_text(f"{line}  # only fails there\n", encoding="utf-8")
    args = ("-k", "llama-server/tool_call", "--mode", "plain")
    code, run = _run_json(tmp_path, "reference:Assembler", *args, "--xfail", str(baseline))
    assert code == 0 and run["ok"]
    code, data = matrix_json(tmp_path, "r=reference:Assembler", *args, "--xfail", f"r={baseline}")
    assert code == 0 and data["targets"][0]["error"] is None and data["ok"]
    # A line that names no mode of the suite is refused by both, as a usage error.
    baseline.write_text("llama-server/tool_call  no-such-mode\n", encoding="utf-8")
    for result in (
        invoke("run", "reference:Assembler", *args, "--xfail", str(baseline), "--in-process"),
        invoke("matrix", "r=reference:Assembler", *args, "--xfail", f"r={baseline}"),
    ):
        assert result.exit_code == 2 and "matches no mode" in result.output


def test_workers_idle_cores_add_leave_the_results_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A matrix target adds a worker while fewer run than there are cores (the last long target
    uses the cores the short ones left): the same results as with its one worker."""
    from harness.check.options import RunOptions
    from harness.drive.spec import DriverSpec
    from harness.pipeline import Selection, Target, prepare, run_targets

    started: list[str] = []
    start = DriverSpec.start

    def counted(spec: DriverSpec) -> Any:
        started.append(str(spec.target or spec.exec_command))
        return start(spec)

    monkeypatch.setattr(DriverSpec, "start", counted)
    monkeypatch.setattr("harness.pipeline.run.os.cpu_count", lambda: 3)
    plan = prepare(Selection(patterns=SELECT), ("plain", "truncated"))
    targets = [Target("good", RunOptions("reference:Assembler")), Target("bad", RunOptions(BAD))]

    def results(idle_cores: bool) -> list[Any]:
        runs = run_targets(targets, plan, idle_cores=idle_cores)
        return [
            [(r.case_id, r.mode, r.status, r.mismatches) for r in run.record.results]
            for run in runs
            if run.record is not None
        ]

    alone = results(False)
    assert sorted(started) == ["reference:Assembler", BAD]
    started.clear()
    assert results(True) == alone
    # How many workers the idle cores add depends on the machine's load (the cases may all be
    # taken before a core is seen idle; a worker that times out under load is started again), so
    # only the results are compared here; `test_idle_cores_grant_and_refuse` checks the decision.
    assert len(started) >= 2, started
    assert len(alone[0]) == len(plan.cases) * 2 and any(len(r[3]) for r in alone[1])


def test_idle_cores_grant_and_refuse() -> None:
    """The decision an idle core makes, without a clock: a worker is granted a core while fewer
    than the cores are busy, and refused (without waiting) once it is no longer needed."""
    from harness.pipeline.run import IdleCores

    cores = IdleCores(2)
    cores.add(1)
    assert cores.take(lambda: False) is True  # 1 busy of 2: granted, now 2 busy
    assert cores.take(lambda: True) is False  # all busy, and no longer needed: refused at once
    cores.add(-1)
    assert cores.take(lambda: False) is True  # a core came free


class _Pace:
    """A matrix target as `IdleCores` sees it: its time left (None: not known yet)."""

    def __init__(self, left: float | None) -> None:
        self.left, self.start_seconds = left, 0.5

    def time_left(self) -> float | None:
        return self.left


def test_a_straggler_adds_a_worker_at_once_and_an_idle_core_goes_to_the_longest() -> None:
    from harness.pipeline.run import IdleCores

    cores = IdleCores(2)
    cores.add(2)  # no core idle
    long, short, unknown = _Pace(30.0), _Pace(5.0), _Pace(None)
    for target in (long, short, unknown):
        cores.join(target)  # type: ignore[arg-type]
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    # A target whose pace is not known yet may take longer: no straggler yet.
    assert cores.take(stop.is_set, long) is False  # type: ignore[arg-type]
    unknown.left = 1.0
    # More time left than all the others together: it adds a worker at once, no core idle (the
    # timer only ends a wait that would be the bug, however loaded the machine).
    later = threading.Timer(60.0, lambda: None)
    later.start()
    assert cores.take(lambda: not later.is_alive(), long) is True  # type: ignore[arg-type]
    later.cancel()
    # Two waiting, neither a straggler (40 s left elsewhere), and then one core idle: it goes to
    # the one with more time left; the other waits on.
    unknown.left, long.left = 40.0, 10.0
    won: list[float | None] = []
    done = threading.Event()

    def wait(target: _Pace) -> None:
        if cores.take(done.is_set, target):  # type: ignore[arg-type]
            won.append(target.left)

    threads = [threading.Thread(target=wait, args=(t,)) for t in (short, long)]
    for thread in threads:
        thread.start()
    # The deadlines only end a wait that would be the bug: a loaded machine is slow, not wrong.
    deadline = time.monotonic() + 60
    while len(cores._waiting) < 2 and time.monotonic() < deadline:  # both wait for a core
        time.sleep(0.01)
    assert len(cores._waiting) == 2 and won == []
    cores.add(-2)  # one core idle (3 busy before)
    deadline = time.monotonic() + 60
    while not won and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    done.set()
    for thread in threads:
        thread.join()
    assert won == [10.0]


def test_a_straggler_adds_one_worker_beyond_the_cores_at_most() -> None:
    from harness.pipeline.run import IdleCores

    cores = IdleCores(2)
    cores.add(2)  # no core idle
    long, short = _Pace(30.0), _Pace(1.0)
    for target in (long, short):
        cores.join(target)  # type: ignore[arg-type]
    soon = threading.Timer(60.0, lambda: None)  # ends only a wait that would be the bug
    soon.start()
    assert cores.take(lambda: not soon.is_alive(), long) is True  # type: ignore[arg-type]
    soon.cancel()
    again = threading.Event()
    threading.Timer(0.5, again.set).start()
    assert cores.take(again.is_set, long) is False  # type: ignore[arg-type]
    assert cores._busy == 3
