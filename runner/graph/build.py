"""Assemble the graph: input pipelines, the builder's model (for training and evaluation), the train op."""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hookrun.common.errors import PlacedError, SetupError
from hookrun.config_schemas.imports import flags_hint
from hookrun.config_schemas.run_config import RunConfigBase as RunConfig
from hookrun.hooks.context import HOOKRUN_SCOPE
from hookrun.hooks.tf_internals import global_step_read, graph_element
from hookrun.runner.data.input_fn import InputFn, RunInfo, batch_rows, make_pipeline, split_element
from hookrun.runner.data.reader import TrainingData, make_dataset, make_eval_dataset
from hookrun.runner.data.streaming import EvalInput, StreamInput, make_iterator, named_feature_columns
from hookrun.runner.graph.builders.registry import get_builder
from hookrun.runner.graph.builders.spec import GraphSpec
from hookrun.runner.graph.device import DevicePlan
from hookrun.runner.graph.fused import (
    WINDOW_BYTES,
    FirstCall,
    build_fused_train,
    endless_input,
    input_placeholders,
    window_bytes,
)
from hookrun.runner.graph.keras_check import Keras3LayerError, refuse_keras3_layers
from hookrun.runner.graph.model_fn import SpecError, call_model_fn, check_spec, is_model_fn
from hookrun.runner.graph.optimizers import learning_rate as make_learning_rate
from hookrun.runner.graph.optimizers import loss_scaled, make_optimizer, make_train_op
from hookrun.runner.graph.run_config import builder_params, make_run_info, split_params
from hookrun.runner.graph.seed import seed_everything
from hookrun.runner.graph.towers import divisible_batches

#: Name scope of the evaluation pipeline, model copy and metrics.
EVAL_SCOPE = "evaluation"


@dataclass
class EvalGraph:
    """The evaluation part of the graph: the builder's model on the validation set, reading the training weights.

    Running ``reset_op`` then ``update_op`` ``num_batches`` times then fetching ``values`` evaluates
    the current weights on every validation row once (as ``tf.estimator``'s evaluation loop does).
    Built in a graph of its own (:func:`build_evaluation`, as Estimator built it) and, for training,
    grafted into the training graph (:func:`graft_evaluation`): there they are the ops
    ``evaluation/reset`` and ``evaluation/update`` and the tensors ``evaluation/outputs/<name>:0`` for
    ``features``, ``labels``, ``predictions``, ``val_loss`` and each ``val_<metric>``.

    Attributes:
        reset_op: initializes the validation iterator and zeroes the streaming metrics' local variables.
        update_op: consumes one validation batch and updates every streaming metric.
        num_batches: batches in the validation set (count): ``ceil(rows / batch_size)``; None for a
            ``data.eval_input_fn`` (each pass runs until its dataset ends).
        num_rows: validation rows (count); None for a ``data.eval_input_fn``.
        values: ``val_loss`` and ``val_<metric>`` -> scalar tensors over the batches consumed since the reset
            (``val_loss`` in training units; built-in metrics in the label's units).
        features: the validation batch's features ``float32 [batch, n_features]`` (advances the iterator).
        labels: the validation batch's labels ``float32 [batch, 1]`` (training units).
        predictions: the builder's ``predictions`` on that batch (label units for the built-ins), or None.
        spec: what the builder returned in ``eval`` mode.
        evaluation_hooks: a model_fn's ``EstimatorSpec.evaluation_hooks`` (its ``eval`` call), run around
            every pass of :meth:`run` (see :mod:`hookrun.runner.session.eval_hooks`).
        hooks_begun: their ``begin()`` has run (it runs once, before the graph is finalized).
        source_graph: the graph the model_fn was called in (``eval`` mode); its tensors are what the
            evaluation hooks hold.
        grafted_into: the training graph the ops above belong to once grafted, else None (``hookrun
            evaluate`` runs them in ``source_graph``).
    """

    reset_op: Any
    update_op: Any
    num_batches: int | None
    num_rows: int | None
    values: dict[str, Any]
    features: Any
    labels: Any
    predictions: Any
    spec: GraphSpec
    evaluation_hooks: list[Any] = field(default_factory=list)
    hooks_begun: bool = False
    source_graph: Any = None
    grafted_into: Any = None

    def begin_hooks(self) -> None:
        """Call every evaluation hook's ``begin()``, once; call it before the graph is finalized."""
        from hookrun.runner.session.eval_hooks import begin_hooks

        begin_hooks(self)

    def run(self, session: Any) -> dict[str, float]:
        """One evaluation over every row: ``reset_op``, ``update_op`` per batch, the values; hooks around it.

        Args:
            session: a ``tf.compat.v1.Session`` on this graph (the raw one: no training hook sees these runs).

        Returns:
            ``{"val_loss": ..., "val_<metric>": ...}``.
        """
        from hookrun.runner.session.eval_hooks import evaluation_pass

        return evaluation_pass(session, self)


@dataclass
class BuiltGraph:
    """A built (not yet finalized) training graph.

    Attributes:
        graph: the ``tf.Graph``.
        global_step: the ``global_step`` variable.
        train_op: one training step.
        spec: what the builder returned (``train`` mode).
        named: hook-visible names -> tensors (``loss``, ``global_step``, ``predictions`` when given,
            each metric, and ``learning_rate`` when the runner built the train op).
        evaluation: the evaluation part, or None (no validation data or no ``evaluation`` hook).
        window: with ``session.steps_per_run`` > 1, the fused loop's tensors for the hooks
            (:class:`hookrun.hooks.window.RunWindow`); ``train_op`` is then its ``steps`` tensor and
            ``named`` maps each name to its last-step value. None with one step per call.
        summaries: the summary ops the builder's ``train`` call added to the ``SUMMARIES`` collection
            (``tf.compat.v1.summary.scalar`` and the like in a model_fn), written by ``summary_saver``; empty
            under ``session.steps_per_run`` > 1.
    """

    graph: Any
    global_step: Any
    train_op: Any
    spec: GraphSpec
    named: dict[str, Any]
    evaluation: EvalGraph | None = field(default=None)
    window: Any = None
    summaries: list[Any] = field(default_factory=list)




