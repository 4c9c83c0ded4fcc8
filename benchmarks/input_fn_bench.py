"""hookrun on a user's own tf.data input_fn beside the raw make_callable loop (issue 24). Measures, never asserts.

Usage::

    .venv/bin/python benchmarks/input_fn_bench.py              # R = 5 interleaved rounds per workload
    .venv/bin/python benchmarks/input_fn_bench.py --quick      # R = 1, fewer steps: a smoke run

The user's program (:data:`PROGRAM`, written to a temporary directory and named by ``data.input_fn`` and
``graph.builder``): an Estimator-style ``input_fn`` over NumPy arrays (a features dict, int labels;
``from_tensor_slices`` -> ``shuffle(10000, seed)`` -> ``batch(drop_remainder)`` -> ``repeat()`` ->
``prefetch``) and a ``model_fn`` with its own ``train_op``. Two workloads:

- ``small``: 8 features, a linear softmax over 2 classes, batch 32: overhead-bound (the step costs less
  than the Python around it);
- ``dnn``: 64 features, 256-128 ReLU, Adam, batch 256: compute-bound.

Per round, in one process, the order rotating:

- ``raw``: the graph hookrun builds for that config (``hookrun.runner.training.prepare.prepare``, the same
  ``build_graph``, the same iterator over the same dataset), run in a plain ``tf.compat.v1.Session`` with
  hookrun's session config: ``make_callable([train_op, loss, global_step])``, W warm-up calls, then N
  timed calls;
- ``hookrun``: ``hookrun.runner.trainer.train`` of the same config with ``stop_at_step`` only
  (``last_step`` N), a fresh run directory, a non-terminal console; its ``steps_per_sec`` (the step loop,
  from session ready to the last step's end, first steps included, as ``summary.json`` reports it).

The ratio is hookrun / raw (target >= 0.95x): the median over rounds of each, and the median of the
round-paired ratios. The rows replace the section between ``<!-- input-fn-bench -->`` markers in
``benchmarks/RESULTS.md`` (``--no-write`` to only print).
"""

from __future__ import annotations

import argparse
import datetime
import io
import os
import re
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
MARK_BEGIN, MARK_END = "<!-- input-fn-bench -->", "<!-- /input-fn-bench -->"

#: The user's program: an input_fn and a model_fn as an Estimator user wrote them.
PROGRAM = '''
import numpy as np
import tensorflow as tf

from hookrun.runner import EstimatorSpec


def input_fn(params):
    rng = np.random.RandomState(0)
    x = rng.normal(size=(params["rows"], params["features"])).astype(np.float32)
    labels = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int64)
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, labels))
    dataset = dataset.shuffle(10000, seed=1).batch(params["batch"], drop_remainder=True).repeat()
    return dataset.prefetch(1)


def model_fn(features, labels, mode, params):
    v1 = tf.compat.v1
    net = features["x"]
    for i, width in enumerate(params["hidden"]):
        net = v1.layers.dense(net, width, tf.nn.relu, name=f"hidden{i}")
    logits = v1.layers.dense(net, 2, name="logits")
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if params["hidden"]:
        optimizer = v1.train.AdamOptimizer(0.001)
    else:
        optimizer = v1.train.GradientDescentOptimizer(0.05)
    train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)
'''

#: workload -> (graph.params, N steps, W warm-up steps).
WORKLOADS = {
    "small": ({"rows": 20000, "features": 8, "batch": 32, "hidden": []}, 3000, 50),
    "dnn": ({"rows": 20000, "features": 64, "batch": 256, "hidden": [256, 128]}, 1000, 50),
}


