"""`--local-cluster`: no task outlives the launcher (even on ``kill -9``); only the tasks reach their ports."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.distributed.conftest import gone, hookrun, mtcars_config

#: The `slow` group (`make test-slow`): a real --local-cluster (three TensorFlow processes), then kill -9.
pytestmark = pytest.mark.slow

#: Seconds the children get to notice that the launcher is gone.
ORPHAN_DEADLINE_SECS = 10.0
#: ``started worker:1 at 127.0.0.1:1234 (pid 4321)``, with the port.
STARTED_AT = re.compile(r"started (?P<task>\w+:\d+) at 127\.0\.0\.1:(?P<port>\d+) \(pid (?P<pid>\d+)\)")


def listening_ports(pid: int | str) -> dict[int, str]:
    """``/proc/<pid>/net/tcp`` and ``tcp6`` -> {port: local address (hex)} of the listening sockets."""
    ports = {}
    lines = [line for name in ("tcp", "tcp6") for line in Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]]
    for line in lines:
        fields = line.split()
        if fields[3] == "0A":  # TCP_LISTEN
            address, port = fields[1].split(":")
            ports[int(port, 16)] = address
    return ports


def interfaces(pid: int | str) -> list[str]:
    return [line.split(":")[0].strip() for line in Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]]


def wait_gone(pids: list[int]) -> list[int]:
    """Wait up to ORPHAN_DEADLINE_SECS for ``pids`` to end; SIGKILL and return those that did not."""
    deadline = time.monotonic() + ORPHAN_DEADLINE_SECS
    while time.monotonic() < deadline and not all(gone(pid) for pid in pids):
        time.sleep(0.1)
    survivors = [pid for pid in pids if not gone(pid)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    return survivors


@pytest.mark.skipif(not os.path.exists("/proc/self/ns/net"), reason="Linux /proc only")
def test_the_tasks_ports_are_private_and_a_killed_launcher_takes_every_task_with_it(tmp_path: Path, tasks) -> None:
    config = mtcars_config(tmp_path, 10**9, progress_bar={"plain_every_n_secs": 0.3})
    run = tasks("cluster", "train", str(config), "--local-cluster", "ps=1,worker=2")
    run.wait_until(lambda: bool(run.steps("worker0") and run.steps("worker1")), 120, "both workers training")
    started = {int(m["pid"]): int(m["port"]) for m in STARTED_AT.finditer(run.err)}
    assert len(started) == 3

    # Item 6: TensorFlow binds 0.0.0.0, but in a network namespace holding only `lo`, not this one's.
    assert "private network namespace" in run.err and "warning" not in run.err
    ours = listening_ports("self")
    for pid, port in started.items():
        assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
        assert interfaces(pid) == ["lo"]
        assert port in listening_ports(pid)  # it serves, in there (TensorFlow binds 0.0.0.0 / [::])
        assert port not in ours  # and cannot be reached from here

    # Item 5: kill -9 of the launcher; every task goes within seconds.
    os.kill(run.process.pid, signal.SIGKILL)
    run.process.wait(timeout=10)
    survivors = wait_gone(list(started))
    assert not survivors, f"tasks outlived the killed launcher by {ORPHAN_DEADLINE_SECS} s: {survivors}"

    # The chief's run lock went with it: the same run directory trains again at once.
    again = subprocess.run(
        hookrun("train", str(config), "--set", "hooks.3.last_step=null", "--set", "hooks.3.num_steps=3"),
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert again.returncode == 0, again.stderr[-3000:]


def test_without_a_namespace_the_launcher_warns_and_tasks_still_starting_die_with_it(tmp_path: Path, tasks,
                                                                                      monkeypatch) -> None:
    monkeypatch.setenv("HOOKRUN_LOCAL_CLUSTER_NETNS", "0")
    config = mtcars_config(tmp_path, 10**9)
    run = tasks("cluster", "train", str(config), "--local-cluster", "ps=1,worker=2")
    run.wait_until(lambda: len(STARTED_AT.findall(run.err)) == 3, 60, "three tasks started")
    assert "warning: TensorFlow's gRPC servers listen on ALL interfaces" in run.err
    assert "firewall these ports (see docs/security.md)" in run.err
    children = [int(m["pid"]) for m in STARTED_AT.finditer(run.err)]
    os.kill(run.process.pid, signal.SIGKILL)  # while the tasks import TensorFlow
    run.process.wait(timeout=10)
    survivors = wait_gone(children)
    assert not survivors, f"tasks outlived the killed launcher by {ORPHAN_DEADLINE_SECS} s: {survivors}"
