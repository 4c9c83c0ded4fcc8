"""Built-in builder ``dnn_regressor``."""

from __future__ import annotations

from typing import Any

from hookrun.runner.graph.builders.canned.from_params import single_list_variant
from hookrun.runner.graph.builders.heads import dense, hidden_layers, regression_head
from hookrun.runner.graph.builders.spec import GraphSpec


def dnn_regressor(features: Any, labels: Any, params: dict[str, Any]) -> GraphSpec:
    """Fully connected network with a linear output and mean squared error.

    Mirrors ``tf.estimator.DNNRegressor`` on dense numeric columns.

    Args:
        features: ``float32 [batch, n_features]``.
        labels: ``float32 [batch, 1]`` (training units: divided by ``label_scale``).
        params: ``hidden_units`` (list of int, default [64, 32]), ``activation`` (default ``relu``),
            ``dropout`` (fraction, default 0; training only), ``l2`` (float, default 0); from the
            runner: ``mode`` (``train``/``eval``) and ``label_scale``.

    Returns:
        A spec with ``loss``, ``predictions`` ``[batch, 1]`` (label units), metrics ``mse``, ``rmse``,
        ``mae`` (label units) and, for evaluation, streaming ``rmse`` and ``mae``.
    """
    import tensorflow as tf

    output = dense(hidden_layers(tf, features, params), 1, "output")
    return GraphSpec(**regression_head(tf, output, labels, params))


def variant(params: dict[str, Any] | None) -> Any:
    """With ``feature_columns`` in ``graph.params``: TF 1.15's canned ``dnn_regressor`` over those YAML columns.

    A model_fn (:func:`~hookrun.runner.graph.builders.canned.from_params.single_list_variant`); None keeps
    :func:`dnn_regressor` (the dense matrix).
    """
    return single_list_variant("dnn_regressor", params)
