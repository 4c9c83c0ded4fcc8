"""Parameter models of the built-in graph builders (``graph.params``).

One model per builder in ``runner/graph/builders/``; checked at validation
time, without TensorFlow. Custom builders' params are passed through as given.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hookrun.config_schemas.base import StrictModel
from hookrun.config_schemas.bounds import Count

Activation = Literal["relu", "tanh", "sigmoid", "elu", "selu", "softplus"]

#: Keys the runner adds to ``params`` when it calls a builder; a config may not set them.
RESERVED_PARAMS = ("mode", "label_scale", "feature_columns")


class LinearRegressorParams(StrictModel):
    """Params of ``linear_regressor``: ``y = x W + b``, mean squared error."""

    l2: float = Field(default=0.0, ge=0.0, description="L2 penalty on the weights (added to the loss).")


class DnnRegressorParams(StrictModel):
    """Params of ``dnn_regressor``: fully connected hidden layers, linear output, mean squared error."""

    hidden_units: list[Count] = Field(
        default_factory=lambda: [64, 32], min_length=1, description="Units per hidden layer, input to output."
    )
    activation: Activation = Field(default="relu", description="Hidden-layer activation.")
    dropout: float = Field(
        default=0.0,
        ge=0.0,
        lt=1.0,
        description="Fraction of each hidden layer's outputs dropped while training (not in evaluation).",
    )
    l2: float = Field(default=0.0, ge=0.0, description="L2 penalty on the weights (added to the loss).")


class LinearClassifierParams(LinearRegressorParams):
    """Params of ``linear_classifier``: ``logits = x W + b``, softmax cross-entropy.

    Labels are class ids ``0 .. n_classes-1``, or text mapped to ids by the training split's vocabulary.
    """

    n_classes: Count = Field(default=2, ge=2, description="Number of classes (count, >= 2).")


class DnnClassifierParams(DnnRegressorParams):
    """Params of ``dnn_classifier``: hidden layers, softmax output, cross-entropy.

    Labels are class ids ``0 .. n_classes-1``, or text mapped to ids by the training split's vocabulary.
    """

    n_classes: Count = Field(default=2, ge=2, description="Number of classes (count, >= 2).")


#: Built-in builder name -> its params model.
BUILDER_PARAMS: dict[str, type[StrictModel]] = {
    "linear_regressor": LinearRegressorParams,
    "dnn_regressor": DnnRegressorParams,
    "linear_classifier": LinearClassifierParams,
    "dnn_classifier": DnnClassifierParams,
}

#: Built-in builders whose label is a class id (the others regress a number).
CLASSIFIERS = frozenset({"linear_classifier", "dnn_classifier"})


def builtin_eval_metrics(builder: str, params: dict[str, object]) -> list[str] | None:
    """The metric names a built-in builder's evaluation reports (``val_<name>`` besides ``val_loss``).

    Args:
        builder: ``graph.builder``.
        params: the checked ``graph.params`` (defaults filled in).

    Returns:
        ``["rmse", "mae"]`` for a regressor, ``["accuracy"]`` for a classifier (``["accuracy", "auc"]`` when
        ``n_classes`` is 2); None for a custom builder (known only once its graph is built).
    """
    if builder not in BUILDER_PARAMS:
        return None
    if builder in CLASSIFIERS:
        return ["accuracy", "auc"] if params.get("n_classes") == 2 else ["accuracy"]
    return ["rmse", "mae"]
