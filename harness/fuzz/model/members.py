"""Members put into a chunk's objects beside what its plan holds: the fields neighbouring servers
send (`harness.fuzz.model.fields`), some of a type OpenAI's schema does not allow (I5), the
near-names of `harness.suite.near_names` (a member a client may take for a read field, with a
value of that field's type unlike the object's: ignored under R7, another result for a client
that reads it), and a read field that may be absent written `null` (R7)."""

from __future__ import annotations

from typing import Any

from harness.fuzz.model import fields as neighbours
from harness.fuzz.model.draw import Draw
from harness.suite.near_names import NEAR_NAMES, near_value


def _levels(chunk: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    levels: dict[str, list[dict[str, Any]]] = {"top": [chunk]}
    if isinstance(chunk.get("error"), dict):
        levels["error"] = [chunk["error"]]
    for choice in chunk.get("choices") or ():
        levels.setdefault("choice", []).append(choice)
        delta = choice.get("delta")
        if isinstance(delta, dict):
            levels.setdefault("delta", []).append(delta)
            for call in delta.get("tool_calls") or ():
                levels.setdefault("tool_call", []).append(call)
                if isinstance(call.get("function"), dict):
                    levels.setdefault("function", []).append(call["function"])
    if isinstance(chunk.get("usage"), dict):
        levels["usage"] = [chunk["usage"]]
    for name in ("timings", "prompt_progress"):
        if isinstance(chunk.get(name), dict):
            levels[name] = [chunk[name]]
    return levels


#: The features of the members added here, wanted by the guide: a chunk then surely gets one.
NEIGHBOUR_FEATURES = frozenset(
    (
        "near_names",
        *(f.feature for f in (*neighbours.NEIGHBOUR_FIELDS, *neighbours.WRONG_TYPED_KNOWN)),
    )
)


def add_neighbours(draw: Draw, chunk: dict[str, Any], used: set[str], *, wrong: bool) -> bool:
    """Put near-names and fields of neighbouring servers into some objects of a chunk (never over
    a member it has), some fields of a type OpenAI's schema does not allow when `wrong`; whether
    one was."""
    wanted = (NEIGHBOUR_FEATURES - {"near_names"}) & draw.wanted
    allowed, made = wrong, False
    for level, found in _levels(chunk).items():
        near = NEAR_NAMES.get(level, ())
        for obj in found:
            if near and draw.rarely(24, "near_names"):
                # a name a client may take for a read field, with a value of that field's type
                # unlike the one this object holds (harness.suite.near_names)
                name = draw.pick(near)
                if name.name not in obj:
                    obj[name.name] = near_value(name, obj)
                    used.add("near_names")
            if not wanted and not draw.rarely(3):
                continue
            wrong = allowed and draw.rarely(9, "wrong_typed_known_field")
            made = made or wrong
            choices = neighbours.at_level(level, wrong_typed=wrong)
            if not choices:
                continue
            if wanted and not wrong:
                choices = tuple(f for f in choices if f.feature in wanted) or choices
            if not choices:
                continue
            for number in dict.fromkeys(
                draw.below(len(choices)) for _ in range(draw.between(1, 3))
            ):
                item = choices[number]
                if item.name in obj:
                    continue
                obj[item.name] = draw.pick(item.values)
                used.add(item.feature)
    return made


def null_field(draw: Draw, chunk: dict[str, Any], used: set[str]) -> None:
    """A read field that may be absent written `null` instead (R7: null means absent)."""
    choices = chunk.get("choices")
    delta = choices[0].get("delta") if isinstance(choices, list) and choices else None
    where = draw.pick(("error", "prompt_progress", "id", "usage", "tool_calls", "choices"))
    if where == "tool_calls" and isinstance(delta, dict) and "tool_calls" not in delta:
        delta["tool_calls"] = None
    elif where == "choices" and "choices" not in chunk:
        chunk["choices"] = None
    elif where not in chunk and where not in ("tool_calls", "choices"):
        chunk[where] = None
    else:
        return
    used.add("null_fields")
