"""Data files: which files a ``data.train`` / ``data.validation`` entry names, their format, and reading them.

No TensorFlow here (``hookrun validate`` samples the files through this module):

- :func:`resolve_files` turns a path, a glob, a directory or a list of them into
  the sorted list of regular files, each with its format (``csv`` or
  ``tfrecord``) and compression (gzip for ``.gz``), from the extension or
  ``data.format``;
- :func:`csv_rows` reads a CSV (plain or ``.csv.gz``) row by row with the line of each row,
  one row per line (as ``tf.data.TextLineDataset`` reads it), with a bound on the line length
  and, for a sample, on the characters read;
- :func:`tfrecord_rows` reads a TFRecord file (plain or GZIP) of ``tf.train.Example`` records
  with a small protobuf wire-format decoder, one value per feature.

Every error is a one-line :class:`~hookrun.common.errors.DataError` naming the file
(and line or record) and the config key.
"""

from __future__ import annotations

import csv
import glob
import gzip
import os
import stat
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from hookrun.common.errors import DataError

CSV, TFRECORD = "csv", "tfrecord"
#: File name endings of each format (a ``.gz`` ending means gzip-compressed).
EXTENSIONS: dict[str, tuple[str, ...]] = {
    CSV: (".csv", ".csv.gz"),
    TFRECORD: (".tfrecord", ".tfrecords", ".tfrecord.gz", ".tfrecords.gz"),
}
#: What the messages list as accepted.
ACCEPTED = "CSV (.csv, .csv.gz) or TFRecord of tf.train.Example (.tfrecord, .tfrecords, optionally .gz)"
#: A TFRecord feature's dtype (``bytes``/``float``/``int64``) -> its name in ``data.columns``.
COLUMN_TYPES = {"bytes": "string", "float": "float", "int64": "int"}
#: ``data.columns`` type -> the TFRecord feature's dtype.
COLUMN_DTYPES = {name: dtype for dtype, name in COLUMN_TYPES.items()}
#: Longest line (characters) a CSV row may take; a longer one is refused (a binary file, /dev/zero).
MAX_LINE_CHARS = 1 << 20
#: Longest TFRecord record (bytes).
MAX_RECORD_BYTES = 64 << 20
#: Characters (CSV) or bytes (TFRecord) a sample read (``hookrun validate``, the column kinds) may take.
SAMPLE_CHARS = 8 << 20


@dataclass(frozen=True)
class DataFile:
    """One data file.

    Attributes:
        path: the file (as resolved against the config's directory).
        format: ``csv`` or ``tfrecord``.
        gzip: gzip-compressed (``.gz``).
    """

    path: Path
    format: str
    gzip: bool = False

    @property
    def compression(self) -> str:
        """``tf.data``'s ``compression_type``: ``"GZIP"`` or ``""``."""
        return "GZIP" if self.gzip else ""

    def salt(self, seed: int) -> int:
        """The file's part of the validation-split hash: CRC-32 of ``"<seed>:<file name>"`` (32 bits).

        The name, not the full path, so a moved data directory keeps its split.
        """
        return zlib.crc32(f"{seed}:{self.path.name}".encode())


@dataclass
class FileSet:
    """The files of one config key, sorted, all of one format.

    Attributes:
        key: ``data.train`` or ``data.validation``.
        files: the files.
        format: their format.
        columns: filled by the first read: the column names (CSV header, or the first record's features).
        dtypes: TFRecord only: feature -> ``bytes``, ``float`` or ``int64``, from the first records.
        declared: ``data.columns`` as dtypes (feature -> ``bytes``, ``float`` or ``int64``): they override
            the first records' (TFRecord only).
        tensors: ``data.columns``' tensor features (name -> :class:`~hookrun.config_schemas.data.TensorFeature`,
            in the order listed): parsed by their spec, not columns (TFRecord only).
    """

    key: str
    files: list[DataFile]
    format: str
    columns: list[str] = field(default_factory=list)
    dtypes: dict[str, str] = field(default_factory=dict)
    declared: dict[str, str] = field(default_factory=dict)
    tensors: dict[str, Any] = field(default_factory=dict)

    @property
    def loc(self) -> tuple[str, ...]:
        """The config key as a YAML path."""
        return tuple(self.key.split("."))

    @property
    def first(self) -> Path:
        """The first file (for messages about the set)."""
        return self.files[0].path


