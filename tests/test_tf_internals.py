"""Every TensorFlow private internal hookrun uses still works on the installed TensorFlow (issue 13, item 8).

One test per use in ``hookrun.hooks.tf_internals``: a TensorFlow upgrade that removes or changes one
fails here, naming it, instead of somewhere deep in a training run.
"""

from __future__ import annotations

import logging
import os
import tempfile

import numpy as np
import pytest
import tensorflow as tf

from hookrun.hooks import tf_internals

v1 = tf.compat.v1


def _graph() -> tuple[tf.Graph, tf.Tensor, tf.Operation, tf.Variable]:
    graph = tf.Graph()
    with graph.as_default():
        var = v1.get_variable("w", shape=[], initializer=v1.constant_initializer(3.0), use_resource=True)
        total = tf.identity(var * 2.0, name="total")
        bump = v1.assign_add(var, 1.0).op
    return graph, total, bump, var


def test_session_run_wrapper_runs_fetches_and_targets() -> None:
    run = tf_internals.session_run_wrapper()
    assert run is not None, "TF_SessionRun_wrapper is gone: runner/session/engine.py falls back to make_callable"
    graph, total, bump, var = _graph()
    with v1.Session(graph=graph) as session:
        session.run(var.initializer)
        handle = tf_internals.raw_session(session)
        assert handle is not None, "Session._session (the C handle) is gone"
        out = run(handle, None, {}, tf_internals.fetch_outputs([total]), tf_internals.target_ops([bump]), None)
        assert float(np.asarray(out[0])) in (6.0, 8.0)  # fetch and target run in one call
        assert session.run(var) == 4.0


def test_unfinalize_makes_a_finalized_graph_editable() -> None:
    graph, *_ = _graph()
    graph.finalize()
    tf_internals.unfinalize(graph)
    assert not graph.finalized
    with graph.as_default():
        tf.constant(1.0)


def test_graph_element_of_a_resource_variable_reads_it() -> None:
    graph, _, _, var = _graph()
    with graph.as_default():
        element = tf_internals.graph_element(var)
    assert element is not None and element.op.type == "ReadVariableOp"
    with v1.Session(graph=graph) as session:
        session.run(var.initializer)
        assert session.run(element) == 3.0


def test_cached_file_writers_are_seen_and_forgotten() -> None:
    with tempfile.TemporaryDirectory() as logdir, tf.Graph().as_default():
        writer = v1.summary.FileWriterCache.get(logdir)
        assert writer in tf_internals.cached_file_writers(tf), "FileWriterCache._cache is gone"
        writer.close()
        tf_internals.forget_file_writers(tf)
        assert tf_internals.cached_file_writers(tf) == []


def test_function_arguments_of_a_function_and_a_method() -> None:
    class Steps:
        def step(self, step_context: object) -> None: ...

    def step_fn(step_context: object) -> None: ...

    assert tf_internals.function_arguments(step_fn) == ("step_context",)
    assert tf_internals.function_arguments(Steps().step) == ("step_context",)


def test_tf_logging_logs_to_the_tensorflow_logger() -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("tensorflow")
    handler = Keep()
    logger.addHandler(handler)
    try:
        tf_internals.tf_logging().warning("probe %d", 1)
        tf_internals.tf_logging().log_first_n(logging.WARNING, "once %s", 1, "x")
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in records] == ["probe 1", "once x"]


@pytest.mark.parametrize("name", sorted(tf_internals.HOOK_LOG_FUNCS))
def test_hook_log_function_names_exist(name: str) -> None:
    owners = [v1.train.LoggingTensorHook, v1.train.StepCounterHook]
    assert any(callable(getattr(owner, name, None)) for owner in owners), (
        f"{name} is gone from TensorFlow's hooks: runner/tf_env.py would hide logging_tensor/step_counter lines"
    )


def _instance(owner: str, kind: str) -> object:
    """A TensorFlow hook of class ``owner``, run up to where it sets ``kind``'s attributes."""
    with tf.Graph().as_default():
        v1.train.get_or_create_global_step()
        hook = _new(owner)
        if kind in ("begin", "before_run"):
            hook.begin()
        if kind == "before_run":
            hook.before_run(None)
        return hook


def _new(owner: str) -> object:
    """A TensorFlow hook of class ``owner`` (in the current graph)."""
    if owner == "CheckpointSaverHook":
        return v1.train.CheckpointSaverHook(tempfile.mkdtemp(), save_steps=1)
    if owner == "StepCounterHook":
        return v1.train.StepCounterHook(every_n_steps=1, output_dir=tempfile.mkdtemp())
    if owner == "SummarySaverHook":
        return v1.train.SummarySaverHook(save_steps=1, output_dir=tempfile.mkdtemp(), summary_op=tf.constant(""))
    if owner == "LoggingTensorHook":
        return v1.train.LoggingTensorHook({"step": v1.train.get_global_step()}, every_n_iter=1)
    raise AssertionError(owner)


