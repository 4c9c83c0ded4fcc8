"""``device: [cpu:0, cpu:1, ...]`` (issue 28): K synchronous towers in one graph equal one device on the global batch.

The towers run on logical CPU devices the session makes (``ConfigProto.device_count``), so every test runs
here without a GPU. Each exactness test trains the same config on one device and on K towers (real
TensorFlow, real files) and compares the checkpoints' variables: the same names (a single-device
checkpoint) and the same values to float tolerance.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from hookrun.common.errors import SetupError
from hookrun.config_schemas.loader import ConfigError
from hookrun.runner.config import load_config
from hookrun.runner.graph.builders.spec import GraphSpec

from ..conftest import linear_rows, write_csv

#: A model_fn whose train_op is its own ``optimizer.minimize`` (the Estimator form); towers intercept it.
MODEL_FN = """
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys


def model_fn(features, labels, mode, params):
    hidden = tf.compat.v1.layers.dense(features, 8, activation=tf.nn.tanh, name="hidden")
    out = tf.compat.v1.layers.dense(hidden, 1, name="out")
    loss = tf.identity(tf.reduce_mean(tf.square(out - labels)), name="loss")
    if mode != ModeKeys.TRAIN:
        return EstimatorSpec(mode, loss=loss, predictions=out)
    optimizer = tf.compat.v1.train.MomentumOptimizer(0.05, momentum=0.9)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=out)


model_fn.hookrun_features = "dense"  # the feature matrix, not a model_fn's default dict
"""

#: A builder with batch normalisation: each tower normalises its own sub-batch (not exact by nature).
BATCH_NORM = """
import tensorflow as tf


def build(features, labels, params):
    training = params["mode"] == "train"
    hidden = tf.compat.v1.layers.dense(features, 8, name="hidden")
    normal = tf.compat.v1.layers.batch_normalization(hidden, training=training, name="bn")
    out = tf.compat.v1.layers.dense(tf.nn.relu(normal), 1, name="out")
    loss = tf.identity(tf.reduce_mean(tf.square(out - labels)), name="loss")
    return {"loss": loss, "predictions": out}
"""

#: A builder that makes its weight with ``tf.Variable``: each tower would get its own copy.
PLAIN_VARIABLE = """
import tensorflow as tf


def build(features, labels, params):
    w = tf.Variable(tf.zeros([2, 1]), name="w")
    loss = tf.identity(tf.reduce_mean(tf.square(tf.matmul(features, w) - labels)), name="loss")
    return {"loss": loss}
"""


def _write(tmp_path: Path, name: str, device: Any, hooks: list[dict[str, Any]], **sections: Any) -> Path:
    config: dict[str, Any] = {
        "name": "t",
        "graph": {
            "builder": "dnn_regressor",
            "params": {"hidden_units": [8]},
            "optimizer": {"name": "adam", "learning_rate": 0.05},
        },
        "data": {"train": "data.csv", "label": "y", "batch_size": 16, "epochs": None, "seed": 0, "shuffle": False},
        "device": device,
        "hooks": hooks,
    }
    for key, value in sections.items():
        config[key] = {**config[key], **value} if isinstance(value, dict) and key in config else value
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _weights(run_dir: Path) -> dict[str, np.ndarray]:
    import tensorflow as tf

    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(run_dir)))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def _largest_difference(one: dict[str, np.ndarray], towers: dict[str, np.ndarray]) -> float:
    assert sorted(one) == sorted(towers), "towers must write a single-device checkpoint (the same names)"
    return max(float(np.max(np.abs(one[name] - towers[name]))) for name in one if name != "global_step")


def _train(tmp_path: Path, run_train: Any, name: str, device: Any, last_step: int = 10, **sections: Any) -> Any:
    hooks = [{"type": "stop_at_step", "last_step": last_step}, {"type": "checkpoint_saver", "save_steps": 1000}]
    result = run_train(load_config(_write(tmp_path, name, device, hooks, **sections)), run_dir=tmp_path / name)
    return result


def _towers(k: int) -> list[str]:
    return [f"cpu:{i}" for i in range(k)]


@pytest.fixture(scope="module")
def one_device(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``one_device(steps_per_run, engine)``: the one-device run's weights (trained once per module and key)."""
    from rich.console import Console

    from hookrun.runner.trainer import train

    directory = tmp_path_factory.mktemp("one_device")
    write_csv(directory / "data.csv", linear_rows())
    weights: dict[tuple[int, str], dict[str, np.ndarray]] = {}

    def get(steps_per_run: int, engine: str) -> dict[str, np.ndarray]:
        if (steps_per_run, engine) not in weights:
            name = f"one-{steps_per_run}-{engine}"
            hooks = [{"type": "stop_at_step", "last_step": 10}, {"type": "checkpoint_saver", "save_steps": 1000}]
            session = {"engine": engine, "steps_per_run": steps_per_run}
            path = _write(directory, name, "cpu", hooks, session=session)
            train(load_config(path), run_dir=directory / name, console=Console(file=io.StringIO()))
            weights[(steps_per_run, engine)] = _weights(directory / name)
        return weights[(steps_per_run, engine)]

    return get


