"""Built-in builder ``linear_classifier``."""

from __future__ import annotations

from typing import Any

from hookrun.runner.graph.builders.canned.from_params import single_list_variant
from hookrun.runner.graph.builders.heads import classification_head, dense
from hookrun.runner.graph.builders.spec import GraphSpec


def linear_classifier(features: Any, labels: Any, params: dict[str, Any]) -> GraphSpec:
    """Multinomial logistic regression: ``logits = x W + b``, softmax cross-entropy.

    Mirrors ``tf.estimator.LinearClassifier`` on dense numeric columns.

    Args:
        features: ``float32 [batch, n_features]``.
        labels: ``float32 [batch, 1]`` holding class ids ``0 .. n_classes-1``.
        params: ``n_classes`` (int >= 2, default 2), ``l2`` (float, default 0); from the runner: ``mode``.

    Returns:
        A spec with ``loss`` (mean cross-entropy), ``predictions`` (class id, ``int64 [batch]``),
        metric ``accuracy`` (and ``auc`` for 2 classes) and, for evaluation, their streaming versions.
    """
    import tensorflow as tf

    n_classes = int(params.get("n_classes", 2))
    logits = dense(features, n_classes, "linear")
    return GraphSpec(**classification_head(tf, logits, labels, n_classes, params))


def variant(params: dict[str, Any] | None) -> Any:
    """With ``feature_columns`` in ``graph.params``: TF 1.15's canned ``linear_classifier`` over those YAML columns.

    A model_fn (:func:`~hookrun.runner.graph.builders.canned.from_params.single_list_variant`); None keeps
    :func:`linear_classifier` (the dense matrix).
    """
    return single_list_variant("linear_classifier", params)
