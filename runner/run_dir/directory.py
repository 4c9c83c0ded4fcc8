"""The run directory: where it is, its lock, atomic writes, and leftovers of an interrupted run."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hookrun.common.errors import SetupError
from hookrun.common.files import RunDirWriteError, atomic_write_text, is_temporary_name, read_regular_bytes
from hookrun.hooks import tf_internals

__all__ = [
    "EVENT_FILE_PREFIX",
    "LOCK_FILE",
    "RunDirLock",
    "atomic_write_text",
    "check_adoptable",
    "check_event_dirs",
    "check_usable_path",
    "is_hookrun_run",
    "clean_temporary_files",
    "close_summary_writers",
    "prepare_run_dir",
    "read_saved_config",
    "resolve_run_dir",
    "writer_thread_errors_deferred",
]


def _reason(err: OSError) -> str:
    return err.strerror or str(err)


#: Characters TensorFlow's file functions read as a glob pattern in a checkpoint path (``GetMatchingPaths``:
#: ``*?[\\``): ``tf.train.latest_checkpoint``, ``Saver.restore`` and ``max_to_keep``'s deletions glob the prefix.
GLOB_CHARACTERS = "*?[\\"

#: The longest run-directory path (bytes) that leaves room for every file hookrun and TensorFlow write in it
#: (``best/model.ckpt-<step>.data-00000-of-00001.tempstate<n>``, an event file with the host's name) under
#: Linux's ``PATH_MAX`` of 4,096 bytes.
MAX_RUN_DIR_BYTES = 4096 - 320


def printable_path(path: Path | str, limit: int = 200) -> str:
    r"""``path`` for a one-line message: bytes that are not UTF-8 as ``\xNN``, the middle elided past ``limit``."""
    text = os.fsencode(str(path)).decode("utf-8", "backslashreplace")
    return text if len(text) <= limit else f"{text[: limit // 2]}...{text[-limit // 4 :]}"


def check_usable_path(path: Path | str, what: str, limit: int | None = MAX_RUN_DIR_BYTES) -> None:
    """Refuse, before anything is written, a path TensorFlow cannot use as a checkpoint's place.

    Args:
        path: the absolute path (a run directory, a checkpoint prefix).
        what: how messages name it (``--run-dir``, ``--checkpoint``).
        limit: the most bytes it may have, or None.

    Raises:
        SetupError: it holds bytes that are not UTF-8 (TensorFlow's paths are UTF-8 strings), a glob
            character (:data:`GLOB_CHARACTERS`: TensorFlow would not find its checkpoints again), or
            is longer than ``limit`` (files in it would exceed ``PATH_MAX``; exit 2, one line).
    """
    text = str(path)
    shown = printable_path(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise SetupError(
            f"{what} {shown}: the path holds bytes that are not UTF-8, which TensorFlow cannot name files with; "
            "rename it or choose another path"
        ) from None
    found = sorted({c for c in text if c in GLOB_CHARACTERS})
    if found:
        chars = " ".join(f"`{c}`" for c in found)
        raise SetupError(
            f"{what} {shown}: the path holds {chars}, which TensorFlow reads as a glob pattern in checkpoint "
            "paths (its checkpoints would not be found again); rename it or choose another path"
        )
    if limit is not None and len(os.fsencode(text)) > limit:
        raise SetupError(
            f"{what} {shown}: the path is {len(os.fsencode(text)):,} bytes, more than the {limit:,} that leave "
            "room for the files written in it; choose a shorter path"
        )


def resolve_run_dir(path: Path) -> Path:
    """The absolute run directory for ``path``, or a usage error (exit 2) if no directory can be there.

    Args:
        path: the run directory as given (relative to the current directory).

    Returns:
        The absolute path, symlinks resolved.

    Raises:
        SetupError: a symlink loop, a name too long for the file system, a path through a file,
            an existing file that is not a directory, or another error the operating system gives
            when looking it up; a path TensorFlow cannot use (:func:`check_usable_path`: not UTF-8,
            glob characters, too long).
    """
    try:
        resolved = path.resolve()
        check_usable_path(resolved, "run directory")
        os.stat(resolved)
    except FileNotFoundError:
        return resolved
    except RuntimeError:  # Python's "Symlink loop from ..."
        raise SetupError(f"{path}: run directory is a symlink loop; choose another `--run-dir`") from None
    except OSError as err:
        raise SetupError(
            f"{path}: cannot use this run directory ({_reason(err)}); choose another `--run-dir`"
        ) from None
    if not resolved.is_dir():
        raise SetupError(f"{resolved}: run directory exists but is a file; choose another `session.run_dir`")
    return resolved


#: Directories that are never a run directory, however empty: the file system's roots and shared places.
WRONG_ROOTS = frozenset(
    {
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/media", "/mnt", "/opt",
        "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/local", "/var", "/var/tmp",
    }
)

#: Entries that make no run: the lock file of a run killed at its start, a writer's temporary files.
_HOUSEKEEPING = re.compile(r"\.hookrun\.lock|\.write-probe\..*")


def is_hookrun_run(path: Path) -> bool:
    """Whether ``path`` holds what ``hookrun train`` writes first: its status or its saved config.

    A ``summary.json`` that is a JSON object with a ``status`` and a ``started`` string, or a ``config.yaml``
    whose ``session.run_dir`` is ``.`` (the self-contained copy ``train`` saves) beside a ``preprocessing.json``.
    """
    import json

    import yaml

    try:
        summary = json.loads(read_regular_bytes(path / "summary.json", follow_symlinks=False, limit=1 << 20))
        if isinstance(summary, dict) and isinstance(summary.get("status"), str) and isinstance(
            summary.get("started"), str
        ):
            return True
    except (OSError, ValueError):
        pass
    try:
        config = yaml.safe_load(read_regular_bytes(path / "config.yaml", follow_symlinks=False, limit=1 << 22))
        session = config.get("session") if isinstance(config, dict) else None
        if isinstance(session, dict) and session.get("run_dir") == "." and (path / "preprocessing.json").is_file():
            return True
    except (OSError, ValueError, yaml.YAMLError):
        pass
    return False


def _empty_tree(path: Path, depth: int = 4) -> bool:
    """Whether ``path`` is a real directory holding only empty directories: nothing there would be replaced.

    (An event directory another task of a cluster made before the chief looked.)
    """
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode) or depth == 0:
            return False
        return all(_empty_tree(Path(entry.path), depth - 1) for entry in os.scandir(path))
    except OSError:
        return False


def _printable_name(name: str) -> str:
    r"""A file name safe to print on one line: control characters and undecodable bytes as ``\xNN``."""
    return "".join(c if c.isprintable() else f"\\x{ord(c) & 0xFF:02x}" for c in name)[:80]


def check_adoptable(path: Path) -> None:
    """Refuse a run directory that ``train`` must not write into: a wrong root, or someone else's directory.

    ``train`` adopts a directory that does not exist, an empty one (or holding only a stale lock file, a
    writer's temporary files or empty directories) or a hookrun run (:func:`is_hookrun_run`). Anything
    else would have its ``config.yaml``, ``summary.json``, ``history.csv``, ``checkpoint``... replaced.

    Args:
        path: the run directory, absolute and resolved (:func:`resolve_run_dir`).

    Raises:
        SetupError: ``path`` is ``/``, the home directory or another shared root (:data:`WRONG_ROOTS`), or a
            directory holding files that is not a hookrun run (exit 2, naming up to 5 of its entries).
    """
    home = os.path.realpath(os.path.expanduser("~"))
    if str(path) in WRONG_ROOTS or str(path) == home:
        raise SetupError(
            f"{printable_path(path)}: not a place for a run directory (a system or home directory); choose another "
            "`--run-dir`, e.g. runs/NAME"
        )
    try:
        names = sorted(os.listdir(path))
    except FileNotFoundError:
        return
    except OSError:
        return  # not a directory or unreadable: prepare_run_dir names it
    names = [
        n for n in names
        if not _HOUSEKEEPING.fullmatch(n) and not is_temporary_name(n) and not _empty_tree(path / n)
    ]
    if not names or is_hookrun_run(path):
        return
    shown = ", ".join(_printable_name(n) for n in names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    raise SetupError(
        f"{printable_path(path)}: not empty and not a hookrun run directory (it holds {shown}), whose files "
        "training would "
        "replace; choose a new or empty `--run-dir`"
    )


def prepare_run_dir(path: Path) -> Path:
    """Create the run directory (and parents) and check it is writable.

    Args:
        path: the run directory.

    Returns:
        The absolute path.

    Raises:
        SetupError: it exists as a file, cannot be created, or is not writable
            (checked up front, before any training).
    """
    path = resolve_run_dir(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".write-probe.", delete=True)
        probe.close()
    except OSError as err:
        raise SetupError(
            f"{path}: run directory is not writable ({_reason(err)}); choose another `--run-dir`"
        ) from None
    return path


#: TensorFlow's event file names: ``events.out.tfevents.<seconds>.<hostname>`` (``EventsWriter``), predictable.
EVENT_FILE_PREFIX = "events.out.tfevents."


def check_event_dirs(run_dir: Path, event_dirs: list[tuple[str, str]]) -> None:
    """Refuse symlinks where TensorFlow's event writers will write; create the run directory's event directories.

    ``tf.compat.v1.summary.FileWriter`` (``EventsWriter``) creates its directory with ``MakeDirs`` and
    its file with ``fopen(name, "w")``, both following symlinks, and the file's name,
    ``events.out.tfevents.<seconds>.<hostname>``, is predictable: a symlink planted in the run
    directory (an ``eval`` directory, or event-file names for the coming seconds) would lead the
    summaries, and the truncation, to a file elsewhere. So, for each directory: every part of its
    path inside the run directory must be a real directory (missing ones are made here, so none is
    planted between this check and the writer), and no ``events.out.tfevents.*`` entry in it may be
    a symlink. A directory the config puts outside the run directory is the user's choice: only its
    event files are checked. The run directory's own event files are always checked (a model_fn's or
    custom hook's ``SummarySaverHook`` writes there).

    Call it holding the run directory's lock, before anything is written.

    Args:
        run_dir: the run directory (absolute, existing).
        event_dirs: ``(where, directory)`` per hook that writes event files: ``where`` names it in
            messages (``hooks[2] (evaluation)``), ``directory`` is relative to ``run_dir`` (or absolute).

    Raises:
        SetupError: a symlink or a file on such a path, a symlinked event file, or a directory that
            cannot be made or listed (exit 2, one line naming it and the fix).
    """
    for where, relative in event_dirs:
        target = Path(os.path.normpath(run_dir / relative))
        if target == run_dir or run_dir in target.parents:
            current = run_dir
            for part in target.relative_to(run_dir).parts:
                current = current / part
                _real_directory(current, where)
        _no_linked_event_files(target, where)


def _real_directory(path: Path, where: str) -> None:
    """``path`` is a directory, not a symlink; made (not following a link) when missing."""
    try:
        os.mkdir(path, 0o755)
        return
    except FileExistsError:
        pass
    except OSError as err:
        raise SetupError(f"{path}: cannot make the event directory of {where} ({_reason(err)})") from None
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        raise SetupError(
            f"{path}: a symlink (to {os.readlink(path)}) where {where} writes TensorFlow event files, which would "
            "be written through it; remove it (to write elsewhere, give that directory as the hook's output_dir)"
        )
    if not stat.S_ISDIR(mode):
        raise SetupError(f"{path}: not a directory, where {where} writes TensorFlow event files; remove it")


def _no_linked_event_files(directory: Path, where: str) -> None:
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return  # outside the run directory, not there yet: TensorFlow makes it
    except OSError as err:
        raise SetupError(f"{directory}: cannot list the event directory of {where} ({_reason(err)})") from None
    for entry in entries:
        if entry.name.startswith(EVENT_FILE_PREFIX) and entry.is_symlink():
            raise SetupError(
                f"{entry.path}: a symlink (to {os.readlink(entry.path)}) named as a TensorFlow event file, where "
                f"{where} writes event files, which would be written through it; remove it"
            )


LOCK_FILE = ".hookrun.lock"


def _flock_holder(fd: int) -> str | None:
    """The PID holding a ``flock`` on the file open as ``fd``, from ``/proc/locks`` (Linux), or None."""
    info = os.fstat(fd)
    inode = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == inode:
            return fields[4]
    return None


class RunDirLock:
    """An exclusive lock on a run directory, so two ``hookrun train`` never share one.

    Uses ``fcntl.flock`` on the run directory itself (its own file descriptor, opened
    ``O_RDONLY | O_DIRECTORY``): deleting or replacing a file in it cannot release the
    lock, and the kernel releases it when the holder exits, however it exits (``kill -9``
    included), so a lock left by a dead process is never mistaken for a live one. The
    holder's PID goes into ``.hookrun.lock`` for the message (a fresh file renamed into
    place: a symlink or hard link planted there never leads the write elsewhere); without
    that file the PID is read from ``/proc/locks``.

    Args:
        run_dir: an existing run directory.

    Raises:
        SetupError: on ``__enter__``, when another live process holds the lock
            (exit code 2: "run directory in use by process P"), or the directory cannot
            be opened or written.

    Example:
        >>> with RunDirLock(Path("runs/x")):
        ...     train_here()
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / LOCK_FILE
        self._fd: int | None = None

    def __enter__(self) -> RunDirLock:
        import fcntl

        try:
            fd = os.open(self.run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as err:
            raise SetupError(
                f"{self.run_dir}: cannot open the run directory ({_reason(err)}); choose another `--run-dir`"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder(fd)
            os.close(fd)
            raise SetupError(
                f"{self.run_dir}: run directory in use by process {holder}; wait for it, stop it, "
                "or choose another `--run-dir`"
            ) from None
        except OSError as err:
            os.close(fd)
            raise SetupError(
                f"{self.run_dir}: cannot lock the run directory ({_reason(err)}); choose another `--run-dir`"
            ) from None
        try:
            atomic_write_text(self.path, f"{os.getpid()}\n")
        except RunDirWriteError as err:
            os.close(fd)
            raise SetupError(
                f"{self.run_dir}: run directory is not writable ([Errno {err.errno}] "
                f"{os.strerror(err.errno or 0)}); choose another `--run-dir`"
            ) from None
        self._fd = fd
        return self

    def _holder(self, fd: int) -> str:
        try:
            with open(os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), encoding="utf-8") as f:
                text = f.read(32).strip()
        except (OSError, UnicodeDecodeError):
            text = ""
        return text if text.isdigit() else (_flock_holder(fd) or "unknown")

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()  # ours: written while holding the lock, which no one else can take
            os.close(self._fd)  # closing releases the flock
            self._fd = None


def clean_temporary_files(run_dir: Path) -> list[str]:
    """Remove files that a writer left half-written in ``run_dir`` and its direct subdirectories.

    Those are TensorFlow's ``*.tempstate*`` (a checkpoint being written) and ``*.tmp<hex>``
    (``graph.pbtxt``, the ``checkpoint`` state file, a ``.meta``), and hookrun's own
    ``.<name>.<random>.tmp``. Call it only while holding the run directory's lock.
    Symlinks are not followed (a symlink with such a name is removed itself).

    Args:
        run_dir: the run directory.

    Returns:
        The names removed (relative to ``run_dir``).
    """
    removed: list[str] = []
    folders = [run_dir]
    with contextlib.suppress(OSError):
        folders += [Path(e.path) for e in os.scandir(run_dir) if e.is_dir(follow_symlinks=False)]
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if is_temporary_name(entry.name) and not entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed.append(os.path.relpath(entry.path, run_dir))
    return sorted(removed)


@contextlib.contextmanager
def writer_thread_errors_deferred() -> Iterator[None]:
    """Keep the traceback of TensorFlow's summary writer thread off the console.

    When an event file cannot be written (disk full), TensorFlow's ``EventLoggerThread``
    dies with an exception that ``threading`` would print as a traceback; TensorFlow keeps
    it and raises it again in the main thread at the writer's next ``add_event``, ``flush``
    or ``close``, where hookrun reports it in one line. The thread's own log line
    (``EventFileWriter writer thread error``) is dropped for the same reason. Other
    threads' exceptions and other log records are shown as usual.
    """
    import logging

    previous = threading.excepthook
    logger = logging.getLogger("tensorflow")

    def reported_later(record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("EventFileWriter writer thread error")

    def hook(args: Any) -> None:
        thread = getattr(args.thread, "name", None)
        if thread == "EventLoggerThread" and isinstance(args.exc_value, Exception):
            return
        previous(args)

    threading.excepthook = hook
    logger.addFilter(reported_later)
    try:
        yield
    finally:
        # Only if still ours: a hook chained over it inside (the cluster's quiet queue-runner hook, whose
        # threads may die after this block) stays installed; ours, left in its chain, only filters.
        if threading.excepthook is hook:
            threading.excepthook = previous
        logger.removeFilter(reported_later)


def read_saved_config(path: Path) -> str:
    """The text of a run directory's saved ``config.yaml``, checked to be YAML.

    Raises:
        SetupError: it cannot be read or parsed (exit 2), naming the file and the fix.
    """
    import yaml

    try:
        text = read_regular_bytes(path).decode("utf-8")
        if not isinstance(yaml.safe_load(text) or {}, dict):
            raise ValueError("not a mapping")
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SetupError(
            f"{path}: the run directory's saved config is damaged ({reason}); restore it, or delete it to "
            "resume without comparing configs"
        ) from None
    return text


def close_summary_writers(tf: Any) -> BaseException | None:
    """Close every cached summary ``FileWriter`` (``FileWriterCache.clear``), even when one fails.

    A writer thread that fails on its last flush prints no traceback (see
    :func:`writer_thread_errors_deferred`); its error is returned.

    Returns:
        The first writer's error (e.g. its event file could not be written), or None.
    """
    cache = tf.compat.v1.summary.FileWriterCache
    try:
        with writer_thread_errors_deferred():  # a writer thread failing on its last flush: reported here
            cache.clear()
        return None
    except Exception as err:
        for writer in tf_internals.cached_file_writers(tf):  # clear() stops at the first failing close
            with contextlib.suppress(Exception):
                writer.close()
        tf_internals.forget_file_writers(tf)
        return err
