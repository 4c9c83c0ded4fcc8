"""Set-up time of wide data (issue 24): a 785-column CSV and a 785-feature TFRecord. Measures, never asserts.

Usage::

    .venv/bin/python benchmarks/wide_setup.py --label after            # 10,000 rows (MNIST-sized rows)
    .venv/bin/python benchmarks/wide_setup.py --rows 2000 --label quick
    .venv/bin/python benchmarks/wide_setup.py --label after --compare /tmp/old --compare-label "before abc123"

(``--compare DIR``: ``DIR/hookrun`` is another checkout, e.g. ``git archive OLD | tar -x -C DIR/hookrun``; its
runs alternate with the current code's in every round, so both see the same machine load.)

The data are generated reproducibly (``numpy.random.default_rng(0)``): ``label`` (a class 0-9) and 784
pixel columns ``p000`` .. ``p783`` (integers 0-255), as one CSV file and as one TFRecord file of
``tf.train.Example`` with one float feature per pixel (the one-value-per-column layout the issue timed).

Each file is trained on by ``hookrun train`` in a fresh process (``linear_classifier``, batch 128,
``stop_at_step: 20``, ``validation_split: 0.1`` with an ``evaluation`` hook at the end). *Set-up* is what
the user waits before the first step: the process's wall time minus the step loop (``loop_seconds``) and
what comes after it (``end_seconds``), both from ``summary.json``; it includes Python's and TensorFlow's
import (2-4 s), the statistics pass and building the graph (the ``tf.data`` map functions). The median of
``--repeats`` runs is written.

The row is added to the section between ``<!-- wide-setup -->`` markers in ``benchmarks/RESULTS.md``
(rows with the same ``--label`` are replaced), so a "before" row (run on the old code) stays beside an
"after" row.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "RESULTS.md"
MARK_BEGIN, MARK_END = "<!-- wide-setup -->", "<!-- /wide-setup -->"
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0", "COLUMNS": "200"}
PIXELS = 784


def log(message: str) -> None:
    """Progress on stderr."""
    print(f"[wide-setup {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def generate(out: Path, rows: int) -> tuple[Path, Path]:
    """Write ``rows`` rows as ``wide.csv`` and ``wide.tfrecord`` under ``out``; return both paths."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, rows)
    pixels = rng.integers(0, 256, (rows, PIXELS))
    names = [f"p{i:03d}" for i in range(PIXELS)]
    csv_path = out / "wide.csv"
    with csv_path.open("w", encoding="utf-8") as handle:
        handle.write(",".join(["label", *names]) + "\n")
        for label, row in zip(labels, pixels, strict=True):
            handle.write(f"{label}," + ",".join(map(str, row.tolist())) + "\n")
    code = f"""
import numpy as np, tensorflow as tf
rng = np.random.default_rng(0)
labels = rng.integers(0, 10, {rows})
pixels = rng.integers(0, 256, ({rows}, {PIXELS}))
names = [f"p{{i:03d}}" for i in range({PIXELS})]
with tf.io.TFRecordWriter({str(out / "wide.tfrecord")!r}) as writer:
    for label, row in zip(labels, pixels):
        feature = {{"label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)]))}}
        for name, value in zip(names, row.tolist()):
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=[float(value)]))
        writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
"""
    subprocess.run([sys.executable, "-c", code], check=True, env=ENV)
    return csv_path, out / "wide.tfrecord"


def config_text(data: Path) -> str:
    """The run's config: a linear classifier on every pixel column, the label as classes."""
    return f"""name: wide
graph:
  builder: linear_classifier
  params: {{n_classes: 10}}
  optimizer: {{name: adam, learning_rate: 0.001}}
data:
  train: {data}
  label: label
  validation_split: 0.1
  batch_size: 128
  epochs: null
  seed: 0
device: cpu
hooks:
  - type: stop_at_step
    num_steps: 20
  - type: evaluation
    every_n_steps: 20
"""


