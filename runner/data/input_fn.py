"""The user's own input pipeline: an Estimator ``input_fn`` named by ``data.input_fn`` (and ``data.eval_input_fn``).

Mirrors ``tf.estimator.Estimator``'s input handling (``Estimator._call_input_fn`` and
``estimator.util.parse_input_fn_result``):

- the function is called with the arguments it names among ``params`` (``graph.params`` as written,
  ``${config_dir}`` placeholders replaced), ``mode`` (``"train"`` or ``"eval"``, as ``ModeKeys``) and
  ``config`` (a :class:`RunInfo`, in place of Estimator's ``RunConfig``); nothing else is added to
  ``params`` on this path;
- it returns a ``tf.data.Dataset`` whose elements are ``(features, labels)`` or features alone, or a
  ``(features, labels)`` tuple of tensors; ``features`` is a tensor or a dict of tensors (dense,
  ``SparseTensor``, ``RaggedTensor``, any dtype), ``labels`` a tensor, a dict or None. As Estimator's
  ``parse_iterator_result``: an element that is a tuple of two is ``(features, labels)``, anything else
  (a tensor, a dict, even a dict whose values are tuples) is features, and the model_fn gets ``labels=None``
  (:func:`split_element`);
- the model_fn receives exactly the ``get_next()`` of that dataset (or the tensors given): nothing is
  cast, reshaped or re-packed.

Resume: a resumed run calls the input_fn again; the iterator's position saved with the checkpoint is
restored where ``tf.data`` can save it (:mod:`hookrun.runner.data.input_state`), else it reads its
dataset from the start, as Estimator did.

Clusters: each training task's input_fn gets ``input_context`` (a ``tf.distribute.InputContext``, see
:func:`input_context`) when it names it, so it can shard; the built-in reader shards by the same context.

Importing this module does not import TensorFlow.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookrun.common.errors import PlacedError
from hookrun.config_schemas.imports import import_object
from hookrun.runner.data.element import split_element  # Estimator's rule for (features, labels) or features alone
from hookrun.runner.graph.run_config import RunInfo  # the one `config` class (Estimator's RunConfig)

#: Where a dataset's first element comes from, for messages.
_FORMS = "a tf.data.Dataset of (features, labels) or of features alone, or a (features, labels) tuple of tensors"


class InputFn:
    """A ``data.input_fn`` or ``data.eval_input_fn``: imported and called as Estimator called it.

    Attributes:
        path: the ``package.module:function`` of the config.
        key: ``input_fn`` or ``eval_input_fn`` (the config place is ``data.<key>``).
        fn: the function.
    """

    def __init__(self, path: str, base_dir: Path, key: str = "input_fn") -> None:
        """Import the function.

        Raises:
            ImportFailure: the module does not import, lacks the function, or it is not callable (at ``data.<key>``).
        """
        self.path = path
        self.key = key
        self.fn: Callable[..., Any] = import_object(path, base_dir, f"data.{key}")
        #: The ``tf.distribute.InputContext`` given in ``train`` mode on a cluster (:func:`input_context`), or None.
        self.input_context: Any = None

    @property
    def where(self) -> str:
        """``data.input_fn`` (the config place)."""
        return f"data.{self.key}"

    def error(self, reason: str) -> PlacedError:
        """A one-line error at ``data.<key>`` naming the function: ``input_fn my_input:train_input_fn <reason>``."""
        return PlacedError(self.where, f"{self.key} {self.path} {reason}")

    def call(self, params: dict[str, Any], mode: str, config: RunInfo) -> Any:
        """Call the function with the arguments it names among ``params``, ``mode``, ``config`` (and ``input_context``).

        Mirrors ``Estimator._call_input_fn``: only the names in its signature are passed, by keyword.
        ``input_context`` is :attr:`input_context` in ``train`` mode (None in one process, as Estimator
        gave it without a ``tf.distribute`` strategy), and None in ``eval`` mode: each evaluation reads
        the whole validation set.

        Raises:
            PlacedError: the function raised (its exception type and message are given).
        """
        try:
            parameters = inspect.signature(self.fn).parameters
        except (TypeError, ValueError):
            parameters = {}
        context = self.input_context if mode == "train" else None
        given = {"params": params, "mode": mode, "config": config, "input_context": context}
        kwargs = {name: value for name, value in given.items() if name in parameters}
        try:
            return self.fn(**kwargs)
        except Exception as err:  # the user's pipeline may raise anything
            message = str(err).strip().splitlines()[0] if str(err).strip() else ""
            raise self.error(f"raised {type(err).__name__}: {message} ({mode} mode)") from err


@dataclass
class Pipeline:
    """What an input_fn's result gives the graph.

    Attributes:
        features: the ``get_next()`` features (or the tensors returned): a tensor or dict, untouched.
        labels: the labels, untouched (None when none).
        dataset: the ``tf.data.Dataset`` returned, or None for a tuple of tensors.
        iterator: the dataset's initializable iterator (its initializer runs with the session's
            ``local_init_op``), or None for a tuple of tensors.
    """

    features: Any
    labels: Any
    dataset: Any = None
    iterator: Any = None


def _is_component(tf: Any, value: Any) -> bool:
    return isinstance(value, (tf.Tensor, tf.SparseTensor, tf.RaggedTensor))


def _is_component_spec(tf: Any, spec: Any) -> bool:
    return isinstance(spec, (tf.TensorSpec, tf.SparseTensorSpec, tf.RaggedTensorSpec))


def _is_none_spec(spec: Any) -> bool:
    """``spec`` is the ``element_spec`` of a None component (``Dataset.from_tensor_slices((features, None))``)."""
    return type(spec).__name__ == "NoneTensorSpec"  # tf.data's spec of None; TensorFlow exports no name for it


def _bad_part(tf: Any, value: Any, spec: bool, name: str) -> tuple[str, Any] | None:
    """The first part of a nest of tensors (dicts with str keys, tuples) that is not one, as ``(name, value)``."""
    check = _is_component_spec if spec else _is_component
    if check(tf, value):
        return None
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{name}[{key!r}]", item
            bad = _bad_part(tf, item, spec, f"{name}[{key!r}]")
            if bad is not None:
                return bad
        return None
    if isinstance(value, tuple) and value:
        for index, item in enumerate(value):
            bad = _bad_part(tf, item, spec, f"{name}[{index}]")
            if bad is not None:
                return bad
        return None
    return name, value


def _check_structure(tf: Any, input_fn: InputFn, value: Any, what: str, spec: bool, optional: bool) -> None:
    """``value`` is a tensor or a dict of tensors (nesting dicts and tuples; ``optional``: None); else one line."""
    if optional and (value is None or (spec and _is_none_spec(value))):
        return
    bad = _bad_part(tf, value, spec, what)
    if bad is None:
        return
    name, item = bad
    if name != what:
        raise input_fn.error(
            f"returned {name} of type {type(item).__name__}; {what} must be a tensor or a dict "
            "name -> tensor (dense, SparseTensor or RaggedTensor)"
        )
    raise input_fn.error(
        f"returned {what} of type {type(value).__name__}; {what} must be a tensor or a dict name -> tensor "
        f"(dense, SparseTensor or RaggedTensor){' or None' if optional else ''}"
    )


def make_pipeline(tf: Any, input_fn: InputFn, result: Any, mode: str, collect: bool = True) -> Pipeline:
    """Check an input_fn's result and give the graph its features and labels, untouched.

    A dataset gets an initializable iterator in ``TABLE_INITIALIZERS`` (started by the session's
    ``local_init_op``, at every session creation, as :func:`hookrun.runner.data.streaming.make_iterator`);
    lookup tables the dataset uses are initialised by the same op. Then one ``get_next()``. A dataset of
    ``(features, None)`` is mapped to its features alone (the same tensors; ``steps_per_run`` windows cannot
    stack a None); the model_fn gets ``labels=None`` either way.

    Args:
        tf: the ``tensorflow`` module.
        input_fn: the function (for messages).
        result: what it returned.
        mode: ``train`` or ``eval``.
        collect: put the iterator's initializer in ``TABLE_INITIALIZERS`` (training); the evaluation's
            is run by its ``reset`` op instead.

    Returns:
        The pipeline.

    Raises:
        PlacedError: at ``data.<key>``: a result of the wrong type; elements that are tuples of other than two; a
            dataset known to be empty; an ``eval`` result that is not a dataset (it is re-read at every
            evaluation) or is endless.
    """
    from hookrun.runner.data.streaming import make_iterator

    if isinstance(result, tf.data.Dataset):
        spec = result.element_spec
        if isinstance(spec, tuple) and len(spec) != 2:
            raise input_fn.error(
                f"returned a dataset whose elements are tuples of {len(spec)}, not (features, labels) pairs or "
                f"features alone; return {_FORMS}"
            )
        features_spec, labels_spec = split_element(spec)
        _check_structure(tf, input_fn, features_spec, "features", spec=True, optional=False)
        _check_structure(tf, input_fn, labels_spec, "labels", spec=True, optional=True)
        if _is_none_spec(labels_spec):  # (features, None): features alone, as the window of N batches stacks them
            if isinstance(features_spec, tuple) and len(features_spec) == 2:
                raise input_fn.error(
                    "returned a dataset of (features, None) whose features are a tuple of two (read as (features, "
                    "labels) once the None is dropped); return the features as a dict"
                )
            result = result.map(lambda features, labels: features)
        count = dataset_cardinality(tf, result)
        if count == 0:
            raise input_fn.error("returned an empty dataset (no element); check its files, filter or take()")
        if mode == "eval" and count == tf.data.INFINITE_CARDINALITY:
            raise input_fn.error(
                "returned an endless dataset (repeat()); each evaluation reads the eval dataset to its end: "
                "leave out repeat() or take(n) batches"
            )
        iterator = make_iterator(tf, result) if collect else tf.compat.v1.data.make_initializable_iterator(result)
        features, labels = split_element(iterator.get_next())
        return Pipeline(features=features, labels=labels, dataset=result, iterator=iterator)
    if isinstance(result, tuple) and len(result) == 2:
        if mode == "eval":
            raise input_fn.error(
                "returned a tuple of tensors; an eval_input_fn must return a tf.data.Dataset (each evaluation "
                "reads it again from its start)"
            )
        _check_structure(tf, input_fn, result[0], "features", spec=False, optional=False)
        _check_structure(tf, input_fn, result[1], "labels", spec=False, optional=True)
        return Pipeline(features=result[0], labels=result[1])
    raise input_fn.error(f"returned {type(result).__module__}.{type(result).__qualname__}; return {_FORMS}")


def input_context(tf: Any, plan: Any) -> Any:
    """The ``tf.distribute.InputContext`` of this training task of a cluster, or None in one process.

    As ``tf.distribute``'s parameter-server strategies gave it to each worker's input_fn
    (``InputContext(num_input_pipelines, input_pipeline_id, num_replicas_in_sync)``):

    - ``num_input_pipelines``: the training tasks (the chief, if the cluster names one, and every worker);
    - ``input_pipeline_id``: this task's place among them (the chief 0), the shard it reads
      (``dataset.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)``);
    - ``num_replicas_in_sync``: 1 for asynchronous training (each worker applies its own batches); with
      ``cluster.sync_replicas`` the replicas whose gradients one update aggregates
      (``replicas_to_aggregate``, default every training task), so ``get_per_replica_batch_size(global)``
      gives each worker its share of a global batch.

    The built-in reader shards by the same context (:func:`hookrun.runner.training.prepare.prepare`).

    Args:
        tf: the ``tensorflow`` module.
        plan: the :class:`hookrun.runner.cluster.plan.ClusterPlan` of this task, or None (one process).

    Returns:
        The context, or None when ``plan`` is None.
    """
    if plan is None:
        return None
    tasks = plan.training_tasks
    sync = plan.settings.sync_replicas
    in_sync = (sync.replicas_to_aggregate or len(tasks)) if sync is not None else 1
    return tf.distribute.InputContext(
        num_input_pipelines=len(tasks), input_pipeline_id=plan.replica, num_replicas_in_sync=in_sync
    )


def dataset_cardinality(tf: Any, dataset: Any) -> int | None:
    """The dataset's cardinality computed on a copy of its ops (see :func:`hookrun.runner.graph.fused.cardinality`)."""
    from hookrun.runner.graph.fused import cardinality

    return cardinality(tf, dataset)


