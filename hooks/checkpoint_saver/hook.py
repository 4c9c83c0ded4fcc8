"""``checkpoint_saver``: TensorFlow's ``CheckpointSaverHook``, guarded against non-finite weights.

It follows the run's step clock (no per-step ``global_step`` fetch, no extra
``Session.run``), and it never writes NaN or inf weights.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

import numbers
import os
import uuid
from typing import Any

import tensorflow as tf

from hookrun.common.files import read_regular_bytes
from hookrun.config_schemas.run_files import TRAIN_EVENT_DIR
from hookrun.hooks import tf_internals
from hookrun.hooks.checkpoint_saver import CheckpointSaverConfig
from hookrun.hooks.context import HOOKRUN_SCOPE, HookContext, HookFailure
from hookrun.hooks.step_clock import ClockedHook

#: Largest meta graph (bytes) :class:`MetaGraphOnceSaver` keeps in memory to copy; a larger one is
#: exported at every save, as TensorFlow does (holding it would cost that much memory for the session).
META_GRAPH_COPY_LIMIT = 64 * 1024 * 1024


class NonFiniteWeightsError(HookFailure):
    """A checkpoint was about to hold NaN or infinite weights; it was not written."""


class FiniteWeightsGuard(tf.compat.v1.train.CheckpointSaverListener):
    """Refuse to save a checkpoint whose weights are not all finite.

    A NaN loss at step N means the weights were already non-finite after
    step N-1's update, so a checkpoint taken at N-1 would hold them even
    though ``nan_tensor`` has not fired yet. ``before_save`` runs one check
    over every floating-point global variable (only when a save is due, so
    the step loop pays nothing) and raises instead of saving.

    Args:
        checkpoint_dir: where the hook saves (for the message).

    Raises:
        NonFiniteWeightsError: from ``before_save``, when a variable holds NaN or inf.
    """

    def __init__(self, checkpoint_dir: str) -> None:
        self._checkpoint_dir = checkpoint_dir
        self._all_finite: Any = None

    def begin(self) -> None:
        """Build the check over the graph's floating-point variables (before the graph is finalized)."""
        # Under hookrun/ (ops only, no variables): TensorBoard's graph shows the model alone, this as one box
        with tf.compat.v1.name_scope(f"{HOOKRUN_SCOPE}/finite_weights_guard"):
            checks = [
                tf.reduce_all(tf.math.is_finite(v))
                for v in tf.compat.v1.global_variables()
                if v.dtype.base_dtype.is_floating
            ]
            self._all_finite = tf.reduce_all(tf.stack(checks)) if checks else tf.constant(True)

    def before_save(self, session: Any, global_step_value: int) -> None:
        """Raise if any weight is NaN or infinite, before the checkpoint at ``global_step_value`` is written."""
        if not session.run(self._all_finite):
            latest = tf.train.latest_checkpoint(self._checkpoint_dir)
            raise NonFiniteWeightsError(
                f"weights are not finite at step {global_step_value}; that checkpoint was not written "
                f"(last good checkpoint: {latest or 'none'})"
            )


def _read_written(path: str) -> bytes | None:
    """The bytes of the regular file ``path`` (not through a symlink), or None if it cannot be read or is too large."""
    try:
        return read_regular_bytes(path, follow_symlinks=False, limit=META_GRAPH_COPY_LIMIT)
    except OSError:
        return None


def _write_copy(path: str, data: bytes) -> bool:
    """Write ``data`` to ``path`` as TensorFlow's ``atomic_write_string_to_file`` does; False if it could not.

    A fresh ``<path>.tmp<32 hex digits>`` (``O_CREAT | O_EXCL | O_NOFOLLOW``), then a rename over
    ``path``: a symlink or hard link at ``path`` is replaced, never written through, and a crash
    leaves no partial ``path`` (a left-over temporary is removed at the next start, as TensorFlow's are).
    No ``fsync``, as TensorFlow's export. On failure the temporary is removed.
    """
    tmp = f"{path}.tmp{uuid.uuid4().hex}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True


