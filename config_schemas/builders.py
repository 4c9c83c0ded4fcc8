"""Parameter models of the built-in graph builders (``graph.params``).

One model per builder in ``runner/graph_builders/``; checked at validation
time, without TensorFlow. Custom builders' params are passed through as given.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveInt

from hookrun.config_schemas.base import StrictModel

Activation = Literal["relu", "tanh", "sigmoid", "elu", "selu", "softplus"]


class LinearRegressorParams(StrictModel):
    """Params of ``linear_regressor``: ``y = x W + b``, mean squared error."""

    l2: float = Field(default=0.0, ge=0.0, description="L2 penalty on the weights (added to the loss).")


class DnnRegressorParams(StrictModel):
    """Params of ``dnn_regressor``: fully connected hidden layers, linear output, mean squared error."""

    hidden_units: list[PositiveInt] = Field(
        default_factory=lambda: [64, 32], min_length=1, description="Units per hidden layer, input to output."
    )
    activation: Activation = Field(default="relu", description="Hidden-layer activation.")
    l2: float = Field(default=0.0, ge=0.0, description="L2 penalty on the weights (added to the loss).")


class DnnClassifierParams(DnnRegressorParams):
    """Params of ``dnn_classifier``: hidden layers, softmax output, cross-entropy.

    Labels are class ids ``0 .. n_classes-1`` in the label column.
    """

    n_classes: PositiveInt = Field(default=2, ge=2, description="Number of classes (count, >= 2).")


#: Built-in builder name -> its params model.
BUILDER_PARAMS: dict[str, type[StrictModel]] = {
    "linear_regressor": LinearRegressorParams,
    "dnn_regressor": DnnRegressorParams,
    "dnn_classifier": DnnClassifierParams,
}
