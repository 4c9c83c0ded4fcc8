"""One evaluation pass with a model_fn's ``EstimatorSpec.evaluation_hooks`` around it.

``tf.estimator.Estimator.evaluate`` ran its evaluation as a ``MonitoredSession`` over the
``eval`` graph with the spec's ``evaluation_hooks``: ``begin``, the session created
(``after_create_session``), ``update_op`` run until the data ended or a hook requested a stop, each
run wrapped in the hooks' ``before_run``/``after_run`` (their fetches and feeds merged into it), then
``end`` before the final metric values were read (``FinalOpsHook`` came last). hookrun's evaluation
part lives in the training graph and runs on the training session (the ``evaluation`` hook), or on
a session restored by ``hookrun evaluate``, so no ``MonitoredSession`` is created for it; this
module makes the same calls on that session:

1. ``begin`` on every hook, once, before the graph is finalized (:func:`begin_hooks`; Estimator
   built a fresh graph per evaluation, hookrun builds the evaluation part once);
2. per pass: ``reset_op`` (the iterator and the streaming metrics, as a new session's local init),
   then ``after_create_session(session, coord)`` with a fresh ``Coordinator``;
3. ``update_op`` once per batch (``num_batches``), each run given to the hooks as
   ``tf.compat.v1.train.MonitoredSession``'s ``_HookedSession`` gives it (fetches, ``feed_dict``
   conflicts and ``RunOptions`` merged the same way); a hook's ``run_context.request_stop()`` (or
   ``coord.request_stop()``) ends the pass after that batch, as it ended Estimator's loop;
4. ``end(session)`` on every hook, then the metric values are read.

This module imports TensorFlow; import it only from code that already has.
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Any

import tensorflow as tf

from hookrun.hooks.tf_internals import graph_element
from hookrun.runner.session.hooked_run import run_merged


def begin_hooks(evaluation: Any) -> None:
    """Call ``begin()`` on ``evaluation.evaluation_hooks``, once per evaluation graph, before it is finalized.

    The default graph is then the graph the model_fn was called in (``eval`` mode), as in Estimator's
    ``evaluate``; grafted into training, :func:`hookrun.runner.graph.graft.begin_in_own_graph` calls this
    before the graft, so what the hooks make there is grafted with the pass.

    Args:
        evaluation: an :class:`hookrun.runner.graph.build.EvalGraph`; its ``hooks_begun`` is set.
    """
    if evaluation.hooks_begun:
        return
    evaluation.hooks_begun = True
    graph = getattr(evaluation, "source_graph", None)
    with graph.as_default() if graph is not None else contextlib.nullcontext():  # Estimator's eval graph
        for hook in evaluation.evaluation_hooks:
            hook.begin()


def _hooked_run(session: Any, hooks: list[Any], fetches: Any, translate: Any = None) -> tuple[Any, bool]:
    """Run ``fetches`` with ``hooks``' ``before_run``/``after_run`` around it; mirrors ``_HookedSession.run``.

    The hooks' requests are merged by :func:`hookrun.runner.session.hooked_run.run_merged`, each
    ``before_run`` called as its request is merged (as ``_HookedSession`` calls them). ``translate``
    (the evaluation grafted into the training graph): maps the hooks' tensors of the evaluation's own
    graph to the grafted ones (:func:`grafted_element`).

    Returns:
        ``(the caller's results, whether a hook requested a stop)``.

    Raises:
        RuntimeError: two hooks feed the same tensor.
    """
    run_context = tf.compat.v1.train.SessionRunContext(
        original_args=tf.compat.v1.train.SessionRunArgs(fetches), session=session
    )
    requests = (hook.before_run(run_context) for hook in hooks)
    if translate is not None:
        requests = (translate_request(request, translate) for request in requests)
    result = run_merged(session, hooks, run_context, requests, fetches)
    return result, run_context.stop_requested


def evaluation_pass(session: Any, evaluation: Any) -> dict[str, float]:
    """Evaluate once over the whole evaluation input, with the evaluation hooks around it (see the module).

    Without evaluation hooks this is ``reset_op``, ``update_op`` ``num_batches`` times (or, for a
    ``data.eval_input_fn``, until its dataset ends), then the values.

    Args:
        session: a ``tf.compat.v1.Session`` on the evaluation graph (the raw one: no training hook sees
            these runs).
        evaluation: an :class:`hookrun.runner.graph.build.EvalGraph`.

    Returns:
        ``{"val_loss": ..., "val_<metric>": ...}`` over the batches run.

    Raises:
        Whatever a hook raises, and ``RuntimeError`` when two hooks feed the same tensor.
    """
    hooks = list(evaluation.evaluation_hooks)
    begin_hooks(evaluation)  # a no-op once the evaluation hook (or hookrun evaluate) called it
    session.run(evaluation.reset_op)
    coord = tf.compat.v1.train.Coordinator()
    for hook in hooks:
        hook.after_create_session(session, coord)
    # a data.eval_input_fn's dataset (num_batches None) is read to its end, as Estimator's evaluate() did
    batches = range(evaluation.num_batches) if evaluation.num_batches is not None else itertools.count()
    for _ in batches:
        if coord.should_stop():
            break
        try:
            if not hooks:
                session.run(evaluation.update_op)
                continue
            _, stop = _hooked_run(session, hooks, evaluation.update_op, _translator(evaluation))
        except tf.errors.OutOfRangeError:
            if evaluation.num_batches is not None:
                raise
            break  # its end: that batch's after_run does not run, `end` does (as in training)
        if stop:
            break
    for hook in hooks:
        hook.end(session)
    names = list(evaluation.values)
    return {name: float(v) for name, v in zip(names, session.run([evaluation.values[n] for n in names]), strict=True)}


def grafted_element(evaluation: Any, element: Any) -> Any:
    """The training graph's counterpart of a tensor or op of the evaluation's own graph; others as given.

    The model_fn's ``evaluation_hooks`` hold tensors of the graph it was called in (``eval`` mode); once
    that evaluation is grafted into the training graph (:func:`hookrun.runner.graph.build.graft_evaluation`)
    the pass runs there, where the same op is ``evaluation/<name>`` (or, for a training weight's read,
    ``<name>`` itself).

    Raises:
        KeyError: the element was not grafted and training has no op of that name (the hook fetches
            something the pass does not need, e.g. an optimizer built in eval mode).
    """
    if isinstance(element, str):  # a name: of the graph the model_fn was called in, as in Estimator's eval graph
        try:
            element = evaluation.source_graph.as_graph_element(element)
        except (KeyError, ValueError):
            return element
    if isinstance(element, tf.Variable):  # a variable (or assign_add's result): its value, as a fetch reads it
        read = graph_element(element)
        element = read if read is not None else element
    if not isinstance(element, (tf.Tensor, tf.Operation)) or element.graph is not evaluation.source_graph:
        return element
    graph = evaluation.grafted_into
    for name in (f"evaluation/{element.name}", element.name):
        try:
            return graph.as_graph_element(name)
        except (KeyError, ValueError):
            continue
    raise KeyError(
        f"an evaluation hook fetches {element.name!r}, which the evaluation pass does not run; fetch the eval-mode "
        "loss, predictions, metrics or what they are computed from"
    )


def translate_request(request: Any, translate: Any) -> Any:
    """A hook's ``SessionRunArgs`` with its fetches and ``feed_dict`` keys passed through ``translate``."""
    if request is None:
        return None
    fetches = tf.nest.map_structure(translate, request.fetches) if request.fetches is not None else None
    feeds = {translate(k): v for k, v in request.feed_dict.items()} if request.feed_dict else request.feed_dict
    return tf.compat.v1.train.SessionRunArgs(fetches, feed_dict=feeds, options=request.options)


def _translator(evaluation: Any) -> Any:
    """``grafted_element`` bound to ``evaluation``, or None when it runs in its own graph (``hookrun evaluate``)."""
    if getattr(evaluation, "grafted_into", None) is None:
        return None
    return lambda element: grafted_element(evaluation, element)
