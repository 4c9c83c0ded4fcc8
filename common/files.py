"""Run-directory files, shared by the hooks and the runner: crash-safe writes, per-task names, write failures.

Every file hookrun writes in a run directory is either written to a fresh temporary name
(``O_CREAT | O_EXCL``) and renamed over its destination, or opened with ``O_NOFOLLOW``: a symlink
planted in a run directory never redirects a write, and no file hookrun did not create is truncated.
"""

from __future__ import annotations

import errno
import itertools
import os
import re
import tempfile
from pathlib import Path
from typing import TextIO

from hookrun.common.errors import HookrunError

#: Errors that can only mean "the disk refused the write" (errno values): file too large, no space
#: left, quota exceeded, read-only file system.
WRITE_ERRNOS = frozenset({errno.EFBIG, errno.ENOSPC, errno.EDQUOT, errno.EROFS})

#: Suffixes that writers add to a file's name while it is being written (TensorFlow's atomic
#: writes add ``.tmp<32 hex digits>``, its checkpoint writer ``.tempstate<digits>``).
_TEMP_SUFFIX = re.compile(r"(\.tmp[0-9a-f]{32}|\.tempstate\d*)$")
#: hookrun's own: :func:`atomic_write_text`'s ``.<name>.<8 random>.tmp`` and the writability probe.
_OWN_TEMP = re.compile(r"^(\..+\.[a-z0-9_]{8}\.tmp|\.write-probe\.[a-z0-9_]{8})$")


class RunDirWriteError(HookrunError):
    """A run-directory file could not be written (disk full, file too large, read-only). Exit code 1.

    Attributes:
        path: the file (the destination, not its temporary name).
        errno: the ``errno`` value, e.g. ``errno.ENOSPC`` (28).
    """

    exit_code = 1

    def __init__(self, path: Path | str, err: OSError) -> None:
        self.path = str(path)
        self.errno = err.errno
        super().__init__(f"cannot write {self.path}: [Errno {err.errno}] {err.strerror or err}")


def atomic_write_text(path: Path, text: str, durable: bool = True) -> None:
    """Write ``text`` to ``path`` atomically: a temporary file in the same directory, then rename.

    A crash of the process leaves either the old file or the new one, never a truncated one. The
    temporary file is created with ``O_EXCL`` and the rename replaces a symlink at ``path`` rather
    than writing through it. With ``durable`` the content is also ``fsync``-ed before the rename, so a
    crash of the machine does not leave an empty file either.

    Args:
        path: destination file; its directory must exist.
        text: the content (UTF-8).
        durable: ``fsync`` before the rename (2-6 ms a file on a busy disk). Off for a file that
            belongs to one TensorFlow writes without ``fsync`` (a checkpoint): it can be no safer.

    Raises:
        RunDirWriteError: the file could not be written (the temporary file is removed).
    """
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise RunDirWriteError(path, err) from err
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise RunDirWriteError(path, err) from err
        raise


