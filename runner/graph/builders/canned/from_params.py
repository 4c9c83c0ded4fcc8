"""The canned models as built-in builders: a model_fn built from ``graph.params`` (YAML ``feature_columns``).

The built-in ``dnn_linear_combined_classifier`` and ``dnn_linear_combined_regressor`` call :func:`canned_model_fn`,
and so do ``dnn_classifier``, ``dnn_regressor``, ``linear_classifier`` and ``linear_regressor`` given
``feature_columns`` (their ``variant``, :func:`single_list_variant`):
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
from hookrun.runner.graph.builders.canned.columns import ColumnBuilder, raw_features, runner_values
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




def label_classes(config: Any, n_classes: int) -> tuple[str, ...] | None:
    """The reader's class vocabulary of a text label (``config.hookrun.label_vocabulary``), in class-id order.

    Args:
        config: a model_fn's ``config`` (:class:`hookrun.runner.graph.run_config.RunInfo`), or None.
        n_classes: the model's classes.

    Returns:
        The label's values when the data files' label is text and has exactly ``n_classes`` classes (the
        canned classifier then reports them as ``classes``, as with Estimator's ``label_vocabulary``); None for a
        numeric label (ids), an ``input_fn``, or another number of classes (ids as text, as TF 1.15's head).
    """
    values = getattr(getattr(config, "hookrun", None), "label_vocabulary", None)
    if not values or len(values) != int(n_classes):
        return None
    return tuple(values)


def canned_model_fn(
    builder: str,
    features: Any,
    labels: Any,
    mode: str,
    params: Mapping[str, Any],
    config: Any = None,
    feature_columns: list[Any] | None = None,
) -> EstimatorSpec:
    """Build the canned model ``builder`` from its params and call its model_fn.

    Args:
        builder: a model factory's name in :mod:`~hookrun.runner.graph.builders.canned.models`: the combined ones
            (columns in ``params``' ``linear_feature_columns``/``dnn_feature_columns``), or ``dnn_classifier``,
            ``dnn_regressor``, ``linear_classifier``, ``linear_regressor`` (columns in ``feature_columns``).
        features: named features from the built-in reader, or an ``input_fn``'s dict.
        labels: ``[batch, 1]``: class ids (the reader's float ids are cast to ``int64``) or values.
        mode: ``ModeKeys``.
        params: ``graph.params`` (checked).
        config: the model_fn's ``config``; its ``hookrun.feature_columns`` describes the data files' columns.
        feature_columns: a single-list model's YAML entries (``graph.params.feature_columns`` as written: in
            ``params`` that key is the runner's description of the data when it reads data files).

    Returns:
        The model's ``EstimatorSpec``.

    Raises:
        PlacedError: at the column's entry (``graph.params.dnn_feature_columns[0].numeric``): a column the data
            cannot give (an unknown feature key, ``from_data`` of a column without a vocabulary, a cross of a
            numeric column of the data).
    """
    from hookrun.common.errors import PlacedError
    from hookrun.runner.tf_env import import_tensorflow

    with quiet_feature_columns():
        try:
            return _canned_model_fn(
                import_tensorflow(), builder, features, labels, mode, params, config, feature_columns
            )
        except ColumnError as err:  # "<list>[i].<arg>: reason": reported at that entry's line of the config
            where, _, reason = str(err).partition(": ")
            raise PlacedError(f"graph.params.{where}", reason) from None


def _single_list_kwargs(builder: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """TF 1.15's arguments of a single-list model from the dense builder's params (hookrun's names mapped).

    ``activation`` is ``activation_fn``, ``dropout`` 0 is None; a key left None keeps TF 1.15's default; keys the
    model does not take (``l2`` at 0) are dropped.
    """
    import inspect

    renamed = {"activation": "activation_fn"}
    taken = set(inspect.signature(getattr(models, builder)).parameters) - {"feature_columns"}
    kwargs = {renamed.get(key, key): value for key, value in params.items() if key not in RUNNER_KEYS}
    kwargs = {key: value for key, value in kwargs.items() if key in taken and value is not None}
    if not kwargs.get("dropout"):
        kwargs.pop("dropout", None)
    return kwargs


def _canned_model_fn(
    tf: Any,
    builder: str,
    features: Any,
    labels: Any,
    mode: str,
    params: Mapping[str, Any],
    config: Any = None,
    feature_columns: list[Any] | None = None,
) -> EstimatorSpec:
    described, scale = runner_values(params, config)
    columns = ColumnBuilder(described)
    if feature_columns is not None:  # dnn_classifier & co. given `feature_columns`
        parsed = columns.parse({"feature_columns": feature_columns}, ("feature_columns",))
        kwargs = _single_list_kwargs(builder, params)
        dense = builder.startswith("dnn")
        kwargs["feature_columns"] = columns.build(parsed["feature_columns"], "feature_columns", dense)
        optimizer_keys: tuple[str, ...] = ("optimizer",)
    else:
        parsed = columns.parse(params, COLUMN_FIELDS)
        kwargs = {key: value for key, value in params.items() if key not in RUNNER_KEYS + COLUMN_FIELDS}
        kwargs["linear_feature_columns"] = columns.build(
            parsed.get("linear_feature_columns", []), "linear_feature_columns"
        )
        kwargs["dnn_feature_columns"] = columns.build(
            parsed.get("dnn_feature_columns", []), "dnn_feature_columns", True
        )
        optimizer_keys = ("linear_optimizer", "dnn_optimizer")
    if isinstance(features, Mapping):
        available = set(described) if described else {str(key) for key in features}
        columns.check_keys(available | ({weight} if (weight := kwargs.get("weight_column")) else set()))
    for key in optimizer_keys:
        if key in kwargs:
            kwargs[key] = _optimizer(kwargs[key])
    classifier = builder.endswith("classifier")
    if labels is not None and classifier and labels.dtype != tf.string and kwargs.get("label_vocabulary"):
        raise ColumnError(
            "label_vocabulary: the labels are class ids, not text (with data files, a text label becomes ids "
            "of the training split's sorted classes); remove label_vocabulary, which applies to text labels "
            "from a data.input_fn"
        )
    classes = label_classes(config, kwargs.get("n_classes", 2)) if classifier and described is not None else None
    if classes is not None and not kwargs.get("label_vocabulary"):
        # As Estimator's label_vocabulary: `classes` (predict, export) are the label's values, not ids as text
        kwargs["label_vocabulary"] = list(classes)
        if labels is not None and labels.dtype != tf.string:
            ids = tf.cast(labels, tf.int64)  # the reader's class ids, in the vocabulary's order
            labels = tf.gather(tf.constant(classes, tf.string), ids, name="label_values")
    if labels is not None and classifier and labels.dtype.is_floating:
        labels = tf.cast(labels, tf.int64)  # the reader's class ids (a numeric label)
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


def single_list_variant(builder: str, params: Mapping[str, Any] | None) -> Any:
    """The canned model_fn a dense builder becomes when ``graph.params`` has ``feature_columns``, else None.

    The registry calls it (a builder folder's ``variant``) with ``graph.params`` as written (placeholders
    expanded) before the runner adds its own keys: the YAML list is taken here, since in the params the runner
    hands a builder ``feature_columns`` is its description of the data files' columns (``config.hookrun``'s for a
    model_fn).

    Args:
        builder: ``dnn_classifier``, ``dnn_regressor``, ``linear_classifier`` or ``linear_regressor``.
        params: ``graph.params``, or None (unknown: the dense builder).

    Returns:
        ``model_fn(features, labels, mode, params, config) -> EstimatorSpec`` taking named features
        (``hookrun_features = "named"``), or None without ``feature_columns``.
    """
    columns = params.get("feature_columns") if isinstance(params, Mapping) else None
    if columns is None:
        return None
    columns = list(columns)

    def model_fn(features: Any, labels: Any, mode: str, params: dict[str, Any], config: Any = None) -> EstimatorSpec:
        return canned_model_fn(builder, features, labels, mode, params, config, feature_columns=columns)

    model_fn.__name__ = model_fn.__qualname__ = builder
    model_fn.__doc__ = f"TF 1.15's canned {builder} over the YAML feature_columns (a model_fn)."
    model_fn.hookrun_features = "named"  # type: ignore[attr-defined]
    return model_fn
