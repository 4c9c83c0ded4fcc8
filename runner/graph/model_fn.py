"""The Estimator-style builder form: ``model_fn(features, labels, mode, params) -> EstimatorSpec``.

``tf.estimator`` is gone from TensorFlow 2.16; a ``model_fn`` written for it runs under hookrun with
``from hookrun.runner import EstimatorSpec, ModeKeys`` in place of ``tf.estimator.EstimatorSpec`` and
``tf.estimator.ModeKeys``. Importing this module does not import TensorFlow.

How hookrun tells the two builder forms apart (``graph.style``):

- ``model_fn``: the builder is called as ``fn(features, labels=..., mode=..., params=..., config=...)``, the
  names it has among these; ``params`` is ``graph.params`` as written and ``config`` a
  :class:`~hookrun.runner.graph.run_config.RunInfo` (``tf.estimator.RunConfig``'s attributes; hookrun's own
  values, ``label_scale`` and the named features' ``feature_columns``, in ``config.hookrun``);
- ``builder``: the builder is called as ``fn(features, labels, params)`` with ``params["mode"]``;
- ``auto`` (the default): ``model_fn`` when the function has a parameter named ``mode``, as
  ``tf.estimator.Estimator`` decided which arguments to pass from the ``model_fn``'s parameter names.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any


class ModeKeys:
    """The mode a ``model_fn`` is called in; the same strings as ``tf.estimator.ModeKeys``."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


@dataclass
class EstimatorSpec:
    """What a ``model_fn`` returns; the fields of ``tf.estimator.EstimatorSpec``, by the same names.

    Attributes:
        mode: the ``mode`` the model_fn was called with (optional; checked when given).
        predictions: a tensor ``[batch, ...]``, or a dict name -> tensor. With a dict, the entry named
            ``predictions`` (else the first entry) is the run's ``predictions`` tensor: the history's and
            the evaluation's ``predictions``.
        loss: scalar float tensor; required in ``train`` and ``eval`` mode.
        train_op: the op that takes one step and increments ``global_step`` (``train`` mode; ignored in the
            others). None: hookrun builds it from ``graph.optimizer`` (unlike Estimator, which required it).
        eval_metric_ops: name -> ``(value, update_op)`` streaming metrics (``tf.compat.v1.metrics.*``), used in
            ``eval`` mode; reported as ``val_<name>``.
        export_outputs: ``infer`` mode: signature name -> outputs of the exported SavedModel (``hookrun export``):
            a tensor (output ``output``), a dict name -> tensor, or an ``ExportOutput``
            (:mod:`hookrun.runner.trained.serving`'s ``PredictOutput``, ``ClassificationOutput``,
            ``RegressionOutput``, as Estimator's). The one named ``serving_default`` replaces the default signature's.
        prediction_hooks: ``infer`` mode: hooks run by ``hookrun predict`` around each batch (as
            ``training_hooks``: ``SessionRunHook`` instances or duck-typed).
        training_hooks: hooks run after the config's ``hooks:``, in this order (``train`` mode): a list of
            ``tf.compat.v1.train.SessionRunHook`` instances, or of any objects with its five methods (as the
            config's ``custom`` hooks).
        training_chief_hooks: hooks run after ``training_hooks``, on the chief only (``train`` mode; without a
            cluster the one process is the chief), as ``MonitoredTrainingSession``'s ``chief_only_hooks``.
        evaluation_hooks: hooks run around every evaluation pass (``eval`` mode): in the ``evaluation`` hook's
            evaluations and in ``hookrun evaluate``; ``before_run``/``after_run`` wrap each batch's update.
        scaffold: a ``tf.compat.v1.train.Scaffold`` (``train`` mode): its fields (``init_op``, ``init_fn``,
            ``saver``, ``ready_op``, ``local_init_op``, ...) are copied into the session's scaffold; a saver
            given replaces hookrun's. In ``eval`` mode it is checked and not used.
    """

    mode: str | None = None
    predictions: Any = None
    loss: Any = None
    train_op: Any = None
    eval_metric_ops: Mapping[str, Any] | None = None
    export_outputs: Mapping[str, Any] | None = None
    training_chief_hooks: Any = None
    training_hooks: Any = None
    scaffold: Any = None
    evaluation_hooks: Any = None
    prediction_hooks: Any = None


