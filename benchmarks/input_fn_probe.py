"""What the two loops of ``input_fn_bench.py`` run, side by side: the evidence behind its ratio (measures only).

Usage::

    .venv/bin/python benchmarks/input_fn_probe.py                  # the dnn workload
    .venv/bin/python benchmarks/input_fn_probe.py --workload small

For one workload of :mod:`input_fn_bench` (the same program and config), in one process, it runs the raw
``make_callable`` loop and ``hookrun.runner.trainer.train`` with ``stop_at_step`` only, and prints for each:

- the session's ``ConfigProto`` (threads, Grappler rewrites, device count) and ``TF_ENABLE_ONEDNN_OPTS``;
- the tensors fetched and the ops targeted by each step's session call, its ``RunOptions`` and feeds;
- session calls per step (every ``TF_SessionRun_wrapper`` call, ``Session.run`` included, over the timed
  steps) and the dataset's iterator op;
- the ops one step executes (``RunMetadata.step_stats`` of a step run with a full trace, on the same fetches
  and targets), and the ops one side runs that the other does not;
- the calling thread's CPU per step (``time.thread_time``: Python plus the session call's own thread) and
  the process's (``time.process_time``: every thread), over steps W..N of the loop;
- the calling thread's Python profile (``cProfile``) over 200 steps: the functions the step loop calls.

hookrun runs unmodified: the probe only wraps the engine's session call (``engine._session_run``) and
``Session.__init__`` to observe them, as ``--trace`` would not (it wraps the hooks).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from input_fn_bench import PROGRAM, WORKLOADS, raw_session, write_config  # noqa: E402

#: Steps the profile covers (after the warm-up steps).
PROFILED = 200


def thread_times() -> dict[tuple[int, str], float]:
    """CPU seconds of every thread of this process so far, by (thread id, name), from ``/proc/self/task``."""
    ticks = os.sysconf("SC_CLK_TCK")
    times = {}
    for task in os.listdir("/proc/self/task"):
        try:
            stat = Path(f"/proc/self/task/{task}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        times[(int(task), name)] = (int(fields[11]) + int(fields[12])) / ticks
    return times


class Probe:
    """Counts the session calls of a loop and times its steps W..N, profiles 200 of them, traces one.

    Args:
        warmup: W, the steps before the timed span (steps).
        steps: N, the step at which the span ends (steps).
    """

    def __init__(self, warmup: int, steps: int) -> None:
        self.warmup, self.steps = warmup, steps
        self.calls = 0  # every TF_SessionRun_wrapper call (the step's, and any Session.run)
        self.step_calls = 0  # the step's own calls
        self.span_calls = 0  # every call during the timed span
        self.cpu: dict[str, float] = {}
        self.profile = cProfile.Profile()

    def on_step(self) -> None:
        """Called before each step's own session call."""
        self.step_calls += 1
        n = self.step_calls
        if n == self.warmup + 1:
            self.cpu["thread0"], self.cpu["process0"], self.cpu["wall0"] = (
                time.thread_time(), time.process_time(), time.perf_counter()
            )
            self.calls_at_start = self.calls
            self.threads0 = thread_times()
            self.profile.enable()
        if n == self.warmup + 1 + PROFILED:
            self.profile.disable()
        if n == self.steps + 1:
            self.cpu["thread1"], self.cpu["process1"], self.cpu["wall1"] = (
                time.thread_time(), time.process_time(), time.perf_counter()
            )
            self.span_calls = self.calls - self.calls_at_start
            threads1 = thread_times()
            self.threads = {key: value - self.threads0.get(key, 0.0) for key, value in threads1.items()}

    def per_step(self) -> dict[str, float]:
        """Thread CPU, process CPU and wall seconds per step over the span."""
        count = self.steps - self.warmup
        return {key: (self.cpu[f"{key}1"] - self.cpu[f"{key}0"]) / count for key in ("thread", "process", "wall")}