def format_of(path: Path, configured: str | None) -> tuple[str, bool] | None:
    """``(format, gzip)`` of a file from ``data.format`` or its name's ending; None when neither tells."""
    name = path.name.lower()
    gz = name.endswith(".gz")
    if configured is not None:
        return configured, gz
    for fmt, endings in EXTENSIONS.items():
        if any(name.endswith(ending) for ending in endings):
            return fmt, gz
    return None


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
                raise DataError(f"{full}: is a directory with no data file; it needs {ACCEPTED} files", loc=loc)
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
                f"{path}: unknown data format; hookrun reads {ACCEPTED}; rename the file or set `data.format`", loc=loc
            )
        files.append(DataFile(path, *fmt))
    formats = sorted({f.format for f in files})
    if len(formats) > 1:
        raise DataError(f"`{key}` names files of different formats ({', '.join(formats)}); use one format", loc=loc)
    return FileSet(key, files, formats[0])


# ------------------------------------------------------------------ CSV


def _open(file: DataFile, text: bool) -> IO[Any]:
    if file.gzip:
        return gzip.open(file.path, "rt", encoding="utf-8-sig", newline="") if text else gzip.open(file.path, "rb")
    return file.path.open(newline="", encoding="utf-8-sig") if text else file.path.open("rb")


def _bounded_lines(handle: IO[str], path: Path, budget: int | None) -> Iterator[str]:
    """The lines of ``handle``; a line over :data:`MAX_LINE_CHARS`, or more than ``budget`` characters in all, stops.

    Raises:
        DataError: a line longer than the bound (names the line).
    """
    used = 0
    number = 0
    while True:
        line = handle.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_CHARS:
            raise DataError(
                f"{path}:{number}: a line longer than {MAX_LINE_CHARS:,} characters; not a CSV file? "
                f"hookrun reads {ACCEPTED}"
            )
        used += len(line)
        if budget is not None and used > budget and number > 1:
            return  # a sample: what was read so far
        yield line


def csv_rows(
    file: DataFile, key: str = "data.train", budget: int | None = None
) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """Open a CSV file: its header, and an iterator of ``(line, cells)`` for the data rows.

    One row per line, as ``tf.data.TextLineDataset`` reads it: blank lines are skipped, a quoted
    cell spanning lines is refused.

    Args:
        file: the file (``.csv`` or ``.csv.gz``).
        key: the config key, for messages; an option (``--data``) when the files came from the command
            line, relative to the current directory.
        budget: read at most about this many characters (a sample), or None for the whole file.

    Returns:
        ``(header, rows)``; ``line`` is 1-based in the (uncompressed) file, the header is line 1.

    Raises:
        DataError: (now, or while iterating) the file is unreadable, not UTF-8, not gzip, empty, has
            a header only, an empty or duplicate column name, a row with another number of cells
            than the header, a line over the length bound, a cell spanning lines.
    """
    path, loc = file.path, tuple(key.split("."))
    handle = _open(file, text=True)
    try:
        reader = csv.reader(_bounded_lines(handle, path, budget))
        header = _guard(path, loc, lambda: next(reader, None))
    except BaseException:
        handle.close()
        raise
    if header is None or not any(cell.strip() for cell in header):
        handle.close()
        raise DataError(f"{path}: the file is empty; it needs a header row and data rows", loc=loc)
    header = [cell.strip() for cell in header]
    for index, name in enumerate(header):
        if not name:
            handle.close()
            raise DataError(f"{path}:1: column {index + 1} has no name in the header", loc=loc)
        if name in header[:index]:
            handle.close()
            raise DataError(f"{path}:1: column {name!r} appears twice in the header", loc=loc)
    if reader.line_num != 1:
        handle.close()
        raise DataError(
            f"{path}:1: the header spans lines 1-{reader.line_num}; hookrun reads one row per line", loc=loc
        )

    def rows() -> Iterator[tuple[int, list[str]]]:
        with handle:
            previous = reader.line_num
            any_row = False
            while True:
                cells = _guard(path, loc, lambda: next(reader, None))
                if cells is None:
                    break
                line = reader.line_num
                if line - previous > 1 and cells:
                    raise DataError(
                        f"{path}:{previous + 1}: a quoted cell spans lines {previous + 1}-{line}; hookrun reads "
                        "one row per line (as tf.data.TextLineDataset): remove the line breaks inside cells",
                        loc=loc,
                    )
                previous = line
                if not cells:
                    continue  # blank line
                if len(cells) != len(header):
                    raise DataError(
                        f"{path}:{line}: row has {len(cells)} cells but the header has {len(header)} columns", loc=loc
                    )
                any_row = True
                yield line, cells
            if not any_row:
                raise DataError(f"{path}: has a header but no data rows", loc=loc)

    return header, _ClosingRows(rows(), handle)


