"""Writing files so that nothing is lost: the one writer of conform, and the checks before it.

Golden files, recordings, reports and baselines are all written here. A regular file is written
through a temporary file in the same folder that replaces (or, for a new recording, takes) the
name in one step: a reader sees the old file or the new one, never half of either. What is not a
regular file is never replaced: a device or a FIFO (`--json /dev/null`, `--json >(jq .)`) is
written through, a folder or socket is refused, and a symbolic link is followed (the file it points
to is written, atomically when it is a regular one, and the link stays a link).

Temporary files carry a mark only conform writes, and their writer's lock
(`harness.temp_files`): one left by a killed run is found by `stale_temp_files`, and a user's file
or a write under way elsewhere is never touched. The running ones are removed on every signal
conform handles (`interruptible`, `remove_temp_files`). Write failures (disk full, read-only, no
permission) are `WriteError`s, one line for the user; `check_outputs` refuses, before a run, one
path named for two outputs, a path that cannot be a file, or an output that would overwrite an
input.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any

from harness.errors import ConformError, Interrupted, WriteError
from harness.temp_files import (
    conform_temp_file,
    make_temp,
    remove_stale_temp_file,
    stale_temp_files,
    temp_name,
)

__all__ = [
    "HANDLED_SIGNALS",
    "cannot_write",
    "check_outputs",
    "conform_temp_file",
    "environment_error",
    "interruptible",
    "remove_stale_temp_file",
    "remove_temp_files",
    "same_file",
    "stale_temp_files",
    "temp_name",
    "through_stdout",
    "write_atomically",
    "write_report",
]

#: The signals conform handles; each removes the temporary files being written.
HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_live_temps: set[Path] = set()
_HINTS = {
    errno.ENOSPC: "the disk is full: free some space and run it again",
    errno.EDQUOT: "the disk quota is used up: free some space and run it again",
    errno.EROFS: "the file system is read-only: write somewhere else",
    errno.EACCES: "no permission: check the file and its folder, or write somewhere else",
    errno.EPERM: "no permission: check the file and its folder, or write somewhere else",
    errno.ENAMETOOLONG: "a name in it is longer than the file system allows (255 bytes on "
    "most): give a shorter one",
}

_LIMIT_HINTS = {
    errno.EMFILE: "too many open files: raise the limit (ulimit -n) or use fewer --jobs",
    errno.ENFILE: "the system is out of file handles: close other programs and run it again",
}


def read_small(path: Path | str, limit: int) -> bytes | None:
    """The bytes of the file at `path`, or None when it holds more than `limit`; OSError as
    `open` raises it (a missing file, a folder, no permission).

    A few system calls, without `open`'s file objects: a run reads two small files per case (its
    recording and its golden file), and `open` cost more than reading them did.
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        status = os.fstat(descriptor)
        if status.st_size > limit:
            return None
        first = os.read(descriptor, status.st_size + 1)
        if stat.S_ISREG(status.st_mode) and len(first) == status.st_size:
            return first  # a regular file read short is at its end
        pieces, total = [first], len(first)
        while total <= limit and (piece := os.read(descriptor, 2**16)):
            pieces.append(piece)
            total += len(piece)
        return b"".join(pieces) if total <= limit else None
    finally:
        os.close(descriptor)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def cannot_write(path: Path, exc: OSError) -> WriteError:
    """The setup error for a file conform could not write."""
    hint = _HINTS.get(exc.errno or 0, "check the path and its folder")
    return WriteError(path, f"cannot write {path}: {exc.strerror or exc}", hint=hint)


def write_atomically(
    path: Path, data: str | bytes | Iterable[str], *, replace: bool = True
) -> None:
    """Write `data` to `path`: in one step for a regular file, through a device or FIFO.

    `data` is text (written as UTF-8 with LF line ends), bytes (written as they are), or text in
    pieces, written as they come. A symbolic link is followed. With `replace=False` an existing
    `path` is left alone and FileExistsError is raised, also when another process takes the name
    meanwhile. WriteError (a ConformError) when the file cannot be written.
    """
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = os.stat(path).st_mode  # through every link, /proc's magic ones too
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise cannot_write(path, exc) from None
    if mode is not None and not replace:
        raise FileExistsError(str(path))
    if mode is not None and (not stat.S_ISREG(mode) or _through_proc(path)):
        # `/dev/stdout` redirected to a file: a rename would drop what went to stdout before.
        _write_through(path, path, mode, data)
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_by_rename(target, data, replace=replace, mode=mode)
    except FileExistsError:
        if not replace:
            raise
        raise cannot_write(path, FileExistsError(errno.EEXIST, "exists")) from None
    except OSError as exc:
        raise cannot_write(path, exc) from None


