"""``make bench``'s data section: input at scale (issue 14). Measures, never asserts.

Usage::

    .venv/bin/python benchmarks/data_bench.py                  # 5,000,000 rows (the issue's size)
    .venv/bin/python benchmarks/data_bench.py --rows 1000000   # a reduced size
    .venv/bin/python benchmarks/data_bench.py --quick          # 100,000 rows, few steps

A larger data set is generated reproducibly (``numpy.random.default_rng(0)``): the bundled
California rows resampled with replacement, numeric columns plus Gaussian noise of 5% of each
column's standard deviation (``total_bedrooms`` stays empty where the source row is), written as 8
gzip'd CSV shards and 8 GZIP TFRecord shards of ``tf.train.Example``. Then, each in a fresh process:

- the statistics pass (``hookrun.runner.data.streaming.scan_data``): seconds, rows/s, peak RSS;
- ``hookrun train`` on the DNN config (batch 256, ``stop_at_step``) from the CSV and the TFRecord
  shards, and from a tenth of the CSV rows: peak RSS (``ru_maxrss`` of the process), time to the
  first step (process start to the step loop: wall - ``loop_seconds`` - ``end_seconds``),
  steps/s, ``.meta``, ``graph.pbtxt`` and event-file sizes;
- steps/s of the same DNN graph fed by the streaming pipeline vs an in-memory
  ``Dataset.from_tensor_slices`` pipeline (shuffle -> repeat -> batch -> prefetch over the first
  100,000 preprocessed rows) in one process, interleaved rounds, median.

The table replaces the section between ``<!-- data-bench -->`` markers in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCE = ROOT / "configs" / "data" / "california_housing.csv"
RESULTS = HERE / "RESULTS.md"
MARK_BEGIN, MARK_END = "<!-- data-bench -->", "<!-- /data-bench -->"
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0", "COLUMNS": "200"}
SHARDS = 8


def log(message: str) -> None:
    """Progress on stderr."""
    print(f"[data-bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def generate(out: Path, rows: int) -> dict[str, Any]:
    """Write ``rows`` resampled California rows as 8 ``.csv.gz`` shards under ``out/csv``; return facts."""
    with SOURCE.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        source = list(reader)
    text_col = header.index("ocean_proximity")
    numeric = [i for i in range(len(header)) if i != text_col]
    matrix = np.array([[float(r[i]) if r[i] else np.nan for i in numeric] for r in source])
    texts = np.array([r[text_col] for r in source], dtype=object)
    scale = np.nanstd(matrix, axis=0) * 0.05
    rng = np.random.default_rng(0)
    (out / "csv").mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    per = -(-rows // SHARDS)
    for shard in range(SHARDS):
        count = min(per, rows - shard * per)
        pick = rng.integers(0, len(source), size=count)
        values = matrix[pick] + rng.normal(size=(count, len(numeric))) * scale
        with gzip.open(out / "csv" / f"part-{shard:05d}.csv.gz", "wt", encoding="utf-8", compresslevel=1) as f:
            f.write(",".join(header) + "\n")
            cols = [
                [("" if np.isnan(v) else f"{v:.4f}") for v in values[:, j]] for j in range(len(numeric))
            ]
            names = texts[pick]
            for r in range(count):
                cells = [cols[j][r] for j in range(len(numeric))]
                cells.insert(text_col, names[r])
                f.write(",".join(cells) + "\n")
    seconds = time.perf_counter() - started
    size = sum(p.stat().st_size for p in (out / "csv").iterdir())
    return {"rows": rows, "csv_seconds": seconds, "csv_bytes": size}


TFRECORD_WRITER = r"""
import gzip, csv, sys, os
from pathlib import Path
import tensorflow as tf
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
dst.mkdir(parents=True, exist_ok=True)
options = tf.io.TFRecordOptions(compression_type="GZIP")
for path in sorted(src.iterdir()):
    name = path.name.replace(".csv.gz", ".tfrecord.gz")
    with gzip.open(path, "rt", encoding="utf-8") as handle, tf.io.TFRecordWriter(str(dst / name), options) as w:
        for row in csv.DictReader(handle):
            feature = {}
            for key, cell in row.items():
                if cell == "":
                    continue
                if key == "ocean_proximity":
                    feature[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[cell.encode()]))
                else:
                    feature[key] = tf.train.Feature(float_list=tf.train.FloatList(value=[float(cell)]))
            w.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
