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
      step becomes ``global_step + num_steps``, ``global_step`` read there, after
      the earlier hooks' ``after_create_session`` (on the first session only, as
      TensorFlow's hook does: a recovered session keeps the last step; a resumed
      run, a new hook, counts from the step it starts at).
    - ``before_run``: asks for nothing (on a cluster: ``global_step``); under
      ``session.steps_per_run``, before a session's first window, re-reads
      ``global_step`` once if a later hook could have moved it.
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
        """Sync the clock; on the first session with ``num_steps``, the last step from ``global_step`` read now.

        As TensorFlow's hook: ``global_step`` is read here, after the earlier hooks'
        ``after_create_session`` (one that restores pretrained weights may have moved it), and the last
        step is fixed once, on the hook's first session; a recovered session keeps it.
        """
        clock = self._clock
        read_here = not clock.synced(session)  # this hook's sync is the session's first read: it is current
        super().after_create_session(session, coord)
        if self._last_step is None:
            start = clock.step if read_here else clock.reread(session)
            self._last_step = start + self._num_steps  # type: ignore[operator]
        clock.limit(session, self._last_step)

    def before_run(self, run_context: Any) -> Any:
        """Ask for nothing (on a cluster: ``global_step``); before a session's first window, settle its length.

        Under ``session.steps_per_run`` a hook's ``after_create_session`` that ran after this one may have
        moved ``global_step``; the first window's length is then worked out again (:meth:`StepClock.settle`).
        """
        clock = self._clock
        if clock.window is not None:
            clock.settle(run_context.session)
        return clock.request()

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
