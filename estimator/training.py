"""``TrainSpec``, ``EvalSpec``, ``train_and_evaluate``: mirror ``tf.estimator``'s (TF 1.15, ``training.py``).

Local (no ``TF_CONFIG`` cluster): ``Estimator.train`` with a saving listener that evaluates after each
checkpoint (not the first, written before any step), at most once per ``throttle_secs``, runs the
exporters, and evaluates once more at the end if the last step was not evaluated. With a ``TF_CONFIG``
cluster the task's role decides, as in TensorFlow: ``evaluator`` evaluates each new checkpoint until
``max_steps``; ``chief``, ``worker``, ``master`` and ``ps`` train through hookrun's cluster runner (which
today refuses an input_fn on a cluster, saying so). Importing this module does not import TensorFlow.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from hookrun.estimator.exporter import Exporter
from hookrun.estimator.run_config import TaskType

logger = logging.getLogger("tensorflow")


class TrainSpec(NamedTuple):
    """The training half of ``train_and_evaluate``; mirrors ``tf.estimator.TrainSpec``.

    Attributes:
        input_fn: the training input_fn.
        max_steps: the ``global_step`` to train to (absolute), or None (until the data ends).
        hooks: ``SessionRunHook`` instances for training.
        saving_listeners: ``CheckpointSaverListener`` instances (called before the evaluation's listener).

    Raises:
        TypeError, ValueError: ``input_fn`` not callable; ``max_steps`` not positive.
    """

    input_fn: Callable[..., Any]
    max_steps: int | None = None
    hooks: Sequence[Any] = ()
    saving_listeners: Sequence[Any] = ()

    def __new__(cls, input_fn: Callable[..., Any], max_steps: int | None = None, hooks: Sequence[Any] | None = None,
                saving_listeners: Sequence[Any] | None = None) -> TrainSpec:
        """Check and make the spec (TF 1.15's checks)."""
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(cls, input_fn, max_steps, tuple(hooks or ()), tuple(saving_listeners or ()))


class EvalSpec(NamedTuple):
    """The evaluation half of ``train_and_evaluate``; mirrors ``tf.estimator.EvalSpec``.

    Attributes:
        input_fn: the evaluation input_fn.
        steps: batches per evaluation (None: the whole input; default 100).
        name: the evaluation's name (events in ``eval_<name>``).
        hooks: ``SessionRunHook`` instances for evaluation.
        exporters: :class:`~hookrun.estimator.exporter.Exporter` instances (one or a list), unique names.
        start_delay_secs: seconds an ``evaluator`` task waits first (default 120).
        throttle_secs: least seconds between two evaluations (default 600).

    Raises:
        TypeError, ValueError: ``input_fn`` not callable; ``steps`` or ``throttle_secs`` not positive;
            ``start_delay_secs`` negative; an exporter that is no ``Exporter``; two exporters of one name.
    """

    input_fn: Callable[..., Any]
    steps: int | None = 100
    name: str | None = None
    hooks: Sequence[Any] = ()
    exporters: Sequence[Exporter] = ()
    start_delay_secs: float = 120
    throttle_secs: float = 600

    def __new__(cls, input_fn: Callable[..., Any], steps: int | None = 100, name: str | None = None,
                hooks: Sequence[Any] | None = None, exporters: Any = None, start_delay_secs: float = 120,
                throttle_secs: float = 600) -> EvalSpec:
        """Check and make the spec (TF 1.15's checks); ``exporters`` may be one exporter."""
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        if exporters is None:
            exporters = ()
        elif isinstance(exporters, Exporter):
            exporters = (exporters,)
        exporters = tuple(exporters)
        names = set()
        for exporter in exporters:
            if not isinstance(exporter, Exporter):
                raise TypeError(f"`exporters` must be an Exporter, an iterable of Exporter, or `None`, "
                                f"found {exporter}.")
            if exporter.name in names:
                raise ValueError(f"`exporters` must have unique names. Such a name cannot be `None`. "
                                 f"{exporter.name} was repeated.")
            names.add(exporter.name)
        return super().__new__(cls, input_fn, steps, name, tuple(hooks or ()), exporters, start_delay_secs,
                               throttle_secs)


class _Evaluator:
    """Evaluate the latest checkpoint and run the exporters (TF 1.15's ``_TrainingExecutor._Evaluator``)."""

    def __init__(self, estimator: Any, eval_spec: EvalSpec, max_training_steps: int | None) -> None:
        self._estimator = estimator
        self._eval_spec = eval_spec
        self._max_training_steps = max_training_steps
        self._previous_ckpt_path: str | None = None
        self.is_final_export_triggered = False

    def evaluate_and_export(self) -> tuple[dict[str, Any] | None, list[Any]]:
        """``(metrics or None when there was nothing new to evaluate, export results)``."""
        latest = self._estimator.latest_checkpoint()
        if not latest:
            logger.warning("Estimator is not trained yet. Will start an evaluation when a checkpoint is ready.")
            return None, []
        if latest == self._previous_ckpt_path:
            logger.warning("No new checkpoint ready for evaluation. Skip the current evaluation pass as evaluation "
                           "results are expected to be same for the same checkpoint.")
            return None, []
        spec = self._eval_spec
        metrics = self._estimator.evaluate(input_fn=spec.input_fn, steps=spec.steps, name=spec.name,
                                           checkpoint_path=latest, hooks=list(spec.hooks))
        final = bool(self._max_training_steps) and metrics["global_step"] >= self._max_training_steps
        base = os.path.join(self._estimator.model_dir, "export")
        exports = [exporter.export(self._estimator, os.path.join(base, exporter.name), latest, metrics, final)
                   for exporter in spec.exporters]
        if final:
            logger.info("Performing the final export in the end of training.")
            self.is_final_export_triggered = True
        self._previous_ckpt_path = latest
        return metrics, exports


class _EvaluateAfterCheckpoint:
    """A ``CheckpointSaverListener``: evaluate after checkpoints, throttled (``_NewCheckpointListenerForEvaluate``)."""

    def __init__(self, evaluator: _Evaluator, throttle_secs: float) -> None:
        self._evaluator = evaluator
        self._throttle_secs = throttle_secs
        self._last_time: float | None = None
        self._last_step: int | None = None
        self._first = True
        self.eval_result: dict[str, Any] | None = None
        self.export_results: list[Any] = []

    def begin(self) -> None:
        self._last_time, self._last_step, self._first = None, None, True

    def before_save(self, session: Any, global_step_value: int) -> None:
        return None

    def after_save(self, session: Any, global_step_value: int) -> bool | None:
        if self._first:  # the checkpoint written when the session starts: nothing trained yet
            self._first = False
            return None
        if self._last_time is None or time.time() - self._last_time >= self._throttle_secs:
            self._evaluate(global_step_value)
            if self._evaluator.is_final_export_triggered:
                logger.info("Stopping training since max_steps has been reached.")
                return True
        else:
            logger.info("Skip the current checkpoint eval due to throttle secs (%s secs).", self._throttle_secs)
        return None

    def end(self, session: Any, global_step_value: int) -> None:
        if global_step_value != self._last_step:
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value: int) -> None:
        self._last_time, self._last_step = time.time(), global_step_value
        result, exports = self._evaluator.evaluate_and_export()
        if result is not None:
            self.eval_result, self.export_results = result, exports


def train_and_evaluate(estimator: Any, train_spec: TrainSpec, eval_spec: EvalSpec) -> tuple[Any, list[Any]]:
    """Train, evaluating after checkpoints and exporting; mirrors ``tf.estimator.train_and_evaluate`` (TF 1.15).

    Args:
        estimator: an :class:`~hookrun.estimator.Estimator`.
        train_spec: the :class:`TrainSpec`.
        eval_spec: the :class:`EvalSpec`.

    Returns:
        Locally, ``(the last evaluation's metrics dict or None, the last exporters' results)``; on a cluster
        task other than the evaluator, ``(None, [])`` as TensorFlow.

    Raises:
        TypeError: the arguments are not an Estimator, TrainSpec and EvalSpec.
        ValueError: ``throttle_secs`` is 0 locally; the RunConfig writes no checkpoints; an unknown task type.
    """
    from hookrun.estimator.estimator import Estimator

    if not isinstance(estimator, Estimator):
        raise TypeError(f"`estimator` must have type `hookrun.estimator.Estimator`. Got: {type(estimator)}")
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"`train_spec` must have type `TrainSpec`. Got: {type(train_spec)}")
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `EvalSpec`. Got: {type(eval_spec)}")
    config = estimator.config
    evaluator = _Evaluator(estimator, eval_spec, train_spec.max_steps)
    if not config.cluster_spec:
        if eval_spec.throttle_secs <= 0:
            raise ValueError(f"eval_spec.throttle_secs should be positive, given: {eval_spec.throttle_secs}. "
                             "It is used do determine how long each training iteration should go when train and "
                             "evaluate locally.")
        logger.info("Start train and evaluate loop. The evaluate will happen after every checkpoint. Checkpoint "
                    "frequency is determined based on RunConfig arguments: save_checkpoints_steps %s or "
                    "save_checkpoints_secs %s.", config.save_checkpoints_steps, config.save_checkpoints_secs)
        listener = _EvaluateAfterCheckpoint(evaluator, eval_spec.throttle_secs)
        estimator.train(train_spec.input_fn, hooks=list(train_spec.hooks), max_steps=train_spec.max_steps,
                        saving_listeners=[*train_spec.saving_listeners, listener])
        if listener.eval_result is None and listener._last_step is None:  # trained nothing new: no save
            metrics, exports = evaluator.evaluate_and_export()
            return metrics, exports
        return listener.eval_result, listener.export_results
    task = config.task_type
    if task == TaskType.EVALUATOR:
        return _run_evaluator(evaluator, eval_spec)
    if task in (TaskType.CHIEF, TaskType.WORKER, TaskType.MASTER, TaskType.PS):
        estimator.train(train_spec.input_fn, hooks=list(train_spec.hooks), max_steps=train_spec.max_steps,
                        saving_listeners=list(train_spec.saving_listeners) or None)
        return None, []
    raise ValueError(f"Task type {task} is not supported. Supported task types are chief, worker, ps, evaluator, "
                     "master.")


def _run_evaluator(evaluator: _Evaluator, eval_spec: EvalSpec) -> tuple[Any, list[Any]]:
    """The ``evaluator`` task: wait ``start_delay_secs``, then evaluate each new checkpoint until the final export."""
    time.sleep(eval_spec.start_delay_secs)
    metrics, exports = None, []
    while True:
        started = time.time()
        result, results = evaluator.evaluate_and_export()
        if result is not None:
            metrics, exports = result, results
        if evaluator.is_final_export_triggered:
            return metrics, exports
        time.sleep(max(eval_spec.throttle_secs - (time.time() - started), 0))


__all__ = ["EvalSpec", "TrainSpec", "train_and_evaluate"]