def time_setup(data: Path, work: Path, pythonpath: str | None = None) -> dict[str, float]:
    """Run ``hookrun train`` on ``data`` once in a fresh process; return wall, set-up and loop seconds.

    ``pythonpath``: a directory holding another checkout as ``hookrun/`` (e.g. ``git archive`` of the old
    commit), put first on ``PYTHONPATH`` so the process runs that code.
    """
    config = work / f"{data.stem}_{data.suffix[1:]}.yaml"
    config.write_text(config_text(data), encoding="utf-8")
    run_dir = work / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    hookrun = Path(sys.executable).with_name("hookrun")
    started = time.perf_counter()
    env = dict(ENV, PYTHONPATH=pythonpath) if pythonpath else ENV
    done = subprocess.run(
        [str(hookrun), "train", str(config), "--run-dir", str(run_dir)], env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"hookrun train failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    loop, end = float(summary["loop_seconds"]), float(summary.get("end_seconds", 0.0))
    return {"wall": wall, "setup": wall - loop - end, "loop": loop}


def write_row(label: str, rows: int, csv_setup: float, tfrecord_setup: float, repeats: int) -> None:
    """Add (or replace) the row of ``label`` in the wide-setup section of ``RESULTS.md``."""
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    load = os.getloadavg()[0]
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    row = (
        f"| {label} | {rows:,} | {csv_setup:.1f} | {tfrecord_setup:.1f} | {stamp}, load {load:.1f}, median of "
        f"{repeats} |"
    )
    header = (
        f"{MARK_BEGIN}\n## wide data: set-up time (issue 24)\n\n"
        "`python benchmarks/wide_setup.py --label L`: `hookrun train` in a fresh process on a 785-column CSV "
        "(label + 784 pixels) and on the same rows as TFRecord (785 one-value features); linear_classifier, "
        "batch 128, 20 steps, validation_split 0.1 with one evaluation. Set-up = wall - loop_seconds - "
        "end_seconds (summary.json): imports, statistics pass, graph build, session creation. Rows written by one "
        "`--compare` run alternate the two codes in every round (same machine load); the machine is shared, so "
        "compare rows of one run only.\n\n"
        "| code | rows | CSV set-up s | TFRecord set-up s | when |\n|---|---:|---:|---:|---|\n"
    )
    if MARK_BEGIN in text:
        before, rest = text.split(MARK_BEGIN, 1)
        section, after = rest.split(MARK_END, 1)
        kept = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| code")]
        kept = [line for line in kept if not line.startswith(f"| {label} |")]
        text = before + header + "".join(f"{line}\n" for line in [*kept, row]) + MARK_END + after
    else:
        text = text.rstrip("\n") + "\n\n" + header + row + "\n" + MARK_END + "\n"
    RESULTS.write_text(text, encoding="utf-8")


def main() -> None:
    """Generate the data, time both formats, write the row."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--label", default="current", help="the row's name (e.g. before, after)")
    parser.add_argument(
        "--compare", metavar="DIR", help="also time the code under DIR/hookrun (another checkout), interleaved "
        "with the current code in every round, as the row `--compare-label`",
    )
    parser.add_argument("--compare-label", default="before")
    args = parser.parse_args()
    for label in (args.label, args.compare_label):
        if not re.fullmatch(r"[\w .:-]+", label):
            raise SystemExit("--label, --compare-label: letters, digits, spaces and .:- only")
    versions = [(args.label, None)] + ([(args.compare_label, args.compare)] if args.compare else [])
    with tempfile.TemporaryDirectory(prefix="wide-setup-") as tmp:
        work = Path(tmp)
        log(f"generating {args.rows:,} rows of 785 columns")
        csv_path, tfrecord_path = generate(work, args.rows)
        found = {(label, name): [] for label, _ in versions for name in ("csv", "tfrecord")}
        for round_ in range(args.repeats):
            order = versions if round_ % 2 == 0 else versions[::-1]  # alternate who goes first
            for name, path in (("csv", csv_path), ("tfrecord", tfrecord_path)):
                for label, pythonpath in order:
                    result = time_setup(path, work, pythonpath)
                    found[(label, name)].append(result["setup"])
                    log(f"round {round_ + 1} {label} {name}: set-up {result['setup']:.1f} s, loop "
                        f"{result['loop']:.1f} s")
    for label, _ in versions[::-1]:
        csv_setup, tfrecord_setup = (statistics.median(found[(label, name)]) for name in ("csv", "tfrecord"))
        write_row(label, args.rows, csv_setup, tfrecord_setup, args.repeats)
        print(f"{label}: CSV set-up {csv_setup:.1f} s, TFRecord set-up {tfrecord_setup:.1f} s")


if __name__ == "__main__":
    main()