def batch_rows(tf: Any, features: Any, labels: Any) -> Any:
    """The rows of one batch (``int32`` scalar): the first dimension of the labels, else of the first feature.

    A ``SparseTensor``'s rows are its ``dense_shape[0]``, a ``RaggedTensor``'s its ``nrows()``.
    """
    parts = [part for part in tf.nest.flatten((labels, features)) if part is not None]
    first = parts[0]
    if isinstance(first, tf.SparseTensor):
        return tf.cast(first.dense_shape[0], tf.int32)
    if isinstance(first, tf.RaggedTensor):
        return tf.cast(first.nrows(), tf.int32)
    return tf.shape(first)[0]


def _component(tf: Any, value: Any) -> tuple[str, str, str]:
    """``(kind, dtype, shape)`` of a tensor, ``SparseTensor``, ``RaggedTensor`` or their specs."""
    if isinstance(value, (tf.SparseTensor, tf.SparseTensorSpec)):
        kind = "sparse"
    elif isinstance(value, (tf.RaggedTensor, tf.RaggedTensorSpec)):
        kind = "ragged"
    else:
        kind = "dense"
    shape = value.shape
    dims = "[" + ", ".join("None" if d is None else str(d) for d in shape.as_list()) + "]" if shape.rank is not None \
        else "unknown"
    return kind, tf.as_dtype(value.dtype).name, dims


