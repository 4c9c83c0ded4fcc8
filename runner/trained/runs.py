"""``hookrun runs [DIR]``: compare the runs under a directory, one row each (issue 15). No TensorFlow.

Everything comes from each run directory's own files (see docs/run-directory.md):

- ``summary.json``: ``status`` (``running`` / ``finished`` / ``interrupted`` / ``failed``), ``started``,
  ``wall_seconds``, ``final_global_step``, ``overrides`` (the ``--set`` given), ``validation``
  (the last evaluation), ``error``;
- ``history.csv`` (or the ``history_saver``'s ``filename``): the ``val_*`` columns over the steps;
- ``eval-<step>.json`` of ``hookrun evaluate`` on the run's own validation rows;
- the run directory's lock: a ``running`` run whose process is gone was killed (``failed``); a live
  lock means ``running`` whatever the summary says.

A subdirectory that is no run directory (no ``config.yaml``, ``summary.json`` or checkpoint) is
looked into once (a sweep's runs sit one level down); one that holds no run either is skipped
with a note. A damaged file is a note on its row, never an exception.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hookrun.common.errors import SetupError
from hookrun.common.files import loads_json
from hookrun.runner.run_dir.status import SUMMARY_FILE, read_summary

#: Sort keys besides metric names.
PLAIN_SORT_KEYS = ("name", "started", "steps", "wall_seconds", "status")
#: Words in a metric's name that make higher values better (without an ``early_stopping`` that says).
HIGHER_IS_BETTER = ("accuracy", "auc", "precision", "recall", "r2", "f1")
#: Largest file read for the table (bytes); bigger ones are a note, not read.
MAX_FILE_BYTES = 64 << 20

_EVAL_FILE = re.compile(r"^eval-(\d+)\.json$")
_INDEX = re.compile(r"-(\d+)\.index$")


@dataclass
class MetricValues:
    """One ``val_*`` value of a run over its evaluations.

    Attributes:
        final: the value at the last evaluated step (may be ``inf`` or ``-inf``: a run that diverged).
        best: the best finite value (lowest, or highest for ``mode: max`` / accuracy-like names), or None
            when every value was ``inf`` or ``-inf`` (an overflow is no best value).
        best_step: the global step of ``best``, or None.
        mode: ``min`` or ``max``: which is better.
    """

    final: float
    best: float | None
    best_step: int | None
    mode: str


@dataclass
class RunRow:
    """One run directory, as ``hookrun runs`` shows it.

    Attributes:
        name: its path relative to the listed directory (``lr-0.01`` or ``sweep/lr-0.01``).
        path: its absolute path.
        status: ``running``, ``finished``, ``interrupted``, ``failed`` or ``unreadable`` (no usable summary).
        started: when the run first started (UTC, ISO 8601), or None.
        steps: the global step reached, or None.
        wall_seconds: wall time of all its training sessions (seconds), or None.
        metrics: ``val_*`` name -> its final and best value.
        overrides: the ``--set`` overrides of its last session.
        distinguishing: those overrides that not every listed run shares.
        error: why it failed (``summary.json``'s ``error``), or None.
        notes: damaged or missing files, skipped lines.
        monitored: the values its config's hooks monitor (``early_stopping``'s ``monitor``, ``val_rmse``).
    """

    name: str
    path: str
    status: str
    started: str | None = None
    steps: int | None = None
    wall_seconds: float | None = None
    metrics: dict[str, MetricValues] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    distinguishing: list[str] = field(default_factory=list)
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    monitored: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The row as JSON data (what ``hookrun runs --json`` prints per run)."""
        return asdict(self)


@dataclass
class RunsTable:
    """The runs under one directory.

    Attributes:
        root: the directory listed (absolute).
        runs: one row per run directory, in the order asked for.
        metrics: every ``val_*`` name of any run, ``val_loss`` first, then by name.
        skipped: subdirectories that are no run directory, with why.
        sort: the sort key used, or None (by start time).
    """

    @property
    def monitored(self) -> list[str]:
        """The ``val_*`` metrics of the table that a run's hooks monitor (``early_stopping``), in table order."""
        watched = {name for row in self.runs for name in row.monitored}
        return [name for name in self.metrics if name in watched]

    root: str
    runs: list[RunRow]
    metrics: list[str]
    skipped: list[str] = field(default_factory=list)
    sort: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The table as JSON data."""
        return {
            "root": self.root, "sort": self.sort, "metrics": self.metrics,
            "runs": [r.to_json() for r in self.runs], "skipped": self.skipped,
        }


def _read_text(path: Path) -> str:
    """A small regular file's text; OSError (or ValueError when too big or not UTF-8) otherwise."""
    from hookrun.common.files import read_regular_bytes

    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"bigger than {MAX_FILE_BYTES >> 20} MiB")
    return read_regular_bytes(path).decode("utf-8")