def _through_proc(path: Path) -> bool:
    """True when `path` leads through `/proc` (`/dev/stdout`, `/dev/fd/3`): a file descriptor
    of a process, which only writing through reaches."""
    return _proc_target(path) is not None


def _proc_target(path: Path) -> str | None:
    """The `/proc/...` path `path` leads to through its links and folders, or None."""
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own bound on links followed
        folder, name = os.path.split(current)
        current = os.path.join(os.path.realpath(folder), name)
        if current == "/proc" or current.startswith("/proc/"):
            return current
        if not os.path.islink(current):
            return None
        current = os.path.normpath(os.path.join(folder, os.readlink(current)))
    return None


def through_stdout(path: Path) -> bool:
    """True when writing `path` writes to conform's own stdout or stderr (`/dev/stdout`)."""
    return _own_descriptor(path) in (1, 2)


def _own_descriptor(path: Path) -> int | None:
    """The descriptor of this process that `path` names (`/dev/stdout`: 1), or None."""
    target = _proc_target(path)
    if target is None:
        return None
    folder, name = os.path.split(target)
    if folder in (f"/proc/{os.getpid()}/fd", "/proc/self/fd", "/proc/thread-self/fd"):
        return int(name) if name.isdigit() else None
    return None


def _write_through(path: Path, target: Path, mode: int, data: str | bytes | Iterable[str]) -> None:
    """Write into a device, a FIFO or a process's descriptor as it is: replacing it would destroy
    it. Appending: `/dev/stdout` redirected to a file keeps what conform printed before."""
    if stat.S_ISDIR(mode):
        raise WriteError(path, f"cannot write {path}: it is a folder", hint="give a file name")
    if stat.S_ISSOCK(mode):
        raise WriteError(path, f"cannot write {path}: it is a socket", hint="give a file name")
    descriptor = _own_descriptor(path)
    if descriptor is not None:
        _write_descriptor(path, descriptor, data)
        return
    try:
        if isinstance(data, bytes):
            with open(target, "ab") as out:
                out.write(data)
        else:
            with open(target, "a", encoding="utf-8", newline="\n") as text_out:
                text_out.writelines([data] if isinstance(data, str) else data)
    except OSError as exc:
        raise cannot_write(path, exc) from None


def _write_descriptor(path: Path, descriptor: int, data: str | bytes | Iterable[str]) -> None:
    """Write to one of conform's own descriptors (`/dev/stdout`) at its own offset, after what
    conform printed there: reopening it would start a second offset that overwrites."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError, AttributeError):
            if stream.fileno() == descriptor:
                stream.flush()
    pieces = [data] if isinstance(data, str | bytes) else data
    try:
        for piece in pieces:
            view = memoryview(piece if isinstance(piece, bytes) else piece.encode("utf-8"))
            while view:
                view = view[os.write(descriptor, view) :]
    except OSError as exc:
        raise cannot_write(path, exc) from None


def _write_by_rename(
    path: Path, data: str | bytes | Iterable[str], *, replace: bool, mode: int | None
) -> None:
    # The file is made and registered with the signals conform handles held back: a signal in
    # between would find a temporary file it does not know of, and leave it behind.
    held = threading.current_thread() is threading.main_thread()
    if held:
        signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED_SIGNALS)
    try:
        fd, tmp = make_temp(path.parent, path.name)
        _live_temps.add(tmp)
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)
    try:
        # A new file gets the usual mode, a replaced one keeps its own.
        os.fchmod(fd, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
        # The descriptor stays open (and its lock held) until the file has its name.
        if isinstance(data, bytes):
            with open(fd, "wb", closefd=False) as out:
                out.write(data)
        else:
            with open(fd, "w", encoding="utf-8", newline="\n", closefd=False) as text_out:
                if isinstance(data, str):
                    text_out.write(data)
                else:
                    text_out.writelines(data)
        os.fsync(fd)
        if replace:
            os.replace(tmp, path)
        else:
            _take_new_name(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
        _live_temps.discard(tmp)
        os.close(fd)


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
    """Write a report's text to `path` (as `write_atomically`); WriteError when it cannot be."""
    write_atomically(path, text)


# --- outputs against inputs -------------------------------------------------------------------


def _identity(path: Path) -> tuple[str, tuple[int, int] | None, int | None]:
    """The resolved path, the (device, inode) pair and the mode of what `path` names."""
    real = os.path.realpath(path)
    try:
        info = os.stat(real)
    except OSError:
        return real, None, None
    return real, (info.st_dev, info.st_ino), info.st_mode


def same_file(a: Path, b: Path) -> bool:
    """True when `a` and `b` name one file (through links too), existing or not yet."""
    real_a, node_a, _ = _identity(a)
    real_b, node_b, _ = _identity(b)
    return real_a == real_b or (node_a is not None and node_a == node_b)


