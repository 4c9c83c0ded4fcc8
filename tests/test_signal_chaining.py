"""Signal handlers that hooks (or the user's launcher) install still run, and hookrun still stops gracefully.

``MonitoredTrainingSession`` installs no handlers, so a hook's own SIGTERM handler (NVIDIA's
``TrainingPartitionHook`` sets one in ``begin``) runs there. Real signals to a real ``hookrun train``.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

#: The `slow` group (`make test-slow`): real signals to a real `hookrun train` that must be training first.
pytestmark = pytest.mark.slow

MTCARS = Path(__file__).resolve().parent.parent / "configs" / "data" / "mtcars.csv"

#: Hooks that install handlers: in the constructor, and in begin() (chaining to the one they replace, or not).
HOOKS = """
import signal
from pathlib import Path

import tensorflow as tf

LOG = Path(__file__).with_name("signals.log")


def log(line):
    with LOG.open("a") as handle:
        handle.write(line + "\\n")


class InConstructor(tf.compat.v1.train.SessionRunHook):
    def __init__(self):
        signal.signal(signal.SIGTERM, lambda signum, frame: log(f"constructor {signum}"))
        signal.signal(signal.SIGINT, lambda signum, frame: log(f"constructor {signum}"))


class PartitionLike(tf.compat.v1.train.SessionRunHook):
    # As TrainingPartitionHook: a handler set in begin() flags a stop that after_run acts on.

    def __init__(self, call_previous=False):
        self.call_previous = call_previous
        self.received = None

    def begin(self):
        self.previous = signal.signal(signal.SIGTERM, self._handler)
        signal.signal(signal.SIGINT, self._handler)

    def _handler(self, signum, frame):
        log(f"begin {signum}")
        self.received = signum
        if self.call_previous and callable(self.previous):
            self.previous(signum, frame)

    def after_run(self, run_context, run_values):
        if self.received is not None:  # (hookrun may stop first: the signal can land after this check)
            run_context.request_stop()

    def end(self, session):
        log("end")


class Started(tf.compat.v1.train.SessionRunHook):
    def after_run(self, run_context, run_values):
        Path(str(LOG) + ".running").touch()
"""

#: Installs a handler before hookrun starts, then runs ``hookrun`` as ``python -m hookrun.cli.app`` would.
LAUNCHER = """
import runpy
import signal
import sys
from pathlib import Path

LOG = Path(__file__).with_name("signals.log")


def before(signum, frame):
    with LOG.open("a") as handle:
        handle.write(f"before {signum}\\n")


signal.signal(signal.SIGTERM, before)
signal.signal(signal.SIGINT, before)
sys.argv = ["hookrun", *sys.argv[1:]]
runpy.run_module("hookrun.cli.app", run_name="__main__")
"""


def write_config(tmp_path: Path, hooks: list[dict]) -> Path:
    (tmp_path / "chain_hooks.py").write_text(HOOKS, encoding="utf-8")
    config = {
        "name": "chain",
        "graph": {"builder": "linear_regressor", "optimizer": {"name": "sgd", "learning_rate": 0.01}},
        "data": {"train": str(MTCARS), "label": "mpg", "features": ["cyl", "wt"], "batch_size": 8, "epochs": None},
        "hooks": [
            *hooks,
            {"type": "custom", "class": "chain_hooks:Started"},
            {"type": "checkpoint_saver", "save_steps": 100_000},
            {"type": "stop_at_step", "last_step": 10_000_000},
        ],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


CONSTRUCTOR = {"type": "custom", "class": "chain_hooks:InConstructor"}


def partition(call_previous: bool) -> dict:
    return {"type": "custom", "class": "chain_hooks:PartitionLike", "args": {"call_previous": call_previous}}


@pytest.mark.parametrize(
    ("sig", "launcher", "hooks", "called"),
    [
        # installed before training starts (by the launcher), no hook touches signals
        (signal.SIGTERM, True, [], ["before"]),
        # installed by a hook's constructor
        (signal.SIGTERM, False, [CONSTRUCTOR], ["constructor"]),
        # installed by a hook in begin(), which calls the handler it replaced: the launcher's runs too
        (signal.SIGTERM, True, [partition(True)], ["begin", "before", "end"]),
        (signal.SIGINT, True, [partition(True)], ["begin", "before", "end"]),
        # ... which does not: the launcher's is replaced, as it would be without hookrun
        (signal.SIGTERM, True, [partition(False)], ["begin", "end"]),
    ],
    ids=["before-training", "constructor", "begin-chaining", "begin-chaining-sigint", "begin-replacing"],
)
def test_handlers_installed_outside_hookrun_run_and_hookrun_still_stops_gracefully(
    tmp_path, sig, launcher, hooks, called
):
    config = write_config(tmp_path, hooks)
    (tmp_path / "launch.py").write_text(LAUNCHER, encoding="utf-8")
    run_dir = tmp_path / "run"
    command = [str(tmp_path / "launch.py")] if launcher else ["-m", "hookrun.cli.app"]
    proc = subprocess.Popen(
        [sys.executable, *command, "train", str(config), "--run-dir", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "signals.log.running").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "training did not start in time"
            time.sleep(0.05)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[sig], stderr
    assert "Traceback" not in stderr
    assert "interrupted at step" in stderr and "checkpoint saved" in stderr, stderr
    stopped_at = int(stderr.split("interrupted at step ")[1].split(",")[0])
    assert (run_dir / f"model.ckpt-{stopped_at}.index").exists()  # hookrun's graceful stop: end() saved
    lines = (tmp_path / "signals.log").read_text().splitlines()
    expected = [line if line == "end" else f"{line} {int(sig)}" for line in called]
    assert lines == expected