def _leaves(tf: Any, value: Any, name: str) -> list[tuple[str, Any]]:
    """``(name, component)`` of each tensor (or spec) of a nest of dicts and tuples, in order: ``features['x'][0]``."""
    if isinstance(value, Mapping):
        return [leaf for key, item in value.items() for leaf in _leaves(tf, item, f"{name}[{key!r}]")]
    if isinstance(value, tuple):
        return [leaf for index, item in enumerate(value) for leaf in _leaves(tf, item, f"{name}[{index}]")]
    return [(name, value)]


def describe_element(tf: Any, features: Any, labels: Any) -> list[dict[str, str]]:
    """The structure an input function gives, one row per tensor: what ``validate --build`` and ``inspect`` show.

    Args:
        tf: the ``tensorflow`` module.
        features: a tensor, a dict of tensors (or their ``TypeSpec`` s, from ``Dataset.element_spec``).
        labels: the same, or None.

    Returns:
        Rows ``{"name": "features['x']" | "features" | "labels" | "labels['y']", "kind": "dense" | "sparse" |
        "ragged", "dtype": "float32", "shape": "[None, 2]"}``, features first, dict keys in their order.
    """
    rows: list[dict[str, str]] = []
    for part, value in (("features", features), ("labels", labels)):
        if value is None:
            rows.append({"name": part, "kind": "none", "dtype": "-", "shape": "-"})
            continue
        for name, item in _leaves(tf, value, part):
            kind, dtype, shape = _component(tf, item)
            rows.append({"name": name, "kind": kind, "dtype": dtype, "shape": shape})
    return rows


