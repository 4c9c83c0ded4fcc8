"""The run directory: where it is, atomic writes, and what a resumed run finds there."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hookrun.hooks.files import atomic_write_text
from hookrun.runner.errors import SetupError

__all__ = ["LOCK_FILE", "RunDirLock", "atomic_write_text", "prepare_run_dir"]


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
    path = path.resolve()
    if path.exists() and not path.is_dir():
        raise SetupError(f"{path}: run directory exists but is a file; choose another `session.run_dir`")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".write-probe.", delete=True)
        probe.close()
    except OSError as err:
        raise SetupError(
            f"{path}: run directory is not writable ({err.strerror}); choose another `--run-dir`"
        ) from None
    return path


LOCK_FILE = ".hookrun.lock"


class RunDirLock:
    """An exclusive lock on a run directory, so two ``hookrun train`` never share one.

    Uses ``fcntl.flock`` on ``<run_dir>/.hookrun.lock``: the kernel releases
    the lock when the holder exits, however it exits (``kill -9`` included),
    so a lock left by a dead process is never mistaken for a live one. The
    holder's PID is written into the file for the message.

    Args:
        run_dir: an existing run directory.

    Raises:
        SetupError: on ``__enter__``, when another live process holds the lock
            (exit code 2: "run directory in use by process P").

    Example:
        >>> with RunDirLock(Path("runs/x")):
        ...     train_here()
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_FILE
        self._fd: int | None = None

    def __enter__(self) -> RunDirLock:
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise SetupError(
                f"{self.path.parent}: run directory in use by process {holder}; wait for it, stop it, "
                "or choose another `--run-dir`"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing releases the flock
            self._fd = None
