"""Run-directory files, shared by the hooks and the runner: crash-safe writes, per-task names."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a temporary file in the same directory, then rename.

    A crash leaves either the old file or the new one, never a truncated one.

    Args:
        path: destination file; its directory must exist.
        text: the content (UTF-8).
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
