"""Evaluate, predict and export with the user's own functions: ``--input-fn`` and ``graph.serving_input_fn``.

Mirrors ``tf.estimator.Estimator.evaluate(input_fn)``, ``Estimator.predict(input_fn)`` and
``Estimator.export_saved_model(serving_input_receiver_fn)``: the model_fn is called on exactly what the
function gives (nothing cast, reshaped or re-packed), with ``params`` = ``graph.params`` as written and
``config`` a :class:`~hookrun.runner.data.input_fn.RunInfo`; the checkpoint's weights are restored.

- evaluate: the input_fn in ``eval`` mode returns a finite ``tf.data.Dataset`` of ``(features, labels)``;
  the graph is the ``evaluation`` hook's (:func:`evaluation_from_input_fn`): ``val_loss`` the loss averaged
  over every example (each batch weighed by its rows; Estimator's ``loss`` metric weighed batches alike,
  which differs only when the last batch is short), ``val_<name>`` each ``eval_metric_ops`` entry.
- predict: the input_fn in ``infer`` mode returns a dataset of features (or of ``(features, labels)``, the
  labels unused) or a ``(features, labels)`` tuple of tensors; every key of the predictions dict is written,
  one record per example, as ``Estimator.predict`` yielded them (:class:`RecordWriter`).
- export: the ``serving_input_fn`` (no arguments) returns a receiver; the signatures are Estimator's
  (``export_utils.build_all_signature_defs``): each ``export_outputs`` entry on the receiver tensors, each
  alternative ``<name>:<key>``, ``serving_default`` = the predictions as ``PredictOutput`` when the model_fn
  gives no ``export_outputs``. A signature whose output cannot take those inputs (a ``ClassificationOutput``
  on a float placeholder) is left out and named, as Estimator logged it.

The user's modules import beside the current directory first, then from ``sys.path``.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from hookrun.common.errors import PlacedError, SetupError
from hookrun.runner.data.input_fn import input_fn_of

#: Output suffixes ``predict`` writes.
RECORD_FORMATS = (".jsonl", ".csv")


def _error(function: Any, option: str, reason: str) -> PlacedError:
    """A one-line error at ``option`` naming the function: ``--input-fn: m:fn <reason>``."""
    return PlacedError(option, f"{function.path} {reason}")


def _run_info(run_dir: Path, config: Any) -> Any:
    from hookrun.runner.data.input_fn import RunInfo

    return RunInfo(model_dir=str(run_dir), tf_random_seed=config.data.seed)


def _builder(run: Any) -> tuple[Any, bool, dict[str, Any]]:
    """The run's builder, whether it is a model_fn, and its params (as written; no hookrun keys)."""
    from hookrun.runner.graph.build import builder_params
    from hookrun.runner.graph.builders.registry import get_builder
    from hookrun.runner.graph.model_fn import is_model_fn

    config = run.loaded.config
    params = builder_params(config, run.loaded.base_dir, run.run_dir)
    builder = get_builder(config.graph.builder, Path.cwd(), params)
    return builder, is_model_fn(builder, config.graph.style), params


def _call(tf: Any, run: Any, features: Any, labels: Any, mode: str, function: Any, option: str) -> Any:
    """The model_fn on these features in ``mode``; a feature it reads that the function does not give is named."""
    from hookrun.runner.graph.build import _call_builder

    builder, model_fn, params = _builder(run)
    return _call_builder(
        tf, builder, run.loaded.config.graph.builder, features, labels, {**params, "mode": mode},
        model_fn=model_fn, config=_run_info(run.run_dir, run.loaded.config), input_fn=function,
    )


