"""The session's ``Scaffold``: TensorFlow's, with the ``Saver`` built when ``finalize()`` builds it.

This module imports TensorFlow; import it only from code that already has.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf


class Scaffold(tf.compat.v1.train.Scaffold):
    """``tf.compat.v1.train.Scaffold`` whose default ``Saver`` keeps ``max_to_keep`` relative-path checkpoints.

    TensorFlow's ``Scaffold.finalize()`` runs in the session creator, after
    every hook's ``begin()``: it builds the init op, the ready ops and the
    ``Saver`` over every global variable then in the graph, so a variable a
    hook creates in ``begin()`` is initialized, checked, saved and restored.
    This subclass changes one thing: when no saver was given and the graph's
    ``SAVERS`` collection is empty, the saver ``finalize()`` picks up (via
    ``tf.compat.v1.train.Saver``'s ``_get_saver_or_default``) is
    ``Saver(max_to_keep=max_to_keep, save_relative_paths=True,
    allow_empty=True)`` instead of the default ``Saver(sharded=True,
    allow_empty=True)``. ``save_relative_paths`` keeps the ``checkpoint``
    file valid when the run directory moves.

    ``saver`` is None until ``finalize()`` (as TensorFlow's); hooks read it
    afterwards (``CheckpointSaverHook`` does, in ``after_create_session``).

    A model_fn's ``EstimatorSpec.scaffold`` is merged with TensorFlow's
    ``copy_from_scaffold``: its ``init_op``, ``init_feed_dict``, ``init_fn``
    (called as ``init_fn(this scaffold, session)``), ``ready_op``,
    ``ready_for_local_init_op``, ``local_init_op``, ``local_init_feed_dict``,
    ``summary_op`` and ``saver`` are used as given. A given ``saver`` replaces
    the default one: its own ``max_to_keep`` and ``save_relative_paths``
    apply (TensorFlow's default ``False`` writes absolute paths into the
    ``checkpoint`` state file; a moved run directory still resumes, as
    hookrun finds checkpoints by file name and rewrites that file, see
    :mod:`hookrun.runner.run_dir.checkpoints`).

    With ``input_state`` (a :class:`hookrun.runner.data.input_state.InputState`: ``data.input_fn`` whose
    position is saved) the default saver also saves the training iterator's position
    (:func:`hookrun.runner.data.input_state.input_state_saver`). The iterator's initializer then leaves the
    ``local_init_op`` (which runs after a restore and would start the input again): the saver's restore
    starts it before restoring its position, and a session that restores nothing starts it in ``init_fn``
    (after a given ``init_fn``). A given ``saver`` (``EstimatorSpec.scaffold.saver``) leaves the input
    unsaved.

    Args:
        max_to_keep: checkpoints the saver keeps (count; 0 or None keeps all), as ``Saver``'s.
        input_state: the training input to save with each checkpoint, or None (nothing saved: the input
            starts from its first element at every session creation).
        **kwargs: TensorFlow's ``Scaffold`` arguments (``saver``, ``init_op``, ``copy_from_scaffold``, ...).
    """

    def __init__(self, max_to_keep: int | None = 5, input_state: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._max_to_keep = max_to_keep
        self.input_state = input_state

    def finalize(self) -> Scaffold:
        """Add the default saver to ``SAVERS`` (unless one is there or given), then TensorFlow's ``finalize()``."""
        graph = tf.compat.v1.get_default_graph()
        savers = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVERS)
        if self._saver is None and not graph.finalized and not savers:
            options = {"max_to_keep": self._max_to_keep, "save_relative_paths": True, "allow_empty": True}
            if self.input_state is not None:
                saver = self._input_state_saver(options)
            else:
                saver = tf.compat.v1.train.Saver(**options)
            tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.SAVERS, saver)
        elif self.input_state is not None and not graph.finalized:
            self.input_state = None  # a given saver: the input is not saved (it starts at each session creation)
        return super().finalize()

    def _input_state_saver(self, options: dict[str, Any]) -> Any:
        """The saver with the input's state; its initializer moves from ``local_init_op`` to ``init_fn``."""
        from hookrun.runner.data.input_state import input_state_saver

        saver = input_state_saver(tf, self.input_state, **options)
        starts = self.input_state.initializers
        table_initializers = tf.compat.v1.get_collection_ref(tf.compat.v1.GraphKeys.TABLE_INITIALIZERS)
        table_initializers[:] = [op for op in table_initializers if all(op is not s for s in starts)]
        given = self._init_fn

        def init_fn(session: Any) -> None:  # TensorFlow calls it when no checkpoint was restored
            if given is not None:
                given(session)
            session.run(starts)

        self._init_fn = init_fn
        return saver
