"""``make bench``: how fast hookrun trains, next to TensorFlow's and Keras's own loops. Measures, never asserts.

Usage::

    .venv/bin/python benchmarks/bench.py              # full run (R=5), writes benchmarks/RESULTS.md
    .venv/bin/python benchmarks/bench.py --quick      # smoke run: R=1, small N, one start-up run
    .venv/bin/python benchmarks/bench.py --repeats 3 --workloads linear --no-startup

Each workload runs in its own subprocess (``worker.py``: a fresh TensorFlow) that measures every loop
R times, interleaved; start-up timings are fresh processes too (``startup.py``). The report (tables,
start-up timings, the issue's targets with met/missed) goes to stdout and to ``benchmarks/RESULTS.md``.
The exit status is 0 whatever the numbers are; 1 only if a measurement could not be made.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from startup import measure_startup  # noqa: E402
from workloads import ROOT, TF_ENV, WORKLOADS  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_OUTPUT = HERE / "RESULTS.md"

LABELS = {
    "a": "(a) `Session.make_callable` loop",
    "b": "(b) `sess.run` loop",
    "c": "(c) `MonitoredTrainingSession` + TF hooks",
    "c1": "(c') (c) + `CheckpointSaverHook._set_steps_per_run(1)`",
    "d": "(d) Keras 3 `model.fit`",
    "e": "(e) hookrun, standard hook set",
    "e0": "(e0) hookrun, `stop_at_step` only",
    "e-np": "(e-np) hookrun, standard set without progress_bar and history_saver",
}

#: Loops of issue 17, per N (``session.steps_per_run``): ``e@N:hookrun``, ``f@N``, ``k@N``.
FUSED_LABELS = {
    "e": "(e@{n}) hookrun, standard hook set, `session.steps_per_run: {n}`",
    "f": "(f@{n}) the same fused loop bare: while_loop + `make_callable`, no hooks",
    "k": "(k@{n}) Keras 3 `model.fit`, `steps_per_execution={n}`",
}
#: The steps_per_run values measured by default (issue 17).
DEFAULT_STEPS_PER_RUN = "10,50,200"
#: Targets of issue 17 at N = 50.
FUSED_N = 50
FUSED_OVERHEAD_VS_A = 1.8
FUSED_OVERHEAD_VS_BARE = 0.9
FUSED_OVERHEAD_VS_KERAS = 1.0
FUSED_COMPUTE_VS_A = 1.0

#: Hand-written notes appended to the report: what each change bought, what bounds the rest.
CHANGES_FILE = Path(__file__).resolve().parent / "CHANGES.md"

#: Target thresholds from the issue.
OVERHEAD_VS_C = 3.0
OVERHEAD_VS_A = 0.6
COMPUTE_VS_A = 0.97
PROGRESS_HISTORY_COST = 0.03
CLI_SECONDS = 0.5


def log(message: str = "") -> None:
    """A progress line on stderr (stdout carries the report)."""
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- measuring


def run_worker(key: str, steps: int, warmup: int, repeats: int, loops: str, steps_per_run: str = "") -> dict[str, Any]:
    """Run ``worker.py`` for one workload in a fresh process, passing its progress lines through; return its JSON."""
    env = dict(os.environ)
    for name, value in TF_ENV.items():
        env.setdefault(name, value)
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        out, err = Path(tmp) / "result.json", Path(tmp) / "stderr.txt"
        command = [sys.executable, str(HERE / "worker.py"), "--workload", key, "--steps", str(steps)]
        command += ["--warmup", str(warmup), "--repeats", str(repeats), "--loops", loops, "--out", str(out)]
        command += ["--steps-per-run", steps_per_run]
        with err.open("w") as err_file:
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err_file, text=True)
            assert process.stdout is not None
            for line in process.stdout:
                log(line.rstrip())
            code = process.wait()
        if code != 0 or not out.exists():
            tail = "\n".join(err.read_text(errors="replace").strip().splitlines()[-15:])
            raise RuntimeError(f"worker for {key} exited {code}:\n{tail}")
        return json.loads(out.read_text())


def machine() -> dict[str, Any]:
    """CPU model, cores, memory, Python/TensorFlow/Keras versions (no TensorFlow import)."""
    cpu = platform.processor() or platform.machine()
    memory = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = int(line.split()[1]) / 1024 / 1024
                break
    except OSError:
        pass

    def version(*names: str) -> str:
        for name in names:
            try:
                return f"{importlib.metadata.version(name)} ({name})"
            except importlib.metadata.PackageNotFoundError:
                continue
        return "not installed"

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "memory_gib": memory,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "tensorflow": version("tensorflow-cpu", "tensorflow"),
        "keras": version("keras"),
        "tensorboard": version("tensorboard"),
    }


# ---------------------------------------------------------------------------------------------- reporting


def loop_keys(result: dict[str, Any]) -> list[str]:
    """The workload's loop keys in report order: a, b, c, c1, d, then each engine's e, e0, e-np."""
    keys = list(result["loops"])
    fixed = [k for k in ("a", "b", "c", "c1", "d") if k in keys]
    return fixed + [k for k in keys if k not in fixed]


def label(key: str) -> str:
    """Human label of a loop key such as ``e-np:tf`` or ``f@50``."""
    base, _, engine = key.partition(":")
    kind, _, n = base.partition("@")
    if n:
        text = FUSED_LABELS.get(kind, kind).format(n=n)
        return f"{text} [engine: {engine}]" if engine else text
    text = LABELS.get(base, base)
    return f"{text} [engine: {engine}]" if engine else text


def median_of(result: dict[str, Any] | None, key: str, field: str = "rate") -> float | None:
    """Median of ``field`` over the runs of loop ``key`` (None when missing)."""
    if result is None or key not in result["loops"]:
        return None
    values = [run[field] for run in result["loops"][key]["runs"] if run.get(field)]
    return statistics.median(values) if values else None


def paired_ratio(result: dict[str, Any] | None, x: str, y: str) -> float | None:
    """Median over the rounds of loop ``x``'s rate / loop ``y``'s rate in the same round (None when missing).

    The loops of one round run back to back in one process, so a slow spell of a shared machine
    (CPU steal) tends to hit both sides of a ratio; the ratio of the two medians mixes rounds.
    """
    if result is None or x not in result["loops"] or y not in result["loops"]:
        return None
    xs, ys = result["loops"][x]["runs"], result["loops"][y]["runs"]
    values = [a["rate"] / b["rate"] for a, b in zip(xs, ys, strict=False) if a.get("rate") and b.get("rate")]
    return statistics.median(values) if values else None


def ratio(x: float | None, y: float | None) -> float | None:
    """``x / y``, or None."""
    return x / y if x is not None and y else None


def fmt(value: float | None, spec: str = ".0f", suffix: str = "") -> str:
    """Format a number, ``-`` for None."""
    return "-" if value is None else f"{value:{spec}}{suffix}"


def throughput_table(result: dict[str, Any]) -> list[str]:
    """The workload × loop table."""
    lines = [
        "| loop | steps/s (median) | × (a) | × (c) | min–max steps/s | steady steps/s¹ | fixed s² |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    a = median_of(result, "a")
    c = median_of(result, "c")
    for key in loop_keys(result):
        runs = result["loops"][key]["runs"]
        rates = [run["rate"] for run in runs]
        rate = statistics.median(rates)
        fixed = [run["seconds"] - run["steps"] / run["steady_rate"] for run in runs if run.get("steady_rate")]
        lines.append(
            f"| {label(key)} | {rate:.0f} | {fmt(ratio(rate, a), '.2f')} | {fmt(ratio(rate, c), '.2f')} "
            f"| {min(rates):.0f}–{max(rates):.0f} | {fmt(median_of(result, key, 'steady_rate'))} "
            f"| {fmt(statistics.median(fixed) if fixed else None, '.2f')} |"
        )
    return lines


def fused_table(result: dict[str, Any]) -> list[str]:
    """Per N of ``session.steps_per_run``: hookrun, the bare fused loop and Keras ``steps_per_execution``, vs (a)."""
    ns = sorted({int(k.split(":")[0].split("@")[1]) for k in result["loops"] if "@" in k})
    if not ns:
        return []
    lines = [
        "| N | (a) steps/s | hookrun (e@N) | bare fused (f@N) | Keras spe=N (k@N) | e@N × (a) | e@N × (f@N) "
        "| e@N × (k@N) | min–max e@N | min–max f@N | min–max k@N |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    a = median_of(result, "a")

    def spread(key: str) -> str:
        if key not in result["loops"]:
            return "-"
        rates = [run["rate"] for run in result["loops"][key]["runs"]]
        return f"{min(rates):.0f}–{max(rates):.0f}"

    for n in ns:
        e, f, k = median_of(result, f"e@{n}:hookrun"), median_of(result, f"f@{n}"), median_of(result, f"k@{n}")
        lines.append(
            f"| {n} | {fmt(a)} | {fmt(e)} | {fmt(f)} | {fmt(k)} | {fmt(ratio(e, a), '.2f')} "
            f"| {fmt(ratio(e, f), '.2f')} | {fmt(ratio(e, k), '.2f')} "
            f"| {spread(f'e@{n}:hookrun')} | {spread(f'f@{n}')} | {spread(f'k@{n}')} |"
        )
    return lines


def engine_keys(results: dict[str, Any]) -> list[str]:
    """The hookrun ``e`` loop keys present (``e`` or ``e:<engine>``), in order."""
    keys: list[str] = []
    for result in results.values():
        for key in result["loops"]:
            if key.split(":")[0] == "e" and key not in keys:
                keys.append(key)
    return keys


def suffix_of(key: str) -> str:
    """``:engine`` of a loop key, or empty."""
    return key[len(key.split(":")[0]) :]


def targets(results: dict[str, Any], startup: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each target of the issue with the measured ratio (hookrun's reported rate) and, where known, the steady one."""
    rows: list[dict[str, Any]] = []
    linear, dnn = results.get("linear"), results.get("dnn")

    def add(
        name: str,
        measured: float | None,
        steady: float | None,
        threshold: float,
        at_most: bool,
        unit: str,
        paired: float | None = None,
    ):
        met = None if measured is None else (measured <= threshold if at_most else measured >= threshold)
        rows.append(
            {
                "target": name,
                "measured": measured,
                "steady": steady,
                "paired": paired,
                "met": met,
                "unit": unit,
            }
        )

    for key in engine_keys(results):
        sfx, engine = suffix_of(key), key.partition(":")[2]
        who = f"hookrun [{engine}]" if engine else "hookrun"
        e = f"e{sfx}"
        for name, result, base, threshold in (
            ("overhead-bound", linear, "c", OVERHEAD_VS_C),
            ("overhead-bound", linear, "a", OVERHEAD_VS_A),
            ("compute-bound", dnn, "a", COMPUTE_VS_A),
        ):
            steady_base = "steady_rate" if base == "c" else "rate"  # (a) is timed steady already (warm-up excluded)
            add(
                f"{name}, standard set: {who} ≥ {threshold:g}× ({base})",
                ratio(median_of(result, e), median_of(result, base)),
                ratio(median_of(result, e, "steady_rate"), median_of(result, base, steady_base)),
                threshold,
                False,
                "×",
                paired_ratio(result, e, base),
            )
        for name, result in (("overhead-bound", linear), ("compute-bound", dnn)):
            full, bare = median_of(result, f"e{sfx}"), median_of(result, f"e-np{sfx}")
            paired = paired_ratio(result, f"e-np{sfx}", f"e{sfx}")
            full_s, bare_s = median_of(result, f"e{sfx}", "steady_rate"), median_of(result, f"e-np{sfx}", "steady_rate")
            add(
                f"{name}: progress_bar + history_saver cost ≤ {PROGRESS_HISTORY_COST:.0%} ({who})",
                ratio(bare, full) - 1 if bare and full else None,
                ratio(bare_s, full_s) - 1 if bare_s and full_s else None,
                PROGRESS_HISTORY_COST,
                True,
                "%",
                paired - 1 if paired is not None else None,
            )
    n = FUSED_N
    for name, result, other, threshold in (
        ("overhead-bound", linear, "a", FUSED_OVERHEAD_VS_A),
        ("overhead-bound", linear, f"f@{n}", FUSED_OVERHEAD_VS_BARE),
        ("overhead-bound", linear, f"k@{n}", FUSED_OVERHEAD_VS_KERAS),
        ("compute-bound", dnn, "a", FUSED_COMPUTE_VS_A),
    ):
        e = f"e@{n}:hookrun"
        if result is None or e not in result["loops"] or other not in result["loops"]:
            continue
        steady_other = "rate"  # (a), bare fused and Keras are timed after their warm-up already
        add(
            f"{name}, standard set, steps_per_run {n}: hookrun ≥ {threshold:g}× ({other})",
            ratio(median_of(result, e), median_of(result, other)),
            ratio(median_of(result, e, "steady_rate"), median_of(result, other, steady_other)),
            threshold,
            False,
            "×",
            paired_ratio(result, e, other),
        )
    if startup is not None:
        for key, text in (("help", "--help"), ("list_hooks", "list-hooks"), ("validate", "validate")):
            add(f"`hookrun {text}` median < {CLI_SECONDS:g} s", startup[key]["median"], None, CLI_SECONDS, True, "s")
    return rows


