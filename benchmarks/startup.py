"""Start-up timings: the fast CLI commands, and process start to the first training step (hookrun vs Keras).

Every measurement is a fresh process. The CLI commands are timed from just before the process is
launched to its exit. "To the first step" is ``time.time()`` just before launch subtracted from the time a
probe wrote at the first step: a custom hook's first ``before_run``/``after_run`` under ``hookrun train``
(:mod:`probe_hooks`), a callback's first ``on_train_batch_begin``/``on_train_batch_end`` under Keras
(:mod:`keras_first_step`).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workloads import ROOT, TF_ENV, WORKLOADS, config_dict, write_config

HERE = Path(__file__).resolve().parent


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for key, value in TF_ENV.items():
        env.setdefault(key, value)
    env.pop("FORCE_COLOR", None)
    return env


def _hookrun() -> list[str]:
    """The ``hookrun`` console script beside this Python (the venv's), else ``python -m hookrun.cli.app``."""
    script = Path(sys.executable).parent / "hookrun"
    return [str(script)] if script.exists() else [sys.executable, "-m", "hookrun.cli.app"]


def _run(command: list[str], what: str) -> float:
    """Run ``command`` from the project root; return its wall time (seconds). Raises on a non-zero exit."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=_env(), capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"{what} exited {done.returncode}: " + " | ".join(tail))
    return seconds


def _first_step(command: list[str], probe: Path, what: str) -> dict[str, float]:
    """Launch ``command``; return seconds from launch to the first step's start and end, and to the exit."""
    launched = time.time()
    done = subprocess.run(command, cwd=ROOT, env=_env(), capture_output=True, text=True, check=False)
    exited = time.time()
    if done.returncode != 0 or not probe.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"{what} exited {done.returncode} (probe written: {probe.exists()}): " + " | ".join(tail))
    times = json.loads(probe.read_text(encoding="utf-8"))
    return {
        "start": times["first_step_start"] - launched,
        "end": times["first_step_end"] - launched,
        "exit": exited - launched,
    }


def _summary(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def measure_startup(runs: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Time each start-up measurement ``runs`` times (interleaved) and return medians and ranges (seconds).

    Keys: ``help``, ``list_hooks``, ``validate`` (process wall time), ``hookrun_first_step`` and
    ``keras_first_step`` (``start``, ``end``: launch to the first step's start/end; ``exit``: to the exit).
    """
    hookrun = _hookrun()
    tmp = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        shutil.copy(HERE / "probe_hooks.py", tmp / "probe_hooks.py")
        probe_path = tmp / "probe.json"
        probe = {"type": "custom", "class": "probe_hooks:FirstStepProbe", "args": {"path": str(probe_path)}}
        config = write_config(tmp / "first_step.yaml", config_dict(WORKLOADS["linear"], 100, extra_hooks=[probe]))
        cli = {
            "help": [*hookrun, "--help"],
            "list_hooks": [*hookrun, "list-hooks"],
            "validate": [*hookrun, "validate", "configs/mtcars_linear.yaml"],
        }
        timings: dict[str, list[Any]] = {key: [] for key in [*cli, "hookrun_first_step", "keras_first_step"]}
        for index in range(runs):
            for key, command in cli.items():
                timings[key].append(_run(command, " ".join(command[-2:])))
            probe_path.unlink(missing_ok=True)
            train = [*hookrun, "train", str(config), "--run-dir", str(tmp / f"run-{index}")]
            timings["hookrun_first_step"].append(_first_step(train, probe_path, "hookrun train"))
            probe_path.unlink(missing_ok=True)
            keras = [sys.executable, str(HERE / "keras_first_step.py"), str(probe_path), str(tmp / f"keras-{index}")]
            timings["keras_first_step"].append(_first_step(keras, probe_path, "keras script"))
            log(
                f"  [startup] run {index + 1}/{runs}: --help {timings['help'][-1]:.2f}s, "
                f"list-hooks {timings['list_hooks'][-1]:.2f}s, validate {timings['validate'][-1]:.2f}s, "
                f"first step: hookrun {timings['hookrun_first_step'][-1]['start']:.2f}s, "
                f"keras {timings['keras_first_step'][-1]['start']:.2f}s"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result: dict[str, Any] = {key: _summary(timings[key]) for key in cli}
    for key in ("hookrun_first_step", "keras_first_step"):
        result[key] = {part: _summary([t[part] for t in timings[key]]) for part in ("start", "end", "exit")}
    result["runs"] = runs
    return result
