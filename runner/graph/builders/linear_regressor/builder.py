"""Built-in builder ``linear_regressor``."""

from __future__ import annotations

from typing import Any

from hookrun.runner.graph.builders.canned.from_params import single_list_variant
from hookrun.runner.graph.builders.heads import dense, regression_head
from hookrun.runner.graph.builders.spec import GraphSpec


def linear_regressor(features: Any, labels: Any, params: dict[str, Any]) -> GraphSpec:
    """Linear regression ``y = x W + b`` with mean squared error.

    Mirrors ``tf.estimator.LinearRegressor`` on dense numeric columns.

    Args:
        features: ``float32 [batch, n_features]``.
        labels: ``float32 [batch, 1]`` (training units: divided by ``label_scale``).
        params: ``l2`` (float, default 0); from the runner: ``mode`` and ``label_scale``.

    Returns:
        A spec with ``loss``, ``predictions`` ``[batch, 1]`` (label units), metrics ``mse``, ``rmse``,
        ``mae`` (label units) and, for evaluation, streaming ``rmse`` and ``mae``.
    """
    import tensorflow as tf

    output = dense(features, 1, "linear")
    return GraphSpec(**regression_head(tf, output, labels, params))


def variant(params: dict[str, Any] | None) -> Any:
    """With ``feature_columns`` in ``graph.params``: TF 1.15's canned ``linear_regressor`` over those YAML columns.

    A model_fn (:func:`~hookrun.runner.graph.builders.canned.from_params.single_list_variant`); None keeps
    :func:`linear_regressor` (the dense matrix).
    """
    return single_list_variant("linear_regressor", params)
