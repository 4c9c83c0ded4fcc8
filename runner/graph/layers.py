"""Layers for ``tf.compat.v1`` graphs, built on ``tf.compat.v1.get_variable``: ``dense``, ``embedding``, ``dropout``.

Keras 3 took ``tf.compat.v1.layers.dense`` away, and Keras layers' variables are not in the v1
``GLOBAL_VARIABLES`` collection the ``tf.compat.v1.train.Saver`` checkpoints. These functions are the
Saver-compatible equivalents of ``tf.compat.v1.layers.dense`` / ``tf.compat.v1.nn.embedding_lookup`` on
a ``get_variable`` table / ``tf.compat.v1.layers.dropout``:

- every weight is a ``get_variable`` under ``tf.compat.v1.variable_scope(name)``, so it is in
  ``GLOBAL_VARIABLES`` and ``TRAINABLE_VARIABLES`` and every checkpoint holds it under
  ``<name>/kernel``, ``<name>/bias``, ``<name>/embeddings``;
- called again under ``tf.compat.v1.variable_scope(scope, reuse=True)`` (as hookrun calls a builder for
  evaluation) with the same ``name``, they return the same weights: training and evaluation share them.

Import them as ``from hookrun.runner import layers`` (this module, ``hookrun.runner.graph.layers``). Importing this
module does not import TensorFlow; each function does, when called. The built-in builders use them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Activation names ``dense`` accepts, each the ``tf.nn`` function of that name.
ACTIVATIONS = ("relu", "tanh", "sigmoid", "elu", "selu", "softplus")

#: The mode strings (``hookrun.runner.ModeKeys``) in which ``dropout`` drops units.
TRAIN = "train"


def _tf() -> Any:
    from hookrun.runner.tf_env import import_tensorflow

    return import_tensorflow()


def _activation(tf: Any, activation: str | Callable[[Any], Any] | None) -> Callable[[Any], Any] | None:
    if activation is None or callable(activation):
        return activation
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation {activation!r} is not one of {', '.join(ACTIVATIONS)} (or pass a callable)")
    return getattr(tf.nn, activation)


def dense(
    inputs: Any,
    units: int,
    name: str,
    activation: str | Callable[[Any], Any] | None = None,
    use_bias: bool = True,
) -> Any:
    """A fully connected layer: ``activation(inputs @ kernel + bias)``; mirrors ``tf.compat.v1.layers.dense``.

    Variables ``<name>/kernel`` ``[n_in, units]`` (Glorot-uniform, as ``tf.compat.v1.layers.dense``) and
    ``<name>/bias`` ``[units]`` (zeros) are made with ``tf.compat.v1.get_variable``: checkpointed by the v1
    Saver, and shared when called again with the same ``name`` under a ``reuse=True`` variable scope.

    Args:
        inputs: ``float32 [batch, n_in]``; ``n_in`` must be known when the graph is built.
        units: output width (count, >= 1).
        name: the variable scope of the weights (the same in training and evaluation calls).
        activation: a name of :data:`ACTIVATIONS`, a callable on a tensor, or None for linear.
        use_bias: add ``<name>/bias``.

    Returns:
        ``float32 [batch, units]``.

    Raises:
        ValueError: ``units`` < 1, ``inputs`` is not rank 2 with a known last dimension, or an unknown
            activation name. Also TensorFlow's own ``ValueError`` when ``reuse=True`` and ``<name>/kernel``
            does not exist (a name differs between the training and evaluation calls).
    """
    tf = _tf()
    v1 = tf.compat.v1
    if int(units) < 1:
        raise ValueError(f"dense {name!r}: units must be >= 1, got {units}")
    if inputs.shape.rank != 2 or inputs.shape[-1] is None:
        raise ValueError(f"dense {name!r}: inputs must be [batch, n_in] with a known n_in, got shape {inputs.shape}")
    act = _activation(tf, activation)
    n_in = int(inputs.shape[-1])
    with v1.variable_scope(name):
        kernel = v1.get_variable("kernel", [n_in, int(units)], initializer=v1.glorot_uniform_initializer())
        out = tf.matmul(inputs, kernel)
        if use_bias:
            bias = v1.get_variable("bias", [int(units)], initializer=v1.zeros_initializer())
            out = tf.nn.bias_add(out, bias)
        if act is not None:
            out = act(out)
    return out


def embedding(ids: Any, num_buckets: int, dimension: int, name: str) -> Any:
    """Look integer ids up in a trainable table; mirrors ``tf.feature_column.embedding_column``'s lookup.

    The table ``<name>/embeddings`` ``[num_buckets, dimension]`` is made with ``tf.compat.v1.get_variable``
    (truncated normal, stddev ``1/sqrt(dimension)``, as ``embedding_column``'s default initializer).

    Args:
        ids: ``int32``/``int64`` ``[batch]`` or ``[batch, 1]``, each in ``0 .. num_buckets-1`` (hookrun's
            named features give a categorical column as such ids, ``num_buckets`` in the column's spec).
        num_buckets: rows of the table (count, >= 1).
        dimension: width of each embedding (count, >= 1).
        name: the variable scope of the table.

    Returns:
        ``float32 [batch, dimension]``.

    Raises:
        ValueError: ``num_buckets`` or ``dimension`` < 1, or ``ids`` has rank other than 1 or 2 (``[batch, 1]``).
        tf.errors.InvalidArgumentError: at run time, an id outside ``0 .. num_buckets-1`` (on CPU).
    """
    tf = _tf()
    v1 = tf.compat.v1
    if int(num_buckets) < 1 or int(dimension) < 1:
        raise ValueError(f"embedding {name!r}: num_buckets and dimension must be >= 1, got {num_buckets}, {dimension}")
    rank = ids.shape.rank
    if rank == 2 and ids.shape[-1] == 1:
        ids = tf.reshape(ids, [-1])
    elif rank != 1:
        raise ValueError(f"embedding {name!r}: ids must be [batch] or [batch, 1], got shape {ids.shape}")
    with v1.variable_scope(name):
        table = v1.get_variable(
            "embeddings",
            [int(num_buckets), int(dimension)],
            initializer=v1.truncated_normal_initializer(stddev=1.0 / float(dimension) ** 0.5),
        )
        return tf.nn.embedding_lookup(table, tf.cast(ids, tf.int64))


def dropout(inputs: Any, rate: float, mode: str, name: str | None = None) -> Any:
    """Drop a fraction ``rate`` of ``inputs`` while training; mirrors ``tf.compat.v1.layers.dropout``.

    In ``mode == "train"`` (``ModeKeys.TRAIN``) each unit is zeroed with probability ``rate`` and the rest are
    scaled by ``1 / (1 - rate)`` (``tf.nn.dropout``); in ``"eval"`` and ``"infer"`` ``inputs`` pass unchanged.
    No variable is created.

    Args:
        inputs: a float tensor of any shape.
        rate: fraction dropped (0 <= rate < 1).
        mode: the builder's mode: ``params["mode"]``, or a model_fn's ``mode`` argument.
        name: op name, optional.

    Returns:
        A tensor shaped like ``inputs``.

    Raises:
        ValueError: ``rate`` outside [0, 1).
    """
    if not 0.0 <= float(rate) < 1.0:
        raise ValueError(f"dropout: rate must be in [0, 1), got {rate}")
    if mode != TRAIN or float(rate) == 0.0:
        return inputs
    return _tf().nn.dropout(inputs, rate=float(rate), name=name)


__all__ = ["ACTIVATIONS", "dense", "dropout", "embedding"]
