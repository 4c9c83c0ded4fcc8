"""``predict(run_dir, data, output)``: one CSV row of predictions per input row (``hookrun predict``).

Mirrors ``tf.estimator.Estimator.predict``: restore a checkpoint into a graph holding the builder in
``infer`` mode (``labels=None`` for a model_fn; its ``prediction_hooks`` run), feed it the rows, yield
the predictions. The graph is the one ``hookrun export`` saves
(:func:`hookrun.runner.trained.inference.build_inference_graph`), fed the numbers as the exported
signature takes them (``float32``), so predict and a served export agree; the run's saved
preprocessing is applied by the transformation training runs.

The output CSV has one row per input row, in input order (files in sorted order, as ``data.train``):
``row`` (0-based index over all the input rows), then the predictions: for a regressor ``<label>``
(the value; label units for the built-ins); for a classifier ``<label>`` (the class, as the label was
written) and ``probability_<class>`` per class; a model_fn's other prediction entries by name
(``<name>_<i>`` for a vector). A label column in the files is ignored.

An output ending in ``.jsonl`` gets one JSON object per input row instead (line ``i`` for row ``i``): every
output of the inference graph by its name, an array per row whole
(:class:`~hookrun.runner.trained.input_fn_run.RecordWriter`).

A run with TFRecord tensor features (``data.columns`` parse specs) reads each file's serialized records beside
its one-value columns and feeds them to the graph's ``examples`` input, which parses them with the run's own
parse spec (:mod:`hookrun.runner.data.tensor_serving`, the parse ``hookrun export`` saves); a record that
does not fit the spec is refused naming file, record and feature.

A missing value in a column whose missing-value policy fills nothing (``error``, or ``drop``: training
left such rows out, so the model never saw one) is refused, naming file, line and column: no row is
dropped silently and none is predicted from a value the model never had.
"""

from __future__ import annotations

import csv
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from hookrun.common.errors import DataError, SetupError
from hookrun.runner.data import prediction as _prediction
from hookrun.runner.trained.inference import CLASS_ID_OUTSIDE
from hookrun.runner.trained.results import PredictResult

#: Rows fed to the graph per session call (rows); ``prediction_hooks`` see batches of this size.
PREDICT_BATCH = _prediction.PREDICT_BATCH


#: The column of class ids (a model_fn's integer ``predictions``, an argmax): never the label's name over ids.
CLASS_ID = "class_id"


def _header(label: str, graph: Any) -> list[tuple[str, str, int | None]]:
    """``(CSV column, output name, index or None)`` for every prediction column.

    Integer ``predictions`` without ``probabilities`` are class ids (``graph.class_ids``): written as
    ``class_id``, after ``<label>`` holding each id's class when the label's classes are known.
    """
    columns: list[tuple[str, str, int | None]] = []
    if graph.class_names is not None:
        columns.append((label, "classes", None))
        columns.extend((f"probability_{name}", "probabilities", i) for i, name in enumerate(graph.class_names))
    elif graph.class_ids and "classes" in graph.outputs:  # each id's class, as the label was written
        columns.append((label, "classes", None))
    for name, tensor in graph.outputs.items():
        if name in ("classes", "probabilities") or (name == "predictions" and graph.class_names is not None):
            continue
        title = label if name == "predictions" else name
        if name == "predictions" and graph.class_ids:  # ids, not the label's values: never under its name
            title = CLASS_ID
        rank = tensor.shape.rank
        width = tensor.shape[1] if rank == 2 else None
        if rank == 2 and width is not None and width > 1:
            columns.extend((f"{title}_{i}", name, i) for i in range(int(width)))
        else:
            columns.append((title, name, None))
    return columns


def _cell(value: Any) -> str:
    r"""One CSV cell: text as is (bytes that are not UTF-8 as ``\xNN`` escapes, as ``.jsonl``).

    A float exactly, as its shortest repr; a NaN empty.
    """
    if isinstance(value, bytes):  # a raw `bytes` output (an image's, a key's) must not turn into U+FFFD silently
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, (float, np.floating)):
        return "" if math.isnan(float(value)) else repr(float(value))
    if isinstance(value, np.ndarray):  # a value of more than two dimensions: as JSON-like text
        return str(value.tolist())
    return str(value.item() if isinstance(value, np.generic) else value)


def _refuse_incomplete(run: Any, raw: Any) -> None:
    """Refuse the first row with a missing value in a column whose policy fills nothing."""
    from hookrun.runner.data.preprocessing import policy_name_json

    first: tuple[int, str, str] | None = None
    for column in run.preprocessor.columns:
        if column.fill is not None:
            continue
        missing = np.flatnonzero(raw.missing(column.name))
        if missing.size and (first is None or int(missing[0]) < first[0]):
            first = (int(missing[0]), column.name, policy_name_json(column.missing))
    if first is not None:
        row, name, policy = first
        raise DataError(
            f"{raw.where(row, name)} is empty, and the run's missing-value policy for it is `{policy}` (training "
            "never saw such a row, so the model has no value for it); fill the cell, or train with a fill "
            f"policy for it (`data.missing_by_column: {{{name}: median}}`, mean or {{constant: V}})",
            loc=("--data",),
        )


