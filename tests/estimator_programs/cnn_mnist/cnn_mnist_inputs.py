"""main()'s input functions, named for hookrun's YAML (``data.input_fn``/``data.eval_input_fn``).

The program's main() builds them with ``tf.estimator.inputs.numpy_input_fn(x={"x": ...}, y=..., ...)``, which
TensorFlow 2.21 no longer has, and hands them to ``Estimator.train``/``evaluate``: they have no module-level
name a config could give. These are the same pipelines as ``tf.data``: the same feature dict and labels
(a fixed shuffle seed, so a plain reference run reads the same batches).
"""

import tensorflow as tf
from digits import load_digits

from hookrun.runner.trained import serving


def train_input_fn(params):
    """Shuffled, endlessly repeated batches of ``({"x": float32 [b, 784]}, int32 [b])`` (``num_epochs=None``)."""
    images, labels = load_digits("train")
    dataset = tf.data.Dataset.from_tensor_slices(({"x": images}, labels))
    return dataset.shuffle(len(labels), seed=0).repeat().batch(params["batch_size"])


def eval_input_fn(params):
    """One pass over the evaluation images, in order (``num_epochs=1, shuffle=False``)."""
    images, labels = load_digits("eval")
    return tf.data.Dataset.from_tensor_slices(({"x": images}, labels)).batch(params["batch_size"])


def serving_input_fn():
    """main()'s nested ``serving_input_receiver_fn`` (a float32 [batch, 784] ``x``), given a module-level name."""
    images = tf.compat.v1.placeholder(tf.float32, [None, 784], name="x")
    return serving.ServingInputReceiver({"x": images}, {"x": images})
