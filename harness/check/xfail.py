"""Expected failures: a file of case and mode globs that may fail without failing the run.

One entry a line; a `#` at the start of a line or after white space starts a comment (the
reason, when it follows an entry):

    # CASE_GLOB            [MODE_GLOBS]        # reason
    llama-server/tool_call  unknown-fields     # drops fields it does not know, see #12
    synthetic/r6_nesting_*  plain,whitespace   # nesting limit not done yet
    synthetic/r8_*                             # server errors: every mode

Case globs follow the rule of `-k` (`harness.suite.cases.case_matches`: a shell-style glob on the
whole case id, or a folder of it); mode globs match whole mode names (`fnmatch`, case-sensitive);
the modes are one glob or several separated by commas, and a missing mode means every mode. A
matching failure (failed, crashed, timed out) becomes `xfailed`; a matching pass becomes `xpassed`,
which fails the run, so the list can only shrink. The first line that matches a result is the one
that applies. An entry that matches no case of the suite (or no mode) is a usage error, so a
renamed case cannot leave a stale line behind.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from harness.check.modes import MODES
from harness.check.results import CaseResult, Expectation
from harness.check.status import Status
from harness.errors import ConformError
from harness.files import write_report
from harness.safetext import ONE_LINE_CHARS, expected_got, shorten
from harness.suite.cases import CaseGlobs, case_matches

_REASON_CHARS = 200
_GLOB_SPECIAL = re.compile(r"([*?\[\s#,])")
_COMMENT = re.compile(r"(?:^|(?<=\s))#")  # a `#` at the start or after white space
_FIELD = re.compile(r"(?:\[[^\]]+\]|[^\s\[]|\[)+")  # white space inside [...] is part of a glob


@dataclass(frozen=True, slots=True)
class XfailEntry:
    """One line of an expected-failures file."""

    case_glob: str
    mode_glob: str
    reason: str
    line: int

    def matches(self, case_id: str, mode: str) -> bool:
        """True when this line covers `case_id` in `mode`."""
        return case_matches(case_id, self.case_glob) and self.matches_mode(mode)

    def matches_mode(self, mode: str) -> bool:
        """True when one of this line's mode globs matches `mode`."""
        return any(fnmatch.fnmatchcase(mode, glob) for glob in self.mode_glob.split(","))


@dataclass(frozen=True)
class XfailList:
    """The entries of one expected-failures file, in file order."""

    path: Path
    entries: tuple[XfailEntry, ...]
    #: The entries covering each case id looked up so far, in file order: `find` runs once per
    #: result (2,436 a run of the shipped suite), and the globs are looked up, not each tried.
    _by_case: dict[str, tuple[XfailEntry, ...]] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _globs: CaseGlobs = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        globs = CaseGlobs([entry.case_glob for entry in self.entries])
        object.__setattr__(self, "_globs", globs)  # frozen: set once, here

    @classmethod
    def load(cls, path: Path) -> XfailList:
        """Read `path`; ConformError (a usage error) when unreadable or a line is malformed."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConformError(
                f"no expected-failures file {path}",
                hint="'conform run TARGET --write-xfail FILE' writes one",
            ) from None
        except (OSError, UnicodeError) as exc:
            raise ConformError(f"cannot read {path}: {exc}") from None
        return cls(path, tuple(parse_lines(path, text)))

    def check(self, case_ids: Iterable[str], modes: Sequence[str]) -> None:
        """ConformError naming the first line that matches no case id, or no mode."""
        matched = {index for case_id in case_ids for index in self._globs.matching(case_id)}
        for index, entry in enumerate(self.entries):
            if index not in matched:
                raise ConformError(
                    f"{self.path}:{entry.line}: '{entry.case_glob}' matches no case of the suite",
                    hint="'conform list' shows the case ids; remove or fix the line",
                )
            for glob in entry.mode_glob.split(","):
                if not any(fnmatch.fnmatchcase(mode, glob) for mode in modes):
                    raise ConformError(
                        f"{self.path}:{entry.line}: mode '{glob}' matches no mode",
                        hint=f"the modes are {', '.join(modes)}",
                    )

    def find(self, case_id: str, mode: str) -> XfailEntry | None:
        """The first entry that covers `case_id` in `mode`."""
        covering = self._by_case.get(case_id)
        if covering is None:
            matching = self._globs.matching(case_id)
            covering = tuple(self.entries[index] for index in matching)
            self._by_case[case_id] = covering
        for entry in covering:
            if entry.matches_mode(mode):
                return entry
        return None

    def source(self, entry: XfailEntry) -> str:
        """Where `entry` stands: `FILE:LINE`."""
        return f"{self.path}:{entry.line}"

    def apply(self, result: CaseResult) -> CaseResult:
        """`result` as this list judges it: failures it covers become xfailed, passes xpassed."""
        entry = self.find(result.case_id, result.mode)
        if entry is None or not (result.status is Status.PASSED or result.status.is_failure):
            return result
        expectation = Expectation(entry.reason, self.source(entry), result.status)
        status = Status.XPASSED if result.status is Status.PASSED else Status.XFAILED
        return dataclasses.replace(result, status=status, expectation=expectation)


def parse_lines(path: Path, text: str) -> list[XfailEntry]:
    """The entries of an expected-failures file's text; ConformError on a malformed line."""
    entries: list[XfailEntry] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        entry_text, *comment = _COMMENT.split(raw, maxsplit=1)
        reason = comment[0] if comment else ""
        fields = _FIELD.findall(entry_text)
        if not fields:
            continue
        if len(fields) > 2:
            raise ConformError(
                f"{path}:{number}: expected 'CASE_GLOB [MODE_GLOB]  # reason', got {raw.strip()!r}",
                hint="write a space in a case id as '[ ]'",
            )
        mode_glob = fields[1] if len(fields) == 2 else "*"
        entries.append(XfailEntry(fields[0], mode_glob, reason.strip(), number))
    return entries


