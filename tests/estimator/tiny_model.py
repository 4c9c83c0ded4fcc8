"""A tiny Estimator program's model_fn and input functions, for tests/estimator (a linear regression).

Importable by name (``tests.estimator.tiny_model:model_fn``), so a run's ``config.yaml`` names it.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from hookrun import estimator as tf_estimator

ROWS = 32
BATCH = 8


def data(rows: int = ROWS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``x`` float32 [rows, 2] and ``y = 3 x0 - 2 x1 + 1`` float32 [rows, 1]."""
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(rows, 2)).astype(np.float32)
    y = (x @ np.array([[3.0], [-2.0]], np.float32) + 1.0).astype(np.float32)
    return x, y


def train_input_fn(params):
    x, y = data()
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(params.get("batch", BATCH))


def eval_input_fn():
    x, y = data(seed=1)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(BATCH)  # 4 batches


def predict_input_fn():
    x, _ = data(rows=10, seed=2)
    return tf.data.Dataset.from_tensor_slices({"x": x}).batch(4)  # 4 + 4 + 2 rows


def model_fn(features, labels, mode, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [2, 1], initializer=v1.zeros_initializer())
    b = v1.get_variable("b", [1], initializer=v1.zeros_initializer())
    prediction = tf.matmul(features["x"], w) + b
    if mode == tf_estimator.ModeKeys.PREDICT:
        return tf_estimator.EstimatorSpec(
            mode,
            predictions={"y": prediction, "twice": 2 * prediction},
            export_outputs={"serving_default": tf_estimator.export.RegressionOutput(prediction)}
            if params.get("regression_output") else None,
        )
    loss = v1.losses.mean_squared_error(labels, prediction)
    if mode == tf_estimator.ModeKeys.EVAL:
        return tf_estimator.EstimatorSpec(
            mode, loss=loss, eval_metric_ops={"mae": v1.metrics.mean_absolute_error(labels, prediction)}
        )
    train_op = v1.train.GradientDescentOptimizer(params.get("learning_rate", 0.1)).minimize(
        loss, global_step=v1.train.get_global_step()
    )
    return tf_estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def serving_input_fn():
    """A raw receiver of ``x`` float32 [batch, 2] (``build_raw_serving_input_receiver_fn``)."""
    x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
    return tf_estimator.export.ServingInputReceiver({"x": x}, {"x": x})
