"""The run's role (hookrun.runner.roles): each kind of process answers the trainer's questions.

The answers before TensorFlow come from the config and TF_CONFIG alone (no TensorFlow, no server); the
placement and session answers build real TensorFlow objects (no session is run).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from hookrun.common.errors import SetupError
from hookrun.runner.roles import ClusterTaskRole, LocalRole, ParameterServerRole, resolve_role

CLUSTER = {"chief": ["127.0.0.1:2220"], "worker": ["127.0.0.1:2221", "127.0.0.1:2222"], "ps": ["127.0.0.1:2223"]}
HOOKS = [{"type": "checkpoint_saver", "save_steps": 10}, {"type": "history_saver"}]


def _tf_config(task_type: str, index: int) -> dict[str, str]:
    return {"TF_CONFIG": json.dumps({"cluster": CLUSTER, "task": {"type": task_type, "index": index}})}


def test_one_process_is_a_local_chief_that_runs_every_hook(make_config):
    loaded = make_config(hooks=HOOKS)
    role = resolve_role(loaded.config, None, environ={})
    assert isinstance(role, LocalRole)
    assert (role.is_chief, role.trains, role.task, role.task_label) == (True, True, None, None)
    assert (role.shares_global_step, role.keeps_input_state, role.training_tasks, role.notes) == (False, True, [], [])
    assert [role.runs(h) for h in loaded.config.hooks] == [True, True]
    assert role.task_file("summary.json") == "summary.json"
    assert role.batches_done(12) == 12
    assert role.input_context(None) is None
    role.check(make_config(session={"steps_per_run": 5}).config)  # fused windows run in one process


@pytest.mark.parametrize(
    ("task", "chief", "label", "summary"),
    [("chief:0", True, "chief0", "summary.json"), ("worker:1", False, "worker1", "summary-worker1.json")],
)
def test_a_cluster_task_from_tf_config(make_config, task, chief, label, summary):
    loaded = make_config(hooks=HOOKS)
    job, index = task.split(":")
    role = resolve_role(loaded.config, None, environ=_tf_config(job, int(index)))
    assert isinstance(role, ClusterTaskRole)
    assert (role.is_chief, role.trains, role.task, role.task_label) == (chief, True, task, label)
    assert (role.shares_global_step, role.keeps_input_state) == (True, False)
    assert role.training_tasks == ["chief:0", "worker:0", "worker:1"]  # the chief first: the data's shards
    assert [role.runs(h) for h in loaded.config.hooks] == [chief, True]  # checkpoint_saver is chief_only
    assert role.task_file("summary.json") == summary
    assert role.batches_done(12) == 4  # three training tasks shared the 12 batches that moved global_step


def test_worker_0_is_the_chief_without_a_chief_job(make_config):
    loaded = make_config(cluster={"worker": ["127.0.0.1:1", "127.0.0.1:2"], "ps": ["127.0.0.1:3"]})
    assert [resolve_role(loaded.config, task, environ={}).is_chief for task in ("worker:0", "worker:1")] == [
        True, False
    ]


def test_a_parameter_server_serves_and_trains_nothing(make_config, tmp_path):
    role = resolve_role(make_config().config, None, environ=_tf_config("ps", 0))
    assert isinstance(role, ParameterServerRole)
    assert (role.trains, role.is_chief, role.task, role.task_file("summary.json")) == (
        False, False, "ps:0", "summary-ps0.json"
    )
    assert role.finish(True, tmp_path) == []
    with pytest.raises(NotImplementedError):
        role.placement(None, make_config().config)


def test_a_cluster_task_refuses_fused_windows_before_tensorflow(make_config):
    loaded = make_config(session={"steps_per_run": 4})
    role = resolve_role(loaded.config, None, environ=_tf_config("worker", 0))
    with pytest.raises(SetupError, match=r"^session.steps_per_run: 4 does not run on a cluster"):
        role.check(loaded.config)


def test_the_roles_answer_without_tensorflow(make_config):
    """Choosing the role and every answer before the graph import no TensorFlow (a fresh interpreter)."""
    loaded = make_config(hooks=HOOKS)
    script = f"""
import json, sys
from pathlib import Path
from hookrun.runner.config import load_config
from hookrun.runner.roles import resolve_role
config = load_config(Path({str(loaded.path)!r})).config
role = resolve_role(config, "worker:1", environ={{"TF_CONFIG": {json.dumps(json.dumps({"cluster": CLUSTER}))}}})
answers = [role.is_chief, role.task, role.training_tasks, role.task_file("trace.jsonl"), role.batches_done(9),
           [role.runs(h) for h in config.hooks], role.finish(False, Path("."))]
