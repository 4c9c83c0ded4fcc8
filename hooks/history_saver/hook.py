"""``history_saver``: loss history per window of steps, as tfestimators' ``hook_history_saver()``.

This module imports TensorFlow; the registry imports it only when needed.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, TextIO

import tensorflow as tf

from hookrun.common.files import RunDirWriteError, atomic_write_text, open_append, read_regular_bytes
from hookrun.hooks.context import Evaluations, HookConfigError, HookContext, HookResult
from hookrun.hooks.history_saver import HistorySaverConfig
from hookrun.hooks.step_clock import ClockedHook, StepClock

#: The first columns of every history row, in order (a documented interface).
BASE_COLUMNS = ("step", "mean_loss", "total_loss")


def _parse_row(columns: list[str], line: str) -> dict[str, float | int | None]:
    """One history line as a row; ValueError when it is not one (wrong field count, not numbers)."""
    cells = next(csv.reader([line]))
    if len(cells) != len(columns):
        raise ValueError(f"{len(cells)} fields, the header has {len(columns)}")
    row: dict[str, float | int | None] = {}
    for key, cell in zip(columns, cells, strict=True):
        if key == "step":
            row[key] = int(cell)
        else:
            row[key] = float(cell) if cell != "" else None
    return row


def read_history(path: Path, skipped: list[str] | None = None) -> list[dict[str, float | int | None]]:
    """Read a ``history.csv`` written by :class:`HistorySaverHook`.

    A damaged line (not UTF-8, not numbers, the wrong number of fields: a disk error or an
    edit) is skipped, not fatal: the checkpoint's weights are the truth, the history is their
    record. Each skipped line is described in ``skipped`` as ``FILE:LINE: reason``.

    Args:
        path: the CSV file; a missing file gives no rows.
        skipped: if given, a list that receives one message per skipped line.

    Returns:
        Rows as dicts: ``step`` is an int, other columns floats (None where empty).
        A last line without its newline is a row torn by a crash mid-write (each
        row is written whole, newline included, in one flushed write) and is dropped.

    Raises:
        OSError: the file exists but cannot be read.
    """
    if not path.exists():
        return []
    data = read_regular_bytes(path)
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]  # drop the torn last line
    lines = data.split(b"\n")[:-1] if data else []
    messages = skipped if skipped is not None else []
    if not lines:
        return []
    try:
        columns = next(csv.reader([lines[0].decode("utf-8")]))
    except (UnicodeDecodeError, csv.Error) as err:
        columns = []
        reason = str(err)
    else:
        reason = "no `step` column"
    if not columns or columns[0] != "step":
        messages.append(f"{path}:1: not a history header ({reason}); its {len(lines) - 1} row(s) are skipped")
        return []
    rows: list[dict[str, float | int | None]] = []
    for number, raw in enumerate(lines[1:], start=2):
        try:
            rows.append(_parse_row(columns, raw.decode("utf-8")))
        except (UnicodeDecodeError, ValueError, csv.Error) as err:
            messages.append(f"{path}:{number}: damaged history row skipped ({err})")
    return rows


def _csv_line(cells: list[str]) -> str:
    """One CSV line (``csv`` module quoting: a comma or quote in a cell is quoted), ending in a newline."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    return out.getvalue()


def _format(value: float | int | None) -> str:
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    return f"{value:.9g}"


