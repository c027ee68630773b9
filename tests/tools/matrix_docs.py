"""Regenerate docs/matrix.md: the matrix of the reference, the examples and the client adapters.

    pip install -e '.[dev,clients]' && python tests/tools/matrix_docs.py

Builds the Go and Rust examples (go, cargo offline with Debian's serde crates, as
examples/go/README.md and examples/rust/README.md say), runs

    conform matrix reference:Assembler python=examples/python/simple_assembler.py:Assembler
        openai-python=examples/clients/openai_adapter.py:Assembler
        litellm=examples/clients/litellm_adapter.py:Assembler
        langchain=examples/clients/langchain_adapter.py:Assembler
        pydantic-ai=examples/clients/pydantic_ai_adapter.py:Assembler
        --exec 'js=node examples/js/assembler.mjs' --exec go=DIR/conform-go
        --exec rust=DIR/conform-rust-example
        --exec 'openai-node=node examples/clients/node/openai-node.mjs'
        --exec 'vercel-ai=node examples/clients/node/vercel-ai.mjs'
        --xfail LABEL=examples/clients/LABEL.xfail for each client (openai-python: openai.xfail)
        --timeout 60 --html ... --json ... --markdown ...

over the whole shipped suite in every mode, then opens the page in headless Chromium
(tests/reports/chromium.py) to time its load and save docs/matrix.png, and writes the Markdown table
and the figures into docs/matrix.md between its `matrix:begin` and `matrix:end` markers. The
examples in Python, JavaScript, Go and Rust get no --xfail: they conform (their own .xfail files
are for --strict); the clients' are their baselines. `--out DIR` keeps the page, JSON and
Markdown (default: a temporary folder); `--baseline FILE` marks what changed since a matrix JSON.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.reports.chromium import Chromium  # noqa: E402

DOC = ROOT / "docs" / "matrix.md"
SHOT = ROOT / "docs" / "matrix.png"
RUST_TARGET = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "conform" / "rust-target"
)


def build(folder: Path) -> tuple[Path, Path]:
    """The Go and Rust examples' binaries, built into `folder`."""
    go = folder / "conform-go"
    subprocess.run(["go", "build", "-o", str(go), "."], cwd=ROOT / "examples/go", check=True)
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo/bin/cargo")
    env = {**os.environ, "CARGO_TARGET_DIR": str(RUST_TARGET)}
    subprocess.run(
        [cargo, "build", "--offline", "--release", "--quiet"],
        cwd=ROOT / "examples/rust",
        env=env,
        check=True,
    )
    rust = folder / "conform-rust-example"
    shutil.copy2(RUST_TARGET / "release" / "conform-rust-example", rust)
    return go, rust


def run_matrix(out: Path, go: Path, rust: Path, baseline: Path | None) -> list[str]:
    command = [
        "conform", "matrix",
        "reference:Assembler",
        "python=examples/python/simple_assembler.py:Assembler",
        "openai-python=examples/clients/openai_adapter.py:Assembler",
        "litellm=examples/clients/litellm_adapter.py:Assembler",
        "langchain=examples/clients/langchain_adapter.py:Assembler",
        "pydantic-ai=examples/clients/pydantic_ai_adapter.py:Assembler",
        "--exec", "js=node examples/js/assembler.mjs",
        "--exec", f"go={go}",
        "--exec", f"rust={rust}",
        "--exec", "openai-node=node examples/clients/node/openai-node.mjs",
        "--exec", "vercel-ai=node examples/clients/node/vercel-ai.mjs",
        "--xfail", "openai-python=examples/clients/openai.xfail",
        "--xfail", "litellm=examples/clients/litellm.xfail",
        "--xfail", "langchain=examples/clients/langchain.xfail",
        "--xfail", "pydantic-ai=examples/clients/pydantic-ai.xfail",
        "--xfail", "openai-node=examples/clients/openai-node.xfail",
        "--xfail", "vercel-ai=examples/clients/vercel-ai.xfail",
        "--timeout", "60",
        "--html", str(out / "matrix.html"),
        "--json", str(out / "matrix.json"),
        "--markdown", str(out / "matrix.md"),
    ]  # fmt: skip
    if baseline is not None:
        command += ["--baseline", str(baseline)]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, check=False)
    print(f"conform matrix exited {done.returncode} in {time.perf_counter() - started:.1f} s")
    if done.returncode not in (0, 1):
        raise SystemExit(done.returncode)
    return command


def measure_and_shoot(page: Path, shot: Path) -> tuple[float, float]:
    """Median load time (ms, to the end of the load event) over five loads, the time a click
    takes to open the details (ms), and the screenshot."""
    with Chromium() as browser:
        browser.size(1280, 1000)
        loads = []
        for _ in range(5):
            browser.open(page)
            loads.append(
                browser.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
            )
        box = browser.evaluate(
            "(() => { const td = document.querySelector('#matrix tbody[data-rule=R2] td.s.x');"
            " td.scrollIntoView({block: 'center'}); const r = td.getBoundingClientRect();"
            " return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()"
        )
        began = time.perf_counter()
        browser.mouse("click", box["x"], box["y"])
        assert not browser.evaluate("document.getElementById('panel').hidden")
        click_ms = (time.perf_counter() - began) * 1000
        # The picture: the scores, then the cases where some target does not pass, one hovered.
        browser.open(page)
        browser.size(1280, 1350)
        browser.evaluate("document.getElementById('diff').click()")
        box = browser.evaluate(
            "(() => { const td = document.querySelectorAll('#matrix td.s.x')[3];"
            " const r = td.getBoundingClientRect();"
            " return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()"
        )
        browser.mouse("mouseMoved", box["x"], box["y"])
        browser.screenshot(shot)
    return statistics.median(loads), click_ms


def update_doc(table: str, figures: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    block = f"<!-- matrix:begin -->\n{table}\n{figures}\n<!-- matrix:end -->"
    new, count = re.subn(r"<!-- matrix:begin -->.*?<!-- matrix:end -->", block, text, flags=re.S)
    if count != 1:
        raise SystemExit(f"{DOC} needs one matrix:begin/matrix:end block")
    DOC.write_text(new, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="keep the page, JSON and Markdown here")
    parser.add_argument("--baseline", type=Path, help="a matrix JSON to mark changes against")
    parser.add_argument(
        "--reuse", action="store_true", help="with --out: redraw from the matrix already there"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="conform-matrix-") as temp:
        out = args.out or Path(temp)
        out.mkdir(parents=True, exist_ok=True)
        if not (args.reuse and (out / "matrix.html").is_file()):
            go, rust = build(Path(temp))
            run_matrix(out, go, rust, args.baseline)
        page = out / "matrix.html"
        load_ms, click_ms = measure_and_shoot(page, SHOT)
        size = page.stat().st_size
        figures = (
            f"The page: {size / 1024:.0f} KiB, {len(page.read_text().splitlines())} lines; in "
            f"headless Chromium it loads in {load_ms:.0f} ms (median of five, to the end of the "
            f"load event) and a click opens a cell's details in {click_ms:.0f} ms; the JSON is "
            f"{(out / 'matrix.json').stat().st_size / 1024:.0f} KiB."
        )
        update_doc((out / "matrix.md").read_text(encoding="utf-8").rstrip(), figures)
        print(figures)
        print(f"wrote {DOC.relative_to(ROOT)} and {SHOT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
