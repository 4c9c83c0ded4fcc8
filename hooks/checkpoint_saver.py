"""``checkpoint_saver``: TensorFlow's ``CheckpointSaverHook``, guarded against non-finite weights.

Built without its per-step extra ``Session.run``; it never writes NaN or inf weights.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from hookrun.config_schemas.hooks import CheckpointSaverConfig
from hookrun.hooks.context import HookContext


class NonFiniteWeightsError(RuntimeError):
    """A checkpoint was about to hold NaN or infinite weights; it was not written."""


class FiniteWeightsGuard(tf.compat.v1.train.CheckpointSaverListener):
    """Refuse to save a checkpoint whose weights are not all finite.

    A NaN loss at step N means the weights were already non-finite after
    step N-1's update, so a checkpoint taken at N-1 would hold them even
    though ``nan_tensor`` has not fired yet. ``before_save`` runs one check
    over every floating-point global variable (only when a save is due, so
    the step loop pays nothing) and raises instead of saving.

    Args:
        checkpoint_dir: where the hook saves (for the message).

    Raises:
        NonFiniteWeightsError: from ``before_save``, when a variable holds NaN or inf.
    """

    def __init__(self, checkpoint_dir: str) -> None:
        self._checkpoint_dir = checkpoint_dir
        self._all_finite: Any = None

    def begin(self) -> None:
        """Build the check over the graph's floating-point variables (before the graph is finalized)."""
        checks = [
            tf.reduce_all(tf.math.is_finite(v))
            for v in tf.compat.v1.global_variables()
            if v.dtype.base_dtype.is_floating
        ]
        self._all_finite = tf.reduce_all(tf.stack(checks)) if checks else tf.constant(True)

    def before_save(self, session: Any, global_step_value: int) -> None:
        """Raise if any weight is NaN or infinite, before the checkpoint at ``global_step_value`` is written."""
        if not session.run(self._all_finite):
            latest = tf.train.latest_checkpoint(self._checkpoint_dir)
            raise NonFiniteWeightsError(
                f"weights are not finite at step {global_step_value}; that checkpoint was not written "
                f"(last good checkpoint: {latest or 'none'})"
            )


def build(config: CheckpointSaverConfig, ctx: HookContext) -> Any:
    """Build ``tf.compat.v1.train.CheckpointSaverHook`` using the session's scaffold saver.

    When it fires (TensorFlow's behaviour): ``after_create_session`` writes
    ``graph.pbtxt`` and a checkpoint at the current step; ``after_run`` saves
    every ``save_steps`` global steps or ``save_secs`` seconds; ``end``
    saves at the final step. Before every save a :class:`FiniteWeightsGuard`
    checks the weights: training fails (exit 1) rather than write NaN or inf.

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
    checkpoint_dir = str(ctx.resolve_dir(config.checkpoint_dir))
    hook = ctx.tf.compat.v1.train.CheckpointSaverHook(
        checkpoint_dir=checkpoint_dir,
        save_secs=config.save_secs,
        save_steps=config.save_steps,
        checkpoint_basename=config.checkpoint_basename,
        scaffold=ctx.scaffold,
        listeners=[FiniteWeightsGuard(checkpoint_dir)],
    )
    hook._set_steps_per_run(1)
    return hook
