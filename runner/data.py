"""CSV input: read and check the file, standardise, and feed it through ``tf.data``.

The file is parsed with Python's ``csv`` module (so every error names its
line and column), held in memory as ``float32`` arrays, and fed through a
``tf.data`` pipeline: shuffle -> repeat(epochs) -> batch -> skip(resumed
steps) -> prefetch.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hookrun.config_schemas.data import DataConfig
from hookrun.runner.errors import SetupError

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


def read_csv(path: Path, max_rows: int | None = None) -> CsvTable:
    """Read a CSV file with a header row.

    Args:
        path: the file.
        max_rows: stop after this many data rows (None = all).

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
        raise SetupError(f"{path}: cannot open the data file ({err.strerror or err}); check `data.train`") from None
    if not exists:
        raise SetupError(f"{path}: data file not found; check `data.train` (paths are relative to the config file)")
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


@dataclass
class TrainingData:
    """Numeric arrays ready for ``tf.data``.

    Attributes:
        features: ``float32 [n_rows, n_features]``.
        labels: ``float32 [n_rows, 1]``.
        feature_names: column names, in the order of ``features``' second axis.
        label_name: the label column.
        source: the CSV file.
        dropped_rows: rows left out by ``missing: drop`` (count).
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


def feature_columns(config: DataConfig, header: list[str]) -> list[str]:
    """The feature columns: ``config.features``, or every column but the label."""
    if config.features is not None:
        return list(config.features)
    return [name for name in header if name != config.label]


def table_to_arrays(table: CsvTable, config: DataConfig) -> TrainingData:
    """Convert a table to ``float32`` arrays, applying the ``missing`` policy.

    Args:
        table: the parsed CSV.
        config: the ``data:`` section.

    Returns:
        The arrays.

    Raises:
        SetupError: the label or a feature column does not exist, a cell is
            not a number (names line, column and value; for a text column it
            suggests listing ``features``), or a cell is empty under
            ``missing: error``.
    """
    names = feature_columns(config, table.header)
    if config.label in names:
        raise SetupError(f"{table.path}: column {config.label!r} is both the label and a feature")
    indices = [table.column_index(name) for name in names]
    label_index = table.column_index(config.label)
    wanted = [*indices, label_index]
    values = np.empty((len(table.rows), len(wanted)), dtype=np.float32)
    keep = np.ones(len(table.rows), dtype=bool)
    for row_number, (line, cells) in enumerate(table.rows):
        for out_col, col in enumerate(wanted):
            text = cells[col].strip()
            if text.lower() in MISSING_MARKERS:
                if config.missing == "drop":
                    keep[row_number] = False
                    break
                raise SetupError(
                    f"{table.path}:{line}: column {table.header[col]!r} (column {col + 1}) is empty; "
                    "fill it, or set `data.missing: drop` to drop such rows"
                )
            try:
                values[row_number, out_col] = float(text)
            except ValueError:
                hint = (
                    "list numeric columns in `data.features`"
                    if config.features is None
                    else "only numeric columns can be features"
                )
                raise SetupError(
                    f"{table.path}:{line}: column {table.header[col]!r} (column {col + 1}) has {text!r}, "
                    f"not a number; {hint}"
                ) from None
    values = values[keep]
    if values.shape[0] == 0:
        raise SetupError(f"{table.path}: every row has a missing value; nothing is left to train on")
    return TrainingData(
        features=values[:, :-1],
        labels=values[:, -1:],
        feature_names=names,
        label_name=config.label,
        source=table.path,
        dropped_rows=int((~keep).sum()),
    )


def load_training_data(config: DataConfig, base_dir: Path) -> TrainingData:
    """Read ``config.train`` (relative to ``base_dir``) into arrays.

    Raises:
        SetupError: see :func:`read_csv` and :func:`table_to_arrays`.
    """
    return table_to_arrays(read_csv(base_dir / config.train), config)


@dataclass
class Standardizer:
    """Z-score scaling with statistics from the training data.

    Attributes:
        feature_names: the columns, in order.
        mean: per-feature mean (feature units).
        std: per-feature standard deviation (feature units); a constant column gets 1.
    """

    feature_names: list[str]
    mean: list[float] = field(default_factory=list)
    std: list[float] = field(default_factory=list)

    @classmethod
    def fit(cls, data: TrainingData) -> Standardizer:
        """Compute mean and std of each feature of ``data``."""
        mean = data.features.astype(np.float64).mean(axis=0)
        std = data.features.astype(np.float64).std(axis=0)
        std[std == 0] = 1.0
        return cls(list(data.feature_names), mean.tolist(), std.tolist())

    def apply(self, features: np.ndarray) -> np.ndarray:
        """Return ``(features - mean) / std`` as ``float32``."""
        return ((features - np.asarray(self.mean)) / np.asarray(self.std)).astype(np.float32)

    def save(self, path: Path) -> None:
        """Write the statistics as JSON (atomically)."""
        from hookrun.hooks.files import atomic_write_text

        atomic_write_text(path, json.dumps({"standardize": self.__dict__}, indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> Standardizer:
        """Read statistics written by :meth:`save`."""
        return cls(**json.loads(path.read_text())["standardize"])


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
