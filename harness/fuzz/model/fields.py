"""Members that real OpenAI-compatible servers send and the rules do not read, with real values.

The `unknown-fields` mode invents names no server sends; these are the opposite: names and
values clients really meet, several of which *look* meaningful (`delta.reasoning`,
`delta.function_call`, `choice.text`, `usage.completion_tokens_details.reasoning_tokens`), so an
assembler that reads them gets a completion the rules do not give. Each is listed with the level
it stands at, plausible values, and where it comes from (sources as of 2026):

- OpenAI: the API reference's `ChatCompletionChunk` and openai-python's
  `types/chat/chat_completion_chunk.py` (`ChoiceDelta.function_call`, `refusal`, `audio`,
  `logprobs`, `CompletionUsage` with its details, `service_tier`, `obfuscation`), Azure OpenAI's
  `content_filter_results`.
- vLLM: `vllm/entrypoints/openai/protocol.py` (`DeltaMessage.reasoning` and the older
  `reasoning_content`, `ChatCompletionResponseStreamChoice.stop_reason`).
- SGLang: `sglang/srt/entrypoints/openai/protocol.py` (`matched_stop`).
- Ollama: `openai/openai.go` (`reasoning` in the OpenAI-compatible delta) and the native
  `/api/chat` stream (`message.thinking`, `done`, `done_reason`, `eval_count`, `created_at`).
- LM Studio: the REST API's `stats` and `model_info`.
- Hugging Face TGI: `router/src/lib.rs` (`system_fingerprint` with its version, the native
  stream's `token`, `generated_text`, `details`).
- OpenRouter: `provider`, `native_finish_reason`, `reasoning`, `reasoning_details`.
- llama-server, older and newer: `tools/server/server-task.cpp` (`__verbose`, the native
  `/completion` stream's `content`, `stop`, `id_slot`, `tokens_predicted`, `stop_type`,
  `truncated`), legacy `/v1/completions` chunks (`choice.text`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class NeighbourField:
    """A member some server sends at `level`, values it sends, and where it comes from."""

    level: str  # "top", "choice", "delta", "tool_call", "function", "usage", "error"
    name: str
    values: tuple[Any, ...]
    source: str
    feature: str  # the feature of harness.fuzz.model.features it belongs to


_N = NeighbourField
_LOGPROB = {"token": "Hi", "logprob": -0.0312, "bytes": [72, 105], "top_logprobs": []}

NEIGHBOUR_FIELDS: tuple[NeighbourField, ...] = (
    _N("top", "object", ("chat.completion.chunk",), "OpenAI; llama-server", "openai_chunk_fields"),
    _N("top", "created", (1764547200, 1700000000), "OpenAI; llama-server", "openai_chunk_fields"),
    _N(
        "top",
        "model",
        ("gpt-4o-mini-2024-07-18", "qwen3-8b-q4_k_m.gguf", "llama"),
        "OpenAI; llama-server",
        "openai_chunk_fields",
    ),
    _N(
        "top",
        "system_fingerprint",
        ("fp_44709d6fcb", "b6981-3e5e4b3c", "2.4.1-sha-d0b3a6b"),
        "OpenAI; llama-server (build); TGI (version)",
        "openai_chunk_fields",
    ),
    _N("top", "service_tier", ("default", "auto", "flex", None), "OpenAI", "openai_chunk_fields"),
    _N("top", "obfuscation", ("q7Zb", "rX"), "OpenAI (stream obfuscation)", "openai_chunk_fields"),
    _N("top", "usage", (None,), "OpenAI (usage: null before the last chunk)", "usage_details"),
    _N(
        "top",
        "provider",
        ("OpenAI", "DeepInfra", "Fireworks"),
        "OpenRouter",
        "server_specific_fields",
    ),
    _N(
        "top",
        "__verbose",
        ({"content": "Hi", "stop": False, "id_slot": 0, "tokens_predicted": 1},),
        "llama-server (verbose)",
        "server_specific_fields",
    ),
    _N(
        "top",
        "stats",
        ({"tokens_per_second": 41.2, "time_to_first_token": 0.21},),
        "LM Studio REST API",
        "server_specific_fields",
    ),
    _N(
        "top",
        "model_info",
        ({"arch": "qwen3", "quant": "Q4_K_M"},),
        "LM Studio REST API",
        "server_specific_fields",
    ),
    _N(
        "top",
        "token",
        ({"id": 9906, "text": "Hi", "logprob": -0.1, "special": False},),
        "TGI native stream",
        "server_specific_fields",
    ),
    _N(
        "top",
        "generated_text",
        (None, "Hello there"),
        "TGI native stream",
        "server_specific_fields",
    ),
    _N(
        "top",
        "details",
        (None, {"finish_reason": "eos_token", "generated_tokens": 12}),
        "TGI native stream",
        "server_specific_fields",
    ),
    _N(
        "top",
        "content",
        ("Hello", ""),
        "older llama-server (native /completion stream)",
        "server_specific_fields",
    ),
    _N(
        "top",
        "stop",
        (False, True),
        "older llama-server (native /completion stream)",
        "server_specific_fields",
    ),
    _N("top", "tokens_predicted", (7,), "older llama-server", "server_specific_fields"),
    _N(
        "top", "stop_type", ("eos", "word", "limit"), "older llama-server", "server_specific_fields"
    ),
    _N("top", "done", (False, True), "Ollama native stream", "server_specific_fields"),
    _N("top", "done_reason", ("stop", "length"), "Ollama native stream", "server_specific_fields"),
    _N("top", "eval_count", (42,), "Ollama native stream", "server_specific_fields"),
    _N(
        "top",
        "created_at",
        ("2026-01-05T10:00:00.000000Z",),
        "Ollama native stream",
        "server_specific_fields",
    ),
    _N(
        "top",
        "message",
        ({"role": "assistant", "content": "Hi", "thinking": "Hmm"},),
        "Ollama native stream",
        "delta_thinking",
    ),
    _N("choice", "index", (0,), "OpenAI; llama-server", "openai_chunk_fields"),
    _N(
        "choice",
        "logprobs",
        (None, {"content": [_LOGPROB], "refusal": None}),
        "OpenAI; llama-server (logprobs)",
        "logprobs",
    ),
    _N(
        "choice",
        "text",
        ("Hello", " world", ""),
        "legacy completions; older llama-server; TGI",
        "choice_text",
    ),
    _N(
        "choice",
        "message",
        ({"role": "assistant", "content": "Hi there"}, {"role": "assistant", "content": None}),
        "OpenAI (a response that is not streamed; some proxies send it in chunks too)",
        "choice_text",
    ),
    _N("choice", "stop_reason", (None, 151645, "</s>"), "vLLM", "server_specific_fields"),
    _N("choice", "matched_stop", (None, 151645, "<|im_end|>"), "SGLang", "server_specific_fields"),
    _N(
        "choice",
        "native_finish_reason",
        ("stop", "STOP", "end_turn", "max_tokens"),
        "OpenRouter",
        "server_specific_fields",
    ),
    _N(
        "choice",
        "content_filter_results",
        ({"hate": {"filtered": False, "severity": "safe"}},),
        "Azure OpenAI",
        "server_specific_fields",
    ),
    _N("delta", "role", ("assistant",), "OpenAI; llama-server", "delta_role_refusal"),
    _N("delta", "refusal", (None, "I can't help with that."), "OpenAI", "delta_role_refusal"),
    _N(
        "delta",
        "reasoning",
        ("Let me think.", " The user wants"),
        "vLLM; OpenRouter; Ollama (OpenAI compatibility)",
        "delta_reasoning",
    ),
    _N(
        "delta",
        "reasoning_details",
        ([{"type": "reasoning.text", "text": "Thinking"}],),
        "OpenRouter",
        "delta_reasoning",
    ),
    _N(
        "delta",
        "thinking",
        ("Hmm, ", "the answer is 4"),
        "Ollama; Anthropic-style proxies",
        "delta_thinking",
    ),
    _N(
        "delta",
        "function_call",
        ({"name": "get_weather", "arguments": '{"city":'}, {"arguments": '"Paris"}'}),
        "OpenAI (deprecated function calling)",
        "delta_function_call",
    ),
    _N(
        "delta",
        "audio",
        ({"id": "audio_abc", "data": "UklGRg==", "transcript": "Hi", "expires_at": 1764550800},),
        "OpenAI (audio output)",
        "openai_chunk_fields",
    ),
    _N("tool_call", "type", ("function",), "OpenAI; llama-server", "tool_call_type"),
    _N(
        "usage",
        "prompt_tokens_details",
        ({"cached_tokens": 0, "audio_tokens": 0},),
        "OpenAI",
        "usage_details",
    ),
    _N(
        "usage",
        "completion_tokens_details",
        (
            {
                "reasoning_tokens": 128,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        ),
        "OpenAI",
        "usage_details",
    ),
    _N(
        "error",
        "type",
        ("server_error", "invalid_request_error", "exceed_context_size_error"),
        "llama-server; OpenAI",
        "server_error",
    ),
    _N(
        "error",
        "code",
        (500, 400, "context_length_exceeded"),
        "llama-server; OpenAI",
        "server_error",
    ),
    _N("error", "param", (None,), "OpenAI", "server_error"),
    _N("error", "n_prompt_tokens", (8193,), "llama-server (context exceeded)", "server_error"),
    _N("error", "n_ctx", (8192,), "llama-server (context exceeded)", "server_error"),
)

#: OpenAI-defined members the rules do not read, each with values of a type the OpenAI schema
#: does not allow for it (I5: a client may ignore them or fail with protocol).
WRONG_TYPED_KNOWN: tuple[NeighbourField, ...] = (
    _N("top", "object", (7, None), "OpenAI chunk schema: a string", "wrong_typed_known_field"),
    _N("top", "created", ("now",), "OpenAI chunk schema: an integer", "wrong_typed_known_field"),
    _N("top", "model", (3,), "OpenAI chunk schema: a string", "wrong_typed_known_field"),
    _N(
        "top",
        "usage",
        ("none", 1),
        "OpenAI chunk schema: an object or null",
        "wrong_typed_known_field",
    ),
    _N(
        "choice",
        "index",
        ("zero", -1.5, None),
        "OpenAI chunk schema: an integer",
        "wrong_typed_known_field",
    ),
    _N(
        "choice",
        "logprobs",
        (7, "x"),
        "OpenAI chunk schema: an object or null",
        "wrong_typed_known_field",
    ),
    _N(
        "delta",
        "role",
        (7, "robot"),
        "OpenAI chunk schema: one of its role names",
        "wrong_typed_known_field",
    ),
    _N(
        "delta",
        "refusal",
        (0, []),
        "OpenAI chunk schema: a string or null",
        "wrong_typed_known_field",
    ),
    _N(
        "tool_call", "type", (5, "fn"), 'OpenAI chunk schema: "function"', "wrong_typed_known_field"
    ),
)

LEVELS: tuple[str, ...] = ("top", "choice", "delta", "tool_call", "function", "usage", "error")


@functools.cache
def at_level(level: str, *, wrong_typed: bool = False) -> tuple[NeighbourField, ...]:
    """The neighbour fields of one level (the wrong-typed known ones with `wrong_typed`)."""
    fields = WRONG_TYPED_KNOWN if wrong_typed else NEIGHBOUR_FIELDS
    return tuple(f for f in fields if f.level == level)
