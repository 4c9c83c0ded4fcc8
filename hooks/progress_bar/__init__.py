"""Config of the ``progress_bar`` hook."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from hookrun.config_schemas.bounds import Seconds, Steps
from hookrun.config_schemas.hook_base import HookConfig


class ProgressBarConfig(HookConfig):
    """Rich progress bar; mirrors tfestimators' ``hook_progress_bar()``."""

    summary: ClassVar[str] = (
        "Show a live progress bar: step, epoch, elapsed time and ETA, steps/s, the loss "
        "(plain lines without a terminal)."
    )
    mirrors: ClassVar[str] = "tfestimators::hook_progress_bar"
    catalogue_rank: ClassVar[int] = 80

    type: Literal["progress_bar"] = Field(description="Hook type.")
    total: Steps | None = Field(
        default=None,
        description="Global step at which the bar is full (steps); default: from `stop_at_step`, "
        "else rows x epochs / batch_size, else unknown (spinner).",
    )
    refresh_secs: Seconds = Field(
        default=0.1,
        description="Least time between updates of the bar (seconds); each shows the mean loss of the "
        "steps since the last one.",
    )
    plain_every_n_secs: Seconds = Field(
        default=10.0, description="Without a terminal: print a plain progress line every N seconds."
    )
