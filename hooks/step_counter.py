"""``step_counter``: TensorFlow's ``StepCounterHook``."""

from __future__ import annotations

from typing import Any

from hookrun.config_schemas.hooks import StepCounterConfig
from hookrun.hooks.context import HookContext


def build(config: StepCounterConfig, ctx: HookContext) -> Any:
    """Build ``tf.compat.v1.train.StepCounterHook``.

    When it fires (TensorFlow's behaviour): ``before_run`` asks for
    ``global_step`` every step; ``after_run`` computes global steps per
    second every ``every_n_steps`` steps or ``every_n_secs`` seconds, logs
    ``global_step/sec: X`` and writes it as a summary to ``output_dir``.

    Args:
        config: ``every_n_steps`` xor ``every_n_secs``; ``output_dir`` (relative to the run directory).
        ctx: the runner's context.
    """
    return ctx.tf.compat.v1.train.StepCounterHook(
        every_n_steps=config.every_n_steps,
        every_n_secs=config.every_n_secs,
        output_dir=str(ctx.resolve_dir(config.output_dir)),
    )