def _row_count_error(err: Any, builder: str) -> Exception:
    """The one-line error for a prediction whose row count is not the input's (the inference graph's assertion).

    Any other ``InvalidArgumentError`` is returned as it is (an internal error).
    """
    import re

    message = str(getattr(err, "message", err))
    if CLASS_ID_OUTSIDE in message:
        found = re.search(re.escape(CLASS_ID_OUTSIDE) + r" \((0 to \d+)\)", message)
        return SetupError(
            f"graph.builder: {builder} in infer mode predicts a class id outside the label's classes "
            f"(ids {found.group(1) if found else 'of preprocessing.json'}); its predictions must be class ids of "
            "the label as training mapped it (the index in the label's sorted classes)"
        )
    found = re.search(
        r"\[graph\.builder: rows of the prediction (.*?) differ from the input rows\]"
        r".*?= \] \[(\d+)\].*?= \] \[(\d+)\]",
        message, re.S,
    )
    if found is None:
        return err
    name, got, rows = found.groups()
    return SetupError(
        f"graph.builder: {builder} in infer mode returns {got} rows of the prediction {name!r} for a batch of "
        f"{rows} input rows; a prediction needs one entry per input row, shape [batch, ...]"
    )


def _warn_infinite(raw: Any, numeric: set[str], warned: set[str]) -> None:
    """Warn once per column (a ``DataWarning``) about numbers that are infinite as ``float32``.

    ``inf`` in a cell, or a finite number beyond ``float32``'s range (``1e39``): the model is fed
    ``float32`` (as the exported signature), so its prediction for that row is not finite.
    """
    import warnings

    from hookrun.common.errors import DataWarning

    limit = float(np.finfo(np.float32).max)
    for name in sorted(numeric - warned):
        values = np.asarray(raw.values[name], dtype=np.float64)
        with np.errstate(invalid="ignore"):
            infinite = np.abs(values) > limit
        if infinite.any():
            warned.add(name)
            row = int(np.flatnonzero(infinite)[0])
            warnings.warn(
                DataWarning(
                    f"{raw.where(row, name)} holds {float(values[row])!r}, beyond float32 (the model's input), and "
                    f"{int(infinite.sum())} cell(s) of this chunk do; their rows' predictions are not finite"
                ),
                stacklevel=2,
            )


