"""The member names an OpenAI-compatible server may send in a streamed chunk, with their sources.

The `unknown-fields` mode must only add names that no such server sends: a real field with a
wrong-typed value (`logprobs: 7`) is a malformed chunk, which a client may rightly reject, not an
unknown field it must ignore. This module is the one list of names that are *not* unknown, each
with where it comes from; `harness.check.modes` checks its invented names against it, and
tests/check/test_modes.py checks that no injected name is here.

Sources (as of 2026):

- llama-server: llama.cpp `tools/server/server-task.cpp` (`to_json_oaicompat_chat_stream`,
  `result_timings::to_json`, `result_prompt_progress::to_json`, `completion_token_output`'s
  probabilities) and `tools/server/utils.hpp` (`format_error_response`), verbose and debug
  fields included.
- OpenAI: the `ChatCompletionChunk` schema of the OpenAI API reference and openai-python's
  `types/chat/chat_completion_chunk.py` (`Choice`, `ChoiceDelta`, `ChoiceDeltaToolCall`,
  `ChoiceLogprobs`, `CompletionUsage`), with the older `function_call` and audio deltas.
- Other OpenAI-compatible servers whose chunks clients meet: vLLM (`stop_reason`, `reasoning`),
  DeepSeek (`reasoning_content`), OpenRouter (`provider`, `native_finish_reason`, `reasoning`),
  SGLang (`matched_stop`).

The members among these that OpenAI's chunk schema defines and the rules do not read have a type
there: `OPENAI_MEMBERS` (kept in `reference.openai`, which checks them under I5 `protocol`) gives
each its JSON type, by where it stands, with its source. A wrong type in one of them is I5, never
R7; `unknown-fields` never adds one (it adds only invented names).
"""

from __future__ import annotations

from reference.openai import MEMBERS as OPENAI_MEMBERS
from reference.openai import Member

__all__ = ["HOSTILE_KEYS", "KNOWN_NAMES", "OPENAI_MEMBERS", "Member"]

#: Each known name, and the schemas that send it (at some level of the chunk).
KNOWN_NAMES: dict[str, str] = {
    # the chunk
    "id": "OpenAI chunk; llama-server",
    "object": "OpenAI chunk (chat.completion.chunk); llama-server",
    "created": "OpenAI chunk; llama-server",
    "model": "OpenAI chunk; llama-server",
    "system_fingerprint": "OpenAI chunk; llama-server",
    "service_tier": "OpenAI chunk",
    "obfuscation": "OpenAI chunk (stream obfuscation)",
    "choices": "OpenAI chunk; llama-server",
    "usage": "OpenAI chunk (stream_options.include_usage); llama-server",
    "timings": "llama-server (result_timings)",
    "prompt_progress": "llama-server (return_progress)",
    "error": "llama-server (error in stream); OpenAI error object",
    "__verbose": "llama-server (verbose mode)",
    "provider": "OpenRouter",
    # a choice
    "index": "OpenAI choice and tool call; llama-server",
    "delta": "OpenAI choice; llama-server",
    "finish_reason": "OpenAI choice; llama-server",
    "native_finish_reason": "OpenRouter choice",
    "stop_reason": "vLLM choice",
    "matched_stop": "SGLang choice",
    "logprobs": "OpenAI choice; llama-server (logprobs request option)",
    # a delta
    "role": "OpenAI delta; llama-server",
    "content": "OpenAI delta and logprobs; llama-server",
    "reasoning_content": "llama-server delta; DeepSeek",
    "reasoning": "vLLM; OpenRouter delta",
    "refusal": "OpenAI delta and logprobs",
    "tool_calls": "OpenAI delta; llama-server",
    "function_call": "OpenAI delta (deprecated)",
    "audio": "OpenAI delta (audio output)",
    # a tool call and its function
    "type": "OpenAI tool call (function); llama-server; error object",
    "function": "OpenAI tool call; llama-server",
    "name": "OpenAI function; llama-server",
    "arguments": "OpenAI function; llama-server",
    # audio delta
    "data": "OpenAI audio delta",
    "transcript": "OpenAI audio delta",
    "expires_at": "OpenAI audio delta",
    # logprobs
    "token": "OpenAI token logprob; llama-server",
    "logprob": "OpenAI token logprob; llama-server",
    "bytes": "OpenAI token logprob; llama-server",
    "top_logprobs": "OpenAI token logprob; llama-server",
    "n_probs": "llama-server (request option echoed in verbose output)",
    "probs": "llama-server (completion probabilities)",
    "tok_str": "llama-server (completion probabilities)",
    "prob": "llama-server (completion probabilities)",
    # usage
    "prompt_tokens": "OpenAI usage; llama-server",
    "completion_tokens": "OpenAI usage; llama-server",
    "total_tokens": "OpenAI usage; llama-server",
    "prompt_tokens_details": "OpenAI usage",
    "completion_tokens_details": "OpenAI usage",
    "cached_tokens": "OpenAI usage details",
    "audio_tokens": "OpenAI usage details",
    "reasoning_tokens": "OpenAI usage details",
    "accepted_prediction_tokens": "OpenAI usage details",
    "rejected_prediction_tokens": "OpenAI usage details",
    # timings (llama-server result_timings, the eleven of R9)
    "cache_n": "llama-server timings",
    "prompt_n": "llama-server timings",
    "prompt_ms": "llama-server timings",
    "prompt_per_token_ms": "llama-server timings",
    "prompt_per_second": "llama-server timings",
    "predicted_n": "llama-server timings",
    "predicted_ms": "llama-server timings",
    "predicted_per_token_ms": "llama-server timings",
    "predicted_per_second": "llama-server timings",
    "draft_n": "llama-server timings (speculative decoding)",
    "draft_n_accepted": "llama-server timings (speculative decoding)",
    # prompt progress
    "total": "llama-server prompt_progress",
    "cache": "llama-server prompt_progress",
    "processed": "llama-server prompt_progress",
    "time_ms": "llama-server prompt_progress",
    # error
    "code": "llama-server error; OpenAI error",
    "message": "llama-server error; OpenAI error",
    "param": "OpenAI error",
    "n_prompt_tokens": "llama-server error (context exceeded)",
    "n_ctx": "llama-server error (context exceeded)",
}

#: Key names that mean something to a language's objects rather than to JSON: JavaScript's
#: `Object.prototype` members and Python's dunder attributes. A client that copies chunk members
#: onto plain objects or attributes (`obj[key] = value`, `setattr`) can be hijacked by them; the
#: `hostile-keys` mode adds them (none is a name any server sends).
HOSTILE_KEYS: tuple[str, ...] = (
    "__proto__",
    "constructor",
    "prototype",
    "toString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
    "__class__",
    "__dict__",
    "__init__",
    "__getattr__",
)
