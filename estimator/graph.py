"""The graphs of ``Estimator.evaluate``, ``predict`` and ``export_saved_model`` (TF 1.15's, rebuilt on tf.compat.v1).

Each builds a fresh graph: ``global_step``, the input_fn's tensors, the model_fn in its mode, then a
``MonitoredSession`` restoring the checkpoint (``evaluate`` follows ``tf.compat.v1.train.evaluation``'s
``_evaluate_once``, as Estimator did). Imports TensorFlow when called.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hookrun.runner.graph.model_fn import ModeKeys

logger = logging.getLogger("tensorflow")


class _InitIterator:
    """Run a dataset iterator's initializer after the session is created (Estimator's ``_DatasetInitializerHook``)."""

    def __init__(self, iterator: Any) -> None:
        self._iterator = iterator

    def begin(self) -> None:
        self._initializer = self._iterator.initializer

    def after_create_session(self, session: Any, coord: Any) -> None:
        session.run(self._initializer)

    def before_run(self, run_context: Any) -> None:
        return None

    def after_run(self, run_context: Any, run_values: Any) -> None:
        return None

    def end(self, session: Any) -> None:
        return None


def features_and_labels(tf: Any, result: Any) -> tuple[Any, Any, list[Any]]:
    """An input_fn's result as ``(features, labels, hooks)``; mirrors ``estimator.util.parse_input_fn_result``.

    A dataset gets an initializable iterator (and a hook running its initializer); its elements, or the
    result itself, are ``(features, labels)`` or features alone.
    """
    hooks: list[Any] = []
    if isinstance(result, tf.data.Dataset):
        iterator = tf.compat.v1.data.make_initializable_iterator(result)
        hooks.append(_InitIterator(iterator))
        result = iterator.get_next()
    if isinstance(result, (list, tuple)):
        if len(result) == 2:
            return result[0], result[1], hooks
        if len(result) == 1:
            return result[0], None, hooks
        raise ValueError(f"input_fn should return (features, labels) as a len 2 tuple, not {len(result)} items")
    return result, None, hooks


def _spec(estimator: Any, features: Any, labels: Any, mode: str) -> Any:
    """The model_fn's EstimatorSpec in ``mode``."""
    spec = estimator._call_model_fn(features, labels, mode)
    if isinstance(spec, Mapping):  # hookrun's model_fns may return a dict of the fields
        from hookrun.runner.graph.model_fn import EstimatorSpec

        spec = EstimatorSpec(**spec)
    return spec


def _seed(tf: Any, estimator: Any) -> None:
    seed = estimator._config.tf_random_seed
    if seed is not None:
        tf.compat.v1.set_random_seed(seed)


def _session_creator(tf: Any, checkpoint: str | None, scaffold: Any, config: Any) -> Any:
    return tf.compat.v1.train.ChiefSessionCreator(
        checkpoint_filename_with_path=checkpoint, scaffold=scaffold, config=config
    )