#: Every field name of :class:`EstimatorSpec` (and of ``tf.estimator.EstimatorSpec``).
SPEC_FIELDS = tuple(f.name for f in fields(EstimatorSpec))

#: The hook-list fields checked by :func:`check_spec`, and the mode each one runs in.
HOOK_FIELDS = {
    "training_hooks": ModeKeys.TRAIN,
    "training_chief_hooks": ModeKeys.TRAIN,
    "evaluation_hooks": ModeKeys.EVAL,
    "prediction_hooks": ModeKeys.PREDICT,
}

#: ``graph.style`` values.
STYLES = ("auto", "builder", "model_fn")


def is_model_fn(fn: Callable[..., Any], style: str = "auto") -> bool:
    """Whether a builder is called in the model_fn form.

    Args:
        fn: the builder.
        style: ``graph.style``: ``model_fn``, ``builder`` or ``auto`` (a parameter named ``mode``: model_fn).

    Returns:
        True for the model_fn form.
    """
    if style != "auto":
        return style == "model_fn"
    try:
        return "mode" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def call_model_fn(
    fn: Callable[..., Any], features: Any, labels: Any, mode: str, params: dict[str, Any], config: Any = None
) -> Any:
    """Call ``fn`` as ``tf.estimator.Estimator`` did: ``features`` first, then the parameters it names.

    ``labels``, ``mode`` and ``params`` are passed by keyword when ``fn`` has a parameter of that name, or
    positionally in that order when ``fn`` takes ``*args``; ``config`` (in place of Estimator's ``RunConfig``:
    a :class:`hookrun.runner.graph.run_config.RunInfo`, hookrun's own values in ``config.hookrun``) is passed
    when named, as Estimator passed its ``RunConfig``.

    Args:
        fn: the model_fn.
        features: its features (a tensor or a dict of tensors).
        labels: its labels, or None (``infer`` mode).
        mode: ``"train"``, ``"eval"`` or ``"infer"``.
        params: ``graph.params`` as written (placeholders expanded).
        config: the run's ``RunInfo``.

    Returns:
        What ``fn`` returned (checked by :func:`check_spec`).
    """
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(features, labels, mode, params)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters.values()):
        return fn(features, labels, mode, params)
    given = {"labels": labels, "mode": mode, "params": params, "config": config}
    return fn(features, **{name: value for name, value in given.items() if name in parameters})


class SpecError(TypeError):
    """A model_fn returned something hookrun cannot run; the message names the field and the fix."""


@dataclass
class CheckedSpec:
    """A model_fn's return value, checked: what the graph builder uses.

    Attributes:
        loss, train_op, eval_metric_ops: as returned (``eval_metric_ops`` as a dict, maybe empty).
        predictions: the one ``predictions`` tensor (see :class:`EstimatorSpec`), or None.
        prediction_dict: every prediction by name (``{"predictions": t}`` for a single tensor), maybe empty.
        training_hooks: the hooks, as a list.
        export_outputs: ``infer`` mode: signature name -> (output name -> tensor) or an ``ExportOutput``, maybe empty.
        prediction_hooks: ``infer`` mode: the hooks, as a list.
        training_chief_hooks: the chief-only hooks (``train`` mode), as a list.
        evaluation_hooks: the evaluation hooks (``eval`` mode), as a list.
        scaffold: the ``tf.compat.v1.train.Scaffold`` given in ``train`` mode, or None.
    """

    loss: Any
    train_op: Any
    predictions: Any
    prediction_dict: dict[str, Any]
    eval_metric_ops: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    training_hooks: list[Any] = field(default_factory=list)
    export_outputs: dict[str, Any] = field(default_factory=dict)
    prediction_hooks: list[Any] = field(default_factory=list)
    training_chief_hooks: list[Any] = field(default_factory=list)
    evaluation_hooks: list[Any] = field(default_factory=list)
    scaffold: Any = None


def _is_tensor(tf: Any, value: Any) -> bool:
    return isinstance(value, (tf.Tensor, tf.Variable))


