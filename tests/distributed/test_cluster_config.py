"""The cluster without processes: `cluster:`, TF_CONFIG, --task, roles, chief_only, shards, --local-cluster specs."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from pydantic import ValidationError

from hookrun.common.errors import SetupError
from hookrun.config_schemas.cluster import ClusterConfig
from hookrun.hooks.registry import hook_configs
from hookrun.runner.cluster.local import local_jobs, parse_spec
from hookrun.runner.cluster.plan import Task, check_addresses, parse_task, port_in_use, resolve_cluster

CLUSTER = {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]}


def tf_config(task: dict[str, object] | None = None, cluster: dict[str, list[str]] | None = None) -> dict[str, str]:
    value: dict[str, object] = {"cluster": cluster or CLUSTER}
    if task is not None:
        value["task"] = task
    return {"TF_CONFIG": json.dumps(value)}


def test_no_cluster_means_one_process() -> None:
    assert resolve_cluster(None, None, {}) is None
    assert resolve_cluster(ClusterConfig(recovery_wait_secs=2), None, {}) is None  # settings only


def test_cluster_section_and_task_flag() -> None:
    plan = resolve_cluster(ClusterConfig(**CLUSTER), "worker:1", {})
    assert plan is not None and plan.task == Task("worker", 1) and plan.source == "cluster"
    assert not plan.is_chief and not plan.is_ps and plan.chief_task == Task("worker", 0)
    assert plan.replica == 1 and plan.other_workers == [Task("worker", 1)]
    assert plan.task_file("history.csv") == "history-worker1.csv"
    assert plan.where() == "cluster.worker[1]"
    chief = resolve_cluster(ClusterConfig(**CLUSTER), "worker:0", {})
    assert chief is not None and chief.is_chief and chief.task_file("history.csv") == "history.csv"


def test_a_chief_job_makes_every_worker_a_non_chief() -> None:
    plan = resolve_cluster(ClusterConfig(chief="127.0.0.1:2221", **CLUSTER), "chief:0", {})
    assert plan is not None and plan.is_chief
    assert plan.training_tasks == [Task("chief", 0), Task("worker", 0), Task("worker", 1)]
    worker0 = resolve_cluster(ClusterConfig(chief=["127.0.0.1:2221"], **CLUSTER), "worker:0", {})
    assert worker0 is not None and not worker0.is_chief and worker0.replica == 1


def test_tf_config_gives_the_cluster_and_the_task() -> None:
    plan = resolve_cluster(None, None, tf_config({"type": "worker", "index": 1}))
    assert plan is not None and plan.source == "TF_CONFIG" and plan.task == Task("worker", 1)
    assert plan.jobs == CLUSTER and plan.where() == "TF_CONFIG cluster.worker[1]"
    flagged = resolve_cluster(None, "ps:0", tf_config({"type": "worker", "index": 1}))
    assert flagged is not None and flagged.is_ps  # --task wins over TF_CONFIG's task


def test_tf_config_overrides_the_sections_addresses_with_a_note_and_keeps_its_settings() -> None:
    section = ClusterConfig(ps=["10.0.0.1:1"], worker=["10.0.0.2:1"], recovery_wait_secs=3)
    plan = resolve_cluster(section, "worker:0", tf_config())
    assert plan is not None and plan.jobs == CLUSTER and plan.settings.recovery_wait_secs == 3
    assert plan.notes and "TF_CONFIG" in plan.notes[0]


@pytest.mark.parametrize(
    ("config", "task", "env", "message"),
    [
        (ClusterConfig(**CLUSTER), "worker:2", {}, "worker:2 is not in the cluster (its tasks: worker:0, worker:1"),
        (ClusterConfig(**CLUSTER), "ps:1", {}, "ps:1 is not in the cluster"),
        (ClusterConfig(**CLUSTER), "chief:0", {}, "chief:0 is not in the cluster"),
        (ClusterConfig(**CLUSTER), "worker", {}, "expected JOB:INDEX"),
        (ClusterConfig(**CLUSTER), None, {}, "needs this process's task: pass --task worker:N"),
        (None, "worker:0", {}, "no cluster is configured"),
        (None, None, {"TF_CONFIG": "{not json"}, "TF_CONFIG is not valid JSON"),
        (None, None, {"TF_CONFIG": json.dumps({"cluster": {"ps": "a:1"}})}, '"cluster" must map each job'),
        (None, None, tf_config({"type": "evaluator", "index": 0}), "job 'evaluator' is not one hookrun runs"),
        (None, None, tf_config({"type": "worker"}, {"worker": ["a:1"]}), "`ps` needs at least one address"),
        (None, None, tf_config({"type": "worker"}, {"ps": ["a:1"], "master": ["b:1"]}), "job 'master'"),
    ],
)
def test_role_errors_are_one_line(config: ClusterConfig | None, task: str | None, env: dict[str, str], message: str):
    with pytest.raises(SetupError) as info:
        resolve_cluster(config, task, env)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"ps": ["127.0.0.1"], "worker": ["127.0.0.1:2"]}, "not an address of the form host:port"),
        ({"ps": ["127.0.0.1:70000"], "worker": ["127.0.0.1:2"]}, "not an address of the form host:port"),
        ({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:1"]}, "given to two tasks"),
        ({"worker": ["127.0.0.1:1"]}, "`ps` needs at least one address"),
        ({"ps": ["127.0.0.1:1"]}, "`worker` needs at least one address"),
        ({"ps": ["a:1"], "worker": ["b:1"], "chief": ["c:1", "d:1"]}, "`chief` is one task"),
        ({"ps": ["a:1"], "worker": ["b:1"], "recovery_wait_secs": 0}, "greater than 0"),
    ],
)
def test_cluster_section_is_checked(section: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ClusterConfig(**section)


def test_chief_only_defaults_per_hook_type_and_listed_last() -> None:
    chief_only = {name for name, model in hook_configs().items() if model.model_fields["chief_only"].default}
    assert chief_only == {"checkpoint_saver", "summary_saver", "evaluation", "early_stopping", "step_counter"}
    for model in hook_configs().values():
        assert list(model.model_fields)[-1] == "chief_only"
    history = hook_configs()["history_saver"](type="history_saver", chief_only=True)
    assert history.chief_only
    saver = hook_configs()["checkpoint_saver"](type="checkpoint_saver", save_steps=5)
    plan = resolve_cluster(ClusterConfig(**CLUSTER), "worker:1", {})
    chief = resolve_cluster(ClusterConfig(**CLUSTER), "worker:0", {})
    assert plan is not None and chief is not None
    assert not plan.runs(saver) and chief.runs(saver)
    assert plan.runs(hook_configs()["progress_bar"](type="progress_bar"))


def test_port_in_use_and_unresolvable_hosts_are_caught_before_tensorflow() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert port_in_use(port)
        plan = resolve_cluster(ClusterConfig(ps=["127.0.0.1:1"], worker=[f"127.0.0.1:{port}"]), "worker:0", {})
        assert plan is not None
        with pytest.raises(SetupError, match=f"port {port} is already in use"):
            check_addresses(plan)
    plan = resolve_cluster(ClusterConfig(ps=["nowhere.invalid:2222"], worker=["127.0.0.1:1"]), "worker:0", {})
    assert plan is not None
    with pytest.raises(SetupError, match=r"cluster.ps\[0\] nowhere.invalid:2222: ps:0 is unreachable"):
        check_addresses(plan)


def test_local_cluster_specs() -> None:
    assert parse_spec("ps=1,worker=2") == {"ps": 1, "worker": 2}
    assert parse_spec(" chief=1 , ps=2,worker=0") == {"chief": 1, "ps": 2}
    jobs = local_jobs({"ps": 1, "worker": 2})
    addresses = [a for job in jobs.values() for a in job]
    assert len(set(addresses)) == 3 and all(a.startswith("127.0.0.1:") for a in addresses)
    for bad in ("ps=1", "worker=2", "ps=1,worker=2,ps=1", "ps:1,worker:2", "ps=1,worker=1,chief=2", "gpu=1,ps=1"):
        with pytest.raises(SetupError):
            parse_spec(bad)


@pytest.mark.parametrize("spec", ["ps=1,worker=99999999999999999999", "ps=1,worker=32", "ps=1,worker=" + "9" * 5000])
def test_local_cluster_task_count_is_bounded(spec: str) -> None:
    with pytest.raises(SetupError, match=r"more than 32 tasks; one machine runs at most 32"):
        parse_spec(spec)
    assert parse_spec("ps=1,worker=31") == {"ps": 1, "worker": 31}


def test_task_parsing() -> None:
    assert parse_task(" worker : 3 ") == Task("worker", 3)
    assert str(Task("ps", 0)) == "ps:0" and Task("ps", 0).label == "ps0"
    with pytest.raises(SetupError):
        parse_task("evaluator:0")


def test_placement_chief_only_hooks_and_device_filters_on_a_non_chief_worker(make_config, tmp_path: Path) -> None:
    import io

    import tensorflow as tf
    from rich.console import Console

    from hookrun.runner.roles import ClusterTaskRole
    from hookrun.runner.training.prepare import prepare

    loaded = make_config(
        hooks=[
            {"type": "checkpoint_saver", "save_steps": 10},
            {"type": "evaluation", "every_n_steps": 4, "chief_only": False},
            {"type": "history_saver"},
        ],
        data={"validation_split": 0.25},
    )
    plan = resolve_cluster(ClusterConfig(**CLUSTER), "worker:1", {})
    assert plan is not None
    role = ClusterTaskRole(plan)
    prepared = prepare(loaded, tmp_path / "run", Console(file=io.StringIO()), role=role)
    assert [type(h).__name__ for h in prepared.hooks.instances] == ["EvaluationHook", "HistorySaverHook"]  # no saver
    assert prepared.hooks.instances[1].path.name == "history-worker1.csv"
    with prepared.built.graph.as_default():
        global_vars = tf.compat.v1.global_variables()
        local_vars = tf.compat.v1.local_variables()
    assert global_vars and all(v.device.startswith("/job:ps/task:0") for v in global_vars)  # weights, global_step
    assert local_vars and all(v.device.startswith("/job:worker/task:1") for v in local_vars)  # eval metrics
    pipeline = prepared.built.graph.get_operation_by_name("hookrun/input/IteratorGetNext")
    assert pipeline.device == "/job:worker/task:1/device:CPU:0"
    config = role.cluster_run.configure(tf.compat.v1.ConfigProto(intra_op_parallelism_threads=2))
    assert list(config.device_filters) == ["/job:ps", "/job:worker/task:1"]
    assert config.intra_op_parallelism_threads == 2
    for close in prepared.on_close:
        close()