print(json.dumps(answers), "tensorflow" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout.split()
    assert out[-1] == "False", "a role imported TensorFlow before the graph"
    assert json.loads(" ".join(out[:-1])) == [
        False, "worker:1", ["chief:0", "worker:0", "worker:1"], "trace-worker1.jsonl", 3, [False, True], []
    ]


def test_a_failed_local_session_leaves_no_temporary_file(tmp_path):
    role = LocalRole()
    (tmp_path / "model.ckpt-4.index").write_text("kept")
    half = tmp_path / "model.ckpt-5.data-00000-of-00001.tempstate123"
    half.write_text("half")
    assert role.finish(True, tmp_path) == [] and half.exists()  # a completed run: nothing to clean
    assert role.finish(False, tmp_path) == []
    assert not half.exists() and (tmp_path / "model.ckpt-4.index").exists()


def test_placement_is_the_device_plan_with_the_roles_device_function(make_config):
    """Towers are the placement's plan in either role; a cluster task adds its replica_device_setter to it."""
    import tensorflow as tf

    towers = make_config(device=["cpu:0", "cpu:1"]).config
    local = LocalRole().placement(tf, towers)
    assert local.towers == ("/device:CPU:0", "/device:CPU:1") and local.device == "/device:CPU:0"
    assert (local.device_function, local.wrap_optimizer) == (None, None)

    # (the config refuses towers on a cluster for now; the role composes them already)
    role = resolve_role(make_config(cluster=CLUSTER, filename="cluster.yaml").config, "worker:1", environ={})
    placed = role.placement(tf, towers)
    assert placed.towers == local.towers  # the same towers, composed with the cluster's placement
    with tf.Graph().as_default() as graph:
        with graph.device(placed.device_function):
            variable = tf.compat.v1.get_variable("w", shape=[1])
            op = tf.constant(1.0, name="c")
    assert variable.device.startswith("/job:ps/task:0") and op.device.startswith("/job:worker/task:1")


def test_session_setup_local_leaves_the_session_to_the_engine(make_config, tmp_path):
    import io as _io

    import tensorflow as tf
    from rich.console import Console

    config = make_config(session={"intra_op_parallelism_threads": 2}).config
    role = LocalRole()
    placement = role.placement(tf, config)
    setup = role.session_setup(tf, config, placement, hooks=[], scaffold=None, directory=tmp_path,
                               console=Console(file=_io.StringIO()), graph=tf.Graph())
    assert setup.factory is None
    assert setup.config.intra_op_parallelism_threads == 2 and setup.config.device_count["GPU"] == 0
    info = role.run_info(config, tmp_path, tf, placement)
    assert (info.is_chief, info.num_worker_replicas, info.session_config.intra_op_parallelism_threads) == (True, 1, 2)


def test_a_cluster_tasks_run_info_names_its_task(make_config, tmp_path):
    import tensorflow as tf

    config = make_config(cluster=CLUSTER).config
    role = resolve_role(config, "worker:1", environ={})
    info = role.run_info(config, tmp_path, tf, role.placement(tf, config))
    assert (info.task_type, info.task_id, info.is_chief) == ("worker", 1, False)


#: Names that test for a cluster or towers; the phases ask the role instead.
KIND_NAMES = {"cluster", "cluster_plan", "ClusterRun", "ClusterPlan", "is_ps", "towers", "resolve_cluster"}


def _kind_names(source: str) -> list[str]:
    """``line name`` for each code name (not comment or docstring) of :data:`KIND_NAMES` in ``source``."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME and token.string in KIND_NAMES:
            found.append(f"{token.start[0]} {token.string}")
    return found


def test_the_training_phases_never_test_for_a_cluster_or_towers():
    import hookrun.runner

    root = Path(hookrun.runner.__file__).parent
    files = [root / "trainer.py", *sorted((root / "training").glob("*.py"))]
    assert len(files) >= 6
    offenders = {path.name: names for path in files if (names := _kind_names(path.read_text(encoding="utf-8")))}
    assert offenders == {}


def test_the_kind_check_sees_a_cluster_test():
    """The check above would fail on the trainer as it was (``if cluster is not None: ...``)."""
    assert _kind_names("if cluster is not None:\n    cluster.finish(done)\n") == ["1 cluster", "2 cluster"]
