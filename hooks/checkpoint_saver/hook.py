"""``checkpoint_saver``: TensorFlow's ``CheckpointSaverHook``, guarded against non-finite weights.

It follows the run's step clock (no per-step ``global_step`` fetch, no extra
``Session.run``), and it never writes NaN or inf weights.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from hookrun.hooks.checkpoint_saver import CheckpointSaverConfig
from hookrun.hooks.context import HookContext, HookFailure
from hookrun.hooks.step_clock import ClockedHook


class NonFiniteWeightsError(HookFailure):
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


class CheckpointSaverHook(ClockedHook, tf.compat.v1.train.CheckpointSaverHook):
    """Save checkpoints every N steps or seconds; mirrors ``tf.compat.v1.train.CheckpointSaverHook``.

    TensorFlow's hook, with its saving, listeners, ``graph.pbtxt`` and
    ``end`` unchanged, but following the run's
    :class:`~hookrun.hooks.step_clock.StepClock` instead of asking for
    ``global_step`` on every step (TensorFlow's hook also issues a second
    ``Session.run`` per step unless ``_set_steps_per_run(1)`` is called).

    When each method fires:

    - ``begin``: TensorFlow's (summary writer, listeners' ``begin``), and the clock's read.
    - ``after_create_session``: writes ``graph.pbtxt`` and the meta graph, saves a
      checkpoint at the current step (TensorFlow's), and syncs the clock.
    - ``before_run``: asks for nothing (on a cluster: ``global_step``).
    - ``after_run``: when the counted step is due (``save_steps`` global steps,
      or ``save_secs`` seconds, after the last save), reads ``global_step``
      exactly and saves if it is still due; a listener's ``after_save`` may
      request a stop.
    - ``end``: saves at the final step unless that step was just saved (TensorFlow's).

    Args:
        clock: the run's shared step clock.
        checkpoint_dir: where checkpoints go.
        save_secs: save every this many seconds, or None.
        save_steps: save every this many global steps, or None. Exactly one of the two.
        saver, checkpoint_basename, scaffold, listeners, save_graph_def: as TensorFlow's hook.

    Raises:
        ValueError: neither or both of ``save_secs`` and ``save_steps`` (TensorFlow's check).
    """

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Save when due, at the exact ``global_step`` (TensorFlow's decision, on the counted step)."""
        global_step = self._timer_due(run_context, run_values.results)
        if global_step is not None:
            self._timer.update_last_triggered_step(global_step)
            if self._save(run_context.session, global_step):
                run_context.request_stop()


def build(config: CheckpointSaverConfig, ctx: HookContext) -> CheckpointSaverHook:
    """Build :class:`CheckpointSaverHook` using the session's scaffold saver, guarded by :class:`FiniteWeightsGuard`.

    When it fires: see :class:`CheckpointSaverHook`. Before every save a
    :class:`FiniteWeightsGuard` checks the weights: training fails (exit 1)
    rather than write NaN or inf.

    Args:
        config: ``save_steps`` xor ``save_secs``; ``checkpoint_dir`` (relative to the
            run directory), ``checkpoint_basename``. ``max_to_keep`` is applied by the
            runner to the scaffold's ``Saver``.
        ctx: the runner's context.
    """
    checkpoint_dir = str(ctx.resolve_dir(config.checkpoint_dir))
    return CheckpointSaverHook(
        ctx.clock,
        checkpoint_dir,
        save_secs=config.save_secs,
        save_steps=config.save_steps,
        checkpoint_basename=config.checkpoint_basename,
        scaffold=ctx.scaffold,
        listeners=[FiniteWeightsGuard(checkpoint_dir)],
    )
