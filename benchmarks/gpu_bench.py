"""``make bench-gpu``: hookrun's towers (``device: [gpu:0, ...]``) at K = 1, 2, 4 beside Keras ``MirroredStrategy`` fit.

Usage::

    .venv/bin/python benchmarks/gpu_bench.py                 # on GPUs: K = 1, 2, 4 (as many as are visible)
    .venv/bin/python benchmarks/gpu_bench.py --device cpu    # this CPU machine: logical CPU devices
    .venv/bin/python benchmarks/gpu_bench.py --device cpu --quick

A compute-bound model (California housing, a 1024-1024 relu DNN, global batch 1024, Adam): the same model
and data in both loops. Each measurement runs in a fresh process (logical devices must be configured before
TensorFlow starts): hookrun trains ``steps`` steps with ``stop_at_step`` only and reports its
``steps_per_sec``; Keras 3 ``fit`` under ``tf.distribute.MirroredStrategy`` over the same devices is timed from
the end of its warm-up batches to the end of training. Each is repeated R times; the report shows the median
and the range, and replaces the ``bench-gpu`` section of ``benchmarks/RESULTS.md`` (the rest is kept).

``--device gpu`` refuses (exit 2, one line) when TensorFlow sees no GPU; it runs only the K that fit the
GPUs it sees. ``--device cpu`` runs the towers on logical CPU devices that share this machine's cores: those
numbers are a check that the loops run, not GPU numbers, and the report says so. Measures, never asserts.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import DATA_DIR, HOUSING_FEATURES, ROOT, TF_ENV  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_OUTPUT = HERE / "RESULTS.md"
#: The markers around this script's section of RESULTS.md (bench.py keeps what lies between them).
BEGIN, END = "<!-- bench-gpu -->", "<!-- /bench-gpu -->"

HIDDEN = (1024, 1024)
BATCH = 1024
LEARNING_RATE = 0.001
WARMUP = 20

DATA = {
    "train": str(DATA_DIR / "california_housing.csv"),
    "label": "median_house_value",
    "features": HOUSING_FEATURES,
    "missing_by_column": {"total_bedrooms": "median"},
    "standardize": True,
    "label_scale": 100000,
    "batch_size": BATCH,
    "epochs": None,
    "seed": 0,
}


def log(message: str) -> None:
    """A progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


def devices(kind: str, k: int) -> list[str]:
    """The config's tower list, e.g. ``["gpu:0", "gpu:1"]``."""
    return [f"{kind}:{i}" for i in range(k)]


def run_hookrun(kind: str, k: int, steps: int) -> dict[str, float]:
    """Train ``steps`` steps with K towers (in this process); hookrun's own steps/s."""
    import yaml
    from rich.console import Console

    from hookrun.runner.config import load_config
    from hookrun.runner.trainer import train

    with tempfile.TemporaryDirectory() as tmp:
        config = {
            "name": "bench-gpu",
            "graph": {
                "builder": "dnn_regressor",
                "params": {"hidden_units": list(HIDDEN), "activation": "relu"},
                "optimizer": {"name": "adam", "learning_rate": LEARNING_RATE},
            },
            "data": DATA,
            "device": devices(kind, k),
            "hooks": [{"type": "stop_at_step", "last_step": steps + WARMUP}],
        }
        path = Path(tmp) / "config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        result = train(load_config(path), run_dir=Path(tmp) / "run", console=Console(file=io.StringIO()))
        return {"steps_per_sec": result.steps_per_sec}


def run_keras(kind: str, k: int, steps: int) -> dict[str, float]:
    """Keras 3 ``fit`` of the same model under ``MirroredStrategy`` over K devices (in this process)."""
    import numpy as np
    import tensorflow as tf

    if kind == "cpu":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * max(k, 1))
    import keras

    rows = np.genfromtxt(DATA["train"], delimiter=",", names=True, dtype=None, encoding="utf-8")
    x = np.stack([np.nan_to_num(rows[name].astype("float32"), nan=float(np.nanmedian(rows[name]))) for name in
                  HOUSING_FEATURES], axis=1)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    y = (rows[DATA["label"]].astype("float32") / DATA["label_scale"]).reshape(-1, 1)
    names = [f"/{kind}:{i}" for i in range(k)]
    strategy = tf.distribute.MirroredStrategy(names)
    with strategy.scope():
        model = keras.Sequential(
            [keras.Input((x.shape[1],))] + [keras.layers.Dense(units, activation="relu") for units in HIDDEN]
            + [keras.layers.Dense(1)]
        )
        model.compile(optimizer=keras.optimizers.Adam(LEARNING_RATE), loss="mse")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=0).repeat().batch(
        BATCH, drop_remainder=True).prefetch(2)

    class Clock(keras.callbacks.Callback):
        start = 0.0
        end = 0.0

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if batch == WARMUP - 1:
                Clock.start = time.perf_counter()

        def on_train_end(self, logs: Any = None) -> None:
            Clock.end = time.perf_counter()

    model.fit(dataset, epochs=1, steps_per_epoch=steps + WARMUP, verbose=0, callbacks=[Clock()])
    return {"steps_per_sec": steps / (Clock.end - Clock.start)}


def one(loop: str, kind: str, k: int, steps: int) -> int:
    """``--one``: a single measurement in this (fresh) process; JSON on stdout."""
    result = run_hookrun(kind, k, steps) if loop == "hookrun" else run_keras(kind, k, steps)
    print(json.dumps(result))
    return 0


