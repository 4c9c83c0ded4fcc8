"""One workload in one fresh process: every training loop, R interleaved rounds, results as JSON.

Run by ``bench.py`` (one subprocess per workload, so each gets a fresh TensorFlow)::

    python benchmarks/worker.py --workload linear --steps 3000 --warmup 50 --repeats 5 --out linear.json

Loops (all on the same preprocessed arrays and the same graph as hookrun builds it):

- ``a``: ``Session.make_callable([train_op, loss, global_step])`` called N times (after W warm-up calls);
- ``b``: ``sess.run([train_op, loss, global_step])`` N times (after W warm-up runs);
- ``c``: ``MonitoredTrainingSession`` (its own hooks off) with TensorFlow's equivalents of the standard set;
  ``c1`` (c'): the same with ``CheckpointSaverHook._set_steps_per_run(1)``;
- ``d``: Keras 3 ``model.fit`` of the same model, same ``tf.data`` pipeline, W warm-up batches excluded;
- ``e[:engine]``, ``e0[:engine]``, ``e-np[:engine]``: ``hookrun.runner.trainer.train`` with the standard set,
  ``stop_at_step`` alone, and the standard set without ``progress_bar``/``history_saver``;
- per N of ``--steps-per-run`` (issue 17): ``e@N:hookrun``, hookrun's standard set with ``session.steps_per_run:
  N``; ``f@N``, the same fused graph (``build_graph`` with ``steps_per_run: N``) run bare, ``make_callable``
  on its train op, no hooks; ``k@N``, (d) compiled with ``steps_per_execution=N``.

``c``, ``c1`` and every ``e`` are timed the way hookrun reports ``summary.json``'s ``steps_per_sec``: N steps
over the step loop, from "session ready" (after ``after_create_session``) to the last step's end (every
hook's ``end()`` and the session's close come after, and are recorded apart as ``close_seconds``), so they
compare like for like; ``c``/``c1`` also record their steady rate (steps W+1..N).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import TF_ENV, WORKLOADS, Workload, available_engines, config_dict, write_config  # noqa: E402

for _key, _value in TF_ENV.items():
    os.environ.setdefault(_key, _value)


def log(message: str) -> None:
    """A progress line on stdout (bench.py passes it through)."""
    print(message, flush=True)


class Prepared:
    """The workload's config, preprocessed arrays and device plan, loaded once with hookrun's own code."""

    def __init__(self, tf: Any, config_path: Path) -> None:
        from hookrun.runner.config import load_config
        from hookrun.runner.data.preprocessing import Preprocessor
        from hookrun.runner.data.reader import load_raw_data
        from hookrun.runner.graph.device import resolve_device, session_config

        self.tf = tf
        self.loaded = load_config(config_path)
        config = self.loaded.config
        raw = load_raw_data(config.data, self.loaded.base_dir)
        self.preprocessor = Preprocessor.fit(raw.train, config.data, raw.split)
        self.data = self.preprocessor.transform(raw.train)
        self.plan = resolve_device(
            config.device, len(tf.config.list_physical_devices("GPU")), config.session.allow_soft_placement
        )
        self.session_config = session_config(tf, self.plan, 0, 0)

    def build(self, steps_per_run: int = 1) -> Any:
        """A fresh graph built by ``hookrun.runner.graph.build.build_graph`` (the graph ``hookrun train`` runs).

        Args:
            steps_per_run: ``session.steps_per_run`` (N > 1: the fused loop of N steps per call).
        """
        from hookrun.runner.graph.build import build_graph

        config = self.loaded.config
        if steps_per_run != config.session.steps_per_run:
            config = config.model_copy(
                update={"session": config.session.model_copy(update={"steps_per_run": steps_per_run})}
            )
        return build_graph(
            self.tf,
            config,
            self.data,
            self.loaded.base_dir,
            self.plan,
            0,
            label_scale=self.preprocessor.label_scale,
            carry={"loss", "global_step"},  # what the standard hook set reads (steps_per_run > 1)
        )


def step_counter_rate(directory: Path) -> float | None:
    """Steady steps/s from the ``global_step/sec`` summaries a ``StepCounterHook`` wrote in ``directory``.

    Each summary is one window of ``every_n_steps`` steps (the first step and the last partial window are
    outside every window), so the harmonic mean of the windows' values is the window steps over their time.
    None when there is no such summary.
    """
    import tensorflow as tf

    values = []
    for path in sorted(directory.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            values += [v.simple_value for v in event.summary.value if v.tag == "global_step/sec" and v.simple_value > 0]
    return len(values) / sum(1.0 / v for v in values) if values else None


def loop_session(prep: Prepared, steps: int, warmup: int, callable_: bool) -> dict[str, Any]:
    """(a) ``make_callable`` or (b) ``sess.run`` of ``[train_op, loss, global_step]``: steady steps/s."""
    tf = prep.tf
    built = prep.build()
    with built.graph.as_default():
        init = tf.compat.v1.group(
            tf.compat.v1.global_variables_initializer(), tf.compat.v1.local_variables_initializer()
        )
        fetches = [built.train_op, built.spec.loss, built.global_step]
        with tf.compat.v1.Session(graph=built.graph, config=prep.session_config) as sess:
            sess.run(init)
            step = sess.make_callable(fetches) if callable_ else (lambda: sess.run(fetches))
            for _ in range(warmup):
                step()
            started = time.perf_counter()
            for _ in range(steps):
                _, loss, _ = step()
            seconds = time.perf_counter() - started
    return {"rate": steps / seconds, "steps": steps, "seconds": seconds, "final_loss": float(loss)}


def loop_fused_bare(prep: Prepared, steps: int, warmup: int, steps_per_run: int) -> dict[str, Any]:
    """(f@N) the fused graph of ``session.steps_per_run: N`` run bare: ``make_callable`` on its train op, no hooks.

    Each call trains up to N steps and returns how many; ``ceil(W / N)`` untimed warm-up calls, then calls
    until N steps' worth (the last call shortened through the loop's bound, as ``stop_at_step`` does).
    """
    tf = prep.tf
    built = prep.build(steps_per_run)
    window = built.window
    with built.graph.as_default():
        init = tf.compat.v1.group(
            tf.compat.v1.global_variables_initializer(), tf.compat.v1.local_variables_initializer()
        )
        with tf.compat.v1.Session(graph=built.graph, config=prep.session_config) as sess:
            sess.run(init)
            call = sess.make_callable(built.train_op)
            for _ in range(max(1, -(-warmup // steps_per_run))):
                call()
            done = 0
            started = time.perf_counter()
            while done < steps:
                left = steps - done
                if left < steps_per_run:
                    sess.run(window.set_bound, {window.bound_value: left})
                done += int(call())
            seconds = time.perf_counter() - started
    return {"rate": done / seconds, "steps": done, "seconds": seconds}


def loop_monitored(prep: Prepared, steps: int, warmup: int, steps_per_run_fix: bool) -> dict[str, Any]:
    """(c)/(c') ``MonitoredTrainingSession`` with TensorFlow's equivalents of hookrun's standard hook set."""
    tf = prep.tf
    v1 = tf.compat.v1
    built = prep.build()
    directory = tempfile.mkdtemp(prefix="bench-mts-")
    try:
        with built.graph.as_default():
            loss = built.spec.loss
            summary_op = v1.summary.scalar("loss", loss)
            checkpoint = v1.train.CheckpointSaverHook(directory, save_steps=1000)
            if steps_per_run_fix:
                checkpoint._set_steps_per_run(1)
            hooks = [  # hookrun's standard set minus progress_bar/history_saver, same order
                v1.train.StopAtStepHook(last_step=steps),
                v1.train.NanTensorHook(loss),
                checkpoint,
                v1.train.LoggingTensorHook({"loss": loss, "global_step": built.global_step}, every_n_iter=100),
                v1.train.SummarySaverHook(save_steps=100, output_dir=directory, summary_op=summary_op),
                v1.train.StepCounterHook(every_n_steps=100, output_dir=directory),
            ]
            done = 0
            with v1.train.MonitoredTrainingSession(
                checkpoint_dir=directory,
                hooks=hooks,
                config=prep.session_config,
                save_checkpoint_secs=None,
                save_checkpoint_steps=None,
                save_summaries_steps=None,
                save_summaries_secs=None,
                log_step_count_steps=None,
            ) as sess:
                ready = warmed = time.perf_counter()
                while not sess.should_stop():
                    sess.run(built.train_op)
                    done += 1
                    if done == warmup:
                        warmed = time.perf_counter()
                loop_end = time.perf_counter()
            closed = time.perf_counter()
        v1.summary.FileWriterCache.clear()
        counted = step_counter_rate(Path(directory))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "rate": done / (loop_end - ready),
        "steps": done,
        "seconds": loop_end - ready,
        "steady_rate": counted,
        "after_warmup_rate": (done - warmup) / (loop_end - warmed) if done > warmup else None,
        "close_seconds": closed - loop_end,
    }