def is_run_dir(path: Path) -> bool:
    """``path`` looks like a run directory: it holds ``config.yaml``, ``summary.json`` or a checkpoint index."""
    try:
        return (
            (path / "config.yaml").is_file()
            or (path / SUMMARY_FILE).is_file()
            or any(_INDEX.search(p.name) for p in path.glob("*.index"))
        )
    except OSError:
        return False


def lock_holder(run_dir: Path) -> int | None:
    """The PID of a live process training in ``run_dir`` (holding its lock), or None.

    Read from ``/proc/locks`` (the ``flock`` on the directory, released by the kernel however the
    holder died); where that cannot be read, from ``.hookrun.lock``'s PID if that process is alive.
    Never takes the lock itself, so a trainer starting meanwhile is never refused.
    """
    from hookrun.runner.run_dir.directory import LOCK_FILE, _flock_holder

    try:
        fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.access("/proc/locks", os.R_OK):
            holder = _flock_holder(fd)
            return int(holder) if holder is not None and holder.isdigit() else None
    finally:
        os.close(fd)
    try:
        text = _read_text(run_dir / LOCK_FILE).strip()
        pid = int(text)
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def _config_facts(run_dir: Path, notes: list[str]) -> tuple[str, dict[str, str]]:
    """From ``config.yaml``: the history file's name, and which way each monitored value is better."""
    import yaml

    path = run_dir / "config.yaml"
    history, modes = "history.csv", {}
    if not path.exists():
        return history, modes
    try:
        data = yaml.safe_load(_read_text(path))
        hooks = data.get("hooks") if isinstance(data, dict) else None
    except (OSError, ValueError, yaml.YAMLError) as err:
        notes.append(f"config.yaml unreadable ({_first_line(err)})")
        return history, modes
    except RecursionError:  # PyYAML composes nested collections recursively
        notes.append("config.yaml unreadable (nested too deeply)")
        return history, modes
    # By the hooks' keys, not their types (the runner knows no hook by name): a `.csv` `filename` is a
    # history file, a `monitor` with a `mode` says which way that value is better.
    for hook in hooks if isinstance(hooks, list) else []:
        if not isinstance(hook, dict):
            continue
        name = hook.get("filename")
        if history == "history.csv" and isinstance(name, str) and name.endswith(".csv") and "/" not in name:
            history = name
        if hook.get("mode") in ("min", "max") and isinstance(hook.get("monitor"), str):
            modes[hook["monitor"]] = hook["mode"]
    return history, modes


