"""The premade estimators of ``tf.compat.v1.estimator`` (TF 1.15) as :class:`~hookrun.estimator.Estimator` subclasses.

``DNNClassifier``, ``DNNRegressor``, ``LinearClassifier``, ``LinearRegressor``, ``DNNLinearCombinedClassifier`` and
``DNNLinearCombinedRegressor``: TF 1.15's constructor arguments and defaults, taking real
``tf.compat.v1.feature_column`` objects; each is an ``Estimator`` over the model_fn of the same name in
:mod:`hookrun.runner.graph.builders.canned.models` (TF 1.15's canned code: heads, metrics, prediction keys, export
signatures, variable names). ``loss_reduction`` is TF 1.15's ``tf.compat.v1.losses.Reduction.SUM``
(``"weighted_sum"``) by default; ``"sum"`` and the other short names are accepted too.

``input_layer_partitioner`` and ``partitioner`` are accepted and not used: hookrun never partitions the variables
(TF 1.15 without parameter servers made one partition, the same names).

Importing this module does not import TensorFlow.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hookrun.estimator.estimator import Estimator
from hookrun.estimator.run_config import RunConfig
from hookrun.runner.graph.builders.canned import models

logger = logging.getLogger("tensorflow")

#: ``tf.compat.v1.losses.Reduction.SUM``: the v1 premade estimators' default.
SUM = "weighted_sum"

Activation = str | Callable[[Any], Any] | None
PathLike = str | os.PathLike[str] | None


def _unused_partitioner(value: Any, name: str) -> None:
    if value is not None:
        logger.warning("%s is not used: hookrun does not partition variables (one partition, TF 1.15's names)", name)


class _Canned(Estimator):
    """An Estimator over a canned model_fn; ``head`` is its head (TF 1.15's ``_Head``)."""

    def __init__(self, model_fn: Callable[..., Any], model_dir: PathLike, config: RunConfig | None,
                 warm_start_from: Any) -> None:
        self.head = model_fn.head  # type: ignore[attr-defined]
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNClassifier(_Canned):
    """``tf.compat.v1.estimator.DNNClassifier`` (TF 1.15): a DNN over dense feature columns.

    Sigmoid (2 classes) or softmax head; Adagrad at 0.05 by default. Arguments as TF 1.15's; see
    :func:`hookrun.runner.graph.builders.canned.models.dnn_classifier`.
    """

    def __init__(self, hidden_units: Sequence[int], feature_columns: Iterable[Any], model_dir: PathLike = None,
                 n_classes: int = 2, weight_column: Any = None, label_vocabulary: Sequence[str] | None = None,
                 optimizer: Any = "Adagrad", activation_fn: Activation = "relu", dropout: float | None = None,
                 input_layer_partitioner: Any = None, config: RunConfig | None = None, warm_start_from: Any = None,
                 loss_reduction: str = SUM, batch_norm: bool = False) -> None:
        _unused_partitioner(input_layer_partitioner, "input_layer_partitioner")
        model_fn = models.dnn_classifier(hidden_units, feature_columns, n_classes, weight_column, label_vocabulary,
                                         optimizer, activation_fn, dropout, loss_reduction, batch_norm)
        super().__init__(model_fn, model_dir, config, warm_start_from)


class DNNRegressor(_Canned):
    """``tf.compat.v1.estimator.DNNRegressor`` (TF 1.15): a DNN with a squared-error head; Adagrad at 0.05."""

    def __init__(self, hidden_units: Sequence[int], feature_columns: Iterable[Any], model_dir: PathLike = None,
                 label_dimension: int = 1, weight_column: Any = None, optimizer: Any = "Adagrad",
                 activation_fn: Activation = "relu", dropout: float | None = None, input_layer_partitioner: Any = None,
                 config: RunConfig | None = None, warm_start_from: Any = None, loss_reduction: str = SUM,
                 batch_norm: bool = False) -> None:
        _unused_partitioner(input_layer_partitioner, "input_layer_partitioner")
        model_fn = models.dnn_regressor(hidden_units, feature_columns, label_dimension, weight_column, optimizer,
                                        activation_fn, dropout, loss_reduction, batch_norm)
        super().__init__(model_fn, model_dir, config, warm_start_from)


class LinearClassifier(_Canned):
    """``tf.compat.v1.estimator.LinearClassifier`` (TF 1.15): ``linear_model`` logits; Ftrl at 0.2 by default."""

    def __init__(self, feature_columns: Iterable[Any], model_dir: PathLike = None, n_classes: int = 2,
                 weight_column: Any = None, label_vocabulary: Sequence[str] | None = None, optimizer: Any = "Ftrl",
                 config: RunConfig | None = None, partitioner: Any = None, warm_start_from: Any = None,
                 loss_reduction: str = SUM, sparse_combiner: str = "sum") -> None:
        _unused_partitioner(partitioner, "partitioner")
        model_fn = models.linear_classifier(feature_columns, n_classes, weight_column, label_vocabulary, optimizer,
                                            loss_reduction, sparse_combiner)
        super().__init__(model_fn, model_dir, config, warm_start_from)


class LinearRegressor(_Canned):
    """``tf.compat.v1.estimator.LinearRegressor`` (TF 1.15): ``linear_model`` with a squared-error head; Ftrl."""

    def __init__(self, feature_columns: Iterable[Any], model_dir: PathLike = None, label_dimension: int = 1,
                 weight_column: Any = None, optimizer: Any = "Ftrl", config: RunConfig | None = None,
                 partitioner: Any = None, warm_start_from: Any = None, loss_reduction: str = SUM,
                 sparse_combiner: str = "sum") -> None:
        _unused_partitioner(partitioner, "partitioner")
        model_fn = models.linear_regressor(feature_columns, label_dimension, weight_column, optimizer, loss_reduction,
                                           sparse_combiner)
        super().__init__(model_fn, model_dir, config, warm_start_from)


class DNNLinearCombinedClassifier(_Canned):
    """``tf.compat.v1.estimator.DNNLinearCombinedClassifier`` (TF 1.15): wide (Ftrl) plus deep (Adagrad) logits.

    Raises:
        ValueError: neither ``linear_feature_columns`` nor ``dnn_feature_columns`` given.
    """

    def __init__(self, model_dir: PathLike = None, linear_feature_columns: Iterable[Any] | None = None,
                 linear_optimizer: Any = "Ftrl", dnn_feature_columns: Iterable[Any] | None = None,
                 dnn_optimizer: Any = "Adagrad", dnn_hidden_units: Sequence[int] | None = None,
                 dnn_activation_fn: Activation = "relu", dnn_dropout: float | None = None, n_classes: int = 2,
                 weight_column: Any = None, label_vocabulary: Sequence[str] | None = None,
                 input_layer_partitioner: Any = None, config: RunConfig | None = None, warm_start_from: Any = None,
                 loss_reduction: str = SUM, batch_norm: bool = False, linear_sparse_combiner: str = "sum") -> None:
        _unused_partitioner(input_layer_partitioner, "input_layer_partitioner")
        model_fn = models.dnn_linear_combined_classifier(
            linear_feature_columns, linear_optimizer, dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
            dnn_activation_fn, dnn_dropout, n_classes, weight_column, label_vocabulary, loss_reduction, batch_norm,
            linear_sparse_combiner,
        )
        super().__init__(model_fn, model_dir, config, warm_start_from)


class DNNLinearCombinedRegressor(_Canned):
    """``tf.compat.v1.estimator.DNNLinearCombinedRegressor`` (TF 1.15): wide plus deep, squared-error head.

    Raises:
        ValueError: neither ``linear_feature_columns`` nor ``dnn_feature_columns`` given.
    """

    def __init__(self, model_dir: PathLike = None, linear_feature_columns: Iterable[Any] | None = None,
                 linear_optimizer: Any = "Ftrl", dnn_feature_columns: Iterable[Any] | None = None,
                 dnn_optimizer: Any = "Adagrad", dnn_hidden_units: Sequence[int] | None = None,
                 dnn_activation_fn: Activation = "relu", dnn_dropout: float | None = None, label_dimension: int = 1,
                 weight_column: Any = None, input_layer_partitioner: Any = None, config: RunConfig | None = None,
                 warm_start_from: Any = None, loss_reduction: str = SUM, batch_norm: bool = False,
                 linear_sparse_combiner: str = "sum") -> None:
        _unused_partitioner(input_layer_partitioner, "input_layer_partitioner")
        model_fn = models.dnn_linear_combined_regressor(
            linear_feature_columns, linear_optimizer, dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
            dnn_activation_fn, dnn_dropout, label_dimension, weight_column, loss_reduction, batch_norm,
            linear_sparse_combiner,
        )
        super().__init__(model_fn, model_dir, config, warm_start_from)


__all__ = ["DNNClassifier", "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor", "DNNRegressor",
           "LinearClassifier", "LinearRegressor"]
