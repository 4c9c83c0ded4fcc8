"""An Estimator program after training: its predict input_fn, serving_input_fn and export_outputs (issue 24).

The model of tests/input_fn_program.py (dict features ``x`` float32 [n, 2] and ``city`` string; int64 labels),
whose infer-mode predictions hold an array per example (``probabilities``) and a string (``city``), and whose
``export_outputs`` are Estimator's three kinds. Used by tests/test_input_fn_trained.py.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys
from hookrun.runner.trained.serving import (
    ClassificationOutput,
    PredictOutput,
    RegressionOutput,
    ServingInputReceiver,
    build_parsing_serving_input_receiver_fn,
)

CITIES = np.array([b"paris", b"rome", b"oslo"])
#: The batch sizes the prediction hook saw (one entry per after_run), as Estimator.predict ran prediction_hooks.
PREDICTED_BATCHES: list[int] = []


class CountingHook(tf.compat.v1.train.SessionRunHook):
    """A prediction hook recording each batch's size from the ``class`` predictions it fetches."""

    def __init__(self, classes):
        self.classes = classes

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self.classes)

    def after_run(self, run_context, run_values):
        PREDICTED_BATCHES.append(len(run_values.results))
CLASS_NAMES = ["no", "yes"]
FEATURE_SPEC = {"x": tf.io.FixedLenFeature([2], tf.float32), "city": tf.io.FixedLenFeature([], tf.string)}


def rows(n: int, seed: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``n`` examples: ``x`` float32 [n, 2], ``city`` bytes [n], int64 labels in {0, 1}."""
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    city = CITIES[np.arange(n) % 3]
    labels = ((x[:, 0] + (city == b"rome")) > 0.5).astype(np.int64)
    return {"x": x, "city": city}, labels


def input_fn(params, mode):
    features, labels = rows(64, 0)
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(16).repeat(2)


def eval_input_fn(params):
    features, labels = rows(40, 1)
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)  # 16 + 16 + 8


def predict_input_fn(params, mode):
    """Features alone, 10 examples in batches of 4, 4, 2 (as an Estimator predict input_fn)."""
    assert mode == ModeKeys.PREDICT
    features, _ = rows(10, 2)
    return tf.data.Dataset.from_tensor_slices(features).batch(4)


def serving_input_fn():
    """Serialized tf.train.Example in (``examples``), with the parsed features as the ``raw`` alternative."""
    parsing = build_parsing_serving_input_receiver_fn(FEATURE_SPEC)()
    return ServingInputReceiver(parsing.features, parsing.receiver_tensors, {"raw": parsing.features})


def logits_of(features):
    v1 = tf.compat.v1
    city = tf.one_hot(tf.strings.to_hash_bucket_fast(features["city"], 5), 5)
    inputs = tf.concat([features["x"], city], axis=1)
    w = v1.get_variable("w", [7, 2], initializer=v1.glorot_uniform_initializer(seed=7))
    b = v1.get_variable("b", [2], initializer=v1.zeros_initializer())
    return tf.matmul(inputs, w) + b


def model_fn(features, labels, mode, params):
    v1 = tf.compat.v1
    logits = logits_of(features)
    classes = tf.argmax(logits, 1)
    if mode == ModeKeys.PREDICT:
        probabilities = tf.nn.softmax(logits)
        names = tf.gather(tf.constant(CLASS_NAMES), classes)
        return EstimatorSpec(
            mode,
            predictions={"class": classes, "probabilities": probabilities, "city": features["city"]},
            prediction_hooks=[CountingHook(classes)],
            export_outputs={
                "serving_default": PredictOutput({"class": classes, "probabilities": probabilities}),
                "classify": ClassificationOutput(scores=probabilities, classes=tf.reshape(names, [-1, 1])),
                "regress": RegressionOutput(probabilities[:, 1]),
            },
        )
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == ModeKeys.EVAL:
        return EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": v1.metrics.accuracy(labels, classes)})
    train_op = v1.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)


def numpy_model(weights: dict[str, np.ndarray], features: dict[str, np.ndarray]) -> np.ndarray:
    """The logits the model gives with these weights, in NumPy (the city hash through TensorFlow's op)."""
    buckets = tf.strings.to_hash_bucket_fast(features["city"], 5).numpy()
    inputs = np.concatenate([features["x"], np.eye(5, dtype=np.float32)[buckets]], axis=1)
    return inputs @ weights["w"] + weights["b"]


# hostile functions --------------------------------------------------------------------------------------------


def raising_input_fn():
    raise FileNotFoundError("no such file: /data/eval-*.tfrecord")


def wrong_type_input_fn():
    return [1.0, 2.0]


def empty_input_fn():
    features, labels = rows(0, 0)
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(4)


def renamed_input_fn():
    features, labels = rows(8, 0)
    return tf.data.Dataset.from_tensor_slices(({"xs": features["x"], "city": features["city"]}, labels)).batch(4)


def raising_serving_input_fn():
    raise RuntimeError("vocabulary file missing")


def wrong_type_serving_input_fn():
    return {"x": tf.compat.v1.placeholder(tf.float32, [None, 2])}


def renamed_serving_input_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 2])
    return ServingInputReceiver({"xs": x}, x)


def invalid_receiver_serving_input_fn():
    return ServingInputReceiver({"x": [1.0, 2.0]}, tf.compat.v1.placeholder(tf.string, [None]))
