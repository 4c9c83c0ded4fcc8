"""The run directory: where it is, atomic writes, and what a resumed run finds there."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hookrun.hooks.files import atomic_write_text
from hookrun.runner.errors import SetupError

__all__ = ["atomic_write_text", "prepare_run_dir"]


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
