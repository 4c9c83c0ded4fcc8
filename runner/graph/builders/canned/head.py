"""TF 1.15's canned heads: the loss, predictions, eval metrics and export outputs of the premade models.

Mirrors ``tensorflow_estimator/python/estimator/canned/head.py`` at r1.15 (the v1 ``_Head`` the v1
``DNNClassifier``, ``LinearClassifier``, ``DNNLinearCombinedClassifier`` and their regressors use):

- :class:`BinaryClassHead`: ``_BinaryLogisticHeadWithSigmoidCrossEntropyLoss`` (``n_classes == 2``);
- :class:`MultiClassHead`: ``_MultiClassHeadWithSoftmaxCrossEntropyLoss`` (``n_classes > 2``);
- :class:`RegressionHead`: ``_RegressionHeadWithMeanSquaredErrorLoss``.

The same ops in the same order, under the same name scopes (``head/predictions/...``, ``metrics/...``),
the same prediction keys, metric keys and export signature names (``serving_default``, ``classification``,
``regression``, ``predict``). ``loss_reduction`` defaults to ``SUM``, as the v1 classes did (TF 2.x's
``*V2`` classes changed it to ``SUM_OVER_BATCH_SIZE``).

Importing this module does not import TensorFlow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hookrun.runner.graph.model_fn import EstimatorSpec, ModeKeys


class PredictionKeys:
    """The keys of a canned head's ``predictions`` dict; ``tf.estimator`` 1.15's ``PredictionKeys``."""

    CLASSES = "classes"
    CLASS_IDS = "class_ids"
    ALL_CLASSES = "all_classes"
    ALL_CLASS_IDS = "all_class_ids"
    LOGISTIC = "logistic"
    LOGITS = "logits"
    PREDICTIONS = "predictions"
    PROBABILITIES = "probabilities"


class MetricKeys:
    """The keys of a canned head's ``eval_metric_ops``; ``tf.estimator`` 1.15's ``MetricKeys``."""

    LOSS = "loss"
    LOSS_MEAN = "average_loss"
    LOSS_REGULARIZATION = "regularization_loss"
    ACCURACY = "accuracy"
    PRECISION = "precision"
    RECALL = "recall"
    ACCURACY_BASELINE = "accuracy_baseline"
    AUC = "auc"
    AUC_PR = "auc_precision_recall"
    LABEL_MEAN = "label/mean"
    PREDICTION_MEAN = "prediction/mean"


#: Signature names of the canned heads' ``export_outputs`` (``tf.saved_model`` signature constants).
SERVING_DEFAULT = "serving_default"
CLASSIFY = "classification"
REGRESS = "regression"
PREDICT = "predict"

#: ``loss_reduction`` names -> ``tf.compat.v1.losses.Reduction`` values (``NONE`` is refused, as in TF 1.15). The
#: values themselves (``tf.compat.v1.losses.Reduction.SUM == "weighted_sum"``) are accepted too.
REDUCTIONS = {
    "sum": "weighted_sum",
    "mean": "weighted_mean",
    "sum_over_batch_size": "weighted_sum_over_batch_size",
    "sum_by_nonzero_weights": "weighted_sum_by_nonzero_weights",
}


def _tf() -> Any:
    from hookrun.runner.tf_env import import_tensorflow

    return import_tensorflow()


def _lookup_ops() -> Any:
    """TensorFlow's ``lookup_ops``, for ``index_table_from_tensor`` and ``index_to_string_table_from_tensor``.

    TF 1.15's heads use them; TF 2 keeps them but no longer exports them under ``tf.compat.v1``).
    """
    from hookrun.hooks.tf_internals import private_module

    return private_module("ops.lookup_ops")


class ExportOutput:
    """One export signature of a canned head: ``method_name`` and its ``outputs`` (name -> tensor).

    Mirrors ``tf.estimator.export.ClassificationOutput`` / ``RegressionOutput`` / ``PredictOutput``: hookrun's
    ``export`` reads ``outputs``; ``method_name`` is TensorFlow Serving's (``tensorflow/serving/classify``,
    ``.../regress``, ``.../predict``), the one ``as_signature_def`` writes.
    """

    method_name = "tensorflow/serving/predict"

    def __init__(self, outputs: Mapping[str, Any]) -> None:
        self.outputs = dict(outputs)

    def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> Any:
        """The ``SignatureDef``: Serving's classify/regress form when ``receiver_tensors`` is one string tensor.

        Args:
            receiver_tensors: input name -> tensor (for classify/regress: one ``string [batch]`` tensor of
                serialized ``tf.train.Example``).

        Returns:
            A ``tensorflow.core.protobuf.meta_graph_pb2.SignatureDef``.
        """
        tf = _tf()
        return tf.compat.v1.saved_model.predict_signature_def(receiver_tensors, self.outputs)


class PredictOutput(ExportOutput):
    """``tf.estimator.export.PredictOutput``: every prediction, method ``tensorflow/serving/predict``."""


class ClassificationOutput(ExportOutput):
    """``tf.estimator.export.ClassificationOutput``: method ``tensorflow/serving/classify``.

    ``scores`` ``float32 [batch, n_classes]`` and ``classes`` ``string [batch, n_classes]``.
    """

    method_name = "tensorflow/serving/classify"

    def __init__(self, scores: Any, classes: Any) -> None:
        super().__init__({"scores": scores, "classes": classes})
        self.scores = scores
        self.classes = classes

    def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> Any:  # noqa: D102 - see ExportOutput
        tf = _tf()
        (examples,) = receiver_tensors.values()
        return tf.compat.v1.saved_model.classification_signature_def(examples, self.classes, self.scores)


class RegressionOutput(ExportOutput):
    """``tf.estimator.export.RegressionOutput``: method ``tensorflow/serving/regress``.

    ``value`` ``float32 [batch, 1]`` (output ``outputs``).
    """

    method_name = "tensorflow/serving/regress"

    def __init__(self, value: Any) -> None:
        super().__init__({"outputs": value})
        self.value = value

    def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> Any:  # noqa: D102 - see ExportOutput
        tf = _tf()
        (examples,) = receiver_tensors.values()
        return tf.compat.v1.saved_model.regression_signature_def(examples, self.value)


def _reduction(loss_reduction: str) -> str:
    """Check ``loss_reduction`` (``tf.compat.v1.losses.Reduction``); TF 1.15 refused ``NONE``."""
    value = str(loss_reduction).lower()
    if value in REDUCTIONS.values():
        return value
    if value not in REDUCTIONS:
        raise ValueError(f"Invalid loss_reduction: {loss_reduction}; one of {', '.join(REDUCTIONS)}")
    return REDUCTIONS[value]


def _check_labels(tf: Any, labels: Any, logits: Any, expected_dimension: int) -> Any:
    """``_check_dense_labels_match_logits_and_reshape``: labels ``[batch]`` become ``[batch, 1]``, checked."""
    if labels is None:
        raise ValueError(
            "You must provide a labels Tensor. Given: None. Suggested troubleshooting steps: Check that your data "
            "contain your label feature. Check that your input_fn properly parses and returns labels."
        )
    v1 = tf.compat.v1
    with tf.name_scope("labels") as scope:
        labels = v1.convert_to_tensor_or_sparse_tensor(labels)
        if isinstance(labels, tf.SparseTensor):
            raise ValueError("SparseTensor labels are not supported; use tf.sparse.to_dense() in the input_fn")
        if (
            labels.shape.ndims is not None
            and logits.shape.ndims is not None
            and (labels.shape.ndims == logits.shape.ndims - 1)
        ):
            labels = tf.expand_dims(labels, -1)
        message = (
            f"labels shape must be [D0, D1, ... DN, {expected_dimension}]. Suggested Fix: check your n_classes "
            "argument to the estimator and/or the shape of your label."
        )
        assert_rank = v1.assert_rank_at_least(labels, 2, message=message)
        with tf.control_dependencies([assert_rank]):
            static = labels.shape
            if static.ndims is not None and static[-1] is not None and static[-1] != expected_dimension:
                raise ValueError(
                    f"Mismatched label shape. Expected labels dimension={expected_dimension}.  Received {static[-1]}."
                )
            expected = tf.concat([tf.shape(logits)[:-1], [expected_dimension]], axis=0)
            assert_dimension = v1.assert_equal(expected, tf.shape(labels), message=message)
            with tf.control_dependencies([assert_dimension]):
                return tf.identity(labels, name=scope)


def _weights(tf: Any, features: Any, weight_column: Any, logits: Any, per_logit: bool = False) -> Any:
    """``_get_weights_and_check_match_logits``: the ``weight_column``'s values ``[batch, 1]``, or ``1.``."""
    v1 = tf.compat.v1
    with tf.name_scope("weights") as scope:
        if weight_column is None:
            return 1.0
        fc = v1.feature_column
        if isinstance(weight_column, str):
            weight_column = fc.numeric_column(key=weight_column, shape=(1,))
        from hookrun.hooks.tf_internals import private_module

        fc_v1 = private_module("feature_column.feature_column")
        fc_v2 = private_module("feature_column.feature_column_v2")

        if not isinstance(weight_column, (fc_v2.NumericColumn, fc_v1._NumericColumn)):
            raise TypeError(
                f"Weight column must be either a string or _NumericColumn. Given type: {type(weight_column)}."
            )
        weights = weight_column._get_dense_tensor(fc_v1._LazyBuilder(features))
        if not (weights.dtype.is_floating or weights.dtype.is_integer):
            raise ValueError(f"Weight column should be castable to float. Given dtype: {weights.dtype}")
        weights = tf.cast(weights, tf.float32, name="weights")
        weights_shape = tf.shape(weights, name="weights_shape")
        logits_shape = tf.shape(logits, name="logits_shape")
        message = "weights shape must be [D0, D1, ... DN] or [D0, D1, ... DN, 1]"
        if (
            weights.shape.ndims is not None
            and logits.shape.ndims is not None
            and (weights.shape.ndims == logits.shape.ndims - 1)
        ):
            check = v1.assert_equal(logits_shape[:-1], weights_shape, message=message)
            with tf.control_dependencies([check]):
                return tf.expand_dims(weights, -1, name=scope)
        supported = tf.concat([logits_shape[:-1], [1]], axis=0)
        if per_logit:
            condition = tf.reduce_any(
                [
                    tf.reduce_all(tf.equal(logits_shape, weights_shape)),
                    tf.reduce_all(tf.equal(supported, weights_shape)),
                ]
            )
            check = v1.Assert(condition, [message, "logits_shape: ", logits_shape, "weights_shape: ", weights_shape])
        else:
            check = v1.assert_equal(supported, weights_shape, message=message)
        with tf.control_dependencies([check]):
            return tf.identity(weights, name=scope)