def escape_glob(text: str) -> str:
    """A glob that matches exactly `text` and holds no white space or `#`."""
    return _GLOB_SPECIAL.sub(lambda m: f"[{m.group()}]", text)


def baseline_reason(result: CaseResult) -> str:
    """Why a result failed, on one short line: its status and first mismatch or crash message."""
    if result.expectation is not None and handwritten(result.expectation.reason):
        return result.expectation.reason  # keep what a person wrote when re-baselining
    status = result.expectation.was if result.expectation is not None else result.status
    if result.mismatches:
        first = result.mismatches[0]
        detail = f"{first.path}: {expected_got(first.expected, first.actual, ONE_LINE_CHARS)}"
    elif result.crash is not None:
        detail = result.crash.message
    else:
        detail = ""
    text = shorten(" ".join(f"{status}: {detail}".split()) if detail else status, _REASON_CHARS)
    if result.expectation is not None and same_failure(result.expectation.reason, text):
        return result.expectation.reason  # only what the target gave differs: keep the line
    return text


def same_failure(old: str, new: str) -> bool:
    """True when `old`, a reason conform wrote, says what `new` says but for what the target
    gave: the same status, first field and expected value (the part before `, got `). A
    baseline written again keeps `old` then, so a value the target makes anew on each run (an
    id a client invents) does not rewrite the line. A crash's message is compared whole, but
    for the memory addresses in it (`<built-in method index of str object at 0x7fb3f89ccb30>`)."""
    if not old or handwritten(old):
        return False
    head, got, _ = new.partition(", got ")
    if got:
        return old.partition(", got ")[0] == head
    return _ADDRESS.sub("0x", old) == _ADDRESS.sub("0x", new)


#: A memory address in a repr (`at 0x7f02aa994970`): another on each run.
_ADDRESS = re.compile(r"\b0x[0-9a-f]{6,16}\b")


def failing(result: CaseResult) -> bool:
    """True when the target failed this case, whether or not a line expected it."""
    return result.status.not_passing


#: The header's lines as conform writes them, recognized (and replaced) when a baseline is written
#: again; those of the older one-line-per-mode format too.
_HEADER = re.compile(
    r"^# (Expected failures of .*\(conform run --write-xfail, \d{4}-\d\d-\d\d\)\.$"
    r"|Expected failures of conform \(written by 'conform run --write-xfail'\)\.$"
    r"|One line each: CASE_GLOB \[MODE_GLOB\]  # reason\. Remove a line once its case passes\.$"
    r"|One line a case: CASE \[MODES\]  # reason; no MODES: every mode, failing alike\.$"
    r"|Hand-written reasons and comments stay when this file is written again\.$)"
)
#: The header's date, in its first line: the day the file's lines last changed.
_WRITTEN_ON = re.compile(r"\(conform run --write-xfail, \d{4}-\d\d-\d\d\)\.$")
#: A reason conform wrote: a status, then (after a colon) the first mismatch or crash.
_GENERATED_REASON = re.compile(r"^(failed|crashed|timed-out)(:|$)")


