"""``progress_bar``: a rich progress bar with the loss, as tfestimators' ``hook_progress_bar()``.

This module imports TensorFlow; the registry imports it only when a
``progress_bar`` hook is built.
"""

from __future__ import annotations

import time
from typing import Any

import tensorflow as tf
from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn
from rich.segment import Segment
from rich.table import Column

from hookrun.hooks.context import HookContext, HookResult
from hookrun.hooks.progress_bar import ProgressBarConfig
from hookrun.hooks.progress_bar.columns import (
    EpochColumn,
    LossColumn,
    StepColumn,
    StepsPerSecondColumn,
    TimeColumn,
    clock_text,
    epoch_of,
    format_loss,
)
from hookrun.hooks.step_clock import ClockedHook, StepClock


def progress_columns(total_known: bool, label: str | None = None) -> list[Any]:
    """Columns of the live bar, rich's small composable columns and ours.

    ``Training 400/1000 ━━━━━━╸      epoch 2/5 0:03 ETA 0:05 1,234 steps/s loss: 3136.10``

    Args:
        total_known: with a total, a bar and the time left; without, a spinner.
        label: on a cluster, the task (``worker1``), shown first as ``[worker1]``.
    """
    title = TextColumn(f"[{label}] Training" if label else "Training", markup=False, table_column=Column(no_wrap=True))
    fixed = Column(no_wrap=True)  # each column one line; the bar takes what the terminal has left
    rest = [EpochColumn(table_column=fixed), TimeColumn(table_column=fixed), StepsPerSecondColumn(table_column=fixed),
            LossColumn(table_column=fixed)]
    if total_known:
        return [title, StepColumn(table_column=fixed), BarColumn(bar_width=None), *rest]
    return [SpinnerColumn(), title, StepColumn(table_column=fixed), *rest]


class RenderedOnce:
    """A renderable drawn once per set of console options, then replayed: the same segments, byte for byte.

    rich's live display (``Live``, which ``Progress`` runs) redraws its renderable below every line printed
    while it is shown, so the line appears above the bar. ``Progress`` builds a new table only when it
    refreshes (``refresh_per_second``); between refreshes each printed line drew the same table again
    (~870 of the ~970 us of CPU a line cost in a terminal, issue 17). Wrapping the table in this object
    draws it once per refresh and per set of ``ConsoleOptions`` (a refresh and a printed line render with
    different ones), and replays the segments for every later line until the next refresh.

    Args:
        renderable: what to draw (``Progress.get_renderable()``'s group of the task table).
    """

    #: Sets of options kept (a refresh's, a printed line's, a resized terminal's).
    MAX_KEPT = 4

    def __init__(self, renderable: Any) -> None:
        self.renderable = renderable
        self._drawn: list[tuple[ConsoleOptions, list[Segment]]] = []

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Any:
        """The segments drawn for these options (``ConsoleOptions`` compare by value), drawing them the first time."""
        for drawn_options, segments in self._drawn:
            if drawn_options == options:
                return segments
        segments = list(console.render(self.renderable, options))
        if len(self._drawn) < self.MAX_KEPT:
            self._drawn.append((options, segments))
        return segments

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """The measurement of the wrapped renderable."""
        return Measurement.get(console, options, self.renderable)


class ReplayingProgress(Progress):
    """rich's ``Progress``, drawing its table once per refresh however many lines are printed above it.

    Output identical to ``Progress``'s: see :class:`RenderedOnce`. Takes ``Progress``'s arguments.
    """

    def get_renderable(self) -> RenderedOnce:
        """``Progress.get_renderable()``, wrapped in :class:`RenderedOnce` (called once per refresh)."""
        return RenderedOnce(super().get_renderable())


