"""The catalogue's corners (issue 34): features mined from clients' bugs rather than from servers.

Each is (name, what it is in one line, the rules it exercises, its group), as
`harness.fuzz.model.features` has them: tool-call corners (ids and names late and out of index
order, pieces and `length` right after any piece: the guide pairs them with the stream's other
features), near-names (`harness.suite.near_names`: a member a client may take for a read field),
edge texts and ids (speaker tags, the event stream's syntax in text, blank, very long and
case-twin ids), and the type-confusion matrix (`harness.suite.confusion`, by the JSON type of the
wrong value: its breakers are `harness.fuzz.model.breakers.CONFUSED`). The shipped corpus has
cases of each (`synthetic/tool_pairs/`, `synthetic/edges/`, `synthetic/type_confusion/`, and the
`unknown-fields` mode's near-names), and the model draws them all.
"""

from __future__ import annotations

#: (name, description, rules, group) of each corner.
CORNERS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    (
        "ids_out_of_index_order",
        "a tool call's id (and name) arrives after the id of a call with a higher index",
        ("R2",),
        "structure",
    ),
    (
        "pieces_after_finish",
        "tool-call pieces after the finish reason, which came right after any piece (still "
        "part of their calls)",
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
        "near_names",
        "a member whose name is near a read field's (another case, spelling, Unicode fold or "
        "level, or another API's name for its meaning), with a value of that field's type",
        ("R7",),
        "field",
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
