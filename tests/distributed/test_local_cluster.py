"""`hookrun train --local-cluster`: 1 ps + 2 workers on loopback, end to end; and the errors before training."""

from __future__ import annotations

import csv
import io
import json
import socket
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from tests.distributed.conftest import hookrun, mtcars_config

#: Global step the cluster trains to.
LAST_STEP = 1200  # long enough (seconds) for both workers to join under a loaded machine


def history_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow  # a real --local-cluster: three TensorFlow processes
def test_one_ps_two_workers_train_to_the_stop_step_and_the_checkpoint_restores(tmp_path: Path, tasks) -> None:
    config = mtcars_config(tmp_path, LAST_STEP, history_saver={"every_n_step": 20})
    run = tasks("cluster", "train", str(config), "--local-cluster", "ps=1,worker=2")
    assert run.finish(timeout=75) == 0, run.err[-3000:]
    run_dir = tmp_path / "run"

    chief = json.loads((run_dir / "summary.json").read_text())
    other = json.loads((run_dir / "summary-worker1.json").read_text())
    assert (chief["task"], other["task"]) == ("worker:0", "worker:1")
    assert chief["steps"] > 0 and other["steps"] > 0  # both workers trained
    assert chief["final_global_step"] >= LAST_STEP and other["final_global_step"] >= LAST_STEP
    assert chief["steps"] + other["steps"] >= LAST_STEP  # every global step is one worker's step

    # The chief wrote the run's files; the other worker only its own, named after its task.
    assert (run_dir / "config.yaml").exists() and (run_dir / "preprocessing.json").exists()
    assert history_rows(run_dir / "history.csv") and history_rows(run_dir / "history-worker1.csv")
    assert int(history_rows(run_dir / "history-worker1.csv")[-1]["step"]) >= LAST_STEP
    assert not (run_dir / "summary-worker0.json").exists() and not (run_dir / "history-ps0.csv").exists()

    # Every line carries its task; the chief reports stopping the others; the ps served until then.
    assert "[worker0] Training" in run.out and "[worker1] Training" in run.out
    assert "[worker0] note: cluster: 1 other worker(s) stopped, 1 ps task(s) shut down" in run.out
    assert "[ps0] ps:0: served for" in run.out

    # The chief's last checkpoint restores into the single-process graph of the same config.
    from hookrun.runner.config import load_config
    from hookrun.runner.trainer import train

    last = chief["final_global_step"] + 5
    resumed = train(load_config(config, [f"hooks.3.last_step={last}"]), console=Console(file=io.StringIO()))
    assert resumed.initial_step >= LAST_STEP and resumed.final_global_step == last
    assert resumed.task is None  # no cluster: one process


@pytest.mark.slow  # a real --local-cluster: three TensorFlow processes
def test_synchronous_replicas_aggregate_both_workers(tmp_path: Path, tasks) -> None:
    config = mtcars_config(tmp_path, 100)
    run = tasks(
        "sync", "train", str(config), "--local-cluster", "ps=1,worker=2",
        "--set", "cluster.sync_replicas={replicas_to_aggregate: 2}",
    )
    assert run.finish(timeout=75) == 0, run.err[-3000:]
    chief = json.loads((tmp_path / "run" / "summary.json").read_text())
    other = json.loads((tmp_path / "run" / "summary-worker1.json").read_text())
    assert chief["final_global_step"] >= 100 and chief["steps"] > 0 and other["steps"] > 0
    # One global step per two gradients: the workers ran more steps between them than the global step moved.
    assert chief["steps"] + other["steps"] > chief["final_global_step"]
    assert "Traceback" not in run.err


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(hookrun(*args), capture_output=True, text=True, timeout=60, cwd=cwd)


def test_task_not_in_the_cluster_and_a_port_in_use_exit_2_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cluster = {"ps": ["127.0.0.1:1"], "worker": [f"127.0.0.1:{port}", "127.0.0.1:2"]}
        config = mtcars_config(tmp_path, 10, cluster=cluster)

        in_use = run_cli("train", str(config), "--task", "worker:0", cwd=tmp_path)
        assert in_use.returncode == 2
        assert in_use.stderr.strip().splitlines() == [
            f"error: cluster.worker[0] 127.0.0.1:{port}: port {port} is already in use on this machine "
            "(another task or program); give worker:0 another port"
        ]
    missing = run_cli("train", str(config), "--task", "worker:2", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        "error: --task worker:2: worker:2 is not in the cluster (its tasks: worker:0, worker:1, ps:0)"
    ]
    unresolvable = run_cli("train", str(config), "--task", "worker:1", "--set", "cluster.ps=[nowhere.invalid:2222]",
                           cwd=tmp_path)
    assert unresolvable.returncode == 2
    assert unresolvable.stderr.strip().splitlines() == [
        "error: cluster.ps[0] nowhere.invalid:2222: ps:0 is unreachable (the host name does not resolve)"
    ]
    both = run_cli("train", str(config), "--task", "worker:1", "--local-cluster", "ps=1,worker=1", cwd=tmp_path)
    assert both.returncode == 2 and len(both.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()  # nothing written before the checks
