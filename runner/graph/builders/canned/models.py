"""TF 1.15's six canned models as ``model_fn``s over ``tf.compat.v1.feature_column``.

Mirrors ``tensorflow_estimator/python/estimator/canned/{dnn,linear,dnn_linear_combined}.py`` at r1.15, the v1
classes (``tf.compat.v1.estimator.DNNClassifier`` and the others): the same arguments and defaults, the same
variable scopes and names, the same optimizers and learning rates, the same heads (:mod:`.head`):

=====================================  ===========================================================
model                                  variables (TF 1.15's names)
=====================================  ===========================================================
``dnn_*``                              ``dnn/input_from_feature_columns/input_layer/<col>_embedding/
                                       embedding_weights``, ``dnn/hiddenlayer_<i>/kernel``,
                                       ``dnn/hiddenlayer_<i>/bias``, ``dnn/hiddenlayer_<i>/batchnorm_<i>/
                                       {gamma,beta,moving_mean,moving_variance}``, ``dnn/logits/kernel``,
                                       ``dnn/logits/bias``
``linear_*``                           ``linear/linear_model/<col>/weights``, ``linear/linear_model/
                                       bias_weights``
``dnn_linear_combined_*``              both of the above
=====================================  ===========================================================

Defaults, as TF 1.15: DNN ``optimizer='Adagrad'`` at learning rate 0.05; linear ``optimizer='Ftrl'`` at 0.2;
combined: ``dnn_optimizer='Adagrad'`` at 0.001 and ``linear_optimizer='Ftrl'`` at ``min(0.005, 1/sqrt(number of
linear columns))``; an optimizer given by name gets that rate, an instance (or a callable returning one) is used
as given. ``loss_reduction='sum'`` (``tf.compat.v1.losses.Reduction.SUM``).

One difference, on purpose: TF 1.15 wrapped the variables in a ``min_max_variable_partitioner`` sized by
``RunConfig.num_ps_replicas``; hookrun has no such count in a model_fn, so variables are never partitioned
(as TF 1.15 without parameter servers: one partition, the same names).

Importing this module does not import TensorFlow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from hookrun.runner.graph.builders.canned.head import Head, RegressionHead, binary_or_multi_class_head
from hookrun.runner.graph.model_fn import EstimatorSpec, ModeKeys

#: ``dnn.py``'s learning rate for an optimizer given by name.
DNN_LEARNING_RATE = 0.05
#: ``linear.py``'s learning rate for an optimizer given by name.
LINEAR_LEARNING_RATE = 0.2
#: ``dnn_linear_combined.py``'s rates for the DNN part and (the upper bound of) the linear part.
COMBINED_DNN_LEARNING_RATE = 0.001
COMBINED_LINEAR_LEARNING_RATE = 0.005

#: Optimizer names ``get_optimizer_instance`` accepts -> the ``tf.compat.v1.train`` class (TF 1.15's table).
OPTIMIZERS = {
    "Adagrad": "AdagradOptimizer",
    "Adam": "AdamOptimizer",
    "Ftrl": "FtrlOptimizer",
    "RMSProp": "RMSPropOptimizer",
    "SGD": "GradientDescentOptimizer",
}

#: Activation names accepted in place of a function (each ``tf.nn.<name>``).
ACTIVATIONS = ("relu", "relu6", "tanh", "sigmoid", "elu", "selu", "softplus", "softsign", "leaky_relu", "swish")


def _tf() -> Any:
    from hookrun.runner.tf_env import import_tensorflow

    return import_tensorflow()


def get_optimizer_instance(opt: Any, learning_rate: float) -> Any:
    """An optimizer from a name, an instance or a callable; mirrors TF 1.15's ``optimizers.get_optimizer_instance``.

    Args:
        opt: ``'Adagrad'``, ``'Adam'``, ``'Ftrl'``, ``'RMSProp'`` or ``'SGD'`` (built with ``learning_rate``),
            a ``tf.compat.v1.train.Optimizer``, or a callable returning one.
        learning_rate: the rate for a name (> 0).

    Returns:
        A ``tf.compat.v1.train.Optimizer``.

    Raises:
        ValueError: an unknown name, or an object that is not a v1 optimizer.
    """
    tf = _tf()
    if isinstance(opt, str):
        if opt not in OPTIMIZERS:
            raise ValueError(f"Unsupported optimizer name: {opt}. Supported names are: {tuple(sorted(OPTIMIZERS))}")
        return getattr(tf.compat.v1.train, OPTIMIZERS[opt])(learning_rate=learning_rate)
    if callable(opt) and not isinstance(opt, tf.compat.v1.train.Optimizer):
        opt = opt()
    if not isinstance(opt, tf.compat.v1.train.Optimizer):
        raise ValueError(f"The given object is not an Optimizer instance. Given: {opt}")
    return opt


def activation(value: str | Callable[[Any], Any] | None) -> Callable[[Any], Any] | None:
    """``activation_fn``: a function, None (linear), or a name of :data:`ACTIVATIONS` (``tf.nn.<name>``).

    Raises:
        ValueError: an unknown name.
    """
    if value is None or callable(value):
        return value
    if value not in ACTIVATIONS:
        raise ValueError(f"activation_fn {value!r} is not one of {', '.join(ACTIVATIONS)} (or pass a function)")
    return getattr(_tf().nn, value)


def _check_features(features: Any) -> None:
    if not isinstance(features, Mapping):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: {type(features)}")


def _hidden_summary(tf: Any, value: Any, tag: str) -> None:
    """``_add_hidden_layer_summary``: the zero fraction and a histogram of a layer's output."""
    tf.compat.v1.summary.scalar(f"{tag}/fraction_of_zero_values", tf.nn.zero_fraction(value))
    tf.compat.v1.summary.histogram(f"{tag}/activation", value)