def features_form(builder: Any, configured: str | None, model_fn: bool = False) -> str:
    """``dense`` or ``named``: ``graph.features`` when set, else the builder's ``hookrun_features`` attribute.

    A builder declares the form it takes with ``fn.hookrun_features = "named"`` (or ``"dense"``); without
    it (and without ``graph.features``) a model_fn (the Estimator form) gets named features, a dict column
    -> tensor as an Estimator ``input_fn`` gave it, and a plain ``fn(features, labels, params)`` builder the
    dense matrix, as every builder before named features did.

    Args:
        builder: the builder function.
        configured: ``graph.features`` (``dense``, ``named`` or None).
        model_fn: the builder is called in the model_fn form (:func:`~hookrun.runner.graph.model_fn.is_model_fn`).

    Raises:
        PlacedError: ``hookrun_features`` is neither ``dense`` nor ``named``.
    """
    if configured is not None:
        return configured
    declared = getattr(builder, "hookrun_features", "named" if model_fn else "dense")
    if declared not in ("dense", "named"):
        raise PlacedError(
            "graph.builder", f"hookrun_features is {declared!r}; set it to 'dense' or 'named' (or set graph.features)"
        )
    return declared


def declares_features(builder: Any, configured: str | None) -> bool:
    """Whether ``graph.features`` or the builder's ``hookrun_features`` sets the form (not the model_fn default)."""
    return configured is not None or hasattr(builder, "hookrun_features")


def _call_builder(
    tf: Any,
    builder: Any,
    name: str,
    features: Any,
    labels: Any,
    params: dict[str, Any],
    model_fn: bool = False,
    config: Any = None,
    input_fn: InputFn | None = None,
) -> GraphSpec:
    """Call the builder and check it returned a scalar ``loss`` (in ``train`` and ``eval`` mode; ``infer`` needs none).

    In the model_fn form (:mod:`hookrun.runner.graph.model_fn`) the builder gets ``mode`` as an argument and
    ``params`` without hookrun's keys (``mode``, ``label_scale``, ``feature_columns``: ``graph.params`` as
    written); its ``EstimatorSpec`` (or dict) is checked field by field. ``config`` is the run's
    :class:`~hookrun.runner.graph.run_config.RunInfo` (Estimator's ``RunConfig``; defaults when None), given to a
    model_fn naming ``config`` with hookrun's keys of ``params`` in ``config.hookrun``.
    ``input_fn``: the features came from it; a model_fn reading a feature it does not give is an error at
    ``data.input_fn`` naming both functions and the key, and a built-in builder given no labels (an input_fn of
    features alone) is one naming the fix.
    """
    if labels is None and ":" not in name and input_fn is not None and params["mode"] in ("train", "eval"):
        # a built-in builder (its loss compares with the labels); a user's model_fn or builder gets labels=None
        raise input_fn.error(
            f"gives features alone (no labels), but graph.builder {name} needs labels ({params['mode']} mode); "
            "return (features, labels) pairs, or use a model_fn that takes labels=None"
        )
    try:
        with refuse_keras3_layers(tf, name, params["mode"]):
            if model_fn:
                mode = params["mode"]
                run_info = (config if config is not None else RunInfo()).with_hookrun(mode, params)
                checked = check_spec(
                    tf, call_model_fn(builder, features, labels, mode, split_params(params), config=run_info),
                    name, mode,
                )
                spec = GraphSpec(
                    loss=checked.loss,
                    train_op=checked.train_op,
                    predictions=checked.predictions,
                    eval_metrics=checked.eval_metric_ops,
                    training_hooks=checked.training_hooks,
                    prediction_dict=checked.prediction_dict,
                    training_chief_hooks=checked.training_chief_hooks,
                    evaluation_hooks=checked.evaluation_hooks,
                    scaffold=checked.scaffold,
                    export_outputs=checked.export_outputs,
                    prediction_hooks=checked.prediction_hooks,
                )
            else:
                spec = GraphSpec.coerce(builder(features, labels, params), name)
    except SetupError:
        raise
    except (SpecError, Keras3LayerError) as err:
        raise PlacedError("graph.builder", str(err)) from err
    except Exception as err:
        missing = _missing_feature(err, features) if input_fn is not None else None
        if missing is not None and input_fn is not None:
            given = ", ".join(sorted(str(key) for key in features)) or "none"
            raise input_fn.error(
                f"gives the features {given}, but graph.builder {name} reads features[{missing!r}] "
                f"({params['mode']} mode); return it from the input_fn or read one it gives"
            ) from err
        slot = _optimizer_variable(err) if params["mode"] != "train" else None
        if slot is not None:  # not "does not exist": build_evaluation would blame the weights
            raise PlacedError(
                "graph.builder",
                f"{name} builds an optimizer in {params['mode']} mode (its variable {slot} is made again by the "
                "evaluation's call, which reuses the training variables); build the optimizer and its minimize() "
                "only when mode == ModeKeys.TRAIN (an `if mode != ModeKeys.PREDICT:` around the train and eval "
                "branches builds it in eval mode too)",
            ) from err
        twice = _created_twice(err)
        if twice is not None:
            raise PlacedError(
                "graph.builder",
                f"{name} ({params['mode']} mode) creates the variable {twice} twice in one call: two layers or "
                "get_variable calls with one name; give each layer its own name (tf.compat.v1.layers.dense(..., "
                "name='hidden_2')), or share it on purpose under tf.compat.v1.variable_scope(scope, "
                "reuse=tf.compat.v1.AUTO_REUSE)",
            ) from err
        reason = f"{name} failed ({params['mode']} mode): {type(err).__name__}: {err}{flags_hint(err)}"
        raise PlacedError("graph.builder", reason) from err
    if params["mode"] == "infer":  # the loss is not used (a model_fn may return none)
        return spec
    if spec.loss is None or getattr(spec.loss, "shape", None) is None or spec.loss.shape.rank != 0:
        raise PlacedError("graph.builder", f"{name} must return a scalar `loss` tensor")
    return spec


#: ``tf.compat.v1.feature_column``'s error for a key the features dict lacks.
_NOT_IN_FEATURES = re.compile(r"Feature (\S+) is not in features dictionary")


