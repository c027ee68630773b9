"""In-process crash reports: each way a Python target can break, run with `--in-process`, gives a
crash of its case with a message naming the call, and the target's own frames (not conform's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.drive.inprocess import load_target
from harness.errors import TargetError
from tests.conftest import invoke

CASE = "llama-server/content_stop"
TARGETS = """
import reference


class RaisesInInit(reference.Assembler):
    def __init__(self):
        raise ValueError("no config")


def returns_none():
    return None


class RaisesInPush(reference.Assembler):
    def push(self, data):
        raise KeyError("choices")


class UnreadableEvents(reference.Assembler):
    def push(self, data):
        super().push(data)
        return [object()]


class StateRaises(reference.Assembler):
    @property
    def reasoning_tokens(self):
        raise RuntimeError("no tokens yet")


class RaisesInFinish(reference.Assembler):
    def finish(self, thinking_capped):
        raise ZeroDivisionError("finish")


class UnreadableCompletion(reference.Assembler):
    def finish(self, thinking_capped):
        return 42


class CompletionPropertyRaises(reference.Assembler):
    def finish(self, thinking_capped):
        real = super().finish(thinking_capped)

        class Completion:
            def __getattr__(self, name):
                return getattr(real, name)

            @property
            def content(self):
                raise RuntimeError("lazy content")

        return Completion()
"""


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("targets") / "targets.py"
    path.write_text(TARGETS, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("RaisesInInit", "crashed at new: creating the assembler raised ValueError: no config"),
        ("returns_none", "crashed at new: creating the assembler returned None, not an assembler"),
        ("RaisesInPush", "crashed at step 0 (line 17): push raised KeyError: 'choices'"),
        ("UnreadableEvents", "crashed at step 0 (line 17): push returned something conform cannot "
         "read: "),
        ("StateRaises", "crashed at step 0 (line 17): reading the state raised RuntimeError: no "
         "tokens yet"),
        ("RaisesInFinish", "crashed at finish: finish raised ZeroDivisionError: finish"),
        ("UnreadableCompletion", "crashed at finish: finish returned something conform cannot "
         "read: "),
        ("CompletionPropertyRaises", "crashed at finish: reading the completion raised "
         "RuntimeError: lazy content"),
    ],
)  # fmt: skip
def test_each_crash_is_reported_with_the_call_and_the_targets_frames(
    targets: Path, name: str, message: str
) -> None:
    result = invoke("run", f"{targets}:{name}", "--in-process", "--mode", "plain", "-k", CASE)
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"CRASH {CASE} [plain]")
    assert message in result.output, result.output
    if "raised" in message and "returned" not in message:
        assert f'File "{targets}"' in result.output  # the target's frame
        assert "harness/drive" not in result.output  # not conform's own
    assert result.output.splitlines()[-1].startswith("totals: 1 crashed (1 runs")


@pytest.mark.parametrize(
    ("source", "spec", "message"),
    [
        ("raise ImportError('needs numpy')\n", "{file}:A",
         "importing '{file}' failed: ImportError: needs numpy"),
        ("A = 3\n", "{file}:A", "'{file}:A' is a int, not a class or factory"),
        ("A = 3\n", "{file}:B", "'{file}' has no attribute 'B'"),
        ("", "{file}", "bad target '{file}': expected MODULE:ATTRIBUTE"),
        ("", "{folder}/missing.py:A", "no such file: {folder}/missing.py"),
    ],
)  # fmt: skip
def test_a_target_that_cannot_load_says_why(
    tmp_path: Path, source: str, spec: str, message: str
) -> None:
    file = tmp_path / "target.py"
    file.write_text(source, encoding="utf-8")
    fill = {"file": str(file), "folder": str(tmp_path)}
    with pytest.raises(TargetError) as caught:
        load_target(spec.format(**fill))
    assert str(caught.value).startswith(message.format(**fill))


def test_a_module_that_fails_to_import_is_named_with_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "brokenpkg.py").write_text("import no_such_dependency_here\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(TargetError) as caught:
        load_target("brokenpkg:A")
    assert str(caught.value).startswith(
        "importing 'brokenpkg' failed: ModuleNotFoundError: No module named 'no_such_dependency"
    )
    assert 'python -c "import brokenpkg"' in str(caught.value)
