"""What one evaluation costs, by how the eval-mode model_fn call is built (issue 25). Measures, never asserts.

Usage::

    .venv/bin/python benchmarks/eval_bench.py              # R = 7 interleaved rounds per size
    .venv/bin/python benchmarks/eval_bench.py --repeats 3  # quicker, rougher

Plain TensorFlow (``tf.compat.v1`` graph mode), so only the candidates differ; (e) imports with hookrun's
own :func:`hookrun.runner.graph.graft.graft`. A DNN
regressor on 8 features (ReLU layers built with ``tf.compat.v1.get_variable``, Adam in train mode) at two sizes:
``small`` 64-32 (2,689 parameters) and ``large`` 2048-2048-1024 (6,316,033 parameters). One evaluation
is a full pass over 4,128 validation rows (batch 256: 17 batches) with a streaming ``mean`` of the
loss, as hookrun's ``evaluation`` hook runs it, after a few training steps moved the weights. Each
candidate evaluates the weights the training session holds at that moment:

- ``in_graph``: today's form. The model_fn called again inside the training graph under
  ``variable_scope(reuse=True)``; the pass runs on the training session.
- ``(a) new graph + restore``: as Estimator's ``evaluate``: write a checkpoint, build a new graph,
  a new session, restore, evaluate.
- ``(b) kept graph, weights fed``: a second graph and session built once; before each pass the
  training session's weights are fetched and assigned through placeholders.
- ``(c) kept graph, restore``: the second graph and session kept; a checkpoint written and restored
  into it before each pass.
- ``(e) grafted``: the eval-mode model_fn built in a fresh graph (every name resolves as in
  Estimator's eval graph), the part the pass needs (``extract_sub_graph``) imported into the training
  graph under ``evaluation/`` with each model variable mapped to the training variable of the same
  name (``import_graph_def(input_map=...)``); the pass runs on the training session. Its one-time
  build cost (fresh graph + import) is reported apart.

(d) (a custom getter returning the training variables by name) is not measured: it runs the same
ops as ``in_graph`` on the same session, so it costs what ``in_graph`` and ``(e)`` cost, and a
custom getter never sees weights made with ``tf.Variable`` nor the names ``tf.name_scope`` uniquifies.

The rounds are interleaved (one evaluation of every candidate per round, the order rotating); the
table is each candidate's median and minimum seconds per evaluation and their ratios to ``in_graph``'s. The rows
replace the section between ``<!-- eval-bench -->`` markers in ``benchmarks/RESULTS.md``
(``--no-write`` to only print).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
MARK_BEGIN, MARK_END = "<!-- eval-bench -->", "<!-- /eval-bench -->"
SIZES = {"small": [64, 32], "large": [2048, 2048, 1024]}
ROWS, FEATURES, BATCH = 4128, 8, 256
SMALL_FACTOR = 10
CANDIDATES = ("in_graph", "a_new_graph", "b_fed", "c_restore", "e_grafted")
LABELS = {
    "in_graph": "in-graph (today: reuse=True in the training graph)",
    "a_new_graph": "(a) new graph + restore checkpoint + new session (Estimator)",
    "b_fed": "(b) kept graph + session, weights fetched and assigned",
    "c_restore": "(c) kept graph + session, checkpoint written and restored",
    "e_grafted": "(e) fresh-graph build grafted into the training graph (chosen)",
}


def log(message: str) -> None:
    """Progress on stderr."""
    print(f"[eval-bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def model_fn(tf: Any, features: Any, labels: Any, mode: str, hidden: list[int]) -> tuple[Any, Any]:
    """A DNN regressor with default-style names (``dense``, ``dense_1``, ...); Adam in train mode.

    Returns ``(loss, train_op)`` (``train_op`` None outside train mode, so the in-graph form builds too).
    """
    v1 = tf.compat.v1
    net = features
    for index, units in enumerate([*hidden, 1]):
        with v1.variable_scope(f"dense_{index}" if index else "dense"):
            kernel = v1.get_variable("kernel", [net.shape[1], units], initializer=v1.glorot_uniform_initializer())
            bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
        net = tf.matmul(net, kernel) + bias
        if index < len(hidden):
            net = tf.nn.relu(net)
    loss = tf.reduce_mean(tf.square(net - labels))
    if mode != "train":
        return loss, None
    return loss, v1.train.AdamOptimizer(1e-3).minimize(loss, global_step=v1.train.get_global_step())


def eval_part(tf: Any, x: np.ndarray, y: np.ndarray, hidden: list[int], reuse: Any) -> dict[str, Any]:
    """The evaluation pipeline into the default graph: iterator, model (eval mode), streaming mean."""
    v1 = tf.compat.v1
    locals_before = set(v1.local_variables())
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
    iterator = v1.data.make_initializable_iterator(dataset)
    features, labels = iterator.get_next()
    with v1.variable_scope(v1.get_variable_scope(), reuse=reuse):
        loss, _ = model_fn(tf, features, labels, "eval", hidden)
    value, update = v1.metrics.mean(loss, weights=tf.cast(tf.shape(labels)[0], tf.float32), name="loss_metric")
    metric_locals = [v for v in v1.local_variables() if v not in locals_before]
    reset = tf.group(iterator.initializer, v1.variables_initializer(metric_locals), name="reset")
    return {"reset": reset, "update": tf.group(update, name="update"), "value": tf.identity(value, name="value")}


def one_pass(session: Any, ops: dict[str, Any]) -> float:
    """reset, update per batch, the value: one evaluation."""
    session.run(ops["reset"])
    for _ in range(-(-ROWS // BATCH)):
        session.run(ops["update"])
    return float(session.run(ops["value"]))


def measure(tf: Any, size: str, repeats: int, workdir: Path) -> dict[str, Any]:
    """Every candidate's seconds per evaluation at one size (interleaved rounds) and (e)'s build seconds."""
    v1 = tf.compat.v1
    hidden = SIZES[size]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(ROWS, FEATURES)).astype(np.float32)
    y = (x @ rng.normal(size=(FEATURES, 1))).astype(np.float32)
    train_x = rng.normal(size=(1024, FEATURES)).astype(np.float32)
    train_y = (train_x @ rng.normal(size=(FEATURES, 1))).astype(np.float32)

    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(0)
        v1.train.get_or_create_global_step()
        batches = tf.data.Dataset.from_tensor_slices((train_x, train_y)).repeat().batch(BATCH)
        features, labels = v1.data.make_one_shot_iterator(batches).get_next()
        loss, train_op = model_fn(tf, features, labels, "train", hidden)
        with tf.name_scope("in_graph"):
            in_graph = eval_part(tf, x, y, hidden, reuse=True)
        started = time.perf_counter()
        grafted = graft(tf, graph, x, y, hidden)
        graft_seconds = time.perf_counter() - started
        saver = v1.train.Saver()
        init = [v1.global_variables_initializer(), v1.local_variables_initializer()]
    session = v1.Session(graph=graph)
    session.run(init)
    prefix = str(workdir / f"{size}.ckpt")

    def fresh_graph() -> tuple[Any, Any, dict[str, Any], Any]:
        g = tf.Graph()
        with g.as_default():
            v1.train.get_or_create_global_step()
            ops = eval_part(tf, x, y, hidden, reuse=False)
            return g, v1.train.Saver(v1.global_variables()), ops, v1.global_variables()

    kept_graph, kept_saver, kept_ops, kept_vars = fresh_graph()
    kept_session = v1.Session(graph=kept_graph)
    with kept_graph.as_default():
        placeholders = [v1.placeholder(v.dtype.base_dtype, v.shape) for v in kept_vars]
        assign = tf.group(*(v.assign(p) for v, p in zip(kept_vars, placeholders, strict=True)))
    with graph.as_default():
        by_name = {v.op.name: v for v in v1.global_variables()}
    train_vars = [by_name[v.op.name] for v in kept_vars]

    def save() -> None:
        with graph.as_default():  # a Saver used outside its graph takes the eager path
            saver.save(session, prefix, write_meta_graph=False)

    def run_a() -> float:
        save()
        g, s, ops, _ = fresh_graph()
        with g.as_default(), v1.Session(graph=g) as new_session:
            s.restore(new_session, prefix)
            return one_pass(new_session, ops)

    def run_b() -> float:
        values = session.run(train_vars)
        kept_session.run(assign, feed_dict=dict(zip(placeholders, values, strict=True)))
        return one_pass(kept_session, kept_ops)

    def run_c() -> float:
        save()
        with kept_graph.as_default():
            kept_saver.restore(kept_session, prefix)
        return one_pass(kept_session, kept_ops)

    runs = {
        "in_graph": lambda: one_pass(session, in_graph),
        "a_new_graph": run_a,
        "b_fed": run_b,
        "c_restore": run_c,
        "e_grafted": lambda: one_pass(session, grafted),
    }
    runs = {name: runs[name] for name in CANDIDATES}
    seconds: dict[str, list[float]] = {name: [] for name in CANDIDATES}
    for _ in range(3):  # warm-up: every candidate once (kernels, thread pools, the first restore)
        session.run(train_op)
        values = {name: run() for name, run in runs.items()}
    spread = max(values.values()) - min(values.values())
    if spread > 1e-3 * max(1.0, abs(values["in_graph"])):
        raise SystemExit(f"{size}: the candidates disagree on the value: {values}")
    for round_index in range(repeats):
        session.run(train_op)
        order = CANDIDATES[round_index % len(CANDIDATES):] + CANDIDATES[: round_index % len(CANDIDATES)]
        for name in order:
            started = time.perf_counter()
            runs[name]()
            seconds[name].append(time.perf_counter() - started)
        log(f"{size}: round {round_index + 1}/{repeats}")
    session.close()
    kept_session.close()
    parameters = sum(int(np.prod(v.shape)) for v in kept_vars if v.op.name != "global_step")
    return {"parameters": parameters, "seconds": seconds, "graft_seconds": graft_seconds}


def graft(tf: Any, graph: Any, x: np.ndarray, y: np.ndarray, hidden: list[int]) -> Any:
    """(e) with hookrun's own :func:`hookrun.runner.graph.graft.graft`: the eval part, grafted.

    Built in a fresh graph; what the pass needs imported into ``graph`` (the default graph), variables
    mapped by name.
    """
    from hookrun.runner.graph.graft import graft as hookrun_graft

    v1 = tf.compat.v1
    fresh = tf.Graph()
    with fresh.as_default():
        v1.train.get_or_create_global_step()
        ops = eval_part(tf, x, y, hidden, reuse=False)
    imported = hookrun_graft(tf, graph, fresh, ops, "grafted", "bench")
    return {name: imported[name] for name in ops}


def report(results: dict[str, dict[str, Any]], repeats: int) -> str:
    """The markdown section."""
    load = os.getloadavg()[0]
    lines = [
        MARK_BEGIN,
        "## Evaluation cost (issue 25)",
        "",
        f"Generated by `python benchmarks/eval_bench.py --repeats {repeats}` on "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; load average (1 min) at the end {load:.2f}"
        + (" — **the machine was busy; treat the numbers as rough**" if load > 2 else "")
        + ". One evaluation: 4,128 rows, batch 256, streaming mean of the loss; median and minimum of the "
        "interleaved rounds, each with its ratio to the in-graph form's (on a busy machine the minimum is the "
        "steadier). Plain TensorFlow; see the script's docstring.",
        "",
        "| candidate | "
        + " | ".join(
            f"{size} ({r['parameters']:,} params, R={len(r['seconds']['in_graph'])}) median s | × in-graph | "
            "min s | × in-graph (min)"
            for size, r in results.items()
        )
        + " |",
        "|---|" + "---:|---:|---:|---:|" * len(results),
    ]
    for name in CANDIDATES:
        cells = []
        for r in results.values():
            median = statistics.median(r["seconds"][name])
            base = statistics.median(r["seconds"]["in_graph"])
            fastest, base_min = min(r["seconds"][name]), min(r["seconds"]["in_graph"])
            cells.append(f"{median:.4f} | {median / base:.2f} | {fastest:.4f} | {fastest / base_min:.2f}")
        lines.append(f"| {LABELS[name]} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "(e) builds once per run, before training: "
        + ", ".join(f"{size} {r['graft_seconds']:.2f} s" for size, r in results.items())
        + " (the fresh graph and the import)."
    )
    lines.append(MARK_END)
    return "\n".join(lines)


def main() -> None:
    """Measure both sizes, print the table, write it into RESULTS.md."""
    global CANDIDATES
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repeats", type=int, default=7, help=f"interleaved rounds, large size (default 7; small: {SMALL_FACTOR}x)"
    )
    parser.add_argument("--sizes", default="small,large", help="comma-separated: small, large")
    parser.add_argument(
        "--candidates", default=",".join(CANDIDATES), help="comma-separated subset (in_graph is always measured)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = parser.parse_args()
    import tensorflow as tf

    CANDIDATES = tuple(c for c in CANDIDATES if c == "in_graph" or c in args.candidates.split(","))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            log(f"{size}: building")
            rounds = args.repeats * (SMALL_FACTOR if size == "small" else 1)  # a small pass is ~10 ms: more rounds
            results[size] = measure(tf, size, rounds, Path(tmp))
    section = report(results, args.repeats)
    print(section)
    if not args.no_write:
        text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
        pattern = re.compile(re.escape(MARK_BEGIN) + ".*?" + re.escape(MARK_END), re.S)
        text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
        RESULTS.write_text(text.rstrip("\n") + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
