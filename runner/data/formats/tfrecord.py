"""TFRecord files of ``tf.train.Example`` (plain or GZIP).

Pure Python: :func:`tfrecord_rows` reads a file with a small protobuf wire-format decoder
(:func:`decode_example`), one value per feature, for the sample and ``hookrun validate``. The statistics
pass decodes whole files with TensorFlow (:meth:`TfRecordFormat.fast_chunks`); ``tf.data`` reads records
and parses them with ``tf.io.parse_example`` (:meth:`TfRecordFormat.decode`). ``data.columns`` declares
value types and tensor features (:func:`tensor_feature_spec`).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np

from hookrun.common.errors import DataError
from hookrun.runner.data import tensor_serving
from hookrun.runner.data.columns import INT64_ABSENT, MISSING_MARKERS, NUMERIC, NUMERIC_BLOCK, ColumnPlan, RawColumns
from hookrun.runner.data.formats.base import MAX_RECORD_BYTES, DataFile, FileFormat, FileSet, Rows
from hookrun.runner.data.formats.reading import guard as _guard
from hookrun.runner.data.formats.reading import open_file as _open
from hookrun.runner.data.formats.registry import accepted
from hookrun.runner.data.tensor_serving import tensor_feature_spec

#: A TFRecord feature's dtype (``bytes``/``float``/``int64``) -> its name in ``data.columns``.
COLUMN_TYPES = {"bytes": "string", "float": "float", "int64": "int"}


def several_values(path: Any, number: int, name: str, count: int, kind: str, loc: Any) -> DataError:
    """The error for a feature with ``count`` > 1 values and no parse spec: the file, record, feature and the fix.

    A feature is one value per record (a column) unless ``data.columns`` declares its parse spec (a tensor
    feature: ``shape`` for a fixed count, ``varlen`` for any), or the user's ``data.input_fn`` reads it.

    Args:
        path: the file.
        number: the record (1-based).
        name: the feature.
        count: its values in that record.
        kind: ``float``, ``int64`` or ``bytes`` (its ``*_list``).
        loc: the config place of the message.

    Returns:
        A one-line :class:`DataError` (exit 2), e.g. ``... feature 'x' has 784 values; hookrun reads one value
        per feature unless data.columns declares it: x: {type: float, shape: [784]} (every record 784 values)
        or x: {type: float, varlen: ragged} (any number), or read it in your own data.input_fn``.
    """
    kind = COLUMN_TYPES.get(kind, "float")
    return DataError(
        f"{path}: record {number}: feature {name!r} has {count} values; hookrun reads one value per feature unless "
        f"data.columns declares it: {name}: {{type: {kind}, shape: [{count}]}} (every record {count} values) or "
        f"{name}: {{type: {kind}, varlen: ragged}} (any number), or read it in your own data.input_fn",
        loc=loc,
    )
#: ``data.columns`` type -> the TFRecord feature's dtype.
COLUMN_DTYPES = {name: dtype for dtype, name in COLUMN_TYPES.items()}


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
                    f"{path}: record {number} claims {length:,} bytes; not a TFRecord file? hookrun reads {accepted()}",
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
        columns: the feature names to read (in this order), or None for the ``declared`` ones and the
            first record's, in :func:`feature_order`.
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
                f"{path}: record {number} is not a tf.train.Example; hookrun reads {accepted()}", loc=loc
            ) from None

    example = decode(*first)
    declared = declared or {}
    names = list(columns) if columns is not None else feature_order(list(example), declared, tensors)
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
                    raise several_values(path, number, name, len(values), kind, loc)
                cells.append("" if not values else values[0] if kind == "bytes" else repr(values[0]))
            yield number, cells

    return names, rows()


def _natural_key(name: str) -> tuple[Any, ...]:
    """``"p10"`` -> ``(("p", ""), (1, 10), ...)``: digits compare as numbers (``p2`` before ``p10``), then the name."""
    runs = re.findall(r"\d+|\D+", name)
    return (*((0, int(run), "") if run.isdigit() else (1, 0, run) for run in runs), (2, 0, name))


def feature_order(first_record: list[str], declared: dict[str, str], tensors: Any = ()) -> list[str]:
    """The columns of a TFRecord set when ``data.features`` does not list them: never the alphabet's order.

    ``data.columns``' one-value features first, in the order the YAML declares them; then the first record's
    other features in natural order (digit runs compare as numbers: ``p0, p1, ..., p9, p10``, so an image
    stored one pixel a feature keeps its pixel order without zero-padded names). The record's own order
    cannot be used: ``Features.feature`` is a protobuf map, whose wire order is undefined (protobuf's
    upb runtime, which TensorFlow's Python writes through, emits it in hash order: ``p11, p8, p3, ...``).
    Tensor features (``tensors``) are never columns.

    Args:
        first_record: the first record's feature names (any order).
        declared: ``data.columns``' one-value features (name -> dtype), in declaration order.
        tensors: the names of ``data.columns``' tensor features.

    Returns:
        The column names, each once.
    """
    skip = set(tensors)
    names = [name for name in declared if name not in skip]
    taken = set(names) | skip
    return names + sorted((name for name in set(first_record) if name not in taken), key=_natural_key)


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




#: Bytes the fixed-shape tensor features of one chunk may take when the statistics pass parses them (bytes):
#: TensorFlow allocates ``[rows, *shape]`` for each before it parses (65,536 rows of a [64, 64, 3] float image
#: were 3.2 GB, twice over with two chunks in flight).
TENSOR_CHUNK_BYTES = 64 * 2**20


def tensor_chunk_rows(tensors: dict[str, Any], rows: int) -> int:
    """``rows``, or fewer, so that a chunk's fixed-shape tensor features take at most :data:`TENSOR_CHUNK_BYTES`.

    Args:
        tensors: ``data.columns``' tensor features (name -> ``TensorFeature``).
        rows: the chunk's rows otherwise (rows).

    Returns:
        At least 1 (rows); 8 bytes a value counted (an ``int64``; a ``float32`` and its record's copy).
    """
    per_record = sum(math.prod(feature.shape) * 8 for feature in tensors.values() if feature.shape)
    return max(1, min(rows, TENSOR_CHUNK_BYTES // per_record)) if per_record else rows


def _check_first_record_shapes(file: DataFile, fileset: FileSet) -> None:
    """Refuse a fixed-shape tensor feature whose first record has another number of values, before TensorFlow parses.

    A ``shape`` with a typo (``[28, 28, 1000]``) made TensorFlow allocate ``[rows, *shape]`` for the first chunk,
    which can exhaust memory (a segmentation fault at ``[1000000000]``) before its "Number of float values !=
    expected" is raised. The pure-Python decoder reads the first record (one record, no TensorFlow).

    Raises:
        DataError: as :func:`tensor_feature_error` names it: ``<file>: record 1: feature 'image' does not fit
            data.columns.image (Number of float values != expected.  Values size: 784 but output shape: [...])``.
    """
    first = next(tfrecord_records(file, fileset.key), None)
    if first is None:
        return
    try:
        features = decode_example(first[1])
    except (ValueError, IndexError, UnicodeDecodeError):
        return  # not an Example: TensorFlow's parse names it
    for name, feature in fileset.tensors.items():
        if not feature.shape or name not in features:
            continue
        kind, values = features[name]
        expected = math.prod(feature.shape)
        if values and len(values) != expected:
            shape = ",".join(str(size) for size in feature.shape)
            raise DataError(
                f"{file.path}: record {first[0]}: feature {name!r} does not fit data.columns.{name} (Number of {kind} "
                f"values != expected.  Values size: {len(values)} but output shape: [{shape}])",
                loc=("data", "columns", name),
            )


def tfrecord_chunks_tf(file: DataFile, fileset: FileSet, plan: ColumnPlan, chunk_rows: int) -> Iterator[RawColumns]:
    """Chunks of a TFRecord file decoded by TensorFlow (eager ``tf.data`` + ``tf.io.parse_example``): fast.

    Raises:
        DataError: a record that is not an Example with these features' types, a feature with more than
            one value (names the file and record), a damaged file (names the file).
    """
    from hookrun.runner.tf_env import import_tensorflow

    tf = import_tensorflow(False)
    dtypes = {"bytes": tf.string, "float": tf.float32, "int64": tf.int64}
    kind_of = {name: fileset.dtypes.get(name, "float") for name in plan.names}
    # One value per feature: numbers parse as fixed-length features (absent: NaN / INT64_ABSENT), stacked into one
    # matrix per dtype, a few ops whatever the width (785 ragged features took seconds to trace and read). A record
    # with more values fails the parse, and the pure-Python reader then names the record and feature.
    floats = [name for name in plan.names if kind_of[name] == "float"]
    ints = [name for name in plan.names if kind_of[name] == "int64"]
    texts = [name for name in plan.names if kind_of[name] == "bytes"]
    spec: dict[str, Any] = {name: tf.io.FixedLenFeature([], tf.float32, default_value=np.nan) for name in floats}
    spec.update({name: tf.io.FixedLenFeature([], tf.int64, default_value=INT64_ABSENT) for name in ints})
    spec.update({name: tf.io.RaggedFeature(dtypes["bytes"]) for name in texts})
    if fileset.tensors:  # parsed (and so checked against their spec) with the columns; their values are not kept
        spec.update(tensor_feature_spec(tf, fileset.tensors))
        _check_first_record_shapes(file, fileset)
        chunk_rows = tensor_chunk_rows(fileset.tensors, chunk_rows)

    def parse(records: Any) -> Any:
        parsed = tf.io.parse_example(records, spec)
        count = tf.shape(records)[0]
        out = {"\0rows": count}
        if floats:
            out["\0float"] = tf.stack([parsed[name] for name in floats], axis=1)
        if ints:
            out["\0int"] = tf.stack([parsed[name] for name in ints], axis=1)
        out.update({name: parsed[name] for name in texts})
        return out

    dataset = tf.data.TFRecordDataset(str(file.path), compression_type=file.compression).batch(chunk_rows)
    dataset = dataset.map(parse, num_parallel_calls=2)
    loc = fileset.loc
    start = 1
    iterator = iter(dataset)
    while True:
        try:
            parsed = next(iterator)
        except StopIteration:
            return
        except tf.errors.OpError as err:
            first = str(err.message).strip().splitlines()[0][:300]
            tensor = tensor_feature_error(str(err.message), file, fileset, start)
            if tensor is not None:  # a tensor feature that does not fit its parse spec: TensorFlow names it
                raise tensor from None
            exact = exact_tfrecord_error(file, fileset)
            if exact is not None:  # the record and feature, as the pure-Python reader names them
                raise exact from None
            types = "these feature types (data.columns and the first records')" if fileset.declared else (
                "the first records' feature types"
            )
            raise DataError(
                f"{file.path}: records {start} or after cannot be read as tf.train.Example with {types} ({first})",
                loc=loc,
            ) from None
        count = int(parsed["\0rows"])
        lines = np.arange(start, start + count, dtype=np.int64)
        values: dict[str, np.ndarray] = {}
        numbers: dict[str, np.ndarray] = {}
        if floats:
            block = parsed["\0float"].numpy().astype(np.float64)
            numbers.update({name: block[:, index] for index, name in enumerate(floats)})
        if ints:
            block = parsed["\0int"].numpy()
            absent = block == INT64_ABSENT
            block = block.astype(np.float64)
            block[absent] = np.nan
            numbers.update({name: block[:, index] for index, name in enumerate(ints)})
        for name in plan.names:
            if name in numbers:
                column = numbers[name]
                if plan.kinds[name] != NUMERIC:  # a number feature read as categories: its values as text
                    texts_of = [None if math.isnan(v) else repr(float(v) if kind_of[name] == "float" else int(v))
                                for v in column.tolist()]
                    column = np.array(texts_of, dtype=object)
                values[name] = np.ascontiguousarray(column) if plan.kinds[name] == NUMERIC else column
                continue
            ragged = parsed[name]
            lengths = ragged.row_lengths().numpy()
            if (lengths > 1).any():
                row = int(np.argmax(lengths > 1))
                raise several_values(file.path, int(lines[row]), name, int(lengths[row]), kind_of[name], loc)
            present = lengths == 1
            flat = ragged.flat_values.numpy()
            if plan.kinds[name] == NUMERIC:
                cells = [v.decode("utf-8", "replace").strip() for v in flat.tolist()]
                column = np.full(count, np.nan)
                column[present] = [np.nan if c.lower() in MISSING_MARKERS else float(c) for c in cells]
            else:
                texts_of = [v.decode("utf-8", "replace").strip() for v in flat.tolist()]
                cells = [None if t.lower() in MISSING_MARKERS else t for t in texts_of]
                column = np.full(count, None, dtype=object)
                column[present] = cells
            values[name] = column
        start += count
        yield RawColumns(
            source=file.path,
            lines=lines,
            positions={name: index for index, name in enumerate(plan.names)},
            kinds=dict(plan.kinds),
            values=values,
            key=fileset.key,
            tfrecord=True,
        )


def tensor_feature_error(message: str, file: DataFile, fileset: FileSet, start: int) -> DataError | None:
    """The error of a tensor feature (``data.columns`` parse spec) that TensorFlow's parser refused, or None.

    TensorFlow names the feature (``Key: image, Index: 7. Number of float values != expected ...``, ``Feature: x
    (data type: float) is required but could not be found``); ``Index`` is the record's place in the batch.
    """
    import re

    found = re.search(r"(?:Key|Feature): ([^,\s]+)(?:, Index: (\d+))?[.,]?\s*(.*)", message)
    if found is None or found.group(1) not in fileset.tensors:
        return None
    name, index, reason = found.group(1), found.group(2), found.group(3).split("\n")[0].strip()
    where = f"record {start + int(index)}" if index is not None else f"records {start} or after"
    if "could not be found" in reason:
        reason = "a record lacks it; every record needs a tensor feature (a `varlen` one may be empty)"
    return DataError(
        f"{file.path}: {where}: feature {name!r} does not fit data.columns.{name} ({reason[:200]})",
        loc=("data", "columns", name),
    )


def exact_tfrecord_error(file: DataFile, fileset: FileSet) -> DataError | None:
    """Re-read a file TensorFlow failed on with the pure-Python reader: its error names record and feature."""
    try:
        columns = fileset.columns or None
        _, rows = tfrecord_rows(
            file, columns, dict(fileset.dtypes), fileset.key, None, fileset.declared, fileset.tensors
        )
        for _ in rows:
            pass
    except DataError as error:
        return error
    return None

# ------------------------------------------------------------------ the format


class TfRecordFormat(FileFormat):
    """TFRecord of ``tf.train.Example``: keyed, typed records; ``tf.io.parse_example`` decodes them."""

    name = "tfrecord"
    extensions = (".tfrecord", ".tfrecords", ".tfrecord.gz", ".tfrecords.gz")
    description = "TFRecord of tf.train.Example (.tfrecord, .tfrecords, optionally .gz)"
    rank = 1
    keyed = True
    record_wording = True
    typed = True

    def rows(self, file: DataFile, fileset: FileSet, budget: int | None = None) -> tuple[list[str], Rows]:
        """The feature names and ``(record, cells)`` rows of a file (:func:`tfrecord_rows`; fills its ``dtypes``)."""
        return tfrecord_rows(
            file, fileset.columns or None, fileset.dtypes, fileset.key, budget, fileset.declared, fileset.tensors
        )

    def names_present(self, file: DataFile, count: int, fileset: FileSet, budget: int | None = None) -> list[str]:
        """The features the first ``count`` records have (:func:`tfrecord_features`)."""
        return tfrecord_features(file, count, fileset.key, budget)

    def declared_dtypes(self, types: dict[str, str]) -> dict[str, str]:
        """``float``/``int``/``string`` -> ``float``/``int64``/``bytes`` (the ``*_list`` a feature holds)."""
        return {name: COLUMN_DTYPES[kind] for name, kind in types.items()}

    def fast_chunks(
        self, file: DataFile, fileset: FileSet, plan: ColumnPlan, chunk_rows: int
    ) -> Iterator[RawColumns]:
        """The file decoded by TensorFlow (:func:`tfrecord_chunks_tf`); it names a bad record itself."""
        yield from tfrecord_chunks_tf(file, fileset, plan, chunk_rows)

    def parse_record(self, record: bytes, names: list[str], columns: list[str]) -> list[str]:
        """Not used: :meth:`decode` parses records with ``tf.io.parse_example``."""
        raise NotImplementedError("TFRecord records are parsed by tf.io.parse_example")

    def records(self, tf: Any, path: Any, compression: Any) -> Any:
        """``tf.data.TFRecordDataset`` of the file."""
        return tf.data.TFRecordDataset(path, compression_type=compression)

    def parse_tensors(self, tf: Any, records: Any, tensors: dict[str, Any]) -> dict[str, Any]:
        """``tf.io.parse_example`` of the records with :func:`tensor_feature_spec`."""
        parsed = tf.io.parse_example(records, tensor_feature_spec(tf, tensors))
        return {name: parsed[name] for name in tensors}

    def serving_receiver(self, tf: Any, tensors: dict[str, Any], examples: Any = None) -> Any:
        """Serialized Examples parsed with the run's spec.

        :func:`hookrun.runner.data.tensor_serving.serving_receiver`.
        """
        return tensor_serving.serving_receiver(tf, tensors, examples)

    def predict_dataset(self, tf: Any, files: list[tuple[Any, str]], tensors: dict[str, Any],
                        batch_size: int) -> Any:
        """The files' records parsed into the tensor features.

        :func:`hookrun.runner.data.tensor_serving.predict_dataset`.
        """
        return tensor_serving.predict_dataset(tf, files, tensors, batch_size)

    def decode(self, transform: Any, records: Any) -> dict[str, tuple[Any, Any, Any]]:
        """Serialized Examples -> cells with ``tf.io.parse_example``: one value per feature, numbers as one block.

        The tensor features of ``data.columns`` are parsed after batching, by their spec
        (:func:`hookrun.runner.data.streaming.parse_tensor_features`), not here.
        """
        tf = transform.tf
        out: dict[str, tuple[Any, Any, Any]] = {}
        kinds = transform.state.kinds
        numeric = transform.numeric_names
        dtypes = {"bytes": tf.string, "float": tf.float32, "int64": tf.int64}
        feature_dtype = {name: transform.fileset.dtypes.get(name, "float") for name in transform.names}
        # one value per feature (the scan refused more): a fixed-length feature, its absence NaN (float) or
        # INT64_ABSENT (int64); only bytes features, or a numeric column stored as bytes, stay ragged
        dense = {name for name in transform.names if feature_dtype[name] != "bytes"}
        spec = {
            name: tf.io.FixedLenFeature(
                [], dtypes[feature_dtype[name]],
                default_value=float("nan") if feature_dtype[name] == "float" else INT64_ABSENT,
            )
            if name in dense
            else tf.io.RaggedFeature(tf.string)
            for name in transform.names
        }
        parsed = tf.io.parse_example(records, spec)

        def number_of(name: str) -> tuple[Any, Any]:
            value = parsed[name]
            if feature_dtype[name] == "int64":
                return tf.cast(value, tf.float64), tf.equal(value, INT64_ABSENT)
            number = tf.cast(value, tf.float64)
            return number, tf.math.is_nan(number)

        def text_of(name: str) -> tuple[Any, Any, Any]:
            ragged = parsed[name]
            text, number, missing = transform.text_numbers(ragged.to_tensor(default_value="", shape=[None, 1])[:, 0])
            return text, number, tf.logical_or(ragged.row_lengths() == 0, missing)

        if numeric:
            if all(feature_dtype[name] == "float" for name in numeric):
                block = tf.cast(tf.stack([parsed[name] for name in numeric], axis=1), tf.float64)
                out[NUMERIC_BLOCK] = (None, block, tf.math.is_nan(block))
            else:
                pairs = [number_of(name) if name in dense else text_of(name)[1:] for name in numeric]
                out[NUMERIC_BLOCK] = (
                    None, tf.stack([p[0] for p in pairs], axis=1), tf.stack([p[1] for p in pairs], axis=1)
                )
        for name in transform.names:
            if name in transform.numeric_set:
                continue
            if name in dense:
                number, missing = number_of(name)
                out[name] = (None, number, missing)
            else:
                text, number, missing = text_of(name)
                out[name] = (text, number if kinds[name] == NUMERIC else None, missing)
        return out


#: The format (found by :mod:`hookrun.runner.data.formats.registry`).
FORMAT = TfRecordFormat()
