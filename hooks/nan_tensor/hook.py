"""``nan_tensor``: stop or fail on a NaN loss; mirrors ``tf.compat.v1.train.NanTensorHook``.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from hookrun.hooks import tf_internals
from hookrun.hooks.context import HookContext
from hookrun.hooks.nan_tensor import NanTensorConfig

logging = tf_internals.tf_logging()

class NanTensorHook(tf.compat.v1.train.NanTensorHook):
    """Check the loss after every step; mirrors ``tf.compat.v1.train.NanTensorHook``.

    TensorFlow's hook, with its per-step Python trimmed: the request is built
    once (TensorFlow's builds a ``SessionRunArgs`` every step) and the check
    is ``loss != loss`` (true exactly for NaN) instead of ``np.isnan``. Same
    messages, same error.

    When each method fires:

    - ``before_run``: asks for the loss, every step.
    - ``after_run``: on NaN, logs ``Model diverged with loss = NaN.`` and raises
      ``tf.compat.v1.train.NanLossDuringTrainingError`` (``fail_on_nan_loss``:
      no later hook's ``after_run`` and no ``end`` run) or requests a stop.

    Args:
        loss_tensor: the loss, a scalar ``tf.Tensor``.
        fail_on_nan_loss: raise (True) or request a stop (False) on NaN.

    Raises:
        tf.compat.v1.train.NanLossDuringTrainingError: from ``after_run``, on NaN with ``fail_on_nan_loss``.
    """

    def __init__(self, loss_tensor: Any, fail_on_nan_loss: bool = True) -> None:
        super().__init__(loss_tensor, fail_on_nan_loss=fail_on_nan_loss)
        self._request = tf.compat.v1.train.SessionRunArgs(loss_tensor)

    def before_run(self, run_context: Any) -> Any:
        """Ask for the loss (the same request object every step)."""
        return self._request

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Raise or request a stop when the loss is NaN."""
        loss = run_values.results
        if loss != loss:  # NaN is the only value unequal to itself
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                logging.error(message)
                raise tf.compat.v1.train.NanLossDuringTrainingError
            logging.warning(message)
            run_context.request_stop()


def build(config: NanTensorConfig, ctx: HookContext) -> NanTensorHook:
    """Build :class:`NanTensorHook` on the named loss tensor.

    A raise in ``after_run`` means no later hook's ``after_run`` and no ``end``
    run for that step; hookrun exits 1 naming the step.

    Args:
        config: ``loss_tensor`` (name), ``fail_on_nan_loss``.
        ctx: the runner's context.

    Raises:
        UnknownTensorError: ``loss_tensor`` is not a tensor of the graph.
    """
    loss = ctx.tensors.resolve(config.loss_tensor)
    return NanTensorHook(loss, fail_on_nan_loss=config.fail_on_nan_loss)
