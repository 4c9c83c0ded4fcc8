"""``nan_tensor``: stop or fail on a NaN loss; mirrors ``tf.compat.v1.train.NanTensorHook``.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from hookrun.hooks import tf_internals
from hookrun.hooks.context import HOOKRUN_SCOPE, HookContext
from hookrun.hooks.nan_tensor import NanTensorConfig

logging = tf_internals.tf_logging()


class NonFiniteWindowError(tf.compat.v1.train.NanLossDuringTrainingError):
    """A window of ``session.steps_per_run`` steps had a non-finite loss (a ``NanLossDuringTrainingError``).

    Attributes:
        first_step: the global step of the window's first step.
        last_step: the global step after the window's last step.
    """

    def __init__(self, first_step: int, last_step: int) -> None:
        super().__init__()
        self.first_step = first_step
        self.last_step = last_step

    def __str__(self) -> str:
        return f"non-finite loss in the window of steps {self.first_step}-{self.last_step}"


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

    Under ``session.steps_per_run: N`` (``window`` given) it asks for the loop's flag of whether any
    step of the window had a non-finite loss (NaN or infinite: stricter than one step per run, which
    checks NaN only), with the window's steps, and raises :class:`NonFiniteWindowError` naming them.
    The steps of that window after the first non-finite one were run too (the loop does not stop
    inside a window); ``checkpoint_saver`` never writes non-finite weights.

    Args:
        loss_tensor: the loss, a scalar ``tf.Tensor`` (under a window, its last-step value).
        fail_on_nan_loss: raise (True) or request a stop (False) on NaN.
        window: the fused train op's :class:`~hookrun.hooks.window.RunWindow`, or None.

    Raises:
        tf.compat.v1.train.NanLossDuringTrainingError: from ``after_run``, on NaN with ``fail_on_nan_loss``
            (:class:`NonFiniteWindowError` under a window).
    """

    def __init__(self, loss_tensor: Any, fail_on_nan_loss: bool = True, window: Any = None) -> None:
        super().__init__(loss_tensor, fail_on_nan_loss=fail_on_nan_loss)
        self._window = window
        if window is None:
            self._request = tf.compat.v1.train.SessionRunArgs(loss_tensor)
        else:
            if window.last.get("loss") is loss_tensor:
                flag = window.any_nonfinite
            else:  # another tensor: its value at the window's last step
                with tf.compat.v1.name_scope(f"{HOOKRUN_SCOPE}/nan_tensor"):
                    flag = tf.logical_not(tf.reduce_all(tf.math.is_finite(tf.cast(loss_tensor, tf.float64))))
            self._request = tf.compat.v1.train.SessionRunArgs((flag, window.steps, window.global_step))

    def before_run(self, run_context: Any) -> Any:
        """Ask for the loss (the same request object every step)."""
        return self._request

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Raise or request a stop when the loss is NaN."""
        if self._window is not None:
            nonfinite, steps, after = run_values.results
            if nonfinite:
                first = int(after) - int(steps) + 1
                message = f"Model diverged: non-finite loss in the window of steps {first}-{int(after)}."
                if self._fail_on_nan_loss:
                    logging.error(message)
                    raise NonFiniteWindowError(first, int(after))
                logging.warning(message)
                run_context.request_stop()
            return
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
    return NanTensorHook(loss, fail_on_nan_loss=config.fail_on_nan_loss, window=ctx.clock.window)
