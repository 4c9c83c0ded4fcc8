"""``stop_at_step``: TensorFlow's ``StopAtStepHook``, built from config."""

from __future__ import annotations

from typing import Any

from hookrun.config_schemas.hooks import StopAtStepConfig
from hookrun.hooks.context import HookContext


def build(config: StopAtStepConfig, ctx: HookContext) -> Any:
    """Build ``tf.compat.v1.train.StopAtStepHook(num_steps, last_step)``.

    When it fires (TensorFlow's behaviour): ``after_create_session`` turns
    ``num_steps`` into a last step counted from the current ``global_step``;
    ``after_run`` requests a stop once ``global_step >= last_step`` (that
    step's ``after_run`` still runs for every hook, then ``end``).

    Args:
        config: ``num_steps`` xor ``last_step`` (steps).
        ctx: the runner's context.
    """
    return ctx.tf.compat.v1.train.StopAtStepHook(num_steps=config.num_steps, last_step=config.last_step)
