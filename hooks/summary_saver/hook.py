"""``summary_saver``: scalar (or histogram) summaries of named tensors; mirrors ``tf.compat.v1.train.SummarySaverHook``.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from tensorflow.core.util.event_pb2 import SessionLog

from hookrun.hooks.context import HOOKRUN_SCOPE, HookConfigError, HookContext
from hookrun.hooks.step_clock import ClockedHook, StepClock
from hookrun.hooks.summary_saver import SummarySaverConfig


class SummarySaverHook(ClockedHook, tf.compat.v1.train.SummarySaverHook):
    """Write summaries every N steps or seconds; mirrors ``tf.compat.v1.train.SummarySaverHook``.

    TensorFlow's hook asks for ``global_step`` on every step; this one
    follows the run's :class:`~hookrun.hooks.step_clock.StepClock` and, on a
    step where it will not write, asks for nothing. The event files are the
    same: a ``SessionLog.START`` at the first step, the summaries at the
    first step and then every ``save_steps`` global steps (or ``save_secs``
    seconds), each at the exact ``global_step``.

    When each method fires:

    - ``begin``: TensorFlow's (the summary writer), and the clock's read.
    - ``after_create_session``: syncs the clock.
    - ``before_run``: asks for the summary op on the first step and when due; else nothing.
    - ``after_run``: on those steps, reads ``global_step`` exactly and writes the summaries at it.
    - ``end``: flushes the writer (TensorFlow's).

    Args:
        clock: the run's shared step clock.
        save_steps: write every this many global steps, or None.
        save_secs: write every this many seconds, or None. Exactly one of the two.
        output_dir, summary_writer, scaffold, summary_op: as TensorFlow's hook.

    Raises:
        ValueError: neither or both of ``scaffold`` and ``summary_op``, or of ``save_steps`` and ``save_secs``.
    """

    def __init__(self, clock: StepClock, **kwargs: Any) -> None:
        super().__init__(clock, **kwargs)
        self._request_summary = False
        self._window_request: Any = None
        self._asked: Any = None  # the window's request when before_run returned it, else None

    def before_run(self, run_context: Any) -> Any:
        """Ask for the summaries on the first step and when due, else nothing (TensorFlow's decision)."""
        clock = self._clock
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(clock.next_step)
        if clock.window is not None and self._get_summary_op() is not None:
            # Under session.steps_per_run the summaries come with every window (a few scalars of the
            # window's last step) and are written when due: a request that never changes keeps the session
            # on one executor (each new set of fetches makes TensorFlow prune and optimize the loop again).
            # A tuple, not a dict: hookrun's engine then reuses the window's plan without keying it again.
            if self._window_request is None:
                self._window_request = tf.compat.v1.train.SessionRunArgs(
                    (tuple(self._get_summary_op()), clock.request_tensor)
                )
            self._asked = self._window_request
            return self._window_request
        self._asked = None
        if not self._request_summary or self._get_summary_op() is None:
            return clock.request()
        requests = {"summary": self._get_summary_op()}
        if clock.reading:
            requests["global_step"] = clock.request_tensor
        return tf.compat.v1.train.SessionRunArgs(requests)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """On a requested step, write the summaries at the exact ``global_step``."""
        if not self._summary_writer:
            return
        results = run_values.results
        if self._asked is not None:  # the window's request: (summaries, global_step after the window)
            summaries, read = results
        elif type(results) is dict:
            summaries, read = results.get("summary"), results.get("global_step")
        else:  # nothing, or the clock's read alone
            summaries, read = None, results
        global_step = self._clock.advance(run_context, read)
        if self._next_step is None or self._request_summary:
            global_step = self._clock.confirm(run_context)
        if self._next_step is None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            if summaries is not None:
                for summary in summaries:
                    self._summary_writer.add_summary(summary, global_step)
        self._next_step = global_step + 1


def summary_ops(tf: Any, names: list[str], ctx: HookContext) -> list[Any]:
    """One summary op per tensor name: a scalar for a scalar tensor, else a histogram.

    The tag is exactly the name (``:`` replaced by ``_``). A tensor whose static shape is a scalar
    (rank 0) gets ``ScalarSummary``; any other (a vector, a matrix, an unknown shape) gets
    ``HistogramSummary``, as ``tf.compat.v1.summary.histogram`` writes it. A variable's name is read
    as its value (see :meth:`~hookrun.hooks.context.TensorNames.readable`). The raw ops are used so
    the tag is the name: ``tf.compat.v1.summary.scalar`` tags with its op's unique name, which is
    ``loss_1`` when the graph already has an op ``loss``.

    Args:
        tf: the ``tensorflow`` module.
        names: tensor names from the config.
        ctx: the runner's context (its ``tensors`` resolve the names).

    Returns:
        The summary ops (string tensors), in the order of ``names``.

    Raises:
        UnknownTensorError: a name is not a tensor of the graph.
        HookConfigError: a tensor is not numeric (strings, booleans, handles cannot be summarised).
    """
    ops = []
    for name in names:
        tensor = ctx.tensors.resolve(name)
        tensor = tf.convert_to_tensor(tensor)  # a variable object (``global_step``) -> its read
        dtype = tensor.dtype
        if not (dtype.is_floating or dtype.is_integer) or dtype.is_quantized:
            raise HookConfigError(
                f"tensors: {name!r} is a {dtype.name} tensor; summary_saver writes numbers (scalars, or "
                "histograms of other shapes); name a numeric tensor"
            )
        tag = name.replace(":", "_")
        if tensor.shape.rank == 0:
            ops.append(tf.raw_ops.ScalarSummary(tags=tag, values=tensor))
        else:
            ops.append(tf.raw_ops.HistogramSummary(tag=tag, values=tensor))
    return ops


def build(config: SummarySaverConfig, ctx: HookContext) -> SummarySaverHook:
    """Build :class:`SummarySaverHook` writing one summary per named tensor.

    Each name in ``tensors`` becomes a summary tagged exactly ``name`` (``:`` replaced by ``_``;
    kept out of the global ``SUMMARIES`` collection): a scalar for a scalar tensor, a histogram
    (as ``tf.compat.v1.summary.histogram``) for any other shape; a variable is read, not fetched as
    its handle. They are merged into the hook's ``summary_op``, with the ``summary_op`` of a
    model_fn's ``EstimatorSpec.scaffold`` when it gives one (as Estimator's ``SummarySaverHook`` wrote
    ``scaffold.summary_op``), else with the builder's own summaries (``ctx.model_summaries``: what its
    ``train`` call added to the ``SUMMARIES`` collection, as Estimator's default ``summary_op``,
    ``merge_all()``, wrote them) unless ``model_summaries: false``. When it fires: see :class:`SummarySaverHook`.

    Args:
        config: ``save_steps`` xor ``save_secs``, ``tensors`` (names), ``output_dir``
            (relative to the run directory).
        ctx: the runner's context.

    Raises:
        UnknownTensorError: a name in ``tensors`` is not a tensor of the graph.
        HookConfigError: a name in ``tensors`` is not a numeric tensor.
    """
    v1 = ctx.tf.compat.v1
    # The summary ops under hookrun/summary_saver (their tags are the names, whatever the scope)
    with v1.name_scope(f"{HOOKRUN_SCOPE}/summary_saver"):
        ops = summary_ops(ctx.tf, config.tensors, ctx)
        given = getattr(ctx.scaffold, "summary_op", None)  # before finalize(): only a summary_op a model_fn gave
        if given is not None:  # it replaces the builder's own summaries, as Estimator's Scaffold.summary_op did
            ops.append(given)
        elif config.model_summaries:
            ops.extend(ctx.model_summaries)
        summary_op = v1.summary.merge(ops)
    return SummarySaverHook(
        ctx.clock,
        save_steps=config.save_steps,
        save_secs=config.save_secs,
        output_dir=str(ctx.resolve_dir(config.event_dir())),
        summary_op=summary_op,
    )
