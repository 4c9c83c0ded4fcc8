"""``Estimator``: mirrors ``tf.estimator.Estimator`` (TF 1.15, ``estimator/estimator.py``) on hookrun's runner.

``train`` is ``hookrun train``: it writes the config an equivalent YAML file would hold and runs
:func:`hookrun.runner.train` on it, so the run directory (``model_dir``) is an ordinary hookrun run
directory (``config.yaml``, ``summary.json``, ``history.csv`` at a terminal, checkpoints, ``train/`` events),
with the lock, resume, NaN guard and signal handling of every hookrun run. ``evaluate``, ``predict`` and
``export_saved_model`` build the model_fn's graph on the latest checkpoint as Estimator did.

Importing this module does not import TensorFlow.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hookrun.config_schemas.builders import RESERVED_PARAMS
from hookrun.estimator.run_config import RunConfig
from hookrun.runner.graph.model_fn import ModeKeys

#: TensorFlow's Python logger: Estimator's messages went there (``tf.compat.v1.logging``).
logger = logging.getLogger("tensorflow")

#: ``summary.json``'s key for what YAML cannot name.
PYTHON_OBJECTS_KEY = "python_objects"


def _importable_name(obj: Any) -> str | None:
    """``module:qualname`` when importing it gives back ``obj`` itself, else None (``__main__``, lambdas, closures)."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<" in qualname:
        return None
    loaded = sys.modules.get(module)
    if loaded is None:
        try:
            loaded = importlib.import_module(module)
        except Exception:  # noqa: BLE001 - an unimportable module is simply no importable name
            return None
    target: Any = loaded
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return f"{module}:{qualname}" if target is obj else None


def _yaml_plain(value: Any) -> bool:
    """``value`` survives a YAML/JSON round trip unchanged (dicts of str, lists, numbers, text, bools, None)."""
    try:
        return json.loads(json.dumps(value)) == value
    except (TypeError, ValueError):
        return False


def call_with_named(fn: Callable[..., Any], given: Mapping[str, Any], first: Sequence[Any] = ()) -> Any:
    """Call ``fn(*first, **kwargs)`` with those of ``given`` its signature names (Estimator's ``_call_*_fn``)."""
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        parameters = {}
    return fn(*first, **{name: value for name, value in given.items() if name in parameters})