def _dense(tf: Any, inputs: Any, units: int, fn: Callable[[Any], Any] | None) -> Any:
    """``core_layers.Dense`` with a Glorot-uniform kernel, in the current variable scope (``kernel``, ``bias``)."""
    v1 = tf.compat.v1
    kernel = v1.get_variable("kernel", [int(inputs.shape[-1]), int(units)], initializer=v1.glorot_uniform_initializer())
    bias = v1.get_variable("bias", [int(units)], initializer=v1.zeros_initializer())
    outputs = tf.nn.bias_add(tf.matmul(inputs, kernel), bias)
    return fn(outputs) if fn is not None else outputs


def dnn_logits(
    features: Mapping[str, Any],
    mode: str,
    units: int,
    hidden_units: Sequence[int],
    feature_columns: Iterable[Any],
    activation_fn: str | Callable[[Any], Any] | None = "relu",
    dropout: float | None = None,
    batch_norm: bool = False,
) -> Any:
    """The DNN's logits in the current variable scope; TF 1.15's ``dnn_logit_fn_builder`` / ``_DNNModel``.

    Args:
        features: feature key -> ``Tensor``/``SparseTensor`` (the raw values the columns read).
        mode: ``ModeKeys``; dropout and batch-norm training only in ``train``.
        units: the logits' width.
        hidden_units: units per hidden layer, input to output.
        feature_columns: dense ``tf.compat.v1.feature_column`` columns (numeric, bucketized, embedding, indicator).
        activation_fn: each hidden layer's activation (default ``relu``).
        dropout: the probability a hidden unit is dropped while training, or None.
        batch_norm: batch normalization (momentum 0.999) after each hidden layer.

    Returns:
        ``float32 [batch, units]``.
    """
    tf = _tf()
    v1 = tf.compat.v1
    fn = activation(activation_fn)
    training = mode == ModeKeys.TRAIN
    with v1.variable_scope("input_from_feature_columns"):
        net = v1.feature_column.input_layer(features, list(feature_columns))
    for index, width in enumerate(hidden_units):
        with v1.variable_scope(f"hiddenlayer_{index}") as scope:
            net = _dense(tf, net, int(width), fn)
            if dropout is not None and training:
                net = tf.nn.dropout(net, rate=float(dropout))
            if batch_norm:
                net = v1.layers.batch_normalization(
                    net, momentum=0.999, training=training, trainable=True, name=f"batchnorm_{index}"
                )
        _hidden_summary(tf, net, scope.name)
    with v1.variable_scope("logits") as scope:
        logits = _dense(tf, net, int(units), None)
    _hidden_summary(tf, logits, scope.name)
    return logits


