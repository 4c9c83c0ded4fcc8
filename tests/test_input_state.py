"""A ``data.input_fn`` pipeline's position is saved with each checkpoint: a resumed run continues where it
stopped (issue 24). Where TensorFlow cannot save it (a ``py_function``), the input_fn restarts, said in one line.

Every batch's ids go into a variable ``trace[global_step]`` (saved in the checkpoints), so the batches a run
trained on are read back from its last checkpoint.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from hookrun.runner.config import load_config

PROGRAM = """
import numpy as np
import tensorflow as tf

from hookrun.runner import EstimatorSpec

STEPS = 32


def input_fn(params):
    ids = np.arange(40, dtype=np.int64)
    dataset = tf.data.Dataset.from_tensor_slices(({"id": ids, "x": ids.astype(np.float32) / 40.0}, ids % 2))
    dataset = dataset.shuffle(16, seed=3)  # the shuffle buffer's state is saved too
    if params.get("noise"):  # an augmentation's random op: its own state is not saved, the position is
        dataset = dataset.map(lambda f, y: ({"id": f["id"], "x": f["x"] + tf.random.uniform([], 0.0, 1e-6)}, y))
    if params.get("text"):  # a string feature: the window carry holds strings too
        dataset = dataset.map(lambda f, y: ({**f, "name": tf.strings.as_string(f["id"])}, y))
    if params.get("py"):
        dataset = dataset.map(lambda f, y: (f, tf.py_function(lambda v: v, [y], tf.int64)))
        dataset = dataset.map(lambda f, y: (f, tf.reshape(y, [])))
    return dataset.batch(4, drop_remainder=True).repeat(params.get("epochs"))


def model_fn(features, labels, mode, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [], initializer=v1.zeros_initializer())
    trace = v1.get_variable("trace", [STEPS, 4], tf.int64, initializer=v1.constant_initializer(-1), trainable=False)
    step = v1.train.get_global_step()
    loss = tf.reduce_mean(tf.square(w * features["x"] - tf.cast(labels, tf.float32)))
    record = v1.scatter_update(trace, tf.reshape(step, [1]), tf.reshape(features["id"], [1, 4]))
    with tf.control_dependencies([record]):
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return EstimatorSpec(mode, loss=loss, train_op=train_op)
"""


def config(tmp_path: Path, module: str, last_step: int, **extra: Any) -> Any:
    params = {key: extra.pop(key) for key in ("py", "epochs", "noise", "text") if key in extra}
    data = {"input_fn": f"{module}:input_fn", "seed": 0, **extra.pop("data", {})}
    text = {
        "name": "input-state",
        "graph": {"builder": f"{module}:model_fn", "params": params},
        "data": data,
        "session": extra,
        "hooks": [{"type": "stop_at_step", "last_step": last_step}, {"type": "checkpoint_saver", "save_steps": 100}],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(text, sort_keys=False), encoding="utf-8")
    return load_config(path)


def trace(run: Path) -> np.ndarray:
    import tensorflow as tf

    return tf.train.load_variable(tf.train.latest_checkpoint(str(run)), "trace")


@pytest.mark.parametrize(("steps_per_run", "engine"), [(1, "hookrun"), (4, "hookrun"), (1, "tf")])
def test_a_resumed_input_fn_continues_where_it_stopped(
    write_module, tmp_path, run_train, captured, steps_per_run, engine
):
    """Train 7 steps (8 at N = 4: its windows end there), stop, resume to 14 (16): the batches seen equal an
    uninterrupted run's, on both engines. The shuffle's buffer is in the checkpoint."""
    module = write_module("input_state_program", PROGRAM)
    stop, end = (7, 14) if steps_per_run == 1 else (8, 16)
    session = {"steps_per_run": steps_per_run, "engine": engine}
    run_train(config(tmp_path, module, stop, **session), run_dir=tmp_path / "cut")
    assert "continues" not in captured.text
    resumed = run_train(config(tmp_path, module, end, **session), run_dir=tmp_path / "cut")
    assert (resumed.initial_step, resumed.final_global_step) == (stop, end)
    assert f"data.input_fn {module}:input_fn continues from its position saved in the checkpoint" in captured.text
    whole = run_train(config(tmp_path, module, end, **session), run_dir=tmp_path / "whole")
    assert whole.final_global_step == end
    np.testing.assert_array_equal(trace(tmp_path / "cut"), trace(tmp_path / "whole"))
    seen = trace(tmp_path / "whole")[:end]
    assert (seen >= 0).all() and len({tuple(row) for row in seen[:10]}) == 10  # ten different batches: 40 ids


def weights(run: Path) -> dict[str, np.ndarray]:
    """The model's variables at the run's last checkpoint (``w``, ``trace``, ``global_step``)."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(run)))
    return {name: reader.get_tensor(name) for name in ("w", "trace", "global_step")}


