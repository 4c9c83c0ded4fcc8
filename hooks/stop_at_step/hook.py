"""``stop_at_step``: stop at a global step; mirrors ``tf.compat.v1.train.StopAtStepHook``, on the shared step clock.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from hookrun.hooks.context import HookContext
from hookrun.hooks.step_clock import ClockedHook, StepClock
from hookrun.hooks.stop_at_step import StopAtStepConfig


class StopAtStepHook(ClockedHook, tf.compat.v1.train.SessionRunHook):
    """Request a stop once ``global_step`` reaches a last step; mirrors ``tf.compat.v1.train.StopAtStepHook``.

    TensorFlow's hook asks for ``global_step`` on every step. This one
    follows the run's :class:`~hookrun.hooks.step_clock.StepClock` and asks
    for nothing: the same stops, without the per-step fetch.

    When each method fires:

    - ``begin``: builds the clock's ``global_step`` read.
    - ``after_create_session``: syncs the clock; with ``num_steps``, the last
      step becomes ``global_step + num_steps`` (on the first session only, as
      TensorFlow's hook does).
    - ``before_run``: asks for nothing (on a cluster: ``global_step``).
    - ``after_run``: once the counted step reaches the last step, reads
      ``global_step`` exactly and requests a stop if it is there. That step's
      ``after_run`` still runs for every later hook; then ``end`` runs.

    Under ``session.steps_per_run: N`` the last window is shortened (:meth:`StepClock.limit`) so the
    run stops at exactly the last step, as with one step per run.

    Args:
        clock: the run's shared step clock.
        num_steps: steps to run from the step the first session starts at (steps), or None.
        last_step: the global step to stop at (steps), or None. Exactly one of the two.

    Raises:
        ValueError: neither or both of ``num_steps`` and ``last_step``, or a negative value.

    Example:
        >>> hook = StopAtStepHook(StepClock(), last_step=1000)
    """

    def __init__(self, clock: StepClock, num_steps: int | None = None, last_step: int | None = None) -> None:
        if (num_steps is None) == (last_step is None):
            raise ValueError("exactly one of num_steps and last_step must be given")
        if (num_steps if num_steps is not None else last_step) < 0:  # type: ignore[operator]
            raise ValueError("num_steps and last_step must not be negative")
        super().__init__(clock)
        self._num_steps = num_steps
        self._last_step = last_step

    @property
    def last_step(self) -> int | None:
        """The global step the hook stops at; None until the first session with ``num_steps``."""
        return self._last_step

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Sync the clock; fix the last step from ``num_steps`` on the first session."""
        super().after_create_session(session, coord)
        if self._last_step is None:
            self._last_step = self._clock.step + self._num_steps  # type: ignore[operator]
        self._clock.limit(session, self._last_step)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Request a stop once ``global_step``, read exactly, has reached the last step."""
        clock = self._clock
        if clock.advance(run_context, run_values.results) >= self._last_step:  # type: ignore[operator]
            if clock.confirm(run_context) >= self._last_step:  # type: ignore[operator]
                run_context.request_stop()
                return
        clock.limit(run_context.session, self._last_step)  # type: ignore[arg-type]


def build(config: StopAtStepConfig, ctx: HookContext) -> StopAtStepHook:
    """Build :class:`StopAtStepHook` from ``num_steps`` xor ``last_step`` (steps) on the run's clock.

    Args:
        config: the validated config.
        ctx: the runner's context.
    """
    return StopAtStepHook(ctx.clock, num_steps=config.num_steps, last_step=config.last_step)
