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
5. after training (:func:`saved_source`: a trained run's source, from its saved config and preprocessing,
   no file read): :meth:`InputSource.predict_dataset` (``hookrun predict``) and
   :meth:`InputSource.serving_receiver` (``hookrun export``, and the graph ``hookrun predict`` runs).

The formats themselves (CSV, TFRecord, JSON lines, plug-ins) are one layer down:
:mod:`hookrun.runner.data.formats`. No TensorFlow is imported here; ``tf`` is handed in.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookrun.common.errors import PlacedError, SetupError
from hookrun.config_schemas.loader import ConfigError, LoadedConfig
from hookrun.runner.data.preprocessing import Preprocessor
from hookrun.runner.data.streaming import EvalInput, Scan, StreamInput, check_drop_notes, check_shards, scan_data

#: Name of the serialized ``tf.train.Example`` input of the files source's receiver (and of ``hookrun export``'s
#: signature of it).
EXAMPLES = "examples"


def op_name(column: str) -> str:
    """A valid op name for a column (an input, or an output of the inference graph): other characters as ``_``."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", column)


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

    loaded: LoadedConfig
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

    @abc.abstractmethod
    def predict_dataset(self, tf: Any, data: Any = None, *, function: Any = None, params: Any = None,
                        run_info: Any = None) -> Any:
        """The examples to predict (``hookrun predict``), as ``Estimator.predict`` read them.

        Args:
            tf: the ``tensorflow`` module.
            data: the files source's rows: data files (names, globs, directories) or what
                :meth:`FileSource.prediction_files` returned; unused by the input_fn source.
            function: an input function (:class:`~hookrun.runner.data.input_fn.InputFn`, ``--input-fn``) to
                call in ``infer`` mode instead (either source: Estimator.predict took any input_fn); the
                input_fn source's default is ``data.input_fn``.
            params: ``graph.params``, handed to an input function that names ``params``.
            run_info: the ``config`` an input function that names ``config`` gets.

        Returns:
            For an input function: its result, as it returned it (a ``tf.data.Dataset`` of features or of
            ``(features, labels)``, or tensors; the caller checks it). For the files source: the rows' chunks
            in file order (:func:`hookrun.runner.data.prediction.prediction_chunks`), raw cells that the
            receiver (:meth:`serving_receiver`) takes and passes through the saved preprocessing.

        Raises:
            PlacedError: the input function raised (at its option, naming it).
            SetupError, DataError: the files source's files (see :meth:`FileSource.prediction_files`).
        """

    @abc.abstractmethod
    def serving_receiver(self, tf: Any, *, function: Any = None, option: str = "graph.serving_input_fn",
                         **options: Any) -> Any:
        """The serving input ``hookrun export`` saves (and ``hookrun predict`` feeds), built in the default graph.

        Args:
            tf: the ``tensorflow`` module.
            function: a ``serving_input_receiver_fn`` (an :class:`~hookrun.runner.data.input_fn.InputFn`) whose
                receiver to use (either source, as Estimator's ``export_saved_model``); the input_fn source's
                default is ``graph.serving_input_fn``.
            option: where ``function`` was named, for its messages.
            options: the files source's receiver options (:meth:`FileSource.serving_receiver`).

        Returns:
            A receiver with Estimator's fields (``features``, ``receiver_tensors``): the function's
            (:class:`~hookrun.runner.trained.serving.ServingInputReceiver` or ``TensorServingInputReceiver``),
            or the files source's :class:`FileReceiver`.

        Raises:
            PlacedError: the function raised or returned no receiver (at ``option``, naming it).
            SetupError: the input_fn source without a serving_input_fn (exit 2).
        """

    def serving_function(self, given: str | None) -> str | None:
        """The serving_input_fn ``hookrun export`` uses, before TensorFlow: ``given``, else ``graph.serving_input_fn``.

        Args:
            given: ``--serving-input-fn`` (``module:function``), or None.

        Returns:
            The function's path, or None: the source's own receiver (:meth:`serving_receiver` without one).

        Raises:
            SetupError: neither, for a source that has no receiver of its own (the input_fn source) (exit 2).
        """
        return given or self.loaded.config.graph.serving_input_fn


@dataclass
class FileReceiver:
    """The files source's serving input: raw columns (and serialized records) -> the saved preprocessing -> features.

    Estimator's ``ServingInputReceiver`` fields, with what ``hookrun predict`` and ``hookrun export`` also need.

    Attributes:
        inputs: feature column -> its raw input ``[batch]`` (``float32``/``float64`` numeric, ``string``
            categorical), in the order of ``preprocessing.json``; a placeholder, or with ``examples`` a
            ``placeholder_with_default`` of the parsed record.
        examples: the ``string [batch]`` placeholder of serialized ``tf.train.Example`` records, or None.
        features: what the builder gets: the preprocessing's output (a dict column -> tensor when ``named``,
            else the dense matrix), then the TFRecord tensor features in spec order.
        complete: ``bool [batch]``: no missing value in a column whose policy fills nothing.
    """

    inputs: dict[str, Any]
    examples: Any
    features: Any
    complete: Any

    @property
    def receiver_tensors(self) -> dict[str, Any]:
        """The raw inputs by column name (Estimator's ``receiver_tensors``)."""
        return dict(self.inputs)


def _predict_with(function: Any, params: Any, run_info: Any) -> Any:
    """An input function called in ``infer`` mode, as ``Estimator.predict`` called it (unchecked result)."""
    return function.call(params, "infer", run_info)


def _receiver_with(tf: Any, function: Any, option: str) -> Any:
    """Call a serving_input_fn (no arguments, as ``export_saved_model`` did) and check it returned a receiver.

    Raises:
        PlacedError: at ``option`` naming the function: it raised (a receiver's ValueError included), or
            returned something other than a ``ServingInputReceiver``/``TensorServingInputReceiver``.
    """
    # the receiver classes users import (hookrun.runner.trained.serving); imported here only when called
    from hookrun.runner.trained.serving import ServingInputReceiver, TensorServingInputReceiver

    def error(reason: str) -> PlacedError:
        return PlacedError(option, f"{function.path} {reason}")

    try:
        receiver = function.fn()
    except Exception as err:  # the user's function may raise anything
        message = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise error(f"raised {type(err).__name__}: {message}") from err
    if isinstance(receiver, (ServingInputReceiver, TensorServingInputReceiver)):
        return receiver
    fields = ("features", "receiver_tensors", "receiver_tensors_alternatives")
    if all(hasattr(receiver, name) for name in fields):  # TF's own receiver classes, or a look-alike
        try:
            if isinstance(receiver.features, Mapping):
                return ServingInputReceiver(*(getattr(receiver, name) for name in fields))
            return TensorServingInputReceiver(*(getattr(receiver, name) for name in fields))
        except ValueError as err:
            raise error(f"returned a receiver that is not valid: {err}") from err
    raise error(
        f"returned {type(receiver).__module__}.{type(receiver).__qualname__}; return a "
        "ServingInputReceiver(features, receiver_tensors) (from hookrun.runner.trained.serving)",
    )


class FileSource(InputSource):
    """Data files of a registered format (CSV, TFRecord, JSON lines, a plug-in's), read by the built-in reader.

    Files -> sample and statistics (the scan) -> the preprocessing -> ``tf.data``
    (:class:`~hookrun.runner.data.streaming.StreamInput`).

    After training (:func:`saved_source`: the run's saved preprocessing, no scan): :meth:`predict_dataset`
    (files of any registered format, read as cells) and :meth:`serving_receiver` (raw columns and serialized
    Examples through the preprocessing's graph ops). TFRecord tensor features (``data.columns`` with a shape,
    varlen or bytes) are parsed by their format (:meth:`FileFormat.serving_receiver
    <hookrun.runner.data.formats.base.FileFormat.serving_receiver>`, which ``tfrecord.py`` gives from
    :mod:`hookrun.runner.data.tensor_serving`).
    """

    def __init__(self, loaded: LoadedConfig, scan: Scan) -> None:
        """Wrap a finished statistics pass (:func:`open_source` makes it)."""
        self.loaded = loaded
        self.scan = scan

    @classmethod
    def saved(cls, loaded: LoadedConfig, preprocessor: Preprocessor) -> FileSource:
        """The source of a trained run: its config and saved preprocessing, its files not read (no scan)."""
        source = cls(loaded, None)  # type: ignore[arg-type]  # no scan: predict and serve only
        source.preprocessor = preprocessor
        return source

    @property
    def num_rows(self) -> int | None:
        """Training rows one epoch feeds, after ``drop``, over all tasks (count); None for a saved run's source."""
        return self.scan.train_rows if self.scan is not None else None

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

    def prediction_files(self, files: list[str], base_dir: Path | None = None) -> tuple[Any, Any]:
        """The files to predict and the columns to read, before TensorFlow: ``(fileset, plan)``.

        :func:`hookrun.runner.data.prediction.prediction_input` with the saved preprocessing.

        Raises:
            SetupError, DataError: no file, a file missing or of an unknown format, a file without a feature
                column (names file and column), a numeric cell that is not a number.
        """
        from hookrun.runner.data.prediction import prediction_input

        return prediction_input(self.preprocessor, self.loaded.config.data, files, base_dir)

    def predict_dataset(self, tf: Any, data: Any = None, *, function: Any = None, params: Any = None,
                        run_info: Any = None) -> Any:
        """The files' rows in order, in chunks of raw cells (:func:`~hookrun.runner.data.prediction.prediction_chunks`).

        ``data``: file names (resolved by :meth:`prediction_files`) or its ``(fileset, plan)``. With
        ``function``, that input function's ``infer``-mode result instead.
        """
        from hookrun.runner.data.prediction import prediction_chunks

        if function is not None:
            return _predict_with(function, params, run_info)
        if data is None:
            raise SetupError("--data names no file; give one or more data files")
        prepared = isinstance(data, tuple) and len(data) == 2 and hasattr(data[0], "files")  # prediction_files'
        fileset, plan = data if prepared else self.prediction_files([data] if isinstance(data, str) else list(data))
        return prediction_chunks(tf, fileset, plan, self.loaded.config.data.tensor_features)

    def serving_receiver(self, tf: Any, *, function: Any = None, option: str = "graph.serving_input_fn",
                         examples: bool = False, numeric_dtype: str = "float32", named: bool = False,
                         **options: Any) -> Any:
        """Raw columns (and serialized Examples) through the saved preprocessing: a :class:`FileReceiver`.

        Mirrors what ``export_saved_model`` built from a ``serving_input_receiver_fn``: under the name scope
        ``inputs``, one input per raw column (``inputs/<column>``); under ``preprocessing``, the run's saved
        preprocessing as graph ops (:func:`hookrun.runner.data.streaming.transform_raw_columns`, the
        transformation training applies).

        Args:
            tf: the ``tensorflow`` module (builds in the default graph).
            function: a serving_input_fn whose receiver to use instead (:meth:`InputSource.serving_receiver`).
            option: where ``function`` was named.
            examples: add the serialized ``tf.train.Example`` input ``inputs/examples`` (``parse_example``:
                numeric features as ``float_list``, a column declared ``int`` in ``data.columns`` as
                ``int64_list``, categorical ones as ``bytes_list``; an absent feature is a missing value). Always
                added for a run with TFRecord tensor features: they are parsed from it by their format
                (:meth:`~hookrun.runner.data.formats.base.FileFormat.serving_receiver`) and join the named
                features after the columns, in spec order, as training gave them.
            numeric_dtype: ``float32`` (the exported signature, and ``hookrun predict``) or ``float64`` (the
                numbers exactly as training read them) for numeric inputs.
            named: features as a dict column -> tensor (a model_fn), else the dense matrix.
            options: unused.

        Returns:
            The :class:`FileReceiver` (or, with ``function``, that function's receiver).
        """
        if function is not None:
            return _receiver_with(tf, function, option)
        from hookrun.runner.data.formats.registry import format_named
        from hookrun.runner.data.reader import INT64_ABSENT, NUMERIC
        from hookrun.runner.data.streaming import transform_raw_columns

        config = self.loaded.config
        state = self.preprocessor
        assert state is not None  # open() or saved() set it
        v1 = tf.compat.v1
        tensors = config.data.tensor_features
        examples = examples or bool(tensors)  # tensor features come only from serialized records
        dtype = tf.float64 if numeric_dtype == "float64" else tf.float32
        inputs: dict[str, Any] = {}
        serialized = None
        with tf.name_scope("inputs"):
            parsed: dict[str, Any] = {}
            if examples:
                serialized = v1.placeholder(tf.string, [None], name=EXAMPLES)
                declared = config.data.column_types()
                spec = {
                    c.name: tf.io.FixedLenFeature([], tf.int64, default_value=INT64_ABSENT)
                    if c.kind == NUMERIC and declared.get(c.name) == "int"
                    else tf.io.FixedLenFeature([], tf.float32, default_value=float("nan"))
                    if c.kind == NUMERIC
                    else tf.io.FixedLenFeature([], tf.string, default_value="")
                    for c in state.columns
                }
                if spec:  # one parse for the one-value columns, another for the tensor features (predict feeds
                    # the columns as read and so runs only the second)
                    parsed = tf.io.parse_example(serialized, spec)
                    parsed = {
                        name: tf.where(tensor == INT64_ABSENT, tf.constant(float("nan"), tf.float64),
                                       tf.cast(tensor, tf.float64))
                        if tensor.dtype == tf.int64 else tensor
                        for name, tensor in parsed.items()
                    }
            tensor_features = (
                format_named(config.data.format or "tfrecord").serving_receiver(tf, tensors, serialized).features
                if tensors else {}
            )
            for column in state.columns:
                kind = dtype if column.kind == NUMERIC else tf.string
                if column.name in parsed:
                    inputs[column.name] = v1.placeholder_with_default(
                        tf.cast(parsed[column.name], kind), [None], name=op_name(column.name)
                    )
                else:
                    inputs[column.name] = v1.placeholder(kind, [None], name=op_name(column.name))
        with tf.name_scope("preprocessing"):
            if state.columns:
                transformed = transform_raw_columns(tf, state, inputs, named=named)
                features, complete = transformed.features, transformed.complete
            else:  # tensor features only: every record is complete
                features, complete = {}, tf.ones_like(serialized, dtype=tf.bool)
        if tensors:  # after the columns, in spec order: the features dict training gave the model_fn
            features = {**features, **tensor_features}
        return FileReceiver(inputs=inputs, examples=serialized, features=features, complete=complete)


class InputFnSource(InputSource):
    """The user's ``data.input_fn`` (and ``data.eval_input_fn``), called as Estimator called it."""

    def __init__(self, loaded: LoadedConfig, run_dir: Path | None = None) -> None:
        """Keep the config; :meth:`open` imports the functions (after TensorFlow, imported quietly, with tf-keras).

        ``run_dir``: a trained run's directory (:func:`saved_source`), named in its messages.
        """
        self.loaded = loaded
        self.run_dir = run_dir

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

    def predict_dataset(self, tf: Any, data: Any = None, *, function: Any = None, params: Any = None,
                        run_info: Any = None) -> Any:
        """The input function (``function``, else ``data.input_fn``) called in ``infer`` mode: its result, unchecked.

        What ``hookrun predict --input-fn`` reads (:func:`hookrun.runner.trained.input_fn_run.predict_with_input_fn`
        checks it: a dataset of features or of ``(features, labels)``, or tensors). ``data`` is unused.

        Raises:
            PlacedError: the function raised (naming it).
        """
        if function is None:
            from hookrun.runner.data.input_fn import InputFn

            data_config = self.loaded.config.data
            assert data_config.input_fn is not None  # an InputFnSource is made for data.input_fn
            function = InputFn(data_config.input_fn, self.loaded.base_dir, "input_fn")
        return _predict_with(function, params, run_info)

    def serving_function(self, given: str | None) -> str:
        """``given``, else ``graph.serving_input_fn``: an input_fn run has no columns to serve.

        Raises:
            SetupError: neither is given (exit 2).
        """
        path = given or self.loaded.config.graph.serving_input_fn
        if path is None:
            raise SetupError(
                f"{self.run_dir or 'the run'}: trained from data.input_fn; export needs your serving_input_fn: "
                "set graph.serving_input_fn: module:function, or give --serving-input-fn module:function"
            )
        return path

    def serving_receiver(self, tf: Any, *, function: Any = None, option: str = "graph.serving_input_fn",
                         **options: Any) -> Any:
        """The serving_input_fn's receiver (``function``, else ``graph.serving_input_fn``), checked.

        Raises:
            SetupError: neither is given: an input_fn run has no columns to serve (exit 2).
            PlacedError: the function raised or returned no receiver (at ``option``, naming it).
        """
        if function is None:
            path = self.serving_function(None)
            from hookrun.runner.data.input_fn import input_fn_of

            function = input_fn_of(path, option)  # beside the current directory first, as hookrun export imports it
        return _receiver_with(tf, function, option)


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


def saved_source(loaded: LoadedConfig, preprocessor: Preprocessor | None, run_dir: Path | None = None) -> InputSource:
    """The input source of a trained run, for predict and export: no file read, no TensorFlow.

    Args:
        loaded: the run's saved ``config.yaml``.
        preprocessor: its saved ``preprocessing.json``; None for a run trained from ``data.input_fn``.
        run_dir: the run directory (named in messages).

    Returns:
        An :class:`InputFnSource` for a run trained from ``data.input_fn``, else a :class:`FileSource`
        (:meth:`FileSource.saved`).
    """
    if loaded.config.data.input_fn is not None or preprocessor is None:
        return InputFnSource(loaded, run_dir)
    return FileSource.saved(loaded, preprocessor)