def _features_of_dataset(tf: Any, function: Any, dataset: Any, option: str, mode: str) -> tuple[Any, Any, Any]:
    """``(iterator, features, labels)`` of a finite, non-empty dataset; labels None for a features-only element."""
    from hookrun.runner.data.input_fn import _check_structure, dataset_cardinality

    count = dataset_cardinality(tf, dataset)
    if count == 0:
        raise _error(function, option, "returned an empty dataset (no element); check its files, filter or take()")
    if count == tf.data.INFINITE_CARDINALITY:
        raise _error(
            function, option, f"returned an endless dataset (repeat()); {mode} reads it to its end: leave out "
            "repeat() or take(n) batches",
        )
    spec = dataset.element_spec
    pair = isinstance(spec, tuple) and len(spec) == 2
    if isinstance(spec, tuple) and not pair:
        raise _error(function, option, f"returned a dataset whose elements are tuples of {len(spec)}, not "
                     "(features, labels) pairs or features")
    _check_structure(tf, function, spec[0] if pair else spec, "features", spec=True, optional=False)
    if pair:
        _check_structure(tf, function, spec[1], "labels", spec=True, optional=mode == "predict")
    iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
    element = iterator.get_next()
    features, labels = element if pair else (element, None)
    return iterator, features, labels


def _restore(tf: Any, session: Any, prefix: str, variables: list[Any]) -> None:
    from hookrun.runner.run_dir.checkpoints import check_checkpoint_fits, restore_errors

    check_checkpoint_fits(tf, prefix, variables)
    with restore_errors(tf, prefix, fix="give a checkpoint of this run"):
        tf.compat.v1.train.Saver(var_list=variables).restore(session, prefix)


def _read_variables(tf: Any, graph: Any, targets: list[Any]) -> list[Any]:
    """The global variables the targets read (an optimizer built in another mode is neither restored nor needed)."""
    from hookrun.runner.graph.graft import needed_nodes

    names = [getattr(t, "name", t) for t in targets]
    read = {node.name for node in needed_nodes(graph.as_graph_def(), names).node}
    return [v for v in tf.compat.v1.global_variables() if v.op.name in read]


def evaluation_from_input_fn(tf: Any, run: Any, function: Any, plan: Any) -> tuple[Any, Any, Any, Any]:
    """The evaluation graph of ``hookrun evaluate`` on an input_fn's ``eval``-mode dataset.

    The graph the ``evaluation`` hook builds for ``data.eval_input_fn``
    (:func:`hookrun.runner.graph.build.build_evaluation`, in a fresh graph with the run's seed): the
    model_fn gets the dataset's ``(features, labels)`` untouched, ``val_loss`` is the mean loss weighed by
    each batch's rows, ``val_<name>`` each ``eval_metric_ops`` entry; so on the same checkpoint and data
    the values are the hook's.

    Args:
        tf: the ``tensorflow`` module.
        run: the run (its ``preprocessor`` may be None).
        function: the input function (:func:`input_fn_of`).
        plan: the device plan.

    Returns:
        ``(graph, global_step, evaluation, examples)``: ``examples`` reads the rows evaluated after a pass
        (the sum of ``val_loss``'s weights).

    Raises:
        PlacedError: at the function's option, naming it: it raised, returned no dataset, an empty or endless
            one, elements not ``(features, labels)``, or lacks a feature the model_fn reads (exit 2).
        SetupError: the model_fn fails or returns no scalar loss (exit 2).
    """
    from hookrun.runner.graph.build import _fresh_evaluation

    builder, model_fn, params = _builder(run)
    config = run.loaded.config
    graph, global_step, evaluation = _fresh_evaluation(
        tf, config.data.seed, builder, config.graph.builder, {**params, "mode": "eval"}, function, 0, plan,
        model_fn=model_fn, named=False, config=_run_info(run.run_dir, config),
    )
    with graph.as_default():
        counts = [v for v in tf.compat.v1.local_variables() if v.op.name.endswith("loss_metric/count")]
    return graph, global_step, evaluation, counts[0]


