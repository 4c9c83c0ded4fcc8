"""``checkpoint_saver``: TensorFlow's ``CheckpointSaverHook``, without its per-step extra run."""

from __future__ import annotations

from typing import Any

from hookrun.config_schemas.hooks import CheckpointSaverConfig
from hookrun.hooks.context import HookContext


def build(config: CheckpointSaverConfig, ctx: HookContext) -> Any:
    """Build ``tf.compat.v1.train.CheckpointSaverHook`` using the session's scaffold saver.

    When it fires (TensorFlow's behaviour): ``after_create_session`` writes
    ``graph.pbtxt`` and a checkpoint at the current step; ``after_run`` saves
    every ``save_steps`` global steps or ``save_secs`` seconds; ``end``
    saves at the final step.

    ``_set_steps_per_run(1)`` is called, as ``MonitoredTrainingSession``
    does for its own saver: without it the hook issues an extra
    ``Session.run`` for ``global_step`` on every step (measured: halves
    throughput on a small graph).

    Args:
        config: ``save_steps`` xor ``save_secs``; ``checkpoint_dir`` (relative to the
            run directory), ``checkpoint_basename``. ``max_to_keep`` is applied by the
            runner to the scaffold's ``Saver``.
        ctx: the runner's context.
    """
    hook = ctx.tf.compat.v1.train.CheckpointSaverHook(
        checkpoint_dir=str(ctx.resolve_dir(config.checkpoint_dir)),
        save_secs=config.save_secs,
        save_steps=config.save_steps,
        checkpoint_basename=config.checkpoint_basename,
        scaffold=ctx.scaffold,
    )
    hook._set_steps_per_run(1)
    return hook