@pytest.mark.parametrize("engine", ["hookrun", "tf"])
@pytest.mark.parametrize("steps_per_run", [1, 5])
@pytest.mark.parametrize("k", [2, 4])
def test_towers_give_the_weights_of_one_device(tmp_path, linear_csv, run_train, one_device, k, steps_per_run, engine):
    session = {"engine": engine, "steps_per_run": steps_per_run}
    result = _train(tmp_path, run_train, "towers", _towers(k), session=session)
    one, towers = one_device(steps_per_run, engine), _weights(tmp_path / "towers")
    assert int(towers["global_step"]) == int(one["global_step"]) == 10
    assert result.end_of_data is False
    # Adam over 10 steps; the difference is summation order (a mean of K sub-batch means)
    assert _largest_difference(one, towers) < 2e-5


def test_sgd_towers_equal_one_device_closely(tmp_path, linear_csv, run_train):
    graph = {"optimizer": {"name": "sgd", "learning_rate": 0.05}}
    _train(tmp_path, run_train, "one", "cpu", last_step=20, graph=graph)
    _train(tmp_path, run_train, "towers", _towers(4), last_step=20, graph=graph)
    assert _largest_difference(_weights(tmp_path / "one"), _weights(tmp_path / "towers")) < 1e-6


def test_a_model_fn_with_its_own_minimize_is_averaged_once(tmp_path, linear_csv, run_train, write_module):
    module = write_module("tower_model_fn", MODEL_FN)
    graph = {"builder": f"{module}:model_fn", "params": {}}
    for steps_per_run in (1, 5):
        session = {"steps_per_run": steps_per_run}
        _train(tmp_path, run_train, f"one{steps_per_run}", "cpu", graph=graph, session=session)
        _train(tmp_path, run_train, f"towers{steps_per_run}", _towers(2), graph=graph, session=session)
        one, towers = _weights(tmp_path / f"one{steps_per_run}"), _weights(tmp_path / f"towers{steps_per_run}")
        assert int(towers["global_step"]) == 10  # incremented once per step, not once per tower
        assert _largest_difference(one, towers) < 1e-5


def test_hooks_see_the_mean_loss(tmp_path, linear_csv, run_train, loss_recorder):
    hooks = [loss_recorder.entry, {"type": "stop_at_step", "last_step": 6}]
    run_train(load_config(_write(tmp_path, "one", "cpu", hooks)), run_dir=tmp_path / "one")
    one = list(loss_recorder.losses())
    loss_recorder.losses().clear()
    run_train(load_config(_write(tmp_path, "towers", _towers(4), hooks)), run_dir=tmp_path / "towers")
    towers = list(loss_recorder.losses())
    assert len(one) == len(towers) == 6
    np.testing.assert_allclose(towers, one, rtol=1e-5)


def test_evaluation_runs_on_the_first_tower_and_matches(tmp_path, linear_csv, run_train):
    hooks = [
        {"type": "evaluation", "every_n_steps": 5},
        {"type": "history_saver", "every_n_step": 5},
        {"type": "stop_at_step", "last_step": 10},
    ]
    data = {"validation_split": 0.25}
    one = run_train(load_config(_write(tmp_path, "one", "cpu", hooks, data=data)), run_dir=tmp_path / "one")
    towers = run_train(load_config(_write(tmp_path, "towers", _towers(2), hooks, data=data)), run_dir=tmp_path / "t")
    first, second = one.history[-1], towers.history[-1]
    assert second["step"] == first["step"]
    np.testing.assert_allclose(float(second["val_loss"]), float(first["val_loss"]), rtol=1e-4)