#: Keras's TensorBoard callback writes its scalars with ``tf.summary.scalar``, which lives in the ``tensorboard``
#: package (not a dependency of ``tensorflow-cpu``). Without it the callback is kept as is, with only ``scalar``
#: swapped for TF core's ``tf.summary.write`` (same event-file write, without TensorBoard's plugin metadata).
HAVE_TENSORBOARD = importlib.util.find_spec("tensorboard") is not None


class CoreSummary:
    """``tf.summary`` with ``scalar`` implemented by ``tf.summary.write`` (for machines without ``tensorboard``)."""

    def __init__(self, tf: Any) -> None:
        self._tf = tf

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tf.summary, name)

    def scalar(self, name: str, data: Any, step: Any = None, description: str | None = None) -> Any:
        """Write one scalar, as ``tf.summary.scalar`` does, minus the plugin metadata."""
        return self._tf.summary.write(name, self._tf.cast(data, self._tf.float32), step=step)


def loop_keras(
    prep: Prepared, workload: Workload, steps: int, warmup: int, steps_per_execution: int = 1
) -> dict[str, Any]:
    """(d) Keras 3 ``model.fit`` on the same ``tf.data`` pipeline; timed from the end of batch W to the end of fit.

    With ``steps_per_execution`` (k@N), W and N are rounded up to multiples of it (one batch callback per
    execution).
    """
    import keras

    from hookrun.runner.data.reader import make_dataset

    tf = prep.tf
    spe = steps_per_execution
    warmup = max(warmup, 1)  # the first batch traces the train function: never timed
    warmup, steps = -(-warmup // spe) * spe, -(-steps // spe) * spe

    class Timer(keras.callbacks.Callback):
        """Last in the callback list: its ``on_train_end`` runs after the others'."""

        started = ended = 0.0

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if not self.started and batch >= warmup - 1:
                self.started = time.perf_counter()

        def on_train_end(self, logs: Any = None) -> None:
            self.ended = time.perf_counter()

    directory = tempfile.mkdtemp(prefix="bench-keras-")
    try:
        keras.utils.set_random_seed(0)
        n_features = prep.data.features.shape[1]
        layers = [keras.Input(shape=(n_features,))]
        layers += [keras.layers.Dense(units, activation="relu") for units in workload.hidden]
        layers.append(keras.layers.Dense(1))
        model = keras.Sequential(layers)
        name, rate = workload.optimizer
        optimizer = keras.optimizers.SGD(rate) if name == "sgd" else keras.optimizers.Adam(rate)
        model.compile(optimizer=optimizer, loss="mse", steps_per_execution=spe)
        dataset = make_dataset(tf, prep.data, prep.loaded.config.data)  # shuffle -> repeat -> batch -> prefetch
        timer = Timer()
        tensorboard = keras.callbacks.TensorBoard(log_dir=directory, update_freq=100)
        if not HAVE_TENSORBOARD:
            tensorboard._summary_module = CoreSummary(tf)
        callbacks = [
            keras.callbacks.TerminateOnNaN(),
            tensorboard,
            keras.callbacks.ModelCheckpoint(
                os.path.join(directory, "model.weights.h5"), save_weights_only=True, save_freq=1000
            ),
            timer,
        ]
        history = model.fit(dataset, epochs=1, steps_per_epoch=warmup + steps, verbose=0, callbacks=callbacks)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    seconds = timer.ended - timer.started
    return {"rate": steps / seconds, "steps": steps, "seconds": seconds, "final_loss": history.history["loss"][-1]}


def loop_hookrun(config_path: Path) -> dict[str, Any]:
    """(e) ``hookrun.runner.trainer.train`` on a generated config, a fresh run directory, a non-terminal console."""
    from rich.console import Console

    from hookrun.runner.config import load_config
    from hookrun.runner.trainer import train

    directory = Path(tempfile.mkdtemp(prefix="bench-hookrun-"))
    try:
        output = io.StringIO()
        result = train(load_config(config_path), run_dir=directory / "run", console=Console(file=output))
        # plain progress lines: the bar prints at most one every 10 s without a terminal
        progress_lines = sum(1 for line in output.getvalue().splitlines() if "Training" in line)
        counted = step_counter_rate(directory / "run")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "rate": result.steps_per_sec,
        "steps": result.steps,
        "seconds": result.loop_seconds,
        "steady_rate": counted,
        "progress_lines": progress_lines,
        "close_seconds": result.end_seconds,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure every requested loop of one workload, R rounds interleaved, and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), required=True)
    parser.add_argument("--steps", type=int, required=True, help="N: steps per timed repeat")
    parser.add_argument("--warmup", type=int, default=50, help="W: untimed warm-up steps where practical")
    parser.add_argument("--repeats", type=int, default=5, help="R: rounds")
    parser.add_argument("--loops", default="all", help="comma-separated loop keys (a,b,c,c1,d,e,e0,e-np) or all")
    parser.add_argument("--out", type=Path, required=True, help="JSON output file")
    parser.add_argument(
        "--steps-per-run", default="", help="comma-separated N for the e@N, f@N and k@N loops (default none)"
    )
    args = parser.parse_args(argv)
    fused = [int(n) for n in args.steps_per_run.split(",") if n.strip()]

    started = time.perf_counter()
    workload = WORKLOADS[args.workload]
    import tensorflow as tf

    tmp = Path(tempfile.mkdtemp(prefix=f"bench-{workload.key}-"))
    try:
        engines = available_engines()
        loops: dict[str, Any] = {}
        prep = Prepared(tf, write_config(tmp / "full.yaml", config_dict(workload, args.steps)))
        loops["a"] = lambda: loop_session(prep, args.steps, args.warmup, callable_=True)
        loops["b"] = lambda: loop_session(prep, args.steps, args.warmup, callable_=False)
        loops["c"] = lambda: loop_monitored(prep, args.steps, args.warmup, steps_per_run_fix=False)
        loops["c1"] = lambda: loop_monitored(prep, args.steps, args.warmup, steps_per_run_fix=True)
        loops["d"] = lambda: loop_keras(prep, workload, args.steps, args.warmup)
        for engine in engines:
            for key, hook_set in (("e", "full"), ("e0", "stop_only"), ("e-np", "no_progress_history")):
                path = write_config(tmp / f"{key}-{engine}.yaml", config_dict(workload, args.steps, hook_set, engine))
                loops[f"{key}:{engine}"] = lambda path=path: loop_hookrun(path)
        for n in fused:
            path = write_config(
                tmp / f"e-{n}.yaml", config_dict(workload, args.steps, "full", "hookrun", steps_per_run=n)
            )
            loops[f"e@{n}:hookrun"] = lambda path=path: loop_hookrun(path)
            loops[f"f@{n}"] = lambda n=n: loop_fused_bare(prep, args.steps, args.warmup, n)
            loops[f"k@{n}"] = lambda n=n: loop_keras(prep, workload, args.steps, args.warmup, n)
        chosen = args.loops.split(",")
        wanted = list(loops) if args.loops == "all" else [k for k in loops if k.split(":")[0].split("@")[0] in chosen]
        results: dict[str, list[dict[str, Any]]] = {key: [] for key in wanted}
        for round_index in range(args.repeats):
            shift = round_index % len(wanted)  # rotate the order each round: no loop always runs first
            for key in wanted[shift:] + wanted[:shift]:
                measured = loops[key]()
                results[key].append(measured)
                steady = f" (steady {measured['steady_rate']:.1f})" if measured.get("steady_rate") else ""
                log(
                    f"  [{workload.key}] round {round_index + 1}/{args.repeats} {key:<10} "
                    f"{measured['rate']:9.1f} steps/s{steady}"
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    import keras

    payload = {
        "workload": workload.key,
        "steps": args.steps,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "engines": engines,
        "versions": {"tensorflow": tf.__version__, "keras": keras.__version__, "python": sys.version.split()[0]},
        "loops": {
            key: {"median": statistics.median(r["rate"] for r in runs), "runs": runs} for key, runs in results.items()
        },
        "seconds": time.perf_counter() - started,
    }
    args.out.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