def open_append(path: Path) -> TextIO:
    """Open ``path`` (an existing file hookrun wrote) for appending text, never through a symlink.

    Raises:
        RunDirWriteError: it cannot be opened (``ELOOP`` if it is a symlink).
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        raise RunDirWriteError(path, err) from err
    return os.fdopen(fd, "a", encoding="utf-8", newline="")


def open_new(path: Path) -> TextIO:
    """Create ``path`` afresh for writing text: an existing file (or symlink) of that name is unlinked first.

    The old name is removed, not truncated, so a symlink or hard link there never leads the
    write to another file.

    Raises:
        RunDirWriteError: it cannot be created.
    """
    try:
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as err:
        raise RunDirWriteError(path, err) from err
    return os.fdopen(fd, "w", encoding="utf-8", newline="")


def read_regular_bytes(path: Path | str, *, follow_symlinks: bool = True, limit: int | None = None) -> bytes:
    """The bytes of ``path``, which must be a regular file (a FIFO or device there would block or never end).

    Args:
        path: the file.
        follow_symlinks: False: a symlink at ``path`` is refused (``O_NOFOLLOW``, ``ELOOP``).
        limit: the most bytes the file may hold, or None for no bound.

    Raises:
        OSError: it cannot be read, is not a regular file (``EINVAL``, naming it), is larger than ``limit``
            (``EFBIG``), or changed size while read (``EIO``).
    """
    import stat

    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if limit is None:
            return handle.read()
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
        data = handle.read(limit + 1)
        if len(data) != info.st_size:
            raise OSError(errno.EIO, "changed size while read", str(path))
        return data


def written_name(path: str) -> str:
    """The file a temporary name stands for: ``graph.pbtxt.tmp3e9b…`` → ``graph.pbtxt``."""
    return _TEMP_SUFFIX.sub("", path)


def is_temporary_name(name: str) -> bool:
    """Whether ``name`` is a file that a writer left half-written: TensorFlow's or hookrun's temporaries."""
    return bool(_TEMP_SUFFIX.search(name) or _OWN_TEMP.match(name))


def describe_write_failure(err: BaseException) -> str | None:
    """``cannot write FILE: [Errno N] reason`` when ``err`` (or its cause) is a refused write, else None.

    Recognises :class:`RunDirWriteError`, an ``OSError`` with a write errno (:data:`WRITE_ERRNOS`)
    and a file name, and TensorFlow's errors, whose messages read ``FILE; File too large``.

    Args:
        err: an exception raised while training.
    """
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, RunDirWriteError):
            return str(current)
        if isinstance(current, OSError) and current.errno in WRITE_ERRNOS and current.filename:
            return f"cannot write {written_name(str(current.filename))}: [Errno {current.errno}] {current.strerror}"
        text = str(getattr(current, "message", None) or current)
        for code in sorted(WRITE_ERRNOS):
            reason = os.strerror(code)
            found = re.search(rf"(\S+); {re.escape(reason)}", text)
            if found:
                return f"cannot write {written_name(found.group(1))}: [Errno {code}] {reason}"
        current = current.__cause__ or current.__context__
    return None


def task_file_name(name: str, task: str | None) -> str:
    """The name a task other than the chief gives a run-directory file: ``history-worker1.csv``.

    Args:
        name: the file name the chief (or a run without a cluster) uses, e.g. ``history.csv``.
        task: the task's label (``worker1``), or None for the chief: ``name`` unchanged.

    Returns:
        ``<stem>-<task>.<suffix>``, or ``<name>-<task>`` for a name without a suffix.
    """
    if task is None:
        return name
    stem, dot, suffix = name.rpartition(".")
    return f"{stem}-{task}.{suffix}" if dot and stem else f"{name}-{task}"


#: Deepest nesting of arrays and objects a run-directory JSON file may have: hookrun writes at most 4
#: levels; Python's parser recurses once a level and fails near 1,000 with a ``RecursionError``.
MAX_JSON_DEPTH = 64

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # unrolled: linear, no per-character branch


def loads_json(text: str, max_depth: int = MAX_JSON_DEPTH) -> object:
    """``json.loads(text)``, refusing nesting deeper than ``max_depth`` before parsing it.

    Args:
        text: the JSON text.
        max_depth: most levels of ``[`` / ``{`` (count).

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``), or nested deeper than ``max_depth`` (which
            would otherwise end in a ``RecursionError``).
    """
    import json

    if text.count("[") + text.count("{") <= max_depth:  # cannot nest deeper (hookrun's own files: at once)
        return json.loads(text)
    brackets = re.sub(r"[^\[\]{}]", "", _JSON_STRING.sub("", text))
    steps = map({"[": 1, "{": 1, "]": -1, "}": -1}.__getitem__, brackets)
    if max(itertools.accumulate(steps), default=0) > max_depth:
        raise ValueError(f"nested deeper than {max_depth} levels")
    return json.loads(text)
