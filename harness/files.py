"""Writing files so that nothing is lost: the one atomic writer of conform.

Golden files, recordings, reports and baselines are all written here, through a temporary file in
the same folder that replaces (or, for a new recording, takes) the name in one step: a reader sees
the old file or the new one, never half of either, and an interrupted write leaves no stray file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from harness.errors import ConformError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(
    path: Path, data: str | bytes | Iterable[str], *, replace: bool = True
) -> None:
    """Write `data` to `path` in one step.

    `data` is text (written as UTF-8 with LF line ends), bytes (written as they are), or text in
    pieces, written as they come. With `replace=False` an existing `path` is left alone and
    FileExistsError is raised, also when another process takes the name meanwhile.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a written file gets the usual mode
        if isinstance(data, bytes):
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as text_out:
                if isinstance(data, str):
                    text_out.write(data)
                else:
                    text_out.writelines(data)
                text_out.flush()
                os.fsync(text_out.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            _take_new_name(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _take_new_name(tmp: Path, path: Path) -> None:
    try:
        os.link(tmp, path)  # atomic, and fails if the name was taken meanwhile
    except FileExistsError:
        raise
    except OSError:
        # A file system without hard links: check, then rename (a narrow race, but no loss).
        if path.exists():
            raise FileExistsError(str(path)) from None
        os.replace(tmp, path)


def write_report(path: Path, text: str) -> None:
    """Write a report's text to `path`, atomically; ConformError when that cannot be done."""
    try:
        write_atomically(path, text)
    except OSError as exc:
        raise cannot_write(path, exc) from None


def cannot_write(path: Path, exc: OSError) -> ConformError:
    """The setup error for a file conform could not write."""
    return ConformError(
        f"cannot write {path}: {exc.strerror or exc}", hint="check the path and its folder"
    )