def measure(loop: str, kind: str, k: int, steps: int) -> float:
    """One measurement in a fresh process: steps/s."""
    env = {**TF_ENV, **os.environ}
    command = [sys.executable, __file__, "--one", f"{loop}:{kind}:{k}", "--steps", str(steps)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{loop} K={k} failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["steps_per_sec"])


def visible_gpus() -> tuple[int, str]:
    """GPUs TensorFlow sees and its build line, from a fresh process."""
    code = (
        "import tensorflow as tf, json; b = tf.sysconfig.get_build_info(); "
        "print(json.dumps([len(tf.config.list_physical_devices('GPU')), tf.__version__, "
        "bool(b.get('is_cuda_build'))]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**TF_ENV, **os.environ}, check=False)
    if done.returncode != 0:
        raise RuntimeError("TensorFlow does not import: " + (done.stderr.strip().splitlines() or ["?"])[-1])
    count, version, cuda = json.loads(done.stdout.strip().splitlines()[-1])
    return int(count), f"TensorFlow {version} ({'CUDA' if cuda else 'CPU-only'} build)"


def report(kind: str, build: str, steps: int, repeats: int, rows: list[tuple[int, str, list[float]]],
           skipped: list[int]) -> str:
    """The markdown section."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    out = [
        BEGIN,
        "## bench-gpu: towers beside Keras `MirroredStrategy`",
        "",
        f"Generated by `python benchmarks/gpu_bench.py --device {kind}` on {now}; {build}; "
        f"{platform.machine()}, {os.cpu_count()} logical cores, load average {load:.2f} at the end.",
        "",
    ]
    if kind == "cpu":
        out += [
            "**These are not GPU numbers.** No GPU was used: the K towers (and Keras' K replicas) ran on K logical "
            "CPU devices that share this machine's cores, so more towers cannot be faster here. The table shows "
            "that both loops run at each K and what the split costs on one host; run `make bench-gpu` on a "
            "machine with GPUs for the comparison the benchmark is for.",
            "",
        ]
    out += [
        f"Model: California housing, DNN {'-'.join(map(str, HIDDEN))} relu, global batch {BATCH} (split evenly "
        f"between the K devices), Adam lr {LEARNING_RATE}. Each cell: the median of {repeats} fresh processes, "
        f"{steps} timed steps after {WARMUP} warm-up steps (hookrun: its `steps_per_sec` over all "
        f"{steps + WARMUP} steps, session creation excluded; Keras: `fit`, timed from the end of batch {WARMUP}).",
        "",
        "| K | loop | steps/s (median) | examples/s | min–max steps/s |",
        "|---:|---|---:|---:|---:|",
    ]
    for k, loop, values in rows:
        label = f"hookrun `device: [{', '.join(devices(kind, k))}]`" if loop == "hookrun" else (
            f"Keras `fit`, `MirroredStrategy` over {k} {kind.upper()}(s)")
        median = statistics.median(values)
        out.append(f"| {k} | {label} | {median:.1f} | {median * BATCH:,.0f} | {min(values):.1f}–{max(values):.1f} |")
    if skipped:
        out += ["", f"Not run: K = {', '.join(map(str, skipped))} (more GPUs than TensorFlow sees)."]
    out.append(END)
    return "\n".join(out)


def write_section(path: Path, section: str) -> None:
    """Replace the ``bench-gpu`` section of ``path`` (or append it), keeping everything else."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# hookrun benchmarks\n"
    if BEGIN in text and END in text:
        before, rest = text.split(BEGIN, 1)
        after = rest.split(END, 1)[1]
        text = before + section + after
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 0 (1 when a measurement failed, 2 when a GPU was asked for and none is seen)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu", help="towers on GPUs, or logical CPUs")
    parser.add_argument("--towers", default="1,2,4", help="K values (default 1,2,4)")
    parser.add_argument("--steps", type=int, default=200, help="timed steps per measurement (default 200)")
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes per cell (default 3)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 repeat, 20 steps")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the report file (its section)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        loop, kind, k = args.one.split(":")
        return one(loop, kind, int(k), args.steps)
    steps, repeats = (20, 1) if args.quick else (args.steps, args.repeats)
    try:
        towers = sorted({int(k) for k in args.towers.split(",")})
    except ValueError:
        print(f"bench-gpu: --towers {args.towers!r} is not a comma-separated list of counts, e.g. 1,2,4")
        return 2
    try:
        gpus, build = visible_gpus()
    except RuntimeError as err:
        print(f"bench-gpu: {err}")
        return 2
    skipped: list[int] = []
    if args.device == "gpu":
        if gpus == 0:
            print(
                f"bench-gpu: --device gpu, but {build} sees no GPU; on a GPU machine install "
                "'tensorflow[and-cuda]' (hookrun --version --devices lists what TensorFlow finds), or run on "
                "logical CPU devices: python benchmarks/gpu_bench.py --device cpu (not GPU numbers)"
            )
            return 2
        skipped = [k for k in towers if k > gpus]
        towers = [k for k in towers if k <= gpus]
    rows: list[tuple[int, str, list[float]]] = []
    failed = False
    for k in towers:
        for loop in ("hookrun", "keras"):
            values = []
            for repeat in range(repeats):
                log(f"bench-gpu: {loop} K={k} on {args.device}, repeat {repeat + 1}/{repeats}")
                try:
                    values.append(measure(loop, args.device, k, steps))
                except RuntimeError as err:
                    log(f"bench-gpu: {err}")
                    failed = True
            if values:
                rows.append((k, loop, values))
    section = report(args.device, build, steps, repeats, rows, skipped)
    print(section)
    write_section(args.output, section)
    log(f"bench-gpu: written to {args.output}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
