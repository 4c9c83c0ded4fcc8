"""``nan_tensor``: TensorFlow's ``NanTensorHook``."""

from __future__ import annotations

from typing import Any

from hookrun.config_schemas.hooks import NanTensorConfig
from hookrun.hooks.context import HookContext


def build(config: NanTensorConfig, ctx: HookContext) -> Any:
    """Build ``tf.compat.v1.train.NanTensorHook(loss_tensor, fail_on_nan_loss)``.

    When it fires (TensorFlow's behaviour): ``before_run`` asks for the loss
    on every step; ``after_run`` checks it and, on NaN, raises
    ``NanLossDuringTrainingError`` (``fail_on_nan_loss: true``; hookrun exits
    1 naming the step) or logs and requests a stop. A raise in ``after_run``
    means no later hook's ``after_run`` and no ``end`` run for that step.

    Args:
        config: ``loss_tensor`` (name), ``fail_on_nan_loss``.
        ctx: the runner's context.
    """
    loss = ctx.tensors.resolve(config.loss_tensor)
    return ctx.tf.compat.v1.train.NanTensorHook(loss, fail_on_nan_loss=config.fail_on_nan_loss)
