"""Turn ``graph.optimizer`` into a ``tf.compat.v1.train`` optimizer and a ``train_op``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookrun.config_schemas.graph import OPTIMIZERS, OptimizerConfig


def learning_rate(tf: Any, config: OptimizerConfig, global_step: Any) -> Any:
    """The learning rate: ``config.learning_rate``, or its exponential decay on ``global_step``.

    With ``decay``: ``tf.compat.v1.train.exponential_decay(learning_rate, global_step, decay_steps,
    decay_rate, staircase)``, i.e. ``learning_rate * decay_rate ** (global_step / decay_steps)``.

    Args:
        tf: the ``tensorflow`` module.
        config: the optimizer section.
        global_step: the ``global_step`` variable.

    Returns:
        A float (no decay) or a scalar ``float32`` tensor (per step).
    """
    if config.decay is None:
        return config.learning_rate
    return tf.compat.v1.train.exponential_decay(
        config.learning_rate,
        global_step,
        config.decay.decay_steps,
        config.decay.decay_rate,
        staircase=config.decay.staircase,
    )


def make_optimizer(tf: Any, config: OptimizerConfig, rate: Any = None) -> Any:
    """Construct the ``tf.compat.v1.train`` optimizer named by ``config.name``.

    Args:
        tf: the ``tensorflow`` module.
        config: ``name`` (sgd, momentum, adam, adagrad, rmsprop), ``learning_rate``,
            ``momentum`` (used by momentum and rmsprop).
        rate: the learning rate (a float or a tensor, see :func:`learning_rate`); default ``config.learning_rate``.

    Returns:
        A ``tf.compat.v1.train.Optimizer``.
    """
    rate = config.learning_rate if rate is None else rate
    cls = getattr(tf.compat.v1.train, OPTIMIZERS[config.name])
    if config.name in ("momentum", "rmsprop"):
        return cls(rate, momentum=config.momentum)
    return cls(rate)


def make_train_op(
    tf: Any, config: OptimizerConfig, loss: Any, global_step: Any, wrap_optimizer: Callable[[Any], Any] | None = None
) -> tuple[Any, Any]:
    """``optimizer.minimize(loss, global_step)`` after the graph's ``UPDATE_OPS``.

    Each run of the returned op takes one step and increments ``global_step`` by one (with
    ``wrap_optimizer`` returning a ``SyncReplicasOptimizer``: once per aggregated update).

    Returns:
        ``(train_op, learning_rate)``: the op, and the learning rate as a scalar tensor named
        ``learning_rate`` (per step; the hook tensor name ``learning_rate``).
    """
    rate = learning_rate(tf, config, global_step)
    optimizer = make_optimizer(tf, config, rate)
    if wrap_optimizer is not None:
        optimizer = wrap_optimizer(optimizer)
    with tf.control_dependencies(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)):
        train_op = optimizer.minimize(loss, global_step=global_step)
    return train_op, tf.identity(tf.convert_to_tensor(rate, tf.float32), name="learning_rate")


def loss_scaled(tf: Any, optimizer: Any) -> Any:
    """``optimizer`` wrapped for float16 mixed precision, as ``enable_mixed_precision_graph_rewrite`` wraps it.

    Mirrors the optimizer half of ``tf.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite(opt,
    loss_scale="dynamic")``: a ``tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer`` with a
    ``DynamicLossScale`` (starts at 2**15, halves on a non-finite gradient and skips that update, doubles
    after 2,000 finite steps). The graph-rewrite half is the session's ``auto_mixed_precision`` option
    (:func:`hookrun.runner.graph.device.session_config`); hookrun sets both, without TensorFlow's
    process-wide mixed-precision state.

    Args:
        tf: the ``tensorflow`` module.
        optimizer: a ``tf.compat.v1.train.Optimizer``.

    Returns:
        The wrapping ``MixedPrecisionLossScaleOptimizer`` (its ``minimize`` scales the loss, unscales the
        gradients and applies them only when all are finite).
    """
    from hookrun.runner.graph.builders.heads import _without_deprecation_notice_of

    # TensorFlow's "use tf.keras.mixed_precision.LossScaleOptimizer" notice: hookrun's call, nothing to act on
    with _without_deprecation_notice_of("DynamicLossScale.__init__"):
        return tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer(optimizer, "dynamic")
