"""The rows of data files as typed columns: the data model every stage of ``runner/data/`` shares.

The data flows one way (``docs/architecture.md``, "The data path"): files (:mod:`hookrun.runner.data.formats`,
one module a format) -> sample and statistics (:mod:`~hookrun.runner.data.reader`,
:mod:`~hookrun.runner.data.preprocessing`) -> transform and ``tf.data`` (:mod:`~hookrun.runner.data.streaming`).
What passes between the stages is defined here, below all of them: :class:`RawColumns` (some rows' used
columns, typed) and :class:`ColumnPlan` (which columns, of which kinds). No TensorFlow here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: Cell texts read as a missing value.
MISSING_MARKERS = frozenset({"", "na", "nan", "null", "none"})

#: A TFRecord int64 feature's value where a record lacks it, when TensorFlow parses it as a fixed-length feature
#: (read as missing, as a float feature's NaN; a record holding exactly this value reads as missing too).
INT64_ABSENT = -(2**63)

#: Column kinds: ``numeric`` (float cells) or ``categorical`` (text cells, one-hot encoded).
NUMERIC, CATEGORICAL = "numeric", "categorical"


@dataclass
class RawColumns:
    """The used columns of some rows of the data files as typed arrays, before preprocessing.

    Attributes:
        source: the first file (for messages about the whole set).
        lines: ``int64 [n_rows]``, each row's 1-based line in its file (record number for TFRecord).
        positions: column name -> 0-based position in the file's header (or features).
        kinds: column name -> ``numeric`` or ``categorical``.
        values: column name -> ``float64 [n_rows]`` (NaN where missing) for a numeric column,
            ``object [n_rows]`` of ``str`` (None where missing) for a categorical one.
        first_text: for a column found to hold text: ``(line, cell)`` of its first non-number.
        key: the config key naming the file (``data.train`` or ``data.validation``).
        files: the files the rows come from; None: every row is from ``source``.
        file_ids: ``int32 [n_rows]``, each row's index in ``files`` (None with ``files``).
        tfrecord: the rows are TFRecord records (messages say ``record N: feature 'x'``).
        plain: CSV columns whose cells need no stripping and whose missing cells are all empty (so
            ``tf.io.decode_csv`` can decode them directly: numbers as ``float64``, missing = NaN).
    """

    source: Path
    lines: np.ndarray
    positions: dict[str, int]
    kinds: dict[str, str]
    values: dict[str, np.ndarray]
    first_text: dict[str, tuple[int, str]] = field(default_factory=dict)
    key: str = "data.train"
    files: list[Path] | None = None
    file_ids: np.ndarray | None = None
    tfrecord: bool = False
    plain: set[str] = field(default_factory=set)

    @property
    def num_rows(self) -> int:
        """Rows (count)."""
        return int(self.lines.shape[0])

    def missing(self, name: str) -> np.ndarray:
        """``bool [n_rows]``: where column ``name`` is empty."""
        column = self.values[name]
        if self.kinds[name] == NUMERIC:
            return np.isnan(column)
        return np.asarray(column == None, dtype=bool)  # noqa: E711 (element-wise on an object array)

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
            files=self.files,
            file_ids=self.file_ids[rows] if self.file_ids is not None else None,
            tfrecord=self.tfrecord,
        )

    def file_of(self, row: int) -> Path:
        """The file row ``row`` comes from."""
        if self.files is None or self.file_ids is None:
            return self.source
        return self.files[int(self.file_ids[row])]

    def where(self, row: int, name: str) -> str:
        """``file:line: column 'name' (column k)`` for messages about one cell (``file: record N: feature 'x'``)."""
        if self.tfrecord:
            return f"{self.file_of(row)}: record {int(self.lines[row])}: feature {name!r}"
        return f"{self.file_of(row)}:{int(self.lines[row])}: column {name!r} (column {self.positions[name] + 1})"

    @staticmethod
    def concat(parts: list[RawColumns]) -> RawColumns:
        """The rows of ``parts`` (same columns and kinds) one after the other."""
        first = parts[0]
        if len(parts) == 1:
            return first
        files = first.files or [first.source]
        ids = [p.file_ids if p.file_ids is not None else np.zeros(p.num_rows, np.int32) for p in parts]
        first_text: dict[str, tuple[int, str]] = {}
        for part in parts:
            for name, found in part.first_text.items():
                first_text.setdefault(name, found)
        return RawColumns(
            source=first.source,
            lines=np.concatenate([p.lines for p in parts]),
            positions=dict(first.positions),
            kinds=dict(first.kinds),
            values={name: np.concatenate([p.values[name] for p in parts]) for name in first.values},
            first_text=first_text,
            key=first.key,
            files=files,
            file_ids=np.concatenate(ids).astype(np.int32),
            tfrecord=first.tfrecord,
        )



@dataclass
class ColumnPlan:
    """How the files of a set are read: the columns, their kinds, and what fixed them.

    Attributes:
        names: the used columns (features, then the label).
        kinds: column -> ``numeric`` / ``categorical``.
        origin: what fixed the kinds (for messages).
        first_text: a text column's first non-number in the sample ``(line, cell)``.
        sample: the first rows of the first file, parsed (at most :data:`hookrun.runner.data.reader.KIND_SAMPLE_ROWS`).
    """

    names: list[str]
    kinds: dict[str, str]
    origin: str
    first_text: dict[str, tuple[int, str]]
    sample: RawColumns


#: The key of a decoded batch's block of every numeric feature column (``float64 [n, k]`` numbers and
#: ``bool [n, k]`` missing, in feature order): not a column name (a NUL). A format's ``decode`` may give it.
NUMERIC_BLOCK = "\0numeric"
