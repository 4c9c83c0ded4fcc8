"""Built-in builder ``dnn_linear_combined_classifier``: TF 1.15's ``DNNLinearCombinedClassifier`` from YAML."""

from __future__ import annotations

from typing import Any

from hookrun.runner.graph.builders.canned.from_params import canned_model_fn
from hookrun.runner.graph.model_fn import EstimatorSpec


def dnn_linear_combined_classifier(
    features: Any, labels: Any, mode: str, params: dict[str, Any], config: Any = None
) -> EstimatorSpec:
    """Wide-and-deep classifier over ``linear_feature_columns`` and ``dnn_feature_columns`` (YAML entries).

    Mirrors ``tf.compat.v1.estimator.DNNLinearCombinedClassifier`` (TF 1.15): see
    :func:`hookrun.runner.graph.builders.canned.models.dnn_linear_combined_classifier` for the arguments.

    Args:
        features: named features (``hookrun_features = "named"``) or an ``input_fn``'s dict.
        labels: class ids ``[batch, 1]``.
        mode: ``ModeKeys``.
        params: ``graph.params`` (TF 1.15's arguments).
        config: the run's ``RunConfig``; ``config.hookrun`` describes the data files' columns.

    Returns:
        The ``EstimatorSpec`` of TF 1.15's head (sigmoid for 2 classes, softmax above).
    """
    return canned_model_fn("dnn_linear_combined_classifier", features, labels, mode, params, config)


dnn_linear_combined_classifier.hookrun_features = "named"  # type: ignore[attr-defined]
