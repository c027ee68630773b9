"""Whose code a crash happened in (`harness.drive.blame`): a client a target wraps, the adapter
around it, or a target that is its own implementation."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from harness.drive import blame
from harness.drive.blame import ADAPTER, CLIENT, TARGET, Origin, origin_of, split_origin
from harness.drive.inprocess import new_assembler, push_step
from harness.errors import TargetCrash

MINIATURES = Path(__file__).resolve().parents[1] / "miniatures.py"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of installed packages holding `fakeclient`, which the tests' adapters wrap."""
    folder = tmp_path / "site-packages"
    (folder / "fakeclient").mkdir(parents=True)
    (folder / "fakeclient" / "__init__.py").write_text(
        textwrap.dedent(
            """
            def fold(chunk):
                return chunk["choices"][0]  # line 3: KeyError for a chunk without choices

            def call_back(f, data):
                return f(data)
            """
        )
    )
    libraries, installed = blame._roots()
    monkeypatch.setattr(blame, "_roots", lambda: (libraries, (str(folder) + "/", *installed)))
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "fakeclient", raising=False)
    blame._CODES.clear()
    return folder


def _module(tmp_path: Path, name: str, source: str) -> ModuleType:
    path = tmp_path / "adapters" / f"{name}.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _origin(module: ModuleType, data: str) -> Origin | None:
    with pytest.raises(TargetCrash) as crash:
        push_step(module.Assembler(), data, 1)
    assert crash.value.details
    origin, _ = split_origin(crash.value.details)
    return origin


ADAPTER_SOURCE = """
import json
import fakeclient
CONFORM_WRAPS = {wraps}

class Assembler:
    def push(self, data):
        if data == "adapter":
            return [].pop()  # line 9: the adapter's own IndexError
        if data.startswith("[DONE]"):
            return json.loads(data)  # line 11: the stdlib raises, called by the adapter
        if data == "back":
            return fakeclient.call_back(lambda d: {{}}["x"], data)  # line 13
        return [fakeclient.fold(json.loads(data))]
"""


def test_a_crash_in_the_wrapped_package_is_the_clients(site: Path, tmp_path: Path) -> None:
    module = _module(tmp_path, "wraps_declared", ADAPTER_SOURCE.format(wraps='("fakeclient",)'))
    origin = _origin(module, "{}")
    assert origin == Origin(CLIENT, "KeyError", "fakeclient/__init__.py", 3, "fold", "fakeclient")


def test_a_crash_in_the_adapters_own_code_is_an_adapter_fault(site: Path, tmp_path: Path) -> None:
    module = _module(tmp_path, "wraps_declared2", ADAPTER_SOURCE.format(wraps='("fakeclient",)'))
    found = _origin(module, "adapter")
    assert found is not None and (found.owner, found.line) == (ADAPTER, 9)
    # The standard library raising for a call the adapter made (json.loads on `[DONE] `) is
    # the adapter's: its innermost frame of the target's own code is the adapter's.
    done = _origin(module, "[DONE] ")
    assert done is not None and (done.owner, done.exception, done.line) == (
        ADAPTER,
        "JSONDecodeError",
        11,
    )
    # A callback of the adapter's that the client calls: the adapter's frame is innermost.
    back = _origin(module, "back")
    assert back is not None and (back.owner, back.line) == (ADAPTER, 13)


def test_a_target_that_wraps_nothing_owns_its_crashes(site: Path, tmp_path: Path) -> None:
    module = _module(tmp_path, "wraps_nothing", ADAPTER_SOURCE.format(wraps="()"))
    found = _origin(module, "adapter")
    assert found is not None and found.owner == TARGET
    # fakeclient is not wrapped, so its frame is no one's: the target's frame that called it.
    inner = _origin(module, "{}")
    assert inner is not None and (inner.owner, inner.path.endswith("wraps_nothing.py")) == (
        TARGET,
        True,
    )


def test_the_origin_travels_as_the_first_line_of_the_details() -> None:
    origin = Origin(CLIENT, "TypeError", "openai/lib/_deltas.py", 52, "accumulate_delta", "openai")
    details = f"{origin.text()}\nTraceback (most recent call last):\n  ..."
    assert split_origin(details) == (origin, "Traceback (most recent call last):\n  ...")
    assert split_origin("Traceback ...") == (None, "Traceback ...")
    # A message of several lines (pydantic's) comes first: the origin line follows it.
    message = "1 validation error for AIMessageChunk\nusage_metadata\n  Input should be ..."
    assert split_origin(f"{message}\n{details}") == (
        origin,
        f"{message}\nTraceback (most recent call last):\n  ...",
    )
    assert Origin.from_json(origin.to_json()) == origin


def test_a_miniature_crash_is_its_own_and_names_its_frame() -> None:
    # The miniatures wrap conform's reference, which is no client: their crashes are theirs.
    spec = importlib.util.spec_from_file_location("_blame_miniatures", MINIATURES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_blame_miniatures"] = module
    spec.loader.exec_module(module)
    assembler = new_assembler(module.RaisesValueError)
    with pytest.raises(TargetCrash) as crash:
        push_step(assembler, '{"choices": []}', 1)
        push_step(assembler, "not json", 2)
    origin, details = split_origin(crash.value.details)
    assert origin is not None and origin.owner == TARGET
    assert origin.path == "tests/miniatures.py" or origin.path.endswith("/tests/miniatures.py")
    assert "origin:" not in details


def test_origin_of_needs_a_frame_outside_conform() -> None:
    try:
        raise ValueError("conform's own")
    except ValueError as exc:
        found: Any = origin_of(exc)
    assert found is None or found.owner in (TARGET, ADAPTER)


@pytest.mark.skipif(importlib.util.find_spec("openai") is None, reason="the clients extra")
def test_what_a_target_wraps_is_inferred_from_the_clients_it_imports(tmp_path: Path) -> None:
    module = _module(tmp_path, "infers", "import openai\nimport msgspec\nclass Assembler: ...\n")
    code = blame.code_of(module.Assembler)
    assert code is not None and code.declared is None
    assert code.wraps == {"openai"}  # msgspec is no client: it talks to no server
