"""Where ``hookrun predict`` and ``export`` write: checked before any work, written whole or not at all."""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hookrun.hooks.files import WRITE_ERRNOS, describe_write_failure
from hookrun.runner.errors import HookrunError, SetupError


class OutputWriteError(HookrunError):
    """The disk refused writing an output (no space, file too large, read-only), part way. Exit code 1.

    Nothing is left at the output's path (it was written to a temporary name, now removed).
    """

    exit_code = 1


def refused_write(err: BaseException, temporary: Path, target: Path) -> OutputWriteError | None:
    """The one-line error for ``err`` if it is the disk refusing a write under ``temporary``, else None.

    Recognises what :func:`hookrun.hooks.files.describe_write_failure` does (an ``OSError`` with a write
    errno and a file name; TensorFlow's ``FILE; No space left on device`` and ``FILE; File too large``,
    raised as ``ResourceExhaustedError`` or ``OutOfRangeError``), and an ``OSError`` with a write errno
    but no file name (a ``write()`` on an open file: ``predict``'s CSV). The file is named by its final
    path (``temporary`` replaced by ``target``), not the temporary one no user ever sees.

    Args:
        err: the exception raised while the output was written.
        temporary: the temporary path the output was written to.
        target: the output's path.
    """
    line = describe_write_failure(err)
    if line is None:
        current: BaseException | None = err
        while current is not None and line is None:
            if isinstance(current, OSError) and current.errno in WRITE_ERRNOS:
                line = f"cannot write {temporary}: [Errno {current.errno}] {current.strerror or current}"
            current = current.__cause__ or current.__context__
    if line is None:
        return None
    line = line.replace(str(temporary), str(target))
    return OutputWriteError(
        f"{line}; nothing was written at {target} (free space, raise the file-size limit, or choose another "
        "--output)"
    )


def check_output_path(path: str | Path, overwrite: bool, what: str, option: str = "--output") -> Path:
    """Check an output path before anything is computed: it is new or may be replaced, and can be created.

    Args:
        path: the output file or directory.
        overwrite: ``--overwrite`` was given.
        what: ``file`` or ``directory``: what will be written there (for messages and the kind check).
        option: the option naming it, for messages.

    Returns:
        The path, absolute (the symlink itself when it is one: it is replaced, not written through).

    Raises:
        SetupError: a parent is a file; the path exists without ``overwrite``; with
            ``overwrite`` it is a directory where a file goes (or the reverse), or neither a regular
            file, a directory nor a symlink (a device such as ``/dev/null``, a FIFO: replacing it
            would remove it).
    """
    given = Path(path)
    target = Path(os.path.abspath(given))
    existing = target.parent
    while not existing.exists():  # missing directories are created when the output is written
        existing = existing.parent
    if not existing.is_dir():
        raise SetupError(f"{option} {given}: {existing} is not a directory; choose another path")
    if target.exists() or target.is_symlink():
        if not overwrite:
            raise SetupError(
                f"{option} {given}: already exists; pass --overwrite to replace it, or choose another path"
            )
        mode = target.lstat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            raise SetupError(
                f"{option} {given}: is not a regular {what} (a device, FIFO or socket), and --overwrite would "
                "remove it; choose another path"
            )
        is_dir = target.is_dir() and not target.is_symlink()
        if not target.is_symlink() and is_dir != (what == "directory"):  # a symlink itself is replaced
            kind = "a directory" if is_dir else "a file"
            raise SetupError(f"{option} {given}: is {kind}, and a {what} is written there; choose another path")
    return target


#: Entries of a run directory (and of its ``best/``) that hookrun writes and reads back: an output there
#: would replace the run's own state (``config.yaml``, the preprocessing, checkpoints, status, history).
RUN_FILES = frozenset(
    {"config.yaml", "preprocessing.json", "checkpoint", "summary.json", "graph.pbtxt", "history.csv", "best"}
)
_RUN_FILE = re.compile(r"(^events\.out\.tfevents\.)|(^eval-\d+(-[^/]*)?\.json$)|(-\d+\.(index|meta|data-\d+-of-\d+)$)")


def is_run_file(name: str) -> bool:
    """Whether ``name`` is one of a run directory's own entries (:data:`RUN_FILES`, checkpoint files, events)."""
    return name in RUN_FILES or _RUN_FILE.search(name) is not None


def check_not_replacing(target: Path, protected: list[Path], option: str = "--output") -> None:
    """Refuse an output that would replace (or hold) one of ``protected``: the run directory, an input file.

    Args:
        target: the checked output path (:func:`check_output_path`).
        protected: paths the output must not be, nor be a parent of; for a directory among them (the
            run directory), nor one of its own entries (:func:`is_run_file`) in it or in its ``best/``.
        option: the option naming it, for messages.

    Raises:
        SetupError: ``target`` is one of them, a directory above one, or a run directory's own file
            (symlinks resolved).
    """
    real = target.resolve()
    placed = Path(os.path.realpath(target.parent)) / target.name  # a symlink there is replaced, not followed
    for path in protected:
        kept = path.resolve()
        if real == kept or real in kept.parents:
            raise SetupError(f"{option} {target}: would replace {path}, which this command reads; choose another path")
        if kept.is_dir():
            for candidate in {real, placed}:
                if candidate.parent in (kept, kept / "best") and is_run_file(candidate.name):
                    raise SetupError(
                        f"{option} {target}: would replace {candidate}, a file of the run directory {path}; "
                        "choose another path"
                    )


@contextmanager
def atomic_file(target: Path) -> Iterator[Path]:
    """A temporary file beside ``target``, renamed onto it when the block ends without an error (else removed).

    Missing parent directories of ``target`` are created. The file gets the permissions of a new file
    (``0o666`` less the umask), not ``mkstemp``'s ``0o600``.

    Raises:
        SetupError: the directory cannot be made or written to (exit 2).
        OutputWriteError: the disk refused a write in the block (no space, file too large; exit 1).
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise _unwritable(target, err) from None
    os.fchmod(fd, 0o666 & ~_umask())
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        os.replace(temporary, target)
    except Exception as err:
        refused = refused_write(err, temporary, target)
        if refused is not None:
            raise refused from err
        raise
    finally:
        temporary.unlink(missing_ok=True)


@contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """A path (not yet created) in a temporary directory beside ``target``, moved onto ``target`` on success.

    A ``target`` that exists (``--overwrite``) is moved aside first and removed once the new one is in place;
    on an error nothing at ``target`` changes and the temporary directory is removed. Missing parent
    directories of ``target`` are created.

    Raises:
        SetupError: the directory cannot be made or written to (exit 2).
        OutputWriteError: the disk refused a write in the block (no space, file too large: TensorFlow's
            ``ResourceExhaustedError``; exit 1), naming the file by its path under ``target``.
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        holder = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as err:
        raise _unwritable(target, err) from None
    inside = holder / target.name
    try:
        yield inside
        old = holder / "replaced"
        if target.exists() or target.is_symlink():
            os.replace(target, old)
        os.replace(inside, target)
    except Exception as err:
        refused = refused_write(err, inside, target)
        if refused is not None:
            raise refused from err
        raise
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def _unwritable(target: Path, err: OSError) -> SetupError:
    """The one-line error for an output whose directory cannot be made or written to."""
    return SetupError(
        f"--output {target}: cannot write in {target.parent} ({err.strerror or err}); choose another path"
    )


def _umask() -> int:
    """The process's umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
