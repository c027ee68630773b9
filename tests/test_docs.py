"""The documentation stays true to the code: every dotted `harness.`/`reference.` name in the
docs, the README, docstrings and comments imports; every repository path they name exists; every
relative link and anchor resolves; the package map is written once; numbers about the suite are
the suite's."""

from __future__ import annotations

import importlib
import re
import signal
from functools import cache
from pathlib import Path

import click
import pytest

from harness.check.modes import MODES
from harness.suite.cases import Suite

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
SOURCES = sorted([*(ROOT / "harness").rglob("*.py"), *(ROOT / "reference").rglob("*.py")])
#: A dotted name of ours: `harness.pipeline.run_target`, `reference.choices` (not a file name).
_DOTTED = re.compile(
    r"(?<![\w./-])((?:harness|reference)(?:\.[A-Za-z_]\w*)+)(?![\w/-]|\.(?:py|md|json|toml)\b)"
)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
#: The CHANGELOG records names as they were when each version shipped.
_HISTORY = {ROOT / "CHANGELOG.md"}


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def _names(path: Path) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        found += [
            (number, m.group(1))
            for m in _DOTTED.finditer(line)
            if not re.search(r"\.(py|md|json|toml|sse|http|xfail|mjs|go|rs)$", m.group(1))
        ]
    return found