def _fraction_of_zero(tf: Any, variables: list[Any]) -> Any:
    """``_compute_fraction_of_zero``: the share of zero weights over ``variables``."""
    with tf.name_scope("zero_fraction"):
        with tf.name_scope("total_size"):
            sizes = [tf.size(x, out_type=tf.int64) for x in variables]
            total_size = tf.add_n(sizes)
        with tf.name_scope("total_zero"):
            total_zero = tf.add_n(
                [
                    tf.cond(
                        tf.equal(size, tf.constant(0, dtype=tf.int64)),
                        true_fn=lambda: tf.constant(0, dtype=tf.float32),
                        false_fn=lambda x=x, size=size: tf.nn.zero_fraction(x) * tf.cast(size, tf.float32),
                        name="zero_count",
                    )
                    for x, size in zip(variables, sizes, strict=True)
                ]
            )
        with tf.name_scope("compute"):
            fraction = total_zero / tf.cast(total_size, dtype=tf.float32, name="float32_size")
        return tf.identity(fraction, name="zero_fraction_or_nan")


def linear_logits(
    features: Mapping[str, Any], units: int, feature_columns: Iterable[Any], sparse_combiner: str = "sum"
) -> Any:
    """The linear model's logits in the current variable scope; TF 1.15's ``linear_logit_fn_builder``.

    Args:
        features: feature key -> ``Tensor``/``SparseTensor``.
        units: the logits' width.
        feature_columns: any ``tf.compat.v1.feature_column`` columns (categorical ones get one weight per id).
        sparse_combiner: ``sum``, ``mean`` or ``sqrtn``, for multivalent categorical columns.

    Returns:
        ``float32 [batch, units]``; variables ``linear_model/<col>/weights`` and ``linear_model/bias_weights``.
    """
    tf = _tf()
    v1 = tf.compat.v1
    cols_to_vars: dict[Any, Any] = {}
    logits = v1.feature_column.linear_model(
        features, list(feature_columns), units=int(units), sparse_combiner=sparse_combiner, cols_to_vars=cols_to_vars
    )
    bias = cols_to_vars.pop("bias")
    variables = [v for value in cols_to_vars.values() for v in (value if isinstance(value, list) else [value])]
    if units > 1:
        v1.summary.histogram("bias", bias)
    else:
        v1.summary.scalar("bias", bias[0][0])
    v1.summary.scalar("fraction_of_zero_weights", _fraction_of_zero(tf, variables))
    return logits


def dnn_model_fn(
    features: Mapping[str, Any],
    labels: Any,
    mode: str,
    head: Head,
    hidden_units: Sequence[int],
    feature_columns: Iterable[Any],
    optimizer: Any = "Adagrad",
    activation_fn: str | Callable[[Any], Any] | None = "relu",
    dropout: float | None = None,
    batch_norm: bool = False,
) -> EstimatorSpec:
    """TF 1.15's ``_dnn_model_fn``: logits under ``dnn/``, the head's spec with ``optimizer`` (rate 0.05 by name).

    Raises:
        ValueError: ``features`` is not a dict, an unknown optimizer name or object.
    """
    tf = _tf()
    opt = get_optimizer_instance(optimizer, DNN_LEARNING_RATE)
    _check_features(features)
    with tf.compat.v1.variable_scope("dnn", values=tuple(features.values())):
        logits = dnn_logits(
            features, mode, head.logits_dimension, hidden_units, feature_columns, activation_fn, dropout, batch_norm
        )
        return head.create_estimator_spec(features=features, mode=mode, labels=labels, optimizer=opt, logits=logits)


def linear_model_fn(
    features: Mapping[str, Any],
    labels: Any,
    mode: str,
    head: Head,
    feature_columns: Iterable[Any],
    optimizer: Any = "Ftrl",
    sparse_combiner: str = "sum",
) -> EstimatorSpec:
    """TF 1.15's ``_linear_model_fn``: logits under ``linear/``, the head's spec with ``optimizer``.

    Rate 0.2 by name; ``None``: Ftrl at ``min(0.2, 1/sqrt(number of columns))``).

    Raises:
        ValueError: ``features`` is not a dict, an unknown optimizer name or object.
    """
    tf = _tf()
    _check_features(features)
    columns = list(feature_columns)
    with tf.compat.v1.variable_scope("linear", values=tuple(features.values())):
        logits = linear_logits(features, head.logits_dimension, columns, sparse_combiner)
        if optimizer is None:
            optimizer = tf.compat.v1.train.FtrlOptimizer(
                learning_rate=min(LINEAR_LEARNING_RATE, 1.0 / math.sqrt(len(columns)))
            )
        opt = get_optimizer_instance(optimizer, LINEAR_LEARNING_RATE)
        return head.create_estimator_spec(features=features, mode=mode, labels=labels, optimizer=opt, logits=logits)


