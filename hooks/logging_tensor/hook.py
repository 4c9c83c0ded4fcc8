"""``logging_tensor``: TensorFlow's ``LoggingTensorHook``, with names resolved from config.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from hookrun.hooks import tf_internals
from hookrun.hooks.context import HookContext
from hookrun.hooks.logging_tensor import LoggingTensorConfig

logging = tf_internals.tf_logging()

#: Values whose text does not depend on numpy's print options (``suppress`` changes arrays only).
_SCALARS = (np.generic, int, float, bytes, str)


class WindowLoggingTensorHook(tf.compat.v1.train.LoggingTensorHook):
    """``LoggingTensorHook`` counting training steps, not session calls, under ``session.steps_per_run``.

    Mirrors ``tf.compat.v1.train.LoggingTensorHook``: the same lines, logged with TensorFlow's
    ``_log_tensors``. With ``every_n_iter: K`` one step per run logs at local steps 0, K, 2K...;
    here a window (a run of up to N steps) logs when it holds one of those steps, so the lines come
    at the first window boundary at or after each, with the values at the window's last step
    (TensorFlow's ``SessionRunArgs`` under ``iterations_per_loop``). With ``every_n_secs`` the
    timer is asked at each window. With ``at_end`` the tensors come with every window and ``end``
    logs the last window's (running them in ``end``, as TensorFlow's hook does, would run the
    training loop again).

    Args:
        tensors, every_n_iter, every_n_secs, at_end: as TensorFlow's hook.
        window: the fused train op's :class:`~hookrun.hooks.window.RunWindow` (its ``steps``).
    """

    def __init__(self, *args: Any, window: Any, every_n_iter: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, every_n_iter=every_n_iter, **kwargs)
        self._every = every_n_iter
        self._window = window
        self._steps_done = 0  # local steps run by this hook's session(s)
        self._due = False

    def begin(self) -> None:
        """TensorFlow's ``begin``; the step count starts at 0."""
        super().begin()
        self._steps_done = 0
        # Tuples, not dicts: a request of graph elements in tuples cannot change after the fact, so hookrun's
        # engine reuses the window's plan without keying the requests again (runner/session/engine.py).
        self._tags = tuple(self._current_tensors)
        self._tensors_request = tf.compat.v1.train.SessionRunArgs(
            (tuple(self._current_tensors[tag] for tag in self._tags), self._window.steps)
        )

    def before_run(self, run_context: Any) -> Any:
        """Decide whether the coming window holds a due step; ask for the tensors and the window's step count."""
        first, last = self._steps_done, self._steps_done + self._window.steps_per_run - 1
        if self._log_at_end:
            self._due = False
            return self._tensors_request
        if self._every is not None:
            self._due = first == 0 or last // self._every > (first - 1) // self._every
        else:
            self._due = self._timer.should_trigger_for_step(last)
        if self._due:
            self._iter_count = last  # the step TensorFlow's _log_tensors records the trigger at
        # The same request every window: each new set of fetches would make TensorFlow prune and optimize
        # the loop again for a new executor, which costs more than fetching a few scalars every window.
        return self._tensors_request

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Log on a due window (TensorFlow's ``_log_tensors``); count the window's steps."""
        values, steps = run_values.results
        if self._log_at_end:
            self._at_end_values = dict(zip(self._tags, values, strict=True))
        elif self._due:
            self._log_tensors(dict(zip(self._tags, values, strict=True)))
        self._steps_done += int(steps)
        self._iter_count = self._steps_done

    def _log_tensors(self, tensor_values: dict[str, Any]) -> None:
        """TensorFlow's ``_log_tensors``: the same line, logged the same way; its print options skipped for scalars.

        TensorFlow's sets ``np.set_printoptions(suppress=True)`` around the formatting and restores the
        old options after (three calls, most of the line's formatting cost). ``suppress`` changes how
        arrays print, never numpy or Python scalars (``str(np.float32(1e-10))`` is ``1e-10`` either way),
        so when every value is a scalar and there is no ``formatter`` the options are left alone; any
        other line takes TensorFlow's own method.

        Args:
            tensor_values: tag -> the fetched value.
        """
        if self._formatter or not all(isinstance(value, _SCALARS) for value in tensor_values.values()):
            super()._log_tensors(tensor_values)
            return
        elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count)
        stats = ", ".join(["%s = %s" % (tag, tensor_values[tag]) for tag in self._tag_order])  # noqa: UP031 - TF's
        if elapsed_secs is not None:
            logging.info("%s (%.3f sec)", stats, elapsed_secs)
        else:
            logging.info("%s", stats)

    def end(self, session: Any) -> None:
        """With ``at_end``, log the values of the last window's last step."""
        if self._log_at_end and self._at_end_values is not None:
            self._log_tensors(self._at_end_values)


def build(config: LoggingTensorConfig, ctx: HookContext) -> Any:
    """Build ``tf.compat.v1.train.LoggingTensorHook`` (under ``session.steps_per_run`` > 1, its step-counting subclass).

    When it fires (TensorFlow's behaviour): ``before_run`` asks for the
    tensors on a triggering step (every ``every_n_iter`` local steps or
    ``every_n_secs`` seconds, the first step included); ``after_run`` logs
    ``name = value, ...`` at INFO; with ``at_end`` only ``end`` logs.
    hookrun routes these lines through the console, above the progress bar.
    Under ``session.steps_per_run`` > 1: at the first window boundary at or after each such step,
    with the values at the window's last step.

    Args:
        config: ``tensors`` (list of names, or label -> name), ``every_n_iter`` /
            ``every_n_secs`` / ``at_end``.
        ctx: the runner's context.
    """
    items = config.tensors.items() if isinstance(config.tensors, dict) else ((n, n) for n in config.tensors)
    tensors = {label: ctx.tensors.resolve(name) for label, name in items}
    if ctx.window is not None:
        return WindowLoggingTensorHook(
            tensors=tensors,
            every_n_iter=config.every_n_iter,
            every_n_secs=config.every_n_secs,
            at_end=config.at_end,
            window=ctx.window,
        )
    return ctx.tf.compat.v1.train.LoggingTensorHook(
        tensors=tensors,
        every_n_iter=config.every_n_iter,
        every_n_secs=config.every_n_secs,
        at_end=config.at_end,
    )
