"""Synchronous data-parallel towers in one graph: ``device: [gpu:0, gpu:1, ...]``.

The pattern of TensorFlow's ``cifar10_multi_gpu_train`` and of ``tf.contrib.estimator.replicate_model_fn``
(TensorFlow r1.15, ``tensorflow/contrib/estimator/python/estimator/replicate_model_fn.py``) with its
``TowerOptimizer``:

- the global batch is split along dimension 0 into K equal parts on the host (``split_inputs``);
- the builder (or model_fn) is called once per tower under ``tf.device`` (that tower's device; variable ops
  on the variable device), ``variable_scope(reuse=i > 0)``, and a ``tower_i`` name scope for towers
  1..K-1; the first tower keeps the plain names (as ``replicate_model_fn`` did), so a hook or a user's
  tensor name such as ``dense/BiasAdd:0`` names the first tower's tensor;
- each tower's gradients are computed on its own device, averaged (``(g_0 + ... + g_K-1) / K``, which for a
  mean loss is the gradient of the mean over the global batch), and applied once, so the variables, the
  optimizer's slots and ``global_step`` are those of one device: a checkpoint is a single-device checkpoint;
- the loss hooks see is the mean of the towers' losses; metrics are averaged the same way; ``predictions``
  are concatenated in batch order;
- only the first tower's ``UPDATE_OPS`` (batch-norm moving averages) and summaries are kept: the other
  towers' are left out of their collections (and never run);
- hookrun's optimizer may come wrapped (``session.mixed_precision``'s loss-scale optimizer, a cluster's
  ``SyncReplicasOptimizer``): each tower calls its ``compute_gradients``, the one ``apply_gradients`` gets
  the average, so the wrapper's state (loss scale, accumulators) exists and updates once;
- on each worker of a ps cluster a ``replica_device_setter`` around the graph completes every device:
  variables on the parameter servers, each tower on ``/job:worker/task:N`` + its device; the average is then
  taken on the worker (``local_average``), not on the variables' ps.

A model_fn that builds its own ``train_op`` with ``optimizer.minimize`` (a ``tf.compat.v1.train``
optimizer) needs no change: while the towers are built, ``Optimizer.compute_gradients`` and
``apply_gradients`` are intercepted as ``TowerOptimizer`` did it, without the user wrapping anything:
every tower's gradients are gathered, the earlier towers' ``apply_gradients`` return a no-op, and the
last tower's call applies the average, in the first tower's variable and name scope (plain names).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from hookrun.common.errors import PlacedError

#: Variable-creating op types whose device is the variable device (``replicate_model_fn``'s ``ps_ops``).
VARIABLE_OPS = frozenset({"Variable", "VariableV2", "VarHandleOp", "AutoReloadVariable"})
#: The host, where every variable of a K > 1 tower graph lives.
VARIABLE_DEVICE = "/device:CPU:0"


def variable_device(towers: Sequence[str]) -> str:
    """Where the variables go: the host CPU (``/device:CPU:0``) for K > 1, the one tower's device for K = 1.

    Follows ``replicate_model_fn``'s ``SHARED_LOCAL_PARAMETER_SERVER`` mode: one GPU keeps its variables, more
    GPUs share one copy on the CPU, and each tower reads them from there.
    """
    return towers[0] if len(towers) == 1 else VARIABLE_DEVICE


def tower_device_function(device: str, variables_on: str) -> Callable[[Any], str]:
    """A ``tf.device`` function: variable ops on ``variables_on``, every other op on ``device``.

    Mirrors ``replicate_model_fn._local_device_setter``: a device set by a ``tf.device`` inside this one (the
    model's own code) is kept; TensorFlow applies the enclosing ones (hookrun's single-device placement) after
    this function, so they do not move the tower's ops.

    Args:
        device: the tower's device, e.g. ``/device:GPU:1``.
        variables_on: the variable device.

    Returns:
        ``op -> device string``.
    """

    def choose(op: Any) -> str:
        node_def = getattr(op, "node_def", op)
        if node_def.device:  # a tf.device inside this one (the model's own, or the averaged update's) wins
            return node_def.device
        return variables_on if node_def.op in VARIABLE_OPS else device

    return choose


def split_batch(tf: Any, structure: Any, count: int, where: str) -> list[Any]:
    """Split a batch (a tensor, a ``SparseTensor``, a ``RaggedTensor``, or nested dicts/tuples of them) into K parts.

    As ``replicate_model_fn._split_batch``: along dimension 0 (``tf.split``; ``tf.sparse.split`` for sparse
    tensors; a ragged tensor of B rows by row slices ``ragged[i*B/K:(i+1)*B/K]``, each part with its rows'
    values), on the host, under the name scope ``split_inputs``.

    Args:
        tf: the ``tensorflow`` module.
        structure: the batch; None stays None in every part.
        count: K, the number of towers.
        where: an argument name for messages (``features``, ``labels``).

    Returns:
        ``count`` structures like ``structure``, each with 1/K of the rows.

    Raises:
        PlacedError: at ``data.batch_size``, a tensor whose static first dimension does not divide by K.
            (A batch whose rows are only known when it runs is checked by ``tf.split`` then: TensorFlow's
            "Number of ways to split should evenly divide the split dimension"; a ragged one's row lengths too.)
    """
    if structure is None:
        return [None] * count

    def uneven(rows: Any) -> PlacedError:
        return PlacedError(
            "data.batch_size",
            f"the {where} batch has {rows} rows, which do not split evenly between {count} towers; make the "
            f"global batch (data.batch_size, or the batches a data.input_fn returns) a multiple of {count}",
        )

    def split(tensor: Any) -> list[Any]:
        if isinstance(tensor, tf.SparseTensor):
            from hookrun.runner.graph.builders.heads import _without_deprecation_notice_of

            # TensorFlow's own tf.sparse.split calls its v1 with `split_dim` and logs a three-line notice about
            # it: the call is hookrun's, the user cannot act on it
            with _without_deprecation_notice_of("calling sparse_split"):
                return tf.sparse.split(sp_input=tensor, num_split=count, axis=0)
        if isinstance(tensor, tf.RaggedTensor):  # a `varlen: ragged` feature: K equal ranges of its rows
            return split_ragged(tensor)
        tensor = tf.convert_to_tensor(tensor)
        rows = tensor.shape[0] if tensor.shape.rank else None
        if rows is not None and rows % count:
            raise uneven(rows)
        return tf.split(tensor, count, axis=0)

    def split_ragged(tensor: Any) -> list[Any]:
        # by rows: a batch of B rows into K slices of B/K rows (``ragged[i*B/K:(i+1)*B/K]``), each with its rows'
        # values; B known only when it runs is checked then, as tf.split checks a dense batch
        rows = tensor.shape[0]
        if rows is not None and rows % count:
            raise uneven(rows)
        if rows is not None:
            size: Any = rows // count
        else:  # tf.split of the row lengths checks them as a dense batch's rows ("Number of ways to split ...")
            size = tf.size(tf.split(tensor.row_lengths(), count, axis=0)[0])
        return [tensor[i * size:(i + 1) * size] for i in range(count)]

    parts = [split(tensor) for tensor in tf.nest.flatten(structure, expand_composites=False)]
    return [tf.nest.pack_sequence_as(structure, [p[i] for p in parts]) for i in range(count)]


def divisible_batches(tf: Any, dataset: Any, plan: Any) -> Any:
    """``dataset`` without the batches whose rows do not split evenly between ``plan.towers`` (as ``drop_remainder``).

    hookrun's own pipelines end an epoch with a smaller batch; under K towers a batch of ``r`` rows with
    ``r % K != 0`` is skipped (one device would train on it), one of ``r % K == 0`` is split as any other.
    One device (``plan.towers`` empty) gets ``dataset`` unchanged.

    Args:
        tf: the ``tensorflow`` module.
        dataset: ``(features, labels)`` batches; ``labels`` a dense tensor ``[rows, ...]``.
        plan: the :class:`~hookrun.runner.graph.device.DevicePlan`.

    Returns:
        The dataset, filtered when there are towers.
    """
    count = len(plan.towers)
    if count <= 1:
        return dataset
    return dataset.filter(lambda features, labels: tf.equal(tf.shape(labels)[0] % count, 0))


@dataclasses.dataclass
class _Gathered:
    """Gradients gathered from the towers' optimizer calls (``TowerOptimizer._PerGraphState``)."""

    count: int
    variables_on: str = VARIABLE_DEVICE
    average_on: str | None = None
    tower: int = 0
    first_scopes: tuple[Any, str] | None = None
    calls: dict[int, list[list[tuple[Any, Any]]]] = dataclasses.field(default_factory=dict)

    def gather(self, grads_and_vars: list[tuple[Any, Any]]) -> None:
        """Record one ``apply_gradients`` call of the current tower."""
        self.calls.setdefault(self.tower, []).append(grads_and_vars)

    def latest_from_all(self) -> list[tuple[Any, Any]]:
        """The last call's gradients from every tower (the towers make the same calls in the same order)."""
        index = len(self.calls[self.tower]) - 1
        gathered = []
        for tower in range(self.count):
            calls = self.calls.get(tower, [])
            if len(calls) <= index:
                raise PlacedError(
                    "graph.builder",
                    f"the model_fn applied gradients {index + 1} time(s) in tower {self.count - 1} but "
                    f"{len(calls)} in tower {tower}; under towers every call must build the same optimizer steps",
                )
            gathered.extend(calls[index])
        return gathered


def average_gradients(
    tf: Any, grads_and_vars: list[tuple[Any, Any]], count: int, on: str | None = None
) -> list[tuple[Any, Any]]:
    """Average each variable's gradients over the towers: ``add_n(g_0 .. g_K-1) / K`` on the variable's device.

    Sparse gradients (``IndexedSlices``, e.g. from an embedding lookup) are concatenated with their values
    divided by K, as ``replicate_model_fn._compute_sum_on_device`` concatenated them.

    Args:
        tf: the ``tensorflow`` module.
        grads_and_vars: ``(gradient, variable)`` pairs of every tower; a gradient of None is skipped.
        count: K.
        on: the device to average on instead of each variable's. On a ps cluster the variables live on the
            parameter servers; ``on`` (this worker's variable device, e.g. ``/device:CPU:0``, which the
            cluster's ``replica_device_setter`` completes with this worker's job and task) keeps the K
            gradients on the worker, so one averaged gradient per variable crosses the network (the
            ``cifar10_multi_gpu_train`` pattern on each worker).

    Returns:
        One ``(gradient, variable)`` pair per variable, in first-seen order.
    """
    by_variable: dict[Any, list[Any]] = {}
    order: list[Any] = []
    for grad, var in grads_and_vars:
        if grad is None:
            continue
        key = var.ref() if hasattr(var, "ref") else var
        if key not in by_variable:
            by_variable[key] = []
            order.append((key, var))
        by_variable[key].append(grad)
    averaged = []
    with tf.name_scope("gradient_aggregating"):
        for key, var in order:
            grads = by_variable[key]
            with tf.device(on if on is not None else var.device):
                if count == 1 and len(grads) == 1:
                    averaged.append((grads[0], var))
                elif isinstance(grads[0], tf.IndexedSlices):
                    values = tf.concat([g.values for g in grads], axis=0) / float(count)
                    indices = tf.concat([g.indices for g in grads], axis=0)
                    averaged.append((tf.IndexedSlices(values, indices, grads[0].dense_shape), var))
                else:
                    averaged.append((tf.math.add_n(grads) / float(count), var))
    return averaged


@contextlib.contextmanager
def _intercepted_optimizers(tf: Any, state: _Gathered) -> Iterator[None]:
    """While the towers are built: gather ``tf.compat.v1.train.Optimizer.apply_gradients`` calls per tower.

    ``TowerOptimizer.apply_gradients``: the earlier towers' calls return a no-op (after their gradients);
    the last tower's call applies the average of every tower's gradients for that call, in the first
    tower's variable and name scope, with the caller's ``global_step`` (incremented once).
    """
    v1 = tf.compat.v1
    base = v1.train.Optimizer
    original = base.apply_gradients

    def apply_gradients(self: Any, grads_and_vars: Any, global_step: Any = None, name: Any = None) -> Any:
        pairs = list(grads_and_vars)
        state.gather(pairs)
        if state.tower < state.count - 1:
            with tf.control_dependencies([g for g, _ in pairs if g is not None]):
                return tf.no_op(name="train_op_placeholder")
        var_scope, name_scope = state.first_scopes or (None, "")
        graph = v1.get_default_graph()
        scope = v1.variable_scope(var_scope) if var_scope is not None else contextlib.nullcontext()
        # on the variables' device: the update ops colocate with the variables (and their constants with them)
        with scope, graph.name_scope(f"{name_scope}/" if name_scope else ""), v1.device(state.variables_on):
            averaged = average_gradients(tf, state.latest_from_all(), state.count, state.average_on)
            return original(self, averaged, global_step=global_step, name=name)

    base.apply_gradients = apply_gradients
    try:
        yield
    finally:
        base.apply_gradients = original


@dataclasses.dataclass
class TowerResult:
    """What :func:`build_towers` built.

    Attributes:
        spec: the first tower's spec with ``loss`` the mean of the towers' losses, each scalar metric the
            towers' mean, ``predictions`` concatenated, and ``train_op`` the one averaged update (None when
            the builder returned none and no ``optimizer`` was given).
        specs: every tower's own spec, in tower order.
        learning_rate: the learning rate tensor hookrun's optimizer used, or None.
    """

    spec: Any
    specs: list[Any]
    learning_rate: Any = None


def _mean(tf: Any, tensors: list[Any]) -> Any:
    """The towers' mean of one scalar, named as the first tower's tensor without ``tower_0/``.

    So the name a hook fetches in a one-device graph (``loss:0`` from a builder's ``tf.identity(...,
    name="loss")``) names the mean here; a name taken outside the towers gets TensorFlow's ``_1`` suffix.
    """
    name = tensors[0].op.name.split("/", 1)[1] if tensors[0].op.name.startswith("tower_0/") else None
    graph = tf.compat.v1.get_default_graph()
    with graph.name_scope(None):  # the root: the first tower's name without its prefix
        total = tf.math.add_n(tensors) if len(tensors) > 1 else tensors[0]
        return tf.math.multiply(total, 1.0 / len(tensors), name=name or "tower_mean")


def build_towers(
    tf: Any,
    towers: Sequence[str],
    features: Any,
    labels: Any,
    call: Callable[[Any, Any], Any],
    optimizer: Callable[[], tuple[Any, Any]] | None = None,
    global_step: Any = None,
    control: Sequence[Any] = (),
    local_average: bool = False,
) -> TowerResult:
    """Build K towers of one model on ``towers`` and one averaged update.

    Args:
        tf: the ``tensorflow`` module.
        towers: the TensorFlow device of each tower (``DevicePlan.towers``).
        features: the global batch's features (tensor, sparse tensor or dict of them), rows = global batch.
        labels: its labels (same rows), or None.
        call: ``(features, labels) -> GraphSpec``: calls the builder once (hookrun's ``_call_builder``).
        optimizer: ``() -> (tf.compat.v1.train.Optimizer, learning rate)``, called (once, after the towers)
            when the builder returns no ``train_op``: hookrun then builds the update (``compute_gradients``
            per tower, :func:`average_gradients`, one ``apply_gradients`` after the first tower's
            ``UPDATE_OPS``). A builder that returns its own ``train_op`` has its optimizer calls intercepted
            (see the module docstring). None: no update is built for a builder without ``train_op``.
        global_step: the ``global_step`` variable the update increments (once per step).
        control: ops the update runs after (hookrun's ``global_step`` reads).
        local_average: average the gradients on the variable device of this process (``variables_on``), not
            on each variable's own device: on each worker of a ps cluster, where a ``replica_device_setter``
            around the graph puts the variables on the parameter servers and every other op (each tower's,
            the averaging) on this worker; the one ``apply_gradients`` (or ``SyncReplicasOptimizer``'s
            accumulators) then runs where the variables are.

    Returns:
        The towers' :class:`TowerResult`.

    Raises:
        PlacedError: the batch does not split evenly (:func:`split_batch`), the builder returns a
            ``train_op`` in some towers only, or its ``train_op`` was not built by a ``tf.compat.v1.train``
            optimizer's ``apply_gradients`` (``minimize``), so the towers' updates cannot be averaged.
    """
    v1 = tf.compat.v1
    count = len(towers)
    variables_on = variable_device(towers)
    with tf.device(VARIABLE_DEVICE), tf.name_scope("split_inputs"):
        feature_parts = split_batch(tf, features, count, "features")
        label_parts = split_batch(tf, labels, count, "labels")
    graph = v1.get_default_graph()
    update_key, summary_key = v1.GraphKeys.UPDATE_OPS, v1.GraphKeys.SUMMARIES
    # the averaged update is applied in the scopes the towers were opened in (plain names: ``beta1_power``)
    average_on = variables_on if local_average else None
    state = _Gathered(count, variables_on, average_on, first_scopes=(v1.get_variable_scope(), graph.get_name_scope()))
    specs: list[Any] = []
    first_variables = 0
    first_updates: list[Any] = []
    with _intercepted_optimizers(tf, state):
        for i, device in enumerate(towers):
            state.tower = i
            updates = v1.get_collection_ref(update_key)
            summaries = v1.get_collection_ref(summary_key)
            kept_updates, kept_summaries = list(updates), list(summaries)
            if i > 0:  # the tower sees the first tower's UPDATE_OPS (a model_fn's minimize waits on those)
                updates[:] = kept_updates
            scope = v1.variable_scope(v1.get_variable_scope(), reuse=True) if i else contextlib.nullcontext()
            with scope, graph.name_scope(f"tower_{i}"), v1.device(tower_device_function(device, variables_on)):
                spec = call(feature_parts[i], label_parts[i])
                specs.append(spec)
                if i == 0:
                    first_updates = v1.get_collection(update_key)[len(kept_updates):]
                    first_variables = len(v1.trainable_variables())
            if i > 0:  # the other towers' batch-norm updates and summaries are left out (never run)
                updates[:] = kept_updates
                summaries[:] = kept_summaries
    if len(v1.trainable_variables()) > first_variables:
        made = [v.op.name for v in v1.trainable_variables()[first_variables:]]
        raise PlacedError(
            "graph.builder",
            f"makes new trainable variables in tower 1 ({', '.join(made[:3])}): towers share one set of weights, "
            "found by name; create them with tf.compat.v1.get_variable or tf.compat.v1.layers (not tf.Variable)",
        )
    own = [spec.train_op is not None for spec in specs]
    if any(own) and not all(own):
        raise PlacedError("graph.builder", "returns a train_op in some towers only; return it in every call")
    first = specs[0]
    learning_rate = None
    with tf.device(variables_on):
        mean_loss = _mean(tf, [s.loss for s in specs])
        metrics = {}
        for name, tensor in first.metrics.items():
            scalar = getattr(tensor, "shape", None) is not None and tensor.shape.rank == 0
            if scalar and all(name in s.metrics for s in specs):
                tensor = _mean(tf, [s.metrics[name] for s in specs])
            metrics[name] = tensor
        predictions = first.predictions
        if count > 1 and all(isinstance(s.predictions, tf.Tensor) for s in specs):
            predictions = tf.concat([s.predictions for s in specs], axis=0)
    if all(own):
        if not state.calls.get(count - 1):
            raise PlacedError(
                "graph.builder",
                "returns a train_op that no tf.compat.v1.train optimizer's minimize() or apply_gradients() built, so "
                "the towers' updates cannot be averaged; build it with a tf.compat.v1.train optimizer, or return no "
                "train_op (hookrun builds it from graph.optimizer), or use one device",
            )
        train_op = specs[-1].train_op
    elif optimizer is not None:
        made, learning_rate = optimizer()
        grads = []
        for i, spec in enumerate(specs):
            with v1.device(tower_device_function(towers[i], variables_on)), tf.name_scope(f"tower_{i}/gradients"):
                grads.extend(made.compute_gradients(spec.loss))
        averaged = average_gradients(tf, grads, count, average_on)
        with tf.control_dependencies([*control, *first_updates]):
            train_op = made.apply_gradients(averaged, global_step=global_step)
    else:
        train_op = None
    merged = dataclasses.replace(first, loss=mean_loss, metrics=metrics, predictions=predictions, train_op=train_op)
    return TowerResult(spec=merged, specs=specs, learning_rate=learning_rate)