class _ClosingRows:
    """A generator of rows whose ``close()`` also closes the file, even before the first row was read.

    (A generator closed before it started never enters its ``with handle:`` block, so the file stayed
    open until garbage collection, with a ``ResourceWarning``.)
    """

    def __init__(self, rows: Iterator[tuple[int, list[str]]], handle: Any) -> None:
        self._rows, self._handle = rows, handle

    def __iter__(self) -> _ClosingRows:
        return self

    def __next__(self) -> tuple[int, list[str]]:
        return next(self._rows)

    def close(self) -> None:
        """Stop the rows and close the file."""
        self._rows.close()
        self._handle.close()


def _guard(path: Path, loc: tuple[str, ...], read: Any) -> Any:
    """Run one read of a CSV, turning decoding and format failures into one-line errors."""
    try:
        return read()
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text ({err.reason}); hookrun reads {ACCEPTED}", loc=loc) from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise DataError(f"{path}: not a valid gzip file ({err}); hookrun reads {ACCEPTED}", loc=loc) from None
    except PermissionError:
        raise DataError(f"{path}: not readable (permission denied)", loc=loc) from None
    except csv.Error as err:
        raise DataError(f"{path}: not a valid CSV file ({err})", loc=loc) from None
    except OSError as err:
        raise DataError(f"{path}: cannot read the data file ({err.strerror or err})", loc=loc) from None


# ------------------------------------------------------------------ TFRecord


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ValueError("varint too long")


