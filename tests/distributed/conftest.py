"""Helpers for the cluster tests: real ``hookrun train`` processes on loopback, always torn down.

Every process a test starts goes through the ``tasks`` fixture, which kills whatever is still
running at the end (its whole process group) and then checks, with ``os.kill(pid, 0)``, that no
process (children of ``--local-cluster`` included) survived.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MTCARS_CONFIG = REPO / "configs" / "mtcars_linear.yaml"
MTCARS_DATA = REPO / "configs" / "data" / "mtcars.csv"
#: ``[worker1] Training 120/300 ...``: a task's plain progress line.
PROGRESS = re.compile(r"^\[(?P<task>\w+)\] Training (?:step )?(?P<step>\d+)", re.M)
#: ``started worker:1 at 127.0.0.1:1234 (pid 4321)``: a --local-cluster child.
STARTED = re.compile(r"started (?P<task>\w+:\d+) at \S+ \(pid (?P<pid>\d+)\)")


def hookrun(*args: str) -> list[str]:
    """``python -m hookrun.cli.app ARGS``."""
    return [sys.executable, "-m", "hookrun.cli.app", *args]


def mtcars_config(tmp_path: Path, last_step: int, cluster: dict[str, Any] | None = None, **hooks: Any) -> Path:
    """``configs/mtcars_linear.yaml`` made to run until ``last_step`` (data repeated, a ``stop_at_step``).

    Its hooks (progress_bar, history_saver, checkpoint_saver) are kept; ``hooks`` updates them by
    type (``progress_bar={"plain_every_n_secs": 0.5}``). With ``cluster``, a ``cluster:`` section.
    """
    config = yaml.safe_load(MTCARS_CONFIG.read_text())
    config["data"]["train"] = str(MTCARS_DATA)
    config["data"]["epochs"] = None
    for hook in config["hooks"]:
        hook.update(hooks.get(hook["type"], {}))
    config["hooks"].append({"type": "stop_at_step", "last_step": last_step})
    config["session"] = {"run_dir": str(tmp_path / "run")}
    if cluster is not None:
        config["cluster"] = cluster
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def gone(pid: int) -> bool:
    """Whether process ``pid`` no longer runs (``os.kill(pid, 0)`` fails, or it is a zombie awaiting its reaper)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] == "Z"


@dataclass
class Proc:
    """A started ``hookrun`` process writing its output to files."""

    name: str
    process: subprocess.Popen[bytes]
    out_path: Path
    err_path: Path
    pids: list[int] = field(default_factory=list)

    @property
    def out(self) -> str:
        return self.out_path.read_text(errors="replace")

    @property
    def err(self) -> str:
        return self.err_path.read_text(errors="replace")

    def steps(self, task: str) -> list[int]:
        """The global steps of ``task``'s progress lines so far (``worker0``)."""
        return [int(m["step"]) for m in PROGRESS.finditer(self.out) if m["task"] == task]

    def wait_until(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``check`` until true; fail (with the output) after ``timeout`` seconds or if the process ended."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            if self.process.poll() is not None:
                raise AssertionError(f"{self.name} ended (code {self.process.returncode}) before {what}:\n"
                                     f"{self.out[-3000:]}\n{self.err[-3000:]}")
            time.sleep(0.1)
        raise AssertionError(f"{self.name}: no {what} within {timeout} s:\n{self.out[-3000:]}\n{self.err[-3000:]}")

    def finish(self, timeout: float) -> int:
        """Wait for the exit code (fail after ``timeout`` seconds)."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.name} still running after {timeout} s:\n{self.out[-3000:]}\n"
                                 f"{self.err[-3000:]}") from None


@pytest.fixture
def tasks(tmp_path: Path) -> Iterator[Callable[..., Proc]]:
    """``tasks(name, *args)`` starts ``hookrun ARGS`` in its own process group; all are torn down afterwards."""
    started: list[Proc] = []

    def start(name: str, *args: str) -> Proc:
        out_path, err_path = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
        env.pop("TF_CONFIG", None)
        with out_path.open("wb") as out, err_path.open("wb") as err:
            process = subprocess.Popen(
                hookrun(*args), stdout=out, stderr=err, env=env, cwd=tmp_path, start_new_session=True
            )
        proc = Proc(name, process, out_path, err_path, pids=[process.pid])
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.pids += [int(m["pid"]) for m in STARTED.finditer(proc.err)]
        if proc.process.poll() is None:
            os.killpg(proc.process.pid, signal.SIGKILL)
        proc.process.wait(timeout=10)
    deadline = time.monotonic() + 10
    survivors = [pid for proc in started for pid in proc.pids]
    while survivors and time.monotonic() < deadline:
        survivors = [pid for pid in survivors if not gone(pid)]
        time.sleep(0.1)
    for pid in survivors:  # do not leave them behind, then fail
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"processes survived the test: {survivors}"