def test_batch_norm_is_not_exact_and_says_by_how_much(tmp_path, linear_csv, run_train, write_module):
    module = write_module("tower_bn", BATCH_NORM)
    graph = {"builder": f"{module}:build", "params": {}}
    _train(tmp_path, run_train, "one", "cpu", graph=graph)
    _train(tmp_path, run_train, "towers", _towers(2), graph=graph)
    one, towers = _weights(tmp_path / "one"), _weights(tmp_path / "towers")
    difference = _largest_difference(one, towers)
    # each tower normalises its own 8 rows, not the 16 of the global batch. Measured after 10 Adam steps
    # (learning rate 0.05): 0.88 at most (bn/beta 0.43, hidden/kernel 0.41, weights of size up to 1.4), against
    # 2e-5 without batch norm (test_towers_give_the_weights_of_one_device); docs/devices.md quotes it
    assert 0.1 < difference < 2.0, difference
    # the moving averages are the first tower's (its sub-batch's statistics), one update per step
    assert not np.allclose(one["bn/moving_mean"], towers["bn/moving_mean"], atol=1e-6)


def test_tf_variable_in_a_builder_is_refused(tmp_path, linear_csv, run_train, write_module):
    module = write_module("tower_plain", PLAIN_VARIABLE)
    refused = r"graph.builder: makes new trainable variables in tower 1 \(tower_1/w\).*get_variable"
    with pytest.raises(ConfigError, match=refused):
        _train(tmp_path, run_train, "towers", _towers(2), graph={"builder": f"{module}:build", "params": {}})


@pytest.mark.parametrize(
    ("device", "batch_size", "message"),
    [
        (["cpu:0", "cpu:1", "cpu:2"], 16, r"data.batch_size 16 is the global batch of 3 towers .* use 15 or 18"),
        (["cpu:0", "gpu:0"], 16, "mixes CPUs and GPUs"),
        (["gpu:0", "gpu:0"], 16, "gpu:0 is listed twice"),
        (["gpu"], 16, r"list entry 'gpu' is not cpu:N or gpu:N; name each device with its index"),
        ([], 16, "an empty list"),
    ],
)
def test_validate_checks_the_tower_list(tmp_path, linear_csv, device, batch_size, message):
    path = _write(tmp_path, "bad", device, [], data={"batch_size": batch_size})
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_validate_takes_towers_on_a_cluster_and_checks_each_workers_batch(tmp_path, linear_csv):
    cluster = {"ps": ["localhost:2222"], "worker": ["localhost:2223", "localhost:2224"]}
    loaded = load_config(_write(tmp_path, "ok", _towers(2), [], cluster=cluster))
    assert loaded.config.device == ["cpu:0", "cpu:1"] and loaded.config.cluster.worker
    # on a cluster data.batch_size is each worker's batch: the message must not call it the global batch
    with pytest.raises(ConfigError, match=r"data.batch_size 16 is each worker's batch on the cluster, split between "
                       r"its 3 towers \(device: a list\) and must divide by 3; use 15 or 18$"):
        load_config(_write(tmp_path, "bad", _towers(3), [], cluster=cluster))


def test_validate_under_tf_config_names_each_workers_batch(tmp_path, linear_csv, monkeypatch):
    """No `cluster:` key, the cluster from TF_CONFIG (as tf.estimator read it): data.batch_size is a worker's batch."""
    tf_config = '{"cluster": {"ps": ["localhost:2222"], "worker": ["localhost:2223"]}, "task": {"type": "worker"}}'
    monkeypatch.setenv("TF_CONFIG", tf_config)
    with pytest.raises(ConfigError, match=r"data.batch_size 16 is each worker's batch on the cluster, split between "
                       r"its 3 towers"):
        load_config(_write(tmp_path, "bad", _towers(3), []))
    monkeypatch.setenv("TF_CONFIG", "{not json")  # training names that fault; here: one process's global batch
    with pytest.raises(ConfigError, match=r"data.batch_size 16 is the global batch of 3 towers"):
        load_config(_write(tmp_path, "bad", _towers(3), []))


def test_towers_on_absent_gpus_are_refused(tmp_path, linear_csv, run_train):
    with pytest.raises(SetupError, match=r"device \[gpu:0, gpu:1\] requested but TensorFlow has no GPU visible"):
        _train(tmp_path, run_train, "gpus", ["gpu:0", "gpu:1"])