class MetaGraphOnceSaver:
    """A ``Saver`` whose ``save`` exports the meta graph once per session and copies those bytes to later checkpoints.

    TensorFlow's ``CheckpointSaverHook`` calls ``Saver.save(..., write_meta_graph=True)`` at every
    save, and ``Saver.export_meta_graph`` serializes the whole graph each time (9 ms of a 14.5 ms
    save on the linear benchmark). The session's graph is finalized, so every ``model.ckpt-<step>.meta``
    of a session is the same ``MetaGraphDef``: this wrapper lets the first ``save`` of a session
    export it (TensorFlow's code), reads that file's bytes back once, and gives each later checkpoint
    its ``.meta`` as a copy of them (a file of its own, not a link), written where and when
    ``Saver.save`` would write it: after the checkpoint and its ``checkpoint`` state file, before
    ``save`` returns (so before the listeners' ``after_save``). ``max_to_keep`` deletes old ``.meta``
    files as before. Any other attribute is the wrapped ``Saver``'s.

    ``save`` is TensorFlow's, unchanged, when the graph is not finalized, ``write_meta_graph`` is
    False, ``strip_default_attrs`` or ``save_debug_info`` is set, ``global_step`` is not an integer,
    the path is not a local file, or the meta graph is over :data:`META_GRAPH_COPY_LIMIT`. If the
    copy cannot be written (the disk refused it, the directory changed), it falls back to TensorFlow's
    export, which raises as it does today when that fails too.

    Mirrors ``tf.compat.v1.train.Saver.save``.

    Args:
        saver: the ``tf.compat.v1.train.Saver`` to wrap.
    """

    def __init__(self, saver: Any) -> None:
        self.wrapped = saver
        self._graph: Any = None  # the graph the cached bytes were exported from
        self._meta: bytes | None = None  # the session's first .meta, as written

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    def forget(self) -> None:
        """Drop the copied bytes: the next ``save`` exports the meta graph afresh (a new session)."""
        self._graph = self._meta = None

    def save(
        self,
        sess: Any,
        save_path: str,
        global_step: Any = None,
        latest_filename: str | None = None,
        meta_graph_suffix: str = "meta",
        write_meta_graph: bool = True,
        write_state: bool = True,
        strip_default_attrs: bool = False,
        save_debug_info: bool = False,
    ) -> str | None:
        """``Saver.save``, with the meta graph written from the session's first export (see the class).

        Args:
            sess: the ``tf.compat.v1.Session`` (its graph is the one exported).
            save_path: the checkpoint prefix (``<dir>/model.ckpt``).
            global_step: the step appended to ``save_path`` (an integer, a tensor or its name).
            latest_filename: the state file's name (default ``checkpoint``).
            meta_graph_suffix: the meta graph file's suffix (default ``meta``).
            write_meta_graph: write ``<prefix>.meta`` (copied after the session's first).
            write_state: update the state file (and delete checkpoints past ``max_to_keep``).
            strip_default_attrs: as ``Saver.save`` (then exported every time).
            save_debug_info: as ``Saver.save`` (then exported every time).

        Returns:
            The checkpoint's path prefix, or None for an empty ``Saver`` (as ``Saver.save``).

        Raises:
            What ``Saver.save`` raises (a refused write among them).
        """
        graph = sess.graph
        plain = (
            not write_meta_graph
            or strip_default_attrs
            or save_debug_info
            or not isinstance(global_step, numbers.Integral)
            or isinstance(global_step, bool)
            or "://" in str(save_path)
            or not graph.finalized
            or tf.executing_eagerly()
        )
        if plain:
            return self.wrapped.save(
                sess, save_path, global_step=global_step, latest_filename=latest_filename,
                meta_graph_suffix=meta_graph_suffix, write_meta_graph=write_meta_graph, write_state=write_state,
                strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info,
            )
        prefix = self.wrapped.save(
            sess, save_path, global_step=global_step, latest_filename=latest_filename,
            meta_graph_suffix=meta_graph_suffix, write_meta_graph=False, write_state=write_state,
        )
        path = tf_internals.meta_graph_path(self.wrapped, str(save_path), int(global_step), meta_graph_suffix)
        if self._meta is not None and self._graph is graph and _write_copy(path, self._meta):
            return prefix
        with graph.as_default():
            self.wrapped.export_meta_graph(path)  # what Saver.save does with write_meta_graph=True
        self._meta = _read_written(path)
        self._graph = graph if self._meta is not None else None
        return prefix


