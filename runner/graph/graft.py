"""Graft an evaluation built in its own graph into the training graph, reading the training weights by name.

Estimator built its evaluation as a new graph, where the ``model_fn`` called in ``eval`` mode names
everything as in a fresh graph (``dense/kernel``, ``input_layer/...``, ``beta1_power``, a ``tf.Variable``'s
``w``) and restored those names from the latest checkpoint. hookrun does the same build, then imports
the part an evaluation pass runs into the training graph (``tf.import_graph_def`` under ``evaluation/``),
each model variable mapped to the training variable of the same name: the name a checkpoint would have
matched. The pass then runs on the training session and reads the weights where they are, as cheaply as
a model built inside the training graph (``benchmarks/eval_bench.py``; ``benchmarks/RESULTS.md``), while
every ``model_fn`` that trains evaluates unchanged.

What is imported: the ops the pass needs (its reset, update, values, features, labels and predictions,
and the fresh graph's table initializers), nothing else; so an optimizer (or anything else) the model_fn
builds in ``eval`` mode is built but never imported. A variable there is:

- a *local* variable of the fresh graph (``LOCAL_VARIABLES``: the streaming metrics' totals and
  counts): the evaluation's own; its resource gets a name of its own (``shared_name``), so it never
  shares state with a training metric of the same name;
- any other variable: a training variable of the same name (and dtype and shape), or a
  :class:`hookrun.common.errors.PlacedError` naming it, the mode and the fix. The pass only reads
  those: a variable an op of the pass assigns to gets a copy of its own instead (its own
  ``shared_name``), set from the training value before every pass (``"__copies__"``), as Estimator's
  evaluation changed a restored copy, never the training weights.

Importing this module does not import TensorFlow.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hookrun.common.errors import PlacedError

#: The op types that own a variable's state (resource variables, and the older ref variables).
VARIABLE_OPS = frozenset({"VarHandleOp", "VariableV2", "Variable"})


def _node_name(name: str) -> str:
    """``"^a/b"``, ``"a/b:1"`` -> ``"a/b"``: the node an input or tensor name refers to."""
    return name.lstrip("^").split(":")[0]


def needed_nodes(graph_def: Any, targets: Iterable[str]) -> Any:
    """A copy of ``graph_def`` with only the nodes ``targets`` depend on (data and control inputs).

    Mirrors ``tf.compat.v1.graph_util.extract_sub_graph`` (deprecated; it logs a warning), keeping the
    function library.

    Args:
        graph_def: a ``GraphDef``.
        targets: node names (or tensor names, ``"x:0"``).

    Returns:
        A new ``GraphDef``, nodes in their original order.
    """
    by_name = {node.name: node for node in graph_def.node}
    keep: set[str] = set()
    pending = [_node_name(t) for t in targets]
    while pending:
        name = pending.pop()
        if name in keep:
            continue
        keep.add(name)
        pending.extend(_node_name(i) for i in by_name[name].input)
    out = type(graph_def)()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    out.node.extend(node for node in graph_def.node if node.name in keep)
    return out


def scratch_copy(tf: Any, tensor: Any) -> tuple[Any, Any]:
    """A new graph holding a copy of only the ops ``tensor`` depends on, and the copy of ``tensor`` in it.

    For one small run (a dataset's cardinality, a check of its saved state) that must add no op to the
    caller's graph, whose op count TensorFlow derives op-level seeds from.

    Args:
        tf: the ``tensorflow`` module.
        tensor: a tensor of a (graph-mode) graph, e.g. a dataset's variant.

    Returns:
        ``(scratch graph, copied tensor)``; the copied ops are named under ``copy/``.

    Raises:
        ValueError, TypeError, KeyError: the ops read something of the caller's graph that cannot be copied.
    """
    part = needed_nodes(tensor.graph.as_graph_def(), [tensor.name])
    scratch = tf.Graph()
    with scratch.as_default():
        (copy,) = tf.graph_util.import_graph_def(part, return_elements=[tensor.name], name="copy")
    return scratch, copy


def scratch_config(tf: Any) -> Any:
    """The ``ConfigProto`` of a one-off session on a :func:`scratch_copy`: Grappler off (nothing to optimize)."""
    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config


def begin_in_own_graph(tf: Any, evaluation: Any) -> tuple[dict[str, Any], set[str]]:
    """Call the evaluation hooks' ``begin()`` in the evaluation's own graph, as Estimator did; what they made.

    ``tf.estimator.Estimator.evaluate`` called ``begin()`` of the spec's ``evaluation_hooks`` with the
    evaluation graph as the default graph: a hook's ops (a ``tf.reduce_mean`` of the eval-mode
    predictions it holds, a counter variable) are made beside the model_fn's eval-mode tensors. Called
    before :func:`graft`, so those ops are grafted into the training graph with the pass (a hook's fetch of
    one runs its grafted copy).

    Args:
        tf: the ``tensorflow`` module.
        evaluation: the :class:`hookrun.runner.graph.build.EvalGraph` built in its own graph
            (``source_graph``), its hooks not yet begun.

    Returns:
        ``(elements, own)``: ``"begin:<op name>"`` -> each op the hooks made (graft targets), and the names of
        the variables they made: the evaluation's own, never mapped to a training variable (see :func:`graft`).
    """
    source = evaluation.source_graph
    if evaluation.hooks_begun or not evaluation.evaluation_hooks or source is None:
        return {}, set()
    v1 = tf.compat.v1
    with source.as_default():
        ops_before = len(source.get_operations())
        variables_before = {v.op.name for v in v1.global_variables() + v1.local_variables()}
        evaluation.begin_hooks()
        made = source.get_operations()[ops_before:]
        own = {v.op.name for v in v1.global_variables() + v1.local_variables()} - variables_before
    return {f"begin:{op.name}": op for op in made}, own


def graft(
    tf: Any,
    graph: Any,
    source: Any,
    elements: dict[str, Any],
    scope: str,
    builder_name: str,
    own_variables: Iterable[str] = (),
) -> dict[str, Any]:
    """Import what ``elements`` need of ``source`` into ``graph`` (the default graph) under ``scope``.

    Call it with ``graph`` as the default graph, inside the training graph's device function (if any):
    it is applied to the imported ops.

    Args:
        tf: the ``tensorflow`` module.
        graph: the training graph (variables of the model already built).
        source: the evaluation's own graph (the model_fn called there in ``eval`` mode).
        elements: name -> a ``tf.Tensor`` or ``tf.Operation`` of ``source`` (the pass's ops and tensors).
        scope: the import prefix (``evaluation``).
        builder_name: ``graph.builder``, for messages.
        own_variables: names of further variables of ``source`` that are the evaluation's own, as its local
            variables are (the ones its evaluation hooks make in ``begin()``, :func:`begin_in_own_graph`): each
            gets a resource of its own and joins ``graph``'s ``LOCAL_VARIABLES``, initialized with the session
            and not saved (Estimator's evaluation graph was never saved in the training checkpoints).

    Returns:
        name -> the imported element of ``graph``, for each of ``elements``; plus ``"__tables__"``: the
        imported table initializers (already added to ``graph``'s ``TABLE_INITIALIZERS`` collection,
        which the session's local init runs); ``"__copies__"``: ops setting the pass's copies of the
        training variables it changes from their training values (run them before every pass). The local
        variables the pass uses are added to ``graph``'s ``LOCAL_VARIABLES`` (and ``METRIC_VARIABLES``)
        as variables of ``graph``.

    Raises:
        PlacedError: a variable the pass reads is not a training variable (missing, or another dtype or
            shape), at ``graph.builder``, naming it.
    """
    v1 = tf.compat.v1
    with source.as_default():
        local_variables = {v.op.name: v for v in v1.local_variables()}
        own = set(own_variables)
        local_variables.update({v.op.name: v for v in v1.global_variables() if v.op.name in own})
        metric_names = {v.op.name for v in v1.get_collection(v1.GraphKeys.METRIC_VARIABLES)}
        table_inits = [op.name for op in v1.get_collection(v1.GraphKeys.TABLE_INITIALIZERS)]
        full = source.as_graph_def()
    targets = [e.name for e in elements.values()] + table_inits
    graph_def = needed_nodes(full, targets)
    kept = {node.name for node in graph_def.node}
    # The local variables the pass uses, as variables of the training graph (its LOCAL_VARIABLES, so the
    # session's local init initializes them as before): their initializer and snapshot are imported too.
    locals_used = {name: (type(v), v.to_proto()) for name, v in local_variables.items() if name in kept}
    for _, proto in locals_used.values():
        targets.extend(n for n in (proto.initializer_name, proto.snapshot_name, proto.initial_value_name) if n)
    graph_def = needed_nodes(full, targets)
    input_map: dict[str, Any] = {}
    for node in graph_def.node:
        if node.op not in VARIABLE_OPS:
            continue
        if node.name in local_variables:  # the evaluation's own (metric) state: a resource of its own
            node.attr["shared_name"].s = f"{scope}/{node.name}".encode()
            continue
        input_map[f"{node.name}:0"] = _training_variable(tf, graph, source, node, builder_name)
    # A training variable the pass changes (a counter in eval_metric_ops, say) gets a copy of its own, set
    # from the training value before every pass: Estimator's evaluation changed a restored copy, never the model.
    copies = {}
    for name in _written(graph_def, {key.split(":")[0] for key in input_map}):
        copies[name] = input_map.pop(f"{name}:0")
        next(n for n in graph_def.node if n.name == name).attr["shared_name"].s = f"{scope}/{name}".encode()
    names = list(elements)
    imported = tf.import_graph_def(
        graph_def,
        input_map=input_map,
        return_elements=[elements[n].name for n in names] + table_inits,
        name=scope,
    )
    result = dict(zip(names, imported[: len(names)], strict=True))
    tables = list(imported[len(names):])
    for op in tables:
        graph.add_to_collection(v1.GraphKeys.TABLE_INITIALIZERS, op)
    result["__tables__"] = tables
    result["__copies__"] = [
        _copy_from(tf, graph.get_operation_by_name(f"{scope}/{name}").outputs[0], training)
        for name, training in copies.items()
    ]
    for name, (kind, proto) in locals_used.items():
        variable = kind.from_proto(proto, import_scope=scope)
        graph.add_to_collection(v1.GraphKeys.LOCAL_VARIABLES, variable)
        if name in metric_names:
            graph.add_to_collection(v1.GraphKeys.METRIC_VARIABLES, variable)
    return result


#: Op types that change a variable given as their first input (resource handle or ref).
_WRITES = ("Assign", "Scatter", "ResourceScatter", "ResourceApply", "Apply", "ResourceSparseApply", "SparseApply")


def _written(graph_def: Any, mapped: set[str]) -> list[str]:
    """The mapped (training) variables an op of the pass assigns to or updates, in graph order."""
    written: list[str] = []
    for node in graph_def.node:
        if node.op.startswith(_WRITES) and node.input:
            target = _node_name(node.input[0])
            if target in mapped and target not in written:
                written.append(target)
    return written


def _copy_from(tf: Any, copy: Any, training: Any) -> Any:
    """An op setting the evaluation's copy of a variable (handle or ref) to the training variable's value."""
    if copy.dtype == tf.resource:
        dtype = training.op.get_attr("dtype")
        value = tf.raw_ops.ReadVariableOp(resource=training, dtype=dtype)
        return tf.raw_ops.AssignVariableOp(resource=copy, value=value)
    return tf.compat.v1.assign(copy, training, validate_shape=False).op


def _training_variable(tf: Any, graph: Any, source: Any, node: Any, builder_name: str) -> Any:
    """The training graph's variable tensor for the evaluation's variable ``node``, checked."""
    name = node.name
    fix = (
        f"create {name!r} in train mode too, with the same name (evaluation reads the training weights by name, "
        "as Estimator restored them from the checkpoint)"
    )
    try:
        target = graph.get_operation_by_name(name)
    except KeyError:
        target = None
    if target is None or target.type not in VARIABLE_OPS:
        raise PlacedError(
            "graph.builder",
            f"{builder_name} in eval mode reads the variable {name!r}, which its train-mode call does not create; "
            + fix,
        )
    mine = source.get_operation_by_name(name)
    theirs_dtype, mine_dtype = _variable_dtype(tf, target), _variable_dtype(tf, mine)
    theirs_shape, mine_shape = _variable_shape(tf, target), _variable_shape(tf, mine)
    if target.type != mine.type or theirs_dtype != mine_dtype or theirs_shape != mine_shape:
        raise PlacedError(
            "graph.builder",
            f"{builder_name} makes the variable {name!r} as {mine.type} {mine_dtype} {mine_shape} in eval mode "
            f"but as {target.type} {theirs_dtype} {theirs_shape} in train mode; make it alike in both modes",
        )
    return target.outputs[0]


def _variable_dtype(tf: Any, op: Any) -> str:
    """``float32``: a variable op's value dtype."""
    return tf.as_dtype(op.get_attr("dtype")).base_dtype.name


def _variable_shape(tf: Any, op: Any) -> list[int | None] | None:
    """A variable op's shape as a list (None for an unknown rank)."""
    shape = tf.TensorShape(op.get_attr("shape"))
    return shape.as_list() if shape.rank is not None else None