def test_each_tower_runs_on_its_device_and_the_variables_on_the_host():
    import tensorflow as tf

    from hookrun.runner.graph.towers import build_towers

    graph = tf.Graph()
    with graph.as_default():
        features = tf.compat.v1.placeholder(tf.float32, [16, 2])
        labels = tf.compat.v1.placeholder(tf.float32, [16, 1])
        global_step = tf.compat.v1.train.get_or_create_global_step()

        def call(f, y):
            out = tf.compat.v1.layers.dense(f, 1, name="out")
            return GraphSpec(loss=tf.reduce_mean(tf.square(out - y)), predictions=out)

        def optimizer():
            return tf.compat.v1.train.GradientDescentOptimizer(0.1), tf.constant(0.1)

        result = build_towers(tf, [f"/device:CPU:{i}" for i in range(4)], features, labels, call,
                              optimizer, global_step)
    assert [spec.loss.device for spec in result.specs] == [f"/device:CPU:{i}" for i in range(4)]
    assert {v.device for v in graph.get_collection("trainable_variables")} == {"/device:CPU:0"}
    assert [v.op.name for v in graph.get_collection("trainable_variables")] == ["out/kernel", "out/bias"]
    assert result.spec.predictions.shape.as_list() == [16, 1]  # the towers' predictions, concatenated
    config = tf.compat.v1.ConfigProto(device_count={"CPU": 4})
    with tf.compat.v1.Session(graph=graph, config=config) as session:
        session.run(tf.compat.v1.global_variables_initializer())
        rows = np.arange(32, dtype=np.float32).reshape(16, 2) / 32
        session.run(result.spec.train_op, {features: rows, labels: rows[:, :1]})
        assert session.run(global_step) == 1


def test_mixed_precision_towers_equal_one_device_and_checkpoint_one_loss_scale(tmp_path, linear_csv, run_train):
    # On the CPU the float16 rewrite changes nothing: what is left is the loss scaling, which K towers must do
    # as one device does: each tower's loss scaled and its gradients unscaled, the average checked and applied
    # once, one loss scale (2**15, one good step per global step) in a single-device checkpoint.
    session = {"mixed_precision": True}
    _train(tmp_path, run_train, "one", "cpu", session=session)
    _train(tmp_path, run_train, "towers", _towers(2), session=session)
    one, towers = _weights(tmp_path / "one"), _weights(tmp_path / "towers")
    # the same names, the loss scale's variables among them; Adam, 10 steps: measured 1.2e-7
    assert _largest_difference(one, towers) < 1e-6
    scale = [name for name in towers if name.endswith("current_loss_scale")]
    good = [name for name in towers if name.endswith("good_steps")]
    assert len(scale) == 1 and len(good) == 1, sorted(towers)  # made once, not once per tower
    assert float(towers[scale[0]]) == 2.0**15 and int(towers[good[0]]) == int(towers["global_step"]) == 10


def test_the_export_of_a_mixed_precision_towers_run_is_a_single_device_serving_graph(tmp_path, linear_csv, run_train):
    """docs/devices.md: export builds the model once (no tower, no split, no device); the loss scale is training's
    and is neither restored nor served."""
    import tensorflow as tf

    from hookrun.runner import export

    _train(tmp_path, run_train, "towers", _towers(2), last_step=4, session={"mixed_precision": True})
    assert any(name.endswith("current_loss_scale") for name in _weights(tmp_path / "towers"))  # the checkpoint has it
    export(tmp_path / "towers", tmp_path / "model")
    graph = tf.Graph()
    with tf.compat.v1.Session(graph=graph) as session:
        loaded = tf.compat.v1.saved_model.load(session, ["serve"], str(tmp_path / "model"))
        ops = graph.get_operations()
        variables = sorted(v.op.name for v in tf.compat.v1.global_variables())
        signature = loaded.signature_def["serving_default"]
        feed = {info.name: [0.5, -1.0] for info in signature.inputs.values()}
        served = session.run(signature.outputs["predictions"].name, feed)
    suspicious = [op.name for op in ops if any(
        word in op.name for word in ("tower_", "split_inputs", "loss_scale", "good_steps", "gradient"))]
    assert not suspicious, suspicious[:10]
    assert {op.device for op in ops} == {""}  # no tower's device: it serves wherever it is loaded
    assert not any("loss_scale" in name or "good_steps" in name for name in variables), variables
    assert served.shape == (2,) and np.isfinite(served).all()


def test_mixed_precision_towers_in_the_steps_per_run_loop(tmp_path, linear_csv, run_train, one_device):
    session = {"mixed_precision": True, "steps_per_run": 5}
    _train(tmp_path, run_train, "one", "cpu", session=session)
    _train(tmp_path, run_train, "towers", _towers(2), session=session)
    one, towers = _weights(tmp_path / "one"), _weights(tmp_path / "towers")
    assert _largest_difference(one, towers) < 1e-6  # measured 1.2e-7
    # loss scaling leaves finite float32 gradients as they were: the weights of a run without it
    plain = one_device(5, "hookrun")
    assert max(float(np.max(np.abs(plain[n] - towers[n]))) for n in plain if n != "global_step") < 1e-6