def check_spec(tf: Any, value: Any, builder: str, mode: str) -> CheckedSpec:
    """Check what a model_fn returned and turn it into a :class:`CheckedSpec`.

    Args:
        tf: the ``tensorflow`` module.
        value: an :class:`EstimatorSpec`, or a dict whose keys are among :data:`SPEC_FIELDS`.
        builder: ``graph.builder``, for messages.
        mode: the mode the model_fn was called in.

    Returns:
        The checked spec.

    Raises:
        SpecError: a wrong type, an unknown key, a missing ``loss``, a
            ``mode`` other than the one given, a hook lacking a ``SessionRunHook`` method, a scaffold that is
            not a ``Scaffold``; the message names the field (``EstimatorSpec.<field>``).
    """
    where = f"{builder} (model_fn, mode {mode!r})"
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in SPEC_FIELDS)
        if unknown:
            raise SpecError(
                f"{where} returned a dict with unknown key(s) {', '.join(unknown)}; "
                f"the keys are EstimatorSpec's fields: {', '.join(SPEC_FIELDS)}"
            )
        value = EstimatorSpec(**value)
    elif not isinstance(value, EstimatorSpec):
        kind = type(value).__module__ + "." + type(value).__qualname__
        raise SpecError(
            f"{where} returned {kind}; return hookrun.runner.EstimatorSpec(...) or a dict with its fields "
            "(tf.estimator.EstimatorSpec is gone from TensorFlow 2.16)"
        )
    if value.mode is not None and value.mode != mode:
        raise SpecError(f"{where}: EstimatorSpec.mode is {value.mode!r}; return the mode the model_fn was given")
    if mode != ModeKeys.PREDICT or value.loss is not None:
        if not _is_tensor(tf, value.loss) or value.loss.shape.rank != 0:
            got = f"a tensor of shape {value.loss.shape}" if _is_tensor(tf, value.loss) else type(value.loss).__name__
            raise SpecError(f"{where}: EstimatorSpec.loss must be a scalar tensor, got {got}")
    train_op = value.train_op if mode == ModeKeys.TRAIN else None
    if train_op is not None and not isinstance(train_op, (tf.Operation, tf.Tensor)):
        raise SpecError(
            f"{where}: EstimatorSpec.train_op must be a tf.Operation or tensor (or None: hookrun builds it from "
            f"graph.optimizer), got {type(train_op).__name__}"
        )
    infer = mode == ModeKeys.PREDICT  # export_outputs: used in infer mode only
    export_outputs = _export_outputs(tf, where, value.export_outputs) if infer else {}
    prediction_dict: dict[str, Any] = {}
    predictions = value.predictions
    if isinstance(predictions, Mapping):
        if not predictions:
            raise SpecError(f"{where}: EstimatorSpec.predictions is an empty dict; give tensors or None")
        for key, tensor in predictions.items():
            if not isinstance(key, str) or not _is_tensor(tf, tensor):
                raise SpecError(
                    f"{where}: EstimatorSpec.predictions[{key!r}] must be a tensor named by a string, "
                    f"got {type(tensor).__name__}"
                )
        prediction_dict = dict(predictions)
        predictions = prediction_dict.get("predictions", next(iter(prediction_dict.values())))
    elif predictions is not None:
        if not _is_tensor(tf, predictions):
            raise SpecError(
                f"{where}: EstimatorSpec.predictions must be a tensor or a dict of tensors, "
                f"got {type(predictions).__name__}"
            )
        prediction_dict = {"predictions": predictions}
    metric_ops: dict[str, tuple[Any, Any]] = {}
    if value.eval_metric_ops is not None:
        if not isinstance(value.eval_metric_ops, Mapping):
            raise SpecError(
                f"{where}: EstimatorSpec.eval_metric_ops must be a dict name -> (value, update_op), "
                f"got {type(value.eval_metric_ops).__name__}"
            )
        for key, pair in value.eval_metric_ops.items():
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise SpecError(
                    f"{where}: EstimatorSpec.eval_metric_ops[{key!r}] must be a (value, update_op) pair "
                    f"such as tf.compat.v1.metrics.mean(...) returns, got {type(pair).__name__}"
                )
            metric_ops[str(key)] = (pair[0], pair[1])
    hooks = {name: _check_hooks(getattr(value, name), name, where) for name in HOOK_FIELDS}
    hooks = {name: hook_list if HOOK_FIELDS[name] == mode else [] for name, hook_list in hooks.items()}
    scaffold = value.scaffold
    if scaffold is not None and not isinstance(scaffold, tf.compat.v1.train.Scaffold):
        raise SpecError(
            f"{where}: EstimatorSpec.scaffold must be a tf.compat.v1.train.Scaffold, got {type(scaffold).__name__}"
        )
    return CheckedSpec(
        loss=value.loss,
        train_op=train_op,
        predictions=predictions,
        prediction_dict=prediction_dict,
        eval_metric_ops=metric_ops,
        export_outputs=export_outputs,
        scaffold=scaffold if mode == ModeKeys.TRAIN else None,
        **hooks,
    )


