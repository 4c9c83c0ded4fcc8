"""Every use hookrun makes of TensorFlow's private internals, named in one place, each with its reason.

TensorFlow (2.16 to 2.21 checked) offers no public way to do these things. Each use is either a
function here, or, for private attributes that hookrun's hooks inherit from TensorFlow's own hook
classes and read in their overridden methods, an entry of :data:`INHERITED`. ``tests/test_tf_internals.py``
exercises every one against the installed TensorFlow and fails naming the use when an upgrade
breaks it. It lives in ``hooks`` (not ``runner``) because both use it and dependencies flow
``runner -> hooks``.

TensorFlow is imported when a function is called, never at import time.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

#: Functions of ``basic_session_run_hooks.py`` whose INFO lines hookrun shows without ``--verbose``
#: (``LoggingTensorHook._log_tensors``, ``StepCounterHook._log_and_record``): the lines users configured
#: those hooks for. TensorFlow logs them at INFO with no other mark; the log record's ``funcName`` is the only
#: way to tell them from TensorFlow's INFO chatter.
HOOK_LOG_FUNCS = frozenset({"_log_tensors", "_log_and_record"})


@dataclass(frozen=True)
class Inherited:
    """A private attribute of a TensorFlow class that a hookrun subclass reads.

    Attributes:
        owner: the TensorFlow class, by its ``tf.compat.v1.train`` name.
        name: the attribute.
        kind: ``"method"``; or where TensorFlow sets the instance attribute: ``"init"``, ``"begin"`` or
            ``"before_run"``.
        used_by: the hookrun module that reads it.
        why: what it is needed for.
    """

    owner: str
    name: str
    kind: str
    used_by: str
    why: str


#: Private attributes of TensorFlow's hooks that hookrun's subclasses read (their ``after_run`` replaces
#: TensorFlow's to count steps with the shared clock instead of reading ``global_step`` every step).
INHERITED: tuple[Inherited, ...] = (
    Inherited("CheckpointSaverHook", "_timer", "init", "hooks/step_clock.py, hooks/checkpoint_saver/hook.py",
              "the SecondOrStepTimer that decides when to save; the clocked after_run asks it"),
    Inherited("CheckpointSaverHook", "_save", "method", "hooks/checkpoint_saver/hook.py",
              "saves and runs the listeners, as TensorFlow's after_run does"),
    Inherited("CheckpointSaverHook", "_get_saver", "method", "hooks/checkpoint_saver/hook.py",
              "the Saver its _save and after_create_session use; wrapped to copy the session's first .meta"),
    Inherited("StepCounterHook", "_timer", "init", "hooks/step_counter/hook.py",
              "the timer that decides when to log steps/sec"),
    Inherited("StepCounterHook", "_log_and_record", "method", "hooks/step_counter/hook.py",
              "logs and writes global_step/sec, as TensorFlow's after_run does"),
    Inherited("StepCounterHook", "_last_global_step", "init", "hooks/step_counter/hook.py",
              "the step of the last log, for TensorFlow's 'global step did not move' warning"),
    Inherited("SummarySaverHook", "_timer", "init", "hooks/summary_saver/hook.py",
              "the timer that decides when to write summaries"),
    Inherited("SummarySaverHook", "_summary_writer", "init", "hooks/summary_saver/hook.py",
              "the FileWriter the summaries and the START session log go to"),
    Inherited("SummarySaverHook", "_get_summary_op", "method", "hooks/summary_saver/hook.py",
              "the summary ops to request in before_run"),
    Inherited("SummarySaverHook", "_next_step", "begin", "hooks/summary_saver/hook.py",
              "None until the first step: when to write the START session log"),
    Inherited("SummarySaverHook", "_request_summary", "before_run", "hooks/summary_saver/hook.py",
              "whether this step's summaries were requested"),
    Inherited("LoggingTensorHook", "_timer", "init", "hooks/logging_tensor/hook.py",
              "the timer asked per window under session.steps_per_run (every_n_secs)"),
    Inherited("LoggingTensorHook", "_log_at_end", "init", "hooks/logging_tensor/hook.py",
              "at_end: no periodic lines, under session.steps_per_run too"),
    Inherited("LoggingTensorHook", "_current_tensors", "begin", "hooks/logging_tensor/hook.py",
              "the tensors requested on a due window under session.steps_per_run"),
    Inherited("LoggingTensorHook", "_iter_count", "begin", "hooks/logging_tensor/hook.py",
              "the local step _log_tensors records its trigger at; set to the window's last step"),
    Inherited("LoggingTensorHook", "_log_tensors", "method", "hooks/logging_tensor/hook.py",
              "logs the line exactly as TensorFlow's after_run does (called for lines with arrays or a formatter)"),
    Inherited("LoggingTensorHook", "_tag_order", "init", "hooks/logging_tensor/hook.py",
              "the order of the tags in a line of scalars, logged without TensorFlow's print-option calls"),
    Inherited("LoggingTensorHook", "_formatter", "init", "hooks/logging_tensor/hook.py",
              "a user formatter: such lines take TensorFlow's own _log_tensors"),
)


def session_run_wrapper() -> Any:
    """``TF_SessionRun_wrapper``: the C call ``Session.make_callable`` makes, without its Python wrappers.

    Why: the ``hookrun`` engine runs a fixed step plan with it (``runner/session/engine.py``), saving the
    per-step Python overhead of ``make_callable``. Returns None when this TensorFlow lacks it (the engine
    then uses ``make_callable``).
    """
    try:
        from tensorflow.python.client.pywrap_tf_session import TF_SessionRun_wrapper
    except ImportError:  # pragma: no cover - an older or newer TensorFlow: the public path is used
        return None
    return TF_SessionRun_wrapper


def raw_session(session: Any) -> Any:
    """The C session handle of a ``tf.compat.v1.Session`` (``session._session``), or None.

    Why: :func:`session_run_wrapper` takes the handle, not the Python session.
    """
    return getattr(session, "_session", None)


def fetch_outputs(tensors: list[Any]) -> list[Any]:
    """The C outputs of tensors (``tensor._as_tf_output()``), for :func:`session_run_wrapper`'s fetch list."""
    return [tensor._as_tf_output() for tensor in tensors]


