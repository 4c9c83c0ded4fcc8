"""Data files to typed columns: read and check them, fix each column's kind, split off validation rows.

The files of ``data.train`` / ``data.validation`` (a path, glob, directory or list; CSV, ``.csv.gz``
or TFRecord of ``tf.train.Example``: :mod:`hookrun.runner.data.sources`) are read in chunks of rows
(:func:`iter_chunks`) into typed columns (:class:`RawColumns`: numbers, or text for categorical
columns, with missing cells marked), every row keeping its file and line for messages.

A column's kind is fixed by the config (``data.categorical``), a resumed run's saved state, or the
first :data:`KIND_SAMPLE_ROWS` rows of the first file (a TFRecord bytes feature is categorical); a
later cell that breaks it is an error naming ``file:line:column``, so ``hookrun validate`` (which
reads that sample) and ``hookrun train`` always agree on the kinds.

The validation split is a hash of each row's file name, line (record) and ``data.seed`` against the
fraction (:func:`validation_mask`): the same rows every run, never in both parts, and computable
row by row by ``tf.data`` (:mod:`hookrun.runner.data.streaming`) as well as here.

Training streams the files through ``tf.data`` (:mod:`hookrun.runner.data.streaming`); the in-memory
path here (:func:`load_raw_data`) serves the quick check before training and small data.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hookrun.common.errors import DataError, SetupError
from hookrun.common.suggest import did_you_mean
from hookrun.config_schemas.data import DataConfig
from hookrun.runner.data.columns import (  # noqa: F401 (re-exported: the names readers of this module know)
    CATEGORICAL,
    INT64_ABSENT,
    MISSING_MARKERS,
    NUMERIC,
    ColumnPlan,
    RawColumns,
)
from hookrun.runner.data.formats.base import DataFile, FileSet, SlowPath
from hookrun.runner.data.formats.registry import format_named, format_of
from hookrun.runner.data.sources import CSV, resolve_files

#: Rows of the first training file that fix each column's kind (rows); ``hookrun validate`` reads as many.
KIND_SAMPLE_ROWS = 200
#: Rows per chunk of the streaming statistics pass (rows).
CHUNK_ROWS = 65_536


@dataclass
class CsvTable:
    """A CSV file (or a chunk of one) as text cells, with the line number of every row.

    Attributes:
        path: the file.
        header: column names, in file order.
        rows: ``(line, cells)`` pairs; ``line`` is 1-based in the file (the header is line 1; for a
            TFRecord file, the record number).
    """

    path: Path
    header: list[str]
    rows: list[tuple[int, list[str]]]

    def column_index(self, name: str) -> int:
        """Return the 0-based index of column ``name``.

        Raises:
            SetupError: no such column (the message lists the columns).
        """
        try:
            return self.header.index(name)
        except ValueError:
            raise SetupError(
                f"{self.path}:1: no column {name!r}; the columns are: {', '.join(self.header)}"
            ) from None


def read_csv(path: Path, max_rows: int | None = None, key: str = "data.train") -> CsvTable:
    """Read a CSV file (plain or ``.csv.gz``) with a header row.

    Args:
        path: the file.
        max_rows: stop after this many data rows (None = all).
        key: the config key that names the file, for messages (``data.train`` or ``data.validation``).

    Returns:
        The table.

    Raises:
        SetupError: the file is missing, not a regular file, unreadable, not UTF-8, empty, has a
            header only, has an empty or duplicate column name, or a row with a different number
            of cells than the header (each message names the file and line).
    """
    files = resolve_files(str(path), Path("."), CSV if format_of(path, None) is None else None, key)
    header, rows = _file_rows(files, files.files[0])
    taken: list[tuple[int, list[str]]] = []
    for row in rows:
        taken.append(row)
        if max_rows is not None and len(taken) >= max_rows:
            break
    return table_of(path, header, taken)


def table_of(path: Path, header: list[str], rows: list[tuple[int, list[str]]]) -> CsvTable:
    """Build a :class:`CsvTable` (a seam for tests and in-memory data)."""
    return CsvTable(path=path, header=header, rows=rows)





@dataclass
class TrainingData:
    """Numeric arrays ready for ``tf.data``.

    Attributes:
        features: ``float32 [n_rows, n_features]``.
        labels: ``float32 [n_rows, 1]`` (divided by ``data.label_scale``; class ids for a categorical label).
        feature_names: names of ``features``' second axis; a one-hot column is ``column=value``.
        label_name: the label column.
        source: the CSV file.
        dropped_rows: rows left out by a ``drop`` missing-value policy (count).
    """

    features: np.ndarray
    labels: np.ndarray
    feature_names: list[str]
    label_name: str
    source: Path
    dropped_rows: int = 0

    @property
    def num_rows(self) -> int:
        """Rows fed to training (count)."""
        return int(self.features.shape[0])


@dataclass
class RawData:
    """The training and validation rows of a config, parsed but not preprocessed.

    Attributes:
        train: the training rows.
        validation: the validation rows (``validation_split`` or the ``validation`` file), or None.
        split: how they were split, saved with the preprocessing state and compared on resume:
            ``train_rows`` and ``validation_rows`` (counts) and ``validation_split`` + ``seed``
            or ``validation`` (the file as configured).
    """

    train: RawColumns
    validation: RawColumns | None
    split: dict[str, Any]


def feature_columns(config: DataConfig, header: list[str]) -> list[str]:
    """The feature columns: ``config.features``, or every column but the label (never a tensor feature)."""
    tensors = config.tensor_features
    if config.features is not None:
        return [name for name in config.features if name not in tensors]
    return [name for name in header if name != config.label and name not in tensors]


def _did_you_mean(name: str, choices: list[str]) -> str:
    return did_you_mean(name, choices, quote="'")


def check_columns(config: DataConfig, table: CsvTable) -> list[str]:
    """Check the config's column names against the file's header; return the feature columns.

    Raises:
        DataError: the label or a feature is not a column (at ``data.train``), the label is also a
            feature or the only column, or a ``categorical`` / ``missing_by_column`` name is neither a
            feature nor the label (at that key).
    """
    names = feature_columns(config, table.header)
    if config.label in names:
        raise DataError(f"{table.path}: column {config.label!r} is both the label and a feature")
    if not names and not config.tensor_features:
        raise DataError(f"{table.path}:1: the label {config.label!r} is the only column; there are no features")
    for name in [*names, config.label]:
        table.column_index(name)
    used = [*names, config.label]
    for index, name in enumerate(config.categorical):
        if name not in used:
            raise DataError(
                f"{name!r} in `data.categorical` is neither a feature nor the label; the features are: "
                f"{', '.join(names)}{_did_you_mean(name, used)}",
                loc=("data", "categorical", index),
            )
    for name in config.missing_by_column or {}:
        if name not in used:
            raise DataError(
                f"{name!r} in `data.missing_by_column` is neither a feature nor the label; the features are: "
                f"{', '.join(names)}{_did_you_mean(name, used)}",
                loc=("data", "missing_by_column", name),
            )
    return names


def _numbers(cells: list[str], empty: list[bool]) -> np.ndarray | None:
    """``float64`` of the cells (NaN where empty), or None when a non-empty cell is not a number."""
    try:
        return np.array(["nan" if is_empty else cell for cell, is_empty in zip(cells, empty, strict=True)],
                        dtype=np.str_).astype(np.float64)
    except ValueError:
        return None


def parse_columns(
    table: CsvTable,
    names: list[str],
    categorical: set[str] | frozenset[str] = frozenset(),
    kinds: dict[str, str] | None = None,
    key: str = "data.train",
    origin: str = "the training data",
    tfrecord: bool = False,
) -> RawColumns:
    """Parse the named columns of a table into typed arrays.

    A column is categorical when it is listed in ``categorical`` or (auto-detected) when a
    non-empty cell is not a number; else numeric. With ``kinds`` (the kinds fixed by the sample,
    a validation file, or a resumed run's saved state) each column's kind is fixed instead, and
    text in a numeric column is an error.

    Args:
        table: the parsed CSV (or a chunk of it).
        names: the columns to keep (features, then the label).
        categorical: columns declared categorical.
        kinds: column -> ``numeric`` or ``categorical``, to enforce; None to detect.
        key: the config key naming the file, for messages and :attr:`DataError.loc`.
        origin: what fixed the kinds, for the message (``the first 200 rows of FILE``).
        tfrecord: the rows are TFRecord records.

    Returns:
        The typed columns.

    Raises:
        DataError: a column does not exist, or a cell of a column fixed as numeric is not a number
            (names file, line, column and value).
    """
    loc = tuple(key.split("."))
    lines = np.array([line for line, _ in table.rows], dtype=np.int64)
    positions: dict[str, int] = {}
    out_kinds: dict[str, str] = {}
    values: dict[str, np.ndarray] = {}
    first_text: dict[str, tuple[int, str]] = {}
    plain: set[str] = set()
    for name in names:
        try:
            position = table.column_index(name)
        except SetupError as err:
            raise DataError(str(err), loc=loc) from None
        positions[name] = position
        raw_cells = [cells[position] for _, cells in table.rows]
        cells = [cell.strip() for cell in raw_cells]
        empty = [cell.lower() in MISSING_MARKERS if len(cell) < 5 else False for cell in cells]
        if cells == raw_cells and not any(cell for cell, is_empty in zip(cells, empty, strict=True) if is_empty):
            plain.add(name)  # no padding, and a missing cell is always empty: tf.data may decode it directly
        kind = kinds[name] if kinds is not None and name in kinds else (CATEGORICAL if name in categorical else None)
        if kind != CATEGORICAL:
            numbers = _numbers(cells, empty)
            if numbers is not None:
                out_kinds[name] = NUMERIC
                values[name] = numbers
                continue
            for row, (cell, is_empty) in enumerate(zip(cells, empty, strict=True)):
                if is_empty:
                    continue
                try:
                    float(cell)
                except ValueError:
                    if kind == NUMERIC:
                        where = (
                            f"{table.path}: record {lines[row]}: feature {name!r}"
                            if tfrecord
                            else f"{table.path}:{lines[row]}: column {name!r} (column {position + 1})"
                        )
                        raise DataError(
                            f"{where} has {cell!r}, not a number; the column is numeric in {origin}: "
                            "fix the cell, or list the column in `data.categorical`",
                            loc=loc,
                        ) from None
                    first_text[name] = (int(lines[row]), cell)
                    break
            else:  # numpy refused a cell that Python's float() reads (e.g. '1_000'): parse one by one
                out_kinds[name] = NUMERIC
                values[name] = np.array([math.nan if e else float(c) for c, e in zip(cells, empty, strict=True)])
                continue
        out_kinds[name] = CATEGORICAL
        column = np.empty(len(cells), dtype=object)
        column[:] = [None if is_empty else cell for cell, is_empty in zip(cells, empty, strict=True)]
        values[name] = column
    return RawColumns(
        source=table.path,
        lines=lines,
        positions=positions,
        kinds=out_kinds,
        values=values,
        first_text=first_text,
        key=key,
        tfrecord=tfrecord,
        plain=plain,
    )


# ------------------------------------------------------------------ the validation split

#: The 32-bit mixing constant of :func:`split_hash` (from Chris Wellons' hash prospector, "lowbias32"-like).
HASH_MULTIPLIER = 0x45D9F3B
_MASK32 = 0xFFFFFFFF


def split_hash(lines: np.ndarray, salt: int) -> np.ndarray:
    """A 32-bit hash of each row: ``mix32((line + salt) mod 2**32)``, in ``int64`` arithmetic.

    ``mix32(x)``: three rounds of ``x ^= x >> 16; x = x * 0x45d9f3b mod 2**32`` (the last without the
    multiply). :mod:`hookrun.runner.data.streaming` computes the same with ``tf.bitwise`` ops.

    Args:
        lines: ``int64 [n]`` row lines (records).
        salt: the file's salt (:meth:`hookrun.runner.data.sources.DataFile.salt`).

    Returns:
        ``int64 [n]`` in ``[0, 2**32)``.
    """
    x = (lines.astype(np.int64) + np.int64(salt)) & _MASK32
    x = ((x ^ (x >> 16)) * HASH_MULTIPLIER) & _MASK32
    x = ((x ^ (x >> 16)) * HASH_MULTIPLIER) & _MASK32
    return x ^ (x >> 16)


def split_threshold(fraction: float) -> int:
    """Rows whose :func:`split_hash` is below this are validation rows: ``round(fraction * 2**32)``."""
    return int(round(fraction * (1 << 32)))


def validation_mask(lines: np.ndarray, salt: int, fraction: float) -> np.ndarray:
    """``bool [n]``: which rows (by line) of a file with ``salt`` are held out for validation."""
    return split_hash(lines, salt) < split_threshold(fraction)


def split_rows(
    num_rows: int, fraction: float, seed: int, file: Path = Path("data.csv")
) -> tuple[np.ndarray, np.ndarray]:
    """Split the rows of a one-file CSV (no blank lines) by :func:`validation_mask`.

    Args:
        num_rows: data rows in the file (count); row ``i`` is on line ``i + 2``.
        fraction: share held out, ``0 < fraction < 1``.
        seed: ``data.seed``.
        file: the file (its name salts the hash).

    Returns:
        ``(train_indices, validation_indices)``, ``int64`` arrays in file order.
    """
    held = validation_mask(np.arange(num_rows, dtype=np.int64) + 2, DataFile(file, CSV).salt(seed), fraction)
    return np.flatnonzero(~held), np.flatnonzero(held)


def check_split(fraction: float, train_rows: int, validation_rows: int) -> None:
    """Raise when the split left either part empty.

    Raises:
        DataError: no training or no validation row (at ``data.validation_split``).
    """
    if validation_rows < 1 or train_rows < 1:
        raise DataError(
            f"validation_split {fraction} of {train_rows + validation_rows} row(s) leaves "
            f"{'no validation' if validation_rows < 1 else 'no training'} rows; change the fraction or add rows",
            loc=("data", "validation_split"),
        )


# ------------------------------------------------------------------ reading in chunks




def _file_rows(
    fileset: FileSet, file: DataFile, budget: int | None = None
) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """The header and rows of one file of the set, as text cells: its format reads them."""
    return format_named(file.format).rows(file, fileset, budget)


def plan_columns(
    config: DataConfig,
    fileset: FileSet,
    kinds: dict[str, str] | None = None,
    budget: int | None = None,
) -> ColumnPlan:
    """Read the first rows of the first file: check the columns, fix each column's kind.

    Args:
        config: the ``data:`` section.
        fileset: the training files.
        kinds: kinds to enforce (a resumed run's saved state); None: from the sample and the config.
        budget: characters (bytes) the sample may take.

    Returns:
        The plan (``fileset.columns``, and ``dtypes`` for TFRecord, are filled in).

    Raises:
        DataError: see :func:`hookrun.runner.data.formats.csv.csv_rows`, :func:`check_columns`, :func:`parse_columns`.
    """
    first = fileset.files[0]
    if format_named(first.format).keyed and config.features is not None and not fileset.columns:
        # data.features lists the columns: only they, the label and data.columns' one-value columns are read, so
        # another feature of the records (a multi-valued one the run never uses, image/object/bbox) is not refused
        wanted = list(dict.fromkeys([*feature_columns(config, []), config.label, *fileset.declared]))
        found = format_named(first.format).names_present(first, KIND_SAMPLE_ROWS, fileset, budget)
        absent = [name for name in wanted if name not in set(found) | set(fileset.declared)]
        if absent:  # as check_columns names a missing column, with every feature the records have
            listed = ", ".join(name for name in found if name not in fileset.tensors)
            raise SetupError(f"{first.path}:1: no column {absent[0]!r}; the columns are: {listed}"
                             f"{_did_you_mean(absent[0], found)}")
        fileset.columns = wanted
    header, rows = _file_rows(fileset, first, budget)
    sample_rows: list[tuple[int, list[str]]] = []
    for row in rows:
        sample_rows.append(row)
        if len(sample_rows) >= KIND_SAMPLE_ROWS:
            break
    _close(rows)
    fileset.columns = list(header)
    for name in fileset.declared:
        position = header.index(name)
        if not any(cells[position] for _, cells in sample_rows):
            present = format_named(first.format).names_present(first, len(sample_rows), fileset, budget)
            raise DataError(
                f"{first.path}: no record of the first {len(sample_rows)} has a value for feature {name!r}, which "
                f"data.columns names (their features: {', '.join(present)}); fix the name, or leave it out",
                loc=("data", "columns", name),
            )
    table = table_of(first.path, header, sample_rows)
    names = check_columns(config, table)
    used = [*names, config.label]
    categorical = set(config.categorical)
    fmt = format_named(first.format)
    tfrecord = fmt.record_wording  # messages name records and features
    if fmt.typed:  # the records' value types: bytes features are categories
        categorical |= {name for name in used if fileset.dtypes.get(name) == "bytes"}
        for name in config.categorical:
            if fileset.dtypes.get(name) in ("float", "int64"):
                raise DataError(
                    f"{first.path}: feature {name!r} is a {fileset.dtypes[name]} feature in the TFRecord file; "
                    "`data.categorical` applies to bytes features: store it as bytes, or remove it from the list",
                    loc=("data", "categorical", config.categorical.index(name)),
                )
    if kinds is not None:
        origin = "the run's saved preprocessing.json"
        sample = parse_columns(table, used, categorical, kinds, fileset.key, origin, tfrecord)
    else:
        origin = f"the first {len(sample_rows)} rows of {first.path}"
        sample = parse_columns(table, used, categorical, None, fileset.key, origin, tfrecord)
    sample.files = [f.path for f in fileset.files]
    sample.file_ids = np.zeros(sample.num_rows, np.int32)
    return ColumnPlan(used, dict(sample.kinds), origin, dict(sample.first_text), sample)


def plan_given_columns(
    fileset: FileSet, names: list[str], kinds: dict[str, str], origin: str, budget: int | None = None
) -> ColumnPlan:
    """The plan for reading given columns of kinds fixed beforehand (a trained model's features, no label).

    Checks that every CSV file of the set has each column (reads each file's header only) and parses
    the first rows of the first file. For TFRecord a feature absent from a record is a missing value.

    Args:
        fileset: the files (``columns`` is filled in).
        names: the columns to read, in order.
        kinds: column -> kind (``numeric`` / ``categorical``), e.g. a run's ``preprocessing.json``.
        origin: what fixed the kinds (for messages).
        budget: characters (bytes) the sample of the first file may take.

    Returns:
        The plan.

    Raises:
        DataError: a CSV file lacks one of the columns (names the file and the column), a cell of a numeric
            column in the sample is not a number, and the errors of :mod:`hookrun.runner.data.sources`.
    """
    fmt = format_named(fileset.format)
    tfrecord = fmt.record_wording
    if fmt.keyed:  # read by name: a record lacking one is a missing value
        fileset.columns = list(names)
    for index, file in enumerate(fileset.files):
        header, rows = _file_rows(fileset, file, budget)
        if index == 0:
            sample_rows: list[tuple[int, list[str]]] = []
            for row in rows:
                sample_rows.append(row)
                if len(sample_rows) >= KIND_SAMPLE_ROWS:
                    break
            table = table_of(file.path, header, sample_rows)
            if not fmt.keyed:
                fileset.columns = list(header)
        _close(rows)
        absent = [name for name in names if name not in header]
        if absent:
            raise DataError(
                f"{file.path}:1: no column {absent[0]!r}, a feature column of the model (its features: "
                f"{', '.join(names)}); the file's columns are: {', '.join(header)}",
                loc=fileset.loc,
            )
    sample = parse_columns(table, list(names), frozenset(), kinds, fileset.key, origin, tfrecord)
    sample.files = [f.path for f in fileset.files]
    sample.file_ids = np.zeros(sample.num_rows, np.int32)
    return ColumnPlan(list(names), dict(kinds), origin, {}, sample)


def _close(rows: Any) -> None:
    close = getattr(rows, "close", None)
    if close is not None:
        close()


def iter_chunks(
    fileset: FileSet,
    plan: ColumnPlan,
    chunk_rows: int = CHUNK_ROWS,
    max_rows: int | None = None,
    fast_tfrecord: bool = False,
) -> Iterator[RawColumns]:
    """The rows of every file of the set, in order, as :class:`RawColumns` chunks with the plan's kinds.

    Every CSV file must have the first file's header.

    Args:
        fileset: the files (``columns`` filled by :func:`plan_columns` of the training set).
        plan: the columns and kinds.
        chunk_rows: rows per chunk.
        max_rows: stop after this many rows in all.
        fast_tfrecord: the full pass of ``hookrun train``: decode TFRecord files with TensorFlow
            (``tf.io.parse_example``, imported here) and CSV files with pyarrow's streaming CSV reader,
            falling back to Python's ``csv`` module (for the exact ``file:line:column`` of a problem)
            where pyarrow refuses a file or a cell. ``hookrun validate`` uses the pure-Python readers.

    Yields:
        Chunks (``files`` = the set's files, ``file_ids`` set).

    Raises:
        DataError: a file whose header differs, a cell that breaks its column's kind, and the
            errors of :mod:`hookrun.runner.data.sources`.
    """
    paths = [f.path for f in fileset.files]
    kinds = plan.kinds
    taken = 0
    for index, file in enumerate(fileset.files):
        fmt = format_named(file.format)
        skip = 0
        if fast_tfrecord and max_rows is None:
            try:
                for raw in fmt.fast_chunks(file, fileset, plan, chunk_rows):
                    skip += raw.num_rows
                    raw.files, raw.file_ids = paths, np.full(raw.num_rows, index, np.int32)
                    raw.source, raw.first_text = paths[0], dict(plan.first_text)
                    yield raw
                continue
            except SlowPath:
                pass  # the format's Python reader reads the rest of the file, and names the problem exactly
        header, rows = _file_rows(fileset, file)
        if skip:
            rows = _skipped(rows, skip)
        if not fmt.keyed:  # positional cells: every file's header must be the first's
            if not fileset.columns:
                fileset.columns = list(header)
            elif header != fileset.columns:
                _close(rows)
                raise DataError(
                    f"{file.path}:1: the header differs from {fileset.first}'s; every {fmt.name.upper()} file of "
                    f"`{fileset.key}` needs the same columns in the same order ({', '.join(fileset.columns)})",
                    loc=fileset.loc,
                )
            missing = [name for name in plan.names if name not in header]
            if missing:
                _close(rows)
                raise DataError(
                    f"{file.path}:1: no column {missing[0]!r}; every file of `{fileset.key}` needs the columns "
                    f"{', '.join(plan.names)}",
                    loc=fileset.loc,
                )
        buffer: list[tuple[int, list[str]]] = []
        for row in rows:
            buffer.append(row)
            taken += 1
            if len(buffer) >= chunk_rows or (max_rows is not None and taken >= max_rows):
                yield _chunk(file, header, buffer, plan, kinds, fileset, paths, index)
                buffer = []
                if max_rows is not None and taken >= max_rows:
                    _close(rows)
                    return
        if buffer:
            yield _chunk(file, header, buffer, plan, kinds, fileset, paths, index)


def _skipped(rows: Iterator[tuple[int, list[str]]], count: int) -> Iterator[tuple[int, list[str]]]:
    """``rows`` without the first ``count`` (those pyarrow already read)."""
    for index, row in enumerate(rows):
        if index >= count:
            yield row


def _chunk(
    file: DataFile,
    header: list[str],
    rows: list[tuple[int, list[str]]],
    plan: ColumnPlan,
    kinds: dict[str, str],
    fileset: FileSet,
    paths: list[Path],
    index: int,
) -> RawColumns:
    raw = parse_columns(
        table_of(file.path, header, rows), plan.names, frozenset(), kinds, fileset.key, plan.origin,
        format_named(file.format).record_wording,
    )
    raw.source = paths[0]
    raw.first_text = dict(plan.first_text)
    raw.files = paths
    raw.file_ids = np.full(raw.num_rows, index, np.int32)
    return raw


def chunk_validation_mask(raw: RawColumns, fileset: FileSet, fraction: float, seed: int) -> np.ndarray:
    """``bool [n]``: which rows of a chunk are validation rows under ``validation_split``."""
    held = np.zeros(raw.num_rows, dtype=bool)
    ids = raw.file_ids if raw.file_ids is not None else np.zeros(raw.num_rows, np.int32)
    for index in np.unique(ids):
        rows = ids == index
        held[rows] = validation_mask(raw.lines[rows], fileset.files[int(index)].salt(seed), fraction)
    return held


def resolve_sets(
    config: DataConfig, base_dir: Path, train_key: str = "data.train"
) -> tuple[FileSet, FileSet | None]:
    """The training and validation file sets of a config (see :func:`hookrun.runner.data.sources.resolve_files`).

    Args:
        config: the ``data:`` section.
        base_dir: what its relative paths are relative to.
        train_key: what messages call ``config.train``: ``data.train``, or ``--data`` when the files came
            from the command line (``hookrun evaluate --data``).
    """
    train = resolve_files(config.train, base_dir, config.format, train_key)
    validation = None
    if config.validation is not None:
        validation = resolve_files(config.validation, base_dir, config.format, "data.validation")
        if validation.format != train.format:
            raise DataError(
                f"`data.validation` is {validation.format} but `data.train` is {train.format}; use one format",
                loc=("data", "validation"),
            )
    if config.columns:
        if not format_named(train.format).typed:
            raise DataError(
                f"`data.columns` sets the value types of TFRecord features, but {train.first} is "
                f"{train.format.upper()}; its columns take their kinds from the cells (list text columns read as "
                "categories in `data.categorical`)",
                loc=("data", "columns"),
            )
        declared = format_named(train.format).declared_dtypes(config.column_types())
        tensors = config.tensor_features
        for fileset in (train, validation):
            if fileset is not None:
                fileset.declared = dict(declared)
                fileset.tensors = dict(tensors)
    return train, validation


def load_raw_data(
    config: DataConfig,
    base_dir: Path,
    *,
    kinds: dict[str, str] | None = None,
    max_rows: int | None = None,
    split: bool = True,
    budget: int | None = None,
) -> RawData:
    """Read the training (and validation) files of ``config`` into memory as typed columns; split off validation rows.

    Args:
        config: the ``data:`` section.
        base_dir: the config file's directory (paths are relative to it).
        kinds: column kinds to enforce (a resumed run's saved state); None fixes them from the first rows.
        max_rows: read at most this many rows of each set (the quick check before training).
        split: apply ``validation_split``; False keeps every training-file row in ``train`` (the quick check).
        budget: characters (bytes) each set's read may take (the quick check), or None.

    Returns:
        The rows. With ``validation``, those files are parsed with the training files' column kinds.

    Raises:
        DataError: see :mod:`hookrun.runner.data.sources`, :func:`check_columns`, :func:`parse_columns` and
            :func:`check_split`.
    """
    train_set, val_set = resolve_sets(config, base_dir)
    plan = plan_columns(config, train_set, kinds, budget)
    if max_rows is not None and max_rows <= KIND_SAMPLE_ROWS:
        raw = plan.sample.take(np.arange(min(max_rows, plan.sample.num_rows)))
    else:
        raw = RawColumns.concat(list(iter_chunks(train_set, plan, max_rows=max_rows)))
    if val_set is not None:
        val_plan = ColumnPlan(plan.names, plan.kinds, "the training data", {}, plan.sample)
        val_set.columns = list(train_set.columns) if format_named(train_set.format).keyed else []
        val_set.dtypes = dict(train_set.dtypes)
        validation = RawColumns.concat(list(iter_chunks(val_set, val_plan, max_rows=max_rows)))
        validation.first_text = {}
        info = {"validation": config.validation, "train_rows": raw.num_rows, "validation_rows": validation.num_rows}
        return RawData(raw, validation, info)
    if config.validation_split is not None and split:
        assert config.seed is not None  # the config model requires it
        held = chunk_validation_mask(raw, train_set, config.validation_split, config.seed)
        check_split(config.validation_split, int((~held).sum()), int(held.sum()))
        info = {
            "validation_split": config.validation_split,
            "seed": config.seed,
            "train_rows": int((~held).sum()),
            "validation_rows": int(held.sum()),
        }
        return RawData(raw.take(~held), raw.take(held), info)
    return RawData(raw, None, {"train_rows": raw.num_rows, "validation_rows": 0})


def steps_per_run(num_rows: int, batch_size: int, epochs: int | None) -> int | None:
    """Global steps the data provides: ``ceil(rows * epochs / batch_size)``, or None if it repeats forever."""
    if epochs is None:
        return None
    return math.ceil(num_rows * epochs / batch_size)


#: Rows per chunk handed from the in-memory arrays to ``tf.data`` (rows); bounds the copy per call.
GENERATOR_CHUNK_ROWS = 4096


def array_source(tf: Any, data: TrainingData) -> Any:
    """A dataset of the rows of ``data``, read from Python memory at run time; nothing is copied into the graph.

    ``Dataset.from_tensor_slices(arrays)`` would embed the arrays as graph constants (every
    ``graph.pbtxt``, ``.meta`` and event file would grow with the rows). This uses
    ``Dataset.from_generator`` over chunks of :data:`GENERATOR_CHUNK_ROWS` rows, then ``unbatch``,
    so the graph holds only a reference to the generator.

    Args:
        tf: the ``tensorflow`` module.
        data: the arrays (``features float32 [n, f]``, ``labels float32 [n, 1]``).

    Returns:
        A dataset of ``(features float32 [n_features], labels float32 [1])`` rows, in file order.
    """
    features, labels = data.features, data.labels

    def chunks() -> Any:
        for start in range(0, features.shape[0], GENERATOR_CHUNK_ROWS):
            yield features[start : start + GENERATOR_CHUNK_ROWS], labels[start : start + GENERATOR_CHUNK_ROWS]

    signature = (
        tf.TensorSpec([None, features.shape[1]], tf.float32),
        tf.TensorSpec([None, labels.shape[1]], tf.float32),
    )
    return tf.data.Dataset.from_generator(chunks, output_signature=signature).unbatch()


def make_dataset(tf: Any, data: TrainingData, config: DataConfig, skip_steps: int = 0) -> Any:
    """Build the ``tf.data`` pipeline for training.

    Pipeline: :func:`array_source` -> ``cache`` -> ``shuffle`` (buffer: all rows,
    reshuffled each epoch, seeded) -> ``repeat(epochs)`` -> ``batch`` ->
    ``skip(skip_steps)`` -> ``prefetch``. With a seed the order is the same
    in every run, so skipping the batches a resumed run already trained on
    continues the data exactly where the checkpoint left it. The ``cache`` keeps every epoch after
    the first from calling the Python generator again (as the streaming pipeline caches small data):
    a loop of many steps per session call is otherwise bound by it.

    Args:
        tf: the ``tensorflow`` module.
        data: the arrays.
        config: the ``data:`` section.
        skip_steps: batches to skip (the restored ``global_step``).

    Returns:
        A dataset of ``(features float32 [batch, n_features], labels float32 [batch, 1])``.
    """
    ds = array_source(tf, data).cache()
    if config.shuffle:
        ds = ds.shuffle(data.num_rows, seed=config.seed, reshuffle_each_iteration=True)
    ds = ds.repeat(config.epochs)
    ds = ds.batch(config.batch_size)
    if skip_steps:
        ds = ds.skip(skip_steps)
    return ds.prefetch(2)


def make_eval_dataset(tf: Any, data: TrainingData, batch_size: int) -> Any:
    """Build the ``tf.data`` pipeline for evaluation: every row once, in order.

    Pipeline: :func:`array_source` -> ``batch`` (the last batch may be smaller). Iterate it with an
    initializable iterator (``tf.compat.v1.data.make_initializable_iterator``), re-initialized
    before each evaluation; ``ceil(rows / batch_size)`` batches cover the set.

    Args:
        tf: the ``tensorflow`` module.
        data: the validation arrays.
        batch_size: rows per batch.

    Returns:
        A dataset of ``(features float32 [batch, n_features], labels float32 [batch, 1])``.
    """
    return array_source(tf, data).batch(batch_size)