def log(message: str) -> None:
    """Progress on stderr."""
    print(f"[input-fn-bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def write_config(directory: Path, params: dict[str, Any], last_step: int) -> Path:
    """The config: the program's input_fn and model_fn, ``stop_at_step`` only."""
    import yaml

    path = directory / "config.yaml"
    config = {
        "name": "input-fn-bench",
        "graph": {"builder": "bench_program:model_fn", "params": params},
        "data": {"input_fn": "bench_program:input_fn", "seed": 0},
        "hooks": [{"type": "stop_at_step", "last_step": last_step}],
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def run_raw(config: Path, steps: int, warmup: int) -> tuple[float, float, float]:
    """The raw loop on the graph hookrun builds, from session ready: N calls, W more, then N more.

    Returns:
        steps/s over the first N calls (the span hookrun's ``steps_per_sec`` covers: its first, slower
        calls included); steps/s over N calls after W warm-up calls (steady); and the process's CPU
        seconds per step over the last N calls (all threads; robust to other processes on the machine).
    """
    from rich.console import Console

    from hookrun.runner.config import load_config
    from hookrun.runner.graph.device import session_config
    from hookrun.runner.training.prepare import prepare

    directory = Path(tempfile.mkdtemp(prefix="bench-raw-"))
    try:
        prepared = prepare(load_config(config), directory / "run", Console(file=io.StringIO()))
        tf, built = prepared.tf, prepared.built
        v1 = tf.compat.v1
        with built.graph.as_default():
            init = v1.group(v1.global_variables_initializer(), v1.local_variables_initializer(),
                            v1.tables_initializer())  # the input's iterator starts with the tables
            fetches = [built.train_op, built.spec.loss, built.global_step]
        with v1.Session(graph=built.graph, config=session_config(tf, prepared.placement.plan, 0, 0)) as session:
            session.run(init)
            step = session.make_callable(fetches)
            times = [time.perf_counter()]
            for _ in range(steps + warmup):
                step()
                times.append(time.perf_counter())
            cpu_started = time.process_time()  # every thread of the process: the session's pools and tf.data's
            for _ in range(steps):
                step()
            cpu = (time.process_time() - cpu_started) / steps
        for close in prepared.on_close:
            close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return steps / (times[steps] - times[0]), steps / (times[steps + warmup] - times[warmup]), cpu


def run_hookrun(config: Path) -> tuple[float, float]:
    """``hookrun train`` of the config with ``stop_at_step`` only: its ``steps_per_sec`` and the process's CPU.

    The CPU seconds cover the whole call (graph build and session creation included).
    """
    from rich.console import Console

    from hookrun.runner.config import load_config
    from hookrun.runner.trainer import train

    directory = Path(tempfile.mkdtemp(prefix="bench-hookrun-"))
    try:
        cpu_started = time.process_time()
        result = train(load_config(config), run_dir=directory / "run", console=Console(file=io.StringIO()))
        cpu = time.process_time() - cpu_started
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return result.steps_per_sec, cpu


def measure(workload: str, repeats: int, quick: bool) -> dict[str, Any]:
    """R interleaved rounds of both loops on one workload."""
    params, steps, warmup = WORKLOADS[workload]
    if quick:
        steps = max(100, steps // 10)
    work = Path(tempfile.mkdtemp(prefix="bench-input-fn-"))
    (work / "bench_program.py").write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
    config = write_config(work, params, steps)
    double = Path(tempfile.mkdtemp(prefix="bench-input-fn-2n-"))
    (double / "bench_program.py").write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
    config_2n = write_config(double, params, 2 * steps)
    rates: dict[str, list[float]] = {"raw": [], "raw_steady": [], "hookrun": [], "raw_cpu": [], "hookrun_cpu": []}
    try:
        for round_index in range(repeats):
            order = ["raw", "hookrun"] if round_index % 2 == 0 else ["hookrun", "raw"]
            for loop in order:
                if loop == "raw":
                    rate, steady, cpu = run_raw(config, steps, warmup)
                    rates["raw_steady"].append(steady)
                else:  # N steps, then 2N: the difference of their CPU is N steps' own (set-up cancels out)
                    rate, cpu_n = run_hookrun(config)
                    cpu = (run_hookrun(config_2n)[1] - cpu_n) / steps
                rates[loop].append(rate)
                rates[f"{loop}_cpu"].append(cpu)
                log(f"{workload} round {round_index + 1}/{repeats} {loop}: {rate:.0f} steps/s, "
                    f"{cpu * 1e6:.0f} CPU us/step")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(double, ignore_errors=True)
    return {"steps": steps, "warmup": warmup, "params": params, "rates": rates}


def report(results: dict[str, dict[str, Any]], repeats: int, loads: tuple[float, float]) -> str:
    """The markdown section."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        MARK_BEGIN,
        "## A user's tf.data input_fn: hookrun (stop_at_step only) / raw make_callable (issue 24)",
        "",
        f"`benchmarks/input_fn_bench.py`, {now}, R = {repeats} interleaved rounds (order alternating), "
        f"{os.cpu_count()} CPUs, load average {loads[0]:.2f} at the start and {loads[1]:.2f} at the end. "
        "Same config, same graph (`prepare`'s `build_graph`), same dataset and iterator. hookrun: "
        "`steps_per_sec` of `train` with `stop_at_step` only (session ready to the last step, first steps "
        "included). raw: `make_callable` in a plain session, timed over the same span (its first N calls) "
        "and, as `steady`, over N calls after W warm-up calls. Target >= 0.95x, on the same span. "
        "CPU per step (all threads of the process, `time.process_time`): raw over N calls after the timed "
        "ones; hookrun as the difference between a run of 2N and one of N steps, divided by N (graph build "
        "and session set-up cancel out); the CPU ratio is raw / hookrun (1.0x: the same CPU per step). "
        "Wall-clock rates swing with other processes on a shared machine; CPU per step much less.",
        "",
        "| workload | N (W) | raw steps/s | hookrun steps/s | ratio of medians | round-paired ratio "
        "| met? | raw steady steps/s | hookrun / raw steady | raw CPU us/step | hookrun CPU us/step | CPU ratio |",
        "|---|---|---:|---:|---:|---:|:---:|---:|---:|---:|---:|---:|",
    ]

    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"

    def micro(values: list[float]) -> str:
        return f"{statistics.median(values) * 1e6:.0f} ({min(values) * 1e6:.0f}-{max(values) * 1e6:.0f})"

    for workload, result in results.items():
        raw, hookrun, steady = (result["rates"][key] for key in ("raw", "hookrun", "raw_steady"))
        raw_cpu, hookrun_cpu = result["rates"]["raw_cpu"], result["rates"]["hookrun_cpu"]
        ratio = statistics.median(hookrun) / statistics.median(raw)
        paired = statistics.median(h / r for h, r in zip(hookrun, raw, strict=True))
        lines.append(
            f"| {workload} | {result['steps']} ({result['warmup']}) | {cell(raw)} | {cell(hookrun)} | {ratio:.2f}x "
            f"| {paired:.2f}x | {'met' if ratio >= 0.95 else 'missed'} | {cell(steady)} "
            f"| {statistics.median(hookrun) / statistics.median(steady):.2f}x "
            f"| {micro(raw_cpu)} | {micro(hookrun_cpu)} "
            f"| {statistics.median(raw_cpu) / statistics.median(hookrun_cpu):.2f}x |"
        )
    lines.append("")
    lines.append("Cells: median (min-max) over the rounds.")
    lines += ["", MARK_END]
    return "\n".join(lines)


def main() -> None:
    """Measure the workloads, print the table, write it into RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="R: interleaved rounds (default 5)")
    parser.add_argument("--quick", action="store_true", help="smoke run: R=1, N/10 steps")
    parser.add_argument("--workloads", default="small,dnn", help="comma-separated: small, dnn (default both)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    start_load = os.getloadavg()[0]
    results = {name: measure(name, repeats, args.quick) for name in args.workloads.split(",")}
    section = report(results, repeats, (start_load, os.getloadavg()[0]))
    print(section)
    if not args.no_write:
        text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
        pattern = re.compile(re.escape(MARK_BEGIN) + ".*?" + re.escape(MARK_END), re.S)
        text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
        RESULTS.write_text(text.rstrip("\n") + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