def _export_outputs(tf: Any, where: str, value: Any) -> dict[str, Any]:
    """``EstimatorSpec.export_outputs`` as signature name -> (output name -> tensor), checked.

    An ``ExportOutput`` (``PredictOutput``, ``ClassificationOutput``, ``RegressionOutput`` of
    :mod:`hookrun.runner.trained.serving`, anything with ``as_signature_def``) is kept as it is.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SpecError(
            f"{where}: EstimatorSpec.export_outputs must be a dict signature name -> outputs, "
            f"got {type(value).__name__}"
        )
    checked: dict[str, Any] = {}
    for key, output in value.items():
        if isinstance(key, str) and callable(getattr(output, "as_signature_def", None)):
            checked[key] = output  # an ExportOutput (hookrun.runner.trained.serving's or TF's), checked when built
            continue
        outputs = getattr(output, "outputs", output)  # Estimator's PredictOutput keeps them in `.outputs`
        if _is_tensor(tf, outputs):
            outputs = {"output": outputs}  # PredictOutput's name for a single tensor
        if not isinstance(key, str) or not isinstance(outputs, Mapping) or not outputs or not all(
            isinstance(name, str) and _is_tensor(tf, tensor) for name, tensor in outputs.items()
        ):
            raise SpecError(
                f"{where}: EstimatorSpec.export_outputs[{key!r}] must be a tensor, a dict name -> tensor or an "
                f"object with such an `outputs` dict, got {type(output).__name__}"
            )
        checked[key] = dict(outputs)
    return checked



def _check_hooks(hooks: Any, name: str, where: str) -> list[Any]:
    """A spec's hook list, checked in every mode (as ``tf.estimator.EstimatorSpec`` did): a list or tuple of hooks.

    A hook is any object with the five ``SessionRunHook`` methods
    (:func:`hookrun.hooks.context.missing_methods`, the check the config's custom hooks get).

    Raises:
        SpecError: not a list or tuple, an entry lacking a method, or a class given for an instance; the
            message names ``EstimatorSpec.<name>[i]``.
    """
    if hooks is None:
        return []
    if not isinstance(hooks, (list, tuple)):
        raise SpecError(
            f"{where}: EstimatorSpec.{name} must be a list of SessionRunHook, got {type(hooks).__name__}"
        )
    from hookrun.config_schemas.hook_base import LIFECYCLE_METHODS
    from hookrun.hooks.context import missing_methods

    for index, hook in enumerate(hooks):
        if isinstance(hook, type):
            raise SpecError(
                f"{where}: EstimatorSpec.{name}[{index}] is the class {hook.__name__}, not a hook; "
                f"give an instance: {hook.__name__}(...)"
            )
        missing = missing_methods(hook)
        if missing:
            raise SpecError(
                f"{where}: EstimatorSpec.{name}[{index}] ({type(hook).__name__}) is not a SessionRunHook: it lacks "
                f"{', '.join(missing)} (subclass tf.compat.v1.train.SessionRunHook, or define all of "
                f"{', '.join(LIFECYCLE_METHODS)})"
            )
    return list(hooks)


__all__ = ["EstimatorSpec", "ModeKeys", "SPEC_FIELDS", "call_model_fn", "check_spec", "is_model_fn"]