def _check_logits(tf: Any, logits: Any, dimension: int) -> Any:
    """``_check_logits_final_dim``: logits ``[D0, ... DN, dimension]`` as ``float32``."""
    v1 = tf.compat.v1
    with tf.name_scope("logits") as scope:
        logits = tf.cast(logits, tf.float32)
        shape = tf.shape(logits)
        message = "logits shape must be [D0, D1, ... DN, logits_dimension]"
        with tf.control_dependencies([v1.assert_rank_at_least(logits, 2, data=[shape], message=message)]):
            static = logits.shape
            if static.ndims is not None and static[-1] is not None:
                if static[-1] != dimension:
                    raise ValueError(f"logits shape must be [D0, D1, ... DN, logits_dimension], got {static}.")
                return logits
            check = v1.assert_equal(dimension, shape[-1], data=[shape], message=message)
            with tf.control_dependencies([check]):
                return tf.identity(logits, name=scope)


def _assert_range(tf: Any, labels: Any, n_classes: int) -> Any:
    v1 = tf.compat.v1
    with tf.name_scope("assert_range"):
        below = v1.assert_less_equal(
            labels, tf.convert_to_tensor(n_classes - 1, dtype=labels.dtype), message="Labels must <= n_classes - 1"
        )
        above = v1.assert_non_negative(labels, message="Labels must >= 0")
        with tf.control_dependencies((below, above)):
            return tf.identity(labels)


