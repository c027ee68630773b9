"""The catalogue of stream features the model of llama-server streams knows.

Each feature is one thing a streamed chat completion can hold (a run of reasoning text, more than
ten parallel tool calls, a field a neighbouring server sends, a payload that is not JSON), with the
rules of docs/spec.md it exercises. The model (`harness.fuzz.model.streams`) tags every stream it
builds with the features it used, `conform fuzz --save` writes them into the recording's comment
lines, and docs/spec.md's feature table lists, for each feature here, the shipped cases that cover
it.

`group` says what kind of feature it is: `structure` (which chunks come in which order), `field`
(a member some real server sends that the rules do not read), `value` (an edge value of a field
that is read), `sse` (the event-stream framing), or `broken` (the one place a stream is broken:
each shape error of R6, or a rule that fails the stream on purpose).

The corners mined from clients' bugs (issue 34) are in `harness.fuzz.model.corners`. `drawn` is
False for a feature the shipped corpus holds and the model does not draw yet (none today): the
feature table counts its cases, the guide and the model's tests leave it out.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.fuzz.model.corners import CORNERS


@dataclass(frozen=True, slots=True)
class Feature:
    """One stream feature: its name, what it is in one line, the rules it exercises, and whether
    the model draws it."""

    name: str
    description: str
    rules: tuple[str, ...]
    group: str
    drawn: bool = True


GROUPS: tuple[str, ...] = ("structure", "field", "value", "sse", "broken")

_F = Feature


#: Every feature the model knows, grouped as `GROUPS` orders them.
_DRAWN: tuple[Feature, ...] = (
    # --- structure
    _F(
        "role_chunk",
        'a first chunk with delta.role "assistant" and no text',
        ("R1", "R7"),
        "structure",
    ),
    _F(
        "role_chunk_later",
        'a chunk with delta.role "assistant" after text or tool calls (no new message)',
        ("R1", "R7"),
        "structure",
    ),
    _F(
        "reasoning_run",
        "reasoning_content text split over several chunks",
        ("R1", "R2", "R4"),
        "structure",
    ),
    _F("content_run", "answer text split over several chunks", ("R1", "R2"), "structure"),
    _F(
        "reasoning_then_content",
        "answer text after reasoning text (in_reasoning turns false)",
        ("R1", "R4"),
        "structure",
    ),
    _F(
        "reasoning_after_content",
        "reasoning text again after answer text",
        ("R2", "R4"),
        "structure",
    ),
    _F(
        "reasoning_and_content_in_one_chunk",
        "one delta with both reasoning_content and content",
        ("R1",),
        "structure",
    ),
    _F(
        "empty_text",
        'content or reasoning_content that is "" or null (no event)',
        ("R1", "R2"),
        "structure",
    ),
    _F(
        "empty_reasoning_after_content",
        'reasoning_content "" after answer text',
        ("R1", "R4"),
        "structure",
    ),
    _F(
        "repeated_text",
        "a text piece equal to the one before, or the whole text so far and more (a snapshot)",
        ("R1", "R2"),
        "structure",
    ),
    _F(
        "tool_call",
        "one tool call: id and name in its first piece, arguments in pieces",
        ("R1", "R2"),
        "structure",
    ),
    _F("tool_calls_parallel", "two to ten tool calls in one completion", ("R1", "R2"), "structure"),
    _F(
        "tool_calls_many",
        "more than ten tool calls (index 10 comes after 9)",
        ("R2", "R6"),
        "structure",
    ),
    _F(
        "tool_calls_interleaved",
        "pieces of several tool calls alternate",
        ("R1", "R2"),
        "structure",
    ),
    _F(
        "tool_calls_out_of_order",
        "pieces of existing calls arrive out of index order, in one chunk or across chunks",
        ("R2", "R6"),
        "structure",
    ),
    _F(
        "tool_call_split_anywhere",
        "arguments cut at any character, empty pieces included",
        ("R1", "R2"),
        "structure",
    ),
    _F(
        "tool_call_repeated_id_name",
        "later pieces repeat or change the id and name (ignored)",
        ("R1", "R2"),
        "structure",
    ),
    _F(
        "tool_call_late_id_name",
        "the id or name arrives in a later piece than the first",
        ("R2", "R5"),
        "structure",
    ),
    _F(
        "tool_call_without_function",
        "a tool-call piece without function (only its index, or its index and id)",
        ("R1", "R2"),
        "structure",
    ),
    _F(
        "arguments_absent_or_null",
        'a tool-call piece whose arguments are absent or null (its event carries "")',
        ("R1", "R2"),
        "structure",
    ),
    _F("text_between_tool_calls", "answer text between two tool calls", ("R1", "R4"), "structure"),
    _F(
        "reasoning_between_tool_calls",
        "reasoning text between two tool calls",
        ("R1", "R4"),
        "structure",
    ),
    _F(
        "tool_call_cut_by_length",
        'a tool call whose arguments are cut by finish_reason "length"',
        ("R2", "R5"),
        "structure",
    ),
    _F(
        "finish_chunk_with_text",
        "text or a tool-call piece in the chunk with finish_reason",
        ("R1", "R5"),
        "structure",
    ),
    _F(
        "finish_reason_repeated",
        "several non-null finish reasons: the latest wins",
        ("R5",),
        "structure",
    ),
    _F(
        "choice_without_delta",
        "the finish reason in a choice whose delta is null or absent",
        ("R5", "R7"),
        "structure",
    ),
    _F(
        "chunks_after_finish",
        "chunks after the finish reason (timings, text)",
        ("R3", "R7"),
        "structure",
    ),
    _F("usage_chunk", 'a last chunk with usage and "choices": []', ("R7",), "structure"),
    _F(
        "usage_beside_choices",
        "usage in a chunk that also has choices (and text or the finish reason)",
        ("R7",),
        "structure",
    ),
    _F(
        "choices_absent",
        "a chunk without choices (timings or usage only)",
        ("R7", "I5"),
        "structure",
    ),
    _F(
        "several_choices",
        "a chunk with more than one choice, or a choice whose index is not 0 (OpenAI's n)",
        ("R1", "I7"),
        "structure",
    ),
    _F(
        "null_fields",
        'a read field that may be absent written null ("error", "prompt_progress", "id", '
        '"tool_calls", "choices")',
        ("R7",),
        "structure",
    ),
    _F("timings", "timings objects, each replacing the last", ("R3", "R9"), "structure"),
    _F(
        "timings_partial",
        "a timings object with some of its fields absent or null",
        ("R3", "R9"),
        "structure",
    ),
    _F(
        "timings_null",
        'a chunk with "timings": null after timings (absent: the latest stays)',
        ("R3",),
        "structure",
    ),
    _F(
        "predicted_n_resets",
        "reasoning beside timings whose predicted_n is 0 after a larger one",
        ("R4",),
        "structure",
    ),
    _F(
        "reasoning_without_timings",
        "reasoning in a chunk without timings after one with",
        ("R4",),
        "structure",
    ),
    _F(
        "predicted_n_null",
        "reasoning text while predicted_n is null or absent",
        ("R4",),
        "structure",
    ),
    _F(
        "prompt_progress",
        "prompt_progress objects (a progress event first in their chunk)",
        ("R1", "R9"),
        "structure",
    ),
    _F(
        "id_late",
        'the completion id only in a later chunk, or "" before it',
        ("R9", "R5"),
        "structure",
    ),
    _F(
        "id_changes",
        "later chunks carry another id (the first non-empty one stays, or the latest: I9)",
        ("R9", "I9"),
        "structure",
    ),
    _F(
        "no_id",
        "no chunk carries a non-empty id (finish fails with protocol)",
        ("R5", "R9"),
        "structure",
    ),
    _F(
        "no_finish_reason",
        "the stream ends without a finish reason (stream_closed_early)",
        ("R5",),
        "structure",
    ),
    _F(
        "tool_call_never_named",
        "a tool call never gets a non-empty id or name (protocol at finish)",
        ("R5",),
        "structure",
    ),
    _F(
        "server_error",
        "a mid-stream server error object, message present, absent or null",
        ("R8", "I8"),
        "structure",
    ),
    _F("thinking_capped", "finish called with thinking_capped true", ("R5",), "structure"),
    # --- fields of neighbouring servers, never read (fuzz/model/fields.py has each one's source)
    _F(
        "openai_chunk_fields",
        "object, created, model, system_fingerprint, service_tier, obfuscation with real values",
        ("R7",),
        "field",
    ),
    _F("delta_role_refusal", "delta.role and delta.refusal (OpenAI)", ("R7",), "field"),
    _F("logprobs", "choice.logprobs with token logprobs (OpenAI, llama-server)", ("R7",), "field"),
    _F(
        "delta_reasoning",
        "delta.reasoning (vLLM, OpenRouter, Ollama): not reasoning_content",
        ("R7",),
        "field",
    ),
    _F("delta_thinking", "delta.thinking (Ollama, Anthropic-style proxies)", ("R7",), "field"),
    _F(
        "delta_function_call",
        "delta.function_call (OpenAI's deprecated function calling)",
        ("R7",),
        "field",
    ),
    _F(
        "choice_text",
        "choice.text (legacy completions, TGI, older llama-server) or choice.message (the "
        "shape of a response that is not streamed)",
        ("R7",),
        "field",
    ),
    _F("tool_call_type", 'tool_calls[].type "function" (OpenAI, llama-server)', ("R7",), "field"),
    _F(
        "usage_details",
        "usage with prompt_tokens_details and completion_tokens_details.reasoning_tokens (OpenAI)",
        ("R7",),
        "field",
    ),
    _F(
        "server_specific_fields",
        "stop_reason (vLLM), matched_stop (SGLang), "
        "native_finish_reason and provider (OpenRouter), stats (LM Studio), details (TGI), "
        "__verbose (llama-server)",
        ("R7",),
        "field",
    ),
    _F(
        "wrong_typed_known_field",
        "an OpenAI-defined member the rules do not read, with a type "
        'the schema does not allow ("role": 7)',
        ("R7", "I5"),
        "field",
    ),
    _F("proto_key", "a member named __proto__ at some level", ("R7", "I6"), "field"),
    _F(
        "deep_ignored_value", "nesting deeper than 128 levels in an ignored field", ("I3",), "field"
    ),
    # --- values of read fields
    _F(
        "unicode_text",
        "text with astral characters, combining marks, RTL, U+FFFF, emoji",
        ("R1", "R2"),
        "value",
    ),
    _F(
        "nul_in_text",
        "\\u0000 and other control characters (escaped) in text",
        ("R1", "R2"),
        "value",
    ),
    _F("escaped_text", "text written with \\uXXXX escapes and surrogate pairs", ("R1",), "value"),
    _F(
        "tagged_or_padded_text",
        "text with think tags, or of white space only or around its words (all of it kept)",
        ("R1", "R2"),
        "value",
    ),
    _F("long_text", "a text piece of several KiB", ("R1", "R2"), "value"),
    _F(
        "huge_payload",
        "a payload above 64 KiB (a tool call's arguments in one piece)",
        ("R2",),
        "value",
    ),
    _F(
        "other_finish_reason",
        "content_filter or function_call (OpenAI's others: protocol)",
        ("R6",),
        "value",
    ),
    _F("integral_fraction", "an integer field written 1.0 or 1e0", ("I1",), "value"),
    _F("big_integer", "an integer beyond 2^53-1 (and 2^31) in a read field", ("I2", "R9"), "value"),
    _F("duplicate_key", "a key twice in one object", ("I4",), "value"),
    _F("zero_counts", "prompt_progress counts and timings of 0", ("R1", "R9"), "value"),
    _F("empty_objects", "prompt_progress, timings or error as {}", ("R1", "R3", "R8"), "value"),
    _F("minus_zero_index", "a tool-call index written -0", ("R6",), "value"),
    _F(
        "json_whitespace",
        "insignificant JSON white space around and inside the payload",
        ("R6",),
        "value",
    ),
    # --- the event stream
    _F("sse_comments", "keep-alive `:` lines and other comment lines", ("SSE",), "sse"),
    _F("sse_line_ends", "CRLF or CR line ends", ("SSE",), "sse"),
    _F(
        "sse_other_fields",
        "event:, id:, retry: and llama-server's old error: lines",
        ("SSE",),
        "sse",
    ),
    _F("sse_no_space", "data: without the space after the colon", ("SSE",), "sse"),
    _F("sse_multiline_data", "a payload split over several data: lines", ("SSE",), "sse"),
    _F("done", "[DONE] at the end (or not at all)", ("SSE",), "sse"),
    _F(
        "done_with_white_space",
        "[DONE] followed by white space: an ordinary payload, protocol",
        ("R6", "SSE"),
        "sse",
    ),
    _F("last_event_unterminated", "the last event without its blank line", ("SSE",), "sse"),
    # --- broken in one place
    _F(
        "not_json",
        "a payload that is not JSON: trailing comma, comment, single quotes, unquoted "
        "key, leading zero, plus sign, .5, bad escape, raw control character, trailing garbage",
        ("R6",),
        "broken",
    ),
    _F(
        "not_an_object",
        "a payload that is JSON but not an object (array, string, number, null)",
        ("R6",),
        "broken",
    ),
    _F("non_finite_number", "NaN, Infinity or 1e400 where a number belongs", ("R6",), "broken"),
    _F(
        "lone_surrogate",
        'an unpaired surrogate escape such as "\\ud800" anywhere',
        ("R6",),
        "broken",
    ),
    _F(
        "wrong_type",
        "a read field with a wrong type: a string for a number, true for an index, "
        "a number for text, an array for an object",
        ("R6",),
        "broken",
    ),
    _F(
        "content_parts",
        "content as an array of parts (a wrong type for the rules)",
        ("R6",),
        "broken",
    ),
    _F(
        "fraction_integer",
        "a non-integral number where an integer belongs (1.5)",
        ("R6",),
        "broken",
    ),
    _F("negative_index", "a negative tool-call index", ("R6",), "broken"),
    _F("missing_index", "a tool call without index, or index null", ("R6",), "broken"),
    _F(
        "index_skips_ahead",
        "a tool-call index that skips ahead of the calls so far",
        ("R6",),
        "broken",
    ),
    _F("null_element", "choices: [null] or tool_calls: [null]", ("R6",), "broken"),
    _F(
        "unknown_finish_reason",
        "a finish reason outside stop, tool_calls, length (other case, a prototype name, a number)",
        ("R6",),
        "broken",
    ),
    _F(
        "bad_error_object",
        "error that is not an object, or whose message is not a string",
        ("R8",),
        "broken",
    ),
    _F(
        "negative_predicted_n",
        "a predicted_n that is negative or not an integer, read by R4",
        ("R4",),
        "broken",
    ),
)
#: Every feature, the corners (`harness.fuzz.model.corners`) among them, each group in `GROUPS`'
#: order.
FEATURES: tuple[Feature, ...] = tuple(
    sorted(
        (*_DRAWN, *(Feature(*entry) for entry in CORNERS)),
        key=lambda feature: GROUPS.index(feature.group),
    )
)

#: Each feature by its name.
BY_NAME: dict[str, Feature] = {feature.name: feature for feature in FEATURES}


def feature(name: str) -> Feature:
    """The feature called `name`; KeyError names it when the catalogue has none."""
    return BY_NAME[name]
