"""Third-party hooks for the ``session.steps_per_run`` corpus (issue 22): fetches and feeds of every kind.

Modelled on public hooks, adapted to this graph (a regression on ``features``/``labels``; the loss is
``loss:0``): tensorflow/models' ``LoggingMetricHook`` (the loss by name and ``global_step``, through a
metric logger), and TensorFlow's own ``ProfilerHook`` (``training_util``'s global-step read and a
``FULL_TRACE``), ``FeedFnHook`` (a feed to ``features:0``) and ``FinalOpsHook`` (the loss in
``end``), subclassed only to record what they observe into :data:`RECORDS`; and a stop on a predicate
of the fetched ``global_step``.

:class:`AtWindowEnds` is the rule of docs/engine.md as a reference: under a plain
``MonitoredTrainingSession`` at one step per call it calls the hook only at each window's last step
(every N steps from the session's first, and at ``last_step``), so the hook sees exactly what
``MonitoredTrainingSession`` gives at those steps.

The test writes this file beside its configs and imports it from there, as hookrun imports a user's
module, so both sides share one module object and one ``RECORDS``.
"""

import os

import numpy as np
import tensorflow as tf

v1 = tf.compat.v1

#: Everything the hooks observed, in call order.
RECORDS = []


def record(*item):
    RECORDS.append(item)


def rounded(value):
    return float(f"{float(value):.5g}")


class _MetricLogger:
    """The logger ``LoggingMetricHook`` writes to (tensorflow/models' ``BaseBenchmarkLogger.log_metric``)."""

    def log_metric(self, name, value, unit=None, global_step=None, extras=None):
        record("metric", name, rounded(value), int(global_step))


class LoggingMetric(v1.train.LoggingTensorHook):
    """After tensorflow/models' ``official/utils/logs/metric_hook.py`` ``LoggingMetricHook``.

    A ``LoggingTensorHook`` that adds ``global_step`` (the variable) to its tensors and hands each
    value, with that step, to a metric logger every ``every_n_iter`` calls.
    """

    def __init__(self, tensors, every_n_iter=None, at_end=False):
        super().__init__(tensors=tensors, every_n_iter=every_n_iter, at_end=at_end)
        self._logger = _MetricLogger()

    def begin(self):
        super().begin()
        self._global_step_tensor = v1.train.get_global_step()
        if self._global_step_tensor.name not in self._current_tensors:
            self._current_tensors[self._global_step_tensor.name] = self._global_step_tensor

    def after_run(self, unused_run_context, run_values):
        if self._should_trigger:
            self._log_metric(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log_metric(session.run(self._current_tensors))

    def _log_metric(self, tensor_values):
        self._timer.update_last_triggered_step(self._iter_count)
        global_step = tensor_values[self._global_step_tensor.name]
        for tag in self._tag_order:
            self._logger.log_metric(tag, tensor_values[tag], global_step=global_step)


class Profiler(v1.train.ProfilerHook):
    """TensorFlow's ``ProfilerHook``; records the global step each ``after_run`` gets and the traces it writes."""

    def __init__(self, output_dir, save_steps):
        super().__init__(save_steps=save_steps, output_dir=output_dir)
        self._dir = output_dir

    def after_run(self, run_context, run_values):
        record("profiler.step", int(run_values.results["global_step"]), bool(self._request_summary))
        super().after_run(run_context, run_values)

    def end(self, session):
        names = os.listdir(self._dir) if os.path.isdir(self._dir) else []
        names = sorted(n for n in names if n.startswith("timeline-"))
        record("profiler.timelines", tuple(names))


class FeedFeatures(v1.train.FeedFnHook):
    """TensorFlow's ``FeedFnHook`` feeding ``features:0`` (every row ``value``); records the weights at the end."""

    def __init__(self, value, rows, columns):
        super().__init__(lambda: {"features:0": np.full([rows, columns], value, np.float32)})

    def end(self, session):
        record("feed.weights", tuple(rounded(np.sum(w)) for w in session.run(v1.trainable_variables())))


class FinalLoss(v1.train.FinalOpsHook):
    """TensorFlow's ``FinalOpsHook`` with the loss as its ``final_ops``; records the value ``end`` got."""

    def __init__(self):
        super().__init__({"loss": "loss:0"})

    def end(self, session):
        super().end(session)
        record("final_ops", rounded(self.final_ops_values["loss"]))


class StopAtPredicate(v1.train.SessionRunHook):
    """A stop on a predicate of ``global_step`` (as tensor2tensor's and many users' step-bound hooks): fetches
    the step with each run and requests a stop once it reads ``steps`` past the session's first step."""

    def __init__(self, steps):
        self.steps = steps

    def begin(self):
        self.global_step = v1.train.get_global_step()

    def after_create_session(self, session, coord):
        self.stop_at = int(session.run(self.global_step)) + self.steps

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self.global_step)

    def after_run(self, run_context, run_values):
        if run_values.results >= self.stop_at:
            record("predicate.stop", int(run_values.results))
            run_context.request_stop()


class AtWindowEnds(v1.train.SessionRunHook):
    """The reference for N > 1: ``hook`` called at each window's last step only (see the module docstring).

    Windows start at each session's first step: steps ``start + 1`` to ``start + n``, and so on; the
    last one ends at ``last_step``. ``begin``, ``after_create_session`` and ``end`` are the hook's.
    """

    def __init__(self, hook, n, last_step):
        self.hook = hook
        self.n = n
        self.last_step = last_step

    def begin(self):
        self.global_step = v1.train.get_global_step()
        self.hook.begin()

    def after_create_session(self, session, coord):
        self.start = int(session.run(self.global_step))
        self.done = 0
        self.hook.after_create_session(session, coord)

    def before_run(self, run_context):
        step = self.start + self.done + 1  # the step this run trains
        self.active = (self.done + 1) % self.n == 0 or step == self.last_step
        return self.hook.before_run(run_context) if self.active else None

    def after_run(self, run_context, run_values):
        if self.active:
            self.hook.after_run(run_context, run_values)
        self.done += 1

    def end(self, session):
        self.hook.end(session)