def element_specs(tf: Any, config: Any, base_dir: Path, run_dir: Path | None = None) -> dict[str, list[dict[str, str]]]:
    """Each input function's element (``data.input_fn`` in ``train`` mode, ``data.eval_input_fn`` in ``eval``).

    Each is called once more, as training calls it, in a scratch graph; a dataset's ``element_spec`` is
    described, or the tensors of a ``(features, labels)`` tuple.

    Args:
        tf: the ``tensorflow`` module.
        config: the run config (``data.input_fn`` set).
        base_dir: the config's directory.
        run_dir: the run directory (for ``config.model_dir``), or None.

    Returns:
        ``{"data.input_fn <path>": rows, ...}`` (:func:`describe_element`'s rows).

    Raises:
        PlacedError: at ``data.<key>``: it raised or returned what training refuses (as :func:`make_pipeline`).
    """
    from hookrun.runner.graph.run_config import builder_params

    found: dict[str, list[dict[str, str]]] = {}
    params = builder_params(config, base_dir, run_dir)
    info = RunInfo(model_dir=str(run_dir) if run_dir is not None else None, tf_random_seed=config.data.seed)
    for key, mode in (("input_fn", "train"), ("eval_input_fn", "eval")):
        path = getattr(config.data, key)
        if path is None:
            continue
        function = InputFn(path, base_dir, key)
        with tf.Graph().as_default():
            pipeline = make_pipeline(tf, function, function.call(dict(params), mode, info), mode, collect=False)
            if pipeline.dataset is not None:
                features, labels = split_element(pipeline.dataset.element_spec)
            else:
                features, labels = pipeline.features, pipeline.labels
            found[f"data.{key} {path}"] = describe_element(tf, features, labels)
    return found


def input_fn_of(path: str, option: str, base_dir: Path | None = None) -> Any:
    """Import ``path`` (``module:function``) as an input function named at ``option`` in its messages.

    Args:
        path: ``package.module:function``.
        option: ``--input-fn``, ``data.eval_input_fn``, ``graph.serving_input_fn`` or ``--serving-input-fn``.
        base_dir: imported beside it first (default: the current directory).

    Returns:
        An :class:`~hookrun.runner.data.input_fn.InputFn` whose errors read ``<option>: <path> <reason>``.

    Raises:
        ImportFailure: it does not import or is not callable (exit 2).
    """
    from hookrun.config_schemas.imports import import_object

    class OptionInputFn(InputFn):
        """An :class:`InputFn` named by a command-line option or config key rather than ``data.<key>``."""

        def __init__(self) -> None:
            self.path = path
            self.key = option.removeprefix("--").removeprefix("data.").removeprefix("graph.")
            self.fn = import_object(path, base_dir or Path.cwd(), option)

        @property
        def where(self) -> str:
            return option

        def error(self, reason: str) -> PlacedError:
            return PlacedError(option, f"{path} {reason}")

    return OptionInputFn()


__all__ = [
    "InputFn", "Pipeline", "RunInfo", "batch_rows", "describe_element", "element_specs", "input_context",
    "input_fn_of", "make_pipeline", "split_element",
]
