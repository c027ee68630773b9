"""`conform matrix`'s front door: the targets named on its command line, and its columns.

Every target runs exactly as `conform run` runs one (`harness.pipeline.run_targets`, over one
shared plan: the suite is opened and each golden file parsed once for all of them); columns read
from `--from` reports are the same typed `Report` records, shards merged with `Report.combine`.
`harness.reports.matrix_table` puts the columns side by side.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.check.modes import SEEDED
from harness.check.options import RunOptions
from harness.errors import ConformError
from harness.pipeline import Target, TargetRun
from harness.reports.matrix_table import Column, default_label
from harness.reports.report import Report
from harness.suite.cases import SHIPPED, default_suite_root

_LABEL = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.+-]*)=(.+)", re.DOTALL)


def split_label(text: str) -> tuple[str | None, str]:
    """`LABEL=REST` as (LABEL, REST); (None, text) without a label (a label is a word of letters,
    digits and `_.+-` before the first `=`). ConformError for an `=` with no label before it."""
    found = _LABEL.fullmatch(text)
    if found:
        return found.group(1), found.group(2)
    if text.startswith("="):
        raise ConformError(
            f"{text!r}: no label before '='", hint="give LABEL=TARGET, or TARGET alone"
        )
    return None, text


def targets_of(
    specs: Sequence[str],
    commands: Sequence[str],
    xfails: Sequence[str],
    settings: Mapping[str, Any],
) -> list[Target]:
    """The targets named on the command line, labelled, each with its --xfail LABEL=FILE and
    the `RunOptions` fields in `settings` (modes, seed, jobs, timeout, strict, chosen_points,
    level), checked by the same rules as `conform run`'s.

    Targets without a label that would share a default one (two classes of one module) are
    labelled by their whole spec instead.
    """
    given = [("python", s) for s in specs] + [("exec", c) for c in commands]
    named = [(kind, *split_label(text)) for kind, text in given]
    defaults = [default_label(spec, kind) for kind, _, spec in named]
    labels = [
        label or (default if defaults.count(default) == 1 else spec)
        for (kind, label, spec), default in zip(named, defaults, strict=True)
    ]
    if len(set(labels)) != len(labels):
        twice = next(label for label in labels if labels.count(label) > 1)
        raise ConformError(f"two targets have the label {twice!r}", hint="give each one LABEL=...")
    files: dict[str, Path] = {}
    for text in xfails:
        label, file = split_label(text)
        if label is None or label not in labels:
            raise ConformError(
                f"--xfail {text!r} names no target",
                hint=f"give LABEL=FILE, LABEL one of: {', '.join(labels)}",
            )
        files[label] = Path(file).absolute()
    targets = []
    for (kind, _, spec), label in zip(named, labels, strict=True):
        options = RunOptions(
            target=spec if kind == "python" else None,
            exec_command=spec if kind == "exec" else None,
            xfail_file=files.get(label),
            **settings,
        )
        targets.append(Target(label, options))
    return targets


def columns_from_reports(given: Sequence[str], *, classes: Sequence[str] = ()) -> list[Column]:
    """Columns from `[LABEL=]REPORT.json` files: reports with the same label (by default, the
    same target) are the shards of one run, merged; with `classes`, only the results of cases
    of those classes of input (`--class`)."""
    grouped: dict[str, list[Report]] = {}
    for text in given:
        label, file = (None, text) if Path(text).is_file() else split_label(text)
        report = Report.load(Path(file))
        key = label or default_label(report.info.target, report.info.kind)
        grouped.setdefault(key, []).append(report)
    return [
        Column(
            label,
            Report.combine(label, reports).of_classes(classes),
            target=reports[0].info.target,
            kind=reports[0].info.kind,
        )
        for label, reports in grouped.items()
    ]


def column_of(run: TargetRun) -> Column:
    """The matrix column of one target's run."""
    xfail = None if run.target.xfail is None else str(run.target.xfail)
    options = run.target.options
    report = None if run.record is None else run.record.report
    return Column(run.target.label, report, xfail, run.error, options.label, options.kind)


def comparable(
    columns: Sequence[Column], *, live: tuple[int, Sequence[str]] | None = None
) -> list[str]:
    """What keeps `columns` (and the targets to run now with `live`'s seed and modes) from being
    compared side by side, as warnings to print; ConformError
    when their runs pushed different bytes (different seeds of a mode that uses the seed): the
    cells would judge different input, and a matrix never puts those side by side silently.

    Columns that ran different suites are said to (a warning): the same suite may lie at other
    paths on other machines, which conform cannot tell apart from another suite by its reports.
    """
    ran = [(c.label, c.report.info) for c in columns if c.report is not None]
    seeded = [(label, info.seed) for label, info in ran if set(info.modes) & set(SEEDED)]
    if live is not None and set(live[1] or SEEDED) & set(SEEDED):  # the targets to run
        seeded.append(("the targets run now", live[0]))
    if len({seed for _, seed in seeded}) > 1:
        shown = ", ".join(f"{label} {seed}" for label, seed in seeded)
        raise ConformError(
            f"the columns were run with different seeds ({shown}): their mutating modes pushed "
            "different payloads, so their cells are not comparable",
            hint="run every target (or every report's run) with one --seed",
        )
    suites = {
        label: tuple(_suite_name(p) for p in info.suites or (info.suite,)) for label, info in ran
    }
    if len(set(suites.values())) > 1:
        shown = "; ".join(f"{label}: {', '.join(names)}" for label, names in suites.items())
        return [f"the columns ran different suites ({shown}): their cells may not be comparable"]
    return []


def _suite_name(path: Path) -> str:
    """A suite as reports of it from any machine name it: `:shipped` for conform's own."""
    try:
        shipped = default_suite_root().resolve()
    except ConformError:
        shipped = None
    resolved = Path(os.path.abspath(path))
    if resolved == shipped or resolved.parts[-2:] == ("harness", "_suite"):
        return SHIPPED
    return str(resolved)
