"""Faults on a real cluster (each task its own `hookrun train --task` process): a worker killed, the ps killed.

Each test bounds its own time and leaves no process behind (the ``tasks`` fixture checks).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from hookrun.runner.cluster.local import free_ports
from tests.distributed.conftest import mtcars_config

#: The `slow` group (`make test-slow`): three real `hookrun train --task` processes each, killed and restarted.
pytestmark = pytest.mark.slow


def loopback_cluster(workers: int = 2) -> dict[str, list[str]]:
    ports = free_ports(1 + workers)
    return {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{p}" for p in ports[1:]]}


def kill(proc) -> None:
    os.killpg(proc.process.pid, signal.SIGKILL)
    proc.process.wait(timeout=10)


def test_a_killed_worker_leaves_the_others_training_and_rejoins_with_the_same_command(tmp_path: Path, tasks) -> None:
    config = mtcars_config(
        tmp_path, 10_000_000, cluster=loopback_cluster(), progress_bar={"plain_every_n_secs": 0.2}
    )
    command = ("train", str(config), "--task")
    ps = tasks("ps", *command, "ps:0")
    chief = tasks("chief", *command, "worker:0")
    worker = tasks("worker1", *command, "worker:1")
    worker.wait_until(lambda: len(worker.steps("worker1")) >= 3, 60, "progress from worker:1")

    kill(worker)
    at_kill = max(chief.steps("worker0"))
    chief.wait_until(lambda: max(chief.steps("worker0")) > at_kill + 200, 30, "chief progress after the kill")

    rejoined = tasks("worker1-again", *command, "worker:1")
    rejoined.wait_until(lambda: len(rejoined.steps("worker1")) >= 3, 60, "progress from the restarted worker:1")
    assert rejoined.steps("worker1")[0] > at_kill  # it joined the running training

    chief.process.send_signal(signal.SIGINT)  # the chief saves, stops the others and shuts the ps down
    assert chief.finish(30) == 130, chief.err[-2000:]
    assert rejoined.finish(30) == 0, rejoined.err[-2000:]
    assert ps.finish(30) == 0, ps.err[-2000:]
    assert "1 other worker(s) stopped, 1 ps task(s) shut down" in chief.out
    assert "checkpoint" not in rejoined.out + rejoined.err  # a non-chief worker saves none, and says none
    summary = json.loads((tmp_path / "run" / "summary-worker1.json").read_text())
    assert summary["steps"] > 0 and summary["initial_step"] > 0


def test_a_killed_ps_is_recovered_from_the_last_checkpoint(tmp_path: Path, tasks) -> None:
    last_step = 1200
    config = mtcars_config(
        tmp_path, last_step, cluster=loopback_cluster(), progress_bar={"plain_every_n_secs": 0.2},
        checkpoint_saver={"save_steps": 100, "max_to_keep": 100},
    )
    command = ("train", str(config), "--task")
    ps = tasks("ps", *command, "ps:0")
    chief = tasks("chief", *command, "worker:0", "--trace")
    worker = tasks("worker1", *command, "worker:1")
    run_dir = tmp_path / "run"

    def checkpointed() -> int:
        path = run_dir / "checkpoint"
        if not path.exists():
            return 0
        return int(path.read_text().splitlines()[0].rsplit("-", 1)[1].rstrip('"'))

    chief.wait_until(lambda: checkpointed() >= 300, 60, "a checkpoint at step 300")
    kill(ps)
    time.sleep(1.0)
    restarted = tasks("ps-again", *command, "ps:0")

    assert chief.finish(90) == 0, chief.err[-3000:]
    assert worker.finish(30) == 0, worker.err[-2000:]
    assert restarted.finish(30) == 0, restarted.err[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["final_global_step"] >= last_step

    # Every hook of the chief got after_create_session again, on the session restored from the checkpoint.
    records = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    created = [r for r in records if r["method"] == "after_create_session" and r["hook"] == "progress_bar"]
    assert len(created) >= 2, created
    restored = created[-1]["step"]
    assert restored >= 300 and (run_dir / f"model.ckpt-{restored}.index").exists()
    # Training went on from there to the stop step (the steps since that checkpoint ran again).
    other = json.loads((run_dir / "summary-worker1.json").read_text())
    assert summary["steps"] + other["steps"] >= last_step
