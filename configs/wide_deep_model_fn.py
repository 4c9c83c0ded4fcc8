"""A wide-and-deep ``model_fn`` for California housing, in the style of the Estimator census samples.

Written as for ``tf.estimator`` (``model_fn(features, labels, mode, params) -> EstimatorSpec``); the only
hookrun-specific lines are the imports and ``hookrun_features``. ``features`` is a dict (named features):
numeric columns ``float32 [batch, 1]`` (filled and z-scored), ``ocean_proximity`` as ``int64 [batch, 1]``
vocabulary ids. ``config.hookrun.feature_columns`` describes each column (``num_buckets`` for the ids); ``params``
is ``graph.params`` as written.
"""

from __future__ import annotations

import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys, layers


def model_fn(features, labels, mode, params, config):
    """Deep part: numeric columns + an embedding of each categorical column; wide part: numeric + one-hot."""
    v1 = tf.compat.v1
    columns = config.hookrun.feature_columns  # hookrun's values: config.hookrun, not params
    numeric = [features[name] for name, column in columns.items() if column["kind"] == "numeric"]
    deep, wide = list(numeric), list(numeric)
    for name, column in columns.items():
        if column["kind"] == "categorical":
            ids = features[name]
            dimension = params["embedding_dimension"]
            deep.append(layers.embedding(ids, column["num_buckets"], dimension, f"{name}_embedding"))
            wide.append(tf.one_hot(tf.reshape(ids, [-1]), column["num_buckets"]))
    net = tf.concat(deep, axis=1)
    for index, units in enumerate(params["hidden_units"]):
        net = layers.dense(net, units, f"dnn/hidden_{index}", activation="relu")
        net = layers.dropout(net, params["dropout"], mode)
    output = layers.dense(net, 1, "dnn/logits") + layers.dense(tf.concat(wide, axis=1), 1, "linear/logits")

    scale = config.hookrun.label_scale  # labels are in units of data.label_scale; report dollars
    predictions = {"predictions": tf.multiply(output, scale, name="predicted_value")}
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode=mode, predictions=predictions)

    loss = v1.losses.mean_squared_error(labels, output)
    eval_metric_ops = {
        "rmse": v1.metrics.root_mean_squared_error(labels * scale, output * scale),
        "mae": v1.metrics.mean_absolute_error(labels * scale, output * scale),
    }
    train_op = None
    training_hooks = []
    if mode == ModeKeys.TRAIN:
        optimizer = v1.train.AdamOptimizer(params["learning_rate"])
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        training_hooks = [v1.train.LoggingTensorHook({"loss": loss}, every_n_iter=params["log_every_n_steps"])]
    return EstimatorSpec(
        mode=mode,
        loss=loss,
        train_op=train_op,
        predictions=predictions,
        eval_metric_ops=eval_metric_ops,
        training_hooks=training_hooks,
    )


# hookrun: give this model_fn named features (a dict), not the one-hot matrix.
model_fn.hookrun_features = "named"
