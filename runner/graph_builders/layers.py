"""Plain-op layers on ``tf.compat.v1.get_variable`` (Keras 3 layers' variables miss the v1 Saver)."""

from __future__ import annotations

from typing import Any

ACTIVATIONS = ("relu", "tanh", "sigmoid", "elu", "selu", "softplus")


def dense(tf: Any, inputs: Any, units: int, name: str, activation: str | None = None) -> Any:
    """A fully connected layer: ``activation(inputs @ kernel + bias)``.

    Variables ``<name>/kernel`` (Glorot-uniform) and ``<name>/bias`` (zeros)
    land in the ``GLOBAL_VARIABLES`` and ``TRAINABLE_VARIABLES`` collections,
    so the v1 ``Saver`` checkpoints them.

    Args:
        tf: the ``tensorflow`` module.
        inputs: ``float32 [batch, n_in]``.
        units: output width (count).
        name: variable scope.
        activation: one of :data:`ACTIVATIONS`, or None for linear.

    Returns:
        ``float32 [batch, units]``.
    """
    v1 = tf.compat.v1
    n_in = int(inputs.shape[-1])
    with v1.variable_scope(name):
        kernel = v1.get_variable("kernel", [n_in, units], initializer=v1.glorot_uniform_initializer())
        bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
        out = tf.nn.bias_add(tf.matmul(inputs, kernel), bias)
        if activation is not None:
            out = getattr(tf.nn, activation)(out)
    return out


def l2_penalty(tf: Any, scale: float) -> Any:
    """``scale * sum(||W||^2 / 2)`` over the trainable kernels, or a zero constant when ``scale`` is 0."""
    if scale <= 0:
        return tf.constant(0.0)
    kernels = [v for v in tf.compat.v1.trainable_variables() if v.op.name.endswith("/kernel")]
    return scale * tf.add_n([tf.nn.l2_loss(k) for k in kernels])


def regression_head(tf: Any, predictions: Any, labels: Any, l2: float) -> dict[str, Any]:
    """Mean squared error loss plus batch ``rmse`` and ``mae`` metrics.

    Args:
        tf: the ``tensorflow`` module.
        predictions: ``float32 [batch, 1]``.
        labels: ``float32 [batch, 1]``.
        l2: L2 penalty scale (0 = none).

    Returns:
        A spec dict: ``loss`` (MSE + penalty), ``predictions``, ``metrics``
        (``mse``, ``rmse``, ``mae``: this batch, label units).
    """
    error = predictions - labels
    mse = tf.reduce_mean(tf.square(error), name="mse")
    loss = tf.identity(mse + l2_penalty(tf, l2), name="loss")
    metrics = {
        "mse": mse,
        "rmse": tf.sqrt(mse, name="rmse"),
        "mae": tf.reduce_mean(tf.abs(error), name="mae"),
    }
    return {"loss": loss, "predictions": tf.identity(predictions, name="predictions"), "metrics": metrics}
