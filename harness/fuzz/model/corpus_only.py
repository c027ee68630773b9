"""The features the shipped corpus holds and the model does not draw yet (issue 34).

Each is (name, what it is in one line, the rules it exercises, its group), as
`harness.fuzz.model.features` has them; that module adds them to the catalogue with
`drawn=False`, so docs/spec.md's feature table counts their cases and the model's tests leave
them out until the model draws them: the type-confusion matrix (`harness.suite.confusion`, by the
JSON type of the wrong value), edge texts and ids, and tool-call combinations.
"""

from __future__ import annotations

#: (name, description, rules, group) of each feature only the corpus holds.
CORPUS_ONLY: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    (
        "ids_out_of_index_order",
        "a tool call's id arrives after the id of a call with a higher index",
        ("R2",),
        "structure",
    ),
    (
        "pieces_after_finish",
        "tool-call pieces after the finish reason (still part of their calls)",
        ("R2", "R7"),
        "structure",
    ),
    (
        "length_after_named_piece",
        'finish reason "length" while a named call has no arguments yet',
        ("R2", "R5"),
        "structure",
    ),
    (
        "role_prefix_text",
        "text that starts like a speaker tag or a chat-template token (assistant: , "
        "<|im_start|>assistant, ### Assistant:)",
        ("R1", "R2"),
        "value",
    ),
    (
        "sse_syntax_in_text",
        "text holding the event stream's syntax: data: [DONE], a blank line and data: {, : ping, "
        "event: error",
        ("R1", "R2"),
        "value",
    ),
    (
        "blank_id_or_name",
        "an id or a tool name of white space only (an id all the same)",
        ("R2", "R5", "R9"),
        "value",
    ),
    ("long_id_or_name", "an id or a tool name of thousands of characters", ("R2", "R9"), "value"),
    (
        "ids_differ_in_case",
        "tool calls whose ids differ only in case (two calls)",
        ("R2",),
        "value",
    ),
    (
        "confused_boolean",
        "true or false in a read field (Python's bool is an int, `x || {}` reads false as absent)",
        ("R6",),
        "broken",
    ),
    (
        "confused_number",
        "a number where text, a finish reason, an object or an array belongs (scalar coercion, "
        "enum ordinals, falsy 0)",
        ("R6",),
        "broken",
    ),
    (
        "confused_string",
        'a string where a number, an object or an array belongs ("1", "", " ", "stop", JSON text)',
        ("R6",),
        "broken",
    ),
    (
        "confused_array",
        "an array where a scalar or an object belongs ([x] unwrapped, [x, y] joined, a struct "
        "read from its fields in order, [] read as {})",
        ("R6",),
        "broken",
    ),
    (
        "confused_object",
        'an object where a scalar or an array belongs ({"stop": null} as an enum, a value wrapped '
        'in an object, one element for an array, {"0": x})',
        ("R6",),
        "broken",
    ),
)