@pytest.mark.parametrize("use", tf_internals.INHERITED, ids=lambda u: f"{u.owner}.{u.name}")
def test_inherited_private_attribute_exists(use: tf_internals.Inherited) -> None:
    owner = getattr(v1.train, use.owner)
    if use.kind == "method":
        assert callable(getattr(owner, use.name, None)), f"{use.owner}.{use.name} is gone ({use.used_by}: {use.why})"
    else:
        hook = _instance(use.owner, use.kind)
        assert hasattr(hook, use.name), f"{use.owner}.{use.name} is gone ({use.used_by}: {use.why})"


PRIVATE_MARKS = (
    "tensorflow.python",
    "TF_SessionRun_wrapper",
    "._c_op",
    "sess._session",
    "session._session",
    "_unsafe_unfinalize",
    "_as_graph_element",
    "_as_tf_output",
    "FileWriterCache._cache",
    '"_cache"',
)


def test_no_other_module_reaches_into_tensorflow_privately() -> None:
    """The uses above are the only ones: no other source file names one of these internals (prose in
    ``double backticks`` may mention them)."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    offenders = sorted(
        f"{path.relative_to(repo)}: {mark}"
        for folder in ("cli", "common", "config_schemas", "hooks", "runner")
        for path in (repo / folder).rglob("*.py")
        if path.name != "tf_internals.py"
        for line in path.read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("#")
        for mark in PRIVATE_MARKS
        if mark in re.sub(r"``[^`]*``", "", line)
    )
    assert offenders == []


def test_newest_checkpoint_record_changes_with_each_save() -> None:
    graph, _, _, var = _graph()
    with graph.as_default():
        saver = v1.train.Saver(max_to_keep=2)
    with v1.Session(graph=graph) as session, tempfile.TemporaryDirectory() as directory:
        session.run(var.initializer)
        assert tf_internals.newest_checkpoint_record(saver) is None
        saver.save(session, f"{directory}/model.ckpt", global_step=1)
        first = tf_internals.newest_checkpoint_record(saver)
        assert first is not None, "Saver._last_checkpoints is gone: hooks/state.py checks every step at 3 us"
        assert tf_internals.newest_checkpoint_record(saver) is first  # the same record until the next save
        saver.save(session, f"{directory}/model.ckpt", global_step=2)
        assert tf_internals.newest_checkpoint_record(saver) is not first



@pytest.mark.parametrize(("pad", "sharded"), [(False, False), (True, False), (False, True)])
def test_meta_graph_path_is_the_file_saver_save_writes(pad: bool, sharded: bool) -> None:
    graph, _, _, var = _graph()
    with graph.as_default():
        saver = v1.train.Saver(pad_step_number=pad, sharded=sharded)
    with v1.Session(graph=graph) as session, tempfile.TemporaryDirectory() as directory:
        session.run(var.initializer)
        before = set(os.listdir(directory))
        saver.save(session, f"{directory}/model.ckpt", global_step=7)
        metas = [name for name in set(os.listdir(directory)) - before if name.endswith(".meta")]
        assert [f"{directory}/{name}" for name in metas] == [
            tf_internals.meta_graph_path(saver, f"{directory}/model.ckpt", 7)
        ], "Saver.save's .meta name (or its private _pad_step_number) changed"


def test_global_step_read_is_tensorflows_cached_read_tensor() -> None:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        assert tf_internals.global_step_read(graph) is None  # no global_step yet
        tf.compat.v1.train.get_or_create_global_step()
        read = tf_internals.global_step_read(graph)
        assert read is tf_internals.global_step_read(graph)  # cached: the one TensorFlow's hooks get
        assert read.dtype == tf.int64


def test_session_interface_is_the_base_class_saver_save_requires() -> None:
    import tensorflow as tf

    assert issubclass(tf.compat.v1.Session, tf_internals.session_interface())


@pytest.mark.parametrize("name", sorted(tf_internals.PRIVATE_MODULES))
def test_each_private_module_imports_with_the_attributes_hookrun_uses(name: str) -> None:
    attributes, why = tf_internals.PRIVATE_MODULES[name]
    module = tf_internals.private_module(name)
    missing = [attribute for attribute in attributes if not hasattr(module, attribute)]
    assert missing == [], f"tensorflow.python.{name} lacks {missing}: {why}"


def test_a_private_module_not_listed_is_refused() -> None:
    with pytest.raises(KeyError, match="PRIVATE_MODULES"):
        tf_internals.private_module("ops.array_ops")
