"""Write the edge-text and edge-id cases: text that looks like something else, and ids and names
at the edges of what a client expects.

Text is text (R1, R2): a piece that starts like a speaker tag (`assistant: `, `Assistant:`,
`<|im_start|>assistant`), or holds the event stream's own syntax (`data: [DONE]`, a blank line
then `data: {`, `: ping`, `event: error`), is kept byte for byte; a client that strips the tag,
or searches the raw line for `[DONE]` or `data:`, changes it or ends the stream there. An id or a
name is any non-empty string (R2, R5, R9): one of white space only is an id, one of thousands of
characters too, and two tool calls whose ids differ only in case are two calls. Each case is a
recording of `recordings/synthetic/edges/`, small, with the one edge in a valid stream.

    python tests/tools/grow_edges.py            # (re)write the cases
    python tests/tools/grow_edges.py --check    # exit 1 if a committed case differs
    conform golden update -k 'synthetic/edges'  # then their golden files
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.tools.corpus_cases import Case, Chunks, write_all  # noqa: E402

FOLDER = "synthetic/edges"
GENERATOR = "tests/tools/grow_edges.py"


def _case(name: str, s: Chunks, pins: str, *about: str) -> Case:
    return Case(f"{FOLDER}/{name}", list(about), pins, GENERATOR, s.payloads)


def _text(name: str, pieces: list[tuple[str, str]], *about: str) -> Case:
    """A stream of text pieces (`content` or `reasoning_content`, text), then a finish."""
    s = Chunks(f"chatcmpl-{name}").role()
    for key, text in pieces:
        s.delta(**{key: text})
    s.finish("stop")
    pins = "R1 R2 R4" if any(key == "reasoning_content" for key, _ in pieces) else "R1 R2"
    return _case(name, s, pins, *about)


_PREFIX = (
    "R1, R2: text is kept exactly as sent, whatever it starts with: a piece that looks like a "
    "speaker tag is answer text like any other."
)
_SSE = (
    "R1, R2: text is kept exactly as sent, the event stream's own syntax inside it too: it is a "
    "JSON string inside one data: line (its line breaks escaped), never a line of the stream."
)


def text_cases() -> Iterator[Case]:
    yield _text(
        "content_starts_with_assistant_colon",
        [("content", "assistant: Hi"), ("content", " there.")],
        _PREFIX,
        "Pitfall: chat front ends strip a leading `assistant: ` as if the model had echoed its "
        "role, and lose it.",
    )
    yield _text(
        "content_starts_with_speaker_tag_split",
        [("content", "Assist"), ("content", "ant:"), ("content", " Sure.")],
        _PREFIX,
        "Here `Assistant:` is split over two pieces. Pitfall: a tag stripped from the joined "
        "text, or from the first piece that completes it.",
    )
    yield _text(
        "content_starts_with_chat_template_tokens",
        [
            ("content", "<|im_start|>assistant\n"),
            ("content", "Hello<|im_end|>"),
            ("content", "<|eot_id|>### Assistant:"),
        ],
        _PREFIX,
        "Chat-template tokens (ChatML's `<|im_start|>assistant`, Llama 3's `<|eot_id|>`, "
        "Alpaca's `### Assistant:`) that a model leaks are text. Pitfall: clients that clean "
        "them out of the answer.",
    )
    yield _text(
        "reasoning_and_content_with_role_prefixes",
        [
            ("reasoning_content", "user: asks for a file."),
            ("reasoning_content", "\nassistant:"),
            ("content", "system: done"),
        ],
        _PREFIX,
        "Role-like prefixes in reasoning text and in the answer after it. Pitfall: a prefix "
        "stripped, or taken for the start of another message (a new turn, another role).",
    )
    yield _text(
        "content_holds_data_done",
        [("content", "data: [DONE]"), ("content", " is how a stream ends.")],
        _SSE,
        'Pitfall: readers that end the stream once a line contains `[DONE]` (`"[DONE]" in '
        'line`, `line.includes("[DONE]")`) stop at this payload.',
    )
    yield _text(
        "content_is_done",
        [("content", "[DONE]"), ("content", "[DONE]\n")],
        _SSE,
        "The whole piece is `[DONE]`. Pitfall: a reader that compares the decoded text, not the "
        "payload, with `[DONE]`.",
    )
    yield _text(
        "content_holds_blank_line_and_data",
        [("content", 'One\n\ndata: {"choices":[]}'), ("content", "\r\n\r\ndata: {")],
        _SSE,
        "Pitfall: clients that split the whole body on `\\n\\n` or `data: ` after unescaping, "
        "or that search the raw text for `data: {`, cut the payload there.",
    )
    yield _text(
        "content_holds_comment_and_event_lines",
        [
            ("content", ": ping"),
            ("content", '\nevent: error\ndata: {"error":{"message":"x"}}'),
            ("content", "\nretry: 10"),
        ],
        _SSE,
        'Pitfall: readers that look for `event: error` or `"error"` in the line take the '
        "answer for a server error; ones that skip lines starting with `:` drop `: ping`.",
    )
    s = Chunks("chatcmpl-sse-in-arguments").role()
    s.delta(reasoning_content="data: [DONE]")
    first = {"name": "write_file", "arguments": '{"text":"data: '}
    s.delta(tool_calls=[{"index": 0, "id": "call_sse", "type": "function", "function": first}])
    s.delta(tool_calls=[{"index": 0, "function": {"arguments": '[DONE]\\n\\n: ping"}'}}])
    s.finish("tool_calls")
    yield _case(
        "arguments_and_reasoning_hold_sse_syntax",
        s,
        "R1 R2 R4",
        _SSE + " Here in reasoning text and in a tool call's arguments.",
        "Pitfall: a `[DONE]` search on the raw line ends the stream with the call half-read.",
    )


def _ids(name: str, call_ids: list[str], names: list[str], pins: str, *about: str) -> Case:
    s = Chunks(f"chatcmpl-{name}").role()
    for index, (call_id, tool) in enumerate(zip(call_ids, names, strict=True)):
        function = {"name": tool, "arguments": "{"}
        s.delta(
            tool_calls=[{"index": index, "id": call_id, "type": "function", "function": function}]
        )
    for index in range(len(call_ids)):
        s.delta(tool_calls=[{"index": index, "function": {"arguments": f'"n":{index}}}'}}])
    s.finish("tool_calls")
    return _case(name, s, pins, *about)


_BLANK = (
    "R2, R5: an id or a name is any non-empty string: one of white space only is an id, and the "
    "call is complete."
)


def id_cases() -> Iterator[Case]:
    s = Chunks(" ").role()
    s.delta(content="Hi")
    s.finish("stop")
    yield _case(
        "completion_id_is_a_space",
        s,
        "R5 R9",
        'R9, R5: the completion id is the first non-empty id: " " is one ("" alone is no id), '
        'so the finish is a completion with id " ".',
        "Pitfall: `if not id.strip()` (Java's @NotBlank, zod's `.trim().min(1)`) takes it for "
        "no id and fails the finish.",
    )
    s = Chunks("\t\n").role()
    s.delta(content="Hi")
    s.finish("stop")
    yield _case(
        "completion_id_is_tab_and_newline",
        s,
        "R5 R9",
        'R9, R5: an id of a tab and a line break is an id ("" alone is no id).',
        "Pitfall: trimmed, it is empty; and a writer that puts the id on a line of its own "
        "breaks the line.",
    )
    yield _ids(
        "tool_call_id_and_name_white_space",
        [" ", "\u00a0"],
        ["\t", "\u200b"],
        "R2 R5",
        _BLANK + " Here a space, a no-break space (U+00A0), a tab and a zero-width space.",
        "Pitfall: `strip()`-based checks (which take U+00A0 for white space, not U+200B) drop "
        "the id or name and fail the finish, or replace it with a made-up one.",
    )
    long_id = "chatcmpl-" + "x" * 9991
    s = Chunks(long_id).role()
    s.delta(content="Hi")
    s.finish("stop")
    yield _case(
        "completion_id_ten_thousand_characters",
        s,
        "R9",
        "R9: an id of 10,000 characters is kept whole.",
        "Pitfall: ids cut to a column's width (64, 255) or refused by a length check.",
    )
    yield _ids(
        "tool_call_id_and_name_very_long",
        ["call_" + "A1b2" * 1024],
        ["tool_" + "n" * 1019],
        "R2",
        "R2: a call id of 4,101 characters and a name of 1,024 are kept whole.",
        "Pitfall: ids and names cut to a fixed width (OpenAI's 40-character call ids, a 64- or "
        "255-character column) or refused by a length check.",
    )
    yield _ids(
        "tool_call_ids_differ_only_in_case",
        ["call_AbC", "call_abc", "CALL_ABC"],
        ["read_file", "Read_File", "read_file"],
        "R2",
        "R2, spec section 6: calls are told apart by index, and ids and names are compared "
        "exactly: three calls whose ids (and names) differ only in case stay three calls, in "
        "index order, each with its own id.",
        "Pitfall: calls kept in a map keyed by id without case (a case-insensitive dictionary, "
        "`id.lower()`), which merges them.",
    )


def cases() -> Iterator[Case]:
    yield from text_cases()
    yield from id_cases()


def main(argv: list[str]) -> int:
    differ = write_all(FOLDER, cases(), check="--check" in argv)
    if differ and "--check" in argv:
        print("stale generated cases:", " ".join(differ), f"(python {GENERATOR})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
