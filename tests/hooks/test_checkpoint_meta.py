"""``checkpoint_saver``'s ``.meta`` files: exported once per session, copied byte for byte to every later checkpoint.

Each run spies on ``Saver.export_meta_graph`` (the call that serializes the graph), keeps the graph and
``Saver`` it was called with, and after the run asks that ``Saver`` to export again: every
``model.ckpt-<step>.meta`` must equal those bytes, be a file of its own, import with
``tf.compat.v1.train.import_meta_graph`` and restore its checkpoint.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

from hookrun.common.files import describe_write_failure
from hookrun.hooks.checkpoint_saver import hook as checkpoint_hook
from hookrun.hooks.checkpoint_saver.hook import CheckpointSaverHook, MetaGraphOnceSaver
from hookrun.hooks.step_clock import StepClock
from hookrun.runner.run_dir.directory import clean_temporary_files
from tests.conftest import user_module

v1 = tf.compat.v1


@dataclass
class Exports:
    """Every ``Saver.export_meta_graph(filename)`` call: the file, the ``Saver`` and the default graph."""

    calls: list[tuple[str, Any, Any]] = field(default_factory=list)

    def files(self) -> list[str]:
        return [Path(name).name for name, _, _ in self.calls]

    def export_again(self, path: Path) -> bytes:
        """What the last exporting ``Saver`` writes now for its graph (the name does not enter the bytes)."""
        _, saver, graph = self.calls[-1]
        with graph.as_default():
            original_export(saver, str(path))
        return path.read_bytes()


original_export = v1.train.Saver.export_meta_graph


@pytest.fixture
def exports(monkeypatch) -> Exports:
    spy = Exports()

    def export(self, filename=None, *args, **kwargs):
        if filename:
            spy.calls.append((str(filename), self, v1.get_default_graph()))
        return original_export(self, filename, *args, **kwargs)

    monkeypatch.setattr(v1.train.Saver, "export_meta_graph", export)
    return spy


def hooks(last_step: int, save_steps: int = 5, max_to_keep: int = 10, extra: list | None = None) -> list[dict]:
    return [
        {"type": "stop_at_step", "last_step": last_step},
        {"type": "checkpoint_saver", "save_steps": save_steps, "max_to_keep": max_to_keep},
        *(extra or []),
    ]


def metas(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.glob("*.meta"))}


def assert_own_files(directory: Path) -> None:
    """Every ``.meta`` is a regular file with one link, an inode of its own (a copy, not a link), the same mode."""
    inodes, modes = set(), set()
    for path in directory.glob("*.meta"):
        info = path.lstat()
        assert path.is_file() and not path.is_symlink() and info.st_nlink == 1, path
        inodes.add(info.st_ino)
        modes.add(info.st_mode)
    assert len(inodes) == len(list(directory.glob("*.meta")))
    assert len(modes) == 1  # the copies have the permissions TensorFlow's export gives


def assert_imports_and_restores(prefix: Path) -> None:
    """``import_meta_graph(<prefix>.meta)`` in a fresh graph, restore ``prefix``: the values are the checkpoint's."""
    with tf.Graph().as_default() as graph, v1.Session(graph=graph) as session:
        saver = v1.train.import_meta_graph(f"{prefix}.meta")
        saver.restore(session, str(prefix))
        variables = v1.global_variables()
        assert variables
        for variable in variables:
            expected = tf.train.load_variable(str(prefix), variable.op.name)
            np.testing.assert_array_equal(session.run(variable), expected)


@pytest.mark.parametrize("engine", ["hookrun", "tf"])
def test_one_export_per_session_and_every_meta_is_its_bytes(make_config, run_train, exports, tmp_path, engine):
    result = run_train(make_config(hooks=hooks(12), session={"engine": engine}))
    run_dir = result.run_dir
    # Saves at 0 (the session's start), 5, 10 and 12 (the end); only the first exports.
    assert exports.files() == ["model.ckpt-0.meta"]
    written = metas(run_dir)
    assert sorted(written) == [f"model.ckpt-{step}.meta" for step in (0, 10, 12, 5)]
    expected = exports.export_again(tmp_path / "again.meta")
    assert all(data == expected for data in written.values())
    assert_own_files(run_dir)
    assert_imports_and_restores(run_dir / "model.ckpt-12")


