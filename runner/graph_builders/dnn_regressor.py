"""Built-in builder ``dnn_regressor``."""

from __future__ import annotations

from typing import Any

from hookrun.runner.graph_builders.layers import dense, regression_head
from hookrun.runner.graph_builders.spec import GraphSpec


def dnn_regressor(features: Any, labels: Any, params: dict[str, Any]) -> GraphSpec:
    """Fully connected network with a linear output and mean squared error.

    Mirrors ``tf.estimator.DNNRegressor`` on dense numeric columns.

    Args:
        features: ``float32 [batch, n_features]``.
        labels: ``float32 [batch, 1]``.
        params: ``hidden_units`` (list of int, default [64, 32]), ``activation``
            (default ``relu``), ``l2`` (float, default 0).

    Returns:
        A spec with ``loss``, ``predictions`` ``[batch, 1]`` and metrics ``mse``, ``rmse``, ``mae``.
    """
    import tensorflow as tf

    net = features
    for index, units in enumerate(params.get("hidden_units", [64, 32])):
        net = dense(tf, net, int(units), f"hidden_{index}", params.get("activation", "relu"))
    predictions = dense(tf, net, 1, "output")
    return GraphSpec(**regression_head(tf, predictions, labels, float(params.get("l2", 0.0))))
