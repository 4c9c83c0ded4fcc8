"""Built-in builder ``dnn_classifier``."""

from __future__ import annotations

from typing import Any

from hookrun.runner.graph_builders.layers import dense, l2_penalty
from hookrun.runner.graph_builders.spec import GraphSpec


def dnn_classifier(features: Any, labels: Any, params: dict[str, Any]) -> GraphSpec:
    """Fully connected network with a softmax output and cross-entropy loss.

    Mirrors ``tf.estimator.DNNClassifier`` on dense numeric columns.

    Args:
        features: ``float32 [batch, n_features]``.
        labels: ``float32 [batch, 1]`` holding class ids ``0 .. n_classes-1``.
        params: ``n_classes`` (int >= 2, default 2), ``hidden_units``,
            ``activation``, ``l2`` as for ``dnn_regressor``.

    Returns:
        A spec with ``loss`` (mean cross-entropy), ``predictions`` (class id,
        ``int64 [batch]``) and metric ``accuracy`` (this batch, fraction).
    """
    import tensorflow as tf

    n_classes = int(params.get("n_classes", 2))
    net = features
    for index, units in enumerate(params.get("hidden_units", [64, 32])):
        net = dense(tf, net, int(units), f"hidden_{index}", params.get("activation", "relu"))
    logits = dense(tf, net, n_classes, "logits")
    class_ids = tf.cast(tf.reshape(labels, [-1]), tf.int64)
    xent = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=class_ids, logits=logits), name="cross_entropy"
    )
    loss = tf.identity(xent + l2_penalty(tf, float(params.get("l2", 0.0))), name="loss")
    predicted = tf.argmax(logits, axis=1, name="predictions")
    accuracy = tf.reduce_mean(tf.cast(tf.equal(predicted, class_ids), tf.float32), name="accuracy")
    return GraphSpec(loss=loss, predictions=predicted, metrics={"accuracy": accuracy})