def _all_class_ids(tf: Any, logits: Any, n_classes: int) -> Any:
    batch = tf.shape(logits)[0]
    return tf.tile(tf.expand_dims(tf.range(n_classes), axis=0), [batch, 1])


def _all_classes(tf: Any, logits: Any, n_classes: int, label_vocabulary: Sequence[str] | None) -> Any:
    batch = tf.shape(logits)[0]
    classes = list(label_vocabulary) if label_vocabulary else tf.strings.as_string(tf.range(n_classes))
    return tf.tile(tf.expand_dims(classes, axis=0), [batch, 1])


def _classes(tf: Any, class_ids: Any, label_vocabulary: Sequence[str] | None) -> Any:
    """Each row's class as text: the ``label_vocabulary`` entry of its id, else the id as a string."""
    if label_vocabulary:
        table = _lookup_ops().index_to_string_table_from_tensor(
            vocabulary_list=label_vocabulary, name="class_string_lookup"
        )
        return table.lookup(class_ids)
    return tf.strings.as_string(class_ids, name="str_classes")


def _classification_output(tf: Any, scores: Any, n_classes: int, label_vocabulary: Sequence[str] | None) -> Any:
    batch = tf.shape(scores)[0]
    classes = list(label_vocabulary) if label_vocabulary else tf.strings.as_string(tf.range(n_classes))
    return ClassificationOutput(scores=scores, classes=tf.tile(tf.expand_dims(classes, axis=0), [batch, 1]))


