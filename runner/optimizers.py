"""Turn ``graph.optimizer`` into a ``tf.compat.v1.train`` optimizer and a ``train_op``."""

from __future__ import annotations

from typing import Any

from hookrun.config_schemas.graph import OPTIMIZERS, OptimizerConfig


def make_optimizer(tf: Any, config: OptimizerConfig) -> Any:
    """Construct the ``tf.compat.v1.train`` optimizer named by ``config.name``.

    Args:
        tf: the ``tensorflow`` module.
        config: ``name`` (sgd, momentum, adam, adagrad, rmsprop), ``learning_rate``,
            ``momentum`` (used by momentum and rmsprop).

    Returns:
        A ``tf.compat.v1.train.Optimizer``.
    """
    cls = getattr(tf.compat.v1.train, OPTIMIZERS[config.name])
    if config.name == "momentum":
        return cls(config.learning_rate, momentum=config.momentum)
    if config.name == "rmsprop":
        return cls(config.learning_rate, momentum=config.momentum)
    return cls(config.learning_rate)


def make_train_op(tf: Any, config: OptimizerConfig, loss: Any, global_step: Any) -> Any:
    """``optimizer.minimize(loss, global_step)`` after the graph's ``UPDATE_OPS``.

    Each run of the returned op takes one step and increments ``global_step`` by one.
    """
    optimizer = make_optimizer(tf, config)
    with tf.control_dependencies(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)):
        return optimizer.minimize(loss, global_step=global_step)
