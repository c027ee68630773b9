"""A suite: a folder with `recordings/` and `golden/`, and the cases it holds.

Where commands look for a suite, one rule for all of them: the folder `--suite DIR` names, else
the suite shipped with conform (`harness/_suite/` in an installed wheel, or the source checkout's
own top-level folders when running from the repository). `run` and `list` take several
`--suite` (`:shipped` names the shipped one), whose case ids must not clash. Commands that write
(`record`, `golden update`) never write into an installed package: there, `--suite` is required.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import site
import sysconfig
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from harness.errors import SuiteError
from harness.safetext import printable
from harness.suite.recording import (
    RECORDING_SUFFIXES,
    RecordingInfo,
    id_of_name,
    iter_payloads,
    name_of_id,
    read_info,
)
from harness.suite.sse import Payload


@dataclass(frozen=True, slots=True)
class Case:
    """One recording and where its golden file belongs."""

    case_id: str
    recording: Path
    golden: Path
    #: The recording's payloads when they are held in memory (conform fuzz's generated streams
    #: have no file); None: read from `recording` as they are needed.
    held: tuple[Payload, ...] | None = field(default=None, repr=False, compare=False)
    #: The recording's path below `recordings/`, as golden files name it (made once: a run
    #: names it in every result).
    recording_name: str = field(init=False, repr=False, compare=False)
    #: `info`, once read (a run asks for it in every mode of the case).
    _info: RecordingInfo | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "recording_name", f"{self.case_id}{self.recording.suffix}")

    def payloads(self) -> Iterable[Payload]:
        """The recording's payloads, in order (read one at a time from its file)."""
        return iter_payloads(self.recording) if self.held is None else self.held

    @property
    def info(self) -> RecordingInfo:
        """What the recording declares in its leading lines (`read_info`), read once for this
        case; a recording that cannot be read raises RecordingError each time it is asked."""
        found = self._info
        if found is None:
            found = read_info(self.recording)
            object.__setattr__(self, "_info", found)
        return found

    @property
    def real(self) -> bool:
        """True for a real capture (its `source:` line); a stream held in memory is generated."""
        return self.held is None and self.info.real

    @property
    def pins(self) -> tuple[str, ...]:
        """What the recording says it pins (its `pins:` line): rules, I-points, `SSE`."""
        return self.info.pins


def default_suite_root() -> Path:
    """Where the shipped suite lies: inside the installed package, or the source checkout."""
    package = Path(__file__).resolve().parents[1]  # harness/
    for root in (package / "_suite", package.parent):
        if (root / "recordings").is_dir():
            return root
    raise SuiteError(
        "the shipped suite is missing from this installation",
        hint="reinstall conform or pass --suite",
    )


#: The `--suite` value that names the suite shipped with conform.
SHIPPED = ":shipped"


def _install_folders() -> list[Path]:
    found = {sysconfig.get_paths().get(key) for key in ("purelib", "platlib")}
    found.update(getattr(site, "getsitepackages", lambda: [])())
    found.add(getattr(site, "getusersitepackages", lambda: None)())
    return [Path(p).resolve() for p in found if p]


def installed(path: Path) -> bool:
    """True when `path` lies inside an installed package (site-packages), or is the suite a
    wheel ships: no command may write there."""
    resolved = path.resolve()
    if resolved.name == "_suite" and resolved.parent.name == "harness":
        return True
    return any(resolved.is_relative_to(folder) for folder in _install_folders())


def writable_root(root: Path | None, *, command: str) -> Path:
    """The suite folder a writing command (`record`, `golden update`) writes into: `root`, else
    the shipped suite when it is a source checkout; SuiteError inside an installed package."""
    path = default_suite_root() if root is None or str(root) == SHIPPED else root
    if installed(path):
        where = "the suite shipped with conform" if root is None else str(path)
        raise SuiteError(
            f"{where} is inside an installed package ({path}); {command} does not write there",
            hint="pass --suite DIR, a folder of your own (e.g. --suite my-suite); "
            "'conform run TARGET --suite :shipped --suite DIR' runs it with the shipped cases",
        )
    return path