def evaluate_once(
    estimator: Any,
    input_fn: Callable[..., Any],
    steps: int | None,
    hooks: list[Any],
    checkpoint: str | None,
    name: str | None,
) -> dict[str, Any]:
    """One evaluation of ``checkpoint`` (see ``Estimator.evaluate``); writes ``eval[_name]/`` events.

    Raises:
        ValueError: the model_fn gives no ``loss``; a metric named ``loss`` or ``global_step`` besides it.
    """
    from hookrun.runner.tf_env import import_tensorflow

    tf = import_tensorflow(False)
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        _seed(tf, estimator)
        global_step = v1.train.get_or_create_global_step()
        features, labels, input_hooks = features_and_labels(
            tf, estimator._call_input_fn(input_fn, ModeKeys.EVAL)
        )
        spec = _spec(estimator, features, labels, ModeKeys.EVAL)
        if spec.loss is None:
            raise ValueError("model_fn must return an EstimatorSpec with `loss` in eval mode")
        metrics = dict(spec.eval_metric_ops or {})
        for reserved in ("loss", "global_step"):
            if reserved in metrics:
                raise ValueError(f"Metric with name \"{reserved}\" is not allowed, because Estimator already "
                                 "defines a default metric with the same name.")
        metrics["loss"] = v1.metrics.mean(spec.loss)
        update_op = tf.group(*[update for _, update in metrics.values()])
        values = {key: value for key, (value, _) in metrics.items()}
        values["global_step"] = global_step
        final = v1.train.FinalOpsHook(values)  # read after the last batch, in end(), as _evaluate_once did
        all_hooks = [*input_hooks, *hooks, *list(spec.evaluation_hooks or []), final]
        evaluated = 0
        creator = _session_creator(tf, checkpoint, v1.train.Scaffold(), estimator._config.session_config)
        with v1.train.MonitoredSession(session_creator=creator, hooks=all_hooks) as session:
            while not session.should_stop() and (steps is None or evaluated < steps):
                session.run(update_op)  # the data's end raises OutOfRangeError, which the session takes as a stop
                evaluated += 1
    result = {key: (int(value) if key == "global_step" else value) for key, value in final.final_ops_values.items()}
    # Estimator's INFO line after each evaluation (``_dict_to_str``: sorted keys, bytes left out)
    logger.info("Saving dict for global step %d: %s", result["global_step"], ", ".join(
        f"{key} = {value}" for key, value in sorted(result.items()) if not isinstance(value, bytes)
    ))
    _write_eval_summary(tf, estimator.model_dir, name, result)
    return result


_writes = itertools.count(1)


def _write_eval_summary(tf: Any, model_dir: str, name: str | None, result: dict[str, Any]) -> None:
    """Write every scalar of ``result`` to ``model_dir/eval[_name]`` at ``global_step`` (``_write_dict_to_summary``)."""
    import numpy as np

    directory = os.path.join(model_dir, "eval" if not name else f"eval_{name}")  # Estimator.eval_dir
    summary = tf.compat.v1.Summary()
    for key, value in result.items():
        if key == "global_step":
            continue
        if isinstance(value, (np.floating, float, np.integer, int, np.bool_, bool)):
            summary.value.add(tag=key, simple_value=float(value))
    with tf.Graph().as_default():  # a v1 event writer needs a graph context
        # a file of its own: two evaluations in one second would otherwise write the same name
        writer = tf.compat.v1.summary.FileWriter(directory, filename_suffix=f".{os.getpid()}.{next(_writes)}")
        try:
            writer.add_summary(summary, int(result["global_step"]))
        finally:
            writer.close()


def predict_batches(
    estimator: Any,
    input_fn: Callable[..., Any],
    predict_keys: str | Sequence[str] | None,
    hooks: list[Any],
    checkpoint: str | None,
) -> Iterator[tuple[Any, bool]]:
    """Yield ``(batch of predictions, single)`` until the input ends; ``single``: ``predictions`` is one tensor.

    Raises:
        ValueError: a ``predict_keys`` entry names no prediction.
    """
    from hookrun.runner.tf_env import import_tensorflow

    tf = import_tensorflow(False)
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        _seed(tf, estimator)
        v1.train.get_or_create_global_step()
        features, _labels, input_hooks = features_and_labels(
            tf, estimator._call_input_fn(input_fn, ModeKeys.PREDICT)
        )
        spec = _spec(estimator, features, None, ModeKeys.PREDICT)
        predictions = spec.predictions
        single = not isinstance(predictions, Mapping)
        if predict_keys is not None:
            if single:
                raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
            keys = [predict_keys] if isinstance(predict_keys, str) else list(predict_keys)
            missing = [key for key in keys if key not in predictions]
            if missing:
                raise ValueError(f"Expected to run at least one output from {sorted(predictions)}, provided {keys}.")
            predictions = {key: predictions[key] for key in keys}
        all_hooks = [*input_hooks, *hooks, *list(spec.prediction_hooks or [])]
        with v1.train.MonitoredSession(
            session_creator=_session_creator(tf, checkpoint, v1.train.Scaffold(), estimator._config.session_config),
            hooks=all_hooks,
        ) as session:
            while not session.should_stop():
                yield session.run(predictions), single  # the data's end: OutOfRangeError, taken as a stop