def check_outputs(outputs: Mapping[str, Path | None], inputs: Iterable[Path]) -> None:
    """WriteError when two outputs name one file, or an output would overwrite an input.

    `outputs` maps each option (`--json`) to its path (None: not asked for); `inputs` are the
    files the command reads (the --xfail file, the recordings, the golden files), and a folder
    among them stands for everything below it. Devices and FIFOs may be shared: nothing there is
    replaced. Call it before the work starts, so that a refused run has destroyed nothing.
    """
    seen: list[tuple[str, Path, str, tuple[int, int] | None]] = []
    for option, path in outputs.items():
        if path is None:
            continue
        _check_writable(option, path)
        real, node, mode = _identity(path)
        if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            continue  # written through: two reports into /dev/null lose nothing
        for other, other_path, other_real, other_node in seen:
            if real == other_real or (node is not None and node == other_node):
                raise WriteError(
                    path,
                    f"{path} is named by both {other} and {option}" + _alias(path, other_path),
                    hint="give each output its own file",
                )
        seen.append((option, path, real, node))
    folders: list[tuple[str, Path]] = []
    files: dict[str, Path] = {}
    nodes: dict[tuple[int, int], Path] = {}
    for item in inputs:
        real, node, mode = _identity(item)
        if mode is not None and stat.S_ISDIR(mode):
            folders.append((real.rstrip(os.sep) + os.sep, item))
            continue
        files[real] = item
        if node is not None:
            nodes[node] = item
    for option, path, real, node in seen:
        hit = files.get(real) or (nodes.get(node) if node is not None else None)
        if hit is None:
            inside = [item for folder, item in folders if real.startswith(folder)]
            if inside:
                verb = "overwrite a file in" if node is not None else "write into"
                raise WriteError(
                    path,
                    f"{option} {path} would {verb} {inside[0]}, a folder this command reads",
                    hint=f"give {option} a file outside the suite",
                )
        if hit is not None:
            raise WriteError(
                path,
                f"{option} {path} would overwrite {hit}, an input of this command",
                hint=f"give {option} a file outside the suite and the files it reads",
            )


def _check_writable(option: str, path: Path) -> None:
    """WriteError when `path` cannot become a file conform writes: it is a folder, a folder on
    its way is a file, or the folder it goes into cannot be written (read-only, no permission).
    A folder on its way that does not exist yet is made when the file is written."""
    try:
        mode: int | None = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise _refused(option, path, exc.strerror or str(exc)) from None
    if mode is not None and stat.S_ISDIR(mode):
        raise _refused(option, path, "it is a folder")
    if (mode is not None and not stat.S_ISREG(mode)) or _through_proc(path):
        return  # a device, a FIFO or a descriptor (`/dev/stdout`): written through
    # A symbolic link is followed: the file it points to is written, in its own folder.
    folder = Path(os.path.realpath(path) if os.path.islink(path) else os.path.abspath(path)).parent
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise _refused(option, path, f"{folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        why = "read-only" if _read_only(folder) else "no permission to write there"
        raise _refused(option, path, f"{folder} cannot be written ({why})")


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _refused(option: str, path: Path, why: str) -> WriteError:
    return WriteError(
        path, f"cannot write {path}: {why}", hint=f"give {option} a file you can write"
    )


def _alias(path: Path, other: Path) -> str:
    return "" if str(path) == str(other) else f" (as {other})"


# --- temporary files and signals --------------------------------------------------------------


def remove_temp_files() -> None:
    """Remove the temporary files being written now (from a signal handler, before exiting)."""
    for tmp in list(_live_temps):
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        _live_temps.discard(tmp)


@contextmanager
def interruptible() -> Iterator[None]:
    """Within: SIGINT, SIGTERM and SIGHUP remove the temporary files being written and raise
    `Interrupted` (the command then exits 128 + the signal's number).

    A second signal while the first is handled is ignored: the command is already stopping.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}
    stopping = False

    def handle(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        remove_temp_files()
        if stopping:
            return
        stopping = True
        raise Interrupted(signum)

    for signum in HANDLED_SIGNALS:
        previous[signum] = signal.signal(signum, handle)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_IGN if stopping else handler)


def environment_error(exc: OSError) -> ConformError | None:
    """The one-line error for an OSError the world caused (disk full, read-only, no permission,
    too many open files), or None when it looks like a bug."""
    hint = _HINTS.get(exc.errno or 0) or _LIMIT_HINTS.get(exc.errno or 0)
    if hint is None:
        return None
    text = exc.strerror or str(exc)
    message = f"{exc.filename}: {text}" if exc.filename is not None else text
    return ConformError(message, hint=hint)
