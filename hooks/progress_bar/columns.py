"""Small rich progress columns for the ``progress_bar`` hook (composable, as rich's own)."""

from __future__ import annotations

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