def test_max_to_keep_deletes_old_metas_even_the_exported_one(make_config, run_train, exports, tmp_path):
    result = run_train(make_config(hooks=hooks(6, save_steps=2, max_to_keep=1)))
    assert exports.files() == ["model.ckpt-0.meta"]
    assert sorted(metas(result.run_dir)) == ["model.ckpt-6.meta"]
    assert sorted(p.name for p in result.run_dir.glob("model.ckpt-*.index")) == ["model.ckpt-6.index"]
    assert metas(result.run_dir)["model.ckpt-6.meta"] == exports.export_again(tmp_path / "again.meta")
    assert_imports_and_restores(result.run_dir / "model.ckpt-6")


def test_a_resumed_run_in_a_moved_directory_exports_afresh(make_config, run_train, exports, tmp_path):
    first_dir, moved = tmp_path / "first", tmp_path / "moved"
    run_train(make_config(hooks=hooks(6)), run_dir=first_dir)
    assert exports.files() == ["model.ckpt-0.meta"]
    shutil.move(first_dir, moved)
    exports.calls.clear()
    result = run_train(make_config(hooks=hooks(12), filename="more.yaml"), run_dir=moved)
    assert result.initial_step == 6 and result.final_global_step == 12
    # The new session exports once, at its first save (step 6, TensorFlow's save at session start).
    assert exports.calls and [Path(name).parent for name, _, _ in exports.calls] == [moved]
    assert exports.files() == ["model.ckpt-6.meta"]
    assert not first_dir.exists()
    expected = exports.export_again(tmp_path / "again.meta")
    written = metas(moved)
    for step in (6, 11, 12):  # the timer restarts at the session's save at 6
        assert written[f"model.ckpt-{step}.meta"] == expected
    assert_own_files(moved)
    assert_imports_and_restores(moved / "model.ckpt-12")


#: A model_fn whose EstimatorSpec.scaffold gives its own Saver: zero-padded step numbers, 3 kept.
PADDED_SAVER = """
import tensorflow as tf
from hookrun.runner import EstimatorSpec


def model_fn(features, labels, mode, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())
    out = tf.matmul(features, w)
    loss = tf.reduce_mean(tf.square(out - labels))
    saver = v1.train.Saver(max_to_keep=3, pad_step_number=True)
    return EstimatorSpec(mode=mode, loss=loss, predictions=out, scaffold=v1.train.Scaffold(saver=saver))
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


def test_a_scaffold_saver_of_its_own_gets_its_own_meta(make_config, run_train, write_module, exports, tmp_path):
    module = write_module("padded", PADDED_SAVER)
    result = run_train(make_config(graph={"builder": f"{module}:model_fn"}, hooks=hooks(12)))
    assert exports.files() == ["model.ckpt-00000000.meta"]
    written = metas(result.run_dir)
    assert sorted(written) == [f"model.ckpt-{step:08d}.meta" for step in (5, 10, 12)]  # max_to_keep=3, its own
    expected = exports.export_again(tmp_path / "again.meta")
    assert all(data == expected for data in written.values())
    meta = v1.MetaGraphDef()
    meta.ParseFromString(expected)
    assert meta.saver_def.max_to_keep == 3  # the model_fn's Saver, not hookrun's
    assert_imports_and_restores(result.run_dir / "model.ckpt-00000012")


#: A custom hook that, after the first step, plants symlinks and a hard link where the .meta files go.
VANDAL = """
import os
import tensorflow as tf


class Vandal(tf.compat.v1.train.SessionRunHook):
    def __init__(self, run_dir, outside):
        self.run_dir, self.outside, self.done = run_dir, outside, False

    def after_run(self, run_context, run_values):
        if self.done:
            return
        self.done = True
        first = os.path.join(self.run_dir, "model.ckpt-0.meta")
        os.unlink(first)
        os.symlink(os.path.join(self.outside, "a"), first)  # the exported .meta is now a symlink
        os.symlink(os.path.join(self.outside, "b"), os.path.join(self.run_dir, "model.ckpt-5.meta"))
        os.link(os.path.join(self.outside, "c"), os.path.join(self.run_dir, "model.ckpt-10.meta"))