def _plain(value: Any) -> Any:
    """A NumPy value as JSON data: arrays as (nested) lists, bytes as UTF-8 text, NaN/inf as null."""
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.dtype.kind in "iub" or (value.dtype.kind == "f" and np.isfinite(value).all()):
            return value.tolist()  # the same lists, at C speed (a 10-float row: 6x faster than item by item)
        return [_plain(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class RecordWriter:
    """Prediction records written as they come, in the format of the output's suffix.

    - ``.jsonl``: one JSON object per line, every key; arrays as (nested) lists, bytes as UTF-8 text (bytes
      that are not UTF-8 as backslash escapes), NaN and infinities as ``null``.
    - ``.csv``: a header of the keys, one row per record; every key one value per example (checked by
      :func:`_split_batch`).

    Args:
        handle: the open text file (``newline=""``).
        keys: the prediction keys, in order.
        suffix: ``.jsonl`` or ``.csv``.
    """

    def __init__(self, handle: Any, keys: list[str], suffix: str) -> None:
        import csv

        self.keys = keys
        self.rows = 0
        self._handle = handle
        self._csv = csv.writer(handle) if suffix == ".csv" else None
        if self._csv is not None:
            self._csv.writerow(keys)

    def write(self, records: list[dict[str, Any]]) -> None:
        """Append these records."""
        for record in records:
            if self._csv is not None:
                self._csv.writerow(["" if (cell := _plain(record[key])) is None else cell for key in self.keys])
            else:
                self._handle.write(
                    json.dumps({key: _plain(record[key]) for key in self.keys}, ensure_ascii=False) + "\n"
                )
        self.rows += len(records)


def predict_with_input_fn(
    run: Any, input_fn: str, output: str | Path, checkpoint: str, overwrite: bool, verbose: bool
) -> Any:
    """Predict every example an input_fn gives; write one record per example (``.jsonl`` or ``.csv``).

    As ``Estimator.predict`` yielded them: a predictions dict gives one record with every key, each value
    the example's row of that tensor (a scalar or an array); a single predictions tensor gives the key
    ``predictions``. A ``tf.compat.v1.train.MonitoredSession`` restores the checkpoint and runs the
    model_fn's ``prediction_hooks`` around each batch, as Estimator's did.

    Returns:
        A :class:`~hookrun.runner.trained.predict.PredictResult` (``columns`` = the keys).

    Raises:
        PlacedError: at ``--input-fn`` naming the function: it raised, returned the wrong type, an empty or
            endless dataset, or lacks a feature the model_fn reads (exit 2).
        SetupError: ``output``'s suffix is not ``.jsonl`` or ``.csv``; a ``.csv`` and a prediction with an
            array per example; predictions whose first dimensions differ; the output exists (exit 2).
    """
    from hookrun.runner.data.source import saved_source
    from hookrun.runner.run_dir.checkpoints import check_checkpoint_fits, restore_errors
    from hookrun.runner.tf_env import import_tensorflow
    from hookrun.runner.trained.output import atomic_file, check_not_replacing, check_output_path
    from hookrun.runner.trained.results import PredictResult
    from hookrun.runner.trained.saved_run import resolve_checkpoint

    target = check_output_path(output, overwrite, "file")
    if target.suffix not in RECORD_FORMATS:
        raise SetupError(
            f"--output {target}: write predictions to a .jsonl file (one JSON record per example, arrays "
            "included) or a .csv (one value per key); got {target.suffix or 'no suffix'}"
        )
    check_not_replacing(target, [run.run_dir], hook_paths=run.hook_paths())
    tf = import_tensorflow(verbose)
    function = input_fn_of(input_fn, "--input-fn")
    prefix, step = resolve_checkpoint(tf, run, checkpoint)
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        v1.train.get_or_create_global_step()
        _b, _m, params = _builder(run)
        source = saved_source(run.loaded, run.preprocessor, run.run_dir)  # either source takes an --input-fn
        result = source.predict_dataset(
            tf, function=function, params=params, run_info=_run_info(run.run_dir, run.loaded.config)
        )
        iterator = None
        if isinstance(result, tf.data.Dataset):
            iterator, features, _labels = _features_of_dataset(tf, function, result, "--input-fn", "predict")
        elif isinstance(result, tuple) and len(result) == 2:
            from hookrun.runner.data.input_fn import _check_structure

            _check_structure(tf, function, result[0], "features", spec=False, optional=False)
            features = result[0]
        else:
            from hookrun.runner.data.input_fn import _check_structure

            _check_structure(tf, function, result, "features", spec=False, optional=False)
            features = result
        spec = _call(tf, run, features, None, "infer", function, "--input-fn")
        predictions = dict(spec.prediction_dict) if spec.prediction_dict else {"predictions": spec.predictions}
        keys = list(predictions)
        variables = _read_variables(tf, graph, list(predictions.values()))
        if iterator is not None:  # started by the scaffold's local_init_op, with the tables
            v1.add_to_collection(v1.GraphKeys.TABLE_INITIALIZERS, iterator.initializer)
        check_checkpoint_fits(tf, prefix, variables)
        # Only what the predictions read is restored (an optimizer the model_fn builds is neither needed nor
        # required of the checkpoint); other global variables (global_step) are initialized, never read.
        unread = [v for v in v1.global_variables() if v not in variables]
        scaffold = v1.train.Scaffold(
            saver=v1.train.Saver(var_list=variables),
            ready_op=v1.report_uninitialized_variables(variables),
            ready_for_local_init_op=v1.report_uninitialized_variables(variables),
            local_init_op=tf.group(
                v1.local_variables_initializer(), v1.tables_initializer(), v1.variables_initializer(unread)
            ),
        )
        creator = v1.train.ChiefSessionCreator(scaffold=scaffold, checkpoint_filename_with_path=prefix)
        started = time.perf_counter()
        with restore_errors(tf, prefix, fix="give a checkpoint of this run"):  # as Estimator.predict: its hooks run
            session = v1.train.MonitoredSession(session_creator=creator, hooks=list(spec.prediction_hooks))
        with session:
            # streamed into a temporary file beside the output, renamed onto it only when every batch is written
            with atomic_file(target) as temporary, open(temporary, "w", newline="", encoding="utf-8") as handle:
                writer = RecordWriter(handle, keys, target.suffix)
                while True:
                    try:
                        batch = session.run(predictions)
                    except tf.errors.OutOfRangeError:
                        break
                    writer.write(_split_batch(batch, keys, target))
                if not writer.rows:
                    raise _error(function, "--input-fn", "gave no example to predict (its dataset ended at once)")
    return PredictResult(
        run_dir=str(run.run_dir), checkpoint=prefix, global_step=step, data=[input_fn], rows=writer.rows,
        output=str(target), columns=keys, seconds=time.perf_counter() - started,
    )


def _split_batch(batch: dict[str, Any], keys: list[str], target: Path) -> list[dict[str, Any]]:
    """One record per example of a batch, as ``Estimator.predict`` (``_extract_batch_length``) split it.

    Raises:
        SetupError: a prediction that is a scalar (no batch dimension) or whose first dimension differs
            from another's; with a ``.csv`` output, one with an array per example.
    """
    import numpy as np

    lengths = {}
    for key in keys:
        value = np.asarray(batch[key])
        if value.ndim == 0:
            raise SetupError(
                f"graph.builder: predictions[{key!r}] is a scalar, not one value per example; give it a batch "
                "dimension (Estimator.predict refused it too)"
            )
        lengths[key] = value.shape[0]
        if target.suffix == ".csv" and value.ndim > 1:
            raise SetupError(
                f"--output {target.name}: predictions[{key!r}] holds {int(np.prod(value.shape[1:]))} values per "
                f"example, a .csv holds one per cell; write --output {target.stem}.jsonl"
            )
    if len(set(lengths.values())) > 1:
        raise SetupError(
            "graph.builder: the predictions' first dimensions differ "
            f"({', '.join(f'{k}: {n}' for k, n in lengths.items())}); each must be the batch's examples"
        )
    count = next(iter(lengths.values()))
    return [{key: batch[key][i] for key in keys} for i in range(count)]


def receiver_of(tf: Any, function: Any, option: str) -> Any:
    """Call a serving_input_fn (no arguments, as ``export_saved_model`` did) and check it returned a receiver.

    What :meth:`hookrun.runner.data.source.InputSource.serving_receiver` gives for ``function``.

    Raises:
        PlacedError: at ``option`` naming the function: it raised (a receiver's ValueError included), or
            returned something other than a ``ServingInputReceiver``/``TensorServingInputReceiver``.
    """
    from hookrun.runner.data.source import _receiver_with

    return _receiver_with(tf, function, option)


def export_with_serving_input_fn(
    run: Any, serving_input_fn: str, option: str, output: str | Path, checkpoint: str, overwrite: bool, verbose: bool
) -> Any:
    """Export a SavedModel whose signatures come from a serving_input_fn's receiver, as ``export_saved_model``.

    Returns:
        An :class:`~hookrun.runner.trained.results.ExportResult`; ``excluded`` names each signature left out
        and why.

    Raises:
        PlacedError: at ``option`` naming the function (see :func:`receiver_of`), or a feature the model_fn
            reads that the receiver does not give (exit 2).
        SetupError: the model_fn's ``export_outputs`` name several signatures and none ``serving_default``
            (Estimator's rule); no signature is servable; the output exists (exit 2). Nothing is written.
    """
    from hookrun.runner.data.source import saved_source
    from hookrun.runner.run_dir.directory import check_usable_path
    from hookrun.runner.tf_env import import_tensorflow
    from hookrun.runner.trained.output import atomic_directory, check_not_replacing, check_output_path
    from hookrun.runner.trained.results import ExportResult
    from hookrun.runner.trained.results import check_assets as _check_assets
    from hookrun.runner.trained.saved_run import resolve_checkpoint
    from hookrun.runner.trained.serving import SERVING_DEFAULT, NoDefaultSignature, build_signature_defs

    started = time.perf_counter()
    target = check_output_path(output, overwrite, "directory")
    check_usable_path(target, "--output", limit=None)
    check_not_replacing(target, [run.run_dir], hook_paths=run.hook_paths())
    tf = import_tensorflow(verbose)
    function = input_fn_of(serving_input_fn, option)
    prefix, step = resolve_checkpoint(tf, run, checkpoint)
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        v1.train.get_or_create_global_step()
        source = saved_source(run.loaded, run.preprocessor, run.run_dir)  # either source takes a serving_input_fn
        receiver = source.serving_receiver(tf, function=function, option=option)
        spec = _call(tf, run, receiver.features, None, "infer", function, option)
        try:
            signatures, excluded = build_signature_defs(
                receiver, spec.export_outputs, spec.prediction_dict or spec.predictions
            )
        except NoDefaultSignature as err:
            raise SetupError(
                f"graph.builder: EstimatorSpec.export_outputs names {', '.join(err.names)} and none "
                f"{SERVING_DEFAULT!r}; name the default one {SERVING_DEFAULT!r} (Estimator's rule)"
            ) from None
        if SERVING_DEFAULT not in signatures:
            raise SetupError(
                f"{option} {serving_input_fn}: the default signature cannot be built on its receiver tensors: "
                f"{excluded.get(SERVING_DEFAULT, '')}"
            )
        variables = v1.global_variables()
        main_op = v1.tables_initializer(name="main_op")
        assets = v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS)
        with v1.Session(graph=graph) as session:
            _check_assets(session, assets)
            _restore(tf, session, prefix, variables)
            with atomic_directory(target) as directory:
                builder = v1.saved_model.Builder(str(directory))
                builder.add_meta_graph_and_variables(
                    session, [v1.saved_model.tag_constants.SERVING], signature_def_map=signatures, main_op=main_op,
                    assets_collection=assets or None, strip_default_attrs=True, clear_devices=True,
                )
                builder.save()
    described = {
        key: {
            "method": signature.method_name,
            "inputs": {name: tf.dtypes.as_dtype(info.dtype).name for name, info in signature.inputs.items()},
            "outputs": {name: tf.dtypes.as_dtype(info.dtype).name for name, info in signature.outputs.items()},
        }
        for key, signature in signatures.items()
    }
    result = ExportResult(
        run_dir=str(run.run_dir), checkpoint=prefix, global_step=step, output=str(target), signatures=described,
        seconds=time.perf_counter() - started, excluded=excluded,
    )
    return result


__all__ = [
    "RECORD_FORMATS",
    "evaluation_from_input_fn",
    "export_with_serving_input_fn",
    "predict_with_input_fn",
    "RecordWriter",
    "receiver_of",
]
