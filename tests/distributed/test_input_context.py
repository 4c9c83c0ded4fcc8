"""On a cluster each training task's ``data.input_fn`` gets ``input_context`` (a ``tf.distribute.InputContext``)
when it names it, so it can shard; the built-in reader shards by the same context (issue 24). Without processes:
the graph is built for one task of a cluster plan, as each task builds it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from hookrun.config_schemas.cluster import ClusterConfig
from hookrun.runner.cluster.plan import resolve_cluster
from hookrun.runner.config import load_config

CLUSTER = {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224", "127.0.0.1:2225"]}

PROGRAM = """
import numpy as np
import tensorflow as tf

from hookrun.runner import EstimatorSpec

CONTEXTS = []


def input_fn(params, input_context):
    CONTEXTS.append(input_context)
    ids = np.arange(24, dtype=np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((ids, ids))
    if input_context is not None:  # as a tf.distribute user shards
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return dataset.batch(2).repeat()


def eval_input_fn(input_context):
    CONTEXTS.append(("eval", input_context))
    return tf.data.Dataset.from_tensor_slices((np.ones(4, np.float32), np.ones(4, np.float32))).batch(2)


def plain_input_fn(params):
    return input_fn(params, None)


def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.zeros_initializer())
    return EstimatorSpec(mode, loss=tf.reduce_mean(tf.square(w * features - labels)))