def _fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """Protocol-buffer wire fields of ``buf``: ``(number, wire type, value)``."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + size], pos + size
            if pos > end:
                raise ValueError("truncated field")
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def decode_example(record: bytes) -> dict[str, tuple[str, list[Any]]]:
    """Decode a serialized ``tf.train.Example``: feature -> (``bytes`` | ``float`` | ``int64``, values).

    Mirrors ``tensorflow/core/example/example.proto`` and ``feature.proto`` (Example.features = 1;
    Features.feature = 1, a map; Feature: bytes_list = 1, float_list = 2, int64_list = 3; each
    list's ``value`` = 1, packed or not).

    Raises:
        ValueError: not an Example.
    """
    out: dict[str, tuple[str, list[Any]]] = {}
    for number, wire, features in _fields(record):
        if number != 1 or wire != 2:
            continue
        for n2, w2, entry in _fields(features):
            if n2 != 1 or w2 != 2:
                continue
            name, feature = "", b""
            for n3, _, value in _fields(entry):
                if n3 == 1:
                    name = value.decode("utf-8")
                elif n3 == 2:
                    feature = value
            kind, values = "float", []
            for n4, _, data in _fields(feature):
                kind = {1: "bytes", 2: "float", 3: "int64"}.get(n4, kind)
                for n5, w5, item in _fields(data):
                    if n5 != 1:
                        continue
                    if n4 == 1:
                        values.append(item.decode("utf-8", errors="replace"))
                    elif n4 == 2:
                        values.extend(
                            struct.unpack(f"<{len(item) // 4}f", item) if w5 == 2 else struct.unpack("<f", item)
                        )
                    elif n4 == 3:
                        if w5 == 2:
                            pos = 0
                            while pos < len(item):
                                v, pos = _varint(item, pos)
                                values.append(v - (1 << 64) if v >= 1 << 63 else v)
                        else:
                            values.append(item - (1 << 64) if item >= 1 << 63 else item)
            out[name] = (kind, values)
    return out


def tfrecord_records(file: DataFile, key: str = "data.train", budget: int | None = None) -> Iterator[tuple[int, bytes]]:
    """The records of a TFRecord file: ``(record number, 1-based; data)``.

    Framing as TensorFlow writes it: ``uint64 length, uint32 masked CRC, data, uint32 masked CRC``
    (the CRCs are checked by TensorFlow when training reads the file, not here).

    Raises:
        DataError: a truncated record, a record over :data:`MAX_RECORD_BYTES`, not gzip.
    """
    path, loc = file.path, tuple(key.split("."))
    used = 0
    with _open(file, text=False) as handle:
        number = 0
        while True:
            head = _guard(path, loc, lambda: handle.read(12))
            if not head:
                return
            number += 1
            if len(head) < 12:
                raise DataError(f"{path}: record {number} is truncated; not a complete TFRecord file", loc=loc)
            (length,) = struct.unpack("<Q", head[:8])
            if length > MAX_RECORD_BYTES:
                raise DataError(
                    f"{path}: record {number} claims {length:,} bytes; not a TFRecord file? hookrun reads {ACCEPTED}",
                    loc=loc,
                )
            data = _guard(path, loc, lambda: handle.read(length + 4))  # noqa: B023
            if len(data) < length + 4:
                raise DataError(f"{path}: record {number} is truncated; not a complete TFRecord file", loc=loc)
            used += length + 16
            yield number, data[:length]
            if budget is not None and used > budget:
                return


def tfrecord_rows(
    file: DataFile,
    columns: list[str] | None,
    dtypes: dict[str, str],
    key: str = "data.train",
    budget: int | None = None,
    declared: dict[str, str] | None = None,
    tensors: Any = (),
) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """Open a TFRecord file of ``tf.train.Example``: its feature names and ``(record, cells)`` rows as text.

    Numbers become their ``repr`` text (exact for float32 and int64), bytes their UTF-8 text; a
    feature absent from a record, or with no value, is an empty cell. ``dtypes`` is filled from the
    first record (feature -> ``bytes``/``float``/``int64``) when empty, and checked afterwards.

    Args:
        file: the file.
        columns: the feature names to read (in this order), or None for the first record's features
            (and the ``declared`` ones), sorted.
        dtypes: feature -> dtype, updated in place.
        key: the config key, for messages; an option (``--data``) when the files came from the command
            line, relative to the current directory.
        budget: read at most about this many bytes (a sample).
        declared: ``data.columns`` as dtypes (feature -> ``bytes``/``float``/``int64``): they take precedence
            over the records' types (a record that disagrees is an error naming it).
        tensors: names of tensor features (``data.columns`` with a shape, varlen or bytes): not columns,
            never read here (TensorFlow parses them with their spec).

    Returns:
        ``(columns, rows)``.

    Raises:
        DataError: an empty file, a record that is not an Example, a feature with more than one
            value, or another type than in the first records (names file and record).
    """
    path, loc = file.path, tuple(key.split("."))
    records = tfrecord_records(file, key, budget)
    first = next(records, None)
    if first is None:
        raise DataError(f"{path}: the file is empty; it needs tf.train.Example records", loc=loc)

    def decode(number: int, data: bytes) -> dict[str, tuple[str, list[Any]]]:
        try:
            return decode_example(data)
        except (ValueError, IndexError, UnicodeDecodeError, struct.error):
            raise DataError(
                f"{path}: record {number} is not a tf.train.Example; hookrun reads {ACCEPTED}", loc=loc
            ) from None

    example = decode(*first)
    declared = declared or {}
    # a map: its order means nothing
    names = list(columns) if columns is not None else sorted((set(example) | set(declared)) - set(tensors))
    dtypes.update(declared)
    for name, (kind, _) in example.items():
        dtypes.setdefault(name, kind)

    def disagreement(number: int, name: str, kind: str) -> DataError:
        if name in declared:
            return DataError(
                f"{path}: record {number}: feature {name!r} holds a {kind}_list, but data.columns.{name} is "
                f"{COLUMN_TYPES[dtypes[name]]}; set it to {COLUMN_TYPES[kind]}",
                loc=("data", "columns", name),
            )
        return DataError(
            f"{path}: record {number}: feature {name!r} is {kind}, but {dtypes[name]} in the first records", loc=loc
        )

    def rows() -> Iterator[tuple[int, list[str]]]:
        for number, data in _chain(first, records):
            features = example if number == first[0] else decode(number, data)
            cells: list[str] = []
            for name in names:
                kind, values = features.get(name, (dtypes.get(name, "float"), []))
                if values and dtypes.setdefault(name, kind) != kind:
                    raise disagreement(number, name, kind)
                if len(values) > 1:
                    raise DataError(
                        f"{path}: record {number}: feature {name!r} has {len(values)} values; hookrun reads one value "
                        "per feature (list the features to use in data.features, or give this one a parse spec in "
                        "data.columns)",
                        loc=loc,
                    )
                cells.append("" if not values else values[0] if kind == "bytes" else repr(values[0]))
            yield number, cells

    return names, rows()


def tfrecord_features(file: DataFile, count: int, key: str = "data.train", budget: int | None = None) -> list[str]:
    """The sorted names of the features the first ``count`` records of a TFRecord file have (for messages).

    Raises:
        DataError: see :func:`tfrecord_records`.
    """
    names: set[str] = set()
    for number, data in tfrecord_records(file, key, budget):
        if number > count:
            break
        try:
            names |= set(decode_example(data))
        except (ValueError, IndexError, UnicodeDecodeError, struct.error):
            break
    return sorted(names)


def _chain(first: tuple[int, bytes], rest: Iterator[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
    yield first
    yield from rest