def _missing_feature(err: BaseException, features: Any) -> str | None:
    """The feature key a model_fn read that the features dict lacks (``KeyError`` or feature_column's), else None."""
    if not isinstance(features, dict):
        return None
    if isinstance(err, KeyError) and err.args and isinstance(err.args[0], str) and err.args[0] not in features:
        return err.args[0]
    if isinstance(err, ValueError):
        match = _NOT_IN_FEATURES.search(str(err))
        if match is not None:
            key = match.group(1).strip("'\".,")
            if key and key not in features:
                return key
    return None


#: ``tf.compat.v1.get_variable``'s error for a name taken in the scope (``Variable dense/kernel already exists, ...``).
_ALREADY_EXISTS = re.compile(r"^Variable (\S+) already exists, disallowed")


#: ``get_variable``'s error under ``reuse=True`` for a name not made in the training call.
_DOES_NOT_EXIST = re.compile(r"^Variable (\S+?) does not exist")
#: Variables of the ``tf.compat.v1.train`` optimizers: slots (``w/Adam``, ``w/Momentum_1``) and Adam's powers.
_OPTIMIZER_VARIABLE = re.compile(
    r"(^|/)(beta1_power|beta2_power)(_\d+)?(/|$)|/(Adam|Momentum|Adagrad|AdagradDA|RMSProp|Ftrl|Adadelta|"
    r"ProximalAdagrad|ProximalGradientDescent)(_\d+)?(/|$)"
)


def _optimizer_variable(err: BaseException) -> str | None:
    """The variable's name when ``err`` is ``get_variable``'s "does not exist" error for an optimizer's variable."""
    if not isinstance(err, ValueError):
        return None
    match = _DOES_NOT_EXIST.match(str(err))
    if match is None or not _OPTIMIZER_VARIABLE.search(match.group(1)):
        return None
    return match.group(1).rstrip("/")


def _created_twice(err: BaseException) -> str | None:
    """The variable name when ``err`` is ``get_variable``'s "already exists, disallowed" error, else None."""
    if not isinstance(err, ValueError):
        return None
    match = _ALREADY_EXISTS.match(str(err))
    return match.group(1) if match else None


