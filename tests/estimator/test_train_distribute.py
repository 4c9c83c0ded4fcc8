"""``RunConfig(train_distribute=MirroredStrategy(devices))`` trains on hookrun's towers (issue 26).

Under Estimator the input_fn's batches were per replica and the optimizer averaged the replicas' gradients
(each mean loss scaled by 1/K, the gradients summed): K towers on batches of B rows train as one device on
batches of K*B rows. Checked on logical CPU devices, as tests/runner/test_towers.py does.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import yaml

from hookrun import estimator as tf_estimator
from tests.estimator import tiny_model


class LossHook:
    """Records the model_fn's loss (``mean_squared_error/value``) after every step, as a hook sees it."""

    def __init__(self):
        self.losses = []

    def begin(self):
        self.loss = tf.compat.v1.get_default_graph().get_tensor_by_name("mean_squared_error/value:0")

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self.loss)

    def after_run(self, run_context, run_values):
        self.losses.append(run_values.results)

    def end(self, session):
        pass


def run_config(**kwargs):
    return tf_estimator.RunConfig(save_checkpoints_steps=100, save_summary_steps=None, log_step_count_steps=None,
                                  tf_random_seed=0, **kwargs)


@pytest.mark.parametrize("strategy_class", [tf.distribute.MirroredStrategy, tf.compat.v1.distribute.MirroredStrategy])
def test_mirrored_strategy_trains_as_one_device_on_the_global_batch(tmp_path, strategy_class):
    with tf.Graph().as_default():  # in graph mode: no eager CPU:1 needed (a program sets logical devices first)
        strategy = strategy_class(["/cpu:0", "/cpu:1"])
    config = run_config(train_distribute=strategy)
    assert config.train_distribute is strategy and config.train_devices == ("cpu:0", "cpu:1")
    towers = tf_estimator.Estimator(tiny_model.model_fn, model_dir=str(tmp_path / "towers"), config=config,
                                    params={"learning_rate": 0.1, "batch": 4})  # 4 rows per replica
    towers_losses = LossHook()
    towers.train(tiny_model.train_input_fn, steps=5, hooks=[towers_losses])
    one = tf_estimator.Estimator(tiny_model.model_fn, model_dir=str(tmp_path / "one"), config=run_config(),
                                 params={"learning_rate": 0.1, "batch": 8})  # the global batch
    one_losses = LossHook()
    one.train(tiny_model.train_input_fn, steps=5, hooks=[one_losses])
    assert towers.get_variable_value("global_step") == 5
    for name in ("w", "b"):
        np.testing.assert_allclose(towers.get_variable_value(name), one.get_variable_value(name), rtol=1e-6)
    assert not np.allclose(one.get_variable_value("w"), 0)
    # the loss hooks see: the replicas' mean, as Estimator reported it (its optimizer scaled the loss by 1/K)
    np.testing.assert_allclose(towers_losses.losses, one_losses.losses, rtol=1e-6)
    assert len(towers_losses.losses) == 5
    assert "tower_1/" in (Path(towers.model_dir) / "graph.pbtxt").read_text()  # two towers were built
    saved = yaml.safe_load((Path(towers.model_dir) / "config.yaml").read_text())
    assert saved["device"] == ["cpu:0", "cpu:1"]
    objects = json.loads((Path(towers.model_dir) / "summary.json").read_text())["python_objects"]["objects"]
    assert objects[0:1] == ["input_fn tests.estimator.tiny_model:train_input_fn, its per-replica batches joined 2 at a "
                       "time (train_distribute)"]
    with pytest.raises(ValueError, match=r"batches are per replica, which YAML cannot say.*device: \['cpu:0'"):
        towers.train_config(tiny_model.train_input_fn, steps=1)


def test_other_strategies_raise_one_line():
    with pytest.raises(ValueError, match=r"^RunConfig\(train_distribute=OneDeviceStrategy\) is not supported by "
                                         r"hookrun.estimator: only tf.distribute.MirroredStrategy"):
        run_config(train_distribute=tf.distribute.OneDeviceStrategy("/cpu:0"))
    with pytest.raises(ValueError, match="eval_distribute"):
        run_config(eval_distribute=object())


def test_a_strategy_on_a_tf_config_cluster_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["127.0.0.1:1"]},
                                                "task": {"type": "worker", "index": 0}}))
    with tf.Graph().as_default():
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    estimator = tf_estimator.Estimator(tiny_model.model_fn, model_dir=str(tmp_path / "m"),
                                       config=run_config(train_distribute=strategy))
    with pytest.raises(ValueError, match=r"^RunConfig\(train_distribute=MirroredStrategy\) with a TF_CONFIG cluster: "):
        estimator.train(tiny_model.train_input_fn, steps=1)
    assert not (tmp_path / "m" / "config.yaml").exists()
