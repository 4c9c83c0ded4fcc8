"""``logging_tensor``: TensorFlow's ``LoggingTensorHook``, with names resolved from config."""

from __future__ import annotations

from typing import Any

from hookrun.hooks.context import HookContext
from hookrun.hooks.logging_tensor import LoggingTensorConfig


def build(config: LoggingTensorConfig, ctx: HookContext) -> Any:
    """Build ``tf.compat.v1.train.LoggingTensorHook``.

    When it fires (TensorFlow's behaviour): ``before_run`` asks for the
    tensors on a triggering step (every ``every_n_iter`` local steps or
    ``every_n_secs`` seconds, the first step included); ``after_run`` logs
    ``name = value, ...`` at INFO; with ``at_end`` only ``end`` logs.
    hookrun routes these lines through the console, above the progress bar.

    Args:
        config: ``tensors`` (list of names, or label -> name), ``every_n_iter`` /
            ``every_n_secs`` / ``at_end``.
        ctx: the runner's context.
    """
    items = config.tensors.items() if isinstance(config.tensors, dict) else ((n, n) for n in config.tensors)
    tensors = {label: ctx.tensors.resolve(name) for label, name in items}
    return ctx.tf.compat.v1.train.LoggingTensorHook(
        tensors=tensors,
        every_n_iter=config.every_n_iter,
        every_n_secs=config.every_n_secs,
        at_end=config.at_end,
    )