class ProgressBarHook(ClockedHook, tf.compat.v1.train.SessionRunHook):
    """Show training progress and the loss; mirrors tfestimators' ``hook_progress_bar()``.

    When each method fires:

    - ``begin``: the clock builds its ``global_step`` read.
    - ``after_create_session``: syncs the run's :class:`~hookrun.hooks.step_clock.StepClock`
      (one ``global_step`` read per session, shared: a resumed run starts the
      bar there, a recovered session re-syncs it) and, on the first session,
      starts the display.
    - ``before_run``: asks for the loss (one scalar; while the clock reads, with
      ``global_step``), every step: the bar shows the mean over the steps since it last
      changed, not one step's loss (the last step's batch may be a few rows: its loss alone misled).
    - ``after_run``: moves the clock past the step, adds its loss to the mean, and once
      ``refresh_secs`` have passed (or on the step that reaches ``total``) updates the bar
      with that mean and starts a new one.
    - ``end``: shows the exact final ``global_step``. If training ended before
      ``total``, :meth:`hook_result` hands the runner a warning, which it prints after the
      session closed unless a signal stopped the run (``interrupted at step N`` says it then).
    - ``close`` (called by the runner after the session, on success and on
      failure; not a ``SessionRunHook`` method): stops the live display.

    Without a terminal (``console.is_terminal`` false) it prints a plain line
    every ``plain_every_n_secs`` seconds, and one at the end.

    On a cluster (``label`` given) every line starts with ``[label]``; there the clock reads
    ``global_step`` with every step, since the other workers move it too.

    Args:
        loss: scalar loss tensor.
        clock: the run's shared step clock.
        console: the ``rich.console.Console`` to draw on.
        total: global step at which the bar is full (steps), or None for a spinner.
        refresh_secs: least time between loss reads (seconds, > 0).
        plain_every_n_secs: interval between plain lines without a terminal (seconds, > 0).
        label: on a cluster, this task's label (``worker1``), else None.
        steps_per_epoch: global steps per pass over the training rows (``rows / batch_size``, a
            fraction in general), for the epoch; None to show none (on a cluster).
        total_from_start: ``total`` is the runner's expectation from the restored step; before the first
            run, read ``global_step`` once and move the total by as much as the hooks' ``after_create_session``
            moved it (capped at ``stop_at_step``'s last step).

    Raises:
        ValueError: ``refresh_secs``, ``plain_every_n_secs`` or ``total`` is not positive.

    Example:
        >>> hook = ProgressBarHook(loss, StepClock(), Console(), total=1000)
    """

    def __init__(
        self,
        loss: Any,
        clock: StepClock,
        console: Console,
        total: int | None = None,
        refresh_secs: float = 0.1,
        plain_every_n_secs: float = 10.0,
        label: str | None = None,
        steps_per_epoch: float | None = None,
        total_from_start: bool = False,
    ) -> None:
        if refresh_secs <= 0 or plain_every_n_secs <= 0:
            raise ValueError("refresh_secs and plain_every_n_secs must be positive")
        if total is not None and total <= 0:
            raise ValueError(f"total must be positive, got {total}")
        super().__init__(clock)
        self.total = total
        self.step = clock.step
        # the runner's total assumed the run starts at the restored step: check once, before the first run
        self._initial_step = clock.step
        self._rebase_total = total_from_start and total is not None
        self.start_step: int | None = None
        self.loss: float | None = None
        self._loss = loss
        self._console = console
        self._refresh_secs = refresh_secs
        self._plain_every = plain_every_n_secs
        self.label = label
        self.steps_per_epoch = steps_per_epoch
        self._fetch = tf.compat.v1.train.SessionRunArgs(loss)
        self._fetch_reading: Any = None  # the loss and the clock's read, built in begin
        self._asked: Any = None  # what this step's before_run returned
        self._sum = 0.0  # the losses since the bar last changed, and their count: the mean it shows next
        self._count = 0
        self._next_read = 0.0
        self._progress: Progress | None = None
        self._task: Any = None
        self._next_plain = 0.0
        self._started = 0.0

    def begin(self) -> None:
        """Build the clock's read of ``global_step`` and the request that adds it to the loss."""
        super().begin()
        self._fetch_reading = tf.compat.v1.train.SessionRunArgs((self._loss, self._clock.request_tensor))

    def state_dict(self) -> dict[str, Any]:
        """The last loss shown, for the checkpoint being written."""
        return {"loss": self.loss}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Show the loss saved with the restored checkpoint until the first new read."""
        self.loss = None if state.get("loss") is None else float(state["loss"])

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Sync the clock; start the display on the first session."""
        super().after_create_session(session, coord)
        self.step = self._clock.step
        if self.start_step is not None:
            return
        self.start_step = self.step
        self._started = time.perf_counter()
        self._next_plain = self._started + self._plain_every
        if self._console.is_terminal:
            self._progress = ReplayingProgress(
                *progress_columns(self.total is not None, self.label), console=self._console, refresh_per_second=10,
                expand=True,
            )
            self._task = self._progress.add_task(
                "train", total=self.total, completed=self.step, loss=self.loss, steps_per_epoch=self.steps_per_epoch
            )
            self._progress.start()

    def before_run(self, run_context: Any) -> Any:
        """Ask for the loss (every step: the bar shows the mean since it last changed).

        Under ``session.steps_per_run`` it asks once per window (one scalar: the window's last step's
        loss; a request that never changes keeps the session on one executor). While the clock reads,
        the request also holds its ``global_step`` read.
        """
        clock = self._clock
        if self._rebase_total:
            self._rebase(run_context.session)
        self._asked = self._fetch_reading if clock.window is not None or clock.reading else self._fetch
        return self._asked

    def _rebase(self, session: Any) -> None:
        """Before the first run: move the runner's total by how far the hooks moved ``global_step``; one read.

        The runner worked the total out from the restored step (``stop_at_step``'s ``num_steps``, the
        data's end). A hook's ``after_create_session`` that moved ``global_step`` (pretrained weights)
        moves where the run ends by as much, and ``stop_at_step``'s last step, fixed by then, caps it.
        """
        self._rebase_total = False
        start = int(session.run(self._clock.tensor))
        total = self.total + start - self._initial_step  # type: ignore[operator]
        if self._clock.last_step is not None:
            total = min(total, self._clock.last_step)
        self.start_step = self.step = start
        if total > 0 and total != self.total:
            self.total = total
            if self._progress is not None:
                self._progress.update(self._task, total=total, completed=start)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Move the clock; on a read step, update the bar (or print a plain line when due)."""
        asked, results = self._asked, run_values.results
        if asked is self._fetch:
            loss, read = results, None
        else:
            loss, read = results
        self.step = self._clock.advance(run_context, read)
        self._sum += float(loss)
        self._count += 1
        now = time.perf_counter()
        if now < self._next_read and (self.total is None or self.step < self.total):
            return  # not due: the display keeps its refresh rate
        self._next_read = now + self._refresh_secs
        self.loss = self._sum / self._count  # the mean over the steps since the bar last changed
        self._sum, self._count = 0.0, 0
        if self._progress is not None:
            self._progress.update(self._task, completed=self.step, loss=self.loss)
        elif now >= self._next_plain:
            self._next_plain = now + self._plain_every
            self._console.print(self.plain_line(now), markup=False, highlight=False)

    def end(self, session: Any) -> None:
        """Show the exact final step and the mean loss of the steps since the bar last changed."""
        self.step = self._clock.final(session)
        if self._count:  # steps since the last update (the data ended, or a stop, before the total)
            self.loss = self._sum / self._count
            self._sum, self._count = 0.0, 0
        if self._progress is not None:
            self._progress.update(self._task, completed=self.step, loss=self.loss)
        else:
            self._console.print(self.plain_line(time.perf_counter()), markup=False, highlight=False)
        self.close()

    def hook_result(self) -> HookResult:
        """A warning when training ended before ``total`` (the runner prints it unless a signal stopped the run)."""
        if self.total is None or self.start_step is None or self.step >= self.total:
            return HookResult()
        prefix = f"[{self.label}] " if self.label else ""
        line = f"{prefix}warning: training ended at step {self.step}, before the expected {self.total}"
        return HookResult(warnings=[line])

    def close(self) -> None:
        """Stop the live display (idempotent)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def plain_line(self, now: float) -> str:
        """The progress as one plain line.

        ``Training 400/1000 (40%) epoch 2/5 0:03 ETA 0:05 133 steps/s loss: 3136.10``: the epoch
        when known, the time left when the total is, the mean rate since the first session.

        Args:
            now: ``time.perf_counter()`` value (seconds).
        """
        elapsed = max(0.0, now - self._started)
        where = f"{self.step}/{self.total} ({100 * self.step // self.total}%)" if self.total else f"step {self.step}"
        parts = [f"[{self.label}] Training" if self.label else "Training", where]
        if self.steps_per_epoch:
            epoch = f"epoch {epoch_of(self.step, self.steps_per_epoch)}"
            parts.append(epoch + (f"/{epoch_of(self.total, self.steps_per_epoch)}" if self.total else ""))
        parts.append(clock_text(elapsed))
        done = self.step - (self.start_step or 0)
        rate = done / elapsed if elapsed > 0 and done > 0 else None
        if self.total is not None and self.step < self.total:
            parts.append("ETA " + clock_text((self.total - self.step) / rate if rate else None))
        if rate:
            parts.append(f"{rate:,.0f} steps/s")
        return " ".join(parts) + f" loss: {format_loss(self.loss)}"


def build(config: ProgressBarConfig, ctx: HookContext) -> ProgressBarHook:
    """Build the ``progress_bar`` hook from config.

    The total is ``config.total``, else the runner's expected last step
    (``stop_at_step``, or rows x epochs / batch_size), else unknown.
    """
    hook = ProgressBarHook(
        loss=ctx.tensors.resolve("loss"),
        clock=ctx.clock,
        console=ctx.console,
        total=config.total or ctx.expected_last_step,
        total_from_start=config.total is None,
        refresh_secs=config.refresh_secs,
        plain_every_n_secs=config.plain_every_n_secs,
        label=ctx.task,
        steps_per_epoch=ctx.steps_per_epoch,
    )
    ctx.on_close.append(hook.close)
    return hook
