"""Training input at scale: one streaming pass for the statistics, then ``tf.data`` reads the files.

:func:`scan_data` reads every training (and validation) file once, in chunks of
:data:`~hookrun.runner.data.CHUNK_ROWS` rows, in bounded memory: it checks every cell (errors name
``file:line:column``), counts the rows of each split, and fits the preprocessing
(:class:`~hookrun.runner.data.preprocessing.Statistics`). No TensorFlow there.

:class:`StreamInput` then builds the ``tf.data`` pipelines; no row is ever a graph constant, so the
graph, every ``.meta`` and event file have a size independent of the rows. Training:

    files (shard by file on a cluster when there are enough, shuffled each epoch)
    -> interleave(per file, parallel, deterministic with a seed, one batch of PARSE_BATCH lines at a time):
         TextLineDataset / TFRecordDataset -> batch(PARSE_BATCH, fewer for wide rows) -> enumerate(batches)
         -> map(line numbers, drop the header and blank lines, [shard by row], [validation-split hash],
                decode, transform; parallel)
    -> (chunks of transformed rows: never unbatched, no per-row dataset op)
    -> when cached (the transformed rows take at most CACHE_BYTES) and the epoch fits in data.shuffle_buffer
       (without shuffle: in GROUP_ROWS): repeat_epoch, the epoch read once, then GROUP_ROWS rows of whole epochs
       per element, each epoch in its own random order (resume: skip epochs and rows, not batches)
       -> rebatch(batch_size) [-> repeat(), with epochs: null] -> prefetch
    -> else [cache, when the transformed rows take at most CACHE_BYTES]
       -> shuffle_chunks(data.shuffle_buffer rows) -> repeat(epochs) -> rebatch(batch_size)
       [-> repeat(), with epochs: null] -> skip(resumed steps) -> prefetch

The transformation in the ``map`` applies the saved state (fill values, z-scores, ``tf.lookup``
vocabularies for one-hot and class ids) exactly as :meth:`Preprocessor.transform` does in numpy.
The same code takes raw column tensors instead of decoded lines in :func:`transform_raw_columns`:
the entry point of ``hookrun predict`` and of the graph ``hookrun export`` saves.
The iterators are initializable (a ``tf.lookup`` table cannot be captured by a one-shot iterator);
their initializers join ``GraphKeys.TABLE_INITIALIZERS``, so the ``Scaffold``'s default
``local_init_op`` runs them whenever a session is created, as Estimator's ``_DatasetInitializerHook``
did in ``after_create_session``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hookrun.common.errors import DataError, PlacedError
from hookrun.config_schemas.builders import BUILDER_PARAMS
from hookrun.config_schemas.data import DataConfig
from hookrun.config_schemas.graph import GraphConfig
from hookrun.runner.data.columns import (
    CATEGORICAL,
    MISSING_MARKERS,
    NUMERIC,
    NUMERIC_BLOCK,
    ColumnPlan,
    RawColumns,
)
from hookrun.runner.data.formats.base import SAMPLE_CHARS, FileSet
from hookrun.runner.data.formats.registry import format_named
from hookrun.runner.data.preprocessing import Preprocessor, Statistics, check_label_for_builder
from hookrun.runner.data.reader import (
    CHUNK_ROWS,
    HASH_MULTIPLIER,
    check_split,
    chunk_validation_mask,
    iter_chunks,
    plan_columns,
    resolve_sets,
    split_threshold,
)
from hookrun.runner.data.sources import absolute_spec

#: Lines (records) decoded and transformed per ``map`` call (rows): batch before map. 4096 took 25% less CPU
#: per row than 1024 in the map (benchmarks/RESULTS.md); memory: ~8 files x a few batches in flight.
PARSE_BATCH = 4096
#: Wide rows get smaller parse batches: at most about this many bytes of text per batch, at 16 bytes a cell.
PARSE_BATCH_BYTES = 4 << 20


def parse_batch_rows(columns: int) -> int:
    """Lines per parse batch for rows of ``columns`` cells: :data:`PARSE_BATCH`, fewer (at least 64) for wide rows.

    Bounds the text in flight: every file the interleave reads holds a few batches of lines.
    """
    return min(PARSE_BATCH, max(64, PARSE_BATCH_BYTES // (16 * max(1, columns))))
#: Files read at once by the interleave (count).
CYCLE_LENGTH = 8
#: Transformed training rows up to this size (bytes) are cached in memory after the first epoch.
CACHE_BYTES = 32 << 20


@dataclass
class Scan:
    """What the streaming pass found.

    Attributes:
        train: the training files (with their columns and, for TFRecord, feature dtypes).
        validation: the ``data.validation`` files, or None (no validation, or ``validation_split``).
        fraction: ``data.validation_split``, or None.
        seed: ``data.seed`` (the split hash's salt).
        plan: the columns and their kinds.
        state: the preprocessing fitted on the kept training rows.
        split: the split description saved with the state (row counts before ``drop``).
        train_rows: training rows fed to the model, after ``drop`` (count).
        validation_rows: validation rows evaluated, after ``drop`` (count).
        dropped_train: training rows dropped by a ``drop`` policy (count).
        dropped_validation: validation rows dropped (count).
        rows_read: rows read in all (count).
        seconds: the pass's wall time (seconds).
        plain: CSV columns ``tf.io.decode_csv`` may decode directly in every file (no padding, missing
            cells always empty): numbers as ``float64`` with NaN for missing, text compared as is.
    """

    train: FileSet
    validation: FileSet | None
    fraction: float | None
    seed: int
    plan: ColumnPlan
    state: Preprocessor
    split: dict[str, Any]
    train_rows: int
    validation_rows: int
    dropped_train: int
    dropped_validation: int
    rows_read: int
    seconds: float
    plain: set[str] = field(default_factory=set)
    shard_rows: list[int] | None = None


def shard_by_file(files: int, shards: int) -> bool:
    """Whether ``shards`` training tasks split ``files`` files by file (``Dataset.shard`` of the file list).

    By file when every task gets at least one file; else each task reads every ``shards``-th line
    (record) of every file, by its line number.
    """
    return files >= shards


def scan_data(
    config: DataConfig,
    base_dir: Path,
    graph: GraphConfig | None = None,
    kinds: dict[str, str] | None = None,
    chunk_rows: int = CHUNK_ROWS,
    shards: int | None = None,
    train_key: str = "data.train",
) -> Scan:
    """Read every data file once, in chunks: check every cell, count the rows, fit the preprocessing.

    Args:
        config: the ``data:`` section.
        base_dir: the config's directory.
        graph: the ``graph:`` section, to check the label suits a built-in builder (None: not checked).
        kinds: column kinds to enforce (a resumed run's saved state); None fixes them from the first rows.
        chunk_rows: rows per chunk (memory: about ``chunk_rows x columns x 100`` bytes).
        shards: on a cluster, the training tasks (count): the scan then counts each task's training rows
            (``Scan.shard_rows``), sharded as :class:`StreamInput` shards them.
        train_key: what messages call ``config.train`` (``--data`` for ``hookrun evaluate --data``).

    Returns:
        The scan.

    Raises:
        DataError: any data error (names file, line and column where there is one).
    """
    started = time.perf_counter()
    train_set, val_set = resolve_sets(config, base_dir, train_key)
    plan = plan_columns(config, train_set, kinds, SAMPLE_CHARS)
    stats = Statistics(plan.kinds, config)
    policies = stats.state  # the policies (not yet the statistics): which rows are dropped or refused
    label = config.label
    check_classes = graph is not None and graph.builder in BUILDER_PARAMS and plan.kinds[label] == NUMERIC
    fraction, seed = config.validation_split, int(config.seed or 0)
    rows_read = 0
    split_train = split_val = val_kept = val_dropped = 0
    val_classes: dict[str, str] = {}  # a text label's validation classes -> where first seen

    def validation_part(part: RawColumns) -> None:
        nonlocal val_kept, val_dropped
        keep = policies.rows_to_keep(part)
        val_kept += int(keep.sum())
        val_dropped += int((~keep).sum())
        if plan.kinds[label] == CATEGORICAL:
            values = part.values[label]
            for row in np.flatnonzero(keep):
                value = values[row]
                if value not in val_classes:
                    val_classes[value] = part.where(int(row), label)

    plain = set(plan.names)  # CSV columns tf.data may decode directly (see RawColumns.plain)
    shard_rows = np.zeros(shards or 1, np.int64)
    by_file = shards is not None and shard_by_file(len(train_set.files), shards)

    def count_shards(part: RawColumns) -> None:
        if shards is None or not part.num_rows:
            return
        kept = policies.rows_to_keep(part)
        assert part.file_ids is not None  # iter_chunks sets them
        owner = part.file_ids[kept] % shards if by_file else part.lines[kept] % shards
        shard_rows[:] += np.bincount(owner, minlength=shards)

    for chunk in iter_chunks(train_set, plan, chunk_rows, fast_tfrecord=True):
        rows_read += chunk.num_rows
        plain &= chunk.plain
        if fraction is not None:
            held = chunk_validation_mask(chunk, train_set, fraction, seed)
            train_part = chunk.take(~held) if held.any() else chunk
            split_train += train_part.num_rows
            split_val += int(held.sum())
            if held.any():
                validation_part(chunk.take(held))
        else:
            train_part = chunk
            split_train += chunk.num_rows
        count_shards(train_part)
        stats.update(train_part)
        if check_classes and train_part.num_rows:
            assert graph is not None
            check_label_for_builder(graph, stats.state, train_part)
    if val_set is not None:
        # a keyed format reads the training files' names; a positional one each file's own header
        val_set.columns = list(train_set.columns) if format_named(train_set.format).keyed else []
        val_set.dtypes = dict(train_set.dtypes)
        val_plan = ColumnPlan(plan.names, plan.kinds, "the training data", {}, plan.sample)
        for chunk in iter_chunks(val_set, val_plan, chunk_rows, fast_tfrecord=True):
            rows_read += chunk.num_rows
            plain &= chunk.plain
            split_val += chunk.num_rows
            validation_part(chunk)
    if fraction is not None:
        check_split(fraction, split_train, split_val)
        split = {"validation_split": fraction, "seed": seed, "train_rows": split_train, "validation_rows": split_val}
    elif config.validation is not None:
        # absolute, as in the run directory's config.yaml: resuming from it or from the original config is the same
        validation = absolute_spec(config.validation, base_dir)
        split = {"validation": validation, "train_rows": split_train, "validation_rows": split_val}
    else:
        split = {"train_rows": split_train, "validation_rows": 0}
    stats.state.split = split
    state = stats.finish()
    if graph is not None:
        check_label_for_builder(graph, state, plan.sample)
    vocabulary = set(state.label.vocabulary or [])
    for value, where in val_classes.items():
        if value not in vocabulary:
            raise DataError(
                f"{where} has class {value!r}, which the training split does not have (its classes: "
                f"{', '.join(state.label.vocabulary or [])}); a model cannot learn it",
                loc=("data", "validation") if val_set is not None else ("data", "train"),
            )
    return Scan(
        train=train_set,
        validation=val_set,
        fraction=fraction,
        seed=seed,
        plan=plan,
        state=state,
        split=split,
        train_rows=stats.rows,
        validation_rows=val_kept,
        dropped_train=stats.dropped,
        dropped_validation=val_dropped,
        rows_read=rows_read,
        seconds=time.perf_counter() - started,
        plain=plain,  # only a format decoding cells as is reads it (CSV); the others' chunks leave it empty
        shard_rows=[int(n) for n in shard_rows] if shards is not None else None,
    )


def check_shards(scan: Scan, tasks: list[str]) -> None:
    """Refuse a cluster on which a training task would get no training rows (it would end at once).

    Args:
        scan: a scan made with ``shards=len(tasks)``.
        tasks: the training tasks in shard order (``chief:0``, ``worker:1``, ...).

    Raises:
        DataError: the first task whose shard is empty, naming the files, the split rule and the fix.
    """
    assert scan.shard_rows is not None and len(scan.shard_rows) == len(tasks)
    for task, rows in zip(tasks, scan.shard_rows, strict=True):
        if rows:
            continue
        files = len(scan.train.files)
        if shard_by_file(files, len(tasks)):
            rule = f"by file ({files} files: task i reads files i, i + {len(tasks)}, ...)"
        else:
            rule = f"by line ({files} file(s), fewer than the tasks: task i reads lines i, i + {len(tasks)}, ...)"
        raise DataError(
            f"{task} would get no training rows: {len(tasks)} training tasks share {scan.train_rows} training row(s) "
            f"{rule}; run fewer workers, or give `data.train` more rows or files",
            loc=scan.train.loc,
        )


# ------------------------------------------------------------------ tf.data


def split_hash_tf(tf: Any, lines: Any, salt: Any) -> Any:
    """:func:`hookrun.runner.data.split_hash` with ``tf.bitwise`` ops on ``int64`` tensors."""
    mask = tf.constant(0xFFFFFFFF, tf.int64)
    x = tf.bitwise.bitwise_and(lines + salt, mask)
    for _ in range(2):
        x = tf.bitwise.bitwise_and(tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, 16)) * HASH_MULTIPLIER, mask)
    return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, 16))




class _Transform:
    """The preprocessing state as ``tf`` ops: cells of a batch of rows -> ``(features, labels, keep)``.

    Two entry points share one transformation (:meth:`apply`): ``__call__`` (training, evaluation) takes a
    batch of CSV lines or TFRecord records and decodes them (:meth:`_cells`); :meth:`raw_cells` takes
    the raw column tensors a serving client sends (:func:`transform_raw_columns`).
    """

    def __init__(
        self,
        tf: Any,
        state: Preprocessor,
        fileset: FileSet | None = None,
        plain: set[str] | None = None,
        named: bool = False,
    ) -> None:
        self.tf = tf
        self.named = named
        self.plain = plain or set()
        self.state = state
        self.fileset = fileset
        self.tables: dict[str, Any] = {}
        for name, vocabulary in [
            *((c.name, c.vocabulary) for c in state.columns if c.kind == CATEGORICAL),
            (state.label.name, state.label.vocabulary if state.label.kind == CATEGORICAL else None),
        ]:
            if vocabulary:
                initializer = tf.lookup.KeyValueTensorInitializer(
                    tf.constant(vocabulary, tf.string), tf.range(len(vocabulary), dtype=tf.int64)
                )
                self.tables[name] = tf.lookup.StaticHashTable(initializer, default_value=-1, name=f"vocabulary_{name}")
        self.names = [c.name for c in state.columns] + [state.label.name]
        #: the numeric feature columns, in feature order: transformed as one block (:data:`NUMERIC_BLOCK`)
        self.numeric_names = [c.name for c in state.columns if c.kind == NUMERIC]
        self.numeric_set = set(self.numeric_names)

    def label_dtype(self) -> Any:
        """The labels' dtype: ``float32`` in the dense form; with named features the label's own.

        Named features (a model_fn, as an Estimator ``input_fn`` gave them): class ids of a categorical label
        are ``int64``; a TFRecord ``int64`` label feature stays ``int64`` (unless ``label_scale`` divides it);
        any other numeric label is ``float32``.
        """
        tf = self.tf
        if not self.named:
            return tf.float32
        label = self.state.label
        if label.kind != NUMERIC:
            return tf.int64
        typed = self.fileset is not None and self.fileset.dtypes.get(label.name) == "int64"  # filled by typed formats
        if typed and self.state.label_scale == 1.0:
            return tf.int64
        return tf.float32

    def _text_missing(self, text: Any) -> Any:
        tf = self.tf
        lowered = tf.strings.lower(text)
        missing = tf.zeros_like(text, dtype=tf.bool)
        for marker in sorted(MISSING_MARKERS):
            missing = tf.logical_or(missing, tf.equal(lowered, marker))
        return missing

    def raw_cells(self, columns: dict[str, Any]) -> dict[str, tuple[Any, Any, Any]]:
        """Column -> ``(text or None, number or None, missing)`` of raw column tensors (:func:`transform_raw_columns`).

        A numeric column is missing where NaN; a categorical one where its stripped text is one of
        the missing markers (``""``, ``NA``, ``null``...), as a CSV cell is read.
        """
        tf = self.tf
        out: dict[str, tuple[Any, Any, Any]] = {}
        for name, kind in self.state.kinds.items():
            if name not in columns:
                continue
            value = tf.convert_to_tensor(columns[name])
            if kind == NUMERIC:
                number = tf.cast(value, tf.float64)
                out[name] = (None, number, tf.math.is_nan(number))
            else:
                text = tf.strings.strip(value)
                out[name] = (text, None, self._text_missing(text))
        return out

    def text_numbers(self, text: Any) -> tuple[Any, Any, Any]:
        """``(stripped text, float64 number, missing)`` of text cells of any shape, as a CSV cell is read."""
        tf = self.tf
        text = tf.strings.strip(text)
        missing = self._text_missing(text)
        return text, tf.strings.to_number(tf.where(missing, "0", text), tf.float64), missing

    def _cells(self, records: Any) -> dict[str, tuple[Any, Any, Any]]:
        """Column -> ``(text or None, number or None, missing)`` for a batch of records: the file format decodes them.

        (:meth:`hookrun.runner.data.formats.base.FileFormat.decode`.) CSV and TFRecord give the numeric feature
        columns as one block (:data:`NUMERIC_BLOCK`: ``float64 [n, k]`` numbers and
        ``bool [n, k]`` missing, in feature order): a few ops whatever the width, so a 784-column file builds
        its map function in milliseconds instead of tens of seconds (issue 24).
        """
        assert self.fileset is not None  # records come from files
        return format_named(self.fileset.format).decode(self, records)

    def __call__(self, records: Any) -> tuple[Any, Any]:
        """``(features, labels)`` of the rows of a batch of records that the ``drop`` policies keep.

        With tensor features (``data.columns`` with a shape, varlen or bytes) the named features also carry
        each row's serialized record under :data:`RECORD_KEY`, parsed after batching (:func:`parse_tensor_features`).
        """
        tf = self.tf
        features, labels, keep = self.apply(self._cells(records))
        if self.fileset is not None and self.fileset.tensors and self.named:
            features[RECORD_KEY] = records
        if keep is None:
            return features, labels
        rows = tf.reshape(tf.where(keep), [-1])  # gather: fewer graph ops than boolean_mask
        if self.named:
            return {name: tf.gather(tensor, rows) for name, tensor in features.items()}, tf.gather(labels, rows)
        return tf.gather(features, rows), tf.gather(labels, rows)

    def apply(self, cells: dict[str, tuple[Any, Any, Any]]) -> tuple[Any, Any, Any]:
        """The saved state applied to cells: ``(features, labels or None, keep or None)``, every row kept.

        ``keep`` (``bool [batch]``, None when no policy is ``drop``) marks the rows the ``drop``
        policies keep; labels are None when ``cells`` hold no label column. A missing cell of a
        column whose policy fills nothing (``error``, ``drop``) is NaN (numeric) or an unseen
        category (categorical).
        """
        tf = self.tf
        state = self.state
        keep = None  # rows a `drop` policy keeps (None: all)
        pieces: list[Any] = []  # the dense matrix's parts, in feature order
        named: dict[str, Any] = {}
        numeric = self.numeric_names
        values = None
        if numeric:  # every numeric feature column at once: fill, z-score, cast (a few ops whatever the width)
            if NUMERIC_BLOCK in cells:
                _, number, missing = cells[NUMERIC_BLOCK]
            else:  # per-column cells (serving): stacked
                number = tf.stack([cells[name][1] for name in numeric], axis=1)
                missing = tf.stack([cells[name][2] for name in numeric], axis=1)
            columns = [c for c in state.columns if c.kind == NUMERIC]
            drops = [c.missing == "drop" for c in columns]
            if any(drops):
                dropped = tf.reduce_any(tf.logical_and(missing, tf.constant(drops)), axis=1)
                keep = ~dropped
            fills = [c.fill if c.fill is not None else float("nan") for c in columns]
            value = tf.where(missing, tf.constant([fills], tf.float64), number)
            if any(c.mean is not None and c.std is not None for c in columns):
                scaled = [c.mean is not None and c.std is not None for c in columns]
                means = [float(c.mean) if on else 0.0 for c, on in zip(columns, scaled, strict=True)]  # type: ignore[arg-type]
                stds = [float(c.std) if on else 1.0 for c, on in zip(columns, scaled, strict=True)]  # type: ignore[arg-type]
                value = (value - tf.constant([means], tf.float64)) / tf.constant([stds], tf.float64)
            values = tf.cast(value, tf.float32)
        position = {name: index for index, name in enumerate(numeric)}
        run_start = run_end = None  # a run of consecutive numeric columns: one slice of `values`
        for column in [*state.columns, None]:
            if column is not None and column.kind == NUMERIC:
                index = position[column.name]
                if run_start is None:
                    run_start = index
                run_end = index + 1
                if self.named:
                    named[column.name] = values[:, index : index + 1]
                continue
            if run_start is not None and not self.named:
                whole = run_start == 0 and run_end == len(numeric)
                pieces.append(values if whole else values[:, run_start:run_end])
            run_start = None
            if column is None:
                break
            text, number, missing = cells[column.name]
            if column.missing == "drop":
                keep = ~missing if keep is None else tf.logical_and(keep, ~missing)
            vocabulary = column.vocabulary or []
            if self.named:  # ids for an embedding, the unseen category in the last bucket; the text as read
                named[column.name + RAW_SUFFIX] = text[:, None]
            if not vocabulary:
                pieces.append(tf.zeros([tf.shape(missing)[0], 0], tf.float32))
                if self.named:
                    named[column.name] = tf.zeros([tf.shape(missing)[0], 1], tf.int64)
                continue
            if column.fill is not None:
                text = tf.where(missing, tf.constant(str(column.fill)), text)
            ids = self.tables[column.name].lookup(text)
            if self.named:
                named[column.name] = tf.where(ids < 0, tf.constant(len(vocabulary), tf.int64), ids)[:, None]
            else:
                pieces.append(tf.one_hot(ids, len(vocabulary), dtype=tf.float32))
        label = state.label
        labels = None
        if label.name in cells:
            text, number, missing = cells[label.name]
            if label.missing == "drop":
                keep = ~missing if keep is None else tf.logical_and(keep, ~missing)
            # named features (a model_fn) get labels in their own dtype, as an input_fn gave them: class ids
            # int64, an int64 TFRecord feature int64 (unless label_scale divides it); the dense form float32
            dtype = self.label_dtype()
            if label.kind == NUMERIC:
                labels = number / state.label_scale if state.label_scale != 1.0 else number
                labels = tf.cast(tf.round(labels) if dtype == tf.int64 else labels, dtype)
            elif label.name in self.tables:
                labels = tf.cast(self.tables[label.name].lookup(text), dtype)
            else:
                labels = tf.zeros_like(number if number is not None else missing, dtype=dtype)
            labels = labels[:, None]
        if self.named:
            return named, labels, keep
        return pieces[0] if len(pieces) == 1 else tf.concat(pieces, axis=1), labels, keep


@dataclass
class RawTransformed:
    """Raw columns transformed by :func:`transform_raw_columns`.

    Attributes:
        features: ``float32 [batch, n_features]``, or with ``named`` a dict as the named training features.
        labels: ``float32 [batch, 1]`` (training units, or class ids), or None when no label column was given.
        complete: ``bool [batch]``: the row has no missing value in a column whose policy fills nothing
            (``error``, ``drop``: training never saw such a row); its features hold NaN or an unseen category.
    """

    features: Any
    labels: Any
    complete: Any


def transform_raw_columns(tf: Any, state: Preprocessor, columns: dict[str, Any], named: bool = False) -> RawTransformed:
    """The model's features from raw column tensors, with a run's saved preprocessing: the serving entry point.

    The same transformation training and evaluation apply to the rows they read (one implementation,
    :meth:`_Transform.apply`), on tensors a client sends instead of CSV lines; no row is dropped.
    Creates the vocabularies' ``tf.lookup`` tables in the default graph: run
    ``tf.compat.v1.tables_initializer()`` before use. Mirrors an Estimator ``serving_input_receiver_fn``
    feeding ``feature_column`` transformations.

    Args:
        tf: the ``tensorflow`` module.
        state: the run's preprocessing (``preprocessing.json``).
        columns: column name -> ``[batch]`` tensor, one per feature column (``state.columns``): ``float32``
            (or ``float64``) for a numeric column, NaN where missing; ``string`` for a categorical one,
            ``""`` (or another missing marker) where missing. The label column is optional; other keys
            are ignored.
        named: features as a dict (a builder taking named features) instead of one matrix.

    Returns:
        The transformed batch.

    Raises:
        KeyError: a feature column is not in ``columns``.
    """
    missing = [c.name for c in state.columns if c.name not in columns]
    if missing:
        raise KeyError(f"no tensor for feature column {missing[0]!r}")
    transform = _Transform(tf, state, named=named)
    cells = transform.raw_cells(columns)
    features, labels, _keep = transform.apply(cells)
    complete = tf.logical_not(tf.zeros_like(cells[state.columns[0].name][2]))
    for column in state.columns:
        if column.fill is None:
            complete = tf.logical_and(complete, tf.logical_not(cells[column.name][2]))
    return RawTransformed(features, labels, complete)


def shuffle_chunks(tf: Any, chunks: Any, buffer_rows: int, seed: int | None) -> Any:
    """A bounded shuffle buffer of ``buffer_rows`` rows over a dataset of row chunks, with vectorised ops.

    What ``Dataset.shuffle(buffer_rows)`` does row by row (fill a buffer, hand out uniformly random
    rows of it as new ones come in, drain it at the end), done a chunk at a time by
    ``Dataset.scan``: the buffer and an incoming chunk are pooled; once the pool holds
    ``buffer_rows`` plus an eighth more (or a chunk), a random permutation
    (``tf.random.experimental.stateless_shuffle``) keeps ``buffer_rows`` of its rows as the buffer and
    hands out the others; at the end the whole pool, permuted. Every row is handed out once. No
    per-row dataset op (``unbatch``, ``shuffle``, ``batch`` row by row cost ~0.8 ms per 256 rows, the
    serial stage that bounded streaming steps/s); each copy is of whole tensors, at most ~9 row copies
    per row handed out.

    The permutations' seeds come from ``Dataset.random(seed, rerandomize_each_iteration=True)``: the
    same in every run with a seed (a resumed run skips into the same order), new for each epoch
    (each ``repeat`` iteration), as ``shuffle(..., reshuffle_each_iteration=True)``.

    Args:
        tf: the ``tensorflow`` module.
        chunks: elements ``(features [n, ...] or a dict of such, labels [n, 1])`` with ``n`` varying.
        buffer_rows: rows the buffer holds (``data.shuffle_buffer``; memory: ``~1.2 x buffer_rows`` rows).
        seed: ``data.seed``, or None (a different order every run).

    Returns:
        Chunks of the same structure, in a random order of rows (empty chunks possible).
    """
    spec = chunks.element_spec
    empty = tf.nest.map_structure(lambda s: tf.zeros([0, *s.shape[1:].as_list()], s.dtype), spec)
    slack = max(1, buffer_rows // 8)
    marked = chunks.map(lambda features, labels: ((features, labels), False))
    marked = marked.concatenate(tf.data.Dataset.from_tensors((empty, True)))  # the end: drain the buffer
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)

    def step(buffer: Any, element: Any) -> Any:
        (chunk, last), random = element
        pool = tf.nest.map_structure(lambda b, c: tf.concat([b, c], axis=0), buffer, chunk)
        size = tf.shape(pool[1], out_type=tf.int64)[0]
        # keep everything while filling; keep buffer_rows once the pool is over the mark; nothing at the end
        full = size >= buffer_rows + slack
        keep = tf.where(last, tf.constant(0, tf.int64), tf.where(full, tf.constant(buffer_rows, tf.int64), size))
        order = tf.random.experimental.stateless_shuffle(
            tf.range(size), seed=tf.stack([random, tf.constant(0, tf.int64)])
        )
        kept = tf.nest.map_structure(lambda t: tf.gather(t, order[:keep]), pool)
        out = tf.nest.map_structure(lambda t: tf.gather(t, order[keep:]), pool)
        return kept, out

    return tf.data.Dataset.zip((marked, seeds)).scan(empty, step)


#: Rows one element of :func:`repeat_epoch` holds at least (when an epoch has fewer): a small cached epoch is
#: repeated, permuted and gathered this many rows at a time, so its per-element work runs once every few hundred
#: batches instead of once every few (issue 17). Memory: ``GROUP_ROWS x (features + 1) x 4`` bytes (4096 x 14 x 4:
#: 0.2 MB), twice while the next element is built.
GROUP_ROWS = 4096


def epochs_per_group(rows: int) -> int:
    """Epochs of ``rows`` rows that :func:`repeat_epoch` hands out per element: enough for :data:`GROUP_ROWS` rows."""
    return max(1, GROUP_ROWS // max(1, rows))


def epoch_permutations(tf: Any, key: Any, epochs: Any, rows: Any) -> Any:
    """Row orders of consecutive epochs, each a uniformly random permutation drawn from ``(key, epoch index)`` alone.

    Epoch ``k``'s order sorts ``rows`` random 64-bit integers: Philox (the generator of
    ``tf.random.stateless_uniform``) under ``key`` from the counter ``k x ceil(rows / 2)`` on (two integers per
    counter), so an epoch's order is the same whichever group of epochs it is drawn with. Sorting i.i.d. keys gives
    every order the same chance (ties, at most ``rows^2 / 2^65``, keep the row order).

    Args:
        tf: the ``tensorflow`` module.
        key: ``int64`` scalar, the run's random key.
        epochs: ``int64 [e]``, consecutive epoch indices (``e >= 1``).
        rows: ``int64`` scalar, rows per epoch.

    Returns:
        ``int64 [e, rows]``: row ``i`` is epoch ``epochs[i]``'s order (row indices ``0 .. rows - 1``).
    """
    count = tf.size(epochs, out_type=tf.int64)
    half = (rows + 1) // 2  # Philox counters per epoch
    counter = tf.bitcast(tf.stack([epochs[0] * half, tf.constant(0, tf.int64)]), tf.uint64)
    bits = tf.raw_ops.StatelessRandomUniformFullIntV2(
        shape=tf.stack([count * 2 * half]),
        key=tf.bitcast(tf.reshape(key, [1]), tf.uint64),
        counter=counter,
        alg=tf.constant(1, tf.int32),  # Philox
        dtype=tf.int64,
    )
    bits = tf.reshape(bits, tf.stack([count, 2 * half]))[:, :rows]
    return tf.argsort(bits, axis=1, stable=True, direction="DESCENDING")


def repeat_epoch(
    tf: Any,
    chunks: Any,
    rows: int,
    epochs: int | None,
    shuffle: bool,
    seed: int | None,
    skip_rows: int = 0,
) -> Any:
    """``repeat(epochs)`` of an epoch that fits in memory, several epochs per element, each in its own random order.

    Gives what ``shuffle(rows, reshuffle_each_iteration=True).repeat(epochs)`` gives on an epoch held whole (every
    epoch a uniformly random permutation of its rows, a new one each epoch), or without ``shuffle`` what
    ``repeat(epochs)`` gives, at a cost per element instead of per epoch: the epoch is read once (one element of
    ``rebatch``, kept by ``cache``), ``Dataset.range`` of the epoch indices is batched by :func:`epochs_per_group`,
    and each group of epochs is gathered in one ``tf.gather`` (:func:`epoch_permutations` draws the orders). On the
    overhead-bound bench (an epoch of 4 batches of 8) the per-epoch work of the former ``shuffle_epoch``, a
    ``cache`` read, a ``rebatch``, a permutation and a gather, ran every 4 steps; here it runs every 512 (issue 17).

    Epoch ``k``'s order depends on the run's key and ``k`` only: with a seed, the same in every run, and the
    same however many epochs an element holds; without one, the key is new at each iterator initialization, as
    ``Dataset.random(seed=None)``'s. Resuming starts the index range at the first epoch not finished and cuts the
    rows already trained on from the first element: what ``skip`` of the same rows gives, without producing them.

    Args:
        tf: the ``tensorflow`` module.
        chunks: elements ``(features [n, ...] or a dict of such, labels [n, 1])``, ``rows`` rows in all.
        rows: the epoch's rows (the scan's count for this task: ``Scan.train_rows`` or ``Scan.shard_rows[i]``).
        epochs: ``data.epochs``, or None (forever).
        shuffle: ``data.shuffle``: a new random order each epoch; else every epoch in the chunks' order.
        seed: ``data.seed``, or None (a different order every run).
        skip_rows: rows to leave out at the start (the resumed steps times ``batch_size``).

    Returns:
        Chunks of the same structure: ``epochs x rows`` rows in all (endless with ``epochs`` None), up to
        ``epochs_per_group(rows) x rows`` rows each; ``rebatch`` them to batches (across epochs, as ``batch``
        after ``repeat`` gives). Reading an epoch of another size than ``rows`` fails with
        ``InvalidArgumentError`` (the scan and ``tf.data`` disagree: a bug).
    """
    group = epochs_per_group(rows)
    start, cut = divmod(skip_rows, max(1, rows))  # epochs finished, then rows of the next one
    # the epoch as one element (one more row would show a disagreement), read once, with the run's random key
    whole = tf.data.Dataset.zip((chunks.rebatch(rows + 1), tf.data.Dataset.random(seed=seed).take(1)))
    indices = tf.data.Dataset.range(start, epochs if epochs is not None else np.iinfo(np.int64).max)
    groups = indices.batch(group).enumerate()

    def gather(epoch_and_key: Any, positioned: Any) -> Any:
        (epoch, key), (position, epoch_indices) = epoch_and_key, positioned
        count = tf.size(epoch_indices, out_type=tf.int64)
        read = tf.shape(epoch[1], out_type=tf.int64)[0]
        check = tf.debugging.assert_equal(read, tf.constant(rows, tf.int64), message="repeat_epoch: rows read")
        with tf.control_dependencies([check]):
            size = tf.identity(read)
        if shuffle:
            order = epoch_permutations(tf, key, epoch_indices, size)
        else:
            order = tf.tile(tf.range(size)[tf.newaxis], tf.stack([count, 1]))
        order = tf.reshape(order, [-1])[tf.where(tf.equal(position, 0), tf.constant(cut, tf.int64), 0):]
        return tf.nest.map_structure(lambda tensor: tf.gather(tensor, order), epoch)

    return tf.data.Dataset.zip((whole.cache().repeat(), groups)).map(gather)


@dataclass
class StreamInput:
    """The input of a run: the scan's files read by ``tf.data`` and transformed with ``state``.

    Attributes:
        scan: the streaming pass's result.
        state: the preprocessing to apply (fitted, or a resumed run's saved one).
        config: the ``data:`` section.
        shard: on a cluster, ``(training tasks, this task's position)``; None alone.
    """

    scan: Scan
    state: Preprocessor
    config: DataConfig
    shard: tuple[int, int] | None = None

    @property
    def num_rows(self) -> int:
        """Training rows fed to the model over all tasks (count)."""
        return self.scan.train_rows

    @property
    def feature_names(self) -> list[str]:
        """Names of the features' columns after encoding."""
        return self.state.feature_names

    @property
    def cached(self) -> bool:
        """Whether the training rows are small enough to keep in memory after the first epoch.

        True when more than one epoch is read and the transformed rows (``rows x (features + 1) x 4``
        bytes) take at most :data:`CACHE_BYTES`: ``Dataset.cache()`` (in memory, in the pipeline, never
        in the graph) then serves epochs 2 and later, in the first epoch's order.
        """
        if self.scan.train.tensors:  # the rows carry their serialized records: their size is not bounded here
            return False
        size = self.scan.train_rows * (len(self.state.feature_names) + 1) * 4
        return self.config.epochs != 1 and size <= CACHE_BYTES

    def _chunks(
        self,
        tf: Any,
        fileset: FileSet,
        holdout: str | None,
        shuffle_files: bool,
        sequential: bool,
        named: bool = False,
    ) -> Any:
        """Transformed rows in chunks (up to a parse batch each, in file order within a file).

        Each element is ``(features float32 [n, F] or a dict (named), labels float32 [n, 1])``, ``n`` varying
        (rows held out, dropped or of another shard are gone); no per-row dataset op anywhere.
        """
        seed = self.scan.seed
        paths = [str(f.path) for f in fileset.files]
        salts = [f.salt(seed) for f in fileset.files]
        compressions = [f.compression for f in fileset.files]
        files = tf.data.Dataset.from_tensor_slices(
            (tf.constant(paths), tf.constant(salts, tf.int64), tf.constant(compressions))
        )
        shard_by_row = None
        if self.shard is not None:
            count, index = self.shard
            if shard_by_file(len(paths), count):
                files = files.shard(count, index)
            else:
                shard_by_row = self.shard
        if shuffle_files and len(paths) > 1:
            files = files.shuffle(len(paths), seed=self.config.seed, reshuffle_each_iteration=True)
        transform = _Transform(tf, self.state, fileset, self.scan.plain, named=named)
        threshold = split_threshold(self.scan.fraction) if holdout is not None and self.scan.fraction else None
        fmt = format_named(fileset.format)  # how its files' records are read, and which are no rows
        batch_rows = parse_batch_rows(len(fileset.columns))
        # Without a seed the order differs from run to run anyway: let tf.data hand out whichever batch is ready.
        ordered = self.config.seed is not None or sequential

        def select(lines: Any, records: Any, salt: Any) -> Any:
            """The records of a batch of ``(line number, record)`` to keep: no blank line, this shard, this split."""
            rules = []  # (the same ops as before formats were modules: CSV's two tests, TFRecord's none)
            if fmt.skip_blank:  # a blank line is no row (it keeps its number)
                rules.append(tf.strings.length(records) > 0)
            if fmt.header_lines:  # CSV: line 1 is the header
                rules.append(lines > fmt.header_lines)
            keep = tf.ones_like(lines, dtype=tf.bool) if not rules else rules[0]
            for rule in rules[1:]:
                keep = tf.logical_and(keep, rule)
            if shard_by_row is not None:
                keep = tf.logical_and(keep, tf.equal(lines % shard_by_row[0], shard_by_row[1]))
            if threshold is not None:
                held = split_hash_tf(tf, lines, salt) < threshold
                keep = tf.logical_and(keep, held if holdout == "validation" else tf.logical_not(held))
            return tf.gather(records, tf.reshape(tf.where(keep), [-1]))  # fewer graph ops than boolean_mask

        def per_file(path: Any, salt: Any, compression: Any) -> Any:
            # Every step works on batches of PARSE_BATCH lines: no per-line function call (they cost ~10x), and
            # no per-line dataset op but the read and the batch (enumerate/skip per line cost ~0.2 ms a step).
            records = fmt.records(tf, path, compression)

            def parse(index: Any, batch: Any) -> Any:
                # line (record) numbers from 1, as enumerate(start=1) per line would give them
                lines = index * batch_rows + 1 + tf.range(tf.size(batch, out_type=tf.int64), dtype=tf.int64)
                return transform(select(lines, batch, salt))

            batches = records.batch(batch_rows).enumerate()
            return batches.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=ordered)
            # transformed chunks; never unbatched (shuffle_chunks and rebatch work on chunks)

        cycle = 1 if sequential else min(len(paths), CYCLE_LENGTH)
        if cycle == 1:
            return files.interleave(per_file, cycle_length=1, block_length=1)
        return files.interleave(
            per_file, cycle_length=cycle, block_length=1, num_parallel_calls=tf.data.AUTOTUNE, deterministic=ordered
        )

    def train_dataset(self, tf: Any, skip_steps: int = 0, named: bool = False) -> Any:
        """The training pipeline: chunks -> [cache] -> shuffle(buffer) -> repeat(epochs) -> rebatch -> skip -> prefetch.

        A small cached epoch (one that fits in ``data.shuffle_buffer``; without shuffle, in :data:`GROUP_ROWS`)
        takes :func:`repeat_epoch` instead of cache, shuffle and repeat: the same rows in the same kind of order,
        at a cost per few thousand rows instead of per epoch, and a resume that skips whole epochs.
        With ``data.epochs: null`` a ``repeat()`` after the ``rebatch`` keeps the pipeline's cardinality
        ``tf.data.INFINITE_CARDINALITY`` (``rebatch`` reports it unknown); it changes no batch.

        With a seed the order is the same in every run (seeded shuffles, deterministic interleave
        and map), so skipping the batches a resumed run already trained on continues the data where
        the checkpoint left it.

        Args:
            tf: the ``tensorflow`` module.
            skip_steps: batches to skip (the restored ``global_step``, this task's share on a cluster).
            named: features as a dict column -> tensor (:func:`named_feature_columns`) instead of one matrix.

        Returns:
            A dataset of ``(features float32 [batch, n_features], labels float32 [batch, 1])``; with ``named``
            the features are a dict: a numeric column ``float32 [batch, 1]`` (preprocessed), a categorical one
            ``int64 [batch, 1]`` ids (``num_buckets - 1`` for a category training did not see) and
            ``<column>/raw`` ``string [batch, 1]``, its text as read.
        """
        config = self.config
        check_one_value_features(self.scan.train, named)
        holdout = "train" if self.scan.fraction is not None else None
        ds = self._chunks(tf, self.scan.train, holdout, shuffle_files=config.shuffle, sequential=False, named=named)
        rows: int | None = self.scan.train_rows  # this task's rows: the scan counts each task's on a cluster
        if self.shard is not None:
            rows = self.scan.shard_rows[self.shard[1]] if self.scan.shard_rows else None
        if rows is not None and self.cached and rows <= (config.shuffle_buffer if config.shuffle else GROUP_ROWS):
            # read once, then many epochs per element; without shuffle only an epoch of a few thousand rows (a larger
            # one would make the first batch wait for a whole epoch)
            ds = repeat_epoch(tf, ds, rows, config.epochs, config.shuffle, config.seed, skip_steps * config.batch_size)
            skip_steps = 0  # repeat_epoch skipped the trained epochs and rows itself
        else:
            if self.cached:
                ds = ds.cache()  # epochs after the first read the transformed rows from memory
            if config.shuffle:
                ds = shuffle_chunks(tf, ds, config.shuffle_buffer, config.seed)
            ds = ds.repeat(config.epochs)
        ds = ds.rebatch(config.batch_size)  # batches across epochs, as batch() after repeat
        if config.epochs is None:
            # rebatch hides that the stream never ends (its cardinality is unknown to tf.data even then); a
            # repeat of an endless stream changes no element but says so (INFINITE_CARDINALITY), and the
            # session.steps_per_run loop then pulls a window's batches at once (runner/graph/fused.py). An
            # empty input still ends at its first pull (repeat stops on an empty pass).
            ds = ds.repeat()
        if skip_steps:
            ds = ds.skip(skip_steps)
        if self.scan.train.tensors:
            ds = parse_tensor_features(tf, ds, self.scan.train.tensors, self.scan.train.format)
        return ds.prefetch(tf.data.AUTOTUNE)

    def evaluation(self) -> EvalInput | None:
        """The validation rows as an :class:`EvalInput`, or None without validation data."""
        if self.scan.validation is None and self.scan.fraction is None:
            return None
        return EvalInput(self)


@dataclass
class EvalInput:
    """The validation rows of a :class:`StreamInput`: every row once, in file order."""

    input: StreamInput

    @property
    def num_rows(self) -> int:
        """Validation rows after ``drop`` (count)."""
        return self.input.scan.validation_rows

    @property
    def source(self) -> Path:
        """The first validation file (for messages)."""
        scan = self.input.scan
        return (scan.validation or scan.train).first

    def dataset(self, tf: Any, batch_size: int, named: bool = False) -> Any:
        """``(features float32 [batch, F], labels float32 [batch, 1])`` batches over every validation row once.

        With ``named`` the features are a dict, as :meth:`StreamInput.train_dataset`'s.
        """
        scan = self.input.scan
        check_one_value_features(scan.train, named)
        if scan.validation is not None:
            chunks = self.input._chunks(tf, scan.validation, None, shuffle_files=False, sequential=True, named=named)
        else:
            chunks = self.input._chunks(tf, scan.train, "validation", shuffle_files=False, sequential=True, named=named)
        batches = chunks.rebatch(batch_size)
        if scan.train.tensors:
            batches = parse_tensor_features(tf, batches, scan.train.tensors, scan.train.format)
        return batches.prefetch(1)


#: The key of the serialized records carried through the pipeline when there are tensor features (a NUL: never a
#: feature name); replaced by the parsed tensor features after batching.
RECORD_KEY = "\0record"




def parse_tensor_features(tf: Any, dataset: Any, tensors: dict[str, Any], file_format: str = "tfrecord") -> Any:
    """Replace the batches' serialized records (:data:`RECORD_KEY`) by the tensor features they hold, in spec order.

    Args:
        tf: the ``tensorflow`` module.
        dataset: batches ``(named features with RECORD_KEY: string [batch], labels)``.
        tensors: ``data.columns``' tensor features (:attr:`DataConfig.tensor_features`).
        file_format: the records' format (a typed one: it parses them, :meth:`FileFormat.parse_tensors`).

    Returns:
        Batches ``(features, labels)``: the named features, then each tensor feature as parsed
        (``[batch, *shape]``, a ``SparseTensor`` or a ``RaggedTensor`` ``[batch, None]``).
    """
    fmt = format_named(file_format)

    def parse(features: Any, labels: Any) -> Any:
        records = features[RECORD_KEY]
        parsed = fmt.parse_tensors(tf, records, tensors)
        out = {name: tensor for name, tensor in features.items() if name != RECORD_KEY}
        out.update({name: parsed[name] for name in tensors})
        return out, labels

    return dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)