def build_graph(
    tf: Any,
    config: RunConfig,
    data: TrainingData | StreamInput | InputFn,
    base_dir: Path,
    plan: DevicePlan,
    initial_step: int = 0,
    validation: TrainingData | EvalInput | InputFn | None = None,
    label_scale: float = 1.0,
    device_function: Callable[[Any], str] | None = None,
    wrap_optimizer: Callable[[Any], Any] | None = None,
    carry: Collection[str] | None = None,
    run_dir: Path | None = None,
    run_info: RunInfo | None = None,
) -> BuiltGraph:
    """Build the training graph, and the evaluation graph when ``validation`` is given, in a fresh ``tf.Graph``.

    The input pipelines sit on the CPU; the builder's ops and the optimizer
    go on ``plan.device``. ``data.seed`` seeds Python's ``random``, NumPy and the graph-level seed
    (:func:`~hookrun.runner.graph.seed.seed_everything`) before the builder is called. The builder
    is called with ``params`` = ``graph.params`` plus ``mode="train"`` and
    ``label_scale``; with ``validation``, :func:`build_evaluation` calls it again.

    Args:
        tf: the ``tensorflow`` module.
        config: the run config.
        data: the training input: files streamed through ``tf.data`` (:class:`StreamInput`), arrays, or the
            user's ``data.input_fn`` (:class:`~hookrun.runner.data.input_fn.InputFn`): called in ``train`` mode
            with ``graph.params`` as written; its features and labels reach the builder untouched, and a
            resumed run reads its dataset from the start (as Estimator did: ``initial_step`` skips nothing).
        base_dir: the config's directory (custom builders import from there first).
        plan: the device plan.
        initial_step: restored ``global_step``; the pipeline skips that many batches.
        validation: the validation input (:class:`EvalInput` or arrays), to build the evaluation part for an
            ``evaluation`` hook.
        label_scale: ``data.label_scale`` (1.0 without), handed to the builder.
        device_function: on a cluster, the placement applied around the whole graph
            (``replica_device_setter``: variables on the parameter servers, the rest on this worker).
        wrap_optimizer: wraps the optimizer before ``minimize`` (``SyncReplicasOptimizer``).
        carry: under ``session.steps_per_run`` > 1, the named tensors the hooks read (the loop carries
            those and ``loss``); None carries every named tensor and ``global_step`` as each window's last
            step reads it (``RunWindow.step_global_step``, for custom hooks).
        run_dir: the run directory, for ``${run_dir}`` in ``graph.params`` (:func:`builder_params`).
        run_info: the run's ``config`` for a model_fn or input_fn naming it (Estimator's ``RunConfig``); None:
            :func:`~hookrun.runner.graph.run_config.make_run_info` of ``config`` and ``run_dir`` (no cluster,
            no session config).

    Returns:
        The built graph (callers may add ops, e.g. summaries, before the session finalizes it).

    Raises:
        SetupError: the builder does not import, fails, returns no scalar ``loss``, or creates new
            variables when called for evaluation, or returns its own ``train_op`` with ``wrap_optimizer``.
        PlacedError: at ``session.mixed_precision``: the builder returns its own ``train_op`` (its optimizer
            cannot be wrapped for loss scaling).
    """
    graph = tf.Graph()
    placement = graph.device(device_function) if device_function is not None else contextlib.nullcontext()
    with graph.as_default(), placement:
        seed_everything(tf, config.data.seed)  # Python's random, NumPy and the graph-level seed
        global_step = tf.compat.v1.train.get_or_create_global_step()
        builder_name = config.graph.builder
        params = builder_params(config, base_dir, run_dir)
        builder = get_builder(builder_name, base_dir, params)
        model_fn = is_model_fn(builder, config.graph.style)
        from_input_fn = isinstance(data, InputFn)
        named_features = not from_input_fn and features_form(builder, config.graph.features, model_fn) == "named"
        if run_info is None:
            run_info = make_run_info(config, run_dir, tf=tf)
        run_info = run_info.with_label_classes(getattr(data, "state", None) if not from_input_fn else None)
        if not from_input_fn:  # (a model_fn finds it in config.hookrun; its params are as written)
            params["label_scale"] = float(label_scale)
        user_fn = {"config": run_info, "input_fn": data if from_input_fn else None}
        steps_per_run = int(getattr(config.session, "steps_per_run", 1))
        if steps_per_run > 1 and (device_function is not None or wrap_optimizer is not None):
            raise SetupError("session.steps_per_run > 1 does not run on a cluster; set session.steps_per_run: 1")
        mixed_precision = bool(getattr(config.session, "mixed_precision", False))
        train_wrap = wrap_optimizer
        if mixed_precision:  # loss scaling innermost: SyncReplicasOptimizer aggregates the unscaled gradients

            def train_wrap(optimizer: Any) -> Any:
                scaled = loss_scaled(tf, optimizer)
                return scaled if wrap_optimizer is None else wrap_optimizer(scaled)

        with tf.device("/device:CPU:0"):
            if isinstance(data, InputFn):  # the user's pipeline, as Estimator called it (its own names)
                result = data.call(params, "train", run_info.with_hookrun("train", params))
                pipeline = make_pipeline(tf, data, result, "train")
                dataset, iterator = pipeline.dataset, pipeline.iterator
                if steps_per_run > 1 and iterator is None:
                    raise data.error(
                        "returned tensors, not a tf.data.Dataset; session.steps_per_run > 1 pulls its batches "
                        "from a dataset's iterator: return the dataset, or set session.steps_per_run: 1"
                    )
                batch = (pipeline.features, pipeline.labels) if steps_per_run == 1 else None
            else:
                # The input pipeline's ops under hookrun/input (no variables): TensorBoard shows the model alone
                with tf.compat.v1.name_scope(INPUT_SCOPE):
                    if isinstance(data, TrainingData):  # arrays in memory (tests, benchmarks)
                        if named_features and not declares_features(builder, config.graph.features):
                            named_features = False  # a model_fn's default: arrays have only the dense matrix
                        if named_features:
                            raise PlacedError(
                                "graph.features", "named features need data files (streamed through tf.data)"
                            )
                        dataset = make_dataset(tf, data, config.data, skip_steps=initial_step)
                        dataset = divisible_batches(tf, dataset, plan)
                        iterator = tf.compat.v1.data.make_one_shot_iterator(dataset)
                    else:  # files streamed through tf.data (hookrun.runner.data.streaming)
                        dataset = divisible_batches(
                            tf, data.train_dataset(tf, skip_steps=initial_step, named=named_features), plan
                        )
                        iterator = make_iterator(tf, dataset)
                    batch = iterator.get_next() if steps_per_run == 1 else None
            if batch is not None:
                features, labels = batch
            else:  # the builder's first call only creates the variables: never run, never fed
                features, labels = split_element(input_placeholders(tf, iterator.element_spec))
            if from_input_fn:
                pass  # untouched: the builder gets exactly the input_fn's tensors
            elif named_features:
                params["feature_columns"] = named_feature_columns(data.state)
            else:
                features = tf.identity(features, name="features")
            if not from_input_fn:
                labels = tf.identity(labels, name="labels")
        learning_rate = None
        optimizer = None
        rate_now: dict[str, Any] = {}
        summaries_key = tf.compat.v1.GraphKeys.SUMMARIES
        summaries_before = len(tf.compat.v1.get_collection(summaries_key))
        # steps_per_run > 1: the loop calls the builder again; it finds the names and variables of this call
        first_call = FirstCall(tf) if steps_per_run > 1 else None
        with tf.device(plan.device), first_call.record() if first_call is not None else contextlib.nullcontext():
            if plan.towers:  # K towers, one averaged update (hookrun.runner.graph.towers)
                spec, learning_rate, optimizer = _tower_train(
                    tf, plan, features, labels, lambda f, y: _call_builder(
                        tf, builder, builder_name, f, y, {**params, "mode": "train"}, model_fn=model_fn, **user_fn
                    ), config.graph.optimizer, global_step, rate_now, steps_per_run > 1,
                    [] if steps_per_run > 1 else [global_step_read(graph), graph_element(global_step)],
                    wrap=train_wrap, local_average=device_function is not None,
                )
            else:
                spec = _call_builder(
                    tf, builder, builder_name, features, labels, {**params, "mode": "train"}, model_fn=model_fn,
                    **user_fn,
                )
        with tf.device(plan.device):
            if plan.towers and learning_rate is not None:
                learning_rate = tf.identity(learning_rate, name="learning_rate")
            train_op = spec.train_op
            if train_op is None and steps_per_run > 1:
                # One optimizer object for the first call and every step of the loop: its slots are made
                # once, here. Its learning rate is the one of the step being built (read inside the loop).
                rate_now["rate"] = make_learning_rate(tf, config.graph.optimizer, global_step)
                optimizer = make_optimizer(tf, config.graph.optimizer, lambda: rate_now["rate"])
                if mixed_precision:
                    optimizer = loss_scaled(tf, optimizer)
                with tf.control_dependencies(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)):
                    train_op = optimizer.minimize(spec.loss, global_step=global_step)
                learning_rate = tf.identity(tf.convert_to_tensor(rate_now["rate"], tf.float32), name="learning_rate")
            elif train_op is None:
                # Hooks fetch global_step beside the train op: the variable (its snapshot read) or TensorFlow's
                # cached read tensor (StepCounterHook, ProfilerHook). Nothing ordered those reads against the
                # step's increment, so they saw the step before or after it at the executor's whim. Both reads
                # now come first: every hook sees the value before its step's update, as under steps_per_run > 1
                # (docs/engine.md). Made after the builder, so its ops' seeds stay the same.
                with tf.control_dependencies([global_step_read(graph), graph_element(global_step)]):
                    train_op, learning_rate = make_train_op(
                        tf, config.graph.optimizer, spec.loss, global_step, wrap_optimizer=train_wrap
                    )
            elif plan.towers and optimizer is not None:
                pass  # the towers' one update, by hookrun's optimizer (wrapped as train_wrap says)
            elif mixed_precision:
                raise PlacedError(
                    "session.mixed_precision",
                    f"graph.builder {builder_name} returns its own train_op, so hookrun cannot wrap its optimizer "
                    "for loss scaling; return no train_op (hookrun builds it from graph.optimizer), or wrap your "
                    "optimizer in tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer and set "
                    "session.mixed_precision: false",
                )
            elif wrap_optimizer is not None:
                raise SetupError(
                    f"cluster.sync_replicas: graph.builder {builder_name} returns its own train_op, so its optimizer "
                    "cannot be wrapped in SyncReplicasOptimizer; return no train_op (hookrun builds it from "
                    "graph.optimizer)"
                )
        # The builder's own summaries (tf.compat.v1.summary.* in its train call), for summary_saver as Estimator
        # wrote them. Under steps_per_run > 1 this first call is on placeholders never fed: none to fetch.
        summaries = tf.compat.v1.get_collection(summaries_key)[summaries_before:] if steps_per_run == 1 else []
        named = _named_tensors(spec, global_step, learning_rate)
        window = None
        if steps_per_run > 1:
            for field_name in ("training_hooks", "training_chief_hooks"):
                if getattr(spec, field_name):
                    raise PlacedError(
                        "graph.builder",
                        f"{builder_name} returns EstimatorSpec.{field_name}; under session.steps_per_run > 1 their "
                        "per-step tensors are inside the loop and cannot be fetched; set session.steps_per_run: 1",
                    )
            own_train_op = optimizer is None

            def one_step(step_features: Any, step_labels: Any) -> tuple[Any, dict[str, Any]]:
                update_ops = tf.compat.v1.GraphKeys.UPDATE_OPS
                updates_before = len(tf.compat.v1.get_collection(update_ops))
                with tf.device(plan.device):
                    if plan.towers:  # the same towers inside the loop; the first call's optimizer and slots
                        inner, rate, _ = _tower_train(
                            tf, plan, step_features, step_labels, lambda f, y: _call_builder(
                                tf, builder, builder_name, f, y, {**params, "mode": "train"}, model_fn=model_fn,
                                **user_fn,
                            ), config.graph.optimizer, global_step, rate_now, True, [], optimizer,
                        )
                        return inner.train_op, _named_tensors(inner, None, rate)
                    inner = _call_builder(
                        tf, builder, builder_name, step_features, step_labels, {**params, "mode": "train"},
                        model_fn=model_fn, **user_fn,
                    )
                    rate = None
                    if own_train_op:
                        if inner.train_op is None:
                            raise PlacedError(
                                "graph.builder", f"{builder_name} returned a train_op only in its first call"
                            )
                        step_train = inner.train_op
                    else:
                        rate_now["rate"] = rate = make_learning_rate(tf, config.graph.optimizer, global_step)
                        new_updates = tf.compat.v1.get_collection(update_ops)[updates_before:]
                        with tf.control_dependencies(new_updates):
                            step_train = optimizer.minimize(inner.loss, global_step=global_step)
                        rate = tf.convert_to_tensor(rate, tf.float32)
                return step_train, _named_tensors(inner, None, rate)

            with tf.device(plan.device):
                train_op, window = build_fused_train(
                    tf,
                    steps_per_run=steps_per_run,
                    iterator=iterator,
                    step=one_step,
                    named=named,
                    global_step=global_step,
                    builder_name=builder_name,
                    carry=carry,
                    carry_step_read=carry is None,
                    first_call=first_call,
                    endless=endless_input(tf, dataset),
                    windows=lambda n: _window_iterator(
                        tf, dataset, iterator, _fixed_batch(tf, dataset) if from_input_fn else config.data.batch_size, n
                    ),
                )
            named = {**window.last, "global_step": window.global_step}
        evaluation = None
        if validation is not None:  # built as Estimator built it, in a graph of its own, then grafted here
            _, _, evaluation = _fresh_evaluation(
                tf,
                config.data.seed,
                builder,
                builder_name,
                {**params, "mode": "eval"},
                validation,
                config.data.batch_size,
                plan,
                model_fn=model_fn,
                named=named_features,
                **user_fn,
            )
            evaluation = graft_evaluation(tf, graph, evaluation, builder_name)
    return BuiltGraph(
        graph=graph, global_step=global_step, train_op=train_op, spec=spec, named=named, evaluation=evaluation,
        window=window, summaries=summaries,
    )


