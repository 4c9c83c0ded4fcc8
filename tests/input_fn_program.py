"""An Estimator program's model_fn and input_fns, as a user would bring them (issue 24).

Dict features with a float matrix ``x`` and a string feature ``city``; int64 class labels. The model_fn
builds its own train_op (plain SGD) and records what it was called with in ``SEEN`` for the tests.
Used by tests/test_input_fn.py, through ``data.input_fn`` and in a plain MonitoredTrainingSession.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys

#: mode -> what model_fn was called with: ``features``, ``labels``, ``params``, ``config``.
SEEN: dict[str, dict] = {}
#: mode -> (params, config) the input functions were called with.
CALLS: list[tuple[str, dict, object]] = []

CITIES = np.array([b"paris", b"rome", b"oslo"])


def rows(n: int, seed: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``n`` examples: ``x`` float32 [n, 2], ``city`` bytes [n], int64 labels in {0, 1}."""
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    city = CITIES[np.arange(n) % 3]
    labels = ((x[:, 0] + (city == b"rome")) > 0.5).astype(np.int64)
    return {"x": x, "city": city}, labels


def input_fn(params, mode, config):
    CALLS.append((mode, params, config))
    features, labels = rows(params["rows"], 0)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    return dataset.batch(params["batch"]).repeat(params["epochs"])


def eval_input_fn(params, mode):
    CALLS.append((mode, params, None))
    features, labels = rows(40, 1)
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)  # 16 + 16 + 8 rows


def model_fn(features, labels, mode, params, config):
    SEEN[mode] = {"features": features, "labels": labels, "params": params, "config": config}
    v1 = tf.compat.v1
    city = tf.one_hot(tf.strings.to_hash_bucket_fast(features["city"], 5), 5)
    inputs = tf.concat([features["x"], city], axis=1)
    w = v1.get_variable("w", [7, 2], initializer=v1.glorot_uniform_initializer(seed=7))
    b = v1.get_variable("b", [2], initializer=v1.zeros_initializer())
    logits = tf.matmul(inputs, w) + b
    predictions = tf.argmax(logits, 1)
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions={"class": predictions})
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == ModeKeys.EVAL:
        return EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": v1.metrics.accuracy(labels, predictions)})
    optimizer = v1.train.GradientDescentOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


# hostile input functions -------------------------------------------------------------------------------------


def raising_input_fn(params):
    raise FileNotFoundError("no such file: /data/train-*.tfrecord")


def wrong_type_input_fn():
    return [1.0, 2.0]


def empty_input_fn():
    features, labels = rows(0, 0)
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(4)


def filtered_empty_input_fn():
    features, labels = rows(8, 0)
    return tf.data.Dataset.from_tensor_slices((features, labels)).filter(lambda f, label: label > 5).batch(4)


def renamed_input_fn():
    features, labels = rows(8, 0)
    features = {"xs": features["x"], "city": features["city"]}
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(4)


def tensors_input_fn(params):
    """The ``(features, labels)`` tuple-of-tensors form (with a SparseTensor feature), as Estimator accepted."""
    features, labels = rows(params["rows"], 0)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(params["batch"]).repeat(params["epochs"])
    batch_features, batch_labels = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    return batch_features, batch_labels


# steps_per_run: a sparse feature (windows cannot stack) and fixed-shape dense batches (they can) ------------


def tagged_input_fn(params):
    """Endless batches of 8 with ``tags``, a SparseTensor of per-row tag ids (1 to 3 values a row)."""
    features, labels = rows(32, 2)
    tags = [[i % 5, (i * 3) % 5, 4][: 1 + i % 3] for i in range(32)]
    indices = [[row, k] for row, values in enumerate(tags) for k in range(len(values))]
    values = np.array([value for row in tags for value in row], dtype=np.int64)
    sparse = tf.SparseTensor(indices, values, [32, 3])

    dataset = tf.data.Dataset.from_tensor_slices(({"x": features["x"], "tags": sparse}, labels))
    if params.get("dense"):
        dataset = dataset.map(lambda f, label: ({"x": f["x"]}, label))
    return dataset.batch(8, drop_remainder=True).repeat()


def tagged_model_fn(features, labels, mode, params):
    v1 = tf.compat.v1
    inputs = features["x"]
    if "tags" in features:
        SEEN["tags"] = features["tags"]
        counts = tf.sparse.reduce_sum(tf.sparse.map_values(tf.ones_like, features["tags"]), axis=1)
        inputs = tf.concat([inputs, tf.cast(tf.reshape(counts, [-1, 1]), tf.float32)], axis=1)
    w = v1.get_variable("w", [int(inputs.shape[1]), 2], initializer=v1.glorot_uniform_initializer(seed=3))
    logits = tf.matmul(inputs, w)
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = v1.train.GradientDescentOptimizer(0.3).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


def endless_eval_input_fn(params, mode):
    return eval_input_fn(params, mode).repeat()


def triple_input_fn():
    features, labels = rows(8, 0)
    return tf.data.Dataset.from_tensor_slices((features, labels, labels)).batch(4)
