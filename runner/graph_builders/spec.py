"""What a graph builder returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class GraphSpec:
    """The named tensors of a built graph.

    The builder contract: ``fn(features, labels, params) -> GraphSpec`` (or a
    ``dict`` with the same keys), called inside a fresh ``tf.Graph`` with

    - ``features``: ``float32 [batch, n_features]``,
    - ``labels``: ``float32 [batch, 1]``,
    - ``params``: ``dict`` from the config's ``graph.params``.

    Attributes:
        loss: scalar ``float32`` tensor to minimise. Required.
        train_op: the op that takes one step and increments ``global_step``;
            None lets the runner build it from ``graph.optimizer``.
        predictions: ``[batch, ...]`` model output, optional.
        metrics: name -> scalar tensor (e.g. ``rmse``), optional. Names become
            valid hook tensor names.
    """

    loss: Any
    train_op: Any = None
    predictions: Any = None
    metrics: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def coerce(cls, value: Any, builder: str) -> GraphSpec:
        """Accept a ``GraphSpec`` or a mapping with a ``loss`` key.

        Raises:
            TypeError: anything else, or a mapping without ``loss`` or with unknown keys.
        """
        if isinstance(value, GraphSpec):
            return value
        if isinstance(value, dict):
            unknown = set(value) - {"loss", "train_op", "predictions", "metrics"}
            if "loss" not in value or unknown:
                raise TypeError(
                    f"builder {builder} returned a dict with keys {sorted(value)}; it needs `loss` and may have "
                    "`train_op`, `predictions`, `metrics`"
                )
            return cls(**value)
        raise TypeError(f"builder {builder} returned {type(value).__name__}; return a GraphSpec or a dict with `loss`")
