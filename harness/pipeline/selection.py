"""What a run covers: the suites, the cases selected from them, their shard, the modes, and the
expected failures checked against the whole suite; worked out once, whoever asks.

`conform run`, `conform matrix`, the pytest plugin and `conform fuzz` all build a `Plan` with
`prepare`, so the same options select the same cases and modes everywhere: modes named twice run
once, and an `--xfail` line is checked against every case and every mode of the suite, not
against the ones this run happens to select.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.check.modes import MODES
from harness.check.options import unique_modes
from harness.check.xfail import XfailList
from harness.errors import ConformError, SuiteError
from harness.safetext import printable
from harness.suite.cases import SHIPPED, Case, Listing, Suite, open_suites, selected_cases
from harness.suite.classes import CLASSES, InputClass
from harness.suite.golden import Golden, open_golden


@dataclass(frozen=True)
class Selection:
    """Which cases a run covers: suite folders (none: the shipped suite), `-k` patterns, `--rule`
    tags, `--exclude` patterns, `--shard K/N`, and `--class` (the classes of input kept; none:
    every class)."""

    suite_dirs: tuple[Path, ...] = ()
    patterns: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    shard: tuple[int, int] | None = None
    classes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """The suites opened, the cases selected (in id order) and the modes to run, each once."""

    suites: tuple[Suite, ...]
    cases: tuple[Case, ...]
    modes: tuple[str, ...]
    selection: Selection
    #: Every case id of the suites, selected or not: what an --xfail line must match.
    all_ids: tuple[str, ...]
    _goldens: dict[str, Golden] = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def roots(self) -> tuple[Path, ...]:
        """The suites' folders, in the order given."""
        return tuple(suite.root for suite in self.suites)

    @property
    def runs(self) -> int:
        """How many runs the plan asks for: every case in every mode."""
        return len(self.cases) * len(self.modes)

    def golden(self, case: Case) -> dict[str, Any]:
        """The golden document of `case`, parsed once for every target that runs it (a golden
        file read step by step, above `STREAM_ABOVE` bytes, is not kept)."""
        return self.golden_file(case).document

    def golden_file(self, case: Case) -> Golden:
        """The golden file of `case`, read once for every target that runs it and parsed when
        one first needs its document (`golden`); one above `STREAM_ABOVE` bytes, read step by
        step, is not kept."""
        with self._lock:
            found = self._goldens.get(case.case_id)
        if found is not None:
            return found
        golden = open_golden(case)
        if golden.data is not None:
            with self._lock:
                golden = self._goldens.setdefault(case.case_id, golden)
        return golden

    def input_class(self, case: Case) -> InputClass:
        """The class of `case`'s input, from its golden file (read once, as `golden_file`)."""
        return self.golden_file(case).input_class

    def expected_failures(self, path: Path | None) -> XfailList | None:
        """The expected failures in `path`, every line checked against the whole suite and
        every mode (None when no file is given)."""
        if path is None:
            return None
        expected = XfailList.load(path)
        expected.check(self.all_ids, MODES)
        return expected


def prepare(selection: Selection, modes: Sequence[str] = ()) -> Plan:
    """Open the suites and select the cases; ConformError when the selection is empty or a
    suite is broken."""
    chosen_modes = unique_modes(modes)
    suites = open_suites(selection.suite_dirs)
    walked = {suite: suite.listing() for suite in suites}  # each folder walked once
    cases = select_cases(suites, selection, walked=walked)
    for suite in suites:
        suite.require_recordings(selection.patterns, walked=walked[suite])
    all_ids = tuple(sorted(case_id for listed in walked.values() for case_id in listed))
    plan = Plan(
        tuple(suites),
        tuple(in_shard(cases, selection.shard)),
        chosen_modes,
        selection,
        all_ids,
    )
    if not selection.classes:
        return plan
    unknown = [c for c in selection.classes if c not in CLASSES]
    if unknown:
        raise ConformError(
            f"{unknown[0]!r} is not a class of input; the classes are {', '.join(CLASSES)}"
        )
    kept = tuple(case for case in plan.cases if plan.input_class(case) in selection.classes)
    if not kept:
        raise _no_case_of_class(suites, selection)
    return replace(plan, cases=kept, _goldens=plan._goldens)


def _no_case_of_class(suites: Sequence[Suite], selection: Selection) -> SuiteError:
    where = ", ".join(printable(str(suite.root)) for suite in suites)
    named = " ".join(f"--class {c}" for c in selection.classes)
    return SuiteError(
        f"no case of {where} selected by the other options is of {named}",
        hint="'conform list' shows each case's class",
    )


def classes_of(cases: Sequence[Case]) -> dict[str, InputClass | None]:
    """Each case's class of input, from its golden file (None for a case whose golden file is
    missing or unreadable: `conform run` names the problem)."""
    found: dict[str, InputClass | None] = {}
    for case in cases:
        try:
            found[case.case_id] = open_golden(case).input_class
        except ConformError:
            found[case.case_id] = None
    return found


def select_classes(cases: Sequence[Case], classes: Sequence[str]) -> list[Case]:
    """The cases of `cases` whose input is of one of `classes` (all of them when none is
    named); ConformError for a case whose golden file cannot be read."""
    if not classes:
        return list(cases)
    unknown = [c for c in classes if c not in CLASSES]
    if unknown:
        raise ConformError(
            f"{unknown[0]!r} is not a class of input; the classes are {', '.join(CLASSES)}"
        )
    return [case for case in cases if open_golden(case).input_class in classes]


def select_cases(
    suites: Sequence[Suite],
    selection: Selection,
    *,
    walked: Mapping[Suite, Listing] | None = None,
) -> list[Case]:
    """The cases of `suites` that `selection` picks (its shard aside), in id order;
    SuiteError saying which options left none when there are none (`selected_cases`)."""
    return selected_cases(
        suites,
        selection.patterns,
        rules=selection.rules,
        exclude=selection.exclude,
        walked=walked,
    )


def suite_path(folder: Path | str) -> Path:
    """A `--suite` value as the run keeps it: `:shipped` as is, a folder made absolute (an
    in-process target may change directory during the run)."""
    return Path(folder) if str(folder) == SHIPPED else Path(folder).absolute()


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` as (K, N), 1 <= K <= N; ConformError otherwise."""
    index, _, count = text.partition("/")
    try:
        k, n = int(index), int(count)
    except ValueError:
        k = n = 0
    if not 1 <= k <= n:
        raise ConformError(f"--shard {text!r}: give K/N with 1 <= K <= N, e.g. 2/4")
    return k, n


def shard_of(case_id: str, count: int) -> int:
    """The shard (1..count) a case belongs to: from the SHA-256 of its id, so it never depends
    on which other cases the suite holds, the machine, or Python's hash seed."""
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(cases: Sequence[Case], shard: tuple[int, int] | None) -> list[Case]:
    """The cases of shard K of N (all of them when `shard` is None)."""
    if shard is None:
        return list(cases)
    index, count = shard
    return [case for case in cases if shard_of(case.case_id, count) == index]