def check_one_value_features(fileset: FileSet, named: bool) -> None:
    """Refuse tensor features for a builder taking the dense matrix (one value per feature).

    Raises:
        PlacedError: at ``data.columns.<name>``, naming the feature, its form and the fix.
    """
    if named or not fileset.tensors:
        return
    name, feature = next(iter(fileset.tensors.items()))
    form = f"shape {feature.shape}" if feature.shape else f"varlen: {feature.varlen}" if feature.varlen else "raw bytes"
    raise PlacedError(
        f"data.columns.{name}",
        f"feature {name!r} ({form}) is not one value per row, and the builder takes the dense matrix (one value per "
        "feature); use a model_fn (it gets named features) or declare `hookrun_features = \"named\"` "
        "(or set graph.features: named)",
    )


#: Key suffix of a categorical column's text in named features: ``ocean_proximity/raw``.
RAW_SUFFIX = "/raw"


def named_feature_columns(state: Preprocessor) -> dict[str, dict[str, Any]]:
    """What a builder taking named features gets as ``params["feature_columns"]``: column -> its spec.

    Mirrors what ``tf.feature_column.numeric_column`` / ``categorical_column_with_vocabulary_list(...,
    num_oov_buckets=1)`` described for an Estimator's ``input_fn``.

    Returns:
        ``{"kind": "numeric", "mean": m, "std": s}`` for a numeric column (``float32 [batch, 1]``, filled and
        z-scored as in the dense form: ``(x - m) / s`` in the column's units; both None without ``standardize``);
        ``{"kind": "categorical", "num_buckets": len(vocabulary) + 1, "vocabulary": [...]}`` for
        a categorical one (``int64 [batch, 1]``: the index in ``vocabulary``, ``num_buckets - 1`` for a category
        training did not see; its text is ``<column>/raw``, ``string [batch, 1]``).
    """
    columns: dict[str, dict[str, Any]] = {}
    for column in state.columns:
        if column.kind == NUMERIC:
            columns[column.name] = {"kind": "numeric", "mean": column.mean, "std": column.std}
        else:
            vocabulary = list(column.vocabulary or [])
            columns[column.name] = {"kind": "categorical", "num_buckets": len(vocabulary) + 1, "vocabulary": vocabulary}
    return columns


def make_iterator(tf: Any, dataset: Any) -> Any:
    """An initializable iterator whose initializer runs with the ``Scaffold``'s ``local_init_op``.

    The initializer joins ``GraphKeys.TABLE_INITIALIZERS``: ``Scaffold.default_local_init_op``
    (``local_variables_initializer`` + ``tables_initializer``) runs it at every session creation,
    in both engines and on every worker.
    """
    iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
    tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.TABLE_INITIALIZERS, iterator.initializer)
    tf.compat.v1.add_to_collection("hookrun_input_iterators", iterator)  # input_state.ITERATORS: its position is saved
    return iterator


def check_drop_notes(scan: Scan) -> list[str]:
    """Lines for the user about rows a ``drop`` policy left out."""
    notes = []
    if scan.dropped_train:
        notes.append(f"dropped {scan.dropped_train} training row(s) with missing values (missing: drop)")
    if scan.dropped_validation:
        notes.append(f"dropped {scan.dropped_validation} validation row(s) with missing values (missing: drop)")
    return notes