class Estimator:
    """Train, evaluate, predict and export a ``model_fn``; mirrors ``tf.estimator.Estimator`` (TF 1.15).

    Args:
        model_fn: ``model_fn(features, labels, mode, params, config) -> EstimatorSpec`` (it names the
            arguments it takes, as in TensorFlow); ``config`` is this Estimator's :class:`RunConfig`.
        model_dir: the run directory (str or path); default ``config.model_dir``, else a new temporary
            directory (logged, as TensorFlow did).
        config: a :class:`RunConfig` (default ``RunConfig()``).
        params: a dict handed to ``model_fn`` (a deep copy at each call, as TensorFlow did).
        warm_start_from: a checkpoint path or directory (str), or a :class:`WarmStartSettings`; applied
            when ``model_dir`` holds no checkpoint (``graph.warm_start``).

    Raises:
        ValueError: ``model_fn`` is not callable; ``model_dir`` and ``config.model_dir`` differ; ``params``
            is not a dict.
    """

    def __init__(
        self,
        model_fn: Callable[..., Any],
        model_dir: str | os.PathLike[str] | None = None,
        config: RunConfig | None = None,
        params: dict[str, Any] | None = None,
        warm_start_from: Any = None,
    ) -> None:
        if not callable(model_fn):
            raise ValueError(f"model_fn must be callable, not {type(model_fn).__name__}")
        if config is None:
            config = RunConfig()
        elif not isinstance(config, RunConfig):
            raise ValueError(f"config must be a hookrun.estimator.RunConfig, not {type(config).__name__}")
        if model_dir is not None:
            model_dir = os.fspath(model_dir)
            if config.model_dir is not None and os.path.abspath(config.model_dir) != os.path.abspath(model_dir):
                raise ValueError(
                    f"`model_dir` are set both in constructor and `RunConfig`, but with different values. "
                    f"In constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}'. "
                )
        model_dir = model_dir or config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp()
            logger.warning("Using temporary folder as model directory: %s", model_dir)
        self._model_dir = os.path.abspath(model_dir)
        self._config = config.replace(model_dir=self._model_dir)
        if params is not None and not isinstance(params, dict):
            raise ValueError(f"params must be a dict, not {type(params).__name__}")
        self._params = copy.deepcopy(params or {})
        self._model_fn = model_fn
        self._warm_start_from = warm_start_from

    # properties -------------------------------------------------------------------------------------------
    @property
    def model_dir(self) -> str:
        """The run directory (absolute)."""
        return self._model_dir

    @property
    def config(self) -> RunConfig:
        """A copy of the :class:`RunConfig`, with ``model_dir`` set."""
        return copy.deepcopy(self._config)

    @property
    def params(self) -> dict[str, Any]:
        """A deep copy of ``params``."""
        return copy.deepcopy(self._params)

    @property
    def model_fn(self) -> Callable[..., Any]:
        """The ``model_fn``, called as ``model_fn(features, labels, mode, config)`` (``params`` bound)."""
        def public_model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            return self._call_model_fn(features, labels, mode)
        return public_model_fn

    def eval_dir(self, name: str | None = None) -> str:
        """Where :meth:`evaluate` writes its events; mirrors ``tf.estimator.Estimator.eval_dir``.

        Args:
            name: the evaluation's name (None: ``eval``, else ``eval_<name>``).
        """
        return os.path.join(self._model_dir, "eval" if not name else f"eval_{name}")

    # checkpoints ------------------------------------------------------------------------------------------
    def latest_checkpoint(self) -> str | None:
        """The latest checkpoint in ``model_dir`` or None; mirrors ``tf.estimator.Estimator.latest_checkpoint``."""
        tf = _tf()
        return tf.train.latest_checkpoint(self._model_dir)

    def get_variable_names(self) -> list[str]:
        """The latest checkpoint's variable names; mirrors ``tf.estimator.Estimator.get_variable_names``.

        The input pipeline's position that hookrun saves beside the variables
        (:data:`hookrun.runner.data.input_state.STATE_KEY`, no variable, and the window carry under
        :data:`hookrun.runner.graph.fused.CARRY_NAME`) is left out, as Estimator saved none.

        Raises:
            ValueError: ``model_dir`` has no checkpoint.
        """
        from hookrun.runner.data.input_state import STATE_KEY
        from hookrun.runner.graph.fused import CARRY_NAME

        names = _tf().train.list_variables(self._checkpoint_or_raise())
        return [name for name, _ in names if name != STATE_KEY and not name.startswith(CARRY_NAME + "/")]

    def get_variable_value(self, name: str) -> Any:
        """Variable ``name``'s value (numpy) at the latest checkpoint.

        Mirrors ``tf.estimator.Estimator.get_variable_value``.

        Raises:
            ValueError: ``model_dir`` has no checkpoint.
        """
        return _tf().train.load_variable(self._checkpoint_or_raise(), name)

    def _checkpoint_or_raise(self) -> str:
        path = self.latest_checkpoint()
        if path is None:
            raise ValueError(f"Could not find trained model in model_dir: {self._model_dir}.")
        return path

    # calling the user's functions --------------------------------------------------------------------------
    def _call_model_fn(self, features: Any, labels: Any, mode: str) -> Any:
        """``model_fn`` with the arguments it names, as ``Estimator._call_model_fn``.

        Raises:
            ValueError: the input_fn gave labels and the model_fn takes none.
        """
        try:
            names = inspect.signature(self._model_fn).parameters
        except (TypeError, ValueError):
            names = {}
        if "labels" not in names and labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        given = {"labels": labels, "mode": mode, "params": self.params, "config": self.config}
        return call_with_named(self._model_fn, given, (features,))

    def _call_input_fn(self, input_fn: Callable[..., Any], mode: str, input_context: Any = None) -> Any:
        """``input_fn`` with the arguments it names (``params``, ``mode``, ``config``, ``input_context``).

        Mirrors ``Estimator._call_input_fn``; ``input_context`` is the runner's ``tf.distribute.InputContext`` of
        a cluster's training task (None in one process).
        """
        given = {"params": self.params, "mode": mode, "config": self.config, "input_context": input_context}
        return call_with_named(input_fn, given)

    # train ------------------------------------------------------------------------------------------------
    def train(
        self,
        input_fn: Callable[..., Any],
        hooks: Sequence[Any] | None = None,
        steps: int | None = None,
        max_steps: int | None = None,
        saving_listeners: Sequence[Any] | None = None,
    ) -> Estimator:
        """Train the model; mirrors ``tf.estimator.Estimator.train``. Runs :func:`hookrun.runner.train`.

        Args:
            input_fn: returns a ``tf.data.Dataset`` of ``(features, labels)`` or a ``(features, labels)`` tuple.
            hooks: ``SessionRunHook`` instances, run after hookrun's built-in hooks.
            steps: train this many more steps (relative), or until the data ends.
            max_steps: train until ``global_step`` reaches it (absolute); already there: return at once.
            saving_listeners: ``CheckpointSaverListener`` instances called around each checkpoint.

        Returns:
            self.

        Raises:
            ValueError: both ``steps`` and ``max_steps``; a value <= 0; ``saving_listeners`` without a
                checkpoint (``save_checkpoints_steps`` and ``_secs`` both None).
            hookrun.common.errors.TrainingError, SetupError, ConfigError: as ``hookrun train`` (exit codes 1, 2).
        """
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if saving_listeners and not (self._config.save_checkpoints_steps or self._config.save_checkpoints_secs):
            raise ValueError("There should be a CheckpointSaverHook to use saving_listeners. "
                             "Please set one of the RunConfig.save_checkpoints_steps or save_checkpoints_secs.")
        if max_steps is not None:
            step = self._latest_step()
            if step is not None and step >= max_steps:
                logger.info("Skipping training since max_steps has already saved.")
                return self
        from hookrun.runner import live
        from hookrun.runner import train as runner_train

        config, registered, unnamed = self._train_config(input_fn, hooks, steps, max_steps, live=True)
        try:
            with live.saving_listeners(list(saving_listeners or [])):
                try:
                    # Estimator had no config check: the checkpoint must fit the graph (TensorFlow says so if not)
                    runner_train(config, run_dir=self._model_dir, allow_config_change=True)
                finally:
                    if unnamed:
                        _note_python_objects(Path(self._model_dir), unnamed)
        finally:
            for path in registered:
                live.release(path)
        return self

    def _latest_step(self) -> int | None:
        """``global_step`` of the latest checkpoint in ``model_dir`` (None without one)."""
        tf = _tf()
        latest = tf.train.latest_checkpoint(self._model_dir)
        if latest is None:
            return None
        try:
            return int(tf.train.load_variable(latest, "global_step"))
        except (ValueError, tf.errors.NotFoundError):
            return None

    def _train_config(
        self,
        input_fn: Callable[..., Any],
        hooks: Sequence[Any] | None,
        steps: int | None,
        max_steps: int | None,
        live: bool,
    ) -> tuple[dict[str, Any], list[str], list[str]]:
        """The hookrun config (a dict, as its YAML reads) of ``train(input_fn, hooks, steps, max_steps)``.

        Args:
            input_fn: as :meth:`train`.
            hooks: as :meth:`train`.
            steps: as :meth:`train`.
            max_steps: as :meth:`train`.
            live: register what YAML cannot name with :mod:`hookrun.runner.live` (for this process's run);
                False: raise instead (a config to write to a file).

        Returns:
            ``(config, live paths registered, descriptions of the Python objects YAML cannot name)``.

        Raises:
            ValueError: ``live`` is False and the model_fn, input_fn, params or a hook has no YAML form.
        """
        from hookrun.runner import live as live_objects

        registered: list[str] = []
        unnamed: list[str] = []

        def live_path(obj: Any, kind: str, key: str) -> str:
            path = live_objects.register(obj, kind, key)
            registered.append(path)
            return path

        # Named (module:function in config.yaml) when importable; the model_fn only with params YAML can
        # write (hookrun hands graph.params to it), and the input_fn only with a named model_fn (it gets
        # graph.params too). Otherwise a registered wrapper calls the function as Estimator did: the
        # arguments it names among features, labels, mode, params (a deep copy) and config (this RunConfig).
        model_name = _importable_name(self._model_fn)
        input_name = _importable_name(input_fn)
        plain_params = _yaml_plain(self._params) and not any(key in self._params for key in RESERVED_PARAMS)
        if model_name is not None and plain_params:
            builder, params = model_name, self.params
        else:
            if not live:
                what = (f"model_fn {_describe(self._model_fn)} has no importable name (module:function): define it "
                        "at a module's top level, outside __main__" if model_name is None else
                        "params hold values YAML cannot write, or a key hookrun reserves "
                        f"({', '.join(RESERVED_PARAMS)}): give plain values (numbers, text, lists, dicts)")
                raise ValueError(f"{what}, so that YAML can name it")

            def model_fn(features: Any, labels: Any, mode: str) -> Any:
                return self._call_model_fn(features, labels, mode)

            builder, params = live_path(model_fn, "model_fn", _key(self._model_fn)), {}
            unnamed.append(f"model_fn {_describe(self._model_fn)}" if model_name is None else
                           f"params of model_fn {model_name} (values YAML cannot write, or a key hookrun reserves)")
        devices = self._config.train_devices
        replicas = len(devices) if devices else 1
        if devices and self._config.cluster_spec:
            raise ValueError("RunConfig(train_distribute=MirroredStrategy) with a TF_CONFIG cluster: hookrun's towers "
                             "run in one process, not on a cluster; drop train_distribute (each worker trains on one "
                             "device) or TF_CONFIG")
        if input_name is not None and builder == model_name and replicas == 1:
            data_fn = input_name
        else:
            if not live:
                if replicas > 1:
                    raise ValueError(f"RunConfig(train_distribute=MirroredStrategy) on {replicas} devices: the "
                                     "input_fn's batches are per replica, which YAML cannot say: batch "
                                     f"{replicas}x the rows in the input_fn and set `device: {list(devices or [])}` "
                                     "in the config")
                raise ValueError(f"input_fn {_describe(input_fn)} has no importable name (module:function): define "
                                 "it at a module's top level, outside __main__ and without a lambda, so that YAML "
                                 "can name it")

            def train_input_fn(mode: str, input_context: Any = None) -> Any:  # the runner's, on a cluster
                result = self._call_input_fn(input_fn, mode, input_context)
                return global_batches(result, replicas) if replicas > 1 else result

            data_fn = live_path(train_input_fn, "input_fn", _key(input_fn))
            if input_name is None:
                unnamed.append(f"input_fn {_describe(input_fn)}")
            elif replicas > 1:
                unnamed.append(f"input_fn {input_name}, its per-replica batches joined {replicas} at a time "
                               "(train_distribute)")
        run = self._config
        hook_entries: list[dict[str, Any]] = [{"type": "nan_tensor"}]
        if steps is not None:
            hook_entries.insert(0, {"type": "stop_at_step", "num_steps": int(steps)})
        elif max_steps is not None:
            hook_entries.insert(0, {"type": "stop_at_step", "last_step": int(max_steps)})
        if run.save_checkpoints_steps or run.save_checkpoints_secs:
            saver: dict[str, Any] = {"type": "checkpoint_saver"}
            if run.save_checkpoints_steps:
                saver["save_steps"] = int(run.save_checkpoints_steps)
            else:
                saver["save_secs"] = run.save_checkpoints_secs
            if run.keep_checkpoint_max:
                saver["max_to_keep"] = int(run.keep_checkpoint_max)
            hook_entries.append(saver)
        if run.save_summary_steps:
            hook_entries.append({"type": "summary_saver", "save_steps": int(run.save_summary_steps)})
        if run.log_step_count_steps:
            hook_entries.append({"type": "step_counter", "every_n_steps": int(run.log_step_count_steps)})
        if live and sys.stdout.isatty():  # as `hookrun train` at a terminal
            hook_entries.append({"type": "progress_bar"})
            hook_entries.append({"type": "history_saver", "every_n_step": int(run.log_step_count_steps or 100)})
        for index, hook in enumerate(hooks or []):
            path = live_path(_HookFactory(hook), "hook", f"{index}_{type(hook).__name__}")
            unnamed.append(f"hooks[{index}] {type(hook).__name__} (an instance)")
            hook_entries.append({"type": "custom", "class": path, "name": type(hook).__name__})
        # Estimator called the input_fn afresh at each train(): no input position in the checkpoint
        data: dict[str, Any] = {"input_fn": data_fn, "save_input_state": False}
        if run.tf_random_seed is not None:
            data["seed"] = int(run.tf_random_seed)
        session: dict[str, Any] = {}
        proto = run.session_config
        if proto is not None:
            for key in ("intra_op_parallelism_threads", "inter_op_parallelism_threads"):
                if getattr(proto, key, 0):
                    session[key] = int(getattr(proto, key))
            if getattr(proto, "allow_soft_placement", False):
                session["allow_soft_placement"] = True
        graph: dict[str, Any] = {"builder": builder, "style": "model_fn", "params": params}
        warm = self._warm_start_from
        if warm is not None:
            graph["warm_start"] = warm.to_config() if hasattr(warm, "to_config") else {"from": os.fspath(warm)}
        name = re.sub(r"[^A-Za-z0-9_.-]", "-", Path(self._model_dir).name) or "estimator"
        config = {"name": name, "graph": graph, "data": data, "session": session, "hooks": hook_entries}
        if devices:
            config["device"] = list(devices)  # the strategy's devices: hookrun's towers (docs/devices.md)
        return config, registered, unnamed

    def train_config(
        self,
        input_fn: Callable[..., Any],
        hooks: Sequence[Any] | None = None,
        steps: int | None = None,
        max_steps: int | None = None,
    ) -> dict[str, Any]:
        """The hookrun YAML config (as a dict) equivalent to ``train(input_fn, hooks, steps, max_steps)``.

        hookrun's own (no TensorFlow 1.15 counterpart): the way from Python to ``hookrun train CONFIG``.
        ``session.run_dir`` is this Estimator's ``model_dir``.

        Raises:
            ValueError: the model_fn or input_fn has no importable name (``__main__``, a lambda), ``params``
                hold values YAML cannot write, or ``hooks`` are given (hook instances have no YAML form: name
                their class in a ``custom`` hook).
        """
        if hooks:
            raise ValueError("hook instances have no YAML form: add `- type: custom` with `class: module:Class`")
        config, _, _ = self._train_config(input_fn, None, steps, max_steps, live=False)
        config["session"]["run_dir"] = self._model_dir
        return config

    def write_train_config(
        self,
        path: str | os.PathLike[str],
        input_fn: Callable[..., Any],
        steps: int | None = None,
        max_steps: int | None = None,
    ) -> Path:
        """Write :meth:`train_config` as YAML to ``path`` (for ``hookrun train PATH``); returns the path.

        Raises:
            ValueError: as :meth:`train_config`.
            OSError: ``path`` cannot be written.
        """
        import yaml

        target = Path(path)
        text = yaml.safe_dump(self.train_config(input_fn, steps=steps, max_steps=max_steps), sort_keys=False)
        target.write_text("# written by hookrun.estimator: Estimator.write_train_config\n" + text, encoding="utf-8")
        return target

    # evaluate ---------------------------------------------------------------------------------------------
    def evaluate(
        self,
        input_fn: Callable[..., Any],
        steps: int | None = None,
        hooks: Sequence[Any] | None = None,
        checkpoint_path: str | None = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        """Evaluate the latest checkpoint; mirrors ``tf.estimator.Estimator.evaluate`` (TF 1.15).

        Runs the model_fn in ``eval`` mode over ``input_fn``'s data (``steps`` batches, or to its end), writes
        the metrics as scalars to ``model_dir/eval`` (``eval_<name>`` with ``name``) at the checkpoint's
        ``global_step``, and returns them.

        Args:
            input_fn: returns a dataset of ``(features, labels)`` (finite unless ``steps``) or a tuple.
            steps: batches to evaluate (None: until the data ends).
            hooks: ``SessionRunHook`` instances around each batch.
            checkpoint_path: a checkpoint prefix or directory (default: the latest in ``model_dir``; none:
                the initial values, as TensorFlow did).
            name: the evaluation's name (its event directory ``eval_<name>``).

        Returns:
            ``{metric: value, ..., "loss": mean loss, "global_step": int}``.

        Raises:
            ValueError: ``steps`` <= 0; the model_fn gives no ``loss`` in eval mode.
        """
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        from hookrun.estimator.graph import evaluate_once

        return evaluate_once(self, input_fn, steps, list(hooks or []), self._resolve_checkpoint(checkpoint_path), name)

    def _resolve_checkpoint(self, checkpoint_path: str | None) -> str | None:
        tf = _tf()
        if checkpoint_path is None:
            found = tf.train.latest_checkpoint(self._model_dir)
            if found is None:
                logger.info("Could not find trained model in model_dir: %s, running initialization.", self._model_dir)
            return found
        if os.path.isdir(checkpoint_path):
            found = tf.train.latest_checkpoint(checkpoint_path)
            if found is None:
                raise ValueError(f"Couldn't find trained model at {checkpoint_path}.")
            return found
        return checkpoint_path

    # predict ----------------------------------------------------------------------------------------------
    def predict(
        self,
        input_fn: Callable[..., Any],
        predict_keys: str | Sequence[str] | None = None,
        hooks: Sequence[Any] | None = None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ) -> Iterator[Any]:
        """Yield predictions; mirrors ``tf.estimator.Estimator.predict`` (TF 1.15). A generator.

        Args:
            input_fn: returns features (a tensor or dict), a ``(features, labels)`` tuple, or a dataset of
                either; read to its end.
            predict_keys: the prediction keys to keep (str or list; None: all).
            hooks: ``SessionRunHook`` instances.
            checkpoint_path: as :meth:`evaluate`.
            yield_single_examples: yield one example at a time (each value's first dimension unbatched);
                False: one dict per batch.

        Yields:
            A dict key -> numpy value (or the value itself when ``predictions`` is one tensor).

        Raises:
            ValueError: a ``predict_keys`` entry is not a prediction key; with ``yield_single_examples`` a
                prediction whose first dimension differs from the others'.
        """
        from hookrun.estimator.graph import predict_batches

        checkpoint = self._resolve_checkpoint(checkpoint_path)
        for batch, single in predict_batches(self, input_fn, predict_keys, list(hooks or []), checkpoint):
            if not yield_single_examples:
                yield batch
                continue
            values = batch if isinstance(batch, dict) else {None: batch}
            sizes = {key: value.shape[0] for key, value in values.items()}
            if len(set(sizes.values())) != 1:
                raise ValueError(
                    f"Batch length of predictions should be same. {sizes} has different batch length."
                )
            for i in range(next(iter(sizes.values()))):
                yield values[None][i] if single else {key: value[i] for key, value in values.items()}

    # export -----------------------------------------------------------------------------------------------
    def export_saved_model(
        self,
        export_dir_base: str | os.PathLike[str],
        serving_input_receiver_fn: Callable[[], Any],
        assets_extra: Mapping[str, str] | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
        experimental_mode: str = ModeKeys.PREDICT,
    ) -> bytes:
        """Export a SavedModel for serving; mirrors ``tf.estimator.Estimator.export_saved_model`` (TF 1.15).

        The model_fn in ``infer`` mode on the receiver's features; its ``export_outputs`` become the
        signatures (``serving_default`` required: a single one is renamed; none: a ``PredictOutput`` of the
        predictions), restored from the checkpoint, written under ``export_dir_base/<timestamp>``.

        Args:
            export_dir_base: the directory holding the timestamped exports.
            serving_input_receiver_fn: returns a ``ServingInputReceiver`` (``hookrun.estimator.export``).
            assets_extra: destination (relative to ``assets.extra``) -> source file.
            as_text: write ``saved_model.pbtxt``.
            checkpoint_path: as :meth:`evaluate`; a model without a checkpoint cannot be exported.
            experimental_mode: only ``infer`` (``ModeKeys.PREDICT``).

        Returns:
            The export directory, as bytes (TensorFlow returned bytes).

        Raises:
            ValueError: no checkpoint; ``experimental_mode`` other than ``infer``; no ``serving_default``
                among several ``export_outputs``.
        """
        if experimental_mode != ModeKeys.PREDICT:
            raise ValueError("hookrun.estimator exports the infer (PREDICT) mode only")
        checkpoint = self._resolve_checkpoint(checkpoint_path)
        if checkpoint is None:
            raise ValueError(f"Couldn't find trained model at {self._model_dir}.")
        from hookrun.estimator.graph import export_saved_model

        return export_saved_model(self, os.fspath(export_dir_base), serving_input_receiver_fn, assets_extra, as_text,
                                  checkpoint)

    def export_savedmodel(
        self,
        export_dir_base: str | os.PathLike[str],
        serving_input_receiver_fn: Callable[[], Any],
        assets_extra: Mapping[str, str] | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
        strip_default_attrs: bool = False,
    ) -> bytes:
        """The old name of :meth:`export_saved_model`; mirrors ``tf.estimator.Estimator.export_savedmodel``."""
        return self.export_saved_model(export_dir_base, serving_input_receiver_fn, assets_extra, as_text,
                                       checkpoint_path)


class _HookFactory:
    """A hook instance as a ``custom`` hook's ``class``: calling it gives the instance."""

    def __init__(self, hook: Any) -> None:
        self.hook = hook

    def __call__(self) -> Any:
        return self.hook


def _key(obj: Any) -> str:
    """A stable key of a function for :func:`hookrun.runner.live.register`: its module and qualified name."""
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


def _describe(obj: Any) -> str:
    """``__main__:model_fn`` or ``<lambda> (module.py:12)``: a function's name for a note."""
    code = getattr(obj, "__code__", None)
    where = f" ({Path(code.co_filename).name}:{code.co_firstlineno})" if code is not None else ""
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', type(obj).__name__)}{where}"


def _note_python_objects(run_dir: Path, unnamed: list[str]) -> None:
    """Add to ``summary.json`` that the run came from Python objects YAML cannot name (kept on failure too)."""
    from hookrun.common.files import atomic_write_text

    summary_path = run_dir / "summary.json"
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    summary[PYTHON_OBJECTS_KEY] = {
        "note": "trained by hookrun.estimator from Python objects that YAML cannot name; config.yaml names them "
                "as hookrun.runner.live:..., which only that process could import: `hookrun train` cannot re-run "
                "it, and `hookrun evaluate/predict/export` need an importable model_fn (graph.builder) and take "
                "the data as --input-fn / --serving-input-fn module:function",
        "objects": unnamed,
    }
    atomic_write_text(summary_path, json.dumps(summary, indent=2) + "\n")


def _tf() -> Any:
    """TensorFlow, imported quietly as the runner does."""
    from hookrun.runner.tf_env import import_tensorflow

    return import_tensorflow(False)


def global_batches(dataset: Any, replicas: int) -> Any:
    """``replicas`` successive batches of ``dataset`` concatenated into one: a step's global batch.

    Under ``RunConfig(train_distribute=MirroredStrategy(devices))`` Estimator called the input_fn once and
    gave its successive batches to the replicas in turn (``make_input_fn_iterator``: the input_fn's batch
    size is per replica). hookrun's towers split one global batch along its first dimension into K equal
    parts (``runner/graph/towers.py``), so the concatenation of K batches gives each tower the batch its
    replica had. A last group of fewer than K batches is dropped (a replica without data ended the step).

    Args:
        dataset: the input_fn's ``tf.data.Dataset`` of batches (features, or ``(features, labels)``).
        replicas: K, the strategy's device count (> 1).

    Returns:
        A ``tf.data.Dataset`` of the same structure, each element K batches' rows.

    Raises:
        ValueError: the input_fn returned no ``tf.data.Dataset`` (Estimator required one under a strategy).
    """
    tf = _tf()
    if not isinstance(dataset, tf.data.Dataset):
        raise ValueError("under RunConfig(train_distribute=MirroredStrategy) the input_fn must return a "
                         f"tf.data.Dataset, not {type(dataset).__name__}, as Estimator required")

    def concat(*window: Any) -> Any:
        structure = window if len(window) > 1 else window[0]
        return tf.data.Dataset.zip(structure).unbatch().batch(2**31 - 1)  # one element: all K batches' rows

    return dataset.window(replicas, drop_remainder=True).flat_map(concat)


__all__ = ["Estimator", "call_with_named", "global_batches"]