def target_ops(ops: list[Any]) -> list[Any]:
    """The C operations of ops (``op._c_op``), for :func:`session_run_wrapper`'s target list."""
    return [op._c_op for op in ops]


def global_step_read(graph: Any | None = None) -> Any:
    """TensorFlow's cached ``global_step`` read tensor (``training_util._get_or_create_global_step_read``).

    TensorFlow's own hooks (``StepCounterHook``, ``ProfilerHook``, ``SecondOrStepTimer`` users) fetch
    this tensor beside the train op; ``tf.estimator`` created it before calling the ``model_fn``. Calling
    it first makes them share one tensor that the runner can order before the step's update.

    Args:
        graph: the graph (default: the default graph).

    Returns:
        The ``int64`` scalar read tensor, or None if the graph has no ``global_step``.
    """
    from tensorflow.python.training import training_util

    return training_util._get_or_create_global_step_read(graph)


def session_interface() -> type:
    """``tensorflow.python.client.session.SessionInterface``, the base class ``Saver.save`` requires of a session.

    A wrapper session handed to hooks (``hooks/custom/window.py``) subclasses it so that a hook's
    ``Saver.save(run_context.session, ...)`` accepts it; TensorFlow exports no public name for it.
    """
    from tensorflow.python.client.session import SessionInterface

    return SessionInterface


def unfinalize(graph: Any) -> None:
    """``graph._unsafe_unfinalize()``: undo ``graph.finalize()``.

    Why: ``MonitoredSession`` finalizes the graph and unfinalizes it on close when it was not finalized
    before, so the same graph can be used again (a second ``train`` in one process, ``validate --build``);
    the ``hookrun`` engine does the same at its close.
    """
    graph._unsafe_unfinalize()


def graph_element(variable: Any) -> Any:
    """``variable._as_graph_element()``: the tensor that reads a resource variable (``<name>/Read/ReadVariableOp:0``).

    Why: a hook naming a variable's handle (``hidden_0/kernel:0``) must get its value, the tensor
    ``Session.run`` itself fetches for the variable. Returns None when the variable has none.
    """
    return variable._as_graph_element()


def cached_file_writers(tf: Any) -> list[Any]:
    """Every ``FileWriter`` in ``tf.compat.v1.summary.FileWriterCache`` (its private ``_cache``).

    Why: ``FileWriterCache.clear()`` stops at the first writer whose close fails; the runner closes the
    others itself so no event file is left open.
    """
    return list(getattr(tf.compat.v1.summary.FileWriterCache, "_cache", {}).values())


def forget_file_writers(tf: Any) -> None:
    """Empty ``FileWriterCache._cache`` after :func:`cached_file_writers` were closed one by one."""
    cache = tf.compat.v1.summary.FileWriterCache
    with contextlib.suppress(AttributeError):
        cache._cache = {}


def tf_logging() -> Any:
    """``tensorflow.python.platform.tf_logging``: TensorFlow's own logger module.

    Why: hookrun's hooks and engine log as TensorFlow's hooks do (``log_first_n`` included), so their
    lines go where TensorFlow's go and ``runner/tf_env.py`` routes them alike.
    """
    from tensorflow.python.platform import tf_logging as logging

    return logging


def function_arguments(fn: Any) -> tuple[str, ...]:
    """``tensorflow.python.util.function_utils.fn_args``: the argument names of a function, method or partial.

    Why: ``MonitoredSession.run_step_fn`` checks ``step_fn``'s arguments with it; the ``hookrun`` engine
    checks them the same way, with the same message.
    """
    from tensorflow.python.util import function_utils

    return tuple(function_utils.fn_args(fn))