def fmt_target(value: float | None, unit: str) -> str:
    """A target value in its unit."""
    if value is None:
        return "-"
    if unit == "%":
        return f"{value:+.1%}"
    if unit == "s":
        return f"{value:.3f} s"
    return f"{value:.2f}×"


def report(meta: dict[str, Any], results: dict[str, Any], startup: dict[str, Any] | None, errors: list[str]) -> str:
    """The whole report as Markdown."""
    m = meta["machine"]
    out = [
        "# hookrun benchmarks",
        "",
        f"Generated by `{meta['command']}` on {meta['date']} ({meta['mode']}; {meta['seconds']:.0f} s in all). "
        "Measures, never asserts: numbers are only meaningful on a quiet machine."
        + (
            " **Quick smoke run: N is too small for the rates to mean anything; use a full run for numbers.**"
            if meta["quick"]
            else ""
        ),
        "",
        "## Machine",
        "",
        f"- CPU: {m['cpu']}, {m['cores']} logical cores ({m['usable_cores']} usable)",
        f"- Memory: {fmt(m['memory_gib'], '.1f')} GiB; {m['os']}",
        f"- Python {m['python']}, TensorFlow {m['tensorflow']}, Keras {m['keras']}, TensorBoard {m['tensorboard']}",
        f"- Load average (1 min) at start {meta['load_start']:.2f}, at end {meta['load_end']:.2f}"
        + (
            " — **the machine was busy; treat the numbers as rough**"
            if max(meta["load_start"], meta["load_end"]) > 0.5
            else ""
        ),
        "- Environment of every subprocess: "
        + ", ".join(f"{k}={v}" for k, v in TF_ENV.items())
        + " (as `hookrun train` sets it)",
        "",
        "## Method",
        "",
        "- One fresh process per workload runs every loop R times, interleaved (the order rotates each round); "
        "the table shows the median steps/s, its ratio to (a) and to (c), and the range.",
        "- Same data and graph everywhere: hookrun's own data loading and preprocessing, and (a)–(c) run the graph "
        "`hookrun.runner.graph.build.build_graph` builds (the one `hookrun train` runs); (d) is the same model in "
        "Keras 3 on the same `tf.data` pipeline (shuffle → repeat → batch → prefetch). Session creation is never "
        "timed.",
        f"- (a), (b): N steps after {meta['warmup']} untimed warm-up steps, fetching `[train_op, loss, global_step]`. "
        f"(d): `fit` of W+N batches, timed from the end of batch {meta['warmup']} (tracing excluded) "
        "to `on_train_end`.",
        "- (c), (c') and every (e) are timed alike, as hookrun reports `steps_per_sec` (`summary.json`): N steps over "
        "the step loop, session ready → the last step's end, so the first steps are included; every hook's `end()` "
        "and the session's close (where TensorFlow sometimes stalls up to ~1 s shutting down the tf.data threads) "
        "come after and are not (hookrun reports them as `end_seconds`). "
        "¹ The *steady* column is the same run's rate from its `step_counter`/`StepCounterHook` `global_step/sec` "
        "summaries (every 100 steps, first step and end excluded): comparable to (a)'s warm-up-excluded rate.",
        "² *Fixed*: the timed seconds minus N / steady rate: what the first steps cost on top of N steady steps "
        "(median over the repeats).",
        "- (c) hooks: StopAtStepHook, NanTensorHook, CheckpointSaverHook(save_steps=1000), "
        "LoggingTensorHook({loss, global_step}, every_n_iter=100), SummarySaverHook(save_steps=100, scalar loss), "
        "StepCounterHook(every_n_steps=100); the session's own checkpoint/summary/step-counter hooks off. Without "
        "`_set_steps_per_run(1)` (as TF users get it) CheckpointSaverHook reads `global_step` in an extra "
        "`session.run` after every step; (c') sets it.",
        "- (e): `hookrun.runner.trainer.train(load_config(path), run_dir=tmp, console=Console(file=io.StringIO()))` "
        "with hooks stop_at_step, nan_tensor, checkpoint_saver(1000), logging_tensor(every_n_iter=100), "
        "summary_saver(100), step_counter(100), history_saver(100), progress_bar; (e-np) without the last two; "
        "(e0) stop_at_step only.",
        "- (d) callbacks: TerminateOnNaN, TensorBoard(update_freq=100), ModelCheckpoint(save_freq=1000, "
        "save_weights_only=True)"
        + (
            "; the `tensorboard` package is not installed, so the TensorBoard callback's `scalar` is TF core's "
            "`tf.summary.write` (same event-file write, no plugin metadata)."
            if m["tensorboard"] == "not installed"
            else "."
        ),
        "- Progress display is off on both sides: Keras `verbose=0`; hookrun's `progress_bar` draws on a "
        "non-terminal console, where it prints a plain line at most every 10 s.",
        "- (e@N), (f@N), (k@N) (issue 17): hookrun's standard set with `session.steps_per_run: N` (timed as (e)); "
        "the same fused graph (`build_graph` with `steps_per_run: N`) run bare with `make_callable`, no hooks, "
        "after W untimed warm-up steps; (d) compiled with `steps_per_execution=N`.",
    ]
    for key, result in results.items():
        workload = WORKLOADS[key]
        out += [
            "",
            f"## {key}: {workload.kind}",
            "",
            f"{workload.title}. N = {result['steps']} steps per repeat, warm-up W = {result['warmup']}, "
            f"R = {result['repeats']} ({result['seconds']:.0f} s).",
            "",
            *throughput_table(result),
        ]
        fused = fused_table(result)
        if fused:
            out += [
                "",
                f"### {key}: several steps per session call (`session.steps_per_run`, issue 17)",
                "",
                "hookrun's standard set with `session.steps_per_run: N`, the same fused graph run bare "
                "(`make_callable` on its train op, no hooks; W warm-up steps untimed), and Keras `fit` with "
                "`steps_per_execution=N` (W and N rounded up to multiples of N). Medians over the R rounds.",
                "",
                *fused,
            ]
    if startup is not None:
        out += [
            "",
            f"## Start-up (median of {startup['runs']} process runs, seconds)",
            "",
            "| what | median | min–max |",
            "|---|---:|---:|",
        ]
        for key, text in (
            ("help", "`hookrun --help`"),
            ("list_hooks", "`hookrun list-hooks`"),
            ("validate", "`hookrun validate configs/mtcars_linear.yaml`"),
        ):
            s = startup[key]
            out.append(f"| {text} (process wall time) | {s['median']:.3f} | {s['min']:.3f}–{s['max']:.3f} |")
        for key, text in (
            ("hookrun_first_step", "`hookrun train` (linear, standard set + probe hook)"),
            ("keras_first_step", "Keras 3 script (linear, same callbacks + probe callback)"),
        ):
            for part, what in (("start", "first step starts"), ("end", "first step done"), ("exit", "process exit")):
                s = startup[key][part]
                out.append(f"| {text}: launch → {what} | {s['median']:.2f} | {s['min']:.2f}–{s['max']:.2f} |")
        out += [
            "",
            '"First step starts" is the probe\'s first `before_run` (hookrun) / `on_train_batch_begin` (Keras); '
            '"done" its first `after_run` / `on_train_batch_end` (for Keras this includes tracing the train '
            "function). Both runs train 100 steps of the linear workload.",
        ]
    rows = targets(results, startup)
    if rows:
        out += [
            "",
            "## Targets (from the issue)",
            "",
            "| target | measured | met? | steady-rate ratio¹ | round-paired ratio³ |",
            "|---|---:|:---:|---:|---:|",
        ]
        for row in rows:
            met = "n/a" if row["met"] is None else ("met" if row["met"] else "**missed**")
            out.append(
                f"| {row['target']} | {fmt_target(row['measured'], row['unit'])} | {met} "
                f"| {fmt_target(row['steady'], row['unit'])} | {fmt_target(row['paired'], row['unit'])} |"
            )
        out += [
            "",
            '"Measured" uses hookrun\'s reported steps/s (the step loop: session ready → last step); '
            "the cost of progress_bar + "
            "history_saver is (e-np)/(e) − 1, the extra time per step. The steady-rate ratio uses the "
            "step_counter rates (for (a), its warm-up-excluded rate): the per-step cost without the first "
            "steps' fixed cost. ³ The median over the rounds of the two loops' ratio within one round (they "
            "run back to back, so a slow spell of a shared machine tends to hit both); \"met?\" is judged on "
            "\"measured\" alone.",
        ]
    if errors:
        out += ["", "## Errors", "", *[f"- {error}" for error in errors]]
    if CHANGES_FILE.exists():  # hand-written: what each engine/hook change bought, and what bounds the rest
        out += ["", CHANGES_FILE.read_text(encoding="utf-8").strip()]
    return "\n".join(out) + "\n"


