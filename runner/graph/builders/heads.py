"""The dense built-in builders' hidden layers and heads, on :mod:`hookrun.runner.graph.layers`."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from hookrun.runner.graph.layers import dense, dropout


def hidden_layers(tf: Any, inputs: Any, params: dict[str, Any]) -> Any:
    """The hidden layers of a DNN builder: ``dense`` + activation per entry of ``hidden_units``, with dropout.

    Dropout (``tf.nn.dropout``, rate ``params["dropout"]``) follows each hidden layer only when
    ``params["mode"]`` is ``"train"``; the evaluation graph (mode ``"eval"``) uses every unit.

    Args:
        tf: the ``tensorflow`` module.
        inputs: ``float32 [batch, n_features]``.
        params: ``hidden_units`` (default [64, 32]), ``activation`` (default ``relu``), ``dropout``
            (fraction, default 0), ``mode`` (``train`` or ``eval``, set by the runner).

    Returns:
        ``float32 [batch, hidden_units[-1]]``; variables ``hidden_<i>/kernel`` and ``hidden_<i>/bias``.
    """
    rate = float(params.get("dropout", 0.0))
    mode = params.get("mode", "train")
    net = inputs
    for index, units in enumerate(params.get("hidden_units", [64, 32])):
        net = dense(net, int(units), f"hidden_{index}", params.get("activation", "relu"))
        net = dropout(net, rate, mode, name=f"dropout_{index}")
    return net


def l2_penalty(tf: Any, scale: float) -> Any:
    """``scale * sum(||W||^2 / 2)`` over the trainable kernels, or a zero constant when ``scale`` is 0."""
    if scale <= 0:
        return tf.constant(0.0)
    kernels = [v for v in tf.compat.v1.trainable_variables() if v.op.name.endswith("/kernel")]
    return scale * tf.add_n([tf.nn.l2_loss(k) for k in kernels])


def regression_head(tf: Any, output: Any, labels: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Mean squared error loss; batch ``mse``, ``rmse``, ``mae`` and, in evaluation, streaming ones.

    Mirrors ``tf.estimator.RegressionHead``. The model is trained on labels divided by
    ``params["label_scale"]`` (``data.label_scale``); the loss stays in those training units while
    ``predictions`` and every metric are multiplied back into the label's units.

    Args:
        tf: the ``tensorflow`` module.
        output: ``float32 [batch, 1]``, the model's output (training units).
        labels: ``float32 [batch, 1]`` (training units).
        params: ``l2`` (penalty scale, default 0), ``label_scale`` (default 1), ``mode``
            (``train`` or ``eval``).

    Returns:
        A spec dict: ``loss`` (MSE in training units + L2 penalty), ``predictions`` (label units),
        ``metrics`` (``mse`` in label units squared, ``rmse`` and ``mae`` in label units: this batch)
        and, in ``eval`` mode, ``eval_metrics``: ``rmse``, ``mae`` as
        ``tf.compat.v1.metrics.root_mean_squared_error`` / ``mean_absolute_error`` ``(value, update_op)``
        pairs over the whole evaluation, in label units.
    """
    scale = float(params.get("label_scale", 1.0))
    error = output - labels
    mse = tf.reduce_mean(tf.square(error))
    loss = tf.identity(mse + l2_penalty(tf, float(params.get("l2", 0.0))), name="loss")
    metrics = {
        "mse": tf.multiply(mse, scale * scale, name="mse"),
        "rmse": tf.multiply(tf.sqrt(mse), scale, name="rmse"),
        "mae": tf.multiply(tf.reduce_mean(tf.abs(error)), scale, name="mae"),
    }
    spec: dict[str, Any] = {
        "loss": loss,
        "predictions": tf.multiply(output, scale, name="predictions"),
        "metrics": metrics,
    }
    if params.get("mode") == "eval":
        rmse, rmse_update = tf.compat.v1.metrics.root_mean_squared_error(labels, output, name="rmse_metric")
        mae, mae_update = tf.compat.v1.metrics.mean_absolute_error(labels, output, name="mae_metric")
        spec["eval_metrics"] = {"rmse": (rmse * scale, rmse_update), "mae": (mae * scale, mae_update)}
    return spec