def open_suites(roots: Sequence[Path]) -> list[Suite]:
    """The suites `--suite` named, in order (the shipped one when none); SuiteError when one is
    not a suite or is named twice."""
    suites = [Suite.open(root) for root in roots] or [Suite.open(None)]
    seen: dict[Path, Path] = {}
    for suite in suites:
        key = suite.root.resolve()
        if key in seen:
            raise SuiteError(f"the suite {suite.root} is named twice", hint="name it once")
        seen[key] = suite.root
    return suites


def cases_of(
    suites: Sequence[Suite],
    patterns: tuple[str, ...] = (),
    *,
    rules: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    walked: Mapping[Suite, Listing] | None = None,
) -> list[Case]:
    """The cases of all `suites`, selected as `Suite.cases` selects, sorted by id; SuiteError
    when two suites hold the same case id (ids must stay unique, so that -k, reports and --xfail
    lines name one case whatever suites are combined). `walked`: each suite's `listing()`, when
    the caller has them already."""
    found: dict[str, tuple[str, Suite]] = {}
    for suite in suites:
        for case_id, recording in (suite.listing() if walked is None else walked[suite]).items():
            if case_id in found:
                other = found[case_id][1]
                raise SuiteError(
                    f"case '{case_id}' is in two suites: {other.root} and {suite.root}",
                    hint="rename the recording in your suite (a folder of your own below "
                    "recordings/, e.g. recordings/mine/, keeps ids apart)",
                )
            found[case_id] = (recording, suite)
    selected = selector(patterns, exclude)
    chosen = [
        suite.case(case_id, recording)
        for case_id, (recording, suite) in found.items()
        if selected(case_id)
    ]
    if rules:
        chosen = [case for case in chosen if set(rules).intersection(case.pins)]
    return sorted(chosen, key=lambda case: case.case_id)


