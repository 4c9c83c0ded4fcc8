"""Data files: which files a ``data.train`` / ``data.validation`` entry names, and their format.

No TensorFlow here (``hookrun validate`` samples the files through this module):
:func:`resolve_files` turns a path, a glob, a directory or a list of them into the sorted list of
regular files, each with its format and compression (gzip for ``.gz``), from the extension or
``data.format``. Which formats exist, and how each is read, is the format registry's
(:mod:`hookrun.runner.data.formats`: one module a format).

Every error is a one-line :class:`~hookrun.common.errors.DataError` naming the file and the config key.
"""

from __future__ import annotations

import glob
import os
import stat
from pathlib import Path

from hookrun.common.errors import DataError
from hookrun.runner.data.formats.base import DataFile, FileSet
from hookrun.runner.data.formats.registry import accepted, format_of

#: The built-in formats' names (:attr:`DataFile.format`); the registry knows every format.
CSV, TFRECORD = "csv", "tfrecord"


def _check_regular(path: Path, key: str) -> None:
    """Refuse what is not a regular file (a device such as /dev/zero, a FIFO, a socket)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        raise DataError(
            f"{path}: cannot open the data file ({err.strerror or err}); check `{key}`", loc=tuple(key.split("."))
        ) from None
    if not stat.S_ISREG(mode):
        raise DataError(
            f"{path}: not a regular file (a device, pipe or socket); `{key}` takes data files",
            loc=tuple(key.split(".")),
        )


def absolute_spec(spec: str | list[str], base_dir: Path) -> str | list[str]:
    """A ``data.train`` / ``data.validation`` entry with each path made absolute (``base_dir / entry``).

    Globs stay globs, lists stay lists; an absolute entry is kept as is. Written into the run
    directory's ``config.yaml`` so that file can be loaded from anywhere (see
    :func:`hookrun.runner.run_dir.saved_config.self_contained_yaml`).

    Args:
        spec: the entry, or a list of entries, as in the config.
        base_dir: the config file's directory (absolute).

    Returns:
        The same shape, absolute paths.
    """
    if isinstance(spec, str):
        return str(base_dir / spec)
    return [str(base_dir / entry) for entry in spec]


def resolve_files(
    spec: str | list[str], base_dir: Path, configured: str | None = None, key: str = "data.train"
) -> FileSet:
    """The files a ``data.train`` / ``data.validation`` entry names.

    Each entry is a path, a glob (``*``, ``?``, ``[...]``, ``**``) or a directory (its files with a
    known ending, or every file with ``data.format``), relative to the config's directory. The
    result is sorted and without repeats.

    Args:
        spec: the entry, or a list of entries.
        base_dir: the config file's directory.
        configured: ``data.format`` (``csv`` / ``tfrecord``), or None to go by the file names.
        key: the config key, for messages; an option (``--data``) when the files came from the command
            line, relative to the current directory.

    Returns:
        The file set.

    Raises:
        DataError: a path that does not exist, a glob matching nothing (names the pattern), a
            directory with no data file, a file that is not regular (``/dev/zero``), a file whose
            format is unknown (lists the accepted ones), files of different formats.
    """
    loc = tuple(key.split("."))
    entries = [spec] if isinstance(spec, str) else list(spec)
    paths: list[Path] = []
    for entry in entries:
        full = base_dir / entry
        if glob.has_magic(entry):
            matched = sorted(Path(p) for p in glob.glob(str(full), recursive=True))
            matched = [p for p in matched if not p.is_dir()]
            if not matched:
                raise DataError(f"{full}: the pattern `{entry}` in `{key}` matches no file", loc=loc)
            paths.extend(matched)
            continue
        try:
            exists, is_dir = full.exists(), full.is_dir()
        except OSError as err:  # e.g. a file name too long for the file system
            raise DataError(
                f"{full}: cannot open the data file ({err.strerror or err}); check `{key}`", loc=loc
            ) from None
        if not exists:
            relative = "the current directory" if key.startswith("--") else "the config file"
            raise DataError(f"{full}: data file not found; check `{key}` (paths are relative to {relative})", loc=loc)
        if is_dir:
            inside = sorted(p for p in full.iterdir() if not p.name.startswith(".") and not p.is_dir())
            found = [p for p in inside if configured is not None or format_of(p, None) is not None]
            if not found:
                raise DataError(f"{full}: is a directory with no data file; it needs {accepted()} files", loc=loc)
            paths.extend(found)
            continue
        paths.append(full)
    files: list[DataFile] = []
    seen: set[Path] = set()
    for path in paths:
        if path in seen:
            continue
        seen.add(path)
        _check_regular(path, key)
        fmt = format_of(path, configured)
        if fmt is None:
            raise DataError(
                f"{path}: unknown data format; hookrun reads {accepted()}; rename the file or set `data.format`",
                loc=loc,
            )
        files.append(DataFile(path, *fmt))
    formats = sorted({f.format for f in files})
    if len(formats) > 1:
        raise DataError(f"`{key}` names files of different formats ({', '.join(formats)}); use one format", loc=loc)
    return FileSet(key, files, formats[0])


