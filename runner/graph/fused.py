"""The fused train op of ``session.steps_per_run: N``: up to N training steps in one session call.

Mirrors what TPUEstimator's ``iterations_per_loop`` and Keras' ``steps_per_execution`` build: a
``tf.compat.v1.while_loop`` whose body pulls the next batch, runs the builder's model and applies the
optimizer, so one ``Session.run`` trains N steps and pays the per-call cost (Python, the hooks'
``before_run``/``after_run``, the session's dispatch) once.

How it is built (:func:`build_fused_train`):

1. :func:`hookrun.runner.graph.build.build_graph` has called the builder once *outside* the loop, on
   placeholders shaped like the input's batches, and built the optimizer's update on that loss: that
   call creates every variable (the model's, the optimizer's slots, ``global_step``). Its tensors are
   never run (the placeholders are never fed), only its variables are used.
2. The loop body calls the builder again under ``tf.compat.v1.variable_scope(scope, reuse=True)``
   on the iterator's next batch, and applies the *same* optimizer object to that loss (its slots
   are found, not created), after the ``UPDATE_OPS`` that call added; each step adds one to
   ``global_step``. That call sees what the first one saw (:class:`FirstCall`): the same default
   variable scope names (``dense``, ``input_layer``, not ``dense_2``), and the first call's
   ``tf.Variable`` weights handed over in their order, so an Estimator ``model_fn`` that names no layer
   trains unchanged. A builder whose second call makes a variable the first did not make is refused
   (:class:`hookrun.common.errors.PlacedError` at ``graph.builder``). The batch comes from one of
   two bodies, chosen by the input's cardinality (:func:`endless_input`):

   - the input never ends (``tf.data.INFINITE_CARDINALITY``: ``data.epochs: null``, the default of
     a run bounded by ``stop_at_step``): the window's N batches are pulled in *one* ``get_next`` before
     the loop (``Dataset.batch(N, drop_remainder=True)`` over the batches; every batch of an endless
     input has ``batch_size`` rows) and step ``i`` trains on batch ``i`` of it. On the linear bench
     model a ``get_next`` per step cost more than the step itself: the stacked pull ran 3.1x the
     per-step pull (median of 8 interleaved rounds, raw TensorFlow, N = 50, batch 8). Batches that
     cannot stack (sparse, variable-shaped) or N of which would take more than :data:`WINDOW_BYTES`
     get a plain ``iterator.get_next()`` per step instead. The batches a lowered bound leaves unused
     (``stop_at_step``'s last window) stay in the *window carry* (:func:`window_carry`, below), so a
     resume trains on them first;
   - otherwise (finite, or unknown): ``get_next_as_optional`` and a ``tf.cond`` on its
     ``has_value``, so a window can end where the data ends (about 20 more kernels a step once
     TensorFlow lowers the cond: the optional, the cond's switches and merges, a loop variable).
3. Every op of a step runs after the previous step's update (the body runs under a control
   dependency on the step count, itself made after the previous update; ``parallel_iterations=1``),
   so N fused steps compute exactly what N separate steps compute.
4. The loop carries the step count, the sum of the loss and of each scalar metric the hooks read
   (float64), and the last step's value of each named tensor the hooks read (see
   :class:`hookrun.hooks.window.RunWindow`); whether any step's loss was non-finite is the loss sum's
   non-finiteness (a float64 sum of float32 values cannot overflow). Only what the hooks read is
   carried: every op of the body runs on every step. With a custom hook (``carry_step_read``) it also
   carries ``global_step`` as each step reads it before its update, so such a hook fetching
   ``global_step`` gets the window's last step's read (docs/engine.md, "What a hook's fetches and feeds
   give").
5. The loop runs ``min(N, bound)`` steps, ``bound`` a local variable (N at every session start)
   that ``stop_at_step`` lowers, through the step clock, so the last window ends at exactly
   ``last_step``. When the data ends inside a window, the window ends early and reports the steps
   it ran; a call that runs no step at all raises ``tf.errors.OutOfRangeError`` (the iterator's own
   error), so the run ends exactly as with one step per call. An endless input ends only when it is
   empty (a ``repeat()`` of nothing ends at its first pull): that first pull raises the iterator's
   ``OutOfRangeError`` inside the loop, so that call, too, runs no step and raises it.

The window carry (exact resume inside a stacked window). A call that ends before its window's N
batches are used (``stop_at_step``'s bound, which is the only thing that shortens a window of an endless
input) leaves them, and only them, in the carry (:class:`WindowCarry`: one local variable per component,
``[unused, *batch shape]``, and their count ``held``). The next call trains on those alone, up to its bound
(so it ends where the shortened window would have ended), and the following one pulls again. With a
``data.input_fn`` whose position is saved (:mod:`hookrun.runner.data.input_state`) the carry is saved with
each checkpoint beside the iterator's position, which is after the window's pull, so a resumed run trains
on exactly the batches, in order, of a run that never stopped. Elsewhere it is emptied at each session's
start (by its ``local_init_op``), as the input starts again: the built-in reader resumes by skipping
``global_step`` batches, and an input_fn whose position is not saved restarts from its first element. A
checkpoint holds at most N - 1 batches (:data:`WINDOW_BYTES` bounds N of them), none after a full window.

How a call decides: the loop of an endless input runs exactly ``end = min(bound, available)`` steps (or its
first pull raises), so one ``tf.cond`` before the loop, on ``bound - held < N`` (the bound is lowered, or the
carry holds batches), takes either the pull branch (a full window: every call but a run's last and its first
after a resume) or the other, which takes the window from the carry if it holds some (else pulls it),
stores its unused rest back and returns it with ``end``. The other branch makes its own handles to the
carry's variables (by name, on their device) instead of capturing them, so the pull branch switches no
variable of the carry. Cost of a full window's call on the linear bench model: 14 kernels (the count's
handle and read, a subtraction, a compare and its constant, the cond's predicate switch and pivot, four
input switches, one merge per component of the batch and one for ``end``): 350 instead of 336 at N = 5,
3,095 instead of 3,081 at N = 50 (``FULL_TRACE`` of one call); no kernel per step. Timed bare
(``make_callable``, full windows, interleaved call by call with the same graph built without the carry, on
a machine shared with other work; docs/engine.md): a median 0.95x the speed at N = 5, 0.99x at N = 50. A
first version (a second ``tf.cond`` after the loop for the store, a shape read, captured handles) cost 28.

Chosen over (b), a snapshot of the iterator before each short window's pull (saved instead of its position,
with the count of its batches used): the saved position is then not the live iterator's, which
``tf.data``'s saveable cannot express, and a resumed run would pull and discard a window. A host-side carry
(a hook feeding the window's tensors on the resumed call and fetching a store op on a short one) would
cost the graph nothing but needs a hook in every engine's hook list; not built.

Per step, on the linear bench model (N = 50, the window's tensors fetched as the standard hooks do;
kernels counted in a ``FULL_TRACE`` of one call): the endless body runs 58 kernels, the other 79.
Tried and not kept, none measured faster in interleaved rounds: dropping the ``tf.identity`` of the
last-value carries (Grappler removes them already) or the control dependencies on the update (a
control edge is no kernel); reading ``bound`` in the loop's condition instead of passing its value
through the loop (56 kernels); ``parallel_iterations`` > 1. The float64 sums stay: a float32 sum
rounds differently and can overflow.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

from hookrun.common.errors import PlacedError, SetupError
from hookrun.hooks.context import UNFED_INPUT
from hookrun.hooks.window import RunWindow
from hookrun.runner.data.element import split_element
from hookrun.runner.graph.graft import scratch_config, scratch_copy

#: Name of the local variable holding the window's length.
BOUND_NAME = "hookrun_steps_per_run"

#: Largest window of stacked batches pulled in one ``get_next`` (bytes; estimated from the element spec).
WINDOW_BYTES = 64 * 1024 * 1024

#: Bytes counted per string element in that estimate.
STRING_BYTES = 256

#: Name scope of the window carry's variables (``hookrun/window_carry/0``, one per component of a batch): their
#: checkpoint keys start with it.
CARRY_NAME = "hookrun/window_carry"

#: Checkpoint key of the window carry's N (``session.steps_per_run`` of the windows it was saved with).
CARRY_SIZE = CARRY_NAME + "/steps_per_run"

#: Graph collection of the window carry's variables (local variables, see :func:`window_carry`).
CARRY_COLLECTION = "hookrun_window_carry"

#: Graph collection of the op emptying the window carry (its variables' initializers).
CARRY_INITIALIZER = "hookrun_window_carry_initializer"


def window_bytes(tf: Any, element_spec: Any, batch_size: int, steps_per_run: int) -> int | None:
    """The estimated bytes of ``steps_per_run`` stacked batches of ``element_spec``, or None if they cannot stack.

    Batches stack (``Dataset.batch(N, drop_remainder=True)``) when every component is a dense tensor of
    known rank whose dimensions, the batch one aside, are known; an unknown batch dimension counts as
    ``batch_size`` rows. A string counts :data:`STRING_BYTES` bytes.

    Args:
        tf: the ``tensorflow`` module.
        element_spec: one batch's ``tf.data`` element spec.
        batch_size: ``data.batch_size`` (rows).
        steps_per_run: N.

    Returns:
        Bytes, or None for a sparse, ragged or variable-shaped component.
    """
    total = 0
    for spec in tf.nest.flatten(element_spec):
        if not isinstance(spec, tf.TensorSpec) or spec.shape.rank is None or spec.shape.rank == 0:
            return None
        dims = spec.shape.as_list()
        if any(d is None for d in dims[1:]):
            return None
        size = STRING_BYTES if spec.dtype == tf.string else spec.dtype.size
        rows = dims[0] if dims[0] is not None else batch_size
        count = rows
        for d in dims[1:]:
            count *= d
        total += count * size * steps_per_run
    return total


@dataclass
class WindowCarry:
    """The window carry's variables: the unused stacked batches of a shortened window, and their count.

    Attributes:
        parts: one resource variable a component of the window, in ``tf.nest.flatten`` order:
            ``[unused, *batch shape]`` of the component's dtype (``unused`` from 0, empty, to N - 1), named
            ``<CARRY_NAME>/<position>``.
        held: ``int32`` scalar ``<CARRY_NAME>/held``: ``unused``, read once a call (cheaper than a shape).
        size: ``int32`` scalar ``<CARRY_NAME>/steps_per_run``: N, never assigned; saved with the carry, so a
            resume under another N (whose saved ``prefetch`` buffer holds a window of the old N) is told apart.
        initializer: the op emptying them (also in the collection :data:`CARRY_INITIALIZER`).
    """

    parts: list[Any]
    held: Any
    size: Any
    initializer: Any


def window_carry(tf: Any, element_spec: Any, steps_per_run: int) -> WindowCarry:
    """The window carry (:class:`WindowCarry`) for windows of ``element_spec``, on the CPU beside the iterator.

    Its variables are local variables (``LOCAL_VARIABLES``, and :data:`CARRY_COLLECTION`): the default
    ``Saver`` skips them and the session's ``local_init_op`` empties them at each start, as the input starts
    again; ``hookrun.runner.data.input_state`` takes them out of ``LOCAL_VARIABLES`` and saves and restores
    them with the input's position.

    Args:
        tf: the ``tensorflow`` module.
        element_spec: the window iterator's element spec (N stacked batches: ``[N, *batch shape]`` each).
        steps_per_run: N.

    Returns:
        The carry, empty.
    """
    v1 = tf.compat.v1
    graph = v1.get_default_graph()
    parts = []
    collections = [v1.GraphKeys.LOCAL_VARIABLES, CARRY_COLLECTION]
    with tf.device("/device:CPU:0"), v1.name_scope(CARRY_NAME + "/"):
        for i, spec in enumerate(tf.nest.flatten(element_spec)):
            rest = spec.shape.as_list()[1:]
            parts.append(v1.Variable(
                tf.zeros([0, *(0 if d is None else d for d in rest)], dtype=spec.dtype), trainable=False,
                collections=collections, name=str(i), use_resource=True, shape=tf.TensorShape([None, *rest]),
            ))
        held = v1.Variable(0, dtype=tf.int32, trainable=False, collections=collections, name="held",
                           use_resource=True)
        size = v1.Variable(steps_per_run, dtype=tf.int32, trainable=False, collections=collections,
                           name=CARRY_SIZE.rsplit("/", 1)[-1], use_resource=True)
        empty = tf.group(*[v.initializer for v in [*parts, held, size]], name="initializer")
    graph.add_to_collection(CARRY_INITIALIZER, empty)
    return WindowCarry(parts=parts, held=held, size=size, initializer=empty)


def input_placeholders(tf: Any, element_spec: Any) -> Any:
    """Placeholders with the structure, dtypes and shapes of one batch of ``element_spec``.

    The builder's first call (which creates the variables) runs on these; they are never fed, so
    fetching one of its tensors fails with TensorFlow's "You must feed a value for placeholder".

    Raises:
        SetupError: a component is neither a dense, a sparse nor a ragged tensor (of known rank).
    """
    v1 = tf.compat.v1

    def one(spec: Any) -> Any:
        if isinstance(spec, tf.TensorSpec):
            return v1.placeholder(spec.dtype, spec.shape, name=UNFED_INPUT)
        if isinstance(spec, tf.SparseTensorSpec):
            return v1.sparse_placeholder(spec.dtype, spec.shape, name=UNFED_INPUT)
        if isinstance(spec, tf.RaggedTensorSpec) and spec.shape.rank is not None:
            # its flat values and one row_splits per ragged dimension (the loop pulls the real ones, one a step)
            inner = spec.shape[spec.ragged_rank + 1:].as_list()
            flat = v1.placeholder(spec.dtype, [None, *inner], name=UNFED_INPUT)
            splits = [v1.placeholder(spec.row_splits_dtype, [None], name=UNFED_INPUT) for _ in range(spec.ragged_rank)]
            return tf.RaggedTensor.from_nested_row_splits(flat, splits, validate=False)
        raise SetupError(
            f"session.steps_per_run: the input has a {type(spec).__name__} component; use steps_per_run: 1"
        )

    return tf.nest.map_structure(one, element_spec)


def cardinality(tf: Any, dataset: Any) -> int | None:
    """``dataset``'s cardinality, computed in a scratch graph and session on a copy of its ops only.

    About 10-25 ms; the caller's graph gets no op (the op-level seeds TensorFlow derives from the
    graph's op count stay as they were).

    Args:
        tf: the ``tensorflow`` module.
        dataset: a ``tf.data.Dataset`` built in the caller's (graph-mode) default graph.

    Returns:
        The count of elements, ``tf.data.INFINITE_CARDINALITY`` (-1), ``tf.data.UNKNOWN_CARDINALITY`` (-2),
        or None when it cannot be computed (a dataset reading a resource of the caller's graph).
    """
    v1 = tf.compat.v1
    try:
        # the dataset's ops only (a few dozen): the model's are neither copied nor run
        scratch, copy = scratch_copy(tf, tf.data.experimental.to_variant(dataset))
        with scratch.as_default():
            count = tf.data.experimental.from_variant(copy, dataset.element_spec).cardinality()
            with v1.Session(graph=scratch, config=scratch_config(tf)) as session:
                return int(session.run(count))
    except (tf.errors.OpError, ValueError, TypeError, KeyError):
        return None


def endless_input(tf: Any, dataset: Any) -> bool:
    """Whether ``dataset`` never ends: its cardinality is ``tf.data.INFINITE_CARDINALITY`` (``repeat()``).

    An empty input repeated forever counts as endless too (``repeat`` of an input of unknown size is
    infinite to tf.data), and ends at its first pull with ``OutOfRangeError``.
    The cardinality is computed in a scratch graph and session, on a copy of the dataset's ops only
    (about 10-25 ms): the caller's graph gets no op (the op-level seeds TensorFlow derives from the
    graph's op count stay as they were).

    Args:
        tf: the ``tensorflow`` module.
        dataset: a ``tf.data.Dataset`` built in the caller's (graph-mode) default graph.

    Returns:
        True for an infinite dataset; False for a finite one, an unknown cardinality (a ``filter`` or
        ``take_while`` after the ``repeat``), or when it cannot be computed (then the body that handles
        the data's end is the safe one).
    """
    return cardinality(tf, dataset) == tf.data.INFINITE_CARDINALITY


#: Marks the error :meth:`FirstCall.replay`'s creator raises, through the builder call's own wrapping.
_CREATES = "creates a variable inside the loop"


class FirstCall:
    """What the builder's first call (outside the loop) named and made, so its call in the loop finds the same.

    A builder written for Estimator is called once per graph: its default names (``dense``, ``dense_1``,
    ``input_layer``), its ``tf.Variable`` weights and feature columns' embeddings are made by that one
    call. The loop calls it a second time; :meth:`replay` makes that call see what the first one saw:

    - the variable scope names are counted from where the first call started (TensorFlow's
      ``_VariableScopeStore.variable_scopes_count``), so ``tf.compat.v1.layers.dense`` and
      ``feature_column.input_layer`` open ``dense``, ``input_layer`` again, not ``dense_2``,
      ``input_layer_1``; under ``reuse=True`` their ``get_variable`` calls find the first call's variables;
    - a variable made without ``get_variable`` (``tf.Variable``, a tf-keras layer's ``add_weight``) is
      handed the first call's variable made the same way, in the same order (its dtype checked);
    - the ``REGULARIZATION_LOSSES`` (made once, with the weights) are computed again on each step's
      weights;
    - the ``UPDATE_OPS``, ``SUMMARIES`` and ``LOSSES`` collections hold what they held before the first
      call, so ``tf.control_dependencies(get_collection(UPDATE_OPS))`` around a model_fn's own
      ``minimize`` (batch normalization) or ``tf.compat.v1.losses.get_total_loss()`` gets the loop call's
      ops, not the first call's, which read its never-fed placeholders.

    Use :meth:`record` around the first call, then :meth:`replay` around the second.
    """

    def __init__(self, tf: Any) -> None:
        self._tf = tf
        self.counts_before: dict[str, int] = {}
        self.direct: list[Any] = []
        self.graph: Any = None
        self.ops_before: dict[str, list[Any]] = {}

    @staticmethod
    def _scope_store() -> Any:
        from hookrun.hooks.tf_internals import private_module  # the store of variable scope names (no public API)

        return private_module("ops.variable_scope").get_variable_scope_store()

    @contextlib.contextmanager
    def record(self) -> Iterator[None]:
        """Around the first call: note the scope counts it starts from and the variables it makes directly."""
        from hookrun.hooks.tf_internals import private_module

        variable_scope = private_module("ops.variable_scope")
        self.counts_before = dict(self._scope_store().variable_scopes_count)
        self.graph = self._tf.compat.v1.get_default_graph()
        self.ops_before = {key: list(self.graph.get_collection(key)) for key in self._call_collections()}
        made: list[Any] = []

        def note(next_creator: Any, **kwargs: Any) -> Any:
            variable = next_creator(**kwargs)
            made.append(variable)
            return variable

        with self._tf.compat.v1.variable_creator_scope(note):
            yield
        by_name = {id(v) for v in variable_scope._get_default_variable_store()._vars.values()}
        self.direct = [v for v in made if id(v) not in by_name]

    @contextlib.contextmanager
    def replay(self) -> Iterator[None]:
        """Around the call in the loop (under ``reuse=True``): the first call's names and direct variables.

        Raises:
            ValueError: (through the builder call) it makes a variable the first call did not make
                (:data:`_CREATES`), or one of another dtype or shape.
        """
        store = self._scope_store()
        counts_after = dict(store.variable_scopes_count)
        store.variable_scopes_count = dict(self.counts_before)
        # the first call's update ops, summaries and losses are on its unfed placeholders: the loop's call sees
        # (and gets from tf.compat.v1.get_collection) only its own, as the first call did
        ops_after = {key: list(self.graph.get_collection(key)) for key in self.ops_before}
        for key, items in self.ops_before.items():
            self.graph.get_collection_ref(key)[:] = items
        # regularization losses are made once, when the first call creates the weights: computed again here,
        # on this step's weights (read outside the loop they would be one window-old constant, with no gradient)
        regularization = self._tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES
        first_losses = list(self.graph.get_collection(regularization))
        if first_losses:
            self.graph.get_collection_ref(regularization)[:] = self._recompute(first_losses)
        pending = list(self.direct)

        def hand_over(next_creator: Any, **kwargs: Any) -> Any:
            name = kwargs.get("name") or "unnamed"
            if not pending:
                raise ValueError(f"{_CREATES}: {name}")
            variable = pending.pop(0)
            dtype = kwargs.get("dtype")
            if dtype is not None and self._tf.as_dtype(dtype).base_dtype != variable.dtype.base_dtype:
                raise ValueError(f"{_CREATES}: {name} ({self._tf.as_dtype(dtype).name}, the first call's "
                                 f"{variable.op.name} is {variable.dtype.base_dtype.name})")
            return variable

        try:
            # also on the graph of the first call: a v1 optimizer makes its variables (Adam's beta1_power)
            # under tf.init_scope(), i.e. there, outside the loop's body graph
            with self._tf.compat.v1.variable_creator_scope(hand_over), self.graph._variable_creator_scope(hand_over):
                yield
        finally:
            store.variable_scopes_count = counts_after
            for key, items in ops_after.items():
                self.graph.get_collection_ref(key)[:] = items
            if first_losses:
                self.graph.get_collection_ref(regularization)[:] = first_losses

    def _recompute(self, losses: list[Any]) -> list[Any]:
        """Copies of ``losses`` (tensors of the first call's graph) made in the loop's body, on its variable reads.

        Each loss is a function of resource variables (a regularizer on a weight): its ops are imported
        into the current (body) graph with each ``VarHandleOp`` mapped to that variable's handle.

        Raises:
            ValueError: (through the builder call) a loss reads something other than resource variables and
                constants (a placeholder, a ref variable): it cannot be computed per step.
        """
        from hookrun.runner.graph.graft import needed_nodes

        tf = self._tf
        whole = self.graph.as_graph_def()
        by_name = {node.name: node for node in whole.node}
        handles: dict[str, Any] = {}
        pending = [loss.op.name for loss in losses]
        seen: set[str] = set()
        while pending:  # the losses' ops down to the variables' handles
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            node = by_name[name]
            if node.op == "VarHandleOp":
                handles[name] = self.graph.get_operation_by_name(name).outputs[0]
                continue
            if node.op in ("Placeholder", "PlaceholderV2", "VariableV2", "Variable", "IteratorGetNext"):
                raise ValueError(
                    f"{_CREATES}: the regularization loss {losses[0].name} reads {name} ({node.op}), so it cannot be "
                    "computed again on each step's weights"
                )
            pending += [source.lstrip("^").split(":")[0] for source in node.input]
        part = needed_nodes(whole, [loss.name for loss in losses])  # (each handle's op is mapped, never run)
        return list(tf.graph_util.import_graph_def(
            part,
            input_map={f"{name}:0": _inside(tf, handle) for name, handle in handles.items()},
            return_elements=[loss.name for loss in losses],
            name="regularization",
        ))

    def _call_collections(self) -> tuple[str, ...]:
        """The collections of ops a builder call adds on its own inputs: ``UPDATE_OPS``, ``SUMMARIES``, ``LOSSES``."""
        keys = self._tf.compat.v1.GraphKeys
        return (keys.UPDATE_OPS, keys.SUMMARIES, keys.LOSSES)


def _inside(tf: Any, tensor: Any) -> Any:
    """``tensor`` of an outer graph as the current graph sees it (a loop body's capture), else itself."""
    graph = tf.compat.v1.get_default_graph()
    return graph.capture(tensor) if tensor.graph is not graph and hasattr(graph, "capture") else tensor


@contextlib.contextmanager
def _no_new_variables(tf: Any) -> Iterator[None]:
    """A variable creator scope that refuses every variable (the loop may only reuse by ``get_variable`` name)."""

    def refuse(next_creator: Any, **kwargs: Any) -> Any:
        raise ValueError(f"{_CREATES}: {kwargs.get('name') or 'unnamed'}")

    with tf.compat.v1.variable_creator_scope(refuse):
        yield


def _handle_here(tf: Any, variable: Any) -> Any:
    """A new handle, in the current graph (a cond's branch), to resource ``variable``: its name, on its device."""
    op = variable.handle.op
    with tf.device(variable.handle.device):
        return tf.raw_ops.VarHandleOp(
            dtype=op.get_attr("dtype"), shape=op.get_attr("shape"), container=op.get_attr("container"),
            shared_name=op.get_attr("shared_name"),
        )


def _carry_initial(tf: Any, tensor: Any) -> tuple[Any, Any] | None:
    """An initial loop value and shape invariant for a last-step carry of ``tensor``; None if its rank is unknown."""
    shape = tensor.shape
    if shape.rank is None:
        return None
    dims = shape.as_list()
    if dims:
        dims[0] = None  # the last batch may be smaller
    invariant = tf.TensorShape(dims)
    initial = tf.zeros([0 if d is None else d for d in dims], dtype=tensor.dtype)
    return initial, invariant


def build_fused_train(
    tf: Any,
    *,
    steps_per_run: int,
    iterator: Any,
    step: Callable[[Any, Any], tuple[Any, dict[str, Any]]],
    named: dict[str, Any],
    global_step: Any,
    builder_name: str,
    carry: Collection[str] | None = None,
    endless: bool = False,
    windows: Callable[[int], Any] | None = None,
    carry_step_read: bool = False,
    first_call: FirstCall | None = None,
) -> tuple[Any, RunWindow]:
    """Build the while-loop of up to ``steps_per_run`` training steps; see the module docstring.

    Args:
        tf: the ``tensorflow`` module.
        steps_per_run: N (> 1).
        iterator: the training input's iterator (``get_next_as_optional`` is called in the body).
        step: ``(features, labels) -> (train_op, tensors)``: calls the builder (with reuse) and builds
            one optimizer update; ``tensors`` holds, by name, the step's counterpart of each named
            tensor of ``named`` (``loss``, metrics, ``predictions``, ``learning_rate``).
        named: the hook-visible tensors of the builder's first call (outside the loop), by name;
            their names and shapes decide the carries.
        global_step: the ``global_step`` variable.
        builder_name: ``graph.builder``, for messages.
        carry: the names the hooks read (``loss`` is always carried); None carries every named tensor.
            Every op of the loop body runs on every step, so each carried value costs a little per step.
        endless: the input never ends (its cardinality is ``tf.data.INFINITE_CARDINALITY``, see
            :func:`endless_input`): the body pulls with a plain ``get_next`` (no optional, no cond). False
            (any finite or unknown input) keeps the body that ends a window where the data ends.
        windows: with ``endless``, ``N -> iterator`` over the same input with N batches stacked per element
            (``Dataset.batch(N, drop_remainder=True)``), or ``N -> None`` when they cannot stack or would take
            more than :data:`WINDOW_BYTES`. Given an iterator, each call pulls its window in one ``get_next``
            before the loop and step ``i`` trains on batch ``i`` of it; ``iterator`` is then not pulled.
        carry_step_read: also carry ``global_step`` as the window's last step reads it, before that step's
            update (:attr:`RunWindow.step_global_step`: what a hook fetching ``global_step`` gets at that step
            under ``MonitoredTrainingSession``); one int64 scalar more per step, for custom hooks.
        first_call: what :meth:`FirstCall.record` noted of the builder's first call; the loop's call then
            finds the same names and ``tf.Variable`` weights (:meth:`FirstCall.replay`). None: only
            ``get_variable`` names the first call made are reused; any other variable is refused.

    Returns:
        ``(train, window)``: ``train`` is the ``int32`` steps run by one call (the tensor the
        session runs as the train op), ``window`` the hooks' view of the loop.

    Raises:
        PlacedError: at ``graph.builder``, when its second call (inside the loop) creates a variable.
    """
    v1 = tf.compat.v1
    graph = v1.get_default_graph()
    # made before the collections are noted: its initializer stays in TABLE_INITIALIZERS (see below)
    window_iterator = windows(steps_per_run) if endless and windows is not None else None
    window_store = (window_carry(tf, window_iterator.element_spec, steps_per_run) if window_iterator is not None
                    else None)
    variables_before = {id(v) for v in v1.global_variables() + v1.local_variables()}
    collections_before = {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}
    bound = v1.Variable(
        steps_per_run, dtype=tf.int32, trainable=False, collections=[v1.GraphKeys.LOCAL_VARIABLES], name=BOUND_NAME
    )
    bound_value = v1.placeholder(tf.int32, [], name=f"{BOUND_NAME}_value")
    set_bound = bound.assign(bound_value, read_value=False)
    limit = bound.read_value()

    names = [name for name in named if name != "global_step" and (carry is None or name in carry or name == "loss")]
    summed = [name for name in names if named[name].shape.rank == 0 and (named[name].dtype.is_floating or
                                                                          named[name].dtype.is_integer)]
    carried: list[str] = []
    initial_last: list[Any] = []
    invariants_last: list[Any] = []
    for name in names:
        made = _carry_initial(tf, named[name])
        if made is not None:
            carried.append(name)
            initial_last.append(made[0])
            invariants_last.append(made[1])

    if carry_step_read:  # global_step as the step reads it, before its own update (see RunWindow.step_global_step)
        initial_last.append(tf.zeros([], dtype=global_step.dtype.base_dtype))
        invariants_last.append(tf.TensorShape([]))

    def train_step(count: Any, batch: Any, sums: list[Any]) -> tuple[Any, list[Any], list[Any], Any]:
        """One step on ``batch``, made after ``count``: the next count, the sums, the last values, the update."""
        with tf.control_dependencies([count]):
            features, labels = split_element(batch)  # features alone: labels None (an input_fn's dataset)
            replay = first_call.replay() if first_call is not None else _no_new_variables(tf)
            step_read = [global_step.read_value()] if carry_step_read else []
            try:
                with v1.variable_scope(v1.get_variable_scope(), reuse=True), replay, \
                        tf.control_dependencies(step_read):  # the step's update comes after that read
                    train_op, tensors = step(features, labels)
            except PlacedError as err:
                if "does not exist" in str(err) or _CREATES in str(err):
                    raise PlacedError(
                        "graph.builder",
                        f"{builder_name} creates a variable when called again inside the session.steps_per_run "
                        f"loop ({err.reason}); create weights with tf.compat.v1.get_variable (reused by name), "
                        "or set session.steps_per_run: 1",
                    ) from err
                raise
        with tf.control_dependencies([train_op]):
            new_sums = [s + tf.cast(tensors[name], tf.float64) for s, name in zip(sums, summed, strict=True)]
            new_last = [tf.identity(tensors[name]) for name in carried] + [tf.identity(t) for t in step_read]
            return count + 1, new_sums, new_last, train_op

    # Every op of a step runs after the previous step's update, its variable reads included: the count
    # of an iteration is made under a control dependency on the previous update, and the batch's pull
    # and the step are made under one on that count.
    if endless:
        # Data that never ends (tf.data.INFINITE_CARDINALITY): a plain get_next, no optional, no cond. An
        # empty input repeated forever ends at the first pull: the iterator's OutOfRangeError ends the call.
        stacked = None
        end = limit
        if window_iterator is not None and window_store is not None:
            # One pull per call: the window's N batches stacked (a get_next per step cost more than the
            # step itself on small models). A call that will not use them all (its bound is lowered) or that
            # has batches a shortened window left (the carry holds some) takes the other branch: it trains on
            # the carry alone if it holds some, else on a pulled window, and leaves what it will not use in
            # the carry. The loop of an endless input runs exactly `end` steps (or its first pull raises),
            # so the carry is stored here, before the loop: a full window's call (the branch every call but
            # a run's last, and its first after a resume, takes) runs a read, a compare and a cond more.
            spec = window_iterator.element_spec
            held = window_store.held.read_value()

            def full_window() -> list[Any]:
                return [*tf.nest.flatten(window_iterator.get_next(name="window")), limit]

            def short_or_carried() -> list[Any]:
                # the carry's variables by name (their handles made here, not captured: a captured handle
                # would cost every call a Switch and its VarHandleOp, one per component of the window)
                parts, count = [_handle_here(tf, v) for v in window_store.parts], _handle_here(tf, window_store.held)
                dtypes = [v.dtype.base_dtype for v in window_store.parts]
                from_carry = held > 0
                window = tf.cond(
                    from_carry,
                    lambda: [tf.raw_ops.ReadVariableOp(resource=h, dtype=d)
                             for h, d in zip(parts, dtypes, strict=True)],
                    lambda: tf.nest.flatten(window_iterator.get_next(name="window")),
                )
                used = tf.minimum(limit, tf.where(from_carry, held, steps_per_run))
                stores = [tf.raw_ops.AssignVariableOp(resource=h, value=part[used:])
                          for h, part in zip(parts, window, strict=True)]
                stores.append(tf.raw_ops.AssignVariableOp(resource=count, value=tf.shape(window[0])[0] - used))
                with tf.control_dependencies(stores):
                    return [tf.identity(part) for part in window] + [tf.identity(used)]

            # limit - held < N: the bound is lowered (limit < N) or the carry holds batches (held > 0)
            flat = tf.cond(limit - held < steps_per_run, short_or_carried, full_window, name="window")
            stacked = tf.nest.pack_sequence_as(spec, flat[:-1])
            end = flat[-1]

        def condition(count: Any, sums: list[Any], last: list[Any]) -> Any:
            return count < end

        def body(count: Any, sums: list[Any], last: list[Any]) -> Any:
            with tf.control_dependencies([count]):
                if stacked is None:
                    batch = iterator.get_next()
                else:
                    batch = tf.nest.map_structure(lambda whole: whole[count], stacked)
            return train_step(count, batch, sums)[:3]

        initial = (tf.constant(0), [tf.constant(0.0, tf.float64) for _ in summed], initial_last)
        invariants = (tf.TensorShape([]), [tf.TensorShape([]) for _ in summed], invariants_last)
    else:
        def condition(count: Any, done: Any, sums: list[Any], last: list[Any]) -> Any:
            return tf.logical_and(count < limit, tf.logical_not(done))

        def body(count: Any, done: Any, sums: list[Any], last: list[Any]) -> Any:
            with tf.control_dependencies([count]):
                optional = iterator.get_next_as_optional()
                has_value = optional.has_value()

            def run_step() -> Any:
                with tf.control_dependencies([count]):
                    batch = optional.get_value()
                new_count, new_sums, new_last, train_op = train_step(count, batch, sums)
                with tf.control_dependencies([train_op]):
                    return new_count, tf.constant(False), new_sums, new_last

            def end_of_data() -> Any:
                return count, tf.constant(True), list(sums), list(last)

            return tf.cond(has_value, run_step, end_of_data)

        initial = (tf.constant(0), tf.constant(False), [tf.constant(0.0, tf.float64) for _ in summed], initial_last)
        invariants = (tf.TensorShape([]), tf.TensorShape([]), [tf.TensorShape([]) for _ in summed], invariants_last)
    with tf.name_scope("hookrun_steps_per_run"):
        looped = v1.while_loop(
            condition, body, initial, shape_invariants=invariants, parallel_iterations=1, name="loop"
        )
        count, sums, last = looped[0], looped[-2], looped[-1]
        if endless:  # a call runs at least one step (the bound is >= 1), or the iterator raised
            steps = tf.identity(count, name="steps")
        else:

            def no_step() -> Any:  # the data ended before this call's first step: the iterator's own error
                with tf.control_dependencies(tf.nest.flatten(iterator.get_next())):
                    return tf.identity(count)

            steps = tf.cond(count > 0, lambda: tf.identity(count), no_step, name="steps")
        with tf.control_dependencies([steps]):
            global_step_after = tf.identity(global_step.read_value(), name="global_step")
            # A float64 sum of float32 losses overflows never: it is non-finite exactly when a loss was.
            any_nonfinite = tf.logical_not(tf.math.is_finite(sums[summed.index("loss")]), name="any_nonfinite")
            window_sums = {name: tf.identity(value, name=f"sum_{i}") for i, (name, value) in
                           enumerate(zip(summed, sums, strict=True))}
            window_last = {name: tf.identity(value, name=f"last_{i}") for i, (name, value) in
                           enumerate(zip(carried, last[:len(carried)], strict=True))}
            step_global_step = tf.identity(last[-1], name="step_global_step") if carry_step_read else None

    created = [v.op.name for v in v1.global_variables() + v1.local_variables()
               if id(v) not in variables_before and v.op.name != BOUND_NAME]  # (the carry's are made before)
    if created:
        raise PlacedError(
            "graph.builder",
            f"{builder_name} created new variables when called again inside the session.steps_per_run loop "
            f"({', '.join(sorted(created)[:5])}); create weights with tf.compat.v1.get_variable so every step "
            "shares them, or set session.steps_per_run: 1",
        )
    # The body's second builder call added its UPDATE_OPS, summaries, losses... to the graph's collections
    # (control flow v2 shares them): put them back, so nothing outside the loop picks up an op inside it.
    for key, items in collections_before.items():
        current = graph.get_collection_ref(key)
        current[:] = items
    for key in graph.get_all_collection_keys():
        if key not in collections_before and key != v1.GraphKeys.LOCAL_VARIABLES:
            graph.clear_collection(key)
    local = graph.get_collection_ref(v1.GraphKeys.LOCAL_VARIABLES)
    if bound not in local:
        local.append(bound)
    window = RunWindow(
        steps_per_run=steps_per_run,
        steps=steps,
        global_step=global_step_after,
        any_nonfinite=any_nonfinite,
        sums=window_sums,
        last=window_last,
        first={name: named[name] for name in carried},
        variables=frozenset(v.op.name for v in v1.global_variables() + v1.local_variables()
                            if v.op.name != BOUND_NAME),
        step_global_step=step_global_step,
        bound=bound,
        bound_value=bound_value,
        set_bound=set_bound,
    )
    return steps, window
