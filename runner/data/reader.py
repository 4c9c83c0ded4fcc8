"""CSV input: read and check the files, split off validation rows, and feed arrays through ``tf.data``.

The files are parsed with Python's ``csv`` module (so every error names its
line and column) into typed columns (:class:`RawColumns`: numbers, or text
for categorical columns, with missing cells marked). The training split is
then preprocessed (:mod:`hookrun.runner.data.preprocessing`) into ``float32``
arrays held in memory and fed through a ``tf.data`` pipeline: shuffle ->
repeat(epochs) -> batch -> skip(resumed steps) -> prefetch. The validation
split gets its own, initializable, pipeline (:func:`make_eval_dataset`).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hookrun.config_schemas.data import DataConfig
from hookrun.config_schemas.suggest import did_you_mean
from hookrun.runner.errors import DataError, SetupError

#: Cell texts read as a missing value.
MISSING_MARKERS = frozenset({"", "na", "nan", "null", "none"})


@dataclass
class CsvTable:
    """A CSV file as text cells, with the line number of every row.

    Attributes:
        path: the file.
        header: column names, in file order.
        rows: ``(line, cells)`` pairs; ``line`` is 1-based in the file (the header is line 1).
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
    """Read a CSV file with a header row.

    Args:
        path: the file.
        max_rows: stop after this many data rows (None = all).
        key: the config key that names the file, for messages (``data.train`` or ``data.validation``).

    Returns:
        The table.

    Raises:
        SetupError: the file is missing, a directory, unreadable, not UTF-8,
            empty, has a header only, has an empty or duplicate column name,
            or a row with a different number of cells than the header
            (each message names the file and line).
    """
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except OSError as err:  # e.g. a file name too long for the file system
        raise SetupError(f"{path}: cannot open the data file ({err.strerror or err}); check `{key}`") from None
    if not exists:
        raise SetupError(f"{path}: data file not found; check `{key}` (paths are relative to the config file)")
    if is_dir:
        raise SetupError(f"{path}: is a directory, expected a CSV file")
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None or not any(cell.strip() for cell in header):
                raise SetupError(f"{path}: the file is empty; it needs a header row and data rows")
            header = [cell.strip() for cell in header]
            for index, name in enumerate(header):
                if not name:
                    raise SetupError(f"{path}:1: column {index + 1} has no name in the header")
                if name in header[:index]:
                    raise SetupError(f"{path}:1: column {name!r} appears twice in the header")
            rows: list[tuple[int, list[str]]] = []
            for cells in reader:
                if not cells:
                    continue  # blank line
                line = reader.line_num
                if len(cells) != len(header):
                    raise SetupError(
                        f"{path}:{line}: row has {len(cells)} cells but the header has {len(header)} columns"
                    )
                rows.append((line, cells))
                if max_rows is not None and len(rows) >= max_rows:
                    break
    except UnicodeDecodeError as err:
        raise SetupError(f"{path}: not UTF-8 text ({err.reason}); save the CSV as UTF-8") from None
    except PermissionError:
        raise SetupError(f"{path}: not readable (permission denied)") from None
    except csv.Error as err:
        raise SetupError(f"{path}: not a valid CSV file ({err})") from None
    if not rows:
        raise SetupError(f"{path}: has a header but no data rows")
    return table_of(path, header, rows)


def table_of(path: Path, header: list[str], rows: list[tuple[int, list[str]]]) -> CsvTable:
    """Build a :class:`CsvTable` (a seam for tests and in-memory data)."""
    return CsvTable(path=path, header=header, rows=rows)


#: Column kinds: ``numeric`` (float cells) or ``categorical`` (text cells, one-hot encoded).
NUMERIC, CATEGORICAL = "numeric", "categorical"