_CUT_PREFIX = re.compile(r"^prefix\[\d+\]\.")
_CUT_NOTE = re.compile(r" \(the recording cut after \d+ payload\(s\)\)$")


def failing_alike(result: CaseResult) -> tuple[object, ...]:
    """What makes a case's failures in two modes alike for a baseline: the status and the first
    mismatching field (or crash message), with `truncated`'s cut taken off (`prefix[3].`), since
    that mode compares what `finish` makes at the cut."""
    was = result.expectation.was if result.expectation is not None else result.status
    if result.mismatches:
        return (was, _CUT_PREFIX.sub("", result.mismatches[0].path))
    message = result.crash.message if result.crash is not None else ""
    return (was, _CUT_NOTE.sub("", message))


def handwritten(reason: str) -> bool:
    """True when a reason was written by a person, not by `--write-xfail`."""
    return bool(reason) and not _GENERATED_REASON.match(reason)


@dataclass(frozen=True)
class _Kept:
    """What a baseline keeps of the file it replaces: comment blocks not attached to an entry,
    and each entry with the comment lines directly above it."""

    free: tuple[str, ...]
    entries: tuple[tuple[XfailEntry, tuple[str, ...]], ...]


def _kept(path: Path, text: str) -> _Kept:
    free: list[str] = []
    entries: list[tuple[XfailEntry, tuple[str, ...]]] = []
    parsed = {entry.line: entry for entry in parse_lines(path, text)}
    block: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if number in parsed:
            entries.append((parsed[number], tuple(block)))
            block = []
        elif not line.strip():
            if block:
                free += [*block, ""]
                block = []
        elif line.lstrip().startswith("#") and not _HEADER.match(line.strip()):
            block.append(line)
    if block:
        free += [*block, ""]
    return _Kept(tuple(free), tuple(entries))


def baseline_text(
    results: Iterable[CaseResult],
    *,
    target: str = "the target",
    when: datetime | None = None,
    previous: str | None = None,
    path: Path = Path("conform.xfail"),
    all_modes: Sequence[str] = (),
    ran: Collection[tuple[str, str]] | None = None,
    suite_cases: Collection[str] | None = None,
) -> str:
    """An expected-failures file: one line per failing case of `results`, merged with `previous`.

    A case's line lists the modes it fails in, or none when it fails in every mode of
    `all_modes` alike (`failing_alike`). `previous` is the text of the file being replaced: its
    hand-written reasons and its comments are kept (README, "Expected failures"), and so is what
    it expects of every case and mode this run did not run: `ran` is the (case id, mode) pairs
    that ran (by default those of `results`), so a run with `-k`, `--shard` or `--mode` neither
    drops the other cases' lines nor narrows their modes. `suite_cases`, every case id of the
    suite, lets a glob line this run covered in part be kept for the cases it did not run, and
    drops lines whose cases are gone from the suite. The header says the day of `when` (today),
    unless the file would change in nothing else: then `previous` is kept as it is, its day too.
    """
    results = list(results)
    pairs = {(r.case_id, r.mode) for r in results} if ran is None else set(ran)
    by_case: dict[str, list[CaseResult]] = {}
    for result in results:
        if failing(result):
            by_case.setdefault(result.case_id, []).append(result)
    kept = _kept(path, previous) if previous is not None else _Kept((), ())
    modes_known = list(all_modes) or sorted({mode for _, mode in pairs})
    carried, verbatim = _carry(kept, pairs, modes_known, suite_cases)
    used: set[int] = set()
    rows: list[tuple[str, tuple[tuple[str, ...], str, str, str]]] = []  # (sort key, row)
    for case_id in sorted(set(by_case) | set(carried)):
        failures = by_case.get(case_id, [])
        old_modes, old_reason, old_index = carried.get(case_id, ([], "", None))
        modes = [r.mode for r in failures] + old_modes
        alike = len({failing_alike(r) for r in failures}) <= 1
        every = bool(modes_known) and set(modes) >= set(modes_known)
        mode_field = "" if every and alike else ",".join(escape_glob(m) for m in modes)
        reason = baseline_reason(failures[0]) if failures else old_reason
        comments: tuple[str, ...] = ()
        for index, (entry, above) in enumerate(kept.entries):
            if index in verbatim:
                continue
            if case_matches(case_id, entry.case_glob) and any(entry.matches_mode(m) for m in modes):
                own = entry.case_glob == escape_glob(case_id)  # its line, not a glob's
                if handwritten(entry.reason) or (own and same_failure(entry.reason, reason)):
                    reason = entry.reason
                if index not in used:
                    comments = above
                    used.add(index)
                break
        if old_index is not None and old_index not in used and not comments:
            comments = kept.entries[old_index][1]
            used.add(old_index)
        rows.append((case_id, (comments, escape_glob(case_id), mode_field, reason)))
    for index in verbatim:
        entry, above = kept.entries[index]
        mode_text = "" if entry.mode_glob == "*" else entry.mode_glob
        rows.append((entry.case_glob, (above, entry.case_glob, mode_text, entry.reason)))
    rows.sort(key=lambda item: item[0])
    day = (when or datetime.now(UTC)).strftime("%Y-%m-%d")
    lines = [
        f"# Expected failures of {' '.join(target.split())} (conform run --write-xfail, {day}).",
        "# One line a case: CASE [MODES]  # reason; no MODES: every mode, failing alike.",
        "# Hand-written reasons and comments stay when this file is written again.",
    ]
    if kept.free:
        lines += ["", *kept.free[:-1]]
    lines.append("")
    case_width = max((len(row[1]) for _, row in rows), default=0)
    mode_width = max((len(row[2]) for _, row in rows), default=0)
    for _, (comments, case, modes_text, reason) in rows:
        lines += comments
        tail = f"  # {reason}" if reason else ""
        lines.append(f"{case:<{case_width}}  {modes_text:<{mode_width}}{tail}".rstrip())
    text = "\n".join(lines) + "\n"
    if previous is not None:  # the day it last changed: the same lines written again keep it
        written = _WRITTEN_ON.search(previous.partition("\n")[0])
        if written is not None:
            stamp = f"(conform run --write-xfail, {day})."
            if text.replace(stamp, written[0], 1) == previous:
                return previous
    return text