def predict(
    run_dir: str | Path,
    data: list[str] | None,
    output: str | Path,
    checkpoint: str = "latest",
    overwrite: bool = False,
    verbose: bool = False,
    input_fn: str | None = None,
) -> PredictResult:
    """Predict every row of ``data`` with a run's checkpoint and write the predictions as CSV.

    Args:
        run_dir: the run directory ``hookrun train`` wrote.
        data: data files (globs, directories; relative to the current directory), CSV or TFRecord, with the
            model's feature columns (the label and other columns are ignored).
        output: the CSV to write, or a ``.jsonl`` (written to a temporary file beside it, then renamed).
        checkpoint: ``latest``, ``best`` or a checkpoint prefix (see
            :func:`hookrun.runner.trained.saved_run.resolve_checkpoint`).
        overwrite: replace ``output`` if it exists.
        verbose: show TensorFlow's INFO logs.
        input_fn: instead of ``data``, an Estimator ``input_fn`` (``module:function``) called in ``infer``
            mode; every key of the predictions dict is written, one record per example, to a ``.jsonl`` or
            ``.csv`` (:func:`hookrun.runner.trained.input_fn_run.predict_with_input_fn`). A run trained from
            ``data.input_fn`` needs it.

    Returns:
        The result.

    Raises:
        SetupError, DataError, ConfigError: no such run or checkpoint, ``output`` exists (without
            ``overwrite``) or its directory does not, a file missing a feature column, a bad cell, a missing
            value the model cannot take, a record that does not fit the run's tensor-feature parse spec, CSV
            files for a run with tensor features, a builder that fails in ``infer`` mode (exit 2); nothing is
            written.
    """
    from hookrun.runner.data.formats.tfrecord import tensor_chunk_rows
    from hookrun.runner.data.source import saved_source
    from hookrun.runner.data.tensor_serving import unfit_record
    from hookrun.runner.run_dir.checkpoints import check_checkpoint_fits, restore_errors
    from hookrun.runner.tf_env import import_tensorflow
    from hookrun.runner.trained.inference import build_inference_graph
    from hookrun.runner.trained.output import atomic_file, check_not_replacing, check_output_path
    from hookrun.runner.trained.saved_run import open_run, resolve_checkpoint

    started = time.perf_counter()
    if (input_fn is None) == (data is None):
        raise SetupError("give the rows to predict: --data FILES or --input-fn module:function (one of them)")
    run = open_run(run_dir, input_fn=input_fn is not None)
    if input_fn is not None:
        from hookrun.runner.trained.input_fn_run import predict_with_input_fn

        return predict_with_input_fn(run, input_fn, output, checkpoint, overwrite, verbose)
    assert data is not None
    target = check_output_path(output, overwrite, "file")
    source = saved_source(run.loaded, run.preprocessor)  # the files source of the run's saved preprocessing
    fileset, plan = source.prediction_files(data)
    tensors = run.loaded.config.data.tensor_features
    if tensors and fileset.format != "tfrecord":
        raise SetupError(
            f"--data {fileset.first}: the run reads TFRecord tensor features (data.columns.{next(iter(tensors))}); "
            "give TFRecord files of tf.train.Example records like the training ones"
        )
    check_not_replacing(target, [run.run_dir, *(f.path for f in fileset.files)], hook_paths=run.hook_paths())
    tf = import_tensorflow(verbose)
    prefix, step = resolve_checkpoint(tf, run, checkpoint)
    built = build_inference_graph(tf, run, source=source)  # float32 numbers, as the exported signature: the two agree
    v1 = tf.compat.v1
    with built.graph.as_default():
        variables = v1.global_variables()
        saver = v1.train.Saver(var_list=variables)
        check_checkpoint_fits(tf, prefix, variables)
        columns = _header(run.preprocessor.label.name, built)
        index_name = "row" if all(title != "row" for title, _, _ in columns) else "row_index"
        fetch_names = list(dict.fromkeys(name for _, name, _ in columns))
        fetches = {name: built.outputs[name] for name in fetch_names}
        jsonl = target.suffix == ".jsonl"  # one JSON record per row: every output, arrays whole
        if jsonl:
            fetches = dict(built.outputs)
        creator = v1.train.ChiefSessionCreator(
            scaffold=v1.train.Scaffold(saver=saver), checkpoint_filename_with_path=prefix
        )
        numeric = {c.name for c in run.preprocessor.columns if c.kind == "numeric"}
        with restore_errors(tf, prefix):
            session = v1.train.MonitoredSession(session_creator=creator, hooks=list(built.prediction_hooks))
    rows = 0
    # Outside the graph's context: reading TFRecord chunks runs eager tf.data ops (the graph is finalized).
    with session, atomic_file(target) as temporary, open(temporary, "w", encoding="utf-8", newline="") as handle:
        if jsonl:
            from hookrun.runner.trained.input_fn_run import RecordWriter

            records_out = RecordWriter(handle, list(fetches), ".jsonl")
        else:
            writer = csv.writer(handle)
            writer.writerow([index_name, *(title for title, _, _ in columns)])
        warned: set[str] = set()
        # with tensor features, one session call takes at most TENSOR_CHUNK_BYTES of fixed-shape tensors (the graph
        # allocates [rows, *shape] for each, and the model's activations scale with the rows)
        call_rows = tensor_chunk_rows(tensors, PREDICT_BATCH) if tensors else PREDICT_BATCH
        for raw, records, file in source.predict_dataset(tf, (fileset, plan)):
            _refuse_incomplete(run, raw)
            _warn_infinite(raw, numeric, warned)
            for start in range(0, raw.num_rows, call_rows):
                stop = min(start + call_rows, raw.num_rows)
                feed = {}
                if records is not None:
                    feed[built.examples] = records[start:stop]
                for name, tensor in built.inputs.items():
                    values = raw.values[name][start:stop]
                    if name in numeric:
                        with np.errstate(over="ignore"):  # beyond float32: infinite, warned about above
                            feed[tensor] = values.astype(np.float32)
                    else:
                        feed[tensor] = np.array(["" if v is None else v for v in values], dtype=object)
                try:
                    got = session.run(fetches, feed_dict=feed)
                except tf.errors.InvalidArgumentError as err:
                    if records is not None:  # a record that does not fit the parse spec: named exactly
                        unfit = unfit_record(tf, records[start:stop], tensors, file, int(raw.lines[start]))
                        if unfit is not None:
                            raise unfit from None
                    raise _row_count_error(err, run.loaded.config.graph.builder) from None
                if jsonl:
                    records_out.write([{name: got[name][i] for name in fetches} for i in range(stop - start)])
                    rows += stop - start
                    continue
                for offset in range(stop - start):
                    cells = [str(rows + offset)]
                    for _, name, position in columns:
                        value = got[name][offset]
                        cells.append(_cell(value if position is None else value[position]))
                    writer.writerow(cells)
                rows += stop - start
    return PredictResult(
        run_dir=str(run.run_dir),
        checkpoint=prefix,
        global_step=step,
        data=[str(f.path) for f in fileset.files],
        rows=rows,
        columns=list(fetches) if jsonl else [index_name, *(title for title, _, _ in columns)],
        output=str(target),
        seconds=time.perf_counter() - started,
    )