def _labels_mean(tf: Any, labels: Any, weights: Any, name: str) -> Any:
    v1 = tf.compat.v1
    with tf.name_scope(name) as scope:
        labels = tf.cast(labels, tf.float32, name="labels")
        if weights is not None:
            weights = _broadcast(tf, weights, labels)
        return v1.metrics.mean(labels, weights=weights, name=scope)


def _broadcast(tf: Any, weights: Any, values: Any) -> Any:
    from hookrun.hooks.tf_internals import private_module

    return private_module("ops.weights_broadcast_ops").broadcast_weights(weights, values)


def _predictions_mean(tf: Any, predictions: Any, weights: Any, name: str) -> Any:
    v1 = tf.compat.v1
    with tf.name_scope(name) as scope:
        predictions = tf.cast(predictions, tf.float32, name="predictions")
        if weights is not None:
            weights = _broadcast(tf, weights, predictions)
        return v1.metrics.mean(predictions, weights=weights, name=scope)


def _auc(tf: Any, labels: Any, predictions: Any, weights: Any, curve: str, name: str) -> Any:
    from hookrun.runner.graph.builders.heads import _without_deprecation_notice_of

    v1 = tf.compat.v1
    with tf.name_scope(name) as scope:
        predictions = tf.cast(predictions, tf.float32, name="predictions")
        if weights is not None:
            weights = _broadcast(tf, weights, predictions)
        with _without_deprecation_notice_of("auc"):
            return v1.metrics.auc(labels=labels, predictions=predictions, weights=weights, curve=curve, name=scope)


def _accuracy_baseline(tf: Any, labels_mean: tuple[Any, Any]) -> tuple[Any, Any]:
    with tf.name_scope("accuracy_baseline"):
        value, update = labels_mean
        return tf.maximum(value, 1.0 - value, name="value"), tf.maximum(update, 1 - update, name="update_op")


def _append_update_ops(tf: Any, train_op: Any) -> Any:
    v1 = tf.compat.v1
    update_ops = v1.get_collection(v1.GraphKeys.UPDATE_OPS)
    if update_ops:
        return tf.group(train_op, *update_ops)
    return train_op