def count_calls(probe: Probe) -> Any:
    """Wrap ``TF_SessionRun_wrapper`` where ``Session.run``/``make_callable`` find it: every call counted."""
    from tensorflow.python.client import session as session_module

    original = session_module.tf_session.TF_SessionRun_wrapper

    def counted(*args: Any) -> Any:
        probe.calls += 1
        return original(*args)

    session_module.tf_session.TF_SessionRun_wrapper = counted
    return lambda: setattr(session_module.tf_session, "TF_SessionRun_wrapper", original)


def traced_ops(tf: Any, session: Any, fetches: list[Any]) -> list[str]:
    """Run one step on ``fetches`` with a full trace; the names of the ops it executed (every device)."""
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    metadata = tf.compat.v1.RunMetadata()
    session.run(fetches, options=options, run_metadata=metadata)
    names = [node.node_name for device in metadata.step_stats.dev_stats for node in device.node_stats]
    return sorted(name for name in names if name != "_SOURCE")


def describe_config(config: Any) -> str:
    """The ConfigProto in one line (text format)."""
    return " ".join(str(config).split()) or "(empty: TensorFlow's defaults)"


def run_raw(config_path: Path, warmup: int, steps: int) -> dict[str, Any]:
    """The raw loop of ``input_fn_bench.run_raw`` (``make_callable(train_op)``), observed."""
    probe = Probe(warmup, steps)
    with raw_session(config_path, "probe-raw-") as (tf, built, session, config):
        fetches = [built.train_op]  # the bench's raw step: hookrun's (the train op, nothing fetched)
        step = session.make_callable(fetches)
        restore = count_calls(probe)
        try:
            for _ in range(steps + 1):
                probe.on_step()
                step()
        finally:
            restore()
        ops = traced_ops(tf, session, fetches)
    iterators = sorted({op.type for op in built.graph.get_operations() if "Iterator" in op.type})
    return {
        "config": describe_config(config),
        "fetches": [getattr(f, "name", str(f)) for f in fetches],
        "targets": [],
        "options": "none (make_callable: no RunOptions, no feeds)",
        "probe": probe,
        "ops": ops,
        "iterators": iterators,
        "graph_ops": len(built.graph.get_operations()),
    }


def run_hookrun(config_path: Path, warmup: int, steps: int) -> dict[str, Any]:
    """``hookrun.runner.trainer.train`` with ``stop_at_step`` only, observed through its engine's session call."""
    import tensorflow as tf
    from rich.console import Console

    from hookrun.runner.config import load_config
    from hookrun.runner.session import engine
    from hookrun.runner.trainer import train

    directory = Path(tempfile.mkdtemp(prefix="probe-hookrun-"))
    probe = Probe(warmup, steps)
    seen: dict[str, Any] = {}
    original_init = tf.compat.v1.Session.__init__
    original_plan_init = engine._StepPlan.__init__
    original_run = engine._session_run

    def session_init(self: Any, target: str = "", graph: Any = None, config: Any = None) -> None:
        seen["config"] = describe_config(config) if config is not None else "(none: TensorFlow's defaults)"
        seen["graph"] = graph
        original_init(self, target, graph=graph, config=config)

    def plan_init(self: Any, sess: Any, caller: Any, requests: list[Any]) -> None:
        original_plan_init(self, sess, caller, requests)
        seen.setdefault("plans", []).append(self)
        seen["session"] = sess

    def session_run(*args: Any) -> Any:
        probe.on_step()
        probe.calls += 1  # the engine holds the C call itself: count_calls does not see it
        if probe.step_calls == steps + 1 and "ops" not in seen:  # this step, traced, on the same fetches and targets
            plan = seen["plans"][-1]
            seen["ops"] = traced_ops(tf, seen["session"], [*plan._tensors, *plan._ops])
            return [None] * len(plan._tensors)
        return original_run(*args)

    tf.compat.v1.Session.__init__ = session_init
    engine._StepPlan.__init__ = plan_init
    engine._session_run = session_run
    restore = count_calls(probe)
    try:
        result = train(load_config(config_path), run_dir=directory / "run", console=Console(file=io.StringIO()))
    finally:
        restore()
        tf.compat.v1.Session.__init__ = original_init
        engine._StepPlan.__init__ = original_plan_init
        engine._session_run = original_run
        shutil.rmtree(directory, ignore_errors=True)
    plan = seen["plans"][-1]
    graph = seen["graph"] or tf.compat.v1.get_default_graph()
    return {
        "config": seen["config"],
        "fetches": [t.name for t in plan._tensors],
        "targets": [op.name for op in plan._ops],
        "options": "none (the engine's cached step plan: TF_SessionRun_wrapper with no RunOptions, no feeds)",
        "probe": probe,
        "ops": seen["ops"],
        "iterators": sorted({op.type for op in graph.get_operations() if "Iterator" in op.type}),
        "graph_ops": len(graph.get_operations()),
        "plans": len(seen["plans"]),
        "steps": result.steps,
    }


