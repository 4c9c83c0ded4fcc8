"""``evaluation``: loss and metrics on the whole validation set during training, as ``InMemoryEvaluatorHook``.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import tensorflow as tf

from hookrun.common.numbers import format_number
from hookrun.hooks.context import Evaluations, HookConfigError, HookContext
from hookrun.hooks.evaluation import NO_VALIDATION_DATA, EvaluationConfig
from hookrun.hooks.step_clock import ClockedHook, StepClock


class EvaluationHook(ClockedHook, tf.compat.v1.train.SessionRunHook):
    """Evaluate the current weights on the validation set; mirrors ``tf.estimator.experimental.InMemoryEvaluatorHook``.

    The evaluation part (built by the runner before the session finalizes
    the graph) is the builder's model called in ``eval`` mode in a graph of
    its own, as Estimator built it, then grafted into the training graph
    under ``evaluation/`` reading the training weights by name
    (:mod:`hookrun.runner.graph.graft`), with an initializable iterator over
    the validation rows and streaming metrics. One evaluation runs ``reset_op``, then
    ``update_op`` once per validation batch, then fetches the values: loss
    and metrics over the full set (``val_loss``, ``val_<metric>``). It runs
    on ``run_context.session``, the raw ``tf.compat.v1.Session`` under the
    monitored session, so no training hook sees these runs and ``global_step``
    does not move. A model_fn's ``EstimatorSpec.evaluation_hooks`` run around
    each evaluation as Estimator's ``evaluate`` ran them (``after_create_session``,
    ``before_run``/``after_run`` per batch, ``end``; their ``begin`` once, in this
    hook's ``begin``): see :mod:`hookrun.runner.session.eval_hooks`.

    When each method fires:

    - ``begin``: opens the event file writer; the clock builds its ``global_step`` read.
    - ``after_create_session``: syncs the run's :class:`~hookrun.hooks.step_clock.StepClock`
      (one ``global_step`` read per session, shared) and starts the timer.
    - ``before_run``: asks for nothing while the clock counts (for ``global_step`` while it
      reads: on a cluster, or after a train op was seen not to add exactly one).
    - ``after_run``: moves the clock past the step; once a multiple of ``every_n_steps``
      global steps has been reached (or ``every_n_secs`` seconds have passed since the last
      evaluation), evaluates at the exact ``global_step``, read after the step.
    - ``end``: evaluates once more (``at_end``) at the exact final ``global_step``, unless
      that step was just evaluated.

    Each evaluation is published to ``evaluations`` (read by ``history_saver``
    and ``early_stopping``), written as TensorBoard scalars (tags ``loss``,
    ``<metric>``: the training tags, so TensorBoard overlays them) to
    ``output_dir``, and printed as one line when ``log``.

    Args:
        evaluation: the runner's ``EvalGraph`` (its ``run(session)`` evaluates once; ``begin_hooks()``).
        evaluations: where results are published.
        clock: the run's shared step clock.
        every_n_steps: evaluate at multiples of N global steps (steps); exclusive with ``every_n_secs``.
        every_n_secs: evaluate every N seconds (seconds).
        at_end: evaluate at ``end`` too.
        output_dir: event file directory, or None for no summaries.
        console: a ``rich`` console for the log line, or None.

    Raises:
        ValueError: not exactly one of ``every_n_steps`` and ``every_n_secs``, or a non-positive one.

    Example:
        >>> hook = EvaluationHook(built.evaluation, Evaluations(names), StepClock(), every_n_steps=500)
        >>> ...  # after training
        >>> hook.evaluations.latest
        {'val_loss': 0.28, 'val_rmse': 53012.0, 'val_mae': 36101.5}
    """

    def __init__(
        self,
        evaluation: Any,
        evaluations: Evaluations,
        clock: StepClock,
        every_n_steps: int | None = None,
        every_n_secs: float | None = None,
        at_end: bool = True,
        output_dir: Path | None = None,
        console: Any = None,
    ) -> None:
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("set exactly one of every_n_steps and every_n_secs")
        if (every_n_steps is not None and every_n_steps <= 0) or (every_n_secs is not None and every_n_secs <= 0):
            raise ValueError("every_n_steps and every_n_secs must be positive")
        super().__init__(clock)
        self.evaluation = evaluation
        self.evaluations = evaluations
        self.every_n_steps = every_n_steps
        self.every_n_secs = every_n_secs
        self.at_end = at_end
        self.output_dir = output_dir
        self.seconds = 0.0
        self._console = console
        self.step = clock.step
        self._last_time = 0.0
        self._last_step: int | None = None
        self._writer: Any = None

    def begin(self) -> None:
        """Open the event file writer (``FileWriterCache``, closed by the runner); build the clock's read.

        A model_fn's ``evaluation_hooks`` get their ``begin()`` here, once, before the graph is finalized.
        """
        super().begin()
        self.evaluation.begin_hooks()
        if self.output_dir is not None:
            self._writer = tf.compat.v1.summary.FileWriterCache.get(str(self.output_dir))

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Sync the clock (one shared read per session); start the timer."""
        super().after_create_session(session, coord)
        self.step = self._clock.step
        self._last_time = time.monotonic()

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Move the clock; evaluate once a multiple of ``every_n_steps`` is reached or ``every_n_secs`` have passed."""
        previous = self.step
        self.step = self._clock.advance(run_context, run_values.results)  # results: the clock's read, or None
        if self.every_n_steps is not None:
            due = self.step // self.every_n_steps > previous // self.every_n_steps
        else:
            due = time.monotonic() - self._last_time >= self.every_n_secs  # type: ignore[operator]
        if due:
            self.step = self._clock.confirm(run_context)
            self.evaluate(run_context.session, self.step)

    def end(self, session: Any) -> None:
        """Evaluate the final weights (``at_end``), unless this step was just evaluated."""
        if not self.at_end:
            return
        self.step = self._clock.final(session)
        if self.step != self._last_step:
            self.evaluate(session, self.step)

    def evaluate(self, session: Any, step: int) -> dict[str, float]:
        """Run one evaluation over the whole validation set and publish it.

        Args:
            session: a ``tf.compat.v1.Session`` on this graph (the raw session: no hooks run).
            step: the global step the weights belong to.

        Returns:
            ``{"val_loss": ..., "val_<metric>": ...}``.
        """
        started = time.perf_counter()
        values = self.evaluation.run(session)
        self.seconds += time.perf_counter() - started
        self._last_time = time.monotonic()
        self._last_step = step
        self.evaluations.publish(step, values)
        if self._writer is not None:
            summary = tf.compat.v1.Summary(
                value=[
                    tf.compat.v1.Summary.Value(tag=name.removeprefix("val_"), simple_value=v)
                    for name, v in values.items()
                ]
            )
            self._writer.add_summary(summary, step)
            self._writer.flush()
        if self._console is not None:
            shown = ", ".join(f"{name} {format_number(value)}" for name, value in values.items())
            self._console.print(f"evaluation at step {step}: {shown}", highlight=False, soft_wrap=True)
        return values


def build(config: EvaluationConfig, ctx: HookContext) -> EvaluationHook:
    """Build the ``evaluation`` hook on the runner's evaluation graph.

    Raises:
        HookConfigError: the run has no evaluation graph (no validation data); the checks before
            training report this with the hook's line first.
    """
    if ctx.evaluation is None or ctx.evaluations is None:
        raise HookConfigError(NO_VALIDATION_DATA)
    return EvaluationHook(
        evaluation=ctx.evaluation,
        evaluations=ctx.evaluations,
        clock=ctx.clock,
        every_n_steps=config.every_n_steps,
        every_n_secs=config.every_n_secs,
        at_end=config.at_end,
        output_dir=ctx.resolve_dir(config.output_dir),
        console=ctx.console if config.log else None,
    )