def _tower_train(
    tf: Any,
    plan: DevicePlan,
    features: Any,
    labels: Any,
    call: Callable[[Any, Any], GraphSpec],
    optimizer_config: Any,
    global_step: Any,
    rate_now: dict[str, Any],
    in_loop: bool,
    control: list[Any],
    optimizer: Any = None,
    wrap: Callable[[Any], Any] | None = None,
    local_average: bool = False,
) -> tuple[GraphSpec, Any, Any]:
    """The builder on ``plan.towers`` (:func:`hookrun.runner.graph.towers.build_towers`) and its averaged update.

    Returns ``(spec, learning_rate, optimizer)``: the merged spec (mean loss; ``train_op`` the one update), the
    learning rate tensor (None for a builder's own ``train_op``) and hookrun's optimizer (kept for the
    ``session.steps_per_run`` loop, which reuses it: its slots are made once, by the first call). ``in_loop``:
    the learning rate is read through ``rate_now`` (as the single-device loop does). ``wrap``: wraps hookrun's
    optimizer once, when it is made (``session.mixed_precision``'s loss scaling, innermost, then
    ``cluster.sync_replicas``' ``SyncReplicasOptimizer``): each tower's ``compute_gradients`` scales its loss and
    unscales its gradients, and the one ``apply_gradients`` checks the averaged gradients and updates the loss
    scale once. ``local_average``: on a cluster, average on this worker (see :func:`build_towers`).
    """
    from hookrun.runner.graph.towers import build_towers

    made: dict[str, Any] = {"optimizer": optimizer}

    def make() -> tuple[Any, Any]:
        rate_now["rate"] = make_learning_rate(tf, optimizer_config, global_step)
        if made["optimizer"] is None:
            rate = (lambda: rate_now["rate"]) if in_loop else rate_now["rate"]
            made["optimizer"] = make_optimizer(tf, optimizer_config, rate)
            if wrap is not None:
                made["optimizer"] = wrap(made["optimizer"])
        return made["optimizer"], tf.convert_to_tensor(rate_now["rate"], tf.float32)

    result = build_towers(
        tf, plan.towers, features, labels, call, make, global_step, control, local_average=local_average
    )
    return result.spec, result.learning_rate, made["optimizer"]


