"""What a graph builder returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Keys a builder may return in a dict instead of a ``GraphSpec``.
SPEC_KEYS = ("loss", "train_op", "predictions", "metrics", "eval_metrics", "prediction_dict")


@dataclass
class GraphSpec:
    """The named tensors of a built graph; mirrors ``tf.estimator.EstimatorSpec``.

    The builder contract: ``fn(features, labels, params) -> GraphSpec`` (or a
    ``dict`` with the same keys), called inside a ``tf.Graph`` with

    - ``features``: ``float32 [batch, n_features]`` (numeric columns z-scored,
      categorical ones one-hot; names in ``preprocessing.json``),
    - ``labels``: ``float32 [batch, 1]`` (a numeric label divided by
      ``data.label_scale``; a text label as class ids),
    - ``params``: ``dict`` of the config's ``graph.params``, plus two keys the runner sets:
      ``mode`` (``"train"`` or ``"eval"``) and ``label_scale`` (float, 1.0 without
      ``data.label_scale``).

    The builder is called once with ``mode="train"`` on the training batches and, when
    the config has an ``evaluation`` hook, once more with ``mode="eval"`` on the
    validation batches, inside ``tf.compat.v1.variable_scope(..., reuse=True)``: create
    weights with ``tf.compat.v1.get_variable`` so both calls share them (a builder that
    creates new trainable variables in the second call is refused). Apply dropout and
    other training-only behaviour only when ``params["mode"] == "train"``.

    Attributes:
        loss: scalar ``float32`` tensor to minimise. Required.
        train_op: the op that takes one step and increments ``global_step``;
            None lets the runner build it from ``graph.optimizer``.
        predictions: ``[batch, ...]`` model output, optional.
        metrics: name -> scalar tensor of the current batch (e.g. ``rmse``), optional.
            Names become valid hook tensor names.
        eval_metrics: name -> ``(value, update_op)`` of a streaming metric over the
            whole evaluation (``tf.compat.v1.metrics.*``, as ``EstimatorSpec.eval_metric_ops``),
            optional, used in ``eval`` mode. Without it each batch metric is averaged over
            the evaluation weighted by batch size (exact for means such as ``mae`` or
            ``accuracy``, not for ``rmse``).
        training_hooks: ``SessionRunHook`` instances run after the config's hooks, in order (a model_fn's
            ``EstimatorSpec.training_hooks``; a ``GraphSpec`` from a builder has none).
        prediction_dict: every prediction by name when a model_fn returned ``predictions`` as a dict. With an
            entry ``probabilities`` (``float32 [batch, n_classes]``) the model is a classifier for ``hookrun
            predict`` and ``export``, which then add each row's class (the built-in classifiers give it).
        export_outputs: a model_fn's ``EstimatorSpec.export_outputs`` (``infer`` mode), checked.
        prediction_hooks: a model_fn's ``EstimatorSpec.prediction_hooks`` (``infer`` mode).
        prediction_dict: every prediction by name when a model_fn returned ``predictions`` as a dict.
        training_chief_hooks: hooks run after ``training_hooks`` on the chief only (a model_fn's
            ``EstimatorSpec.training_chief_hooks``).
        evaluation_hooks: hooks run around each evaluation pass (a model_fn's ``EstimatorSpec.evaluation_hooks``,
            from its ``eval`` call).
        scaffold: a ``tf.compat.v1.train.Scaffold`` merged into the session's (a model_fn's
            ``EstimatorSpec.scaffold``, from its ``train`` call), or None.
    """

    loss: Any
    train_op: Any = None
    predictions: Any = None
    metrics: dict[str, Any] = field(default_factory=dict)
    eval_metrics: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    training_hooks: list[Any] = field(default_factory=list)
    prediction_dict: dict[str, Any] = field(default_factory=dict)
    export_outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    prediction_hooks: list[Any] = field(default_factory=list)
    training_chief_hooks: list[Any] = field(default_factory=list)
    evaluation_hooks: list[Any] = field(default_factory=list)
    scaffold: Any = None

    @classmethod
    def coerce(cls, value: Any, builder: str) -> GraphSpec:
        """Accept a ``GraphSpec`` or a mapping with a ``loss`` key.

        Raises:
            TypeError: anything else, or a mapping without ``loss`` or with unknown keys.
        """
        if isinstance(value, GraphSpec):
            return value
        if isinstance(value, dict):
            unknown = set(value) - set(SPEC_KEYS)
            if "loss" not in value or unknown:
                raise TypeError(
                    f"builder {builder} returned a dict with keys {sorted(value)}; it needs `loss` and may have "
                    "`train_op`, `predictions`, `metrics`, `eval_metrics`, `prediction_dict`"
                )
            return cls(**value)
        raise TypeError(f"builder {builder} returned {type(value).__name__}; return a GraphSpec or a dict with `loss`")