def carried_batches(run: Path) -> tuple[int, set[int]]:
    """The window carry of the run's last checkpoint: its count of unused stacked batches, and the leading
    dimension of each of its parts."""
    import tensorflow as tf

    from hookrun.runner.graph.fused import CARRY_NAME

    prefix = tf.train.latest_checkpoint(str(run))
    saved = tf.train.list_variables(prefix)
    parts = {shape[0] for name, shape in saved if name.startswith(CARRY_NAME + "/") and shape}
    return int(tf.train.load_variable(prefix, CARRY_NAME + "/held")), parts


@pytest.mark.parametrize("engine", ["hookrun", "tf"])
def test_a_resume_inside_a_stacked_window_trains_on_the_batches_that_window_left(
    write_module, tmp_path, run_train, captured, engine
):
    """N = 5, stacked windows: stop at 7 (two steps into the second window: three of its batches unused), resume
    to 13 (those three, then 10..13: inside a window again), then to 20. Every batch trained, in order (``trace``),
    and the weights equal an uninterrupted run's at N = 5 and at N = 1, bit for bit, on both engines."""
    module = write_module("input_state_program", PROGRAM)
    cut = tmp_path / "cut"
    held = []
    for last in (7, 13, 20):
        result = run_train(config(tmp_path, module, last, steps_per_run=5, text=True, engine=engine), run_dir=cut)
        assert result.final_global_step == last
        held.append(carried_batches(cut))
        if last == 7:  # Estimator's view of the checkpoint: its variables, not the input's position or carry
            from hookrun.estimator import Estimator

            names = Estimator(sys.modules[module].model_fn, model_dir=str(cut)).get_variable_names()
            assert sorted(names) == ["global_step", "trace", "w"]
            import tensorflow as tf

            from hookrun.runner.graph.fused import CARRY_NAME

            saved = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(cut))).get_variable_to_dtype_map()
            assert tf.string in {dtype for name, dtype in saved.items() if name.startswith(CARRY_NAME)}
    assert held == [(3, {3}), (2, {2}), (0, {0})]  # exactly the unused batches, none after a full window
    assert f"data.input_fn {module}:input_fn continues from its position saved in the checkpoint" in captured.text
    for n in (5, 1):
        run_train(config(tmp_path, module, 20, steps_per_run=n, text=True, engine=engine),
                  run_dir=tmp_path / f"whole{n}")
        for name, value in weights(tmp_path / f"whole{n}").items():
            np.testing.assert_array_equal(weights(cut)[name], value, err_msg=f"{name} (N = {n})")
    seen = trace(cut)[:20]
    assert len({tuple(row) for row in seen[:10]}) == 10 and len({tuple(row) for row in seen[10:20]}) == 10


def test_a_resume_under_another_steps_per_run_restarts_the_input_and_says_why(
    write_module, tmp_path, run_train, captured
):
    """Saved under N = 5, resumed under N = 4: the saved prefetch buffer holds a window of 5 batches (the next pull
    would fail, Incompatible shapes) and the carry some of its batches: the input restarts, said in one line."""
    module = write_module("input_state_program", PROGRAM)
    cut = tmp_path / "cut"
    run_train(config(tmp_path, module, 7, steps_per_run=5), run_dir=cut)
    result = run_train(config(tmp_path, module, 12, steps_per_run=4), run_dir=cut)
    assert result.final_global_step == 12
    assert (f"data.input_fn {module}:input_fn restarts from its first element (as Estimator did; its dataset "
            "changed since the checkpoint, whose saved position does not fit: its windows were of 5 batches "
            "there (session.steps_per_run), 4 now)") in captured.text
    run_train(config(tmp_path, module, 5, steps_per_run=4), run_dir=tmp_path / "whole")
    np.testing.assert_array_equal(trace(cut)[7:12], trace(tmp_path / "whole")[:5])