"""

RSS_WRAPPER = r"""
import json, resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps({"code": done.returncode, "wall": time.perf_counter() - started,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                  "tail": (done.stdout + done.stderr)[-800:]}))
"""

SCAN = r"""
import json, resource, sys, time
from pathlib import Path
from hookrun.runner.config import load_config
from hookrun.runner.data.streaming import scan_data
loaded = load_config(Path(sys.argv[1]))
scan = scan_data(loaded.config.data, loaded.base_dir, loaded.config.graph)
print(json.dumps({"seconds": scan.seconds, "rows": scan.rows_read,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

COMPARE = r"""
import json, os, statistics, sys, time
from pathlib import Path
import numpy as np
from hookrun.runner.config import load_config
from hookrun.runner.data.reader import load_raw_data
from hookrun.runner.data.preprocessing import Preprocessor
from hookrun.runner.data.streaming import StreamInput, make_iterator, scan_data
from hookrun.runner.graph.builders.registry import get_builder
from hookrun.runner.graph.builders.spec import GraphSpec
from hookrun.runner.graph.optimizers import make_train_op
from hookrun.runner.tf_env import import_tensorflow
tf = import_tensorflow(False)
loaded = load_config(Path(sys.argv[1]))
steps, rounds, memory_rows = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
config = loaded.config
scan = scan_data(config.data, loaded.base_dir)
stream = StreamInput(scan, scan.state, config.data)
raw = load_raw_data(config.data, loaded.base_dir, max_rows=memory_rows, split=False)
arrays = scan.state.transform(raw.train)

def session_for(kind):
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        step = tf.compat.v1.train.get_or_create_global_step()
        with tf.device("/device:CPU:0"):
            if kind == "streaming":
                dataset = stream.train_dataset(tf)
            else:
                dataset = (tf.data.Dataset.from_tensor_slices((arrays.features, arrays.labels))
                           .shuffle(config.data.shuffle_buffer, seed=0).repeat().batch(config.data.batch_size)
                           .prefetch(tf.data.AUTOTUNE))
            features, labels = make_iterator(tf, dataset).get_next()
        builder = get_builder(config.graph.builder, loaded.base_dir)
        params = {**config.graph.params, "label_scale": scan.state.label_scale, "mode": "train"}
        loss = GraphSpec.coerce(builder(features, labels, params), config.graph.builder).loss
        train_op, _ = make_train_op(tf, config.graph.optimizer, loss, step)
        init = [tf.compat.v1.global_variables_initializer(), tf.compat.v1.local_variables_initializer(),
                tf.compat.v1.tables_initializer()]
    session = tf.compat.v1.Session(graph=graph)
    session.run(init)
    run = session.make_callable(train_op)
    for _ in range(50):
        run()
    return session, run

import resource
def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

rates = {"streaming": [], "in-memory": []}
cpu_ms = {"streaming": [], "in-memory": []}  # process CPU per step (all threads): less sensitive to other load
sessions = {kind: session_for(kind) for kind in rates}
for r in range(rounds):
    for kind in (list(rates) if r % 2 == 0 else list(rates)[::-1]):
        _, run = sessions[kind]
        cpu_started, started = cpu_seconds(), time.perf_counter()
        for _ in range(steps):
            run()
        rates[kind].append(steps / (time.perf_counter() - started))
        cpu_ms[kind].append(1e3 * (cpu_seconds() - cpu_started) / steps)
paired = [s / m for s, m in zip(rates["streaming"], rates["in-memory"])]
print(json.dumps({k: statistics.median(v) for k, v in rates.items()} | {
    "raw": rates, "memory_rows": arrays.num_rows, "paired": statistics.median(paired),
    "cpu_ms": {k: statistics.median(v) for k, v in cpu_ms.items()}}))
"""


def config_text(train: str, steps: int) -> str:
    """The DNN config of the benchmark: the main job's model, batch 256, no evaluation, ``stop_at_step``."""
    return f"""name: data-bench
graph:
  builder: dnn_regressor
  params: {{hidden_units: [64, 32], activation: relu}}
  optimizer: {{name: adam, learning_rate: 0.003}}
data:
  train: {train}
  label: median_house_value
  missing_by_column: {{total_bedrooms: median}}
  label_scale: 100000
  batch_size: 256
  epochs: null
  seed: 0
device: cpu
hooks:
  - type: stop_at_step
    last_step: {steps}
  - type: summary_saver
    save_steps: 100
    tensors: [loss]
  - type: checkpoint_saver
    save_steps: 1000000
"""


def python(*args: str, timeout: float = 3600, prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run ``python -c`` in a fresh process (after ``prefix``, e.g. ``taskset -c 0``); parse its last stdout line."""
    command = [*prefix, sys.executable, "-c", *args]
    done = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def train(config: Path, run_dir: Path) -> dict[str, Any]:
    """``hookrun train`` in a fresh process: wall, peak RSS, summary.json and artefact sizes."""
    hookrun = str(Path(sys.executable).parent / "hookrun")
    result = python(RSS_WRAPPER, hookrun, "train", str(config), "--run-dir", str(run_dir))
    if result["code"] != 0:
        raise RuntimeError(result["tail"])
    summary = json.loads((run_dir / "summary.json").read_text())
    sizes = {
        "meta": max((p.stat().st_size for p in run_dir.glob("*.meta")), default=0),
        "graph": sum(p.stat().st_size for p in run_dir.glob("graph.pbtxt")),
        "events": sum(p.stat().st_size for p in run_dir.rglob("events.out.tfevents*")),
    }
    first_step = result["wall"] - summary["loop_seconds"] - summary["end_seconds"]
    return {**result, **summary, **sizes, "first_step": first_step}


def mb(value: float) -> str:
    """Bytes as MB (10^6)."""
    return f"{value / 1e6:,.1f} MB"


def kb(value: float) -> str:
    """Bytes as KB (10^3)."""
    return f"{value / 1e3:,.0f} KB"


def report(facts: dict[str, Any]) -> str:
    """The Markdown section."""
    rows = facts["rows"]
    size_note = "the full size" if rows >= 5_000_000 else "reduced: the machine was shared"
    lines = [
        MARK_BEGIN,
        "## Data: input at scale (issue 14)",
        "",
        f"Generated by `python benchmarks/data_bench.py {facts['args']}` on {facts['when']} "
        f"({facts['total']:.0f} s in all; load average {facts['load'][0]:.1f} at start, {facts['load'][1]:.1f} at end"
        " on 2 shared cores: treat the speeds as rough).",
        "",
        f"**Size used: {rows:,} rows** (the issue asks for 5,000,000; {size_note}), "
        f"California columns resampled with 5% noise (seed 0), as 8 `.csv.gz` shards ({mb(facts['csv_bytes'])}) and 8 "
        f"GZIP `.tfrecord.gz` shards ({mb(facts['tfrecord_bytes'])}). DNN [64, 32], batch 256, "
        f"`stop_at_step` {facts['steps']}, no evaluation.",
        "",
        "| measure | CSV (.csv.gz) | TFRecord (.gz) | CSV, a tenth of the rows |",
        "|---|---:|---:|---:|",
    ]
    c, t, s = facts["train_csv"], facts["train_tfrecord"], facts["train_small"]
    lines += [
        f"| statistics pass: seconds | {facts['scan_csv']['seconds']:.1f} | {facts['scan_tfrecord']['seconds']:.1f} | "
        f"{facts['scan_small']['seconds']:.1f} |",
        f"| statistics pass: rows/s | {facts['scan_csv']['rows'] / facts['scan_csv']['seconds']:,.0f} | "
        f"{facts['scan_tfrecord']['rows'] / facts['scan_tfrecord']['seconds']:,.0f} | "
        f"{facts['scan_small']['rows'] / facts['scan_small']['seconds']:,.0f} |",
        f"| peak RSS of `hookrun train` (target < 1 GB, independent of rows) | {c['maxrss_kb'] / 1e3:,.0f} MB | "
        f"{t['maxrss_kb'] / 1e3:,.0f} MB | {s['maxrss_kb'] / 1e3:,.0f} MB |",
        f"| time to the first step (s; includes the statistics pass) | {c['first_step']:.1f} | {t['first_step']:.1f} | "
        f"{s['first_step']:.1f} |",
        f"| `hookrun train` steps/s (summary.json) | {c['steps_per_sec']:.0f} | {t['steps_per_sec']:.0f} | "
        f"{s['steps_per_sec']:.0f} |",
        f"| `.meta` per checkpoint | {kb(c['meta'])} | {kb(t['meta'])} | {kb(s['meta'])} |",
        f"| `graph.pbtxt` | {kb(c['graph'])} | {kb(t['graph'])} | {kb(s['graph'])} |",
        f"| event files | {kb(c['events'])} | {kb(t['events'])} | {kb(s['events'])} |",
        "",
    ]
    for key, where in [("compare", "on both cores"), ("compare_1core", "pinned to one core (`taskset -c 0`)")]:
        if key not in facts:
            continue
        cmp_ = facts[key]
        ratio = cmp_["streaming"] / cmp_["in-memory"]
        lines += [
            f"Steps/s of the same DNN graph in one process {where}, {facts['rounds']} interleaved rounds of "
            f"{facts['compare_steps']} steps (median): streaming from the CSV shards **{cmp_['streaming']:.0f}**, "
            f"in-memory `from_tensor_slices` over {cmp_['memory_rows']:,} preprocessed rows "
            f"**{cmp_['in-memory']:.0f}**: **{ratio:.2f}x** (round-paired {cmp_['paired']:.2f}x; target >= 0.9x; "
            f"{'met' if ratio >= 0.9 else 'missed'}). Process CPU per step (all threads, median): streaming "
            f"{cmp_['cpu_ms']['streaming']:.2f} ms, in-memory {cmp_['cpu_ms']['in-memory']:.2f} ms. Rounds: "
            f"streaming {', '.join(f'{v:.0f}' for v in cmp_['raw']['streaming'])}; in-memory "
            f"{', '.join(f'{v:.0f}' for v in cmp_['raw']['in-memory'])}.",
            "",
        ]
    lines += [
        "Before issue 14 (the issue's report, 400,000 rows): 2.4 GB peak RSS, 118 MB per `.meta`, a 457 MB "
        "`graph.pbtxt`, a 474 MB event file.",
        MARK_END,
    ]
    return "\n".join(lines) + "\n"


def write_results(section: str) -> None:
    """Replace (or append) the data section of RESULTS.md."""
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# hookrun benchmarks\n"
    pattern = re.compile(re.escape(MARK_BEGIN) + r".*?" + re.escape(MARK_END) + r"\n?", re.S)
    text = pattern.sub("", text).rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Generate, measure, report."""
    parser = argparse.ArgumentParser(description="hookrun data benchmark (issue 14)")
    parser.add_argument("--rows", type=int, default=5_000_000, help="rows generated (default 5,000,000)")
    parser.add_argument("--steps", type=int, default=2000, help="stop_at_step of each training run")
    parser.add_argument("--compare-steps", type=int, default=1000, help="steps per round of the streaming comparison")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the streaming comparison")
    parser.add_argument("--quick", action="store_true", help="100,000 rows, 300 steps, 1 round of 200")
    parser.add_argument("--keep", type=Path, help="generate into (and keep) this directory; reused next time for "
                        "the same --rows")
    parser.add_argument("--no-write", action="store_true", help="print the section, leave RESULTS.md alone")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.steps, args.compare_steps, args.rounds = 100_000, 300, 200, 1
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    work = args.keep or Path(tempfile.mkdtemp(prefix="hookrun-data-bench-"))
    try:
        made = work / "generated.json"  # a --keep directory generated before for the same --rows is reused
        small = work / "small"
        previous = json.loads(made.read_text()) if made.exists() else None
        if previous is not None and previous["facts"]["rows"] == args.rows:
            log(f"reusing the {args.rows:,} rows generated in {work}")
            facts: dict[str, Any] = previous["facts"]
            facts_small = previous["small"]
        else:
            log(f"generating {args.rows:,} rows into {work}")
            facts = generate(work, args.rows)
            (small / "csv").mkdir(parents=True, exist_ok=True)
            facts_small = generate(small, max(args.rows // 10, 1000))
            log("writing TFRecord shards")
            subprocess.run([sys.executable, "-c", TFRECORD_WRITER, str(work / "csv"), str(work / "tfrecord")],
                           check=True, env=ENV)
            facts["tfrecord_bytes"] = sum(p.stat().st_size for p in (work / "tfrecord").iterdir())
            made.write_text(json.dumps({"facts": facts, "small": facts_small}), encoding="utf-8")
        for run in work.glob("run-*"):
            shutil.rmtree(run)  # hookrun train would resume a kept run directory
        configs = {}
        for name, train_spec, folder in [("csv", "csv/*.csv.gz", work), ("tfrecord", "tfrecord", work),
                                         ("small", "csv", small)]:
            path = folder / f"bench-{name}.yaml"
            path.write_text(config_text(train_spec, args.steps), encoding="utf-8")
            configs[name] = path
        for name in configs:
            log(f"statistics pass: {name}")
            facts[f"scan_{name}"] = python(SCAN, str(configs[name]))
            log(f"hookrun train: {name}")
            facts[f"train_{name}"] = train(configs[name], work / f"run-{name}")
        log("streaming vs in-memory")
        compare_args = (COMPARE, str(configs["csv"]), str(args.compare_steps), str(args.rounds), "100000")
        facts["compare"] = python(*compare_args)
        if shutil.which("taskset"):  # one core for the pipeline and the step: what a saturated machine leaves
            log("streaming vs in-memory on one core")
            facts["compare_1core"] = python(*compare_args, prefix=("taskset", "-c", "0"))
        facts.update(
            steps=args.steps, rounds=args.rounds, compare_steps=args.compare_steps, small_rows=facts_small["rows"],
            args=" ".join(argv if argv is not None else sys.argv[1:]),
            when=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            total=time.perf_counter() - started, load=(load_start, os.getloadavg()[0]),
        )
        section = report(facts)
        print(section)
        if not args.no_write:
            write_results(section)
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
