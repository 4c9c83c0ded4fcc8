"""``step_counter``: global steps per second; mirrors ``tf.compat.v1.train.StepCounterHook``.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from hookrun.hooks import tf_internals
from hookrun.hooks.context import HookContext
from hookrun.hooks.step_clock import ClockedHook
from hookrun.hooks.step_counter import StepCounterConfig

logging = tf_internals.tf_logging()

class StepCounterHook(ClockedHook, tf.compat.v1.train.StepCounterHook):
    """Log and record ``global_step/sec``; mirrors ``tf.compat.v1.train.StepCounterHook``.

    TensorFlow's hook asks for ``global_step`` on every step; this one
    follows the run's :class:`~hookrun.hooks.step_clock.StepClock` and asks
    for nothing. Same output: the rate over each window of ``every_n_steps``
    global steps (or ``every_n_secs`` seconds), measured between exact reads
    of ``global_step``, logged as ``global_step/sec: X`` and written as a
    summary at that step. The first step starts the clock and records nothing.

    When each method fires:

    - ``begin``: TensorFlow's (the summary writer, the tag), and the clock's read.
    - ``after_create_session``: syncs the clock.
    - ``before_run``: asks for nothing (on a cluster: ``global_step``).
    - ``after_run``: when the counted step is due, reads ``global_step`` exactly and,
      if still due, logs and records the rate since the last record.

    While the clock reads ``global_step`` (on a cluster), a value that did not
    move since the last step gets TensorFlow's warning (first five times).

    Args:
        clock: the run's shared step clock.
        every_n_steps: record every this many global steps, or None.
        every_n_secs: record every this many seconds, or None. Exactly one of the two.
        output_dir, summary_writer: as TensorFlow's hook.

    Raises:
        ValueError: neither or both of ``every_n_steps`` and ``every_n_secs`` (TensorFlow's check).
    """

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """When due, record the rate at the exact ``global_step`` (TensorFlow's decision, on the counted step)."""
        read = run_values.results
        global_step = self._timer_due(run_context, read)
        if global_step is not None:
            elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(global_step)
            if elapsed_time is not None:
                self._log_and_record(elapsed_steps, elapsed_time, global_step)
        if read is not None:
            if read == self._last_global_step:
                logging.log_first_n(
                    logging.WARN,
                    "It seems that global step (tf.train.get_global_step) has not been increased. Current value "
                    "(could be stable): %s vs previous value: %s. You could increase the global step by passing "
                    "tf.train.get_global_step() to Optimizer.apply_gradients or Optimizer.minimize.",
                    5,
                    read,
                    self._last_global_step,
                )
            self._last_global_step = read


def build(config: StepCounterConfig, ctx: HookContext) -> StepCounterHook:
    """Build :class:`StepCounterHook` writing ``global_step/sec`` to ``output_dir``.

    Args:
        config: ``every_n_steps`` xor ``every_n_secs``; ``output_dir`` (relative to the run directory).
        ctx: the runner's context.
    """
    return StepCounterHook(
        ctx.clock,
        every_n_steps=config.every_n_steps,
        every_n_secs=config.every_n_secs,
        output_dir=str(ctx.resolve_dir(config.event_dir())),
    )
