"""The graph ``hookrun predict`` runs and ``hookrun export`` saves: raw columns -> preprocessing -> builder (``infer``).

Mirrors what ``tf.estimator.Estimator.export_saved_model`` built from a ``serving_input_receiver_fn``:
one input tensor per raw column, the run's saved preprocessing as graph ops
(:func:`hookrun.runner.data.streaming.transform_raw_columns`, the transformation training applies),
the builder called in ``infer`` mode (no dropout: deterministic), and named outputs. A run with TFRecord
tensor features (``data.columns`` parse specs) also parses them from serialized records, with the run's own
parse spec, as ``build_parsing_serving_input_receiver_fn`` did (:mod:`hookrun.runner.data.tensor_serving`).

Outputs (every one ``[batch, ...]``):

- ``predictions``: the builder's ``predictions`` (for a model_fn with a dict of predictions, the entry
  named ``predictions``, else the first); ``[batch, 1]`` is flattened to ``[batch]``. The built-in
  regressors give label units, the built-in classifiers the class id (``int64``).
- for a classifier (a built-in one, or a builder whose ``prediction_dict`` has ``probabilities``):
  ``probabilities`` ``float32 [batch, n_classes]`` and ``classes`` ``string [batch]``, the class of the
  highest probability as the label was written (its text for a text label, else the id as text).
- a model_fn's other prediction entries, by their names.

A row with a missing value in a column whose missing-value policy fills nothing (``error`` or ``drop``:
training never saw such a row) gets NaN (float outputs), -1 (integer outputs) or ``""`` (``classes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hookrun.runner.data.reader import CATEGORICAL
from hookrun.runner.data.source import EXAMPLES as EXAMPLES  # the serialized Examples input (and signature)
from hookrun.runner.data.source import op_name
from hookrun.runner.trained.saved_run import SavedRun


@dataclass
class InferenceGraph:
    """A built inference graph (not finalized).

    Attributes:
        graph: the ``tf.Graph``.
        inputs: feature column -> its raw input tensor ``[batch]`` (``float32``/``float64`` numeric, ``string``
            categorical), in the order of ``preprocessing.json``.
        examples: ``string [batch]`` serialized ``tf.train.Example`` placeholder, or None; the raw inputs
            default to its parsed features (``placeholder_with_default``), so feeding either works. A run
            with tensor features needs it fed (they are parsed from it only).
        outputs: output name -> tensor (see the module docstring), ``predictions`` first.
        complete: ``bool [batch]``: no missing value in a column whose policy fills nothing.
        class_names: a classifier's class names (index = class id), else None.
        class_ids: without ``probabilities``, ``predictions`` is integer ``[batch]``: class ids (an argmax),
            not values of the label. With a categorical label (its classes known) ``classes`` holds each
            id's class, as the label was written.
        export_outputs: a model_fn's ``export_outputs`` (signature -> outputs), maybe empty.
        prediction_hooks: a model_fn's ``prediction_hooks``, maybe empty.
        global_step: the ``global_step`` variable (the checkpoint holds it).
    """

    graph: Any
    inputs: dict[str, Any]
    examples: Any
    outputs: dict[str, Any]
    complete: Any
    class_names: list[str] | None
    global_step: Any
    class_ids: bool = False
    export_outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    prediction_hooks: list[Any] = field(default_factory=list)


def _masked(tf: Any, tensor: Any, complete: Any) -> Any:
    """``tensor`` with its rows where ``complete`` is False set to NaN / -1 / ``""`` / False."""
    rank = tensor.shape.rank
    if not rank:
        return tensor
    if tensor.dtype.is_floating:
        filler = tf.constant(float("nan"), tensor.dtype)
    elif tensor.dtype.is_integer:
        filler = tf.constant(-1, tensor.dtype)
    elif tensor.dtype == tf.string:
        filler = tf.constant("")
    elif tensor.dtype == tf.bool:
        filler = tf.constant(False)
    else:
        return tensor
    mask = tf.reshape(complete, [-1] + [1] * (rank - 1))
    return tf.where(mask, tensor, filler)


#: The assertion message of a class id outside the label's classes (predict turns it into a one-line error).
CLASS_ID_OUTSIDE = "graph.builder: a predicted class id is outside the classes of the label"  # no quote: TF escapes it


def _class_values(tf: Any, ids: Any, complete: Any, vocabulary: list[str]) -> Any:
    """The label's class (as written in the data) of each class id; a complete row's id outside them fails.

    Args:
        tf: the ``tensorflow`` module.
        ids: integer ``[batch]`` class ids (index into ``vocabulary``, as training mapped the label).
        complete: ``bool [batch]``; incomplete rows are not checked (their output is masked).
        vocabulary: the label's classes, sorted (class id = index).

    Returns:
        ``string [batch]``.
    """
    ids = tf.cast(ids, tf.int64)
    checked = tf.boolean_mask(ids, complete)
    check = tf.debugging.assert_equal(
        tf.reduce_all((checked >= 0) & (checked < len(vocabulary))), True,
        message=f"{CLASS_ID_OUTSIDE} (0 to {len(vocabulary) - 1})",
    )
    with tf.control_dependencies([check]):
        return tf.gather(tf.constant(vocabulary), tf.clip_by_value(ids, 0, len(vocabulary) - 1))


def _per_row(tf: Any, builder: str, name: str, tensor: Any, rows: Any) -> Any:
    """``tensor`` checked to hold one entry per input row: ``[batch, ...]`` (a runtime assertion for the batch).

    Without it a scalar failed in ``predict`` as an ``internal error``, and a ``[1, ...]`` tensor was
    broadcast by the missing-value mask: every row got the first row's prediction.

    Raises:
        SetupError: ``tensor`` is a scalar, or its first dimension is fixed (the batch is not) (exit 2).
    """
    from hookrun.common.errors import SetupError

    shape = tensor.shape
    if shape.rank == 0 or (shape.rank is not None and shape[0] is not None):
        got = "a scalar" if shape.rank == 0 else f"of shape {shape.as_list()}"
        raise SetupError(
            f"graph.builder: {builder} in infer mode returns the prediction {name!r} {got}; a prediction needs "
            "one entry per input row, shape [batch, ...] (the features' first dimension)"
        )
    check = tf.debugging.assert_equal(
        tf.shape(tensor, out_type=tf.int64)[0], tf.cast(rows, tf.int64),
        message=f"graph.builder: rows of the prediction {name} differ from the input rows",
    )
    with tf.control_dependencies([check]):
        return tf.identity(tensor)


def build_inference_graph(
    tf: Any, run: SavedRun, examples: bool = False, numeric_dtype: str = "float32", source: Any = None
) -> InferenceGraph:
    """Build the inference graph of a run in a fresh ``tf.Graph``.

    Args:
        tf: the ``tensorflow`` module.
        run: the run (its config and saved preprocessing).
        examples: add the serialized ``tf.train.Example`` input (``parse_example``: numeric features as
            ``float_list``, a column declared ``int`` in ``data.columns`` as ``int64_list``, categorical ones as
            ``bytes_list``; an absent feature is a missing value). Always added for a run with TFRecord tensor
            features: they are parsed from it with the run's parse spec
            (:func:`hookrun.runner.data.tensor_serving.serving_receiver`) and join the named features after the
            columns, in spec order, as training gave them.
        numeric_dtype: ``float32`` (the exported signature, and ``hookrun predict``) or ``float64`` (the numbers
            exactly as training read them) for numeric inputs.
        source: the run's input source (default :func:`hookrun.runner.data.source.saved_source` of the run): its
            :meth:`~hookrun.runner.data.source.FileSource.serving_receiver` gives the inputs and the features.

    Returns:
        The graph.

    Raises:
        SetupError: the builder does not import, fails in ``infer`` mode or returns no ``predictions``.
        PlacedError: the run has TFRecord tensor features and a builder taking the dense matrix.
    """
    from hookrun.runner.data.source import saved_source
    from hookrun.runner.data.streaming import named_feature_columns
    from hookrun.runner.graph.build import build_inference, builder_params, features_form
    from hookrun.runner.graph.builders.registry import get_builder
    from hookrun.runner.graph.model_fn import is_model_fn
    from hookrun.runner.graph.run_config import make_run_info

    config = run.loaded.config
    state = run.preprocessor
    v1 = tf.compat.v1
    tensors = config.data.tensor_features
    source = source if source is not None else saved_source(run.loaded, run.preprocessor, run.run_dir)
    graph = tf.Graph()
    with graph.as_default():
        if config.data.seed is not None:
            v1.set_random_seed(config.data.seed)
        global_step = v1.train.get_or_create_global_step()
        builder = get_builder(
            config.graph.builder, run.loaded.base_dir, builder_params(config, run.loaded.base_dir, run.run_dir)
        )
        model_fn = is_model_fn(builder, config.graph.style)
        named = features_form(builder, config.graph.features, model_fn) == "named"
        if tensors and not named:  # training refused it too (streaming.check_one_value_features)
            from hookrun.common.errors import PlacedError

            raise PlacedError(
                f"data.columns.{next(iter(tensors))}",
                f"a tensor feature is not one value per row, and {config.graph.builder} takes the dense matrix; use "
                "a model_fn (it gets named features) or declare `hookrun_features = \"named\"`",
            )
        receiver = source.serving_receiver(tf, examples=examples, numeric_dtype=numeric_dtype, named=named)
        inputs, serialized = receiver.inputs, receiver.examples
        features, complete = receiver.features, receiver.complete
        params = {**builder_params(config, run.loaded.base_dir, run.run_dir), "label_scale": float(state.label_scale)}
        if named:
            params["feature_columns"] = named_feature_columns(state)
        if not named:
            features = tf.identity(features, name="features")
        spec = build_inference(
            tf, builder, config.graph.builder, features, params, model_fn=model_fn,
            config=make_run_info(config, run.run_dir, tf=tf).with_label_classes(state),
        )
        outputs: dict[str, Any] = {}
        class_names = None
        class_ids = False
        with tf.name_scope("outputs"):
            rows = tf.shape(complete)[0]
            spec.prediction_dict = {
                name: tensor if tensor is spec.predictions else _per_row(tf, config.graph.builder, name, tensor, rows)
                for name, tensor in spec.prediction_dict.items()
            }
            predictions = _per_row(tf, config.graph.builder, "predictions", spec.predictions, rows)
            if predictions.shape.rank == 2 and predictions.shape[1] == 1:
                predictions = tf.reshape(predictions, [-1])
            outputs["predictions"] = _masked(tf, predictions, complete)
            probabilities = spec.prediction_dict.get("probabilities")
            if probabilities is not None and probabilities.shape.rank == 2 and probabilities.shape[1] is not None:
                n_classes = int(probabilities.shape[1])
                vocabulary = list(state.label.vocabulary or [])
                class_names = [vocabulary[i] if i < len(vocabulary) else str(i) for i in range(n_classes)]
                ids = tf.argmax(probabilities, axis=1)
                classes = tf.gather(tf.constant(class_names), ids)
                outputs["probabilities"] = _masked(tf, probabilities, complete)
                outputs["classes"] = _masked(tf, classes, complete)
            elif predictions.dtype.is_integer and predictions.shape.rank == 1:  # class ids (an argmax)
                class_ids = True
                vocabulary = list(state.label.vocabulary or []) if state.label.kind == CATEGORICAL else []
                if vocabulary and "classes" not in spec.prediction_dict:
                    outputs["classes"] = _masked(tf, _class_values(tf, predictions, complete, vocabulary), complete)
            for name, tensor in spec.prediction_dict.items():
                if name not in outputs and tensor is not spec.predictions:
                    outputs[name] = _masked(tf, tensor, complete)
            outputs = {name: tf.identity(tensor, name=op_name(name)) for name, tensor in outputs.items()}
    return InferenceGraph(
        graph=graph,
        inputs=inputs,
        examples=serialized,
        outputs=outputs,
        complete=complete,
        class_names=class_names,
        class_ids=class_ids,
        global_step=global_step,
        export_outputs=spec.export_outputs,
        prediction_hooks=spec.prediction_hooks,
    )