def _carry(
    kept: _Kept,
    ran: set[tuple[str, str]],
    modes: Sequence[str],
    suite_cases: Collection[str] | None,
) -> tuple[dict[str, tuple[list[str], str, int | None]], list[int]]:
    """What the previous file expects of the cases and modes this run did not run.

    Gives, per case id, the modes a line of the previous file still covers with that line's
    reason and index, and the indexes of the lines the run did not touch at all (kept as they
    are, globs included). The first line that matches a case and mode is the one that applies.
    """
    ran_cases = {case for case, _ in ran}
    known = list(suite_cases) if suite_cases is not None else sorted(ran_cases)
    claimed: set[tuple[str, str]] = set()
    carried: dict[str, tuple[list[str], str, int | None]] = {}
    verbatim: list[int] = []
    for index, (entry, _) in enumerate(kept.entries):
        entry_modes = [m for m in modes if entry.matches_mode(m)]
        matching = [case for case in known if case_matches(case, entry.case_glob)]
        if not any(case in ran_cases for case in matching):
            # Untouched by this run: kept as it is, globs included; unless every case it named
            # is gone from the suite (the next run would refuse the line).
            if suite_cases is None or matching:
                verbatim.append(index)
                claimed.update((case, m) for case in matching for m in entry_modes)
            continue
        for case in matching:
            left = [m for m in entry_modes if (case, m) not in ran and (case, m) not in claimed]
            if not left:
                continue
            claimed.update((case, m) for m in left)
            old_modes, reason, first = carried.get(case, ([], entry.reason, index))
            carried[case] = (old_modes + left, reason, first)
    return carried, verbatim


def write_baseline(
    path: Path,
    results: Iterable[CaseResult],
    *,
    target: str = "the target",
    when: datetime | None = None,
    all_modes: Sequence[str] = MODES,
    ran: Collection[tuple[str, str]] | None = None,
    suite_cases: Collection[str] | None = None,
) -> int:
    """Write the baseline of `results` to `path` atomically, merged with the file there
    (`baseline_text`: its reasons, comments, and what it expects of the cases and modes not
    run); the number of lines written."""
    results = list(results)
    try:
        previous: str | None = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        previous = None  # nothing to keep; writing says why it cannot, if it cannot
    except (OSError, UnicodeError) as exc:
        raise ConformError(
            f"cannot read {path} to keep its reasons: {exc}", hint="fix or delete it"
        ) from None
    text = baseline_text(
        results,
        target=target,
        when=when,
        previous=previous,
        path=path,
        all_modes=all_modes,
        ran=ran,
        suite_cases=suite_cases,
    )
    write_report(path, text)
    return len(parse_lines(path, text))
