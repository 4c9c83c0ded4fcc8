"""The input pipeline's position saved with each checkpoint, so a resumed run continues where it stopped.

For a ``data.input_fn`` pipeline, in graph mode, as ``tf.data`` saves an iterator
(``tf.compat.v1.data.experimental.make_saveable_from_iterator``; Estimator's
``tf.data.experimental.CheckpointInputPipelineHook``):

- the iterator's state (``SerializeIterator``) is one more entry of the run's checkpoint, key
  :data:`STATE_KEY`, written by the run's ``Saver`` with every checkpoint;
- a restore first runs the iterator's initializer, then ``DeserializeIterator`` (TensorFlow restores an
  iterator only into an initialized one). So the initializer leaves the session's ``local_init_op`` (which
  ``SessionManager`` runs *after* the restore and would start the pipeline again); a session that restores
  no checkpoint starts it through the ``Scaffold``'s ``init_fn``;
- a checkpoint written without that entry (an older hookrun, ``data.save_input_state: false``) still
  restores: the saver restores the variables alone and starts the input from its first element;
- under ``session.steps_per_run > 1`` with stacked windows the position is after a window's pull, so the
  window carry (:func:`hookrun.runner.graph.fused.window_carry`: the batches a ``stop_at_step`` inside a
  window left unused, at most N - 1) is saved beside it, keys under
  :data:`hookrun.runner.graph.fused.CARRY_NAME`, and restored with it: the resumed run trains on them
  first. A checkpoint with the position but no carry (an older hookrun) restores the position and starts
  with an empty carry.

Where TensorFlow cannot save the state (a ``py_function``, ``from_generator``, a stateful op in a map),
the input_fn restarts on resume, as Estimator did. A ``shuffle`` buffer is saved whole, with every
checkpoint.

This module imports TensorFlow only inside its functions' ``tf`` argument, except
:func:`input_state_saver`, which subclasses TensorFlow's classes when called.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from hookrun.runner.graph.graft import scratch_config, scratch_copy

#: The saveable's name; the checkpoint key is :data:`STATE_KEY`.
STATE_NAME = "hookrun/input_state"
#: The checkpoint entry holding the serialized iterator (a ``variant`` tensor).
STATE_KEY = STATE_NAME + "_STATE"
#: ``save_input_state: auto`` saves no position whose dataset graph is larger (bytes): every checkpoint would copy it.
GRAPH_LIMIT = 16 << 20
#: Graph collection of every training iterator hookrun makes (``hookrun.runner.data.streaming.make_iterator``).
ITERATORS = "hookrun_input_iterators"


@dataclass
class InputState:
    """What the ``Scaffold`` needs to save and restore the training input's position.

    Attributes:
        iterators: the training iterators that run (their initializers were in ``TABLE_INITIALIZERS``):
            one, the per-step or the window iterator (``session.steps_per_run > 1``).
        restore_without_input: the checkpoint to resume from holds no input state (or holds an exhausted
            one): restore the variables alone and start the input from its first element.
        exhausted: the checkpoint (its file name, ``model.ckpt-N``) whose saved position is not restored
            (the run ended at the end of its data there, or the dataset changed since), or None.
        ignore_stateful: save with ``ExternalStatePolicy.IGNORE``: a stateful op (not Python's) is in the
            pipeline, whose own state is not saved.
        initializers: the iterators' initializers and the window carry's (run by ``init_fn`` and before each
            restore).
        carry: the window carry's variables (saved and restored with the position), or empty (no stacked
            windows).
        carry_initializer: the op emptying them, or None.
        carry_missing: the checkpoint to resume from holds the position but not the carry (an older
            hookrun): a saver without the carry restores such a checkpoint, the carry starts empty.
    """

    iterators: list[Any]
    restore_without_input: bool = False
    exhausted: str | None = None
    ignore_stateful: bool = False
    initializers: list[Any] = field(default_factory=list)
    carry: list[Any] = field(default_factory=list)
    carry_initializer: Any = None
    carry_missing: bool = False


def live_iterators(tf: Any) -> list[Any]:
    """The training iterators of the default graph whose initializers the session's ``local_init_op`` would run.

    Under ``session.steps_per_run > 1`` the per-step iterator's initializer leaves ``TABLE_INITIALIZERS``
    when the window iterator replaces it (``hookrun.runner.graph.build._window_iterator``): only the
    window iterator is live then.
    """
    v1 = tf.compat.v1
    initializers = v1.get_collection(v1.GraphKeys.TABLE_INITIALIZERS)
    return [it for it in v1.get_collection(ITERATORS) if any(it.initializer is op for op in initializers)]


#: Ops whose state is Python's (a ``py_function``, ``from_generator``): a saved position cannot resume them.
PYTHON_OPS = frozenset({"PyFunc", "EagerPyFunc", "PyFuncStateless"})


def unsaveable_reason(tf: Any, iterator: Any) -> tuple[str | None, int, str | None]:
    """Why TensorFlow cannot save ``iterator``'s position (or None when it can), and the dataset graph's size.

    Runs ``DatasetToGraphV2`` with ``external_state_policy`` FAIL (what ``SerializeIterator`` checks) in a
    scratch graph and session, on a copy of the dataset's ops only (the caller's graph gets no op; as
    :func:`hookrun.runner.graph.fused.cardinality`). A ``py_function``, ``from_generator``, or a stateful op
    inside a ``map`` fails it.

    Args:
        tf: the ``tensorflow`` module.
        iterator: an initializable iterator (graph mode); its initializer's first input is the dataset.

    A stateful op that is not Python's (a random op in an augmentation ``map``) does not stop the save: the
    position is saved with ``ExternalStatePolicy.IGNORE`` (that op's own state, its random stream, is not:
    it starts again on resume), and its name is returned.

    Returns:
        TensorFlow's line of the reason (e.g. ``... PyFunc is stateful``) or None; the bytes of the dataset's
        serialized graph (0 when it cannot be saved; ``SerializeIterator`` writes that graph into every saved
        state: arrays a ``from_tensor_slices`` holds as constants are copied into each checkpoint); and the
        stateful op whose state is left out, or None.
    """
    v1 = tf.compat.v1
    stateful = None
    try:
        scratch, copy = _scratch_copy(tf, iterator)
        with scratch.as_default():
            fail = tf.raw_ops.DatasetToGraphV2(input_dataset=copy, external_state_policy=2)  # 2: FAIL
            ignore = tf.raw_ops.DatasetToGraphV2(input_dataset=copy, external_state_policy=1)  # 1: IGNORE
            with v1.Session(graph=scratch, config=scratch_config(tf)) as session:
                try:
                    size = len(session.run(fail))
                except tf.errors.FailedPreconditionError as err:
                    told = _told(err)
                    match = re.search(r"(\w+) is stateful", told)
                    if match is None or match.group(1) in PYTHON_OPS:
                        return told, 0, None
                    stateful = match.group(1)
                    size = len(session.run(ignore))
    except tf.errors.OpError as err:
        return _told(err), 0, None
    except (ValueError, TypeError, KeyError) as err:  # a dataset reading a resource of the caller's graph
        return f"its dataset could not be copied to check it ({type(err).__name__})", 0, None
    return None, size, stateful


def _told(err: Any) -> str:
    """The line of TensorFlow's error that says what failed (not ``Graph execution error:`` or a node trace)."""
    lines = [line.strip() for line in (err.message or str(err)).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Graph execution error", "Detected at node", "File "))]
    told = [line for line in useful if "Failed to restore" in line or "stateful" in line] or useful or lines
    return (told[0] if told else type(err).__name__)[:300]


def _scratch_copy(tf: Any, iterator: Any) -> tuple[Any, Any]:
    """A scratch graph holding a copy of ``iterator``'s dataset ops only, and the copy's variant tensor.

    Raises:
        ValueError, TypeError, KeyError: the dataset reads something of the caller's graph it cannot copy.
    """
    return scratch_copy(tf, iterator.initializer.inputs[0])


def restore_problem(tf: Any, iterator: Any, prefix: str) -> str | None:
    """Why the position saved in checkpoint ``prefix`` does not restore into ``iterator``'s dataset, or None.

    Restores it into a copy of the dataset in a scratch graph and session (the caller's graph gets no op):
    a pipeline changed since the checkpoint (another ``map``, batch size, shuffle) fails there with
    TensorFlow's ``Failed to restore dataset iterator from checkpoint``. None too when the copy cannot be
    made (the restore itself then tells).

    Args:
        tf: the ``tensorflow`` module.
        iterator: the training iterator (graph mode).
        prefix: a checkpoint prefix holding :data:`STATE_KEY`.
    """
    from hookrun.hooks.tf_internals import private_module

    gen_dataset_ops = private_module("ops.gen_dataset_ops")

    v1 = tf.compat.v1
    try:
        scratch, copy = _scratch_copy(tf, iterator)
        with scratch.as_default():
            dataset = tf.data.experimental.from_variant(copy, iterator.element_spec)
            started = v1.data.make_initializable_iterator(dataset)
            (saved,) = tf.raw_ops.RestoreV2(
                prefix=prefix, tensor_names=[STATE_KEY], shape_and_slices=[""], dtypes=[tf.variant]
            )
            restore = gen_dataset_ops.deserialize_iterator(started._iterator_resource, saved)
            with v1.Session(graph=scratch, config=scratch_config(tf)) as session:
                session.run(started.initializer)
                session.run(restore)
    except tf.errors.OpError as err:
        return _told(err)
    except (ValueError, TypeError, KeyError):
        return None
    return None


def _other_window(tf: Any, carry: list[Any], prefix: str, size_key: str) -> str | None:
    """Why the position in ``prefix`` does not fit windows of this run's N (``session.steps_per_run``), or None.

    Its ``prefetch`` buffer holds a window of the N it was saved with: restored under another N, the next pull
    fails (``Incompatible shapes``), and the carry holds batches of that window. None when N is the same, or
    the checkpoint holds no N (no carry: a change from N = 1 is a changed dataset, found by
    :func:`restore_problem`).
    """
    (size,) = [v for v in carry if v.op.name == size_key]
    try:
        saved = int(tf.train.load_variable(prefix, size_key))
    except (tf.errors.OpError, ValueError):
        return None
    with size.graph.as_default():
        now = int(tf.get_static_value(size.initial_value))
    if saved == now:
        return None
    return f"its windows were of {saved} batches there (session.steps_per_run), {now} now"


def has_input_state(tf: Any, prefix: str | None, carry: list[Any] | None = None) -> bool:
    """Whether the checkpoint ``prefix`` holds the input's position (:data:`STATE_KEY`); False for None.

    With ``carry`` (the window carry's variables): whether it holds every one of those too.
    """
    if prefix is None:
        return False
    try:
        saved = dict(tf.train.list_variables(prefix))
    except tf.errors.OpError:
        return False
    return STATE_KEY in saved and all(v.op.name in saved for v in carry or [])


def input_state_saver(tf: Any, state: InputState, **saver_kwargs: Any) -> Any:
    """A ``tf.compat.v1.train.Saver`` over every global variable, the ``SAVEABLE_OBJECTS`` and the input's state.

    Mirrors ``Saver(var_list=None)`` (global variables and ``SAVEABLE_OBJECTS``) plus TensorFlow's own
    ``_IteratorSaveable``, whose restore first runs the iterator's initializer. Built before the graph is
    finalized (by :meth:`hookrun.runner.session.scaffold.Scaffold.finalize`).

    The window carry's variables (``state.carry``) are saved with the position and restored with it; they
    leave ``LOCAL_VARIABLES`` (whose initializer the session's ``local_init_op`` runs *after* a restore),
    their initializer joins ``state.initializers``.

    With ``state.restore_without_input`` a second saver over the variables alone is built; ``restore`` of a
    checkpoint without :data:`STATE_KEY` uses it, then starts the input from its first element (and empties
    the carry). With ``state.carry_missing`` one without the carry is built; ``restore`` of a checkpoint
    holding the position but not the carry uses it, then empties the carry.

    Args:
        tf: the ``tensorflow`` module.
        state: the live iterators (one is saved; more than one is a programming error).
        **saver_kwargs: ``Saver`` arguments (``max_to_keep``, ``save_relative_paths``, ``allow_empty``).

    Returns:
        The saver (a ``Saver`` subclass: ``save`` and ``restore`` as TensorFlow's).

    Raises:
        ValueError: ``state`` has not exactly one iterator.
    """
    from hookrun.hooks.tf_internals import private_module

    iterator_ops = private_module("data.ops.iterator_ops")

    if len(state.iterators) != 1:
        raise ValueError(f"one training iterator expected, found {len(state.iterators)}")
    (iterator,) = state.iterators
    v1 = tf.compat.v1

    class _StartThenRestore(iterator_ops._IteratorSaveable):  # noqa: N801 - TensorFlow's naming
        """TensorFlow's iterator saveable, restoring into a started iterator (its initializer runs first)."""

        def restore(self, restored_tensors: Any, restored_shapes: Any) -> Any:
            with tf.control_dependencies([iterator.initializer]):
                return super().restore(restored_tensors, restored_shapes)

    class _InputStateSaver(v1.train.Saver):
        """``Saver`` that also restores a checkpoint without the input's state (variables alone, input restarted)."""

        def __init__(self, without_input: Any, without_carry: Any, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._without_input = without_input
            self._without_carry = without_carry

        def restore(self, sess: Any, save_path: str) -> None:  # noqa: D102 - as Saver.restore
            if self._without_input is not None and (
                not has_input_state(tf, save_path) or os.path.basename(save_path) == state.exhausted
            ):
                self._without_input.restore(sess, save_path)
                sess.run(state.initializers)
                return
            if self._without_carry is not None and not has_input_state(tf, save_path, state.carry):
                self._without_carry.restore(sess, save_path)
                sess.run(state.carry_initializer)
                return
            super().restore(sess, save_path)

    variables = v1.global_variables() + v1.get_collection(v1.GraphKeys.SAVEABLE_OBJECTS)
    options_lib = private_module("data.ops.options")

    policy = options_lib.ExternalStatePolicy.IGNORE if state.ignore_stateful else options_lib.ExternalStatePolicy.FAIL
    with tf.device(iterator._iterator_resource.device):
        saveable = _StartThenRestore(iterator._iterator_resource, STATE_NAME, external_state_policy=policy)
    without_input = None
    if state.restore_without_input:
        without_input = v1.train.Saver(var_list=list(variables), **saver_kwargs)
    without_carry = None
    if state.carry and state.carry_missing:
        without_carry = v1.train.Saver(var_list=[*variables, saveable], **saver_kwargs)
    state.initializers = [iterator.initializer]
    if state.carry_initializer is not None:
        state.initializers.append(state.carry_initializer)
    local = v1.get_collection_ref(v1.GraphKeys.LOCAL_VARIABLES)
    local[:] = [v for v in local if all(v is not c for c in state.carry)]
    return _InputStateSaver(without_input, without_carry, var_list=[*variables, saveable, *state.carry],
                            **saver_kwargs)


def plan_input_state(
    tf: Any,
    graph: Any,
    input_fn: str,
    setting: str | bool,
    resume_path: str | None,
    ended_at_data_end: bool,
    on_cluster: bool,
    own_saver: bool = False,
) -> tuple[InputState | None, list[str]]:
    """Decide whether this run saves its ``data.input_fn``'s position, and what a resumed run says about it.

    Args:
        tf: the ``tensorflow`` module.
        graph: the training graph (built, not finalized).
        input_fn: ``data.input_fn`` as written (for the notes).
        setting: ``data.save_input_state``: ``"auto"``, True or False.
        resume_path: the checkpoint this run resumes from, or None (a new run).
        ended_at_data_end: the run resumed from ended at the end of its data at that checkpoint (its
            saved position is exhausted): the input restarts, a new pass as Estimator's ``train()`` made.
        on_cluster: a cluster (each worker's iterator lives on its worker; nothing is saved).
        own_saver: the model_fn's ``EstimatorSpec.scaffold`` gives its own ``saver`` (it saves what it saves).

    Returns:
        The state for the ``Scaffold`` (None: nothing saved, the input starts at each session creation),
        and the notes for the user (one line on a resumed run: continues or restarts, and why).

    Raises:
        SetupError: ``save_input_state: true`` on a pipeline whose state TensorFlow cannot save, or on a
            cluster (exit 2, naming the reason and the fix).
    """
    from hookrun.common.errors import SetupError
    from hookrun.runner.graph.fused import CARRY_COLLECTION, CARRY_INITIALIZER, CARRY_SIZE

    restart = f"data.input_fn {input_fn} restarts from its first element (as Estimator did; "
    with graph.as_default():
        iterators = live_iterators(tf)
    carry = graph.get_collection(CARRY_COLLECTION)
    carry_initializer = (graph.get_collection(CARRY_INITIALIZER) or [None])[0]
    reason = None
    if setting is False:
        reason = "data.save_input_state: false"
    elif on_cluster:
        reason = "its position is not saved on a cluster"
    elif own_saver:
        reason = "the model_fn's EstimatorSpec.scaffold gives its own saver"
    elif len(iterators) != 1:
        reason = "it returned tensors, not a tf.data.Dataset" if not iterators else "more than one iterator"
    else:
        why, size, stateful = unsaveable_reason(tf, iterators[0])
        if why is not None:
            reason = f"TensorFlow cannot save its position: {why}"
        elif size > GRAPH_LIMIT and setting == "auto":
            reason = (
                f"its dataset holds {size / 1e6:.3g} MB in its graph (arrays as constants), which every checkpoint "
                "would copy; data.save_input_state: true saves it anyway"
            )
    if reason is not None and setting is True:
        raise SetupError(
            f"data.save_input_state: true, but data.input_fn {input_fn} cannot be saved: {reason}; "
            "use save_input_state: auto (it then restarts on resume) or false"
        )
    notes = []
    if reason is not None:
        if resume_path is not None:
            notes.append(restart + f"{reason})")
        return None, notes
    saved = has_input_state(tf, resume_path)
    changed = restore_problem(tf, iterators[0], resume_path) if saved and not ended_at_data_end else None
    if changed is None and saved and not ended_at_data_end and carry:
        changed = _other_window(tf, carry, resume_path, CARRY_SIZE)
    state = InputState(iterators=iterators, restore_without_input=resume_path is not None and (
        not saved or ended_at_data_end or changed is not None), ignore_stateful=stateful is not None,
        carry=carry, carry_initializer=carry_initializer,
        carry_missing=saved and bool(carry) and not has_input_state(tf, resume_path, carry))
    if (ended_at_data_end or changed is not None) and resume_path is not None:
        state.exhausted = os.path.basename(resume_path)
    if resume_path is not None:
        if not saved:
            notes.append(restart + "its checkpoint holds no saved position; later checkpoints will)")
        elif ended_at_data_end:
            notes.append(restart + "the last run read it to its end: a new pass)")
        elif changed is not None:
            notes.append(restart + f"its dataset changed since the checkpoint, whose saved position does not fit: "
                         f"{changed})")
        else:
            left_out = f" (the state of its {stateful} op is not saved: it starts again)" if stateful else ""
            notes.append(f"data.input_fn {input_fn} continues from its position saved in the checkpoint{left_out}")
    return state, notes


__all__ = [
    "ITERATORS", "STATE_KEY", "STATE_NAME", "InputState", "has_input_state", "input_state_saver", "live_iterators",
    "plan_input_state", "restore_problem", "unsaveable_reason",
]