@dataclass
class RawColumns:
    """The used columns of a CSV file as typed arrays, before preprocessing.

    Attributes:
        source: the file.
        lines: ``int64 [n_rows]``, each row's 1-based line in the file (for messages).
        positions: column name -> 0-based position in the file's header.
        kinds: column name -> ``numeric`` or ``categorical``.
        values: column name -> ``float64 [n_rows]`` (NaN where missing) for a numeric column,
            ``object [n_rows]`` of ``str`` (None where missing) for a categorical one.
        first_text: for a column found to hold text: ``(line, cell)`` of its first non-number.
        key: the config key naming the file (``data.train`` or ``data.validation``).
    """

    source: Path
    lines: np.ndarray
    positions: dict[str, int]
    kinds: dict[str, str]
    values: dict[str, np.ndarray]
    first_text: dict[str, tuple[int, str]] = field(default_factory=dict)
    key: str = "data.train"

    @property
    def num_rows(self) -> int:
        """Rows (count)."""
        return int(self.lines.shape[0])

    def missing(self, name: str) -> np.ndarray:
        """``bool [n_rows]``: where column ``name`` is empty."""
        column = self.values[name]
        if self.kinds[name] == NUMERIC:
            return np.isnan(column)
        return np.array([cell is None for cell in column], dtype=bool)

    def take(self, rows: np.ndarray) -> RawColumns:
        """The rows at the given indices (or boolean mask), as a new :class:`RawColumns`."""
        return RawColumns(
            source=self.source,
            lines=self.lines[rows],
            positions=dict(self.positions),
            kinds=dict(self.kinds),
            values={name: column[rows] for name, column in self.values.items()},
            first_text=dict(self.first_text),
            key=self.key,
        )

    def where(self, row: int, name: str) -> str:
        """``file:line: column 'name' (column k)`` for messages about one cell."""
        return f"{self.source}:{int(self.lines[row])}: column {name!r} (column {self.positions[name] + 1})"


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
    """The feature columns: ``config.features``, or every column but the label."""
    if config.features is not None:
        return list(config.features)
    return [name for name in header if name != config.label]


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
    if not names:
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


def parse_columns(
    table: CsvTable,
    names: list[str],
    categorical: set[str] | frozenset[str] = frozenset(),
    kinds: dict[str, str] | None = None,
    key: str = "data.train",
) -> RawColumns:
    """Parse the named columns of a table into typed arrays.

    A column is categorical when it is listed in ``categorical`` or (auto-detected) when a
    non-empty cell is not a number; else numeric. With ``kinds`` (a validation file, or a resumed
    run's saved state) each column's kind is fixed instead, and text in a numeric column is an error.

    Args:
        table: the parsed CSV.
        names: the columns to keep (features, then the label).
        categorical: columns declared categorical.
        kinds: column -> ``numeric`` or ``categorical``, to enforce; None to detect.
        key: the config key naming the file, for messages and :attr:`DataError.loc`.

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
    for name in names:
        try:
            position = table.column_index(name)
        except SetupError as err:
            raise DataError(str(err), loc=loc) from None
        positions[name] = position
        cells = [cells[position].strip() for _, cells in table.rows]
        empty = [cell.lower() in MISSING_MARKERS for cell in cells]
        kind = kinds[name] if kinds is not None and name in kinds else (CATEGORICAL if name in categorical else None)
        if kind != CATEGORICAL:
            numbers = np.full(len(cells), np.nan, dtype=np.float64)
            for row, (cell, is_empty) in enumerate(zip(cells, empty, strict=True)):
                if is_empty:
                    continue
                try:
                    numbers[row] = float(cell)
                except ValueError:
                    if kind == NUMERIC:
                        raise DataError(
                            f"{table.path}:{lines[row]}: column {name!r} (column {position + 1}) has {cell!r}, "
                            "not a number; the column is numeric in the training data",
                            loc=loc,
                        ) from None
                    first_text[name] = (int(lines[row]), cell)
                    break
            else:
                out_kinds[name] = NUMERIC
                values[name] = numbers
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
    )


def split_rows(num_rows: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Split row indices into training and validation by a seeded permutation.

    The validation rows are the first ``round(num_rows * fraction)`` of
    ``numpy.random.default_rng(seed).permutation(num_rows)``; both index arrays are returned sorted
    (file order), so the split depends only on the row count, the fraction and the seed.

    Args:
        num_rows: rows in the file (count).
        fraction: share held out, ``0 < fraction < 1``.
        seed: the permutation's seed.

    Returns:
        ``(train_indices, validation_indices)``, ``int64`` arrays.

    Raises:
        DataError: either part would be empty (too few rows for the fraction).
    """
    n_val = int(round(num_rows * fraction))
    if n_val < 1 or n_val >= num_rows:
        raise DataError(
            f"validation_split {fraction} of {num_rows} row(s) leaves "
            f"{'no validation' if n_val < 1 else 'no training'} rows; change the fraction or add rows",
            loc=("data", "validation_split"),
        )
    order = np.random.default_rng(seed).permutation(num_rows)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def load_raw_data(
    config: DataConfig,
    base_dir: Path,
    *,
    kinds: dict[str, str] | None = None,
    max_rows: int | None = None,
    split: bool = True,
) -> RawData:
    """Read the training (and validation) CSV of ``config`` into typed columns, split off validation rows.

    Args:
        config: the ``data:`` section.
        base_dir: the config file's directory (paths are relative to it).
        kinds: column kinds to enforce (a resumed run's saved state); None detects them from the training file.
        max_rows: read at most this many rows of each file (the quick check before training).
        split: apply ``validation_split``; False keeps every training-file row in ``train`` (the quick check).

    Returns:
        The rows. With ``validation``, that file is parsed with the training file's column kinds.

    Raises:
        SetupError: see :func:`read_csv`.
        DataError: see :func:`check_columns`, :func:`parse_columns` and :func:`split_rows`.
    """
    table = read_csv(base_dir / config.train, max_rows=max_rows)
    names = check_columns(config, table)
    raw = parse_columns(table, [*names, config.label], set(config.categorical), kinds)
    if config.validation is not None:
        try:
            val_table = read_csv(base_dir / config.validation, max_rows=max_rows, key="data.validation")
        except DataError:
            raise
        except SetupError as err:
            raise DataError(str(err), loc=("data", "validation")) from None
        validation = parse_columns(val_table, [*names, config.label], kinds=raw.kinds, key="data.validation")
        info = {"validation": config.validation, "train_rows": raw.num_rows, "validation_rows": validation.num_rows}
        return RawData(raw, validation, info)
    if config.validation_split is not None and split:
        assert config.seed is not None  # the config model requires it
        train_rows, val_rows = split_rows(raw.num_rows, config.validation_split, config.seed)
        info = {
            "validation_split": config.validation_split,
            "seed": config.seed,
            "train_rows": int(train_rows.size),
            "validation_rows": int(val_rows.size),
        }
        return RawData(raw.take(train_rows), raw.take(val_rows), info)
    return RawData(raw, None, {"train_rows": raw.num_rows, "validation_rows": 0})


