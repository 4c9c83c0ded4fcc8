"""Small rich progress columns for the ``progress_bar`` hook (composable, as rich's own)."""

from __future__ import annotations

import math

from rich.progress import ProgressColumn, Task
from rich.text import Text


def format_loss(value: float | None) -> str:
    """Loss as tfestimators prints it: 2 decimals, or 4 significant digits when tiny or huge."""
    if value is None:
        return "-"
    if value != value:  # NaN
        return "nan"
    if value == 0 or 0.01 <= abs(value) < 1e7:
        return f"{value:.2f}"
    return f"{value:.4g}"


class LossColumn(ProgressColumn):
    """``loss: 3136.10``, from the task field ``loss``."""

    def render(self, task: Task) -> Text:
        """Render the latest loss read."""
        return Text(f"loss: {format_loss(task.fields.get('loss'))}", style="progress.data.speed")


class StepsPerSecondColumn(ProgressColumn):
    """``1234 steps/s``: rich's speed estimate over recent updates."""

    def render(self, task: Task) -> Text:
        """Render the recent step rate."""
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.0f} steps/s", style="progress.data.speed")


class StepColumn(ProgressColumn):
    """``400/1000`` with a known total, ``step 400`` without."""

    def render(self, task: Task) -> Text:
        """Render the global step (and the total when known)."""
        done = int(task.completed)
        if task.total is None:
            return Text(f"step {done}", style="progress.download")
        return Text(f"{done}/{int(task.total)}", style="progress.download")


def epoch_of(step: int, steps_per_epoch: float) -> int:
    """The epoch (from 1) that global step ``step`` trained in: the epoch of its batch's first row, at least 1.

    Batches run across epoch boundaries (``repeat`` before ``batch``), so ``steps_per_epoch`` is
    ``rows / batch_size``, a fraction in general. Step ``s`` (from 1) starts at row ``(s - 1) * batch_size``
    of the repeated stream, in epoch ``floor((s - 1) / steps_per_epoch) + 1``. So the last step of
    ``epochs: E``, ``ceil(E * steps_per_epoch)``, a partial batch of epoch E's last rows, is in epoch E, not
    E + 1.

    Args:
        step: a global step (steps, >= 0).
        steps_per_epoch: ``rows / batch_size`` (steps, > 0).
    """
    return max(1, math.floor((step - 1) / steps_per_epoch + 1e-9) + 1)


class EpochColumn(ProgressColumn):
    """``epoch 3/20`` (``epoch 3`` without a total), from the task field ``steps_per_epoch``; empty without it."""

    def render(self, task: Task) -> Text:
        """Render the epoch of the current global step, and of the last one when the total is known."""
        per = task.fields.get("steps_per_epoch")
        if not per:
            return Text("")
        text = f"epoch {epoch_of(int(task.completed), per)}"
        if task.total is not None:
            text += f"/{epoch_of(int(task.total), per)}"
        return Text(text, style="progress.download")


class TimeColumn(ProgressColumn):
    """``0:08 ETA 0:07``: elapsed time, and with a total the estimated time left (rich's speed estimate)."""

    def render(self, task: Task) -> Text:
        """Render elapsed time and, when a total and a speed are known, the time remaining."""
        elapsed = clock_text(task.finished_time if task.finished else task.elapsed)
        if task.total is None or task.finished:
            return Text(elapsed, style="progress.elapsed")
        remaining = task.time_remaining
        left = clock_text(remaining)
        return Text.assemble((elapsed, "progress.elapsed"), " ETA ", (left, "progress.remaining"))


def clock_text(seconds: float | None) -> str:
    """A duration as ``M:SS``, or ``H:MM:SS`` from an hour on (``-:--`` when unknown)."""
    if seconds is None:
        return "-:--"
    whole = max(0, int(seconds))
    if whole >= 3600:
        return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
    return f"{whole // 60}:{whole % 60:02d}"