class Head:
    """The common part of TF 1.15's ``_Head``: ``create_estimator_spec``.

    Attributes:
        logits_dimension: the width of the logits the model must produce.
        loss_reduction: how the per-example losses are reduced (``tf.compat.v1.losses.Reduction``, default ``sum``).
    """

    logits_dimension: int = 1

    def __init__(self, weight_column: Any = None, loss_reduction: str = "sum", name: str | None = None) -> None:
        self._weight_column = weight_column
        self.loss_reduction = _reduction(loss_reduction)
        self._name = name

    def _summary_key(self, key: str) -> str:
        return f"{key}/{self._name}" if self._name else key

    def create_loss(self, features: Any, mode: str, logits: Any, labels: Any) -> tuple[Any, Any, Any, Any]:
        """``(training_loss, unreduced_loss, weights, processed_labels)``, as ``_Head.create_loss``."""
        raise NotImplementedError

    def _train_op(self, tf: Any, loss: Any, optimizer: Any, train_op_fn: Any) -> Any:
        v1 = tf.compat.v1
        if optimizer is not None:
            if train_op_fn is not None:
                raise ValueError("train_op_fn and optimizer cannot both be set.")
            train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        elif train_op_fn is not None:
            train_op = train_op_fn(loss)
        else:
            raise ValueError("train_op_fn and optimizer cannot both be None.")
        return _append_update_ops(tf, train_op)

    def _train_summaries(self, tf: Any, training_loss: Any, unreduced_loss: Any, weights: Any) -> None:
        """Under ``SUM``, the ``average_loss`` scalar summary, as TF 1.15 wrote it.

        TF 1.15's head also wrote a ``loss`` summary, and Estimator skipped its own when one existed; hookrun's
        ``summary_saver`` writes ``loss`` itself, so the head leaves it out (one ``loss`` tag, as under Estimator).
        """
        v1 = tf.compat.v1
        mean_loss = None
        if self.loss_reduction == REDUCTIONS["sum"]:
            example_weight_sum = tf.reduce_sum(weights * tf.ones_like(unreduced_loss))
            mean_loss = training_loss / example_weight_sum
        with tf.name_scope(""):
            if mean_loss is not None:
                v1.summary.scalar(self._summary_key(MetricKeys.LOSS_MEAN), mean_loss)

    def _reduce(self, tf: Any, unweighted_loss: Any, weights: Any) -> Any:
        return tf.compat.v1.losses.compute_weighted_loss(
            unweighted_loss, weights=weights, reduction=self.loss_reduction
        )

    def create_estimator_spec(
        self,
        features: Mapping[str, Any],
        mode: str,
        logits: Any,
        labels: Any = None,
        optimizer: Any = None,
        train_op_fn: Any = None,
    ) -> EstimatorSpec:
        """The ``EstimatorSpec`` of the head in ``mode``; ``_Head.create_estimator_spec`` of TF 1.15.

        Args:
            features: the features dict (the ``weight_column`` is read from it).
            mode: ``ModeKeys.TRAIN``, ``EVAL`` or ``PREDICT``.
            logits: ``float32 [batch, logits_dimension]``.
            labels: ``[batch, 1]`` or ``[batch]`` (class ids, label strings with a ``label_vocabulary``, or
                values); required in ``train`` and ``eval``.
            optimizer: a ``tf.compat.v1.train.Optimizer``: ``train_op = optimizer.minimize(loss, global_step)``.
            train_op_fn: ``loss -> train_op``, when ``optimizer`` is None.

        Returns:
            A :class:`hookrun.runner.EstimatorSpec`.

        Raises:
            ValueError: labels missing or of the wrong shape, both or neither of ``optimizer`` and
                ``train_op_fn`` in ``train`` mode.
        """
        tf = _tf()
        with tf.name_scope(self._name or "head"):
            logits, predictions = self._predictions(tf, logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(
                    mode=ModeKeys.PREDICT, predictions=predictions, export_outputs=self._export_outputs(tf, predictions)
                )
            training_loss, unreduced_loss, weights, processed = self.create_loss(features, mode, logits, labels)
            if mode == ModeKeys.EVAL:
                with tf.name_scope("metrics"):
                    metrics = self._eval_metric_ops(tf, processed, predictions, weights, unreduced_loss)
                return EstimatorSpec(
                    mode=ModeKeys.EVAL, predictions=predictions, loss=training_loss, eval_metric_ops=metrics
                )
            train_op = self._train_op(tf, training_loss, optimizer, train_op_fn)
            self._train_summaries(tf, training_loss, unreduced_loss, weights)
        return EstimatorSpec(mode=ModeKeys.TRAIN, predictions=predictions, loss=training_loss, train_op=train_op)

    def _predictions(self, tf: Any, logits: Any) -> tuple[Any, dict[str, Any]]:
        """``(checked logits, predictions dict)`` under ``predictions/``, as the TF 1.15 head builds them."""
        raise NotImplementedError

    def _export_outputs(self, tf: Any, predictions: dict[str, Any]) -> dict[str, ExportOutput]:
        """The ``infer``-mode signatures: ``serving_default``, ``classification``/``regression``, ``predict``."""
        raise NotImplementedError

    def _eval_metric_ops(
        self, tf: Any, labels: Any, predictions: dict[str, Any], weights: Any, unreduced_loss: Any
    ) -> dict[str, Any]:
        """The ``eval``-mode metrics by TF 1.15's ``MetricKeys`` (under ``metrics/``)."""
        raise NotImplementedError


class BinaryClassHead(Head):
    """``_BinaryLogisticHeadWithSigmoidCrossEntropyLoss`` of TF 1.15: one logit, sigmoid cross-entropy.

    Args:
        weight_column: a feature key or a ``numeric_column``: each example's loss is multiplied by it.
        label_vocabulary: the label's strings, in class-id order (labels are then ``string``); else labels are
            ``0``/``1`` (integer or float in [0, 1]).
        loss_reduction: ``tf.compat.v1.losses.Reduction`` name, default ``sum`` (TF 1.15's).
        name: head name (suffix of summary and metric keys).
    """

    logits_dimension = 1

    def __init__(
        self,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        loss_reduction: str = "sum",
        name: str | None = None,
    ) -> None:
        super().__init__(weight_column, loss_reduction, name)
        self._label_vocabulary = list(label_vocabulary) if label_vocabulary else None

    def create_loss(self, features: Any, mode: str, logits: Any, labels: Any) -> tuple[Any, Any, Any, Any]:
        """See :meth:`Head.create_loss`."""
        tf = _tf()
        logits = tf.convert_to_tensor(logits)
        labels = _check_labels(tf, labels, logits, 1)
        if self._label_vocabulary is not None:
            labels = (
                _lookup_ops()
                .index_table_from_tensor(vocabulary_list=tuple(self._label_vocabulary), name="class_id_lookup")
                .lookup(labels)
            )
        labels = tf.cast(labels, tf.float32)
        labels = _assert_range(tf, labels, 2)
        unweighted = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        weights = _weights(tf, features, self._weight_column, logits)
        return self._reduce(tf, unweighted, weights), unweighted, weights, labels

    def _predictions(self, tf: Any, logits: Any) -> tuple[Any, dict[str, Any]]:
        keys = PredictionKeys
        with tf.name_scope("predictions"):
            logits = _check_logits(tf, logits, self.logits_dimension)
            logistic = tf.sigmoid(logits, name=keys.LOGISTIC)
            two_class_logits = tf.concat((tf.zeros_like(logits), logits), axis=-1, name="two_class_logits")
            probabilities = tf.nn.softmax(two_class_logits, name=keys.PROBABILITIES)
            class_ids = tf.expand_dims(tf.argmax(two_class_logits, axis=-1, name=keys.CLASS_IDS), axis=-1)
            all_class_ids = _all_class_ids(tf, logits, 2)
            all_classes = _all_classes(tf, logits, 2, self._label_vocabulary)
            return logits, {
                keys.LOGITS: logits,
                keys.LOGISTIC: logistic,
                keys.PROBABILITIES: probabilities,
                keys.CLASS_IDS: class_ids,
                keys.CLASSES: _classes(tf, class_ids, self._label_vocabulary),
                keys.ALL_CLASS_IDS: all_class_ids,
                keys.ALL_CLASSES: all_classes,
            }

    def _export_outputs(self, tf: Any, predictions: dict[str, Any]) -> dict[str, ExportOutput]:
        classifier = _classification_output(tf, predictions[PredictionKeys.PROBABILITIES], 2, self._label_vocabulary)
        return {
            SERVING_DEFAULT: classifier,
            CLASSIFY: classifier,
            REGRESS: RegressionOutput(value=predictions[PredictionKeys.LOGISTIC]),
            PREDICT: PredictOutput(predictions),
        }

    def _eval_metric_ops(
        self, tf: Any, labels: Any, predictions: dict[str, Any], weights: Any, unreduced_loss: Any
    ) -> dict[str, Any]:
        v1 = tf.compat.v1
        keys = MetricKeys
        key = self._summary_key
        logistic, class_ids = predictions[PredictionKeys.LOGISTIC], predictions[PredictionKeys.CLASS_IDS]
        labels_mean = _labels_mean(tf, labels, weights, keys.LABEL_MEAN)
        return {
            key(keys.LOSS_MEAN): v1.metrics.mean(values=unreduced_loss, weights=weights, name=keys.LOSS_MEAN),
            key(keys.ACCURACY): v1.metrics.accuracy(
                labels=labels, predictions=class_ids, weights=weights, name=keys.ACCURACY
            ),
            key(keys.PRECISION): v1.metrics.precision(
                labels=labels, predictions=class_ids, weights=weights, name=keys.PRECISION
            ),
            key(keys.RECALL): v1.metrics.recall(
                labels=labels, predictions=class_ids, weights=weights, name=keys.RECALL
            ),
            key(keys.PREDICTION_MEAN): _predictions_mean(tf, logistic, weights, keys.PREDICTION_MEAN),
            key(keys.LABEL_MEAN): labels_mean,
            key(keys.ACCURACY_BASELINE): _accuracy_baseline(tf, labels_mean),
            key(keys.AUC): _auc(tf, labels, logistic, weights, "ROC", keys.AUC),
            key(keys.AUC_PR): _auc(tf, labels, logistic, weights, "PR", keys.AUC_PR),
        }


class MultiClassHead(Head):
    """``_MultiClassHeadWithSoftmaxCrossEntropyLoss`` of TF 1.15: ``n_classes`` logits, softmax cross-entropy.

    Args:
        n_classes: number of classes (> 2).
        weight_column, label_vocabulary, loss_reduction, name: as :class:`BinaryClassHead`.

    Raises:
        ValueError: ``n_classes`` <= 2.
    """

    def __init__(
        self,
        n_classes: int,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        loss_reduction: str = "sum",
        name: str | None = None,
    ) -> None:
        if n_classes is None:
            raise ValueError("n_classes cannot be None")
        if int(n_classes) <= 2:
            raise ValueError(f"n_classes must be > 2: {n_classes}.")
        super().__init__(weight_column, loss_reduction, name)
        self.n_classes = int(n_classes)
        self.logits_dimension = self.n_classes
        self._label_vocabulary = list(label_vocabulary) if label_vocabulary else None

    def _label_ids(self, tf: Any, labels: Any) -> Any:
        if self._label_vocabulary is None:
            if not labels.dtype.is_integer:
                raise ValueError(f"Labels dtype should be integer. Instead got {labels.dtype}.")
            ids = labels
        else:
            if labels.dtype != tf.string:
                raise ValueError(f"Labels dtype should be string if there is a vocabulary. Instead got {labels.dtype}")
            ids = (
                _lookup_ops()
                .index_table_from_tensor(vocabulary_list=tuple(self._label_vocabulary), name="class_id_lookup")
                .lookup(labels)
            )
        return _assert_range(tf, ids, self.n_classes)

    def create_loss(self, features: Any, mode: str, logits: Any, labels: Any) -> tuple[Any, Any, Any, Any]:
        """See :meth:`Head.create_loss`."""
        tf = _tf()
        logits = tf.convert_to_tensor(logits)
        labels = _check_labels(tf, labels, logits, 1)
        label_ids = self._label_ids(tf, labels)
        unweighted = tf.compat.v1.losses.sparse_softmax_cross_entropy(
            labels=label_ids, logits=logits, reduction=tf.compat.v1.losses.Reduction.NONE
        )
        unweighted = tf.expand_dims(unweighted, axis=-1)
        weights = _weights(tf, features, self._weight_column, logits)
        return self._reduce(tf, unweighted, weights), unweighted, weights, label_ids

    def _predictions(self, tf: Any, logits: Any) -> tuple[Any, dict[str, Any]]:
        keys = PredictionKeys
        logits = _check_logits(tf, logits, self.logits_dimension)
        with tf.name_scope("predictions"):
            all_class_ids = _all_class_ids(tf, logits, self.n_classes)
            all_classes = _all_classes(tf, logits, self.n_classes, self._label_vocabulary)
            class_ids = tf.expand_dims(tf.argmax(logits, axis=-1, name=keys.CLASS_IDS), axis=-1)
            classes = _classes(tf, class_ids, self._label_vocabulary)
            probabilities = tf.nn.softmax(logits, name=keys.PROBABILITIES)
            return logits, {
                keys.LOGITS: logits,
                keys.PROBABILITIES: probabilities,
                keys.CLASS_IDS: class_ids,
                keys.CLASSES: classes,
                keys.ALL_CLASS_IDS: all_class_ids,
                keys.ALL_CLASSES: all_classes,
            }

    def _export_outputs(self, tf: Any, predictions: dict[str, Any]) -> dict[str, ExportOutput]:
        scores = predictions[PredictionKeys.PROBABILITIES]
        classifier = _classification_output(tf, scores, self.n_classes, self._label_vocabulary)
        return {SERVING_DEFAULT: classifier, CLASSIFY: classifier, PREDICT: PredictOutput(predictions)}

    def _eval_metric_ops(
        self, tf: Any, labels: Any, predictions: dict[str, Any], weights: Any, unreduced_loss: Any
    ) -> dict[str, Any]:
        v1 = tf.compat.v1
        class_ids = predictions[PredictionKeys.CLASS_IDS]
        return {
            self._summary_key(MetricKeys.LOSS_MEAN): v1.metrics.mean(
                values=unreduced_loss, weights=weights, name=MetricKeys.LOSS_MEAN
            ),
            self._summary_key(MetricKeys.ACCURACY): v1.metrics.accuracy(
                labels=labels, predictions=class_ids, weights=weights, name=MetricKeys.ACCURACY
            ),
        }


class RegressionHead(Head):
    """``_RegressionHeadWithMeanSquaredErrorLoss`` of TF 1.15: squared error, predictions the logits.

    Args:
        label_dimension: the label's width (>= 1).
        weight_column, loss_reduction, name: as :class:`BinaryClassHead`.

    Raises:
        ValueError: ``label_dimension`` < 1.
    """

    def __init__(
        self,
        label_dimension: int = 1,
        weight_column: Any = None,
        loss_reduction: str = "sum",
        name: str | None = None,
    ) -> None:
        if int(label_dimension) < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        super().__init__(weight_column, loss_reduction, name)
        self.logits_dimension = int(label_dimension)

    def create_loss(self, features: Any, mode: str, logits: Any, labels: Any) -> tuple[Any, Any, Any, Any]:
        """See :meth:`Head.create_loss`."""
        tf = _tf()
        logits = tf.convert_to_tensor(logits)
        labels = _check_labels(tf, labels, logits, self.logits_dimension)
        labels = tf.cast(labels, tf.float32)
        unweighted = tf.compat.v1.losses.mean_squared_error(
            labels=labels, predictions=logits, reduction=tf.compat.v1.losses.Reduction.NONE
        )
        weights = _weights(tf, features, self._weight_column, logits, per_logit=True)
        return self._reduce(tf, unweighted, weights), unweighted, weights, labels

    def _predictions(self, tf: Any, logits: Any) -> tuple[Any, dict[str, Any]]:
        logits = _check_logits(tf, logits, self.logits_dimension)
        return logits, {PredictionKeys.PREDICTIONS: logits}

    def _export_outputs(self, tf: Any, predictions: dict[str, Any]) -> dict[str, ExportOutput]:
        regression = RegressionOutput(value=predictions[PredictionKeys.PREDICTIONS])
        return {SERVING_DEFAULT: regression, REGRESS: regression, PREDICT: PredictOutput(predictions)}

    def _eval_metric_ops(
        self, tf: Any, labels: Any, predictions: dict[str, Any], weights: Any, unreduced_loss: Any
    ) -> dict[str, Any]:
        v1 = tf.compat.v1
        key = self._summary_key
        predicted = predictions[PredictionKeys.PREDICTIONS]
        return {
            key(MetricKeys.LOSS_MEAN): v1.metrics.mean(values=unreduced_loss, weights=weights),
            key(MetricKeys.PREDICTION_MEAN): _predictions_mean(tf, predicted, weights, MetricKeys.PREDICTION_MEAN),
            key(MetricKeys.LABEL_MEAN): v1.metrics.mean(values=labels, weights=weights),
        }


def binary_or_multi_class_head(
    n_classes: int, weight_column: Any, label_vocabulary: Sequence[str] | None, loss_reduction: str
) -> Head:
    """``_binary_logistic_or_multi_class_head`` of TF 1.15.

    :class:`BinaryClassHead` for 2 classes, else :class:`MultiClassHead`.
    """
    if n_classes == 2:
        return BinaryClassHead(weight_column, label_vocabulary, loss_reduction)
    return MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction)
