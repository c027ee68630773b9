"""The client adapters (`examples/clients/`) still fail exactly as their baselines say.

Each adapter wraps a real client (openai-python, litellm); its expected-failures file lists what
that client gets wrong or does not check. The gate passes only when every listed failure still
fails and nothing else does, so neither an adapter nor a baseline can rot unnoticed. Without the
client installed (`pip install -e '.[clients]'`) the test is skipped, except in CI (CI=true),
where a missing client is a failure.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest

from tests.conftest import invoke

CLIENTS = Path(__file__).resolve().parents[2] / "examples" / "clients"
# (the module the adapter needs, the adapter file, extra `conform run` options)
ADAPTERS = {
    "openai": ("openai", "openai_adapter.py", []),
    "litellm": ("litellm", "litellm_adapter.py", ["--timeout", "60"]),
}


def _require(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{module} is not installed; CI installs '.[clients]'")
        pytest.skip(f"{module} is not installed (pip install -e '.[clients]')")


@pytest.mark.parametrize("client", sorted(ADAPTERS))
def test_the_adapter_fails_exactly_its_baseline(
    client: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module, adapter, options = ADAPTERS[client]
    _require(module)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network when importing
    baseline = CLIENTS / f"{client}.xfail"
    result = invoke(
        "run", f"{CLIENTS / adapter}:Assembler", "--xfail", str(baseline), "-q", "-j", "2", *options
    )
    assert result.exit_code == 0, result.output
    totals = re.search(r"(\d+) passed, (\d+) xfailed \(", result.output)
    assert totals is not None, result.output
    assert int(totals.group(1)) > 0 and int(totals.group(2)) > 0, result.output