def batch_auc(tf: Any, scores: Any, positive: Any) -> Any:
    """Area under the ROC curve of one batch: the share of (positive, negative) pairs ranked right, ties 1/2.

    Args:
        tf: the ``tensorflow`` module.
        scores: ``float32 [batch]``, the probability of class 1.
        positive: ``bool [batch]``, the label is class 1.

    Returns:
        Scalar ``float32`` in [0, 1]; 0.5 when the batch holds one class only (undefined).
    """
    diff = scores[:, None] - scores[None, :]
    wins = tf.cast(diff > 0, tf.float32) + 0.5 * tf.cast(tf.equal(diff, 0.0), tf.float32)
    pairs = tf.cast(tf.logical_and(positive[:, None], tf.logical_not(positive)[None, :]), tf.float32)
    count = tf.reduce_sum(pairs)
    return tf.where(count > 0, tf.reduce_sum(wins * pairs) / tf.maximum(count, 1.0), 0.5)


def classification_head(tf: Any, logits: Any, labels: Any, n_classes: int, params: dict[str, Any]) -> dict[str, Any]:
    """Softmax cross-entropy loss; batch ``accuracy`` (and ``auc`` for two classes) and streaming ones in evaluation.

    Mirrors ``tf.estimator.MultiClassHead`` (``BinaryClassHead``'s AUC for two classes).

    Args:
        tf: the ``tensorflow`` module.
        logits: ``float32 [batch, n_classes]``.
        labels: ``float32 [batch, 1]`` holding class ids ``0 .. n_classes-1``.
        n_classes: number of classes (count, >= 2).
        params: ``l2`` (penalty scale, default 0), ``mode`` (``train`` or ``eval``).

    Returns:
        A spec dict: ``loss`` (mean cross-entropy + L2 penalty), ``predictions`` (class id,
        ``int64 [batch]``), ``prediction_dict`` (``predictions`` and ``probabilities``, the softmax
        ``float32 [batch, n_classes]``: what ``hookrun predict`` and ``export`` output), ``metrics``
        (``accuracy``, a fraction; ``auc`` when ``n_classes`` is 2: this batch) and, in ``eval`` mode,
        ``eval_metrics``: ``tf.compat.v1.metrics.accuracy`` (and
        ``tf.compat.v1.metrics.auc`` on class 1's probability) over the whole evaluation.
    """
    class_ids = tf.cast(tf.reshape(labels, [-1]), tf.int64)
    xent = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=class_ids, logits=logits), name="cross_entropy"
    )
    loss = tf.identity(xent + l2_penalty(tf, float(params.get("l2", 0.0))), name="loss")
    predicted = tf.argmax(logits, axis=1, name="predictions")
    metrics = {"accuracy": tf.reduce_mean(tf.cast(tf.equal(predicted, class_ids), tf.float32), name="accuracy")}
    probabilities = tf.nn.softmax(logits, name="probabilities")
    probability = probabilities[:, -1]
    if n_classes == 2:
        metrics["auc"] = tf.identity(batch_auc(tf, probability, tf.equal(class_ids, 1)), name="auc")
    spec: dict[str, Any] = {
        "loss": loss,
        "predictions": predicted,
        "metrics": metrics,
        "prediction_dict": {"predictions": predicted, "probabilities": probabilities},
    }
    if params.get("mode") == "eval":
        eval_metrics = {"accuracy": tf.compat.v1.metrics.accuracy(class_ids, predicted, name="accuracy_metric")}
        if n_classes == 2:
            with _without_deprecation_notice_of("auc"):
                eval_metrics["auc"] = tf.compat.v1.metrics.auc(
                    tf.equal(class_ids, 1),
                    probability,
                    num_thresholds=1000,
                    summation_method="careful_interpolation",
                    name="auc_metric",
                )
        spec["eval_metrics"] = eval_metrics
    return spec


class _DeprecationNoticeFilter(logging.Filter):
    """Drops TensorFlow's ``<name> (from <module>) is deprecated`` notice for one function name."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._needle = f": {name} (from tensorflow."

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (record.levelno == logging.WARNING and self._needle in message and "is deprecated" in message)


@contextlib.contextmanager
def _without_deprecation_notice_of(name: str) -> Iterator[None]:
    """Silence TensorFlow's deprecation notice for its function ``name`` while the built-in builder calls it.

    ``tf.compat.v1.metrics.auc`` logs a three-line "is deprecated ... use tf.keras.metrics.AUC" warning
    on first use; the call is hookrun's (the evaluation's streaming AUC, as ``BinaryClassHead`` computes
    it), not the user's, so the user cannot act on it. Only that one notice is dropped, through the
    public ``logging`` API on the ``tensorflow`` logger (TensorFlow's ``deprecation.silence()`` is private);
    every other record, a user's builder's deprecations included, passes.
    """
    logger = logging.getLogger("tensorflow")
    notice = _DeprecationNoticeFilter(name)
    logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)