def linear_learning_rate(num_linear_feature_columns: int) -> float:
    """``min(0.005, 1 / sqrt(n))``: the combined model's linear rate (TF 1.15's ``_linear_learning_rate``)."""
    return min(COMBINED_LINEAR_LEARNING_RATE, 1.0 / math.sqrt(num_linear_feature_columns))


def dnn_linear_combined_model_fn(
    features: Mapping[str, Any],
    labels: Any,
    mode: str,
    head: Head,
    linear_feature_columns: Iterable[Any] | None = None,
    linear_optimizer: Any = "Ftrl",
    dnn_feature_columns: Iterable[Any] | None = None,
    dnn_optimizer: Any = "Adagrad",
    dnn_hidden_units: Sequence[int] | None = None,
    dnn_activation_fn: str | Callable[[Any], Any] | None = "relu",
    dnn_dropout: float | None = None,
    batch_norm: bool = False,
    linear_sparse_combiner: str = "sum",
) -> EstimatorSpec:
    """TF 1.15's ``_dnn_linear_combined_model_fn``: ``logits = dnn logits + linear logits``.

    Each part is trained by its own optimizer on its own scope's variables, then ``global_step += 1``.

    Raises:
        ValueError: ``features`` is not a dict, neither column list given, DNN columns without
            ``dnn_hidden_units``, an unknown optimizer.
    """
    tf = _tf()
    v1 = tf.compat.v1
    _check_features(features)
    linear_columns = list(linear_feature_columns or [])
    dnn_columns = list(dnn_feature_columns or [])
    if not linear_columns and not dnn_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    dnn_part = linear_part = None
    if dnn_columns:
        dnn_opt = get_optimizer_instance(dnn_optimizer, COMBINED_DNN_LEARNING_RATE)
        if not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is specified.")
        with v1.variable_scope("dnn", values=tuple(features.values())) as scope:
            dnn_scope = scope.name
            dnn_part = dnn_logits(
                features,
                mode,
                head.logits_dimension,
                dnn_hidden_units,
                dnn_columns,
                dnn_activation_fn,
                dnn_dropout,
                batch_norm,
            )
    if linear_columns:
        linear_opt = get_optimizer_instance(linear_optimizer, linear_learning_rate(len(linear_columns)))
        with v1.variable_scope("linear", values=tuple(features.values())) as scope:
            linear_scope = scope.name
            linear_part = linear_logits(features, head.logits_dimension, linear_columns, linear_sparse_combiner)
            _hidden_summary(tf, linear_part, scope.name)
    if dnn_part is not None and linear_part is not None:
        logits = dnn_part + linear_part
    else:
        logits = dnn_part if dnn_part is not None else linear_part

    def train_op_fn(loss: Any) -> Any:
        train_ops = []
        global_step = v1.train.get_global_step()
        if dnn_part is not None:
            variables = v1.get_collection(v1.GraphKeys.TRAINABLE_VARIABLES, scope=dnn_scope)
            train_ops.append(dnn_opt.minimize(loss, var_list=variables))
        if linear_part is not None:
            variables = v1.get_collection(v1.GraphKeys.TRAINABLE_VARIABLES, scope=linear_scope)
            train_ops.append(linear_opt.minimize(loss, var_list=variables))
        train_op = tf.group(*train_ops)
        with tf.control_dependencies([train_op]):
            return v1.assign_add(global_step, 1).op

    return head.create_estimator_spec(
        features=features, mode=mode, labels=labels, train_op_fn=train_op_fn, logits=logits
    )


ModelFn = Callable[..., EstimatorSpec]


