"""TF 1.15's premade (canned) estimators as ``model_fn``s over ``tf.compat.v1.feature_column``.

``models``: the six model_fn factories (``dnn_classifier``, ``dnn_regressor``, ``linear_classifier``,
``linear_regressor``, ``dnn_linear_combined_classifier``, ``dnn_linear_combined_regressor``) with TF 1.15's
arguments and defaults; ``head``: their heads (loss, predictions, eval metrics, export outputs).
This folder is a library the built-in builders use, not a builder itself. Importing it does not import
TensorFlow.
"""

from hookrun.runner.graph.builders.canned.models import (
    CANNED,
    dnn_classifier,
    dnn_linear_combined_classifier,
    dnn_linear_combined_regressor,
    dnn_regressor,
    linear_classifier,
    linear_regressor,
)

__all__ = [
    "CANNED",
    "dnn_classifier",
    "dnn_linear_combined_classifier",
    "dnn_linear_combined_regressor",
    "dnn_regressor",
    "linear_classifier",
    "linear_regressor",
]
