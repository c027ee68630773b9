"""conform's temporary files: their names, the mark only conform writes into them, and their
writers' locks.

A temporary file is `.NAME.conform-TTTTTTTTCCCCCC.tmp`: a random token and a check of NAME and
token (a keyed hash), so that a user's `.notes.20261206.tmp`, or any name made to look like ours,
is never taken for one; NAME is shortened so that the whole name fits the file system's limit
whenever NAME itself does. The writer holds an `flock` lock on the file from its creation to its
rename (`make_temp`): a file with the mark that nobody holds is a leftover of a killed run
(`stale_temp_files`), whatever process, container or PID namespace wrote it, and it is removed
only while the remover holds that lock (`remove_stale_temp_file`), so a write under way is never
taken.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "TEMP_NAME_EXTRA",
    "conform_temp_file",
    "make_temp",
    "remove_stale_temp_file",
    "stale_temp_files",
    "temp_name",
]

_TEMP_NAME = re.compile(r"^\.(.*)\.conform-([a-z0-9]{8})([0-9a-f]{6})\.tmp$", re.DOTALL)
_TOKEN_LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"
#: What a temporary file's name adds to NAME: `.`, `.conform-`, token and check, `.tmp`.
TEMP_NAME_EXTRA = 1 + len(".conform-") + 8 + 6 + len(".tmp")


def temp_name(name: str, token: str) -> str:
    """The temporary file name for `name` with `token` (8 of `_TOKEN_LETTERS`): NAME (shortened
    by `_make_temp` when needed), the token and its check."""
    return f".{name}.conform-{token}{_check(name, token)}.tmp"


def _check(name: str, token: str) -> str:
    """The mark of a temporary file's name: only conform writes it (6 hex digits of a keyed hash
    of the name and the token)."""
    raw = os.fsencode(name) + b"\0" + token.encode("ascii")
    return hashlib.blake2s(raw, digest_size=3, key=b"conform temporary file").hexdigest()


def _short_name(folder: Path, name: str) -> str:
    """`name`, cut (at a character) so that its temporary file's name fits the file system's
    limit of a name: a name the OS accepts is never refused for its temporary file."""
    size = len(os.fsencode(name))
    if size + TEMP_NAME_EXTRA <= 143:  # within every file system's limit (eCryptfs: 143)
        return name
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    room = max(limit - TEMP_NAME_EXTRA, 1)
    while len(os.fsencode(name)) > room and len(name) > 1:
        name = name[:-1]
    return name


def make_temp(folder: Path, name: str) -> tuple[int, Path]:
    """A new temporary file for `name` in `folder`, open for writing and locked (`flock`) by
    this process: (its descriptor, its path)."""
    short = _short_name(folder, name)
    for _ in range(100):
        token = "".join(secrets.choice(_TOKEN_LETTERS) for _ in range(8))
        tmp = folder / temp_name(short, token)
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # A `golden update` elsewhere may have taken the file for a leftover between its
            # creation and the lock, and removed it: then it is not ours to write.
            if _same_inode(os.fstat(fd), tmp):
                return fd, tmp
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise FileExistsError(errno.EEXIST, f"no free temporary name for {name}")


def _same_inode(status: os.stat_result, path: Path) -> bool:
    try:
        named = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (status.st_dev, status.st_ino)


def conform_temp_file(name: str) -> bool:
    """True when `name` is the name of a temporary file of conform's: its mark checks out."""
    found = _TEMP_NAME.match(name)
    return found is not None and _check(found.group(1), found.group(2)) == found.group(3)


def _unheld(path: Path) -> int | None:
    """A descriptor of `path`, locked, when it is a regular file nobody holds locked (its writer
    is gone); None otherwise. The caller closes it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        status = os.fstat(fd)
        if stat.S_ISREG(status.st_mode):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _same_inode(status, path):
                return fd
    except OSError:
        pass  # held: a writer is at work (BlockingIOError), or the file went meanwhile
    os.close(fd)
    return None


def stale_temp_files(folders: Iterable[Path]) -> list[Path]:
    """Temporary files below `folders` that a killed conform left: they carry conform's mark and
    no writer holds them (see the module's docstring)."""
    found: list[Path] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob(".*.tmp")):
            if not conform_temp_file(path.name):
                continue
            fd = _unheld(path)
            if fd is not None:
                os.close(fd)
                found.append(path)
    return found


def remove_stale_temp_file(path: Path) -> bool:
    """Remove `path` if it is still a leftover (`stale_temp_files`): checked again, and removed
    while this process holds its lock, so a writer's live file is never taken. True if removed.
    OSError when it cannot be removed."""
    if not conform_temp_file(path.name):
        return False
    fd = _unheld(path)
    if fd is None:
        return False
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    finally:
        os.close(fd)
    return True