def _fixed_batch(tf: Any, dataset: Any) -> int | None:
    """The rows of every batch of a user's dataset when its element spec fixes them, else None.

    Batches of an input_fn's dataset stack into a window only when every component is a dense tensor of
    fully known shape (``batch(n, drop_remainder=True)``): a last, smaller batch would not stack.
    """
    parts = tf.nest.flatten(dataset.element_spec)
    if not parts or not all(isinstance(p, tf.TensorSpec) and p.shape.is_fully_defined() for p in parts):
        return None
    rows = {p.shape[0] if p.shape.rank else None for p in parts}
    return rows.pop() if len(rows) == 1 and None not in rows else None


def _window_iterator(tf: Any, dataset: Any, iterator: Any, batch_size: int | None, steps_per_run: int) -> Any:
    """An iterator over ``dataset`` with ``steps_per_run`` batches stacked per element, replacing ``iterator``.

    For the ``session.steps_per_run`` loop over an endless input (:func:`hookrun.runner.graph.fused.build_fused_train`):
    ``dataset.batch(N, drop_remainder=True).prefetch(1)``, made like ``iterator`` (initializable, with its
    initializer in ``TABLE_INITIALIZERS``, for the streamed input; one-shot for arrays). ``iterator``'s
    initializer leaves that collection, so the per-step iterator, which nothing pulls, is never started.

    Args:
        tf: the ``tensorflow`` module.
        dataset: the training dataset of single batches (endless: every batch has ``batch_size`` rows).
        iterator: the per-step iterator made over ``dataset``.
        batch_size: ``data.batch_size`` (rows).
        steps_per_run: N.

    Returns:
        The window iterator, or None when the batches cannot stack (a sparse or variable-shaped component,
        ``batch_size`` None: an input_fn's batches of no fixed size)
        or N of them would take more than :data:`hookrun.runner.graph.fused.WINDOW_BYTES` (then the loop
        pulls one batch per step).
    """
    if batch_size is None:
        return None
    size = window_bytes(tf, dataset.element_spec, batch_size, steps_per_run)
    if size is None or size > WINDOW_BYTES:
        return None
    v1 = tf.compat.v1
    with tf.device("/device:CPU:0"), v1.name_scope(INPUT_SCOPE):
        windows = dataset.batch(steps_per_run, drop_remainder=True).prefetch(1)
        initializers = v1.get_collection_ref(v1.GraphKeys.TABLE_INITIALIZERS)
        try:
            initializer = iterator.initializer
        except ValueError:  # a one-shot iterator (arrays) has none
            initializer = None
        if initializer is not None and initializer in initializers:
            initializers.remove(initializer)
            return make_iterator(tf, windows)
        return v1.data.make_one_shot_iterator(windows)


#: The training input pipeline's name scope (the trailing ``/`` re-enters it: one box in TensorBoard's graph).
INPUT_SCOPE = f"{HOOKRUN_SCOPE}/input/"


#: A metric name TensorFlow takes as an op and name scope (``tf.Graph``'s rule for op names).
_METRIC_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")


def check_metric_names(spec: GraphSpec) -> None:
    """Refuse a ``metrics`` or ``eval_metrics`` name TensorFlow cannot use as a name scope.

    Each name becomes ops (``<name>_metric``), the history's column and TensorBoard's tag. TensorFlow's
    rule for op names applies (``tf.Graph.create_op``): letters, digits and ``. _ - / >``, not starting with
    ``_``, ``-``, ``/`` or ``>``.

    Raises:
        PlacedError: at ``graph.builder`` (exit 2), naming the metric and a name that works.
    """
    for kind, names in (("metrics", spec.metrics), ("eval_metrics", spec.eval_metrics or {})):
        for name in names:
            if not isinstance(name, str) or not _METRIC_NAME.match(name):
                fixed = re.sub(r"[^A-Za-z0-9_.\\/>-]", "_", str(name)).lstrip("_-/>") or "metric"
                raise PlacedError(
                    "graph.builder",
                    f"the {kind} name {name!r} is not one TensorFlow accepts as an op name (letters, digits and "
                    f". _ - / >, starting with a letter, digit or .); rename it, e.g. {fixed!r}",
                )


def _named_tensors(spec: GraphSpec, global_step: Any, learning_rate: Any) -> dict[str, Any]:
    """The hook-visible names of a builder call: ``loss``, ``global_step``, ``predictions``, metrics, ``learning_rate``.

    Raises:
        PlacedError: a metric name clashes with a built-in tensor name, or is no valid TensorFlow name
            (:func:`check_metric_names`).
    """
    check_metric_names(spec)
    named: dict[str, Any] = {"loss": spec.loss}
    if global_step is not None:
        named["global_step"] = global_step
    if spec.predictions is not None:
        named["predictions"] = spec.predictions
    for name, tensor in spec.metrics.items():
        if name in named or name == "global_step":
            raise PlacedError("graph.builder", f"metric name {name!r} clashes with a built-in tensor name")
        named[name] = tensor
    if learning_rate is not None and "learning_rate" not in named:
        named["learning_rate"] = learning_rate
    return named