def signature_defs(
    tf: Any, receiver: Any, export_outputs: Mapping[str, Any] | None, predictions: Any
) -> dict[str, Any]:
    """The signature map of an export; mirrors ``export_lib.build_all_signature_defs`` (TF 1.15).

    Built by :func:`hookrun.runner.trained.serving.build_signature_defs`, as ``hookrun export`` builds them;
    here with Estimator's messages. ``export_outputs`` values are export outputs (``PredictOutput``,
    ``ClassificationOutput``, ``RegressionOutput`` of :mod:`hookrun.runner.trained.serving`), or tensors /
    dicts of tensors (a ``PredictOutput``). None: ``serving_default`` predicts ``predictions``. One output not named
    ``serving_default`` is also served under that name (``export_lib.get_export_outputs``). Each receiver
    alternative gets ``<alternative>:<output>`` signatures. A signature its inputs do not fit (a Classify or
    Regress output on inputs other than one string tensor) is left out and logged, as TensorFlow did.

    Raises:
        ValueError: several outputs and none named ``serving_default``; no signature fits its inputs.
    """
    from hookrun.runner.trained.serving import SERVING_DEFAULT, NoDefaultSignature, build_signature_defs

    try:
        defs, excluded = build_signature_defs(receiver, export_outputs, predictions)
    except NoDefaultSignature:
        raise ValueError("Multiple export_outputs were provided, but none of them is specified as the default. "
                         "Do this by naming one of them with "
                         f"signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY ({SERVING_DEFAULT!r}).") from None
    for name, why in excluded.items():
        logger.warning("Export includes no signature %r: %s", name, why)
    if not defs:
        raise ValueError("no export_outputs entry fits the serving_input_receiver_fn's inputs (see the log)")
    return defs


def export_saved_model(
    estimator: Any,
    export_dir_base: str,
    serving_input_receiver_fn: Callable[[], Any],
    assets_extra: Mapping[str, str] | None,
    as_text: bool,
    checkpoint: str,
) -> bytes:
    """Write the SavedModel (see ``Estimator.export_saved_model``); returns its directory as bytes."""
    from hookrun.runner.tf_env import import_tensorflow

    tf = import_tensorflow(False)
    v1 = tf.compat.v1
    with tf.Graph().as_default() as graph:
        _seed(tf, estimator)
        v1.train.get_or_create_global_step()
        receiver = serving_input_receiver_fn()
        spec = _spec(estimator, receiver.features, None, ModeKeys.PREDICT)
        defs = signature_defs(tf, receiver, spec.export_outputs, spec.predictions)
        saver = v1.train.Saver(sharded=True)
        export_dir = timestamped_dir(export_dir_base)
        temp_dir = os.path.join(export_dir_base, f"temp-{os.path.basename(export_dir)}")
        with v1.Session(graph=graph, config=estimator._config.session_config) as session:
            saver.restore(session, checkpoint)
            builder = v1.saved_model.Builder(temp_dir)
            builder.add_meta_graph_and_variables(
                session,
                [v1.saved_model.tag_constants.SERVING],
                signature_def_map=defs,
                assets_collection=v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS),
                main_op=v1.tables_initializer(),
                strip_default_attrs=True,
                saver=saver,
            )
            builder.save(as_text)
    _copy_assets_extra(temp_dir, assets_extra)
    os.rename(temp_dir, export_dir)
    return export_dir.encode()


def _copy_assets_extra(export_dir: str, assets_extra: Mapping[str, str] | None) -> None:
    """Copy ``assets_extra`` (destination -> source) into ``export_dir/assets.extra``."""
    for dest, source in (assets_extra or {}).items():
        target = Path(export_dir) / "assets.extra" / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def timestamped_dir(export_dir_base: str) -> str:
    """``export_dir_base/<seconds since the epoch>``, not yet existing (``export.get_timestamped_export_dir``)."""
    for _ in range(10):
        candidate = os.path.join(export_dir_base, str(int(time.time())))
        if not os.path.exists(candidate):
            return candidate
        time.sleep(1)
    raise RuntimeError(f"Failed to obtain a unique export directory name after 10 attempts in {export_dir_base}")


__all__ = ["evaluate_once", "export_saved_model", "features_and_labels", "predict_batches", "signature_defs"]
