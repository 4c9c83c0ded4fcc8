"""The rows ``hookrun predict --data`` reads: files of the run's feature columns, in chunks, as read (no TensorFlow op).

Moved from :mod:`hookrun.runner.trained.predict` so that the files source gives them
(:meth:`hookrun.runner.data.source.FileSource.predict_dataset`): the chunks hold the raw cells, which the
inference graph's receiver (:meth:`~hookrun.runner.data.source.FileSource.serving_receiver`) takes and passes
through the run's saved preprocessing. A run with TFRecord tensor features also gets each chunk's serialized
records (its tensor features are parsed from them in the graph, :mod:`hookrun.runner.data.tensor_serving`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hookrun.common.errors import DataError, SetupError

#: Rows fed to the graph per session call (rows); ``prediction_hooks`` see batches of this size.
PREDICT_BATCH = 4096


def prediction_input(preprocessor: Any, data: Any, files: list[str], base_dir: Path | None = None) -> tuple[Any, Any]:
    """The files to predict on and how to read them: ``(fileset, plan)`` of the model's feature columns.

    Args:
        preprocessor: the run's saved :class:`~hookrun.runner.data.preprocessing.Preprocessor`.
        data: the run's ``DataConfig`` (its ``format``).
        files: data files, globs or directories (CSV or TFRecord), relative to ``base_dir``.
        base_dir: default the current directory.

    Returns:
        ``(fileset, plan)``; plan None for a run of tensor features alone (no one-value column).

    Raises:
        SetupError, DataError: no file given, a file missing or of an unknown format, a file without one of
            the feature columns (names file and column), a numeric cell that is not a number.
    """
    from hookrun.runner.data.formats.base import SAMPLE_CHARS
    from hookrun.runner.data.reader import plan_given_columns
    from hookrun.runner.data.sources import absolute_spec, resolve_files

    if not files:
        raise SetupError("--data names no file; give one or more data files")
    if any(not str(name).strip() for name in files):  # `--data "$UNSET"` would read the whole current directory
        raise SetupError("--data: an empty path (an unset variable?); give data files, or `.` for this directory")
    where = base_dir or Path.cwd()
    fileset = resolve_files(absolute_spec(list(files), where), where, data.format, "--data")
    names = [c.name for c in preprocessor.columns]
    if not names:  # tensor features alone (data.columns parse specs): the records are read whole, nothing planned
        return fileset, None
    kinds = {c.name: c.kind for c in preprocessor.columns}
    plan = plan_given_columns(fileset, names, kinds, "the run's saved preprocessing.json", SAMPLE_CHARS)
    return fileset, plan


@dataclass
class RecordChunk:
    """A batch of serialized records of one file, for a run of tensor features alone (no column to read).

    Attributes:
        records: ``object [n]`` of ``bytes``.
        lines: their 1-based record numbers in the file.
        file_ids: their file's index in the set (``n`` times).
    """

    records: np.ndarray
    lines: np.ndarray
    file_ids: np.ndarray

    @property
    def num_rows(self) -> int:
        """Records in the batch."""
        return len(self.records)


def record_chunks(tf: Any, fileset: Any, rows: int = PREDICT_BATCH) -> Iterator[RecordChunk]:
    """Every file's serialized records in order, ``rows`` at a time (:class:`RecordChunk`).

    Raises:
        DataError: a file that is empty, damaged or not TFRecord (names it; at ``--data``).
    """
    from hookrun.runner.data.tensor_serving import record_dataset, tensorflow_reason

    for index, file in enumerate(fileset.files):
        taken = 0
        try:
            for batch in record_dataset(tf, file.path, file.compression, rows):
                records = batch.numpy().astype(object)
                lines = np.arange(taken + 1, taken + 1 + len(records), dtype=np.int64)
                taken += len(records)
                yield RecordChunk(records, lines, np.full(len(records), index, np.int32))
        except tf.errors.OpError as err:  # a damaged or truncated file
            reason = tensorflow_reason(str(getattr(err, "message", err)))
            raise DataError(
                f"{file.path}: records {taken + 1} or after cannot be read as TFRecord ({reason})", loc=("--data",)
            ) from None
        if not taken:  # as the column reader: an empty file is no data set
            raise DataError(f"{file.path}: the file is empty; it needs tf.train.Example records", loc=("--data",))


def records_of(tf: Any, fileset: Any, raw: Any, cursors: dict[int, Any]) -> tuple[Any, Path]:
    """The serialized records of a chunk of one-value columns (a tensor-feature run): the same records, in order.

    The tensor features are parsed from them in the graph (:mod:`hookrun.runner.data.tensor_serving`, the parse
    ``hookrun export`` saves); the chunk's one-value columns are fed as read.

    Returns:
        ``(records, file)``: ``object [raw.num_rows]`` of ``bytes``, and their file.

    Raises:
        DataError: the file's records and the chunk's disagree (the file changed while it was read).
    """
    from hookrun.runner.data.tensor_serving import RecordCursor

    index = int(raw.file_ids[0])
    file = fileset.files[index]
    cursor = cursors.get(index)
    if cursor is None:
        cursor = cursors[index] = RecordCursor(tf, file.path, file.compression)
    if int(raw.lines[0]) != cursor.taken + 1 or int(raw.lines[-1]) != cursor.taken + raw.num_rows:
        raise DataError(
            f"{file.path}: records {int(raw.lines[0])} to {int(raw.lines[-1])} were read out of order (the file "
            "changed while hookrun read it?); predict again", loc=("--data",),
        )
    return cursor.take(raw.num_rows), file.path


def prediction_chunks(tf: Any, fileset: Any, plan: Any, tensors: dict[str, Any]) -> Iterator[tuple[Any, Any, Any]]:
    """The files' rows in order, chunk by chunk: ``(raw, records, file)``.

    Args:
        tf: the ``tensorflow`` module (eager: call outside a graph's ``as_default``).
        fileset: the files (:func:`prediction_input`).
        plan: the columns to read (:func:`prediction_input`), None for tensor features alone.
        tensors: the run's tensor features (``DataConfig.tensor_features``), maybe empty.

    Yields:
        ``raw``: a chunk of cells (:class:`~hookrun.runner.data.reader.RawData`: ``values``, ``num_rows``,
        ``lines``, ``file_ids``), or a :class:`RecordChunk` for tensor features alone; ``records``: the chunk's
        serialized records (``object [num_rows]``) for a tensor-feature run, else None; ``file``: their file's
        path, or None.

    Raises:
        DataError: a cell or a file that cannot be read (names file, line and column).
    """
    from hookrun.runner.data.formats.tfrecord import tensor_chunk_rows
    from hookrun.runner.data.reader import CHUNK_ROWS, iter_chunks

    # with tensor features, chunks of one session call: their serialized records (an image's kilobytes each)
    # are held beside the chunk, and the call's fixed-shape tensors take at most TENSOR_CHUNK_BYTES
    call_rows = tensor_chunk_rows(tensors, PREDICT_BATCH) if tensors else PREDICT_BATCH
    chunk_rows = call_rows if tensors else CHUNK_ROWS
    chunks = (
        iter_chunks(fileset, plan, chunk_rows, fast_tfrecord=True) if plan is not None
        else record_chunks(tf, fileset, call_rows)
    )
    cursors: dict[int, Any] = {}  # a tensor-feature run: each file's serialized records, read beside its chunks
    for raw in chunks:
        records, file = None, None
        if isinstance(raw, RecordChunk):
            records, file = raw.records, fileset.files[int(raw.file_ids[0])].path
        elif tensors and raw.num_rows:
            records, file = records_of(tf, fileset, raw, cursors)
        yield raw, records, file


__all__ = ["PREDICT_BATCH", "RecordChunk", "prediction_chunks", "prediction_input", "record_chunks", "records_of"]