def build_evaluation(
    tf: Any,
    builder: Any,
    builder_name: str,
    params: dict[str, Any],
    validation: TrainingData | EvalInput | InputFn,
    batch_size: int,
    plan: DevicePlan,
    model_fn: bool = False,
    named: bool = False,
    config: Any = None,
    input_fn: InputFn | None = None,
) -> EvalGraph:
    """Build the evaluation into the default graph (a graph of its own): the builder in ``eval`` mode.

    Mirrors the graph ``tf.estimator.Estimator.evaluate`` built: ``global_step`` (the caller makes it)
    and the input first, then the model_fn called at the root of a fresh graph, so every name resolves
    as it does there (default layer names, ``input_layer``, ``tf.Variable``, an optimizer built in
    ``eval`` mode), then streaming metrics (``tf.compat.v1.metrics``, local variables) over every batch:

    - ``val_loss``: ``tf.compat.v1.metrics.mean(loss, weights=batch rows)``: the mean of the
      per-batch losses weighted by batch size, i.e. the loss over the whole set for a mean loss;
    - ``val_<name>``: each of the spec's ``eval_metrics`` when it gives any, else each batch
      metric averaged the same way (exact for mean-type metrics).

    The ops are ``reset``, ``update`` and ``outputs/<name>`` (``features``, ``labels``, ``predictions``,
    ``val_loss``, ``val_<metric>``); :func:`build_graph` grafts them into the training graph under
    ``evaluation/`` (:mod:`hookrun.runner.graph.graft`), ``hookrun evaluate`` runs them where they are.

    Args:
        tf: the ``tensorflow`` module.
        builder: the builder function.
        builder_name: its name, for messages.
        params: the builder's params with ``mode="eval"``.
        validation: the validation input (:class:`EvalInput`, or arrays).
        batch_size: rows per evaluation batch.
        plan: the device plan.
        model_fn: call the builder in the model_fn form (``mode="eval"``).
        named: hand the builder named features (a dict), as in training.
        config: what a model_fn naming ``config`` gets (see :func:`_call_builder`).
        input_fn: the training ``data.input_fn`` (for messages), when ``validation`` is ``data.eval_input_fn``.

    With ``validation`` an :class:`~hookrun.runner.data.input_fn.InputFn` (``data.eval_input_fn``) it is called in
    ``eval`` mode; its dataset's ``(features, labels)`` reach the model_fn untouched, each pass reads the
    dataset from its start to its end (``num_batches`` and ``num_rows`` are None) and ``val_loss`` weighs
    each batch by its rows (the labels' first dimension, else the first feature's).

    Returns:
        The evaluation graph.

    Raises:
        SetupError: no validation rows, or the builder fails or returns no scalar loss.
    """
    from_input_fn = isinstance(validation, InputFn)
    if not from_input_fn and validation.num_rows == 0:
        raise SetupError(
            f"{validation.source}: no validation row is left after the missing-value policies; nothing to evaluate"
        )
    v1 = tf.compat.v1
    locals_before = set(v1.local_variables())
    with tf.device("/device:CPU:0"):
        if isinstance(validation, InputFn):
            plain = split_params(params)
            info = (config if config is not None else RunInfo()).with_hookrun("eval", params)
            result = validation.call(plain, "eval", info)
            pipeline = make_pipeline(tf, validation, result, "eval", collect=False)
            iterator, features, labels = pipeline.iterator, pipeline.features, pipeline.labels
        else:
            if isinstance(validation, TrainingData):
                iterator = v1.data.make_initializable_iterator(make_eval_dataset(tf, validation, batch_size))
            else:
                iterator = v1.data.make_initializable_iterator(validation.dataset(tf, batch_size, named=named))
            features, labels = iterator.get_next()
    with tf.device(plan.device):
        spec = _call_builder(
            tf, builder, builder_name, features, labels, params, model_fn=model_fn, config=config,
            input_fn=validation if from_input_fn else input_fn,
        )
        check_metric_names(spec)  # the eval call's own eval_metrics too
        rows = tf.cast(batch_rows(tf, features, labels) if from_input_fn else tf.shape(labels)[0], tf.float32)
        ordered: dict[str, tuple[Any, Any]] = {
            "val_loss": v1.metrics.mean(spec.loss, weights=rows, name="loss_metric")
        }
        if spec.eval_metrics:
            for name, (value, update) in spec.eval_metrics.items():
                ordered[f"val_{name}"] = (value, update)
        else:
            for name, tensor in spec.metrics.items():
                ordered[f"val_{name}"] = v1.metrics.mean(tensor, weights=rows, name=f"{name}_metric")
    metric_locals = [v for v in v1.local_variables() if v not in locals_before]
    reset_op = tf.group(iterator.initializer, v1.variables_initializer(metric_locals), name="reset")
    update_op = tf.group(*(update for _, update in ordered.values()), name="update")
    with tf.name_scope("outputs"):
        if from_input_fn:  # the user's structures (sparse, ragged, dicts of labels) are not re-exported
            features = None
            labels = tf.identity(labels, name="labels") if isinstance(labels, tf.Tensor) else None
        else:
            if not isinstance(features, dict):
                features = tf.identity(features, name="features")
            else:  # dense tensors only (a TFRecord tensor feature may be sparse or ragged)
                features = {name: value for name, value in features.items() if isinstance(value, tf.Tensor)}
            labels = tf.identity(labels, name="labels")
        predictions = tf.identity(spec.predictions, name="predictions") if spec.predictions is not None else None
        values = {name: tf.identity(value, name=name) for name, (value, _) in ordered.items()}
    return EvalGraph(
        reset_op=reset_op,
        update_op=update_op,
        num_batches=None if from_input_fn else math.ceil(validation.num_rows / batch_size),
        num_rows=None if from_input_fn else validation.num_rows,
        values=values,
        features=features,
        labels=labels,
        predictions=predictions,
        spec=spec,
        evaluation_hooks=list(spec.evaluation_hooks),
    )


def _fresh_evaluation(
    tf: Any,
    seed: int | None,
    builder: Any,
    builder_name: str,
    params: dict[str, Any],
    validation: TrainingData | EvalInput,
    batch_size: int,
    plan: DevicePlan,
    model_fn: bool,
    named: bool,
    config: Any = None,
    input_fn: InputFn | None = None,
) -> tuple[Any, Any, EvalGraph]:
    """:func:`build_evaluation` in a new ``tf.Graph`` with the run's graph-level seed and a ``global_step``."""
    graph = tf.Graph()
    with graph.as_default():
        if seed is not None:
            tf.compat.v1.set_random_seed(seed)
        global_step = tf.compat.v1.train.get_or_create_global_step()
        evaluation = build_evaluation(
            tf, builder, builder_name, params, validation, batch_size, plan, model_fn=model_fn, named=named,
            config=config, input_fn=input_fn,
        )
    evaluation.source_graph = graph
    return graph, global_step, evaluation


