"""Built-in builder ``dnn_classifier``."""

from __future__ import annotations

from typing import Any

from hookrun.runner.graph.builders.canned.from_params import single_list_variant
from hookrun.runner.graph.builders.heads import classification_head, dense, hidden_layers
from hookrun.runner.graph.builders.spec import GraphSpec


def dnn_classifier(features: Any, labels: Any, params: dict[str, Any]) -> GraphSpec:
    """Fully connected network with a softmax output and cross-entropy loss.

    Mirrors ``tf.estimator.DNNClassifier`` on dense numeric columns.

    Args:
        features: ``float32 [batch, n_features]``.
        labels: ``float32 [batch, 1]`` holding class ids ``0 .. n_classes-1``.
        params: ``n_classes`` (int >= 2, default 2), ``hidden_units``, ``activation``, ``dropout``,
            ``l2`` as for ``dnn_regressor``; from the runner: ``mode``.

    Returns:
        A spec with ``loss`` (mean cross-entropy), ``predictions`` (class id, ``int64 [batch]``),
        metric ``accuracy`` (and ``auc`` for 2 classes) and, for evaluation, their streaming versions.
    """
    import tensorflow as tf

    n_classes = int(params.get("n_classes", 2))
    logits = dense(hidden_layers(tf, features, params), n_classes, "logits")
    return GraphSpec(**classification_head(tf, logits, labels, n_classes, params))


def variant(params: dict[str, Any] | None) -> Any:
    """With ``feature_columns`` in ``graph.params``: TF 1.15's canned ``dnn_classifier`` over those YAML columns.

    A model_fn (:func:`~hookrun.runner.graph.builders.canned.from_params.single_list_variant`); None keeps
    :func:`dnn_classifier` (the dense matrix).
    """
    return single_list_variant("dnn_classifier", params)