@pytest.mark.parametrize(
    "path",
    [p for p in DOCS + SOURCES if p not in _HISTORY],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_dotted_name_imports(path: Path) -> None:
    broken = [f"{path.name}:{n}: {name}" for n, name in _names(path) if not _resolves(name)]
    assert not broken, "names that do not import:\n" + "\n".join(broken)


def test_the_checker_finds_a_stale_name(tmp_path: Path) -> None:
    stale = tmp_path / "stale.md"
    stale.write_text("See `harness.results` and harness.pipeline.run_target, not reference.py.\n")
    assert [name for _, name in _names(stale)] == ["harness.results", "harness.pipeline.run_target"]
    assert not _resolves("harness.results") and _resolves("harness.pipeline.run_target")


#: A path in the repository: `harness/check/modes.py`, `tests/hostile/`, `benchmarks/scale.py`.
_PATH = re.compile(
    r"(?<![\w./<>$-])((?:harness|reference|tests|benchmarks|examples|docs|recordings|golden|\.ci)"
    r"/[\w./-]*)"
)
#: Paths a page or a message names that are not in a checkout, on purpose.
_NOT_IN_THE_TREE = {
    "harness/_suite/": "the shipped suite's place in a built wheel",
    "recordings/mine/": "an example of a user's own folder in their suite",
    "recordings/fuzz/stream.sse": "the scratch recording `conform fuzz` reports a difference in",
}


def _paths(path: Path) -> list[tuple[int, str]]:
    """The repository paths a file names, leaving out patterns (`recordings/<case id>.http`,
    `synthetic/r8_*`) and placeholders (`recordings/NAME.http`)."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for m in _PATH.finditer(line):
            name = m.group(1).rstrip(".")
            if line[m.end() : m.end() + 1] in ("*", "<", "{", "[", "?"):
                continue
            if re.search(r"/[A-Z][A-Z_]*(?:[./]|$)", name):
                continue
            found.append((number, name))
    return found


@pytest.mark.parametrize(
    "path",
    [p for p in DOCS + SOURCES if p not in _HISTORY],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_repository_path_exists(path: Path) -> None:
    """A file or folder a page, docstring or comment names (`tests/test_layout.py`,
    `harness/check/known_fields.py`) is there: a moved module or test cannot leave its old name
    behind in the docs."""
    missing = [
        f"{path.name}:{n}: {name}"
        for n, name in _paths(path)
        if name not in _NOT_IN_THE_TREE and not (ROOT / name).exists()
    ]
    assert not missing, "paths that are not in the repository:\n" + "\n".join(missing)


def test_the_path_checker_finds_a_moved_file(tmp_path: Path) -> None:
    stale = tmp_path / "stale.md"
    stale.write_text(
        "See harness/known_fields.py and `harness/check/modes.py`, not recordings/NAME.http,\n"
        "recordings/<case id>.http or golden/synthetic/r8_*.json.\n"
    )
    assert [name for _, name in _paths(stale)] == [
        "harness/known_fields.py",
        "harness/check/modes.py",
    ]
    assert not (ROOT / "harness/known_fields.py").exists()
    assert (ROOT / "harness/check/modes.py").exists()


@cache
def _anchors(path: Path) -> frozenset[str]:
    """The anchors GitHub makes of a Markdown file's headings."""
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    slugs: list[str] = []
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = slugs.count(slug) + sum(s.startswith(slug + "-") for s in slugs)
        slugs.append(slug if slug not in slugs else f"{slug}-{count}")
    return frozenset(slugs)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(path: Path) -> None:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        where = (path.parent / file).resolve() if file else path
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
            broken.append(f"{target}: no heading makes #{anchor}")
    assert not broken, "\n".join(broken)


def test_the_package_map_is_written_once() -> None:
    """docs/layout.md holds the map of harness/; the README and the package docstring link to it
    and do not draw their own."""
    import harness

    layout = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    for stage in ("pipeline/", "reports/", "check/", "suite/", "drive/"):
        assert f"`{stage}`" in layout, stage
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/layout.md" in readme and "docs/layout.md" in (harness.__doc__ or "")
    for text in (readme, harness.__doc__ or ""):
        assert "drive/     " not in text and "| drivers |" not in text


def _suite_numbers() -> dict[str, int]:
    suite = Suite.open(None)
    cases = suite.cases()
    real = sum(case.case_id.startswith("llama-server/") for case in cases)
    return {
        "cases": len(cases),
        "real captures": real,
        "synthetic cases": len(cases) - real,
        "runs": len(cases) * len(MODES),
        "modes": len(MODES),
    }


_NUMBER = re.compile(
    r"\b(\d{1,3}(?:,\d{3})*|\d+)\s+(cases|real captures|synthetic cases|runs|modes)\b"
)
_WORDS = {"seven": 7, "six": 6, "eight": 8, "nine": 9}
#: Pages a script regenerates with the figures of their own run, and the history.
_GENERATED = {ROOT / "CHANGELOG.md", ROOT / "docs" / "matrix.md"}


def _in_generated_block(lines: list[str], at: int) -> bool:
    """True when line `at` stands between a `<!-- NAME:begin -->` and its `<!-- NAME:end -->`:
    figures a script writes from its own run (docs/clients.md's, tests/tools/clients_docs.py)."""
    for line in reversed(lines[:at]):
        if re.fullmatch(r"<!-- [\w-]+:end -->", line.strip()):
            return False
        if re.fullmatch(r"<!-- [\w-]+:begin -->", line.strip()):
            return True
    return False


def test_numbers_about_the_suite_are_the_suites() -> None:
    """A number of cases (100 or more), runs (1,000 or more) or modes in the docs is the
    shipped suite's own; smaller counts are examples and are left alone."""
    actual = _suite_numbers()
    wrong = []
    for path in DOCS:
        if path in _GENERATED:
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            if _in_generated_block(lines, number - 1):
                continue
            for value, noun in _NUMBER.findall(line):
                n = int(value.replace(",", ""))
                small = n < {"runs": 1000, "modes": 5}.get(noun, 100)
                if not small and n != actual[noun]:
                    wrong.append(
                        f"{path.name}:{number}: {value} {noun} (the suite has {actual[noun]})"
                    )
            for word, n in _WORDS.items():
                if f"{word} modes" in line.lower() and n != actual["modes"]:
                    wrong.append(f"{path.name}:{number}: {word} modes ({actual['modes']})")
    assert not wrong, "\n".join(wrong)


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_starts_with_the_two_set_up_commands() -> None:
    blocks = re.findall(r"^```\w*\n(.*?)^```", _readme(), re.DOTALL | re.MULTILINE)
    assert [b.strip() for b in blocks[:2]] == [
        "pip install . && conform run reference:Assembler",
        "pip install -e '.[test]' && pytest",
    ]


def _commands() -> dict[str, click.Command]:
    """Every `conform` command by its full name: `run`, `golden update`, ..."""
    from harness.cli import main

    found: dict[str, click.Command] = {}
    for name in main.list_commands(click.Context(main)):
        command = main.get_command(click.Context(main), name)
        assert command is not None
        if isinstance(command, click.Group):
            found.update({f"{name} {sub}": c for sub, c in command.commands.items()})
        else:
            found[name] = command
    return found


def _command_rows() -> dict[str, str]:
    """The README's commands table: each command's name and the rest of its row."""
    section = _readme().split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for row in re.findall(r"^\| `conform ([a-z]+(?: [a-z]+)?)[^|]*\|(.*)\|$", section, re.M):
        rows[row[0]] = row[1]
    return rows


def test_the_commands_table_is_the_commands() -> None:
    """Every command is in the README's table, and every option the table names is one of that
    command's."""
    commands, rows = _commands(), _command_rows()
    assert sorted(rows) == sorted(commands)
    unknown = []
    for name, row in rows.items():
        options = {o for p in commands[name].params for o in [*p.opts, *p.secondary_opts]}
        unknown += [
            f"conform {name} {o}" for o in re.findall(r"`(--?[a-z][\w-]*)", row) if o not in options
        ]
    assert not unknown, "options the commands table names that do not exist: " + ", ".join(unknown)


def test_the_exit_code_table_is_the_codes() -> None:
    """The README's one exit-code table has a row for each code conform exits with, and the
    signal codes it names are 128 + those signals' numbers here."""
    section = _readme().split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    codes = re.findall(r"^\| ([\w+]+) \|", section, re.M)
    assert codes[1:] == ["0", "1", "2", "3", "128+N", str(128 + signal.SIGPIPE)]
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        assert f"{128 + getattr(signal, name)} " in section and name in section, name
    others = [p for p in DOCS if p.name not in ("README.md", "CHANGELOG.md")]
    for path in others:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\| *(?:code|exit)", text, re.M | re.I), (
            f"{path.name} draws an exit-code table: link to README.md#exit-codes"
        )


def test_every_page_is_linked_from_the_readme() -> None:
    """A reader finds every page from the README: none is left where only its author knows it."""
    linked = {
        (ROOT / target.partition("#")[0]).resolve()
        for target in _LINK.findall(_FENCE.sub("", _readme()))
        if not re.match(r"[a-z]+:", target)
    }
    orphans = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in linked]
    assert not orphans, "pages the README does not link: " + ", ".join(orphans)


def test_the_readmes_failure_example_is_what_conform_prints(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README's "Reading a failure" shows a real run: its command, run here, prints its
    lines (apart from the time taken and where the recording is shown from)."""
    from tests.conftest import conform

    section = _readme().split("\n## Reading a failure\n", 1)[1]
    block = re.search(r"^```\n\$ conform (.*?)\n(.*?)^```", section, re.DOTALL | re.MULTILINE)
    assert block is not None
    monkeypatch.chdir(ROOT / "tests")
    code, output = conform(*block.group(1).split())

    def plain(text: str) -> list[str]:
        text = re.sub(r"in \d+\.\d+ s\)", "in ... s)", text)
        return [line.replace(f"{ROOT}/", "") for line in text.splitlines()]

    assert code == 1
    assert plain(output) == plain(block.group(2))