def test_a_checkpoint_with_the_position_but_no_window_carry_still_restores(write_module, tmp_path, run_train):
    """A checkpoint of an older hookrun (the position saved after a stacked window's pull, no carry): it restores,
    the resumed run continues from that position with an empty carry (the three unused batches stay skipped)."""
    import tensorflow as tf

    from hookrun.runner.graph.fused import CARRY_NAME

    module = write_module("input_state_program", PROGRAM)
    run_train(config(tmp_path, module, 7, steps_per_run=5), run_dir=tmp_path / "cut")
    prefix = tf.train.latest_checkpoint(str(tmp_path / "cut"))
    dtypes = tf.train.load_checkpoint(prefix).get_variable_to_dtype_map()
    keep = sorted(name for name in dtypes if not name.startswith(CARRY_NAME + "/"))
    assert len(keep) < len(dtypes)
    values = tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=keep, shape_and_slices=[""] * len(keep),
                                  dtypes=[dtypes[name] for name in keep])
    for path in Path(prefix).parent.glob(Path(prefix).name + ".*"):
        path.unlink()
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=keep, shape_and_slices=[""] * len(keep), tensors=values)
    run_train(config(tmp_path, module, 13, steps_per_run=5), run_dir=tmp_path / "cut")
    run_train(config(tmp_path, module, 16, steps_per_run=5), run_dir=tmp_path / "whole")
    cut, whole = trace(tmp_path / "cut"), trace(tmp_path / "whole")
    np.testing.assert_array_equal(cut[:7], whole[:7])
    np.testing.assert_array_equal(cut[7:13], whole[10:16])  # from the position: after the window of steps 5..9


def test_a_py_function_pipeline_restarts_and_says_so_in_one_line(write_module, tmp_path, run_train, captured):
    module = write_module("input_state_program", PROGRAM)
    run_train(config(tmp_path, module, 3, py=True), run_dir=tmp_path / "run")
    resumed = run_train(config(tmp_path, module, 6, py=True), run_dir=tmp_path / "run")
    assert resumed.final_global_step == 6
    lines = [line for line in captured.text.splitlines() if "restarts from its first element" in line]
    assert len(lines) == 1 and "TensorFlow cannot save its position" in lines[0]
    steps = trace(tmp_path / "run")
    np.testing.assert_array_equal(steps[3:6], steps[0:3])  # read again from its start, as Estimator did

    from hookrun.common.errors import SetupError

    with pytest.raises(SetupError, match=r"save_input_state: true, but data.input_fn .* cannot be saved"):
        run_train(config(tmp_path, module, 9, py=True, data={"save_input_state": True}), run_dir=tmp_path / "run")


def test_an_old_checkpoint_without_the_input_state_still_restores(write_module, tmp_path, run_train, captured):
    """A checkpoint written without the position (save_input_state: false, as before this change) restores;
    the input restarts, said in one line; the checkpoints written after it hold the position."""
    import tensorflow as tf

    from hookrun.runner.data.input_state import STATE_KEY, has_input_state

    module = write_module("input_state_program", PROGRAM)
    run = tmp_path / "run"
    run_train(config(tmp_path, module, 3, data={"save_input_state": False}), run_dir=run)
    assert not has_input_state(tf, tf.train.latest_checkpoint(str(run)))
    resumed = run_train(config(tmp_path, module, 6), run_dir=run)
    assert (resumed.initial_step, resumed.final_global_step) == (3, 6)
    assert "its checkpoint holds no saved position" in captured.text
    steps = trace(run)
    np.testing.assert_array_equal(steps[3:6], steps[0:3])  # restarted
    assert STATE_KEY in dict(tf.train.list_variables(tf.train.latest_checkpoint(str(run))))


def test_a_run_that_read_its_data_to_the_end_starts_a_new_pass(write_module, tmp_path, run_train, captured):
    """The last checkpoint of a run that ended at the end of its data holds an exhausted position: the next
    run reads the data again (a new pass, as Estimator's train() made), not zero steps."""
    module = write_module("input_state_program", PROGRAM)
    run = tmp_path / "run"
    first = run_train(config(tmp_path, module, 30, epochs=1), run_dir=run)
    assert (first.final_global_step, first.end_of_data) == (10, True)
    second = run_train(config(tmp_path, module, 30, epochs=1), run_dir=run)
    assert (second.initial_step, second.final_global_step, second.end_of_data) == (10, 20, True)
    assert "the last run read it to its end: a new pass" in captured.text


def test_a_warm_start_from_a_run_with_a_saved_position_loads_weights_only(write_module, tmp_path, run_train):
    """Warm start takes the trainable variables alone: the new run's input starts from its first element.
    (Guards behaviour that held: init_from_checkpoint never reads the input's entry.)"""
    module = write_module("input_state_program", PROGRAM)
    run_train(config(tmp_path, module, 5), run_dir=tmp_path / "source")
    config(tmp_path, module, 3)
    path = tmp_path / "config.yaml"
    text = yaml.safe_load(path.read_text())
    text["graph"]["warm_start"] = {"from": str(tmp_path / "source")}
    path.write_text(yaml.safe_dump(text, sort_keys=False), encoding="utf-8")
    result = run_train(load_config(path), run_dir=tmp_path / "warm")
    assert (result.initial_step, result.final_global_step) == (0, 3)
    np.testing.assert_array_equal(trace(tmp_path / "warm")[:3], trace(tmp_path / "source")[:3])


