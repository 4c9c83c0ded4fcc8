"""A run's input source: the user's ``data.input_fn``, or data files of a registered format, behind one interface.

:func:`open_source` is the one call the trainer makes for its data: it returns an :class:`InputSource`,
and everything the run needs from its input it asks that object, never which kind it is:

1. before TensorFlow (:func:`open_source`): the files source reads every file once (the statistics
   pass: :func:`~hookrun.runner.data.streaming.scan_data`) and refuses a cluster on which a task would
   get no rows;
2. once TensorFlow is imported and the checkpoint found (:meth:`InputSource.open`): the preprocessing
   (fitted, or a resumed run's saved one), this task's shard (:attr:`InputSource.shard`); the input_fn
   source imports the functions then (a user module importing TensorFlow finds it set up: tf-keras);
3. the graph: :attr:`InputSource.train` and :attr:`InputSource.validation` are what
   :func:`hookrun.runner.graph.build.build_graph` takes today; :meth:`InputSource.train_dataset` and
   :meth:`InputSource.eval_dataset` give the ``tf.data`` pipelines themselves;
4. resume (:meth:`InputSource.position`): the files source skips the batches already trained (its
   pipeline is deterministic with a seed); the input_fn source saves its iterator state with each
   checkpoint where ``tf.data`` can (:mod:`hookrun.runner.data.input_state`).

The formats themselves (CSV, TFRecord, JSON lines, plug-ins) are one layer down:
:mod:`hookrun.runner.data.formats`. No TensorFlow is imported here; ``tf`` is handed in.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Any

from hookrun.common.errors import PlacedError
from hookrun.config_schemas.loader import ConfigError, LoadedConfig
from hookrun.runner.data.preprocessing import Preprocessor
from hookrun.runner.data.streaming import EvalInput, Scan, StreamInput, check_drop_notes, check_shards, scan_data


class InputSource(abc.ABC):
    """The input of one run (one task on a cluster).

    Attributes:
        train: what the graph builder reads training batches from (a
            :class:`~hookrun.runner.data.streaming.StreamInput` or an
            :class:`~hookrun.runner.data.input_fn.InputFn`); set by :meth:`open`.
        validation: the validation input (an :class:`~hookrun.runner.data.streaming.EvalInput`, the
            ``data.eval_input_fn``), or None; set by :meth:`open`.
        preprocessor: the preprocessing the files source applies (saved as ``preprocessing.json``); None for an
            input_fn (its pipeline is the user's own).
        shard: on a cluster, ``(input pipelines, this task's pipeline id)`` as ``tf.distribute``'s
            ``InputContext`` gives them; None alone.
    """

    train: Any = None
    validation: Any = None
    preprocessor: Preprocessor | None = None
    shard: tuple[int, int] | None = None

    @property
    @abc.abstractmethod
    def num_rows(self) -> int | None:
        """Training rows one epoch feeds over all tasks (count), or None when unknown (an input_fn)."""

    @abc.abstractmethod
    def open(self, state_path: Path, initial_step: int, notes: list[str], context: Any) -> None:
        """Make the source ready for the graph, after TensorFlow is imported and the checkpoint found.

        Args:
            state_path: the run directory's ``preprocessing.json`` (read when the run resumes).
            initial_step: the restored ``global_step`` (0: a new run).
            notes: lines for the user; the source appends its own (rows dropped by ``missing: drop``).
            context: this task's ``tf.distribute.InputContext`` on a cluster, else None
                (:func:`hookrun.runner.data.input_fn.input_context`).

        Raises:
            SetupError: the saved preprocessing does not fit the config or the data.
        """

    @abc.abstractmethod
    def train_dataset(self, tf: Any, *, skip_steps: int = 0, named: bool = False, params: Any = None,
                      run_info: Any = None) -> Any:
        """The training pipeline: a ``tf.data.Dataset`` of ``(features, labels)`` batches, endless or ``epochs`` long.

        Args:
            tf: the ``tensorflow`` module.
            skip_steps: batches already trained (the files source skips them; an input_fn's position is
                restored from its saved iterator state instead).
            named: the files source gives features as a dict column -> tensor (a model_fn), else one matrix.
            params: ``graph.params``, handed to an input_fn that names ``params``.
            run_info: the ``config`` an input_fn that names ``config`` gets (Estimator's RunConfig).

        Raises:
            PlacedError: an input_fn that fails or returns the wrong type (at ``data.input_fn``).
        """

    @abc.abstractmethod
    def eval_dataset(self, tf: Any, batch_size: int, *, named: bool = False, params: Any = None,
                     run_info: Any = None) -> Any:
        """The validation pipeline, every row once (``batch_size`` rows a batch), or None without validation data.

        Args: as :meth:`train_dataset`; ``batch_size`` (rows) is the files source's (an input_fn batches its own).
        """

    @abc.abstractmethod
    def position(self, tf: Any, graph: Any, *, resume_path: str | None, ended_at_data_end: bool,
                 on_cluster: bool, own_saver: bool) -> tuple[Any, list[str]]:
        """How a resumed run finds its place in the data: ``(input state for the Scaffold or None, notes)``.

        Called once the training graph is built. The files source returns ``(None, [])``: its pipeline
        skips the batches already trained (``skip_steps``). The input_fn source saves its iterator
        state with each checkpoint where ``tf.data`` can
        (:func:`hookrun.runner.data.input_state.plan_input_state`, whose arguments these are).
        """


class FileSource(InputSource):
    """Data files of a registered format (CSV, TFRecord, JSON lines, a plug-in's), read by the built-in reader.

    Files -> sample and statistics (the scan) -> the preprocessing -> ``tf.data``
    (:class:`~hookrun.runner.data.streaming.StreamInput`).

    Serving and prediction read the trained run's saved preprocessing, not a source:
    :mod:`hookrun.runner.trained.inference` (raw columns, serialized Examples) and
    :func:`hookrun.runner.trained.predict.prediction_input` (files of any registered format). TFRecord
    tensor features (``data.columns`` with a shape, varlen or bytes) have their serving receiver and
    predict dataset in ``runner/data/tensor_serving.py`` (another branch); the place to call them from is
    the TFRecord format (``runner/data/formats/tfrecord.py``, marked "THE SPOT"), with ``self.scan.train.tensors``
    as the spec.
    """

    def __init__(self, loaded: LoadedConfig, scan: Scan) -> None:
        """Wrap a finished statistics pass (:func:`open_source` makes it)."""
        self.loaded = loaded
        self.scan = scan

    @property
    def num_rows(self) -> int:
        """Training rows one epoch feeds, after ``drop``, over all tasks (count)."""
        return self.scan.train_rows

    def open(self, state_path: Path, initial_step: int, notes: list[str], context: Any) -> None:
        """Fit (or, resuming, load and check) the preprocessing; shard by ``context``; build the inputs."""
        config = self.loaded.config
        if context is not None and context.num_input_pipelines > 1:
            self.shard = (context.num_input_pipelines, context.input_pipeline_id)
        scan = self.scan
        if initial_step > 0 and state_path.exists():
            preprocessor = Preprocessor.load(state_path, config.data)
            if scan.plan.kinds != preprocessor.kinds:
                scan = scan_data(
                    config.data, self.loaded.base_dir, config.graph, kinds=preprocessor.kinds,
                    shards=self.shard and self.shard[0],
                )
            preprocessor.check_resumable(config.data, scan.split, state_path)
        else:
            preprocessor = scan.state
        notes.extend(check_drop_notes(scan))
        self.scan, self.preprocessor = scan, preprocessor
        self.train = StreamInput(scan, preprocessor, config.data, self.shard)
        self.validation = self.train.evaluation()

    def train_dataset(self, tf: Any, *, skip_steps: int = 0, named: bool = False, params: Any = None,
                      run_info: Any = None) -> Any:
        """:meth:`StreamInput.train_dataset` (``params``, ``run_info`` unused)."""
        return self.train.train_dataset(tf, skip_steps=skip_steps, named=named)

    def eval_dataset(self, tf: Any, batch_size: int, *, named: bool = False, params: Any = None,
                     run_info: Any = None) -> Any:
        """:meth:`EvalInput.dataset`, or None without validation rows."""
        validation: EvalInput | None = self.validation
        return validation.dataset(tf, batch_size, named=named) if validation is not None else None

    def position(self, tf: Any, graph: Any, *, resume_path: str | None, ended_at_data_end: bool,
                 on_cluster: bool, own_saver: bool) -> tuple[Any, list[str]]:
        """Nothing saved: the pipeline skips the batches already trained."""
        return None, []


class InputFnSource(InputSource):
    """The user's ``data.input_fn`` (and ``data.eval_input_fn``), called as Estimator called it."""

    def __init__(self, loaded: LoadedConfig) -> None:
        """Keep the config; :meth:`open` imports the functions (after TensorFlow, imported quietly, with tf-keras)."""
        self.loaded = loaded

    @property
    def num_rows(self) -> None:
        """Unknown: the input_fn's dataset says when it ends."""
        return None

    def open(self, state_path: Path, initial_step: int, notes: list[str], context: Any) -> None:
        """Import the functions; hand the input_fn this task's ``input_context`` (it shards itself).

        Raises:
            ConfigError: a module does not import or lacks the function (at ``data.input_fn`` /
                ``data.eval_input_fn``).
        """
        from hookrun.runner.data.input_fn import InputFn

        data = self.loaded.config.data
        try:
            self.train = InputFn(data.input_fn, self.loaded.base_dir, "input_fn")
            self.validation = (
                InputFn(data.eval_input_fn, self.loaded.base_dir, "eval_input_fn") if data.eval_input_fn else None
            )
        except PlacedError as err:
            raise ConfigError([self.loaded.issue(err.loc, err.reason)]) from None
        self.train.input_context = context
        if context is not None and context.num_input_pipelines > 1:
            self.shard = (context.num_input_pipelines, context.input_pipeline_id)

    def _call(self, tf: Any, function: Any, mode: str, params: Any, run_info: Any) -> Any:
        from hookrun.runner.data.input_fn import make_pipeline

        info = run_info.with_hookrun(mode, params) if run_info is not None else None
        result = function.call(params, mode, info)
        make_pipeline(tf, function, result, mode, collect=False)  # the checks an input_fn's result gets in training
        return result

    def train_dataset(self, tf: Any, *, skip_steps: int = 0, named: bool = False, params: Any = None,
                      run_info: Any = None) -> Any:
        """The input_fn's result in ``train`` mode, checked (a dataset, or ``(features, labels)`` tensors)."""
        return self._call(tf, self.train, "train", params, run_info)

    def eval_dataset(self, tf: Any, batch_size: int, *, named: bool = False, params: Any = None,
                     run_info: Any = None) -> Any:
        """The eval_input_fn's dataset in ``eval`` mode, checked; None without ``data.eval_input_fn``."""
        if self.validation is None:
            return None
        return self._call(tf, self.validation, "eval", params, run_info)

    def position(self, tf: Any, graph: Any, *, resume_path: str | None, ended_at_data_end: bool,
                 on_cluster: bool, own_saver: bool) -> tuple[Any, list[str]]:
        """Its iterator state saved with each checkpoint where ``tf.data`` can (``data.save_input_state``)."""
        from hookrun.runner.data.input_state import plan_input_state

        data = self.loaded.config.data
        assert data.input_fn is not None  # an InputFnSource is made for data.input_fn
        return plan_input_state(
            tf, graph, data.input_fn, data.save_input_state, resume_path, ended_at_data_end,
            on_cluster=on_cluster, own_saver=own_saver,
        )


def open_source(loaded: LoadedConfig, tasks: list[str] | None = None) -> InputSource:
    """The input source a config names, before TensorFlow: ``data.input_fn``, or files of a registered format.

    Args:
        loaded: the config.
        tasks: on a cluster, the training tasks in shard order (``chief:0``, ``worker:1``, ...); with more
            than one, the files source counts each task's rows and refuses a cluster where one gets none.

    Returns:
        The source; call :meth:`InputSource.open` once TensorFlow is imported and the checkpoint found.

    Raises:
        DataError: any data error of the files (names file, line and column where there is one).
    """
    config = loaded.config
    if config.data.input_fn is not None:
        return InputFnSource(loaded)
    shards = len(tasks) if tasks and len(tasks) > 1 else None
    scan = scan_data(config.data, loaded.base_dir, config.graph, shards=shards)  # one pass, before TensorFlow
    if shards is not None:
        check_shards(scan, list(tasks or []))
    return FileSource(loaded, scan)