def _model_fn(run: Callable[[Any, Any, str], EstimatorSpec], head: Head) -> ModelFn:
    def model_fn(features: Any, labels: Any, mode: str, params: Any = None, config: Any = None) -> EstimatorSpec:
        """The canned model's ``model_fn(features, labels, mode, params, config)``, as ``tf.estimator`` called it.

        With hookrun's named features from data files (``config.hookrun.feature_columns``, the runner's
        description of the data), the columns read the values as read: z-scores back in the column's units,
        text columns' text (:func:`hookrun.runner.graph.builders.canned.columns.raw_features`); a classifier's
        float class ids become ``int64``. An ``input_fn``'s features and labels pass as they are.
        """
        from hookrun.runner.graph.builders.canned.columns import runner_values

        described, _ = runner_values(params, config)
        if described is not None and isinstance(features, Mapping):
            from hookrun.runner.graph.builders.canned.columns import raw_features

            features = raw_features(features, described, set())
            classifier = not isinstance(head, RegressionHead)
            if classifier and hasattr(labels, "dtype") and labels.dtype.is_floating:
                labels = _tf().cast(labels, _tf().int64)
        return run(features, labels, mode)

    model_fn.head = head  # type: ignore[attr-defined]
    return model_fn


def dnn_classifier(
    hidden_units: Sequence[int],
    feature_columns: Iterable[Any],
    n_classes: int = 2,
    weight_column: Any = None,
    label_vocabulary: Sequence[str] | None = None,
    optimizer: Any = "Adagrad",
    activation_fn: str | Callable[[Any], Any] | None = "relu",
    dropout: float | None = None,
    loss_reduction: str = "sum",
    batch_norm: bool = False,
) -> ModelFn:
    """The ``model_fn`` of ``tf.compat.v1.estimator.DNNClassifier`` (TF 1.15), same arguments and defaults.

    Args:
        hidden_units: units per hidden layer (``[64, 32]``).
        feature_columns: dense ``tf.compat.v1.feature_column`` columns.
        n_classes: number of classes (>= 2; 2 is the sigmoid ``BinaryClassHead``).
        weight_column: feature key or ``numeric_column`` of per-example loss weights.
        label_vocabulary: label strings in class-id order; else labels are integer ids.
        optimizer: name (learning rate 0.05), ``tf.compat.v1.train.Optimizer`` or callable; default Adagrad.
        activation_fn: hidden activation (function, None, or ``tf.nn`` name); default relu.
        dropout: drop probability while training, or None.
        loss_reduction: ``tf.compat.v1.losses.Reduction`` name; default ``sum`` (TF 1.15's).
        batch_norm: batch normalization after each hidden layer.

    Returns:
        ``model_fn(features, labels, mode, config=None) -> EstimatorSpec``; its ``head`` attribute is the head.
    """
    head = binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
    columns = tuple(feature_columns or [])
    return _model_fn(
        lambda f, y, m: dnn_model_fn(
            f, y, m, head, hidden_units, columns, optimizer, activation_fn, dropout, batch_norm
        ),
        head,
    )


def dnn_regressor(
    hidden_units: Sequence[int],
    feature_columns: Iterable[Any],
    label_dimension: int = 1,
    weight_column: Any = None,
    optimizer: Any = "Adagrad",
    activation_fn: str | Callable[[Any], Any] | None = "relu",
    dropout: float | None = None,
    loss_reduction: str = "sum",
    batch_norm: bool = False,
) -> ModelFn:
    """The ``model_fn`` of ``tf.compat.v1.estimator.DNNRegressor`` (TF 1.15).

    Arguments as :func:`dnn_classifier`, with ``label_dimension`` (the label's width) in place of the classes.
    """
    head = RegressionHead(label_dimension, weight_column, loss_reduction)
    columns = tuple(feature_columns or [])
    return _model_fn(
        lambda f, y, m: dnn_model_fn(
            f, y, m, head, hidden_units, columns, optimizer, activation_fn, dropout, batch_norm
        ),
        head,
    )


def linear_classifier(
    feature_columns: Iterable[Any],
    n_classes: int = 2,
    weight_column: Any = None,
    label_vocabulary: Sequence[str] | None = None,
    optimizer: Any = "Ftrl",
    loss_reduction: str = "sum",
    sparse_combiner: str = "sum",
) -> ModelFn:
    """The ``model_fn`` of ``tf.compat.v1.estimator.LinearClassifier`` (TF 1.15): Ftrl at 0.2 by default.

    ``sparse_combiner`` (``sum``, ``mean``, ``sqrtn``) reduces multivalent categorical columns.
    """
    head = binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
    columns = tuple(feature_columns or [])
    return _model_fn(lambda f, y, m: linear_model_fn(f, y, m, head, columns, optimizer, sparse_combiner), head)


