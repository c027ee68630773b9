"""The client adapters (`examples/clients/`) still fail exactly as their baselines say.

Each adapter wraps a real client (openai-python, litellm, LangChain, Pydantic AI, openai-node, the
Vercel AI SDK); its expected-failures file lists what that client gets wrong or does not check.
The gate passes only when every listed failure still fails and nothing else does, so neither an
adapter nor a baseline can rot unnoticed. Without the client installed (`pip install -e
'.[clients]'`, `npm ci` in examples/clients/node) the test is skipped, except in CI (CI=true),
where a missing client is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import invoke

CLIENTS = Path(__file__).resolve().parents[2] / "examples" / "clients"
NODE_CLIENTS = CLIENTS / "node"


@dataclass(frozen=True)
class Client:
    """One shipped adapter: what it needs, how conform runs it, and its baseline."""

    label: str
    baseline: str
    python_module: str | None = None  # the module the adapter imports (a Python client)
    adapter: str | None = None  # examples/clients/<adapter>:Assembler
    script: str | None = None  # examples/clients/node/<script>, run with node (a Node client)
    package: str | None = None  # the npm package it needs in examples/clients/node/node_modules

    def target(self) -> list[str]:
        """How the gate runs it: in one worker process, which runs every case (the client
        imported and made once; more workers would only add starts on a machine whose cores the
        other tests already use). Not `--in-process`: a client's imports and globals would then
        share the pytest worker with every other test (pydantic models built twice failed there),
        and a client that crashes would take the pytest worker down."""
        if self.adapter is not None:
            return [f"{CLIENTS / self.adapter}:Assembler", "-j", "1"]
        node = shutil.which("node") or "node"
        return ["--exec", shlex.join([node, str(NODE_CLIENTS / str(self.script))]), "-j", "1"]


CLIENT_LIST = [
    Client("openai-python", "openai.xfail", python_module="openai", adapter="openai_adapter.py"),
    Client("litellm", "litellm.xfail", python_module="litellm", adapter="litellm_adapter.py"),
    Client(
        "langchain",
        "langchain.xfail",
        python_module="langchain_openai",
        adapter="langchain_adapter.py",
    ),
    Client(
        "pydantic-ai",
        "pydantic-ai.xfail",
        python_module="pydantic_ai",
        adapter="pydantic_ai_adapter.py",
    ),
    Client("openai-node", "openai-node.xfail", script="openai-node.mjs", package="openai"),
    Client("vercel-ai", "vercel-ai.xfail", script="vercel-ai.mjs", package="ai"),
]
CLIENTS_BY_LABEL = {client.label: client for client in CLIENT_LIST}


def _missing(what: str, how: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is not installed; CI installs it ({how})")
    pytest.skip(f"{what} is not installed ({how})")


def _require(client: Client) -> None:
    if client.python_module is not None:
        if importlib.util.find_spec(client.python_module) is None:
            _missing(client.python_module, "pip install -e '.[clients]'")
        return
    if shutil.which("node") is None:
        _missing("node", "apt-get install nodejs")
    if not (NODE_CLIENTS / "node_modules" / str(client.package) / "package.json").is_file():
        _missing(f"npm package {client.package}", "npm ci in examples/clients/node")


@pytest.mark.parametrize("label", sorted(CLIENTS_BY_LABEL))
def test_the_adapter_fails_exactly_its_baseline(
    label: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    client = CLIENTS_BY_LABEL[label]
    _require(client)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network when importing
    baseline = CLIENTS / client.baseline
    report = tmp_path / "report.json"
    result = invoke(
        "run", *client.target(), "--xfail", str(baseline), "-q", "--timeout", "60",
        "--json", str(report),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    totals = re.search(r"(\d+) passed, (\d+) xfailed \(", result.output)
    assert totals is not None, result.output
    assert int(totals.group(1)) > 0 and int(totals.group(2)) > 0, result.output
    # Hundreds of expected failures, far fewer causes: each a problem with its reproducer, none
    # of them the adapter's own fault. Those on valid input (what a maintainer reads first) are
    # few; invalid input a client accepts is one problem per kind of input the rules refuse (a
    # field the client does not check), so there are as many of those as the suite has kinds the
    # client lets through.
    problems = json.loads(report.read_text(encoding="utf-8"))["problems"]
    failing = int(totals.group(2))
    valid = [p for p in problems if p["category"] in ("valid", "valid-under-mutation")]
    assert len(problems) > 0 and len(problems) * 4 < failing, [p["title"] for p in problems]
    assert len(valid) <= 30, [p["title"] for p in valid]
    assert not [p["title"] for p in problems if p["adapter_fault"]]
    # Pasted anywhere, a command runs from the run's folder: an --exec command is relative to it.
    assert all(p["command"].split(" && ")[-1].startswith("conform run ") for p in problems)
    assert all(p["cases"] for p in problems)


def test_every_shipped_adapter_is_gated() -> None:
    """A new adapter in examples/clients/ without a gate here would rot unnoticed."""
    python = {p.name for p in CLIENTS.glob("*_adapter.py")}
    node = {p.name for p in NODE_CLIENTS.glob("*.mjs")}
    assert python == {c.adapter for c in CLIENT_LIST if c.adapter}
    assert node == {c.script for c in CLIENT_LIST if c.script}
    for client in CLIENT_LIST:
        assert (CLIENTS / client.baseline).is_file(), client.baseline


def test_the_node_clients_are_pinned_exactly() -> None:
    """package.json names exact versions, and the lock file holds the same ones."""
    import json

    manifest = json.loads((NODE_CLIENTS / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((NODE_CLIENTS / "package-lock.json").read_text(encoding="utf-8"))
    for name, version in manifest["dependencies"].items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), (name, version)
        assert lock["packages"][f"node_modules/{name}"]["version"] == version, name
