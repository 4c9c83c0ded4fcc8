"""``hookrun.estimator.Estimator`` on tiny real runs: train's step semantics and run directory, evaluate, predict,
hooks and saving listeners, the YAML way forward (issue 26)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import yaml

from hookrun import estimator as tf_estimator
from tests.estimator import tiny_model
from tests.estimator.conftest import plain_training


def weights(est) -> tuple[np.ndarray, np.ndarray]:
    return est.get_variable_value("w"), est.get_variable_value("b")


def test_steps_are_relative_max_steps_absolute_and_a_finished_max_steps_returns_at_once(estimator, caplog):
    assert estimator.latest_checkpoint() is None
    assert estimator.train(tiny_model.train_input_fn, steps=4) is estimator
    assert estimator.get_variable_value("global_step") == 4
    estimator.train(tiny_model.train_input_fn, steps=3)  # relative: 4 + 3
    assert estimator.get_variable_value("global_step") == 7
    before = sorted(p.name for p in Path(estimator.model_dir).iterdir())
    with caplog.at_level(logging.INFO, logger="tensorflow"):
        estimator.train(tiny_model.train_input_fn, max_steps=7)  # absolute, reached: nothing runs
    assert "Skipping training since max_steps has already saved." in caplog.text
    assert sorted(p.name for p in Path(estimator.model_dir).iterdir()) == before
    estimator.train(tiny_model.train_input_fn, max_steps=9)
    assert estimator.get_variable_value("global_step") == 9
    assert sorted(estimator.get_variable_names()) == ["b", "global_step", "w"]
    assert estimator.latest_checkpoint().endswith("model.ckpt-9")
    # the same model_fn and input_fn in a plain MonitoredTrainingSession: the same weights (each run restarts the
    # input_fn, as Estimator did: 4 + 3 + 2 steps from the data's start)
    plain = plain_training(4)
    fresh = tf_estimator.Estimator(tiny_model.model_fn, model_dir=str(Path(estimator.model_dir).parent / "fresh"),
                                   config=estimator.config.replace(model_dir=None), params={"learning_rate": 0.1})
    fresh.train(tiny_model.train_input_fn, steps=4)
    np.testing.assert_allclose(weights(fresh)[0], plain["w"], rtol=1e-6)
    np.testing.assert_allclose(weights(fresh)[1], plain["b"], rtol=1e-6)


def test_the_run_directory_is_an_ordinary_hookrun_run(estimator):
    estimator.train(tiny_model.train_input_fn, steps=4)
    run = Path(estimator.model_dir)
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["graph"]["builder"] == "tests.estimator.tiny_model:model_fn"  # importable: named
    assert config["data"]["input_fn"] == "tests.estimator.tiny_model:train_input_fn"
    assert config["graph"]["params"] == {"learning_rate": 0.1}
    types = [hook["type"] for hook in config["hooks"]]
    assert types == ["stop_at_step", "nan_tensor", "checkpoint_saver"]  # summaries and step logs off in RunConfig
    assert config["hooks"][2]["save_steps"] == 3 and config["hooks"][0]["num_steps"] == 4
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["final_global_step"] == 4
    assert "python_objects" not in summary
    from hookrun.runner import runs

    (row,) = runs(run).runs
    assert row.status == "finished" and row.steps == 4
    # a lambda input_fn: the run works, and summary.json says YAML cannot name it
    estimator.train(lambda: tiny_model.train_input_fn({}), steps=2)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["final_global_step"] == 6
    assert summary["python_objects"]["objects"] == ["input_fn " + next(
        o for o in summary["python_objects"]["objects"] if "<lambda>" in o).split(" ", 1)[1]]
    assert "test_estimator.py" in summary["python_objects"]["objects"][0]
    assert yaml.safe_load((run / "config.yaml").read_text())["data"]["input_fn"].startswith("hookrun.runner.live:")


def test_run_config_values_become_the_built_in_hooks(tmp_path):
    config = tf_estimator.RunConfig(save_checkpoints_secs=30, keep_checkpoint_max=2, save_summary_steps=2,
                                    log_step_count_steps=5, tf_random_seed=3)
    est = tf_estimator.Estimator(tiny_model.model_fn, model_dir=str(tmp_path / "m"), config=config)
    written = est.train_config(tiny_model.train_input_fn, max_steps=4)
    assert written["hooks"] == [
        {"type": "stop_at_step", "last_step": 4},
        {"type": "nan_tensor"},
        {"type": "checkpoint_saver", "save_secs": 30, "max_to_keep": 2},
        {"type": "summary_saver", "save_steps": 2},
        {"type": "step_counter", "every_n_steps": 5},
    ]
    assert written["data"] == {"input_fn": "tests.estimator.tiny_model:train_input_fn", "save_input_state": False,
                               "seed": 3}
    assert written["session"]["run_dir"] == str(tmp_path / "m")


def test_the_written_yaml_trains_the_same_model_from_the_command_line_api(estimator, tmp_path):
    from hookrun.runner import train

    path = estimator.write_train_config(tmp_path / "from_python.yaml", tiny_model.train_input_fn, steps=4)
    result = train(path, run_dir=tmp_path / "yaml_run")
    assert result.final_global_step == 4
    estimator.train(tiny_model.train_input_fn, steps=4)
    import tensorflow as tf

    from_yaml = tf.train.load_variable(str(tmp_path / "yaml_run" / "model.ckpt-4"), "w")
    np.testing.assert_array_equal(from_yaml, estimator.get_variable_value("w"))
    with pytest.raises(ValueError, match="no importable name"):
        estimator.write_train_config(tmp_path / "x.yaml", lambda: tiny_model.train_input_fn({}))
    with pytest.raises(ValueError, match="hook instances have no YAML form"):
        estimator.train_config(tiny_model.train_input_fn, hooks=[object()])


class CountingHook:
    """A duck-typed SessionRunHook counting after_run calls."""

    def __init__(self):
        self.after_runs = 0
        self.ended = False

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        self.after_runs += 1

    def end(self, session):
        self.ended = True


class RecordingListener:
    """A CheckpointSaverListener recording the steps it saw."""

    def __init__(self):
        self.calls = []

    def begin(self):
        self.calls.append("begin")

    def before_save(self, session, global_step_value):
        self.calls.append(("before_save", global_step_value))

    def after_save(self, session, global_step_value):
        self.calls.append(("after_save", global_step_value))

    def end(self, session, global_step_value):
        self.calls.append(("end", global_step_value))


def test_hooks_and_saving_listeners_run_in_the_training_session(estimator):
    hook, listener = CountingHook(), RecordingListener()
    estimator.train(tiny_model.train_input_fn, hooks=[hook], steps=7, saving_listeners=[listener])
    assert (hook.after_runs, hook.ended) == (7, True)
    saves = [call[1] for call in listener.calls if call[0] == "after_save"]
    assert listener.calls[0] == "begin" and saves == [0, 3, 6, 7] and listener.calls[-1] == ("end", 7)
    no_saver = tf_estimator.Estimator(tiny_model.model_fn, model_dir=estimator.model_dir + "2",
                                      config=tf_estimator.RunConfig(save_checkpoints_secs=None))
    with pytest.raises(ValueError, match="There should be a CheckpointSaverHook"):
        no_saver.train(tiny_model.train_input_fn, steps=1, saving_listeners=[listener])


def test_a_nan_loss_fails_the_run_as_every_hookrun_run(tmp_path):
    from hookrun.common.errors import TrainingError

    def nan_model_fn(features, labels, mode):
        import tensorflow as tf

        v1 = tf.compat.v1
        w = v1.get_variable("w", [2, 1], initializer=v1.zeros_initializer())
        loss = tf.reduce_mean(tf.matmul(features["x"], w)) * float("nan")
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
        return tf_estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    est = tf_estimator.Estimator(nan_model_fn, model_dir=str(tmp_path / "nan"))
    with pytest.raises(TrainingError, match="NaN"):
        est.train(tiny_model.train_input_fn, steps=3)
    summary = json.loads((tmp_path / "nan" / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert "model_fn" in " ".join(summary["python_objects"]["objects"])  # a closure: YAML cannot name it


def test_evaluate_uses_the_latest_checkpoint_returns_loss_and_global_step_and_writes_eval_events(estimator, caplog):
    estimator.train(tiny_model.train_input_fn, steps=5)
    with caplog.at_level(logging.INFO, logger="tensorflow"):
        metrics = estimator.evaluate(tiny_model.eval_input_fn)
    assert set(metrics) == {"mae", "loss", "global_step"} and metrics["global_step"] == 5
    # Estimator's line after each evaluation, as programs' logs (and log scrapers) read it
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Saving dict for global step")]
    assert said == [f"Saving dict for global step 5: global_step = 5, loss = {metrics['loss']}, mae = {metrics['mae']}"]
    w, b = weights(estimator)
    x, y = tiny_model.data(seed=1)
    error = x @ w + b - y
    # loss: the mean of the batches' mean squared errors (4 equal batches), mae over every row
    assert metrics["loss"] == pytest.approx(float(np.mean(error**2)), rel=1e-5)
    assert metrics["mae"] == pytest.approx(float(np.mean(np.abs(error))), rel=1e-5)
    two = estimator.evaluate(tiny_model.eval_input_fn, steps=2, name="half")
    assert two["mae"] == pytest.approx(float(np.mean(np.abs(error[:16]))), rel=1e-5)
    from tests.conftest import event_scalars

    assert event_scalars(Path(estimator.eval_dir()), "loss") == [(5, pytest.approx(metrics["loss"]))]
    assert event_scalars(Path(estimator.eval_dir("half")), "mae") == [(5, pytest.approx(two["mae"]))]
    assert estimator.eval_dir("half") == str(Path(estimator.model_dir) / "eval_half")
    third = str(Path(estimator.model_dir) / "model.ckpt-3")
    older = estimator.evaluate(tiny_model.eval_input_fn, checkpoint_path=third)
    assert older["global_step"] == 3 and older["loss"] > metrics["loss"]


def test_predict_unbatches_with_yield_single_examples_and_keeps_predict_keys(estimator):
    estimator.train(tiny_model.train_input_fn, steps=5)
    w, b = weights(estimator)
    x, _ = tiny_model.data(rows=10, seed=2)
    singles = list(estimator.predict(tiny_model.predict_input_fn))
    assert len(singles) == 10 and set(singles[0]) == {"y", "twice"}
    np.testing.assert_allclose(np.stack([p["y"] for p in singles]), x @ w + b, rtol=1e-5)
    batches = list(estimator.predict(tiny_model.predict_input_fn, yield_single_examples=False))
    assert [batch["y"].shape for batch in batches] == [(4, 1), (4, 1), (2, 1)]
    keyed = next(iter(estimator.predict(tiny_model.predict_input_fn, predict_keys="twice")))
    assert set(keyed) == {"twice"}
    with pytest.raises(ValueError, match="Expected to run at least one output"):
        next(iter(estimator.predict(tiny_model.predict_input_fn, predict_keys=["nope"])))


def test_numpy_input_fn_gives_the_arrays_batches(tmp_path):
    x, y = tiny_model.data()
    numpy_fn = tf_estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=8, num_epochs=None, shuffle=False)
    est = tf_estimator.Estimator(tiny_model.model_fn, model_dir=str(tmp_path / "np"), params={"learning_rate": 0.1},
                                 config=tf_estimator.RunConfig(save_checkpoints_steps=4))
    est.train(numpy_fn, steps=4)
    plain = plain_training(4)
    np.testing.assert_allclose(est.get_variable_value("w"), plain["w"], rtol=1e-6)
    once = tf_estimator.inputs.numpy_input_fn(x, y[:, 0], batch_size=10, shuffle=False)
    batches = list(once())
    assert [len(labels) for _, labels in batches] == [10, 10, 10, 2]  # num_epochs=1: a last, smaller batch
    np.testing.assert_array_equal(batches[0][0].numpy(), x[:10])


def test_pandas_input_fn_gives_the_frames_columns():
    pd = pytest.importorskip("pandas")  # pandas is not a hookrun dependency
    x, y = tiny_model.data()
    frame = pd.DataFrame({"a": x[:, 0], "b": x[:, 1]})
    pandas_fn = tf_estimator.inputs.pandas_input_fn(frame, pd.Series(y[:, 0]), batch_size=10, shuffle=False)
    batches = list(pandas_fn())
    assert [len(labels) for _, labels in batches] == [10, 10, 10, 2]
    np.testing.assert_array_equal(batches[0][0]["b"].numpy(), x[:10, 1])
    with pytest.raises(ValueError, match="Index for x and y are mismatched"):
        tf_estimator.inputs.pandas_input_fn(frame, pd.Series(y[:, 0], index=range(1, 33)), shuffle=False)