def _real(value: object) -> float | None:
    """A JSON number as a float (an integer too large for one is ``inf`` or ``-inf``); None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # 10**400 in a hand-edited file
        return math.inf if value > 0 else -math.inf


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:200]


def _history_values(path: Path, notes: list[str]) -> list[tuple[int, str, float]]:
    """``(step, val_* name, value)`` of every filled ``val_*`` cell of a history CSV (damaged lines skipped)."""
    try:
        text = _read_text(path)
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as err:
        notes.append(f"{path.name} unreadable ({_first_line(err)})")
        return []
    found: list[tuple[int, str, float]] = []
    bad = 0
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header or header[0] != "step":
        if header is not None:
            notes.append(f"{path.name}: not a history header; skipped")
        return []
    columns = [(i, name) for i, name in enumerate(header) if name.startswith("val_")]
    for cells in reader:
        try:
            if len(cells) != len(header):
                raise ValueError
            step = int(cells[0])
            found.extend((step, name, float(cells[i])) for i, name in columns if cells[i] != "")
        except ValueError:
            bad += 1
    if bad:
        notes.append(f"{path.name}: {bad} damaged line(s) skipped")
    return found


def _eval_values(run_dir: Path, notes: list[str]) -> list[tuple[int, str, float]]:
    """``(step, name, value)`` from ``eval-<step>.json`` files of the run's own validation rows."""
    found: list[tuple[int, str, float]] = []
    for path in sorted(run_dir.glob("eval-*.json")):
        match = _EVAL_FILE.match(path.name)
        if match is None:
            continue
        try:
            data = loads_json(_read_text(path))
            if data.get("data") != ["validation"]:
                continue  # other rows (--data test.csv) are no validation values
            found.extend(
                (int(match.group(1)), str(k), number)
                for k, v in data["metrics"].items()
                if str(k).startswith("val_") and (number := _real(v)) is not None
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            notes.append(f"{path.name} unreadable ({_first_line(err)})")
    return found


def _mode(name: str, modes: dict[str, str]) -> str:
    if name in modes:
        return modes[name]
    return "max" if any(word in name for word in HIGHER_IS_BETTER) else "min"


def _metrics(values: list[tuple[int, str, float]], modes: dict[str, str]) -> dict[str, MetricValues]:
    """Each ``val_*`` name's final value and its best finite one (NaN is skipped; ``inf`` is never best)."""
    series: dict[str, dict[int, float]] = {}
    for step, name, value in values:
        if value == value:  # NaN is no value to compare
            series.setdefault(name, {})[step] = value
    result = {}
    for name, by_step in series.items():
        mode = _mode(name, modes)
        last = max(by_step)
        pick = min if mode == "min" else max
        finite = [s for s in sorted(by_step) if math.isfinite(by_step[s])]  # -inf val_loss: an overflow, not best
        best_step = pick(finite, key=lambda s: by_step[s]) if finite else None
        result[name] = MetricValues(
            final=by_step[last], best=None if best_step is None else by_step[best_step], best_step=best_step,
            mode=mode,
        )
    return result


def _iso_mtime(path: Path) -> str | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except OSError:
        return None


def _checkpoint_step(run_dir: Path) -> int | None:
    steps = [int(m.group(1)) for p in run_dir.glob("*.index") if (m := _INDEX.search(p.name))]
    return max(steps) if steps else None


def read_run(run_dir: Path, name: str | None = None) -> RunRow:
    """One run directory's row: status, times, steps, ``val_*`` values, overrides (reads only, no TensorFlow).

    Args:
        run_dir: the run directory.
        name: the name to show (default: the directory's name).

    Returns:
        The row; damaged files are named in its ``notes`` (``status: unreadable`` when even
        ``summary.json`` is unusable and no process holds the run).
    """
    notes: list[str] = []
    row = RunRow(name=name or run_dir.name, path=str(run_dir.resolve()), status="unreadable")
    summary_path = run_dir / SUMMARY_FILE
    summary = read_summary(summary_path)
    if summary is None:
        notes.append("summary.json damaged" if summary_path.exists() else "no summary.json")
        summary = {}
    holder = lock_holder(run_dir)
    recorded = summary.get("status")
    if holder is not None:
        row.status = "running"
    elif recorded == "running":
        row.status = "failed"
        row.error = "stopped without writing its summary (killed?)"
    elif recorded in ("finished", "interrupted", "failed"):
        row.status = recorded
    elif recorded is not None:  # a status no hookrun writes (a hand edit): the row is not to be trusted
        notes.append(f"summary.json: unknown status {recorded!r}")
    elif summary:  # written by a hookrun before summary.json had a status: only at the end of a run
        row.status = "interrupted" if summary.get("signal") else "finished"
    started = summary.get("started")
    row.started = started if isinstance(started, str) else _iso_mtime(run_dir / "config.yaml")
    step = summary.get("final_global_step") if row.status != "running" else None
    if not isinstance(step, int) or isinstance(step, bool):
        step = _checkpoint_step(run_dir)  # running, failed or without a summary: the newest checkpoint's
    row.steps = step
    wall = _real(summary.get("wall_seconds"))
    if wall is None:
        parts = [p for p in (_real(summary.get("loop_seconds")), _real(summary.get("end_seconds"))) if p is not None]
        wall = sum(parts) if parts else None
    if row.status == "running" and summary.get("status") == "running":
        with contextlib.suppress(OSError):  # the start record's wall time, plus this session so far
            wall = (wall or 0.0) + max(0.0, time.time() - summary_path.stat().st_mtime)
    row.wall_seconds = round(wall, 3) if wall is not None and math.isfinite(wall) else None
    overrides = summary.get("overrides")
    row.overrides = [str(o) for o in overrides] if isinstance(overrides, list) else []
    if row.error is None and isinstance(summary.get("error"), str):
        row.error = summary["error"]
    history_name, modes = _config_facts(run_dir, notes)
    values = _history_values(run_dir / history_name, notes)
    last = summary.get("validation")
    if isinstance(last, dict) and isinstance(last.get("step"), int):
        values.extend(
            (last["step"], str(k), number)
            for k, v in last.items()
            if str(k).startswith("val_") and (number := _real(v)) is not None
        )
    values.extend(_eval_values(run_dir, notes))
    row.metrics = _metrics(values, modes)
    row.monitored = list(modes)
    row.notes = notes
    return row


def _candidates(root: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """Run directories under ``root`` (itself, its children, or its grandchildren), and skipped-entry notes."""
    if is_run_dir(root):
        return [(root.name, root)], []
    found: list[tuple[str, Path]] = []
    skipped: list[str] = []
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError as err:
        raise SetupError(f"{root}: cannot list this directory ({err.strerror or err}); give a readable one") from None
    real_root = root.resolve()
    for child in children:
        if child.name.startswith("."):
            continue
        if child.is_symlink():
            real = child.resolve()
            if real == real_root or real in real_root.parents:  # a link back up: every run would show twice
                skipped.append(f"{child.name}: a symlink to {real}, which holds this directory")
                continue
        if is_run_dir(child):
            found.append((child.name, child))
            continue
        try:
            inner = sorted(p for p in child.iterdir() if p.is_dir() and not p.name.startswith(".") and is_run_dir(p))
        except OSError as err:
            skipped.append(f"{child.name}: cannot be read ({err.strerror or err})")
            continue
        if inner:
            found.extend((f"{child.name}/{p.name}", p) for p in inner)
        else:
            skipped.append(f"{child.name}: not a run directory (no config.yaml, summary.json or checkpoint)")
    # A symlink to a run listed already (`latest -> run-5`): once, by the real directory's own name
    # (whichever sorts first), the alias a note.
    listed: dict[Path, str] = {}
    aliases: list[tuple[str, Path]] = []
    for name, path in found:
        real = path.resolve()
        if real != real_root / name or real in listed:  # reached through a symlink (or a second alias)
            aliases.append((name, real))
        else:
            listed[real] = name
    for name, real in aliases:
        if real in listed:
            skipped.append(f"{name}: the same run directory as {listed[real]}")
        else:  # only symlinks lead to it: listed by the first of them
            listed[real] = name
    kept = set(listed.values())
    return [(name, path) for name, path in found if name in kept], skipped


def sort_keys(table_metrics: list[str]) -> list[str]:
    """What ``--sort`` accepts for these metrics: each ``val_*`` name, and ``name``, ``started``, ... ."""
    return [*table_metrics, *PLAIN_SORT_KEYS]


def list_runs(root: str | Path = "runs", sort: str | None = None, names: Sequence[str] | None = None) -> RunsTable:
    """Every run under ``root``, one row each, with the overrides that tell them apart.

    Args:
        root: a directory of run directories (``runs``), a sweep's directory, or one run directory.
        sort: a ``val_*`` metric (its best value first: lowest, or highest for accuracy-like names and an
            ``early_stopping`` with ``mode: max``; runs without it last), or one of ``name``, ``started``,
            ``steps``, ``wall_seconds``, ``status``; default: by start time.
        names: only these runs (names relative to ``root``, as in the table), e.g. one sweep's.

    Returns:
        The table.

    Raises:
        SetupError: ``root`` is not a directory, or ``sort`` names no metric of these runs (exit 2).
    """
    directory = Path(root)
    if not directory.is_dir():
        raise SetupError(f"{root}: no such directory; give the directory holding the run directories (default runs)")
    if names is None:
        found, skipped = _candidates(directory)
    else:  # a sweep's runs, even under a directory that is itself a run directory
        found = [(name, directory / name) for name in names if is_run_dir(directory / name)]
        skipped = [f"{name}: not a run directory" for name in names if not is_run_dir(directory / name)]
    rows = [read_run(path, name) for name, path in found]
    counts: dict[str, int] = {}
    known = [row for row in rows if row.status != "unreadable"]  # an unreadable run's overrides are unknown
    for row in known:
        for item in dict.fromkeys(row.overrides):
            counts[item] = counts.get(item, 0) + 1
    for row in known:
        row.distinguishing = [o for o in row.overrides if counts[o] < len(known) or len(known) == 1]
    metrics = sorted({m for row in rows for m in row.metrics}, key=lambda m: (m != "val_loss", m))
    if sort is not None and sort not in sort_keys(metrics):
        from hookrun.common.suggest import did_you_mean

        raise SetupError(
            f"--sort {sort}: no such metric in these runs; use one of {', '.join(sort_keys(metrics))}"
            + did_you_mean(sort, sort_keys(metrics))
        )
    rows.sort(key=lambda r: (r.started is None, r.started or "", r.name))
    if sort in PLAIN_SORT_KEYS:
        rows.sort(key=lambda r: (getattr(r, sort) is None, getattr(r, sort) if getattr(r, sort) is not None else 0))
    elif sort is not None:
        def key(row: RunRow) -> tuple[bool, float]:
            value = row.metrics.get(sort)
            if value is None or value.best is None:
                return (True, 0.0)
            return (False, value.best if value.mode == "min" else -value.best)

        rows.sort(key=key)
    return RunsTable(root=str(directory.resolve()), runs=rows, metrics=metrics, skipped=skipped, sort=sort)