class CheckpointSaverHook(ClockedHook, tf.compat.v1.train.CheckpointSaverHook):
    """Save checkpoints every N steps or seconds; mirrors ``tf.compat.v1.train.CheckpointSaverHook``.

    TensorFlow's hook, with its saving, listeners, ``graph.pbtxt`` and
    ``end`` unchanged, but following the run's
    :class:`~hookrun.hooks.step_clock.StepClock` instead of asking for
    ``global_step`` on every step (TensorFlow's hook also issues a second
    ``Session.run`` per step unless ``_set_steps_per_run(1)`` is called).

    When each method fires:

    - ``begin``: TensorFlow's (summary writer, listeners' ``begin``), and the clock's read.
    - ``after_create_session``: writes ``graph.pbtxt`` and the meta graph, saves a
      checkpoint at the current step (TensorFlow's), and syncs the clock. That save
      exports the session's ``.meta``; later saves copy its bytes (:class:`MetaGraphOnceSaver`).
    - ``before_run``: asks for nothing (on a cluster: ``global_step``).
    - ``after_run``: when the counted step is due (``save_steps`` global steps,
      or ``save_secs`` seconds, after the last save), reads ``global_step``
      exactly and saves if it is still due; a listener's ``after_save`` may
      request a stop.
    - ``end``: saves at the final step unless that step was just saved (TensorFlow's).

    Args:
        clock: the run's shared step clock.
        checkpoint_dir: where checkpoints go.
        save_secs: save every this many seconds, or None.
        save_steps: save every this many global steps, or None. Exactly one of the two.
        saver, checkpoint_basename, scaffold, listeners, save_graph_def: as TensorFlow's hook.
        events_dir: where the graph and the checkpoints' ``SessionLog`` events go; None: ``checkpoint_dir``
            (TensorFlow's). The runner gives the run's ``train/`` so TensorBoard shows the graph with
            training's scalars, under the run's name.

    Raises:
        ValueError: neither or both of ``save_secs`` and ``save_steps`` (TensorFlow's check).
    """

    def __init__(self, *args: Any, events_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._events_dir = events_dir

    def begin(self) -> None:
        """TensorFlow's (and the clock's read), with its summary writer opened on ``events_dir`` when given.

        TensorFlow's ``begin`` opens ``SummaryWriterCache.get(checkpoint_dir)``, which would already write an
        event file (and the graph) to ``checkpoint_dir``: it runs with ``events_dir`` as that directory.
        """
        if self._events_dir is None:
            super().begin()
            return
        checkpoint_dir, self._checkpoint_dir = self._checkpoint_dir, self._events_dir
        try:
            super().begin()
        finally:
            self._checkpoint_dir = checkpoint_dir

    def _get_saver(self) -> Any:
        """TensorFlow's ``Saver`` (given, the scaffold's, or ``SAVERS``), wrapped in :class:`MetaGraphOnceSaver`."""
        saver = super()._get_saver()
        if saver is None:
            return None
        wrapper = getattr(self, "_meta_graph_once", None)
        if wrapper is None or wrapper.wrapped is not saver:
            wrapper = self._meta_graph_once = MetaGraphOnceSaver(saver)
        return wrapper

    def after_create_session(self, session: Any, coord: Any) -> None:
        """A new session exports its meta graph afresh; then TensorFlow's (and the clock's sync)."""
        wrapper = getattr(self, "_meta_graph_once", None)
        if wrapper is not None:
            wrapper.forget()
        super().after_create_session(session, coord)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Save when due, at the exact ``global_step`` (TensorFlow's decision, on the counted step)."""
        global_step = self._timer_due(run_context, run_values.results)
        if global_step is not None:
            self._timer.update_last_triggered_step(global_step)
            if self._save(run_context.session, global_step):
                run_context.request_stop()


def build(config: CheckpointSaverConfig, ctx: HookContext) -> CheckpointSaverHook:
    """Build :class:`CheckpointSaverHook` using the session's scaffold saver, guarded by :class:`FiniteWeightsGuard`.

    When it fires: see :class:`CheckpointSaverHook`. Before every save a
    :class:`FiniteWeightsGuard` checks the weights: training fails (exit 1)
    rather than write NaN or inf.

    Args:
        config: ``save_steps`` xor ``save_secs``; ``checkpoint_dir`` (relative to the
            run directory), ``checkpoint_basename``. ``max_to_keep`` is applied by the
            runner to the scaffold's ``Saver``.
        ctx: the runner's context.
    """
    checkpoint_dir = str(ctx.resolve_dir(config.checkpoint_dir))
    return CheckpointSaverHook(
        ctx.clock,
        checkpoint_dir,
        save_secs=config.save_secs,
        save_steps=config.save_steps,
        checkpoint_basename=config.checkpoint_basename,
        scaffold=ctx.scaffold,
        listeners=[FiniteWeightsGuard(checkpoint_dir), *ctx.saving_listeners],
        events_dir=str(ctx.resolve_dir(TRAIN_EVENT_DIR)),
    )