def test_a_towers_checkpoint_resumes_on_one_device(tmp_path, linear_csv, run_train):
    _train(tmp_path, run_train, "run", _towers(2), last_step=6)
    _train(tmp_path, run_train, "run", "cpu", last_step=10)  # the same run directory, one device
    _train(tmp_path, run_train, "one", "cpu", last_step=10)
    assert int(_weights(tmp_path / "run")["global_step"]) == 10
    assert _largest_difference(_weights(tmp_path / "one"), _weights(tmp_path / "run")) < 2e-5


def test_the_gpu_bench_refuses_without_a_gpu(tmp_path):
    import os
    import subprocess
    import sys

    bench = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_bench.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--output", str(tmp_path / "R.md")], capture_output=True, text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"}, check=False,
    )
    assert done.returncode == 2
    assert "sees no GPU" in done.stdout and "--device cpu" in done.stdout
    assert not (tmp_path / "R.md").exists()


def test_cpu_towers_get_logical_devices_and_gpu_towers_soft_placement():
    import tensorflow as tf

    from hookrun.runner.graph.device import resolve_device, session_config

    plan = resolve_device(["cpu:0", "cpu:1", "cpu:2"], num_gpus=0)
    assert plan.towers == ("/device:CPU:0", "/device:CPU:1", "/device:CPU:2") and plan.device == "/device:CPU:0"
    assert dict(session_config(tf, plan).device_count) == {"GPU": 0, "CPU": 3}
    soft = resolve_device(["gpu:0", "gpu:1"], num_gpus=1, allow_soft_placement=True)
    assert soft.towers == ("/device:GPU:0", "/device:GPU:1") and soft.soft_placement
    assert "only 1 GPU(s) visible, ops fall back to the CPU" in soft.note
    assert "CPU" not in dict(session_config(tf, soft).device_count)


def test_only_the_first_towers_update_ops_and_summaries_are_kept():
    import tensorflow as tf

    from hookrun.runner.graph.towers import build_towers

    graph = tf.Graph()
    with graph.as_default():
        features = tf.compat.v1.placeholder(tf.float32, [8, 2])
        labels = tf.compat.v1.placeholder(tf.float32, [8, 1])
        global_step = tf.compat.v1.train.get_or_create_global_step()

        def call(f, y):
            normal = tf.compat.v1.layers.batch_normalization(f, training=True, name="bn")
            out = tf.compat.v1.layers.dense(normal, 1, name="out")
            loss = tf.reduce_mean(tf.square(out - y))
            tf.compat.v1.summary.scalar("tower_loss", loss)
            return GraphSpec(loss=loss)

        def optimizer():
            return tf.compat.v1.train.GradientDescentOptimizer(0.1), tf.constant(0.1)

        result = build_towers(tf, ["/device:CPU:0", "/device:CPU:1"], features, labels, call, optimizer, global_step)
        updates = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
        summaries = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES)
    assert len(updates) == 2 and all(op.name.startswith("tower_0/") for op in updates)  # moving mean, variance
    assert [s.op.name for s in summaries] == ["tower_0/tower_loss"]
    seen, stack = set(), [result.spec.train_op]
    while stack:  # the update's ancestors: inputs and control inputs
        op = stack.pop()
        if op not in seen:
            seen.add(op)
            stack.extend([t.op for t in op.inputs] + list(op.control_inputs))
    assert set(updates) <= seen
    assert not [op for op in seen if op.name.startswith("tower_1/bn/AssignMovingAvg")]


def test_splitting_a_sparse_feature_logs_no_deprecation_notice_of_tensorflows_own_call():
    """``tf.sparse.split`` calls its v1 with ``split_dim``, and TensorFlow logged three lines about it on every
    ``train``/``inspect`` of towers with a sparse feature (a ``varlen: sparse`` tensor feature): not the user's
    call, nothing to act on. A fresh process, as TensorFlow logs each notice once per process."""
    import subprocess
    import sys

    script = (
        "import tensorflow as tf\n"
        "from hookrun.runner.graph.towers import split_batch\n"
        "with tf.Graph().as_default():\n"
        "    sparse = tf.SparseTensor([[0, 0], [3, 1]], [1.0, 2.0], [4, 2])\n"
        "    parts = split_batch(tf, {'tokens': sparse}, 2, 'features')\n"
        "    print(len(parts), parts[1]['tokens'].dense_shape.shape)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["2", "(2,)"]
    assert "sparse_split" not in done.stderr and "split_dim" not in done.stderr, done.stderr[-1500:]