def newest_checkpoint_record(saver: Any) -> Any:
    """The ``Saver``'s newest checkpoint record (an item of its private ``_last_checkpoints``), or None.

    Why: the hook-state writer (``hooks/state.py``) checks after every step whether a checkpoint was
    written; each save appends a new record, so comparing the newest by identity costs under 1 us,
    where the public ``Saver.last_checkpoints`` builds a new list (3 us a step). Returns the public
    ``last_checkpoints[-1]`` (a path, compared by value) when the private list is gone.
    """
    records = getattr(saver, "_last_checkpoints", None)
    if records is None:
        checkpoints = saver.last_checkpoints
        return checkpoints[-1] if checkpoints else None
    return records[-1] if records else None



def meta_graph_path(saver: Any, save_path: str, step: int, suffix: str = "meta") -> str:
    """The ``.meta`` file ``Saver.save(sess, save_path, global_step=step)`` writes: ``<save_path>-<step>.meta``.

    Why: the ``checkpoint_saver`` hook writes that file itself after the session's first save (a copy of
    the first export, see ``hooks/checkpoint_saver/hook.py``), so it needs ``Saver.save``'s exact name:
    the step zero-padded to 8 digits when the ``Saver`` was built with ``pad_step_number=True`` (its
    private ``_pad_step_number``), then ``checkpoint_management.meta_graph_filename`` (which drops a
    sharded V1 name's ``-?????-of-?????``).

    Args:
        saver: a ``tf.compat.v1.train.Saver``.
        save_path: the prefix passed to ``Saver.save``.
        step: the global step passed to it (an integer).
        suffix: ``Saver.save``'s ``meta_graph_suffix``.
    """
    from tensorflow.python.checkpoint import checkpoint_management

    padded = bool(getattr(saver, "_pad_step_number", False))
    checkpoint_file = f"{save_path}-{step:08d}" if padded else f"{save_path}-{step}"
    return checkpoint_management.meta_graph_filename(checkpoint_file, meta_graph_suffix=suffix)


#: TensorFlow's private Python modules hookrun imports (path under ``tensorflow.python``) -> the attributes it
#: uses, who uses them and why. :func:`private_module` gives only these; ``tests/test_tf_internals.py`` imports
#: each and checks every attribute, so an upgrade that moves one fails there, naming it.
PRIVATE_MODULES: dict[str, tuple[tuple[str, ...], str]] = {
    "ops.lookup_ops": (
        ("index_table_from_tensor", "index_to_string_table_from_tensor"),
        "runner/graph/builders/canned/head.py: TF 1.15's heads map label_vocabulary with them; TF 2 no longer "
        "exports them under tf.compat.v1",
    ),
    "feature_column.feature_column": (
        ("_NumericColumn", "_LazyBuilder"),
        "runner/graph/builders/canned/head.py: TF 1.15's weight_column check and its dense tensor, as the head did",
    ),
    "feature_column.feature_column_v2": (
        ("NumericColumn",),
        "runner/graph/builders/canned/head.py: a weight_column made by tf.compat.v1.feature_column.numeric_column",
    ),
    "ops.weights_broadcast_ops": (
        ("broadcast_weights",),
        "runner/graph/builders/canned/head.py: the head's weighted metrics broadcast weights as TF 1.15's did",
    ),
    "ops.variable_scope": (
        ("get_variable_scope_store", "_get_default_variable_store"),
        "runner/graph/fused.py: the loop's model_fn call finds the first call's scope names and variables "
        "(no public API for the scope counts)",
    ),
    "ops.gen_dataset_ops": (
        ("deserialize_iterator",),
        "runner/data/input_state.py: checks in a scratch graph that a checkpoint's input state fits the pipeline",
    ),
    "data.ops.iterator_ops": (
        ("_IteratorSaveable",),
        "runner/data/input_state.py: the iterator's saveable, subclassed to restore into a started iterator",
    ),
    "data.ops.options": (
        ("ExternalStatePolicy",),
        "runner/data/input_state.py: the saveable's policy for stateful ops (random ops in a map)",
    ),
}


def private_module(name: str) -> Any:
    """One of TensorFlow's private modules listed in :data:`PRIVATE_MODULES`, by its path under ``tensorflow.python``.

    Args:
        name: e.g. ``"ops.lookup_ops"``.

    Returns:
        The module (imported on the call).

    Raises:
        KeyError: ``name`` is not listed (add it there, with its attributes and reason, and a test follows).
    """
    import importlib

    if name not in PRIVATE_MODULES:
        raise KeyError(f"{name} is not in hooks/tf_internals.PRIVATE_MODULES")
    return importlib.import_module(f"tensorflow.python.{name}")