def steps_per_run(num_rows: int, batch_size: int, epochs: int | None) -> int | None:
    """Global steps the data provides: ``ceil(rows * epochs / batch_size)``, or None if it repeats forever."""
    if epochs is None:
        return None
    return math.ceil(num_rows * epochs / batch_size)


def make_dataset(tf: Any, data: TrainingData, config: DataConfig, skip_steps: int = 0) -> Any:
    """Build the ``tf.data`` pipeline for training.

    Pipeline: ``from_tensor_slices`` -> ``shuffle`` (buffer: all rows,
    reshuffled each epoch, seeded) -> ``repeat(epochs)`` -> ``batch`` ->
    ``skip(skip_steps)`` -> ``prefetch``. With a seed the order is the same
    in every run, so skipping the batches a resumed run already trained on
    continues the data exactly where the checkpoint left it.

    Args:
        tf: the ``tensorflow`` module.
        data: the arrays.
        config: the ``data:`` section.
        skip_steps: batches to skip (the restored ``global_step``).

    Returns:
        A dataset of ``(features float32 [batch, n_features], labels float32 [batch, 1])``.
    """
    ds = tf.data.Dataset.from_tensor_slices((data.features, data.labels))
    if config.shuffle:
        ds = ds.shuffle(data.num_rows, seed=config.seed, reshuffle_each_iteration=True)
    ds = ds.repeat(config.epochs)
    ds = ds.batch(config.batch_size)
    if skip_steps:
        ds = ds.skip(skip_steps)
    return ds.prefetch(2)


def make_eval_dataset(tf: Any, data: TrainingData, batch_size: int) -> Any:
    """Build the ``tf.data`` pipeline for evaluation: every row once, in order.

    Pipeline: ``from_tensor_slices`` -> ``batch`` (the last batch may be smaller). Iterate it with an
    initializable iterator (``tf.compat.v1.data.make_initializable_iterator``), re-initialized
    before each evaluation; ``ceil(rows / batch_size)`` batches cover the set.

    Args:
        tf: the ``tensorflow`` module.
        data: the validation arrays.
        batch_size: rows per batch.

    Returns:
        A dataset of ``(features float32 [batch, n_features], labels float32 [batch, 1])``.
    """
    return tf.data.Dataset.from_tensor_slices((data.features, data.labels)).batch(batch_size)
