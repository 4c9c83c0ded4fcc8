"""TFRecord tensor features after training: the serving receiver and the records ``hookrun predict`` reads.

A run whose ``data.columns`` hold tensor features (a ``shape``, ``varlen`` or raw ``bytes``: issue 24) is served
from serialized ``tf.train.Example`` records parsed with the run's own parse spec, the one training used
(:func:`hookrun.runner.data.reader.tensor_feature_spec`, :func:`hookrun.runner.data.streaming.parse_tensor_features`),
as Estimator's ``build_parsing_serving_input_receiver_fn`` parsed them with the ``feature_spec`` training had:

- :func:`parse_examples`: ``string [batch]`` records -> the tensor features, in spec order: ``[batch, *shape]``,
  a ``SparseTensor`` (``varlen: sparse``), a ``RaggedTensor`` (``varlen: ragged``), ``string [batch]`` raw bytes;
  what the model_fn got in training. ``hookrun export`` saves this parse in its serving signature, and
  ``hookrun predict`` runs the same graph, so the two agree.
- :func:`serving_receiver`: the ``examples`` placeholder and those features (Estimator's parsing receiver).
- :func:`record_dataset` / :class:`RecordCursor`: a file's serialized records in file order, in batches
  (what ``hookrun predict`` feeds the receiver); :func:`predict_dataset`: files' records parsed into features.
- :func:`unfit_record`: the one-line error of the first record of a batch that does not fit the spec, naming the
  file, the record and the feature.

Every function takes the ``tensors`` spec dict (name -> :class:`~hookrun.config_schemas.data.TensorFeature`, in
the order listed: :attr:`~hookrun.config_schemas.data.DataConfig.tensor_features`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hookrun.common.errors import DataError

#: The receiver's input: ``string [batch]`` serialized ``tf.train.Example`` records (Estimator's parsing receiver's
#: key, and the name of ``hookrun export``'s ``examples`` signature input).
EXAMPLES = "examples"

#: Records per batch :func:`record_dataset` reads (records).
RECORD_BATCH = 4096


def tensor_feature_spec(tf: Any, tensors: dict[str, Any]) -> dict[str, Any]:
    """``tf.io.parse_example``'s spec of ``data.columns``' tensor features, in the order listed.

    ``shape`` -> ``FixedLenFeature(shape)``, ``varlen: sparse`` -> ``VarLenFeature`` (a ``SparseTensor``),
    ``varlen: ragged`` -> ``RaggedFeature`` (a ``RaggedTensor``), ``type: bytes`` alone -> ``FixedLenFeature([],
    string)``: one raw value per record. ``float`` is ``float32``, ``int`` ``int64``, ``string``/``bytes`` ``string``.
    """
    dtypes = {"float": tf.float32, "int": tf.int64, "string": tf.string, "bytes": tf.string}
    spec: dict[str, Any] = {}
    for name, feature in tensors.items():
        dtype = dtypes[feature.type]
        if feature.varlen == "sparse":
            spec[name] = tf.io.VarLenFeature(dtype)
        elif feature.varlen == "ragged":
            spec[name] = tf.io.RaggedFeature(dtype, row_splits_dtype=tf.int64)
        else:
            spec[name] = tf.io.FixedLenFeature(list(feature.shape or []), dtype)
    return spec


def parse_examples(tf: Any, serialized: Any, tensors: dict[str, Any]) -> dict[str, Any]:
    """Parse serialized ``tf.train.Example`` records into the tensor features, with the run's parse spec.

    One ``tf.io.parse_example`` with :func:`tensor_feature_spec` (the spec training
    parsed with); other features of the records (the label, one-value columns) are ignored.

    Args:
        tf: the ``tensorflow`` module.
        serialized: ``string [batch]`` records.
        tensors: the tensor features' parse spec (``DataConfig.tensor_features``), not empty.

    Returns:
        name -> tensor, in spec order: ``[batch, *shape]`` for a fixed shape; a ``SparseTensor`` ``[batch, None]``
        for ``varlen: sparse``; a ``RaggedTensor`` ``[batch, None]`` (``int64`` row splits) for ``varlen: ragged``;
        ``string [batch]`` for raw ``bytes`` (the bytes untouched). ``float`` is ``float32``, ``int`` ``int64``.
        A record that does not fit the spec fails the parse when it runs (``InvalidArgumentError``; see
        :func:`unfit_record`).
    """
    parsed = tf.io.parse_example(serialized, tensor_feature_spec(tf, tensors), name="parse_tensor_features")
    return {name: parsed[name] for name in tensors}


@dataclass
class Receiver:
    """The serving input of a tensor-feature run (Estimator's ``ServingInputReceiver`` fields).

    Attributes:
        examples: the ``string [None]`` placeholder of serialized records (``receiver_tensors[EXAMPLES]``).
        features: the tensor features parsed from it (:func:`parse_examples`).
    """

    examples: Any
    features: dict[str, Any]

    @property
    def receiver_tensors(self) -> dict[str, Any]:
        """``{EXAMPLES: examples}``, as ``build_parsing_serving_input_receiver_fn``'s receiver."""
        return {EXAMPLES: self.examples}


def serving_receiver(tf: Any, tensors: dict[str, Any], examples: Any = None) -> Receiver:
    """The receiver of serialized ``tf.train.Example`` records parsed with the run's parse spec (in the default graph).

    Mirrors ``tf.estimator.export.build_parsing_serving_input_receiver_fn(feature_spec)``: a ``string [None]``
    placeholder (named ``input_example_tensor``, as Estimator's) and ``tf.io.parse_example`` on it.

    Args:
        tf: the ``tensorflow`` module.
        tensors: the tensor features' parse spec.
        examples: an existing ``string [None]`` records tensor to parse instead of a new placeholder.

    Returns:
        The receiver.
    """
    if examples is None:
        examples = tf.compat.v1.placeholder(tf.string, [None], name="input_example_tensor")
    return Receiver(examples=examples, features=parse_examples(tf, examples, tensors))


def record_dataset(tf: Any, path: str | Path, compression: str = "", batch_size: int = RECORD_BATCH) -> Any:
    """A TFRecord file's serialized records in file order, ``string [n]`` batches of ``batch_size`` (the last smaller).

    Args:
        tf: the ``tensorflow`` module.
        path: the file.
        compression: ``tf.data``'s ``compression_type`` (``""`` or ``"GZIP"``).
        batch_size: records per batch (at least 1).
    """
    return tf.data.TFRecordDataset(str(path), compression_type=compression).batch(batch_size)


def predict_dataset(tf: Any, files: list[tuple[str | Path, str]], tensors: dict[str, Any],
                    batch_size: int = RECORD_BATCH) -> Any:
    """The files' records, in order (files as given, records in file order), parsed into the tensor features.

    The parse is training's (:func:`parse_examples`, the TFRecord format's ``parse_tensors``, on batches of records),
    so a source can give ``Estimator.predict`` style batches from files. No batch spans two files.

    Args:
        tf: the ``tensorflow`` module.
        files: ``(path, compression)`` per file (``compression`` as :func:`record_dataset`).
        tensors: the tensor features' parse spec.
        batch_size: records per batch.

    Returns:
        A dataset of features dicts (:func:`parse_examples`' structure).

    Raises:
        ValueError: no file.
    """
    if not files:
        raise ValueError("predict_dataset needs at least one file")
    datasets = [record_dataset(tf, path, compression, batch_size) for path, compression in files]
    records = datasets[0]
    for more in datasets[1:]:
        records = records.concatenate(more)
    return records.map(lambda batch: parse_examples(tf, batch, tensors), num_parallel_calls=tf.data.AUTOTUNE)


class RecordCursor:
    """A TFRecord file's serialized records in file order, taken ``n`` at a time (eager ``tf.data``).

    Args:
        tf: the ``tensorflow`` module (eager: use it outside a graph's ``as_default``).
        path: the file.
        compression: ``""`` or ``"GZIP"``.
    """

    def __init__(self, tf: Any, path: str | Path, compression: str = "") -> None:
        self.path = Path(path)
        self.taken = 0
        self._batches = iter(record_dataset(tf, path, compression))
        self._buffer = np.empty(0, dtype=object)

    def take(self, count: int) -> np.ndarray:
        """The next ``count`` records (``object`` array of ``bytes``).

        Raises:
            DataError: the file has fewer records left (it changed while being read).
        """
        while self._buffer.size < count:
            try:
                batch = next(self._batches).numpy()
            except StopIteration:
                raise DataError(
                    f"{self.path}: has {self.taken + self._buffer.size} records, fewer than were read a moment "
                    "before (the file changed while hookrun read it); predict again",
                    loc=("--data",),
                ) from None
            self._buffer = np.concatenate([self._buffer, batch.astype(object)])
        records, self._buffer = self._buffer[:count], self._buffer[count:]
        self.taken += count
        return records


#: TensorFlow's parse errors: ``Key: image, Index: 3.  Number of float values != expected ...``,
#: ``Feature: image (data type: float) is required but could not be found.``, ``Name: <unknown>, Key: ...``.
_PARSE_ERROR = re.compile(r"(?:Key|Feature): ([^,\s]+)(?:, Index: \d+)?[.,]?\s*(.*)")


def tensorflow_reason(message: str) -> str:
    """The telling first line of a TensorFlow error's message, without the op names wrapped around it.

    ``{{function_node __wrapped__ParseExampleV2_...}} Could not parse example input ... [Op:ParseExampleV2]`` ->
    ``Could not parse example input ...`` (at most 200 characters).
    """
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", message).strip()
    line = text.splitlines()[0] if text else ""
    return re.sub(r"\s*\[Op:\w+\].*$", "", line).strip()[:200]


def _reason(message: str) -> tuple[str | None, str]:
    """``(feature, reason)`` from a parse error's message (feature None when TensorFlow names none)."""
    found = _PARSE_ERROR.search(message)
    if found is None:
        return None, tensorflow_reason(message) or "not a tf.train.Example"
    name, reason = found.group(1), tensorflow_reason(found.group(2))
    if "could not be found" in reason:
        reason = "the record lacks it: every record needs each tensor feature, a `varlen` one may be empty"
    return name, reason


def unfit_record(tf: Any, records: Any, tensors: dict[str, Any], path: str | Path, first: int) -> DataError | None:
    """The error of the first of ``records`` that does not fit the parse spec, or None when every one fits.

    Parses the records one at a time (eager), so the message names the record exactly. Used after a batch's
    parse failed.

    Args:
        tf: the ``tensorflow`` module (eager).
        records: serialized records of one file (``bytes``), in file order.
        tensors: the tensor features' parse spec.
        path: their file (for the message).
        first: the 1-based record number of ``records[0]`` in the file.

    Returns:
        ``DataError`` ``<file>: record <n>: feature '<name>' does not fit data.columns.<name> (<TensorFlow's
        reason>)`` (or ``<file>: record <n> is not a tf.train.Example ...``), at ``--data``.
    """
    spec = tensor_feature_spec(tf, tensors)
    for offset, record in enumerate(records):
        try:
            tf.io.parse_example(tf.constant([record], tf.string), spec)
        except tf.errors.OpError as err:  # InvalidArgumentError, as the batch's parse raised
            name, reason = _reason(str(getattr(err, "message", err)))
            where = f"{path}: record {first + offset}"
            if name is None or name not in tensors:
                return DataError(f"{where} is not a tf.train.Example the run's parse spec reads ({reason})",
                                 loc=("--data",))
            return DataError(f"{where}: feature {name!r} does not fit data.columns.{name} ({reason})",
                             loc=("--data",))
    return None


__all__ = [
    "EXAMPLES",
    "RECORD_BATCH",
    "Receiver",
    "RecordCursor",
    "parse_examples",
    "predict_dataset",
    "record_dataset",
    "serving_receiver",
    "tensorflow_reason",
    "unfit_record",
]