"""


def prepare_task(tmp_path: Path, module: str, task: str, input_fn: str = "input_fn", **cluster) -> object:
    from rich.console import Console

    from hookrun.runner.roles import ClusterTaskRole
    from hookrun.runner.training.prepare import prepare

    config = {
        "name": "ctx",
        "graph": {"builder": f"{module}:model_fn"},
        "data": {"input_fn": f"{module}:{input_fn}", "eval_input_fn": f"{module}:eval_input_fn", "seed": 0},
        "hooks": [{"type": "stop_at_step", "last_step": 4}, {"type": "evaluation", "every_n_steps": 2,
                                                             "chief_only": False}],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    plan = resolve_cluster(ClusterConfig(**CLUSTER, **cluster), task, {})
    prepared = prepare(load_config(path), tmp_path / "run", Console(file=io.StringIO()), role=ClusterTaskRole(plan))
    for close in prepared.on_close:
        close()
    return prepared


@pytest.mark.parametrize(("task", "pipeline_id"), [("worker:0", 0), ("worker:2", 2)])
def test_each_workers_input_fn_gets_its_input_context(write_module, tmp_path, task, pipeline_id):
    import tensorflow as tf

    from tests.conftest import user_module

    module = write_module("ctx_program", PROGRAM)
    prepare_task(tmp_path, module, task)
    contexts = user_module(module).CONTEXTS
    train = [c for c in contexts if not isinstance(c, tuple)]
    assert len(train) == 1 and isinstance(train[0], tf.distribute.InputContext)
    context = train[0]
    assert (context.num_input_pipelines, context.input_pipeline_id, context.num_replicas_in_sync) == (3, pipeline_id, 1)
    assert context.get_per_replica_batch_size(6) == 6  # asynchronous: each worker steps on its own batch
    # each evaluation reads the whole validation set: no context there
    assert [c for c in contexts if isinstance(c, tuple)] == [("eval", None)]


def test_sync_replicas_give_the_replicas_in_sync(write_module, tmp_path):
    from tests.conftest import user_module

    module = write_module("ctx_program", PROGRAM)
    prepare_task(tmp_path, module, "worker:1", sync_replicas={"replicas_to_aggregate": 2})
    (context,) = [c for c in user_module(module).CONTEXTS if not isinstance(c, tuple)]
    assert (context.input_pipeline_id, context.num_replicas_in_sync) == (1, 2)
    assert context.get_per_replica_batch_size(8) == 4


def test_an_input_fn_not_naming_it_is_called_as_before(write_module, tmp_path):
    from tests.conftest import user_module

    module = write_module("ctx_program", PROGRAM)
    prepared = prepare_task(tmp_path, module, "worker:1", input_fn="plain_input_fn")
    assert prepared.built.train_op is not None
    assert [c for c in user_module(module).CONTEXTS if not isinstance(c, tuple)] == [None]


def test_one_process_gives_none_as_estimator_did(write_module, tmp_path):
    import tensorflow as tf

    from hookrun.runner.data.input_fn import InputFn, RunInfo, input_context

    assert input_context(tf, None) is None
    module = write_module("ctx_program", PROGRAM)
    fn = InputFn(f"{module}:input_fn", tmp_path)
    with tf.Graph().as_default():
        fn.call({}, "train", RunInfo())
    from tests.conftest import user_module

    assert user_module(module).CONTEXTS == [None]


def test_the_built_in_reader_shards_by_the_same_context(monkeypatch, tmp_path):
    """The reader's shard is the context's (num_input_pipelines, input_pipeline_id)."""
    import tensorflow as tf
    from rich.console import Console

    from hookrun.runner.data import input_fn as input_fn_module
    from hookrun.runner.data import source as source_module
    from hookrun.runner.roles import ClusterTaskRole
    from hookrun.runner.training import prepare as prepare_phase
    from tests.distributed.conftest import mtcars_config

    shards, contexts = [], []
    open_files, make_context = source_module.FileSource.open, input_fn_module.input_context

    def spy_open(self, state_path, initial_step, notes, context):
        open_files(self, state_path, initial_step, notes, context)
        shards.append(self.train.shard)  # the StreamInput's: what its pipeline shards by

    def spy_context(tf_module, plan):
        contexts.append(make_context(tf_module, plan))
        return contexts[-1]

    monkeypatch.setattr(source_module.FileSource, "open", spy_open)
    monkeypatch.setattr(input_fn_module, "input_context", spy_context)  # prepare imports it when it runs
    plan = resolve_cluster(ClusterConfig(**CLUSTER), "worker:2", {})
    loaded = load_config(mtcars_config(tmp_path, 2))
    prepared = prepare_phase.prepare(loaded, tmp_path / "run", Console(file=io.StringIO()), role=ClusterTaskRole(plan))
    for close in prepared.on_close:
        close()
    assert isinstance(contexts[0], tf.distribute.InputContext)
    assert shards == [(contexts[0].num_input_pipelines, contexts[0].input_pipeline_id)] == [(3, 2)]


@pytest.mark.slow
def test_a_real_local_cluster_shards_an_input_fn_by_its_context(tmp_path: Path, tasks) -> None:
    """ps=1, worker=2: each worker's input_fn is called with its own context and reads its own shard."""
    (tmp_path / "sharded.py").write_text(PROGRAM + '''

import json
from pathlib import Path


def recording_input_fn(params, input_context):
    here = Path(__file__).with_name(f"context-{input_context.input_pipeline_id}.json")
    here.write_text(json.dumps([input_context.num_input_pipelines, input_context.num_replicas_in_sync]))
    return input_fn(params, input_context)
''', encoding="utf-8")
    config = {
        "name": "sharded",
        "graph": {"builder": "sharded:model_fn"},
        "data": {"input_fn": "sharded:recording_input_fn", "seed": 0},
        "session": {"run_dir": str(tmp_path / "run")},
        "hooks": [{"type": "stop_at_step", "last_step": 20}],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    run = tasks(
        "sync", "train", str(path), "--local-cluster", "ps=1,worker=2",
        "--set", "cluster.sync_replicas={replicas_to_aggregate: 2}",
    )
    assert run.finish(timeout=120) == 0, run.err[-3000:]
    assert [json.loads((tmp_path / f"context-{i}.json").read_text()) for i in (0, 1)] == [[2, 2], [2, 2]]