def test_auto_does_not_copy_a_large_dataset_graph_into_every_checkpoint(write_module, tmp_path, run_train, captured,
                                                                         monkeypatch):
    """SerializeIterator writes the dataset's graph (a from_tensor_slices' arrays included) into every saved
    position: above GRAPH_LIMIT bytes, auto restarts instead (said in one line); true saves it anyway."""
    import tensorflow as tf

    from hookrun.runner.data import input_state

    monkeypatch.setattr(input_state, "GRAPH_LIMIT", 100)  # the program's graph is a few kB
    module = write_module("input_state_program", PROGRAM)
    run = tmp_path / "run"
    run_train(config(tmp_path, module, 2), run_dir=run)
    assert not input_state.has_input_state(tf, tf.train.latest_checkpoint(str(run)))
    run_train(config(tmp_path, module, 4), run_dir=run)
    assert "MB in its graph (arrays as constants), which every checkpoint would copy" in captured.text
    run_train(config(tmp_path, module, 6, data={"save_input_state": True}), run_dir=run)
    assert input_state.has_input_state(tf, tf.train.latest_checkpoint(str(run)))


def test_save_input_state_beside_data_files_is_refused_at_its_line(tmp_path):
    from hookrun.config_schemas.yaml_source import ConfigError

    (tmp_path / "d.csv").write_text("x,y\n1,2\n")
    path = tmp_path / "config.yaml"
    path.write_text(
        "name: t\ngraph: {builder: linear_regressor}\n"
        "data: {train: d.csv, label: y, save_input_state: true}\nhooks: []\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="save_input_state` goes with `input_fn`; the built-in reader resumes"):
        load_config(path)


def test_an_input_fn_changed_since_the_checkpoint_restarts_and_says_why(write_module, tmp_path, run_train, captured):
    """A pipeline edited between runs (one more map) no longer fits the saved position: the weights restore,
    the input restarts, said in one line with TensorFlow's reason (was a failed run, exit 1)."""
    import sys

    module = write_module("input_state_program", PROGRAM)
    run = tmp_path / "run"
    run_train(config(tmp_path, module, 3), run_dir=run)
    edited = PROGRAM.replace("shuffle(16, seed=3)", "shuffle(16, seed=3).map(lambda f, y: (f, y * 1))")
    (tmp_path / f"{module}.py").write_text(edited, encoding="utf-8")
    sys.modules.pop(module, None)
    resumed = run_train(config(tmp_path, module, 6), run_dir=run)
    assert (resumed.initial_step, resumed.final_global_step) == (3, 6)
    lines = [line for line in captured.text.splitlines() if "restarts from its first element" in line]
    assert len(lines) == 1 and "its dataset changed since the checkpoint" in lines[0]
    assert "Failed to restore dataset iterator" in lines[0]
    steps = trace(run)
    np.testing.assert_array_equal(steps[3:6], steps[0:3])


def test_a_random_augmentation_keeps_the_position_saved(write_module, tmp_path, run_train, captured):
    """A random op in a map is stateful, so TensorFlow's FAIL policy refuses to save it; its position is still
    saved (IGNORE: the random stream starts again), and the resumed run says which op's state is left out."""
    module = write_module("input_state_program", PROGRAM)
    run_train(config(tmp_path, module, 4, noise=True), run_dir=tmp_path / "cut")
    run_train(config(tmp_path, module, 8, noise=True), run_dir=tmp_path / "cut")
    assert "continues from its position saved in the checkpoint (the state of its RandomUniform op is not saved" \
        in captured.text
    run_train(config(tmp_path, module, 8, noise=True), run_dir=tmp_path / "whole")
    np.testing.assert_array_equal(trace(tmp_path / "cut"), trace(tmp_path / "whole"))



def test_a_model_fns_own_saver_leaves_the_position_unsaved_and_says_so(write_module, tmp_path, run_train, captured):
    own = PROGRAM.replace(
        "    return EstimatorSpec(mode, loss=loss, train_op=train_op)",
        "    scaffold = tf.compat.v1.train.Scaffold(saver=tf.compat.v1.train.Saver(max_to_keep=2))\n"
        "    return EstimatorSpec(mode, loss=loss, train_op=train_op, scaffold=scaffold)",
    )
    module = write_module("input_state_program", own)
    run = tmp_path / "run"
    run_train(config(tmp_path, module, 3), run_dir=run)
    run_train(config(tmp_path, module, 6), run_dir=run)
    lines = [line for line in captured.text.splitlines() if "restarts from its first element" in line]
    assert len(lines) == 1 and "EstimatorSpec.scaffold gives its own saver" in lines[0]
    steps = trace(run)
    np.testing.assert_array_equal(steps[3:6], steps[0:3])
