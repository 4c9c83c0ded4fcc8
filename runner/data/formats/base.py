"""The interface of a data file format, and the file objects every format reads. No TensorFlow here.

A format is one module of :mod:`hookrun.runner.data.formats` (or a plug-in, see
:mod:`~hookrun.runner.data.formats.registry`) holding ``FORMAT``, an instance of a :class:`FileFormat`
subclass. hookrun asks it, and nothing else, how a file of its kind is read:

- pure Python, for the sample that fixes the column kinds, the statistics pass and ``hookrun validate``
  (:meth:`FileFormat.rows`; optionally a faster whole-file reader, :meth:`FileFormat.fast_chunks`);
- ``tf.data``, for training, evaluation and prediction (:meth:`FileFormat.records` gives a file's
  records, :meth:`FileFormat.decode` turns a batch of them into cells).

Both readers must agree: the same rows, numbered alike (the validation split hashes each row's number),
with the same cell texts. Class attributes describe the rest (a header line, blank lines, whether rows
are keyed records or positional cells). Source followed: ``hooks/registry.py``'s one-folder-a-hook,
and ``tf.data``'s own readers (``TextLineDataset``, ``TFRecordDataset``).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from hookrun.runner.data.columns import ColumnPlan, RawColumns

#: Longest line (characters) a text row may take; a longer one is refused (a binary file, /dev/zero).
MAX_LINE_CHARS = 1 << 20
#: Longest TFRecord record (bytes).
MAX_RECORD_BYTES = 64 << 20
#: Characters (text formats) or bytes (TFRecord) a sample read (``hookrun validate``, the column kinds) may take.
SAMPLE_CHARS = 8 << 20


@dataclass(frozen=True)
class DataFile:
    """One data file.

    Attributes:
        path: the file (as resolved against the config's directory).
        format: the name of its format (``csv``, ``tfrecord``, ...: a registered :class:`FileFormat`'s ``name``).
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
        format: their format's name.
        columns: filled by the first read: the column names (CSV header, or the first record's features).
        dtypes: typed formats: feature -> ``bytes``, ``float`` or ``int64``, from the first records.
        declared: ``data.columns`` as dtypes (feature -> ``bytes``, ``float`` or ``int64``): they override
            the first records' (typed formats only: :attr:`FileFormat.typed`).
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


class SlowPath(Exception):
    """A format's fast reader cannot read (the rest of) a file as :meth:`FileFormat.rows` would.

    Raised by :meth:`FileFormat.fast_chunks`, possibly after some chunks: the caller reads the rest of the
    file with :meth:`FileFormat.rows`, skipping the rows already yielded, so the exact ``file:line`` of a
    problem is named.
    """


Rows = Iterator[tuple[int, list[str]]]


class FileFormat:
    """One data file format: how its files are read, in pure Python and in ``tf.data``.

    Subclass it in a module of :mod:`hookrun.runner.data.formats` (or a plug-in) and set ``FORMAT =
    YourFormat()`` there. Set the class attributes; implement :meth:`rows` and :meth:`parse_record`
    (or :meth:`decode`). The module must not import TensorFlow at its top (``hookrun validate`` imports
    every format); the ``tf`` module is handed to the methods that need it.

    Attributes:
        name: the format's name: ``data.format``'s value and :attr:`DataFile.format` (lower case).
        extensions: file name endings (lower case, with the dot) that mean this format, gzip ones included
            (``.jsonl.gz``): a file ending in ``.gz`` is read as gzip.
        description: what messages list as accepted: ``"JSON lines (.jsonl, .jsonl.gz)"``.
        keyed: rows are records of named values (a name a record lacks is a missing value; every file of
            a set is read with the training files' columns), not positional cells under each file's header.
        header_lines: leading lines (records) of every file that are not rows (a CSV header: 1); the rows
            are still numbered from the file's first line.
        skip_blank: an empty line (record) is no row, and keeps its number (``TextLineDataset`` counts it).
        record_wording: messages name a cell ``file: record N: feature 'x'`` (else ``file:N: column 'x'``).
        typed: the records carry value types, so ``data.columns`` (declared types, tensor features) applies.
        rank: the place in lists (messages, docs): built-ins first, then by name.
    """

    name: ClassVar[str] = ""
    extensions: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    keyed: ClassVar[bool] = False
    header_lines: ClassVar[int] = 0
    skip_blank: ClassVar[bool] = False
    record_wording: ClassVar[bool] = False
    typed: ClassVar[bool] = False
    rank: ClassVar[int] = 100

    # ------------------------------------------------------------------ pure Python (no TensorFlow)

    def rows(self, file: DataFile, fileset: FileSet, budget: int | None = None) -> tuple[list[str], Rows]:
        """Open a file: its column names, and an iterator of ``(number, cells)`` for its rows.

        Called for the sample (the first :data:`~hookrun.runner.data.reader.KIND_SAMPLE_ROWS` rows of the first
        training file, also by ``hookrun validate``), and for the statistics pass where :meth:`fast_chunks`
        cannot read a file. The iterator may have a ``close()`` (it is called when the reader stops early).

        Args:
            file: the file (``file.gzip``: gzip-compressed).
            fileset: its set: ``fileset.key`` for messages (``data.train``, ``data.validation`` or ``--data``);
                for a keyed format ``fileset.columns``, when filled, are the names to read, in this order.
            budget: read at most about this many characters (bytes) in all (a sample), or None for the file.

        Returns:
            ``(names, rows)``: ``names`` the columns every row's ``cells`` (texts, ``""`` when missing) hold,
            in order; ``number`` the row's 1-based line (record) in the file, as :meth:`records` counts it.

        Raises:
            DataError: (now, or while iterating) an unreadable, empty or malformed file, naming it and the line.
        """
        raise NotImplementedError(f"{type(self).__name__}.rows")

    def names_present(self, file: DataFile, count: int, fileset: FileSet, budget: int | None = None) -> list[str]:
        """The sorted column names the first ``count`` rows of ``file`` hold (for messages about a missing one).

        The default: the names :meth:`rows` gives. A keyed format whose records may lack names says which
        the records have.
        """
        names, rows = self.rows(file, fileset, budget)
        close = getattr(rows, "close", None)
        if close is not None:
            close()
        return sorted(names)

    def declared_dtypes(self, types: dict[str, str]) -> dict[str, str]:
        """``data.columns``' value types (name -> ``float``/``int``/``string``) as this format's dtypes (typed formats).

        Only called when :attr:`typed`; the default keeps the names as they are.
        """
        return dict(types)

    def fast_chunks(
        self, file: DataFile, fileset: FileSet, plan: ColumnPlan, chunk_rows: int
    ) -> Iterator[RawColumns]:
        """The whole file's rows as typed chunks, faster than :meth:`rows` (optional; ``hookrun train``'s full pass).

        The default reads nothing: it raises :class:`SlowPath` at once, and :meth:`rows` reads the file.

        Args:
            file: the file.
            fileset: its set (``columns``, ``dtypes`` filled by the sample).
            plan: the columns to read (``plan.names``) and their kinds (``plan.kinds``).
            chunk_rows: rows per chunk, at most.

        Yields:
            Chunks with ``lines`` (the rows' numbers), ``values`` and ``kinds``, as
            :func:`hookrun.runner.data.reader.parse_columns` gives them.

        Raises:
            SlowPath: from here on, :meth:`rows` must read the file (after the chunks already yielded).
            DataError: a problem this reader names exactly.
        """
        raise SlowPath()
        yield  # a generator  # pragma: no cover

    def parse_record(self, record: bytes, names: list[str], columns: list[str]) -> list[str]:
        """One record's cells (texts, ``""`` when missing) for the columns ``names``, as :meth:`rows` gives them.

        Used by the default :meth:`decode`, in a ``tf.numpy_function``. Called only on records the statistics
        pass already read through :meth:`rows` (so every cell was checked).

        Args:
            record: the record's bytes (a line without its line break, for the default :meth:`records`).
            names: the columns to give, in order (features, then the label).
            columns: the names :meth:`rows` gave for the set's files (a positional format's header): where
                each of ``names`` is.
        """
        raise NotImplementedError(f"{type(self).__name__}.parse_record")

    # ------------------------------------------------------------------ tf.data (TensorFlow handed in)

    def parse_tensors(self, tf: Any, records: Any, tensors: dict[str, Any]) -> dict[str, Any]:
        """A batch of records' tensor features (``data.columns`` with a shape, varlen or bytes): typed formats only.

        Called once per batch in the training / evaluation pipeline, after batching (the records ride along
        under :data:`hookrun.runner.data.streaming.RECORD_KEY`).

        Args:
            tf: the ``tensorflow`` module.
            records: ``string [batch]``, the records.
            tensors: name -> :class:`~hookrun.config_schemas.data.TensorFeature`, in declaration order.

        Returns:
            name -> the parsed tensor (``[batch, *shape]``, a ``SparseTensor`` or a ``RaggedTensor``).
        """
        raise NotImplementedError(f"{type(self).__name__} is not typed: data.columns has no tensor features for it")

    def serving_receiver(self, tf: Any, tensors: dict[str, Any], examples: Any = None) -> Any:
        """The serving receiver of a trained run's tensor features: typed formats only (``hookrun export``, predict).

        Args:
            tf: the ``tensorflow`` module (builds in the default graph).
            tensors: the tensor features' parse spec, in declaration order (``DataConfig.tensor_features``).
            examples: an existing ``string [batch]`` tensor of serialized records to parse, else a new placeholder.

        Returns:
            A receiver: ``features`` (name -> the tensor training gave the model) and ``receiver_tensors``.

        Raises:
            NotImplementedError: the format has no tensor features.
        """
        raise NotImplementedError(f"{type(self).__name__} is not typed: data.columns has no tensor features for it")

    def predict_dataset(self, tf: Any, files: list[tuple[Any, str]], tensors: dict[str, Any],
                        batch_size: int) -> Any:
        """Files' records parsed into the tensor features, in order, ``batch_size`` a batch: typed formats only.

        Args:
            tf: the ``tensorflow`` module.
            files: ``(path, compression)`` per file.
            tensors: the tensor features' parse spec.
            batch_size: records per batch.

        Returns:
            A ``tf.data.Dataset`` of features dicts (as :meth:`serving_receiver`'s ``features``).

        Raises:
            NotImplementedError: the format has no tensor features.
        """
        raise NotImplementedError(f"{type(self).__name__} is not typed: data.columns has no tensor features for it")

    def records(self, tf: Any, path: Any, compression: Any) -> Any:
        """A file's records as a ``tf.data.Dataset`` of ``string`` scalars, every line (record) in file order.

        The default: ``tf.data.TextLineDataset`` (one record per line, blank lines included: numbered as
        :meth:`rows` numbers them). ``path`` and ``compression`` (``"GZIP"`` or ``""``) are string tensors.
        """
        return tf.data.TextLineDataset(path, compression_type=compression, buffer_size=1 << 18)

    def decode(self, transform: Any, records: Any) -> dict[str, tuple[Any, Any, Any]]:
        """Cells of a batch of records: column -> ``(text or None, float64 number or None, bool missing)``.

        Called once per parse batch in the training / evaluation map function (graph mode, traced once).
        ``transform`` is the pipeline's :class:`~hookrun.runner.data.streaming._Transform`: ``transform.tf``,
        ``transform.names`` (the columns to decode, features then label), ``transform.state.kinds``
        (column -> ``numeric``/``categorical``), ``transform.fileset`` and ``transform.text_numbers(text)``
        (``(stripped text, float64 number, missing)`` of text cells, as a CSV cell is read). Each value is
        ``[n]`` for the ``n`` records; a numeric column needs its number, a categorical one its text. A format
        may give every numeric feature column at once under :data:`~hookrun.runner.data.columns.NUMERIC_BLOCK`.

        The default runs :meth:`parse_record` on each record in a ``tf.numpy_function`` (Python speed; a
        pipeline holding it restarts rather than restores its position, as ``docs/data.md`` says).
        """
        tf = transform.tf
        names = list(transform.names)
        columns = list(transform.fileset.columns)
        width = len(names)

        def cells_of(batch: np.ndarray) -> np.ndarray:
            out = np.empty((len(batch), width), dtype=object)
            for row, record in enumerate(batch):
                out[row, :] = [cell.encode("utf-8") for cell in self.parse_record(bytes(record), names, columns)]
            return out if len(batch) else np.empty((0, width), dtype=object)

        cells = tf.numpy_function(cells_of, [records], tf.string, stateful=False)
        cells.set_shape([None, width])
        kinds = transform.state.kinds
        out: dict[str, tuple[Any, Any, Any]] = {}
        for index, name in enumerate(names):
            text, number, missing = transform.text_numbers(cells[:, index])
            out[name] = (text, number if kinds[name] == "numeric" else None, missing)
        return out