class HistorySaverHook(ClockedHook, tf.compat.v1.train.SessionRunHook):
    """Record the training loss per window of steps; mirrors tfestimators' ``hook_history_saver()``.

    A window ends at every global step that is a multiple of
    ``every_n_step``; its row holds ``step`` (the global step at the window's
    end), ``mean_loss`` (mean of the window's step losses), ``total_loss``
    (their sum) and, per metric tensor, the metric's mean over the window.
    The first window is recorded even when the run starts mid-window (a
    resumed run), and the last, partial window is recorded at ``end``.

    With an ``evaluation`` hook in the run, each row also has the
    ``val_loss`` / ``val_<metric>`` columns of ``evaluations``: the values of
    the latest evaluation at a global step inside the row's window (empty
    when none ran there). An evaluation published after its window's row was
    written (the ``evaluation`` hook listed after this one, or its final
    evaluation at ``end``) fills that row in and the file is rewritten.

    When each method fires:

    - ``begin``: the clock builds its ``global_step`` read.
    - ``after_create_session``: syncs the run's :class:`~hookrun.hooks.step_clock.StepClock`
      (one ``global_step`` read per session, shared); keeps only the rows up
      to it from an existing ``history.csv`` (a resumed run continues the
      file; rows past the restored checkpoint are dropped, so the history
      always matches the weights); resumes the window saved with the restored
      checkpoint (``state_dict``/``load_state_dict``, :mod:`hookrun.hooks.state`),
      else starts a new one.
    - ``before_run``: asks for the loss (and metrics) on every step, and for
      ``global_step`` too while the clock reads.
    - ``after_run``: moves the clock past the step and adds the step's values to
      the window; once a multiple of ``every_n_step`` has been reached, appends a
      row to ``history.csv`` at the exact ``global_step``, read after the step.
    - ``end``: records the partial window at the exact final ``global_step``,
      rewrites ``history.csv`` atomically.

    Under ``session.steps_per_run: N`` a run is a window of up to N steps: the hook asks for the
    window's sums of the loss and metrics and its step count (computed in the loop), so
    ``mean_loss`` and ``total_loss`` cover exactly the steps of each row; a row is recorded at the
    first window boundary at or after each multiple of ``every_n_step``. The loss and metrics must
    then be named tensors (``loss``, a builder metric), whose sums the loop keeps.

    The clock counts steps in Python while each run adds one to ``global_step``, and reads
    ``global_step`` with every step on a cluster (the other workers move it too) or after a
    train op was seen to move it differently. Each task records the losses of its own steps.

    Args:
        loss: scalar loss tensor.
        clock: the run's shared step clock.
        every_n_step: window length (global steps, > 0).
        metrics: column name -> scalar tensor (optional).
        path: the CSV file, or None to keep rows in memory only.
        evaluations: the run's shared validation results, or None (no val columns).
        console: a ``rich`` console for warnings (a damaged line in an existing file), or None
            (TensorFlow's log).

    Raises:
        ValueError: ``every_n_step`` is not positive, a metric name clashes
            with a base or validation column, or, under ``session.steps_per_run`` > 1, the loss or a
            metric is not a named tensor whose window sum the loop keeps.

    Example:
        >>> hook = HistorySaverHook(loss, StepClock(), every_n_step=100, path=Path("runs/x/history.csv"))
        >>> ...  # after training
        >>> hook.rows[-1]
        {'step': 1000, 'mean_loss': 0.41, 'total_loss': 41.0}
    """

    def __init__(
        self,
        loss: Any,
        clock: StepClock,
        every_n_step: int = 10,
        metrics: dict[str, Any] | None = None,
        path: Path | None = None,
        evaluations: Evaluations | None = None,
        console: Any = None,
    ) -> None:
        if every_n_step <= 0:
            raise ValueError(f"every_n_step must be positive, got {every_n_step}")
        metrics = dict(metrics or {})
        val_names = list(evaluations.names) if evaluations is not None else []
        clash = set(metrics) & {*BASE_COLUMNS, *val_names}
        if clash:
            raise ValueError(f"metric names clash with history columns: {sorted(clash)}")
        super().__init__(clock)
        self.every_n_step = every_n_step
        self.path = path
        self.columns = [*BASE_COLUMNS, *metrics, *val_names]
        self._evaluations = evaluations
        self._val_names = val_names
        self._window_start = 0
        if evaluations is not None:
            evaluations.subscribe(self._on_evaluation)
        self.rows: list[dict[str, float | int | None]] = []
        self.step = clock.step
        self._metric_names = list(metrics)
        self._values = (loss, *metrics.values())
        window = clock.window
        self._window = window
        if window is not None:  # the window's sums and step count instead of the last step's values
            sums = [window.sum_of(value) for value in self._values]
            missing = [name for name, total in zip(("loss", *metrics), sums, strict=True) if total is None]
            if missing:
                raise ValueError(
                    f"under session.steps_per_run > 1 the history needs the window sums of {', '.join(missing)}, "
                    "kept only for named scalar tensors (loss, the builder's metrics); name one of them"
                )
            self._values = (*sums, window.steps)
        # Tuples, built once: hookrun's engine reuses the step's plan without re-keying it.
        self._fetch = tf.compat.v1.train.SessionRunArgs(self._values)
        self._fetch_reading: Any = None  # the values and the clock's read, built in begin
        self._reading = False  # this step's request holds the clock's read
        self._sums = [0.0] * (1 + len(metrics))
        self._count = 0
        self._file: TextIO | None = None
        self._loaded = False
        self._console = console
        self._restored: dict[str, Any] | None = None  # the window saved with the restored checkpoint

    def begin(self) -> None:
        """Build the clock's read of ``global_step`` and the request that adds it to the values."""
        super().begin()
        self._fetch_reading = tf.compat.v1.train.SessionRunArgs((*self._values, self._clock.request_tensor))

    def state_dict(self) -> dict[str, Any]:
        """The open window (start, sums, count) at ``step``, for the checkpoint being written."""
        return {"step": self.step, "window_start": self._window_start, "sums": list(self._sums), "count": self._count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Keep the open window saved with the restored checkpoint; ``after_create_session`` resumes it."""
        self._restored = state

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Sync the clock; resume the window saved with the checkpoint, or start one; continue the file."""
        super().after_create_session(session, coord)
        self.step = self._clock.step
        self._window_start = self.step
        self._sums = [0.0] * len(self._sums)
        self._count = 0
        restored, self._restored = self._restored, None
        if restored is not None and restored.get("step") == self.step and len(restored["sums"]) == len(self._sums):
            self._window_start = int(restored["window_start"])
            self._sums = [float(v) for v in restored["sums"]]
            self._count = int(restored["count"])
        if not self._loaded:
            self._loaded = True
            if self.path is not None:
                skipped: list[str] = []
                self.rows = [r for r in read_history(self.path, skipped) if int(r["step"] or 0) <= self.step]
                for message in skipped:  # the file is rewritten below, without those lines
                    self._warn(f"{message}; it is dropped from the rewritten file")
        else:
            self.rows = [r for r in self.rows if int(r["step"] or 0) <= self.step]
        if self.path is not None:
            self._close_file()
            atomic_write_text(self.path, self._csv_text())
            self._file = open_append(self.path)

    def before_run(self, run_context: Any) -> Any:
        """Ask for the loss and metrics (every step); for ``global_step`` too while the clock reads."""
        self._reading = self._clock.reading
        return self._fetch_reading if self._reading else self._fetch

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Move the clock; add this step to the window; record a row once the window's end is reached."""
        results = run_values.results
        previous = self.step
        if self._reading:
            *results, read = results
            self.step = self._clock.advance(run_context, read)
        else:
            self.step = self._clock.advance(run_context)
        sums = self._sums
        if self._window is not None:  # the window's sums, then its step count
            *results, steps = results
            self._count += int(steps)
        else:
            self._count += 1
        for index, value in enumerate(results):
            sums[index] += float(value)
        if self.step // self.every_n_step > previous // self.every_n_step:
            self.step = self._clock.confirm(run_context)
            self._record()

    def end(self, session: Any) -> None:
        """Record the partial last window at the exact final step; rewrite the file atomically."""
        if self._count:
            self.step = self._clock.final(session)
            self._record()
        self._close_file()
        if self.path is not None:
            atomic_write_text(self.path, self._csv_text())

    def close(self) -> None:
        """Close the file (idempotent; the runner calls it after any finish)."""
        self._close_file()

    def _record(self) -> None:
        count = self._count
        row: dict[str, float | int | None] = {
            "step": self.step,
            "mean_loss": self._sums[0] / count,
            "total_loss": self._sums[0],
        }
        for name, total in zip(self._metric_names, self._sums[1:], strict=True):
            row[name] = total / count
        if self._evaluations is not None:
            row.update(dict.fromkeys(self._val_names))
            row.update(self._evaluations.latest_in(self._window_start, self.step))
        self.rows.append(row)
        self._window_start = self.step
        self._sums = [0.0] * len(self._sums)
        self._count = 0
        if self._file is not None:
            try:
                self._file.write(_csv_line([_format(row.get(c)) for c in self.columns]))
                self._file.flush()
            except OSError as err:
                raise RunDirWriteError(self.path or "history.csv", err) from err

    def _on_evaluation(self, step: int, values: dict[str, float]) -> None:
        """Fill a just-written row whose window holds this evaluation; rewrite the file."""
        if not self.rows or self.rows[-1]["step"] != step or self.step != step:
            return  # a later row (or the current window) picks it up when it is recorded
        self.rows[-1].update(values)
        if self.path is not None:
            reopen = self._file is not None
            self._close_file()
            atomic_write_text(self.path, self._csv_text())
            if reopen:
                self._file = open_append(self.path)

    def _csv_text(self) -> str:
        out = io.StringIO()
        out.write(_csv_line(self.columns))
        for row in self.rows:
            out.write(_csv_line([_format(row.get(c)) for c in self.columns]))
        return out.getvalue()

    def _close_file(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as err:  # the last buffered bytes could not be written
                raise RunDirWriteError(self.path or "history.csv", err) from err

    def _warn(self, message: str) -> None:
        if self._console is not None:
            self._console.print(f"warning: {message}", style="yellow", markup=False, highlight=False, soft_wrap=True)
        else:
            tf.compat.v1.logging.warning(message)

    def hook_result(self) -> HookResult:
        """The history for ``TrainResult.history``: every row (resumed ones included) and the columns."""
        return HookResult(history=list(self.rows), history_columns=list(self.columns))


def build(config: HistorySaverConfig, ctx: HookContext) -> HistorySaverHook:
    """Build the ``history_saver`` hook from config; rows go to ``<run_dir>/<filename>``.

    On a cluster, a worker other than the chief writes ``<stem>-<task>.csv`` (``history-worker1.csv``).

    With the run's shared evaluation results (``ctx.evaluations``), rows get ``val_*`` columns.
    """
    try:
        hook = HistorySaverHook(
            loss=ctx.tensors.resolve(config.loss_tensor),
            clock=ctx.clock,
            every_n_step=config.every_n_step,
            metrics={name: ctx.tensors.resolve(name) for name in config.metrics},
            path=ctx.run_dir / ctx.task_file(config.filename),
            evaluations=ctx.evaluations,
            console=ctx.console,
        )
    except ValueError as err:
        if ctx.clock.window is None:
            raise
        raise HookConfigError(str(err)) from None
    ctx.on_close.append(hook.close)
    return hook