def graft_evaluation(tf: Any, graph: Any, evaluation: EvalGraph, builder_name: str) -> EvalGraph:
    """The evaluation built in its own graph, grafted into ``graph`` (the default graph) under ``evaluation/``.

    See :mod:`hookrun.runner.graph.graft`: the pass's ops are imported, each model variable mapped to the
    training variable of the same name; the pass then runs on the training session.

    Args:
        tf: the ``tensorflow`` module.
        graph: the training graph, whose model variables exist.
        evaluation: what :func:`build_evaluation` built in its own graph (``source_graph``).
        builder_name: ``graph.builder``, for messages.

    Returns:
        The same evaluation, its ops and tensors those of ``graph`` (``source_graph`` kept, for the
        evaluation hooks' fetches).

    Raises:
        PlacedError: the pass reads a variable training does not make alike (named in the message).
    """
    from hookrun.runner.graph.graft import begin_in_own_graph, graft

    # The model_fn's evaluation_hooks begin in the evaluation's own graph (as Estimator's): what they make
    # there is grafted with the pass, their variables as the evaluation's own.
    begun, own_variables = begin_in_own_graph(tf, evaluation)
    features = evaluation.features
    elements: dict[str, Any] = {"reset": evaluation.reset_op, "update": evaluation.update_op, **begun}
    elements.update({f"value:{name}": tensor for name, tensor in evaluation.values.items()})
    if isinstance(features, dict):
        elements.update({f"feature:{name}": tensor for name, tensor in features.items()})
    elif features is not None:
        elements["features"] = features
    if evaluation.labels is not None:
        elements["labels"] = evaluation.labels
    if evaluation.predictions is not None:
        elements["predictions"] = evaluation.predictions
    imported = graft(tf, graph, evaluation.source_graph, elements, EVAL_SCOPE, builder_name, own_variables)
    evaluation.reset_op = imported["reset"]
    if imported["__copies__"]:  # the pass's own copies of training variables it changes: set before each pass
        with tf.control_dependencies(imported["__copies__"]):
            evaluation.reset_op = tf.group(imported["reset"], name=f"{EVAL_SCOPE}/reset_and_copy")
    evaluation.update_op = imported["update"]
    evaluation.values = {name: imported[f"value:{name}"] for name in evaluation.values}
    evaluation.features = (
        {name: imported[f"feature:{name}"] for name in features} if isinstance(features, dict)
        else imported.get("features")
    )
    evaluation.labels = imported.get("labels")
    evaluation.predictions = imported.get("predictions")
    evaluation.grafted_into = graph
    return evaluation


def build_evaluation_graph(
    tf: Any,
    config: RunConfig,
    base_dir: Path,
    plan: DevicePlan,
    validation: EvalInput,
    label_scale: float = 1.0,
    run_dir: Path | None = None,
) -> tuple[Any, Any, EvalGraph]:
    """Build only the evaluation, in a fresh ``tf.Graph``: the builder in ``eval`` mode, no training graph.

    For ``hookrun evaluate``, as ``tf.estimator.Estimator.evaluate``: the graph :func:`build_evaluation`
    builds (the one the ``evaluation`` hook grafts into training, so the same ``val_loss`` and
    ``val_<metric>``), whose variables have the names a checkpoint of the run holds. The graph-level
    seed is ``data.seed``, as in training.

    Args:
        tf: the ``tensorflow`` module.
        config: the run config.
        base_dir: the config's directory (custom builders import from there first).
        plan: the device plan.
        validation: the rows to evaluate.
        label_scale: the saved preprocessing's label scale, handed to the builder.
        run_dir: the run directory, for ``${run_dir}`` in ``graph.params``.

    Returns:
        ``(graph, global_step, evaluation)``.

    Raises:
        SetupError: the builder does not import, fails or returns no scalar ``loss``; no rows.
    """
    builder_name = config.graph.builder
    params = {**builder_params(config, base_dir, run_dir), "label_scale": float(label_scale), "mode": "eval"}
    builder = get_builder(builder_name, base_dir, params)
    model_fn = is_model_fn(builder, config.graph.style)
    named_features = features_form(builder, config.graph.features, model_fn) == "named"
    if named_features:
        params["feature_columns"] = named_feature_columns(validation.input.state)
    return _fresh_evaluation(
        tf, config.data.seed, builder, builder_name, params, validation, config.data.batch_size, plan,
        model_fn=model_fn, named=named_features,
        config=make_run_info(config, run_dir, tf=tf).with_label_classes(
            getattr(getattr(validation, "input", None), "state", None)
        ),
    )


def build_inference(
    tf: Any,
    builder: Any,
    builder_name: str,
    features: Any,
    params: dict[str, Any],
    model_fn: bool = False,
    config: RunInfo | None = None,
) -> GraphSpec:
    """Call the builder in ``infer`` mode (``ModeKeys.PREDICT``) on features without labels: for predict and export.

    Mirrors ``tf.estimator.Estimator.predict`` / ``export_saved_model``, which called the ``model_fn``
    with ``labels=None`` and ``mode=PREDICT``. A model_fn gets exactly that (its ``loss`` may be None,
    its ``prediction_hooks`` and ``export_outputs`` are kept). A builder of the ``fn(features, labels, params)``
    form gets ``params["mode"] == "infer"`` and all-zero labels ``float32 [batch, 1]``, so one written for
    ``train`` and ``eval`` builds unchanged; its loss and metrics are not used. Dropout and other
    training-only ops are off (they follow ``mode == "train"``).

    Args:
        tf: the ``tensorflow`` module.
        builder: the builder function.
        builder_name: ``graph.builder``, for messages.
        features: ``float32 [batch, n_features]``, or a dict (named features).
        params: ``graph.params`` plus ``label_scale`` (and ``feature_columns`` for named features).
        model_fn: the builder has the model_fn form.
        config: the run's ``config`` for a model_fn naming it (:func:`~hookrun.runner.graph.run_config.make_run_info`).

    Returns:
        The spec; ``predictions`` is set.

    Raises:
        PlacedError: the builder fails, returns a malformed spec, or returns no ``predictions``.
    """
    labels = None
    if not model_fn:
        first = next(iter(features.values())) if isinstance(features, dict) else features
        labels = tf.zeros([tf.shape(first)[0], 1], tf.float32)
    spec = _call_builder(
        tf, builder, builder_name, features, labels, {**params, "mode": "infer"}, model_fn=model_fn, config=config
    )
    if spec.predictions is None:
        raise PlacedError(
            "graph.builder",
            f"{builder_name} returns no `predictions` in infer mode; return the model's output as `predictions` "
            "to predict with it or export it",
        )
    if not spec.prediction_dict:
        spec.prediction_dict = {"predictions": spec.predictions}
    return spec
