"""The JavaScript assembler (examples/js/) is gated like any other program: it passes every case
(and a sample in every mode: tests/integration/every_mode.py), its replies follow the protocol's
schemas, and a copy with one rule broken fails."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.check.modes import PLAIN
from tests.conftest import conform
from tests.integration.every_mode import NOT_PLAIN, EveryMode, run_every_mode
from tests.integration.versions import check_protocol_1

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "js" / "assembler.mjs"
KIT = ROOT / "examples" / "kits" / "js" / "conform-kit.mjs"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node (Node.js 20) is not on PATH")


def node(script: Path) -> str:
    return shlex.join([str(NODE), str(script)])


def passes_every_case(mode: str, *extra: str) -> None:
    code, output = conform("run", "--exec", node(EXAMPLE), "--mode", mode, *extra)
    assert code == 0, output
    assert re.fullmatch(
        r"by rule \(cases conforming\): [^\n]*\nby class \(cases conforming\): [^\n]*\n"
        r"verdict: assembles every valid stream right [^\n]*\ntotals: \d+ passed \(.*\)\n",
        output,
    )
    assert "FAIL" not in output


@pytest.fixture(scope="module")
def every_mode(tmp_path_factory: pytest.TempPathFactory) -> EveryMode:
    return run_every_mode(node(EXAMPLE), tmp_path_factory.mktemp("js") / "report.json")


# Plain runs in test_the_example_follows_the_protocol_schemas, which checks the replies as well.
@pytest.mark.parametrize("mode", NOT_PLAIN)
def test_the_example_passes_in_each_mode(every_mode: EveryMode, mode: str) -> None:
    every_mode.check_passes(mode)


def test_the_example_follows_the_protocol_schemas() -> None:
    passes_every_case(PLAIN, "--validate-protocol")


def test_it_answers_conforms_hello_with_protocol_1() -> None:
    # What conform sends (the runs above are protocol 1 runs), spoken to it directly.
    check_protocol_1([str(NODE), str(EXAMPLE)])


def test_a_copy_with_one_rule_broken_fails_at_that_field(tmp_path: Path) -> None:
    # R9: the id is the first non-empty one seen. The copy takes "" for an id too (keeping the
    # latest would be I9's other outcome, which passes).
    first_id_wins = "if (this.#id === null && chunk.id) this.#id = chunk.id;"
    source = EXAMPLE.read_text(encoding="utf-8")
    assert source.count(first_id_wins) == 1
    # The copy keeps its place beside the adapter kit it imports (../kits/js/conform-kit.mjs).
    kit = tmp_path / "kits" / "js"
    kit.mkdir(parents=True)
    shutil.copy(KIT, kit / KIT.name)
    (tmp_path / "js").mkdir()
    broken = tmp_path / "js" / "assembler.mjs"
    taken = "if (this.#id === null && typeof chunk.id === 'string') this.#id = chunk.id;"
    broken.write_text(source.replace(first_id_wins, taken))

    code, output = conform("run", "--exec", node(broken), "--mode", "plain", "--rule", "R9")
    assert code == 1, output
    assert "FAIL synthetic/r9_empty_id_before_real [plain]" in output
    assert re.search(r'steps\[\d+\]\.state\.id \(line \d+\): expected null, got ""', output)
    assert re.search(r'finish\.completion\.id \(finish\): expected "[^"]+", got ""', output)


def test_the_adapter_kit_passes_its_own_tests() -> None:
    # examples/kits/js: the loop (async targets), the fetch fed one event at a time, the glue.
    kit_tests = KIT.with_name("conform-kit.test.mjs")
    done = subprocess.run(
        [str(NODE), "--test", str(kit_tests)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^# pass [1-9]", done.stdout, re.M) and "# fail 0" in done.stdout