"""


def test_symlinks_and_links_planted_at_meta_names_are_replaced_not_written_through(
    make_config, run_train, write_module, exports, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in "abc":
        (outside / name).write_text(f"mine {name}\n")
    module = write_module("vandal", VANDAL)
    vandal = {"type": "custom", "class": f"{module}:Vandal", "args": {"run_dir": "${run_dir}", "outside": str(outside)}}
    result = run_train(make_config(hooks=hooks(12, extra=[vandal])))
    assert user_module(module)  # imported by the runner
    assert {name: (outside / name).read_text() for name in "abc"} == {n: f"mine {n}\n" for n in "abc"}
    assert exports.files() == ["model.ckpt-0.meta"]  # the deleted first .meta is not needed for later copies
    expected = exports.export_again(tmp_path / "again.meta")
    for step in (5, 10, 12):
        path = result.run_dir / f"model.ckpt-{step}.meta"
        assert not path.is_symlink() and path.lstat().st_nlink == 1 and path.read_bytes() == expected
    assert_imports_and_restores(result.run_dir / "model.ckpt-12")


def test_a_copy_that_cannot_be_written_falls_back_to_exporting(make_config, run_train, exports, monkeypatch, tmp_path):
    real_replace = os.replace
    refused: list[str] = []

    def replace(source, destination):
        if str(destination).endswith(".meta") and ".tmp" in str(source):
            refused.append(str(destination))
            raise PermissionError(errno.EACCES, "refused by the test", str(destination))
        return real_replace(source, destination)

    monkeypatch.setattr(checkpoint_hook.os, "replace", replace)
    result = run_train(make_config(hooks=hooks(12)))
    assert [Path(name).name for name in refused] == ["model.ckpt-5.meta", "model.ckpt-10.meta", "model.ckpt-12.meta"]
    assert exports.files() == [f"model.ckpt-{step}.meta" for step in (0, 5, 10, 12)]
    expected = exports.export_again(tmp_path / "again.meta")
    assert all(data == expected for data in metas(result.run_dir).values())
    assert [p.name for p in result.run_dir.iterdir() if ".tmp" in p.name] == []


# --- the wrapped Saver alone, on a plain session ---------------------------------------------------


def _session_graph(constant_bytes: int = 0) -> tuple[Any, Any, Any]:
    graph = tf.Graph()
    with graph.as_default():
        step = v1.train.get_or_create_global_step()
        weight = v1.get_variable("w", initializer=1.5)
        if constant_bytes:  # a large constant makes the .meta large, the checkpoint small
            tf.constant(np.zeros(constant_bytes // 4, np.float32), name="big")
        train_op = tf.group(v1.assign_add(weight, 1.0), v1.assign_add(step, 1))
        saver = v1.train.Saver(max_to_keep=10)
    return graph, saver, train_op


def test_a_full_disk_fails_the_save_naming_the_meta_and_keeps_the_last_checkpoint(tmp_path, exports):
    graph, saver, train_op = _session_graph(constant_bytes=256 * 1024)
    wrapper = MetaGraphOnceSaver(saver)
    prefix = str(tmp_path / "model.ckpt")
    with v1.Session(graph=graph) as session:
        session.run(v1.global_variables_initializer())
        graph.finalize()
        wrapper.save(session, prefix, global_step=1)
        assert (tmp_path / "model.ckpt-1.meta").stat().st_size > 256 * 1024
        session.run(train_op)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, hard))  # the checkpoint fits, the .meta does not
        try:
            with pytest.raises(Exception) as raised:
                wrapper.save(session, prefix, global_step=2)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    message = describe_write_failure(raised.value)
    assert message == f"cannot write {tmp_path}/model.ckpt-2.meta: [Errno {errno.EFBIG}] {os.strerror(errno.EFBIG)}"
    assert exports.files() == ["model.ckpt-1.meta", "model.ckpt-2.meta"]  # the copy failed, the export too
    assert not (tmp_path / "model.ckpt-2.meta").exists()
    # The copy removed its temporary; TensorFlow's export leaves its own, which the runner removes after a
    # failed run (clean_temporary_files), so one is left here, not two.
    left = [p.name for p in tmp_path.iterdir() if ".tmp" in p.name or "tempstate" in p.name]
    assert len(left) == 1 and left[0].startswith("model.ckpt-2.meta.tmp"), left
    assert clean_temporary_files(tmp_path) == left
    assert_imports_and_restores(tmp_path / "model.ckpt-1")


def test_save_graph_def_false_writes_no_meta_and_an_unfinalized_graph_exports_every_time(tmp_path, exports):
    for save_graph_def, finalize in ((False, True), (True, False)):
        directory = tmp_path / f"{save_graph_def}-{finalize}"
        exports.calls.clear()
        graph, saver, train_op = _session_graph()
        with graph.as_default(), v1.Session(graph=graph) as session:
            hook = CheckpointSaverHook(StepClock(), str(directory), save_steps=2, saver=saver,
                                       save_graph_def=save_graph_def)
            hook.begin()
            session.run(v1.global_variables_initializer())
            if finalize:
                graph.finalize()
            hook.after_create_session(session, None)  # saves step 0
            for step in range(1, 5):
                session.run(train_op)
                hook._save(session, step)
        names = sorted(p.name for p in directory.glob("*.meta"))
        if save_graph_def:  # not finalized: TensorFlow's export at every save
            assert names == [f"model.ckpt-{step}.meta" for step in range(5)]
            assert exports.files() == [f"model.ckpt-{step}.meta" for step in range(5)]
        else:
            assert names == [] and exports.files() == []
    v1.summary.FileWriterCache.clear()


def test_a_listener_reads_each_checkpoints_meta_in_after_save(tmp_path, exports):
    class Reader(v1.train.CheckpointSaverListener):
        def __init__(self) -> None:
            self.seen: dict[int, bytes] = {}

        def after_save(self, session: Any, global_step_value: int) -> None:
            self.seen[global_step_value] = (tmp_path / f"model.ckpt-{global_step_value}.meta").read_bytes()

    reader = Reader()
    graph, saver, train_op = _session_graph()
    with graph.as_default(), v1.Session(graph=graph) as session:
        hook = CheckpointSaverHook(StepClock(), str(tmp_path), save_steps=2, saver=saver, listeners=[reader])
        hook.begin()
        session.run(v1.global_variables_initializer())
        graph.finalize()
        hook.after_create_session(session, None)  # saves step 0, exporting
        for step in range(1, 4):
            session.run(train_op)
            hook._save(session, step)  # copies
    v1.summary.FileWriterCache.clear()
    assert exports.files() == ["model.ckpt-0.meta"]
    expected = exports.export_again(tmp_path / "again.meta")
    assert sorted(reader.seen) == [0, 1, 2, 3] and all(data == expected for data in reader.seen.values())


def test_a_meta_graph_over_the_copy_limit_is_exported_at_every_save(tmp_path, exports, monkeypatch):
    graph, saver, train_op = _session_graph()
    wrapper = MetaGraphOnceSaver(saver)
    with v1.Session(graph=graph) as session:
        session.run(v1.global_variables_initializer())
        graph.finalize()
        wrapper.save(session, str(tmp_path / "model.ckpt"), global_step=1)
        size = (tmp_path / "model.ckpt-1.meta").stat().st_size
        wrapper.forget()
        monkeypatch.setattr(checkpoint_hook, "META_GRAPH_COPY_LIMIT", size - 1)
        for step in (2, 3, 4):
            session.run(train_op)
            wrapper.save(session, str(tmp_path / "model.ckpt"), global_step=step)
    assert exports.files() == [f"model.ckpt-{step}.meta" for step in (1, 2, 3, 4)]
    expected = exports.export_again(tmp_path / "again.meta")
    assert all((tmp_path / f"model.ckpt-{step}.meta").read_bytes() == expected for step in (1, 2, 3, 4))
