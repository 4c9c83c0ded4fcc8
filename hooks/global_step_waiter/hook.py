"""``global_step_waiter``: TensorFlow's ``GlobalStepWaiterHook``."""

from __future__ import annotations

from typing import Any

from hookrun.hooks.context import HookContext
from hookrun.hooks.global_step_waiter import GlobalStepWaiterConfig


def build(config: GlobalStepWaiterConfig, ctx: HookContext) -> Any:
    """Build ``tf.compat.v1.train.GlobalStepWaiterHook(wait_until_step)``.

    When it fires (TensorFlow's behaviour): on the first ``before_run`` it
    blocks, polling ``global_step`` every 0.5 s, until it reaches
    ``wait_until_step`` (used to delay non-chief workers); later steps do
    nothing. With ``wait_until_step: 0`` it never waits.

    Args:
        config: ``wait_until_step`` (steps).
        ctx: the runner's context.
    """
    return ctx.tf.compat.v1.train.GlobalStepWaiterHook(wait_until_step=config.wait_until_step)
