"""Where ``hookrun predict`` and ``export`` write: checked before any work, written whole or not at all."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from hookrun.common.errors import HookrunError, SetupError
from hookrun.common.files import WRITE_ERRNOS, describe_write_failure
from hookrun.runner.run_dir.directory import printable_path


class OutputWriteError(HookrunError):
    """The disk refused writing an output (no space, file too large, read-only), part way. Exit code 1.

    Nothing is left at the output's path (it was written to a temporary name, now removed).
    """

    exit_code = 1


def refused_write(err: BaseException, temporary: Path, target: Path) -> OutputWriteError | None:
    """The one-line error for ``err`` if it is the disk refusing a write under ``temporary``, else None.

    Recognises what :func:`hookrun.common.files.describe_write_failure` does (an ``OSError`` with a write
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
        SetupError: an empty path; one the operating system cannot look up (a name too long, a symlink loop
            above it); a parent is a file; the path exists without ``overwrite``; with
            ``overwrite`` it is a directory where a file goes (or the reverse), or neither a regular
            file, a directory nor a symlink (a device such as ``/dev/null``, a FIFO: replacing it
            would remove it).
    """
    if str(path) == "":
        raise SetupError(f"{option}: an empty path (an unset variable?); give a {what}")
    given = Path(path)
    try:
        return _check_output_path(given, overwrite, what, option)
    except (OSError, RuntimeError) as err:  # a name too long, a symlink loop: one line, exit 2
        reason = getattr(err, "strerror", None) or str(err)
        raise SetupError(
            f"{option} {printable_path(given)}: cannot use this path ({reason}); choose another path"
        ) from None


def _check_output_path(given: Path, overwrite: bool, what: str, option: str) -> Path:
    """:func:`check_output_path` once the path is known not to be empty; OSError when it cannot be looked up."""
    target = Path(os.path.abspath(given))
    try:
        os.lstat(target)  # a name too long (ENAMETOOLONG), a symlink loop above it (ELOOP): raised
    except (FileNotFoundError, NotADirectoryError):
        pass  # new, or under a file: named below
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


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def run_owned_path(target: Path, run_dir: Path, hook_paths: Sequence[str] = ()) -> str | None:
    """What of the run ``run_dir`` owns ``target``, whatever names it (a symlink, ``..``, a bind mount), or None.

    Every directory above ``target`` (symlinks resolved, and ``target``'s own parent unresolved: a symlink
    at ``target`` is replaced, not followed) is compared with the run directory by device and inode; when one
    is the run directory, the path below it is looked up in the registry
    (:func:`hookrun.config_schemas.run_files.run_owner`) and among ``hook_paths``.

    Args:
        target: the output path (absolute).
        run_dir: the run directory.
        hook_paths: the run's own hook paths (``history_saver``'s ``filename``, ``checkpoint_dir``), relative.

    Returns:
        Text naming the path and its owner (``best/best.json (best/, written by early_stopping (keep_best))``),
        or None.
    """
    from hookrun.config_schemas.run_files import run_owner

    try:
        run_info = os.stat(run_dir)
    except OSError:
        return None
    for candidate in {Path(os.path.realpath(target)), Path(os.path.realpath(target.parent)) / target.name}:
        below: list[str] = []
        current = candidate
        while not _same_path(current, run_info):
            if current.parent == current:
                break
            below.insert(0, current.name)
            current = current.parent
        else:
            if not below:
                return "the directory itself"
            relative = "/".join(below)
            entry = run_owner(relative)
            if entry is not None:
                return f"{relative} ({entry.name}, written by {entry.owner})"
            for own in hook_paths:
                own = os.path.normpath(own)
                if own != "." and (relative == own or relative.startswith(own + "/")):
                    return f"{relative} ({own}, written by one of its hooks)"
    return None


def _same_path(path: Path, info: os.stat_result) -> bool:
    try:
        return _same(os.stat(path), info)
    except OSError:
        return False


def check_not_replacing(
    target: Path, protected: list[Path], option: str = "--output", hook_paths: list[str] | None = None
) -> None:
    """Refuse an output that would replace (or hold) one of ``protected``: the run directory, an input file.

    Args:
        target: the checked output path (:func:`check_output_path`).
        protected: paths the output must not be, nor be a parent of; for a directory among them (the
            run directory), nor anything in it the run owns (the registry,
            :mod:`hookrun.config_schemas.run_files`, and ``hook_paths``), whatever alias names it.
        option: the option naming it, for messages.
        hook_paths: the run's hooks' own paths, relative to the run directory.

    Raises:
        SetupError: ``target`` is one of them, a directory above one, or a path the run owns, or that any
            hookrun run directory above it owns (another run's ``best/best.json``).
    """
    real = Path(os.path.realpath(target))  # a symlink loop at ``target`` stays itself (it is replaced)
    for path in protected:
        kept = path.resolve()
        if real == kept or real in kept.parents:
            raise SetupError(f"{option} {target}: would replace {path}, which this command reads; choose another path")
        if kept.is_dir():
            owner = run_owned_path(target, kept, hook_paths or [])
            if owner is not None:
                raise SetupError(
                    f"{option} {target}: would replace {owner}, a file of the run directory {path}; choose another path"
                )
    for run_dir in _runs_above(target):  # another run's files: RUN_B/best/best.json from `predict RUN_A`
        owner = run_owned_path(target, run_dir)
        if owner is not None:
            raise SetupError(
                f"{option} {target}: would replace {owner}, a file of the run directory {run_dir}; choose another path"
            )


def _runs_above(target: Path) -> list[Path]:
    """The hookrun run directories (:func:`~hookrun.runner.run_dir.directory.is_hookrun_run`) above ``target``."""
    from hookrun.runner.run_dir.directory import is_hookrun_run

    found = []
    for base in {Path(os.path.realpath(target.parent)), Path(os.path.realpath(target)).parent}:
        for directory in (base, *base.parents):
            if is_hookrun_run(directory):
                found.append(directory)
    return found


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
    with _hangup_removes_partial_output():
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
    on an error (or an interruption, even between the two renames) nothing at ``target`` changes and the
    temporary directory is removed. Missing parent
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
    old = holder / "replaced"
    with _hangup_removes_partial_output():
        try:
            yield inside
            if target.exists() or target.is_symlink():
                os.replace(target, old)
            os.replace(inside, target)
        except Exception as err:
            refused = refused_write(err, inside, target)
            if refused is not None:
                raise refused from err
            raise
        finally:
            # a Ctrl-C (or SIGHUP) between the two renames: the replaced export goes back, not away with the holder
            if (old.exists() or old.is_symlink()) and not (target.exists() or target.is_symlink()):
                os.replace(old, target)
            shutil.rmtree(holder, ignore_errors=True)


class _HungUp(BaseException):
    """SIGHUP arrived while an output was written (:func:`_hangup_removes_partial_output`)."""


@contextmanager
def _hangup_removes_partial_output() -> Iterator[None]:
    """While an output is written, SIGHUP (the terminal closed) removes the partial output before the process ends.

    SIGINT and SIGTERM raise ``KeyboardInterrupt`` from the CLI's handlers (:mod:`hookrun.cli.interrupts`), so the
    ``finally`` blocks of :func:`atomic_file` and :func:`atomic_directory` remove their temporary file or directory.
    SIGHUP at its default action killed the process at once, leaving a hidden partial ``.<name>.*.tmp`` (measured:
    0.47 MB of a 3.4 MB ``hookrun predict`` CSV). In this block SIGHUP raises instead; the temporary output is
    removed on the way out, then the default action is restored and the signal sent again: the process still ends
    by SIGHUP (exit status 129 in a shell), as without hookrun. A SIGHUP that is ignored (``nohup``) or has a
    handler of its own (a launcher's) is left alone, and so is a thread other than the main one.
    """
    hangup = getattr(signal, "SIGHUP", None)
    if (
        hangup is None
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(hangup) is not signal.SIG_DFL
    ):
        yield
        return

    def _raise(signum: int, frame: object) -> None:
        raise _HungUp(signum)

    signal.signal(hangup, _raise)
    hung_up = False
    try:
        yield
    except _HungUp:
        hung_up = True
    finally:
        signal.signal(hangup, signal.SIG_DFL)
    if hung_up:  # the partial output is gone (the blocks inside cleaned up): end as SIGHUP would have
        os.kill(os.getpid(), hangup)
        raise KeyboardInterrupt  # not reached: the default action ends the process


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
