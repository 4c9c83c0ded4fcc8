"""Towers (``device: [cpu:0, cpu:1]``) on each worker of a ps cluster (issue 28).

The tower pattern on clusters: ``replica_device_setter`` puts the variables on the ps tasks and each tower's
ops on this worker's device i; the towers' gradients are averaged on the worker, which applies them once
(asynchronous) or hands the average to ``SyncReplicasOptimizer`` (``cluster.sync_replicas``), whose
accumulators average the workers' averages.

The first tests build a worker's graph without processes. The ``slow`` ones run ``--local-cluster`` (a worker
server gets its logical CPU devices from the session ``ConfigProto`` it starts with) and compare the chief's
checkpoint with one device in one process on the same global batch.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from rich.console import Console

from hookrun.config_schemas.cluster import ClusterConfig
from hookrun.runner.cluster.plan import resolve_cluster
from hookrun.runner.config import load_config
from tests.conftest import linear_rows, write_csv

CLUSTER = {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]}


def _config(
    tmp_path: Path, name: str, device: Any, train: Any = "data.csv", cluster: dict[str, Any] | None = None,
    evaluation: bool = False, **session: Any,
) -> Path:
    """A config training a small DNN with SGD for 10 steps on 16-row batches (``data.epochs: null``).

    ``evaluation``: a quarter of the rows held out and an ``evaluation`` hook on every worker.
    """
    config: dict[str, Any] = {
        "name": name,
        "graph": {
            "builder": "dnn_regressor",
            "params": {"hidden_units": [8]},
            "optimizer": {"name": "sgd", "learning_rate": 0.1},
        },
        "data": {"train": train, "label": "y", "batch_size": 16, "epochs": None, "seed": 0, "shuffle": False},
        "device": device,
        "session": {"run_dir": str(tmp_path / name), **session},
        "hooks": [{"type": "checkpoint_saver", "save_steps": 1000}, {"type": "stop_at_step", "last_step": 10}],
    }
    if cluster is not None:
        config["cluster"] = cluster
    if evaluation:
        config["data"]["validation_split"] = 0.25
        config["hooks"].append({"type": "evaluation", "every_n_steps": 5, "chief_only": False})
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _prepare_worker(path: Path, task: str, **cluster: Any) -> tuple[Any, Any]:
    """``prepare`` of ``path`` as ``task`` of :data:`CLUSTER` (no server): ``(prepared, ClusterRun)``."""
    from hookrun.runner.cluster.session import ClusterRun
    from hookrun.runner.roles.cluster_task import ClusterTaskRole
    from hookrun.runner.training.prepare import prepare

    plan = resolve_cluster(ClusterConfig(**CLUSTER, **cluster), task, {})
    run = ClusterRun(plan)
    prepared = prepare(load_config(path), path.parent / "run", Console(file=io.StringIO()),
                       role=ClusterTaskRole(plan, run))
    for close in prepared.on_close:
        close()
    return prepared, run


def _weights(run_dir: Path) -> dict[str, np.ndarray]:
    import tensorflow as tf

    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(run_dir)))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def _largest_difference(one: dict[str, np.ndarray], towers: dict[str, np.ndarray]) -> float:
    assert sorted(one) == sorted(towers), "the cluster's towers must write a single-device checkpoint"
    assert int(one["global_step"]) == int(towers["global_step"]) == 10
    return max(float(np.max(np.abs(one[name] - towers[name]))) for name in one if name != "global_step")


def _train_one_device(path: Path) -> dict[str, np.ndarray]:
    """Train ``path`` in this process (no cluster) and return its checkpoint."""
    from hookrun.runner.trainer import train

    loaded = load_config(path)
    train(loaded, console=Console(file=io.StringIO()))
    return _weights(Path(loaded.config.session.run_dir))


def test_a_workers_towers_read_the_ps_variables_and_average_on_the_worker(tmp_path: Path) -> None:
    import tensorflow as tf

    write_csv(tmp_path / "data.csv", linear_rows())
    prepared, _ = _prepare_worker(_config(tmp_path, "t", ["cpu:0", "cpu:1"], evaluation=True), "worker:1")
    graph = prepared.built.graph
    with graph.as_default():
        variables = tf.compat.v1.global_variables()
        metrics = tf.compat.v1.local_variables()
    # the evaluation pass: the model once (the first tower's device), its metrics on this worker
    assert prepared.built.evaluation is not None
    assert metrics and all(v.device.startswith("/job:worker/task:1") for v in metrics)
    # every variable once, on the ps: one set of weights for both towers and both workers
    assert variables and all(v.device.startswith("/job:ps/task:0") for v in variables)
    assert sorted(v.op.name for v in variables) == [
        "global_step", "hidden_0/bias", "hidden_0/kernel", "output/bias", "output/kernel"
    ]
    ops = graph.get_operations()
    tower_devices = {
        i: {op.device for op in ops if op.name.startswith(f"tower_{i}/") and op.type == "MatMul"} for i in (0, 1)
    }
    assert tower_devices == {i: {f"/job:worker/task:1/device:CPU:{i}"} for i in (0, 1)}
    averaging = [op for op in ops if op.name.startswith("gradient_aggregating/") and op.type == "AddN"]
    assert len(averaging) == 4  # one per variable, on this worker: one averaged gradient crosses the network
    assert {op.device for op in averaging} == {"/job:worker/task:1/device:CPU:0"}
    updates = [op for op in ops if op.type.startswith("ResourceApply")]
    assert len(updates) == 4  # applied once, not once per tower


def test_sync_replicas_and_mixed_precision_wrap_the_towers_one_optimizer(tmp_path: Path) -> None:
    import tensorflow as tf

    write_csv(tmp_path / "data.csv", linear_rows())
    path = _config(tmp_path, "t", ["cpu:0", "cpu:1"], mixed_precision=True)
    prepared, run = _prepare_worker(path, "worker:0", sync_replicas={"replicas_to_aggregate": 2})
    sync = run.sync_optimizer
    assert isinstance(sync, tf.compat.v1.train.SyncReplicasOptimizer)
    # loss scaling innermost, as with one device: the workers' accumulators take unscaled averaged gradients
    assert isinstance(sync._opt, tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer)
    assert len(sync._accumulator_list) == 4  # one accumulator per variable: one apply_gradients per worker step
    with prepared.built.graph.as_default():
        scale = [v for v in tf.compat.v1.global_variables() if v.op.name.endswith("current_loss_scale")]
    assert len(scale) == 1 and scale[0].device.startswith("/job:ps/")


@pytest.mark.slow  # a real --local-cluster: two TensorFlow processes, and one device in this one
def test_one_worker_with_two_towers_equals_one_device(tmp_path: Path, tasks) -> None:
    write_csv(tmp_path / "data.csv", linear_rows(64))
    cluster = _config(tmp_path, "cluster", ["cpu:0", "cpu:1"])
    run = tasks("cluster", "train", str(cluster), "--local-cluster", "ps=1,worker=1")
    assert run.finish(timeout=90) == 0, run.err[-3000:]
    one = _train_one_device(_config(tmp_path, "one", "cpu"))
    # 10 SGD steps over 4 different batches; the difference is summation order (measured 1.2e-7)
    assert _largest_difference(one, _weights(tmp_path / "cluster")) < 1e-6


@pytest.mark.slow  # a real --local-cluster: three TensorFlow processes, and one device in this one
def test_sync_replicas_of_two_workers_with_two_towers_equal_one_device(tmp_path: Path, tasks) -> None:
    # Deterministic by construction: each worker reads its own file (sharded by file), both files hold the same
    # 16 rows, a batch is all of them. Which worker's gradient an update takes (SyncReplicasOptimizer drops
    # stale ones, the chief may fill an aggregation alone at the start) then changes nothing: every update is
    # the mean of 4 sub-batch gradients (2 towers x 2 workers) at the current weights, which is one device's
    # gradient on the 16 rows. Mixed precision on both sides: the loss scale goes through the aggregation.
    rows = linear_rows(16)
    write_csv(tmp_path / "a.csv", rows)
    write_csv(tmp_path / "b.csv", rows)
    sync = {"sync_replicas": {"replicas_to_aggregate": 2}}
    cluster = _config(tmp_path, "sync", ["cpu:0", "cpu:1"], ["a.csv", "b.csv"], sync, mixed_precision=True)
    run = tasks("sync", "train", str(cluster), "--local-cluster", "ps=1,worker=2")
    assert run.finish(timeout=120) == 0, run.err[-3000:]
    assert "[worker1] trained" in run.out  # both workers took part
    one = _train_one_device(_config(tmp_path, "one", "cpu", "a.csv", mixed_precision=True))
    towers = _weights(tmp_path / "sync")
    # summing the 4 gradients instead would double every SGD step; measured 1.2e-7
    assert _largest_difference(one, towers) < 1e-6
    assert int(towers["good_steps"]) == 10  # one loss-scale update per global step