def selector(patterns: tuple[str, ...], exclude: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a case id is selected: it matches one of `patterns` (or none is given) and no
    `exclude` pattern, as `case_matches` says."""

    def selected(case_id: str) -> bool:
        if patterns and not any(case_matches(case_id, p) for p in patterns):
            return False
        return not any(case_matches(case_id, p) for p in exclude)

    return selected


def selected_cases(
    suites: Sequence[Suite],
    patterns: tuple[str, ...] = (),
    *,
    rules: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    walked: Mapping[Suite, Listing] | None = None,
) -> list[Case]:
    """`cases_of`, and SuiteError saying which options left no case when none is selected."""
    cases = cases_of(suites, patterns, rules=rules, exclude=exclude, walked=walked)
    if cases:
        return cases
    where = ", ".join(printable(str(suite.root)) for suite in suites)
    options = [
        *(f"-k {_quoted(p)}" for p in patterns),
        *(f"--rule {_quoted(r)}" for r in rules),
        *(f"--exclude {_quoted(p)}" for p in exclude),
    ]
    if not options:
        raise SuiteError(
            f"no cases in {where}", hint="a case is a .http or .sse file below recordings/"
        )
    hint = "'conform list' shows the cases"
    if "" in patterns:
        hint = "an empty -k pattern matches no case; leave -k out to select every case"
    raise SuiteError(f"no case of {where} is selected by {' '.join(options)}", hint=hint)


def _quoted(text: str) -> str:
    """`text` as a shell word a user can retype (`''` for the empty one), printable."""
    return printable(shlex.quote(text))


#: A suite's recordings: each case id with its recording's path (as text, a Path made only for
#: the cases selected), in the order of the paths (`Suite.listing`).
Listing = dict[str, str]


@dataclass(frozen=True)
class Suite:
    """The recordings and golden files below `root`."""

    root: Path

    @classmethod
    def open(cls, root: Path | None) -> Suite:
        """The suite at `root` (the shipped one when None or `:shipped`); SuiteError when it is
        not one."""
        path = default_suite_root() if root is None or str(root) == SHIPPED else root
        if not path.is_dir():
            raise SuiteError(f"no suite at {path}", hint="--suite takes a folder with recordings/")
        if not (path / "recordings").is_dir():
            raise SuiteError(
                f"{path} has no recordings/ folder",
                hint="a suite is a folder with recordings/ and golden/",
            )
        return cls(path)

    @cached_property
    def recordings_dir(self) -> Path:
        return self.root / "recordings"

    @cached_property
    def golden_dir(self) -> Path:
        return self.root / "golden"

    def golden_path(self, case_id: str) -> Path:
        """Where the golden file of `case_id` belongs."""
        return self.golden_dir / name_of_id(f"{case_id}.json")

    def listing(self) -> Listing:
        """Every case id of the suite, each with the path of its recording, in the order of
        their paths; SuiteError when two recordings make one case (`a.sse` and `a.http`)."""
        found: Listing = {}
        for case_id, path in _walk(self.recordings_dir, RECORDING_SUFFIXES, files_only=True):
            if case_id in found:
                raise SuiteError(
                    f"two recordings make case '{case_id}': {found[case_id]} and {path}",
                    hint="rename one of them",
                )
            found[case_id] = path
        return found

    def case(self, case_id: str, recording: str) -> Case:
        """The case `case_id` of this suite's `listing`, whose recording is at `recording`."""
        return Case(case_id, Path(recording), self.golden_path(case_id))

    def cases(
        self,
        patterns: tuple[str, ...] = (),
        *,
        rules: tuple[str, ...] = (),
        exclude: tuple[str, ...] = (),
    ) -> list[Case]:
        """The suite's cases sorted by id, selected.

        With patterns, those that match one (`case_matches`); with rules, those that pin one of
        them (`R6`, `I1`, `SSE`); never those that match an `exclude` pattern.
        """
        listed, selected = self.listing(), selector(patterns, exclude)
        chosen = [self.case(key, listed[key]) for key in sorted(listed) if selected(key)]
        if rules:
            wanted = set(rules)
            chosen = [case for case in chosen if wanted.intersection(case.pins)]
        return chosen

    def orphaned_golden(
        self, patterns: tuple[str, ...] = (), *, walked: Listing | None = None
    ) -> list[Path]:
        """Golden files whose recording is gone (with patterns, those whose id matches one);
        `walked`: this suite's `listing()`, when the caller has it already."""
        ids = self.listing() if walked is None else walked
        if not self.golden_dir.is_dir():
            return []
        return [
            Path(path)
            for case_id, path in _walk(self.golden_dir, (".json",), files_only=False)
            if case_id not in ids
            and (not patterns or any(case_matches(case_id, p) for p in patterns))
        ]

    def require_recordings(
        self, patterns: tuple[str, ...] = (), *, walked: Listing | None = None
    ) -> None:
        """SuiteError naming a golden file without its recording: a case was lost, not passed."""
        orphans = self.orphaned_golden(patterns, walked=walked)
        if orphans:
            more = f" (and {len(orphans) - 1} more)" if len(orphans) > 1 else ""
            raise SuiteError(
                f"{orphans[0]}: a golden file without a recording{more}",
                hint="restore the recording (.http or .sse) or delete the golden file; "
                "'conform golden check' lists them all",
            )


def _walk(folder: Path, suffixes: tuple[str, ...], *, files_only: bool) -> list[tuple[str, str]]:
    """(case id, path) of each entry below `folder` whose suffix is one of `suffixes`, in the
    order of `sorted(folder.rglob("*"))`: what `case_id_of` and that walk give (the path as
    text, `str` of its Path), at a fraction of the cost (no Path objects, no `stat` of a plain
    file: every command walks the suite, and a run of one case made 776 of each).

    As rglob does, symlinked folders are listed but not entered, and a folder that cannot be
    read is left out. `files_only`: regular files (and links to them) whose `Path.suffix` is one
    of `suffixes` (the recordings); else every name that ends with one, folders too
    (`rglob("*.json")`: the golden files).
    """
    # (sort key, case id, path): the key is the path below `folder` with NUL between its parts,
    # which sorts as the tuple of parts (as Paths do) since no name holds a NUL.
    found: list[tuple[str, str, str]] = []
    folders = [(os.fspath(folder), "", "")]  # (path, its case id prefix `a/b/`, its key prefix)
    while folders:
        top, prefix, key = folders.pop()
        try:
            with os.scandir(top) as listed:
                entries = list(listed)
        except OSError:  # missing or unreadable: as os.walk and rglob, nothing below it
            continue
        for entry in entries:
            name = entry.name
            try:
                is_folder = entry.is_dir()  # a link to a folder too
            except OSError:  # as os.walk: not a folder when that cannot be told
                is_folder = False
            if is_folder:
                if not entry.is_symlink():
                    folders.append((entry.path, f"{prefix}{name}/", f"{key}{name}\0"))
                if files_only:
                    continue
            dot = name.rfind(".")
            has_suffix = 0 < dot < len(name) - 1  # as Path.suffix and with_suffix("") say
            if files_only:
                if not has_suffix or name[dot:] not in suffixes or not entry.is_file():
                    continue
            elif not name.endswith(suffixes):
                continue
            case_id = id_of_name(prefix + (name[:dot] if has_suffix else name))
            found.append((key + name, case_id, entry.path))
    found.sort()
    return [(case_id, path) for _, case_id, path in found]


class CaseGlobs:
    """Which of many case globs match a case id, as `case_matches` says, without trying every
    glob on every id: a glob without wildcards (most lines of an expected-failures file) is a
    case id, or a folder, looked up by key; only the others are matched one by one.

    An expected-failures file of 200 lines over the shipped suite took 150,000 glob matches a
    run (0.12-0.14 s of the harness's CPU for each client's baseline; 0.01 s looked up).
    tests/suite/test_case_globs.py holds this class to `case_matches` on drawn globs and ids.
    """

    def __init__(self, patterns: Sequence[str]) -> None:
        self._exact: dict[str, list[int]] = {}
        self._folders: dict[str, list[int]] = {}
        self._globs: list[tuple[int, str]] = []
        for index, pattern in enumerate(patterns):
            if _WILDCARD.search(pattern):
                self._globs.append((index, pattern))
                continue
            self._exact.setdefault(pattern, []).append(index)
            folder = pattern.rstrip("/")
            if folder:  # `synthetic` and `synthetic/`: every case below the folder
                self._folders.setdefault(folder, []).append(index)

    def matching(self, case_id: str) -> list[int]:
        """The indexes (in `patterns`, ascending) of the globs that match `case_id`."""
        found = list(self._exact.get(case_id, ()))
        cut = case_id.find("/")
        while cut >= 0:  # each folder the case is in: `a`, then `a/b`, ...
            found += self._folders.get(case_id[:cut], ())
            cut = case_id.find("/", cut + 1)
        found += [index for index, glob in self._globs if case_matches(case_id, glob)]
        return sorted(set(found))


#: What makes a case glob more than a case id or a folder (`fnmatch`'s special characters).
_WILDCARD = re.compile(r"[*?\[]")


def exact_glob(case_id: str) -> str:
    """A `-k` pattern that matches `case_id` and no other id: its wildcards (`*`, `?`, `[`)
    escaped as `[*]`, `[?]`, `[[]`. (It still matches the cases below a folder of that name:
    `exact_args` says how to leave them out.)"""
    return _WILDCARD.sub(lambda m: f"[{m.group()}]", case_id)


def exact_args(case_id: str, roots: Sequence[Path] = ()) -> list[str]:
    """The `-k` (and, where one of the suites at `roots` has a folder of that name, the
    `--exclude`) that select exactly the case `case_id`."""
    glob = exact_glob(case_id)
    words = ["-k", glob]
    folder = name_of_id(case_id)
    if any((root / "recordings" / folder).is_dir() for root in roots):
        words += ["--exclude", f"{glob}/*"]
    return words


def case_matches(case_id: str, pattern: str) -> bool:
    """The one rule of `-k` and of `--xfail` case globs: `pattern` is a shell-style glob
    (`fnmatch`, case-sensitive, `*` also crossing `/`) that matches the whole case id, or a folder
    of it (`synthetic` and `synthetic/` match every case below `synthetic/`).

    `llama-server/tool_call` is that case alone, never `llama-server/tool_calls_parallel`.
    """
    folder = pattern.rstrip("/")
    return fnmatch.fnmatchcase(case_id, pattern) or (
        bool(folder) and fnmatch.fnmatchcase(case_id, folder + "/*")
    )
