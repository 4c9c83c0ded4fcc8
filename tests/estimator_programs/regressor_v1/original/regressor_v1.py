"""A DNN regressor model_fn as TF 1.x Estimator programs wrote it (TF 1.15): issue 25's "Done when" program.

No layer is named; the loss, a ``tf.summary.scalar``, the metrics *and the optimizer* are built under
``mode != PREDICT`` (so also in eval mode, the training-data-analyst ``txtcls1`` pattern); one
``EstimatorSpec`` carries every field. The features are one float matrix, as an input_fn returning a tensor
gave them.
"""

import tensorflow as tf


def model_fn(features, labels, mode, params):
    """``features`` float32 [batch, n], ``labels`` float32 [batch, 1]; params ``hidden_units``, ``learning_rate``."""
    net = features
    for units in params["hidden_units"]:
        net = tf.layers.dense(net, units, activation=tf.nn.relu)
    predictions = tf.layers.dense(net, 1)

    loss = train_op = metrics = None
    if mode != tf.estimator.ModeKeys.PREDICT:
        loss = tf.losses.mean_squared_error(labels, predictions)
        tf.summary.scalar("batch_rmse", tf.sqrt(loss))
        optimizer = tf.train.AdamOptimizer(params["learning_rate"])
        train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
        metrics = {"rmse": tf.metrics.root_mean_squared_error(labels, predictions)}
    return tf.estimator.EstimatorSpec(
        mode, predictions=predictions, loss=loss, train_op=train_op, eval_metric_ops=metrics
    )
