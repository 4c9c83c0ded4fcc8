"""A model_fn's training_chief_hooks on a real local cluster: the chief runs them, the other worker does not."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from tests.distributed.conftest import mtcars_config

#: The `slow` group (`make test-slow`): a real --local-cluster (three TensorFlow processes).
pytestmark = pytest.mark.slow

#: Each hook appends ``<name> <method> <pid>`` to ``calls.txt`` beside the config at ``begin`` and ``end``.
MODEL_FN = """
import os
from pathlib import Path

import tensorflow as tf

from hookrun.runner import EstimatorSpec, layers

CALLS = Path(__file__).with_name("calls.txt")


class Marker(tf.compat.v1.train.SessionRunHook):
    def __init__(self, name):
        self.name = name

    def _mark(self, method):
        with CALLS.open("a") as handle:
            handle.write(f"{self.name} {method} {os.getpid()}\\n")

    def begin(self):
        self._mark("begin")

    def end(self, session):
        self._mark("end")


def model_fn(features, labels, mode, params):
    out = layers.dense(features, 1, "linear")
    loss = tf.reduce_mean(tf.square(out - labels))
    return EstimatorSpec(
        mode=mode, loss=loss, training_hooks=[Marker("every")], training_chief_hooks=[Marker("chief")]
    )
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


def test_chief_hooks_run_on_the_chief_only(tmp_path: Path, tasks) -> None:
    (tmp_path / "cluster_model.py").write_text(MODEL_FN, encoding="utf-8")
    config_path = mtcars_config(tmp_path, 100)
    config = yaml.safe_load(config_path.read_text())
    config["graph"]["builder"] = "cluster_model:model_fn"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    # synchronous replicas: the chief cannot step without the other worker, so both surely train
    run = tasks(
        "sync", "train", str(config_path), "--local-cluster", "ps=1,worker=2",
        "--set", "cluster.sync_replicas={replicas_to_aggregate: 2}",
    )
    assert run.finish(timeout=120) == 0, run.err[-3000:]
    other = json.loads((tmp_path / "run" / "summary-worker1.json").read_text())
    assert other["steps"] > 0

    pids: dict[tuple[str, str], set[int]] = defaultdict(set)
    for line in (tmp_path / "calls.txt").read_text().splitlines():
        name, method, pid = line.split()
        pids[(name, method)].add(int(pid))
    workers = pids[("every", "begin")]
    assert len(workers) == 2 and pids[("every", "end")] == workers  # both workers ran training_hooks
    assert len(pids[("chief", "begin")]) == 1 and pids[("chief", "end")] == pids[("chief", "begin")]
    assert pids[("chief", "begin")] < workers  # one of them: the chief
    assert os.getpid() not in workers