def main() -> None:
    """Run both loops on one workload and print what each ran."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="dnn", choices=sorted(WORKLOADS))
    parser.add_argument("--steps", type=int, default=None, help="N (default: the bench's)")
    parser.add_argument("--hookrun-first", action="store_true", help="run hookrun's loop before the raw one")
    args = parser.parse_args()
    params, steps, warmup = WORKLOADS[args.workload]
    steps = args.steps or steps
    work = Path(tempfile.mkdtemp(prefix="probe-input-fn-"))
    try:
        (work / "bench_program.py").write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
        sys.path.insert(0, str(work))
        # hookrun stops after its step N + 1 (the traced one), which is hookrun's last
        config = write_config(work, params, steps + 1)
        runs = {"raw": run_raw, "hookrun": run_hookrun}
        order = ["hookrun", "raw"] if args.hookrun_first else ["raw", "hookrun"]
        sides = {name: runs[name](config, warmup, steps) for name in order}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"workload {args.workload}: {params}; N = {steps}, W = {warmup}; load {os.getloadavg()[0]:.2f}")
    print(f"TF_ENABLE_ONEDNN_OPTS={os.environ.get('TF_ENABLE_ONEDNN_OPTS')!r} (one process: both sides)")
    for name, side in sides.items():
        probe = side["probe"]
        per = probe.per_step()
        print(f"\n== {name}")
        print(f"session config: {side['config']}")
        print(f"fetches: {side['fetches']}; targets: {side['targets']}; options: {side['options']}")
        print(f"session calls over the {steps - warmup} timed steps: {probe.span_calls} "
              f"({probe.span_calls / (steps - warmup):.3f} per step)")
        print(f"iterator ops in the graph: {side['iterators']}; graph ops: {side['graph_ops']}")
        print(f"ops one step executes: {len(side['ops'])}")
        print(f"per step: calling thread CPU {per['thread'] * 1e6:.0f} us, process CPU {per['process'] * 1e6:.0f} us, "
              f"wall {per['wall'] * 1e6:.0f} us")
        by_name: dict[str, list[float]] = {}
        for (_, thread), seconds in probe.threads.items():
            by_name.setdefault(thread, []).append(seconds)
        count = steps - warmup
        print(f"threads alive at the span's end: {len(probe.threads)}; CPU per step by thread name "
              "(threads of that name, us/step): " + ", ".join(
                  f"{thread} x{len(values)}: {sum(values) / count * 1e6:.0f}"
                  for thread, values in sorted(by_name.items(), key=lambda item: -sum(item[1]))))
        stream = io.StringIO()
        pstats.Stats(probe.profile, stream=stream).sort_stats("tottime").print_stats(12)
        print(f"Python profile of {PROFILED} steps (calling thread):")
        print("\n".join(line for line in stream.getvalue().splitlines() if line.strip())[:3000])
    raw_ops, hookrun_ops = set(sides["raw"]["ops"]), set(sides["hookrun"]["ops"])
    print(f"\nops only raw executes: {sorted(raw_ops - hookrun_ops)}")
    print(f"ops only hookrun executes: {sorted(hookrun_ops - raw_ops)}")


if __name__ == "__main__":
    main()