def linear_regressor(
    feature_columns: Iterable[Any],
    label_dimension: int = 1,
    weight_column: Any = None,
    optimizer: Any = "Ftrl",
    loss_reduction: str = "sum",
    sparse_combiner: str = "sum",
) -> ModelFn:
    """The ``model_fn`` of ``tf.compat.v1.estimator.LinearRegressor`` (TF 1.15); see :func:`linear_classifier`."""
    head = RegressionHead(label_dimension, weight_column, loss_reduction)
    columns = tuple(feature_columns or [])
    return _model_fn(lambda f, y, m: linear_model_fn(f, y, m, head, columns, optimizer, sparse_combiner), head)


def _combined(head: Head, **kwargs: Any) -> ModelFn:
    if not kwargs["linear_feature_columns"] and not kwargs["dnn_feature_columns"]:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    return _model_fn(lambda f, y, m: dnn_linear_combined_model_fn(f, y, m, head, **kwargs), head)


def dnn_linear_combined_classifier(
    linear_feature_columns: Iterable[Any] | None = None,
    linear_optimizer: Any = "Ftrl",
    dnn_feature_columns: Iterable[Any] | None = None,
    dnn_optimizer: Any = "Adagrad",
    dnn_hidden_units: Sequence[int] | None = None,
    dnn_activation_fn: str | Callable[[Any], Any] | None = "relu",
    dnn_dropout: float | None = None,
    n_classes: int = 2,
    weight_column: Any = None,
    label_vocabulary: Sequence[str] | None = None,
    loss_reduction: str = "sum",
    batch_norm: bool = False,
    linear_sparse_combiner: str = "sum",
) -> ModelFn:
    """The ``model_fn`` of ``tf.compat.v1.estimator.DNNLinearCombinedClassifier`` (TF 1.15).

    Wide (Ftrl, ``min(0.005, 1/sqrt(n))``) and deep (Adagrad, 0.001) parts summed into one logit.

    Raises:
        ValueError: neither column list given.
    """
    head = binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
    return _combined(
        head,
        linear_feature_columns=tuple(linear_feature_columns or []),
        linear_optimizer=linear_optimizer,
        dnn_feature_columns=tuple(dnn_feature_columns or []),
        dnn_optimizer=dnn_optimizer,
        dnn_hidden_units=dnn_hidden_units,
        dnn_activation_fn=dnn_activation_fn,
        dnn_dropout=dnn_dropout,
        batch_norm=batch_norm,
        linear_sparse_combiner=linear_sparse_combiner,
    )


def dnn_linear_combined_regressor(
    linear_feature_columns: Iterable[Any] | None = None,
    linear_optimizer: Any = "Ftrl",
    dnn_feature_columns: Iterable[Any] | None = None,
    dnn_optimizer: Any = "Adagrad",
    dnn_hidden_units: Sequence[int] | None = None,
    dnn_activation_fn: str | Callable[[Any], Any] | None = "relu",
    dnn_dropout: float | None = None,
    label_dimension: int = 1,
    weight_column: Any = None,
    loss_reduction: str = "sum",
    batch_norm: bool = False,
    linear_sparse_combiner: str = "sum",
) -> ModelFn:
    """The ``model_fn`` of ``tf.compat.v1.estimator.DNNLinearCombinedRegressor`` (TF 1.15).

    See :func:`dnn_linear_combined_classifier`.
    """
    head = RegressionHead(label_dimension, weight_column, loss_reduction)
    return _combined(
        head,
        linear_feature_columns=tuple(linear_feature_columns or []),
        linear_optimizer=linear_optimizer,
        dnn_feature_columns=tuple(dnn_feature_columns or []),
        dnn_optimizer=dnn_optimizer,
        dnn_hidden_units=dnn_hidden_units,
        dnn_activation_fn=dnn_activation_fn,
        dnn_dropout=dnn_dropout,
        batch_norm=batch_norm,
        linear_sparse_combiner=linear_sparse_combiner,
    )


#: The six model_fn factories by their ``tf.estimator`` class name.
CANNED = {
    "DNNClassifier": dnn_classifier,
    "DNNRegressor": dnn_regressor,
    "LinearClassifier": linear_classifier,
    "LinearRegressor": linear_regressor,
    "DNNLinearCombinedClassifier": dnn_linear_combined_classifier,
    "DNNLinearCombinedRegressor": dnn_linear_combined_regressor,
}
