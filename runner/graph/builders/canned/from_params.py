"""The canned models as built-in builders: a model_fn built from ``graph.params`` (YAML ``feature_columns``).

The built-in ``dnn_linear_combined_classifier`` and ``dnn_linear_combined_regressor`` call :func:`canned_model_fn`:
their params (checked by :mod:`hookrun.config_schemas.builders`) are TF 1.15's constructor arguments, with
``*feature_columns`` as YAML entries (:mod:`hookrun.config_schemas.feature_columns`) and optimizers as a name
(``Adagrad``, ``Adam``, ``Ftrl``, ``RMSProp``, ``SGD``: TF 1.15's learning rate) or ``{name, learning_rate}``.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from hookrun.config_schemas.feature_columns import ColumnError
from hookrun.runner.graph.builders.canned import models
from hookrun.runner.graph.builders.canned.columns import ColumnBuilder, raw_features
from hookrun.runner.graph.model_fn import EstimatorSpec, ModeKeys

#: Params that are not constructor arguments: the runner's, and hookrun's own.
RUNNER_KEYS = ("label_scale", "feature_columns", "mode")
COLUMN_FIELDS = ("linear_feature_columns", "dnn_feature_columns")


def _optimizer(value: Any) -> Any:
    """A name stays a name (TF 1.15's default rate); ``{name, learning_rate}`` becomes the v1 optimizer."""
    if isinstance(value, Mapping):
        from hookrun.runner.tf_env import import_tensorflow

        tf = import_tensorflow()
        return getattr(tf.compat.v1.train, models.OPTIMIZERS[value["name"]])(learning_rate=value["learning_rate"])
    return value


class _Deprecations(logging.Filter):
    """Drops TensorFlow's "... is deprecated and will be removed" notices."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno == logging.WARNING and "is deprecated" in record.getMessage())


@contextlib.contextmanager
def quiet_feature_columns() -> Iterator[None]:
    """Silence the deprecation notices of ``tf.compat.v1.feature_column`` while hookrun's built-in builds them.

    The calls are hookrun's (the YAML names the columns, not the user's code), so the notices ("use Keras
    preprocessing layers", "layer.add_variable is deprecated") are nothing the user can act on. Only those records
    are dropped, on the ``tensorflow`` logger and Python's ``warnings``, and only during the call.
    """
    logger = logging.getLogger("tensorflow")
    notices = _Deprecations()
    logger.addFilter(notices)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*is deprecated", category=UserWarning)
            yield
    finally:
        logger.removeFilter(notices)


def runner_values(params: Any, config: Any) -> tuple[Mapping[str, Any] | None, float]:
    """The runner's column description and ``label_scale``: ``config.hookrun``'s, else ``params``' (the builder form).

    Args:
        params: the builder's params (a builder of the ``fn(features, labels, params)`` form finds them there).
        config: a model_fn's ``config`` (:class:`hookrun.runner.graph.run_config.RunInfo`), or None.

    Returns:
        ``(description, label_scale)``: column name -> description (None without named features from data files),
        and the label scale (1.0 without ``data.label_scale``).
    """
    values = getattr(config, "hookrun", None)
    if values is not None:
        described = getattr(values, "feature_columns", None)
        scale = getattr(values, "label_scale", None)
    else:
        params = params if isinstance(params, Mapping) else {}
        described, scale = params.get("feature_columns"), params.get("label_scale")
    return (described if isinstance(described, Mapping) else None), float(scale or 1.0)


def canned_model_fn(
    builder: str, features: Any, labels: Any, mode: str, params: Mapping[str, Any], config: Any = None
) -> EstimatorSpec:
    """Build the canned model ``builder`` from its params and call its model_fn.

    Args:
        builder: ``dnn_linear_combined_classifier`` or ``dnn_linear_combined_regressor``.
        features: named features from the built-in reader, or an ``input_fn``'s dict.
        labels: ``[batch, 1]``: class ids (the reader's float ids are cast to ``int64``) or values.
        mode: ``ModeKeys``.
        params: ``graph.params`` (checked).
        config: the model_fn's ``config``; its ``hookrun.feature_columns`` describes the data files' columns.

    Returns:
        The model's ``EstimatorSpec``.

    Raises:
        PlacedError: at the column's entry (``graph.params.dnn_feature_columns[0].numeric``): a column the data
            cannot give (an unknown feature key, ``from_data`` of a column without a vocabulary, a cross of a
            numeric column of the data).
    """
    from hookrun.config_schemas.errors import PlacedError
    from hookrun.runner.tf_env import import_tensorflow

    with quiet_feature_columns():
        try:
            return _canned_model_fn(import_tensorflow(), builder, features, labels, mode, params, config)
        except ColumnError as err:  # "<list>[i].<arg>: reason": reported at that entry's line of the config
            where, _, reason = str(err).partition(": ")
            raise PlacedError(f"graph.params.{where}", reason) from None


def _canned_model_fn(
    tf: Any, builder: str, features: Any, labels: Any, mode: str, params: Mapping[str, Any], config: Any = None
) -> EstimatorSpec:
    described, scale = runner_values(params, config)
    columns = ColumnBuilder(described)
    parsed = columns.parse(params, COLUMN_FIELDS)
    kwargs = {key: value for key, value in params.items() if key not in RUNNER_KEYS + COLUMN_FIELDS}
    kwargs["linear_feature_columns"] = columns.build(parsed.get("linear_feature_columns", []), "linear_feature_columns")
    kwargs["dnn_feature_columns"] = columns.build(parsed.get("dnn_feature_columns", []), "dnn_feature_columns", True)
    if isinstance(features, Mapping):
        available = set(described) if described else {str(key) for key in features}
        columns.check_keys(available | ({weight} if (weight := kwargs.get("weight_column")) else set()))
    for key in ("linear_optimizer", "dnn_optimizer"):
        if key in kwargs:
            kwargs[key] = _optimizer(kwargs[key])
    classifier = builder.endswith("classifier")
    if labels is not None and classifier and labels.dtype != tf.string:
        if kwargs.get("label_vocabulary"):
            raise ColumnError(
                "label_vocabulary: the labels are class ids, not text (with data files, a text label becomes ids "
                "of the training split's sorted classes); remove label_vocabulary, which applies to text labels "
                "from a data.input_fn"
            )
        if labels.dtype.is_floating:
            labels = tf.cast(labels, tf.int64)  # the reader's class ids
    model_fn = getattr(models, builder)(**kwargs)
    spec = model_fn(raw_features(features, described, columns.identity_keys), labels, mode)
    if mode == ModeKeys.PREDICT and not classifier and scale != 1.0:
        spec = _in_label_units(tf, spec, scale)
    return spec


def _in_label_units(tf: Any, spec: EstimatorSpec, scale: float) -> EstimatorSpec:
    """A regressor's predictions and export outputs times ``data.label_scale``.

    So ``hookrun predict`` and ``export`` give the label's units, as hookrun's dense regressors do; training and
    evaluation (``average_loss``, ``prediction/mean``) stay in the scaled units the model trains on.
    """
    from hookrun.runner.graph.builders.canned.head import (
        PREDICT,
        REGRESS,
        SERVING_DEFAULT,
        PredictionKeys,
        PredictOutput,
        RegressionOutput,
    )

    value = tf.multiply(spec.predictions[PredictionKeys.PREDICTIONS], scale, name="predictions_in_label_units")
    predictions = {PredictionKeys.PREDICTIONS: value}
    regression = RegressionOutput(value=value)
    return EstimatorSpec(
        mode=spec.mode,
        predictions=predictions,
        export_outputs={SERVING_DEFAULT: regression, REGRESS: regression, PREDICT: PredictOutput(predictions)},
    )