#: A section another script writes into RESULTS.md: ``<!-- name -->`` ... ``<!-- /name -->`` (``gpu_bench.py``'s
#: ``bench-gpu``, ``input_fn_bench.py``'s ``input-fn-bench``, ``wide_setup.py``'s ``wide-setup``).
_SECTION = re.compile(r"<!-- ([a-z0-9-]+) -->\n.*?<!-- /\1 -->", re.S)


def _kept_sections(path: Path) -> list[str]:
    """The marked sections of ``path`` that other benchmark scripts wrote, in file order (kept on a rewrite)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return [match.group(0) for match in _SECTION.finditer(text)]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and write the report."""
    parser = argparse.ArgumentParser(description="hookrun benchmarks (make bench); see benchmarks/README.md")
    parser.add_argument("--repeats", type=int, default=5, help="R: repeats of each loop (default 5)")
    parser.add_argument("--quick", action="store_true", help="smoke run: R=1, small N, one start-up run")
    parser.add_argument("--workloads", default="linear,dnn", help="comma-separated: linear, dnn (default both)")
    parser.add_argument(
        "--loops", default="all", help="comma-separated loop keys a,b,c,c1,d,e,e0,e-np,f,k (default all)"
    )
    parser.add_argument("--startup-runs", type=int, default=7, help="process runs per start-up timing (default 7)")
    parser.add_argument("--no-startup", action="store_true", help="skip the start-up timings")
    parser.add_argument(
        "--output", type=Path, default=DEFAULT_OUTPUT, help="report file (default benchmarks/RESULTS.md)"
    )
    parser.add_argument("--json", type=Path, help="also write every raw measurement as JSON here")
    parser.add_argument(
        "--steps", type=int, help="steps per timed repeat of every loop (default: each workload's own, e.g. 3000)"
    )
    parser.add_argument(
        "--steps-per-run",
        default=DEFAULT_STEPS_PER_RUN,
        help=f"N values of the e@N/f@N/k@N loops, comma-separated (default {DEFAULT_STEPS_PER_RUN}; '' for none)",
    )
    args = parser.parse_args(argv)

    repeats = 1 if args.quick else args.repeats
    startup_runs = 1 if args.quick else args.startup_runs
    warmup = 20 if args.quick else 50
    keys = [k.strip() for k in args.workloads.split(",") if k.strip()]
    unknown = [k for k in keys if k not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")

    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    meta: dict[str, Any] = {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "command": "python benchmarks/bench.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "mode": "quick smoke run" if args.quick else f"R = {repeats}",
        "quick": args.quick,
        "machine": machine(),
        "warmup": warmup,
    }
    results: dict[str, Any] = {}
    errors: list[str] = []
    for key in keys:
        workload = WORKLOADS[key]
        steps = args.steps or (workload.quick_steps if args.quick else workload.steps)
        log(f"workload {key}: {workload.title}; N={steps}, W={warmup}, R={repeats} (one fresh process)")
        try:
            results[key] = run_worker(key, steps, warmup, repeats, args.loops, args.steps_per_run)
        except RuntimeError as err:
            errors.append(str(err).splitlines()[0])
            log(str(err))
    startup = None
    if not args.no_startup:
        log(f"start-up timings: {startup_runs} process run(s) each")
        try:
            startup = measure_startup(startup_runs, log)
        except RuntimeError as err:
            errors.append(str(err))
            log(str(err))
    meta["load_start"], meta["load_end"] = load_start, os.getloadavg()[0]
    meta["seconds"] = time.perf_counter() - started
    text = report(meta, results, startup, errors)
    kept = _kept_sections(args.output) if args.output.resolve() == DEFAULT_OUTPUT.resolve() else []
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text.rstrip("\n") + "".join(f"\n\n{section}" for section in kept) + "\n", encoding="utf-8")
    if args.json is not None:
        args.json.write_text(json.dumps({"meta": meta, "results": results, "startup": startup}, indent=2))
    print(text, end="")
    log(f"report written to {args.output} ({meta['seconds']:.0f} s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
