"""Where ``hookrun predict`` and ``export`` write: checked before any work, written whole or not at all."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hookrun.runner.errors import SetupError


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
            ``overwrite`` it is a directory where a file goes (or the reverse).
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
        is_dir = target.is_dir() and not target.is_symlink()
        if not target.is_symlink() and is_dir != (what == "directory"):  # a symlink itself is replaced
            kind = "a directory" if is_dir else "a file"
            raise SetupError(f"{option} {given}: is {kind}, and a {what} is written there; choose another path")
    return target


def check_not_replacing(target: Path, protected: list[Path], option: str = "--output") -> None:
    """Refuse an output that would replace (or hold) one of ``protected``: the run directory, an input file.

    Args:
        target: the checked output path (:func:`check_output_path`).
        protected: paths the output must not be, nor be a parent of.
        option: the option naming it, for messages.

    Raises:
        SetupError: ``target`` is one of them or a directory above one (symlinks resolved).
    """
    real = target.resolve()
    for path in protected:
        kept = path.resolve()
        if real == kept or real in kept.parents:
            raise SetupError(f"{option} {target}: would replace {path}, which this command reads; choose another path")


@contextmanager
def atomic_file(target: Path) -> Iterator[Path]:
    """A temporary file beside ``target``, renamed onto it when the block ends without an error (else removed).

    Missing parent directories of ``target`` are created.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


@contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """A path (not yet created) in a temporary directory beside ``target``, moved onto ``target`` on success.

    A ``target`` that exists (``--overwrite``) is moved aside first and removed once the new one is in place;
    on an error nothing at ``target`` changes and the temporary directory is removed. Missing parent
    directories of ``target`` are created.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    holder = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        inside = holder / target.name
        yield inside
        old = holder / "replaced"
        if target.exists() or target.is_symlink():
            os.replace(target, old)
        os.replace(inside, target)
    finally:
        shutil.rmtree(holder, ignore_errors=True)
